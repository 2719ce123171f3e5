#include "core/shm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void path_of(char *out, size_t len, const char *name)
{
  snprintf(out, len, "/dev/shm%s%s", name[0] == '/' ? "" : "/", name);
}

acl_shm_rc_t acl_shm_create(const char *name, int *fd, char *why, size_t len)
{
  char path[256];
  path_of(path, sizeof(path), name);
  *fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (*fd < 0) {
    if (errno == EEXIST)
      return ACL_SHM_EXISTS;
    snprintf(why, len, "cannot create %s: %s", path, strerror(errno));
    return ACL_SHM_ERROR;
  }
  if (fchmod(*fd, 0600) != 0) { /* a umask may have taken bits away */
    snprintf(why, len, "cannot set mode 0600 on %s: %s", path, strerror(errno));
    close(*fd);
    unlink(path);
    *fd = -1;
    return ACL_SHM_ERROR;
  }
  return ACL_SHM_OK;
}

acl_shm_rc_t acl_shm_open_own(const char *name, int *fd, struct stat *st, char *why, size_t len)
{
  char path[256];
  path_of(path, sizeof(path), name);
  *fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (*fd < 0) {
    if (errno == ENOENT)
      return ACL_SHM_ABSENT;
    if (errno == ELOOP) {
      snprintf(why, len, "%s is a symbolic link", path);
      return ACL_SHM_FOREIGN;
    }
    if (errno == EACCES || errno == EPERM || errno == EISDIR || errno == ENXIO) {
      snprintf(why, len, "%s belongs to someone else (%s)", path, strerror(errno));
      return ACL_SHM_FOREIGN;
    }
    snprintf(why, len, "cannot open %s: %s", path, strerror(errno));
    return ACL_SHM_ERROR;
  }
  if (fstat(*fd, st) != 0) {
    snprintf(why, len, "cannot stat %s: %s", path, strerror(errno));
    close(*fd);
    *fd = -1;
    return ACL_SHM_ERROR;
  }
  if (!S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 07777) != 0600) {
    snprintf(why, len,
             "%s is not ours (%s, owner uid %u, mode %04o; ours are regular files "
             "of uid %u, mode 0600)",
             path, S_ISREG(st->st_mode) ? "a file" : "not a file", (unsigned)st->st_uid,
             (unsigned)(st->st_mode & 07777), (unsigned)geteuid());
    close(*fd);
    *fd = -1;
    return ACL_SHM_FOREIGN;
  }
  return ACL_SHM_OK;
}

void acl_shm_scan(const char *prefix, void (*fn)(void *user, const char *name), void *user)
{
  DIR *d = opendir("/dev/shm");
  if (!d)
    return;
  const char *p = prefix[0] == '/' ? prefix + 1 : prefix;
  size_t pl = strlen(p);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, p, pl) != 0)
      continue;
    char name[300];
    snprintf(name, sizeof(name), "/%s", e->d_name);
    fn(user, name);
  }
  closedir(d);
}

int acl_pid_alive(int pid)
{
  if (pid <= 0)
    return 0;
  return !(kill(pid, 0) != 0 && errno == ESRCH);
}
