/* Safe file creation; see safefile.h. */
#include "core/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_SUFFIX ".tmp.XXXXXX" /* mkostemp's template: six random characters */

int acl_sfile_check_dest(const char *path, char *err, size_t errlen)
{
  struct stat st;
  if (!path || !*path) {
    snprintf(err, errlen, "empty path");
    return -1;
  }
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT)
      return 0;
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  if (S_ISREG(st.st_mode))
    return 0;
  snprintf(err, errlen, "%s is %s, not a regular file; left as it is", path,
           S_ISLNK(st.st_mode)    ? "a symbolic link (never followed)"
           : S_ISFIFO(st.st_mode) ? "a FIFO"
           : S_ISCHR(st.st_mode)  ? "a character device"
           : S_ISBLK(st.st_mode)  ? "a block device"
           : S_ISDIR(st.st_mode)  ? "a directory"
           : S_ISSOCK(st.st_mode) ? "a socket"
                                  : "of an unknown type");
  return -1;
}

/* mode less the process umask, read from /proc (umask(2) would change it
 * for every thread for a moment); 022 when /proc does not say. */
static mode_t umasked(mode_t mode)
{
  unsigned um = 022;
  char line[128];
  FILE *f = fopen("/proc/self/status", "re");
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "Umask: %o", &um) == 1)
      break;
  if (f)
    fclose(f);
  return mode & ~(mode_t)um & 0777;
}

/* A fresh private file next to path (O_EXCL via mkostemp): its fd, name in
 * tmp. -1 with err. */
static int tmp_create(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
  if (acl_sfile_check_dest(path, err, errlen) != 0)
    return -1;
  if (snprintf(tmp, tmplen, "%s" TMP_SUFFIX, path) >= (int)tmplen) {
    snprintf(err, errlen, "%s: path too long", path);
    return -1;
  }
  int fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT|O_EXCL, 0600 */
  if (fd < 0)
    snprintf(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(errno));
  return fd;
}

/* Renames tmp over path once path is checked again (a planted object may
 * have appeared since). */
static int tmp_commit(int fd, const char *tmp, const char *path, mode_t mode, char *err,
                      size_t errlen)
{
  if (fchmod(fd, umasked(mode)) != 0) {
    snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
    return -1;
  }
  if (acl_sfile_check_dest(path, err, errlen) != 0)
    return -1;
  if (rename(tmp, path) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

int acl_sfile_write_atomic(const char *path, const char *text, size_t len, mode_t mode, char *err,
                           size_t errlen)
{
  char tmp[4200];
  int fd = tmp_create(path, tmp, sizeof(tmp), err, errlen);
  if (fd < 0)
    return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t k = write(fd, text + off, len - off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      snprintf(err, errlen, "%s: %s", tmp, k < 0 ? strerror(errno) : "short write");
      goto fail;
    }
    off += (size_t)k;
  }
  if (fsync(fd) != 0) {
    snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
    goto fail;
  }
  if (tmp_commit(fd, tmp, path, mode, err, errlen) != 0)
    goto fail;
  if (close(fd) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
fail:
  close(fd);
  unlink(tmp);
  return -1;
}

int acl_sfile_open_stream(const char *path, mode_t mode, char *err, size_t errlen)
{
  char tmp[4200];
  int fd = tmp_create(path, tmp, sizeof(tmp), err, errlen);
  if (fd < 0)
    return -1;
  if (tmp_commit(fd, tmp, path, mode, err, errlen) != 0) {
    close(fd);
    unlink(tmp);
    return -1;
  }
  return fd;
}
