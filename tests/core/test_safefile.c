/* Files the plugin writes (core/safefile.h), against objects another local
 * user may plant: at the temporary name, at the destination, a FIFO, a
 * device, a symbolic link. Every case is bounded by the suite's timeout: an
 * open that blocks on a FIFO fails it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/safefile.h"
#include "core/table.h"

static char dir[64];
static char dst[128];

static void setup(void)
{
  snprintf(dir, sizeof(dir), "/tmp/acl-sfile-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(dst, sizeof(dst), "%s/table.txt", dir);
}

static void teardown(void)
{
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(safefile, .init = setup, .fini = teardown, .timeout = 10);

static int files_in_dir(void)
{
  char cmd[160];
  snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
  FILE *p = popen(cmd, "r");
  int n = -1;
  cr_assert_eq(fscanf(p, "%d", &n), 1);
  pclose(p);
  return n;
}

static char old_tmp[160];

/* The temporary name the plugin used to write through: public (the pid is
 * in /api/v1/state), so anyone could plant something there. */
static const char *planted_tmp(void)
{
  snprintf(old_tmp, sizeof(old_tmp), "%s.tmp.%d", dst, (int)getpid());
  return old_tmp;
}

Test(safefile, fifo_at_the_temporary_name_does_not_block)
{
  cr_assert_eq(mkfifo(planted_tmp(), 0666), 0, "%s", strerror(errno));
  char err[320];
  uint64_t t0 = acl_mono_ns();
  cr_assert_eq(acl_table_write_atomic(dst, "one\n", 4, err, sizeof(err)), 0, "%s", err);
  double s = (double)(acl_mono_ns() - t0) * 1e-9;
  cr_assert_lt(s, 1.0, "the write took %.2f s", s);
  struct stat st;
  cr_assert_eq(lstat(dst, &st), 0);
  cr_assert(S_ISREG(st.st_mode));
  cr_assert_eq(lstat(planted_tmp(), &st), 0, "the planted FIFO is left alone");
  cr_assert(S_ISFIFO(st.st_mode));
}

Test(safefile, planted_file_at_the_temporary_name_is_never_written)
{
  int fd = open(planted_tmp(), O_WRONLY | O_CREAT | O_EXCL, 0666);
  cr_assert_geq(fd, 0);
  fchmod(fd, 0666);
  close(fd);
  struct stat planted, st;
  cr_assert_eq(stat(planted_tmp(), &planted), 0);
  char err[320];
  cr_assert_eq(acl_table_write_atomic(dst, "one\n", 4, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(lstat(dst, &st), 0);
  cr_assert_neq(st.st_ino, planted.st_ino, "the table is not the planted (other-owned) file");
  cr_assert_eq(st.st_uid, geteuid());
  cr_assert_eq(st.st_mode & 0022, 0, "nobody else may write the table (mode %o)",
               st.st_mode & 0777);
  cr_assert_eq(stat(planted_tmp(), &st), 0);
  cr_assert_eq(st.st_size, 0, "the planted file was not written");
}

Test(safefile, fifo_destination_is_refused_and_kept)
{
  cr_assert_eq(mkfifo(dst, 0600), 0);
  char err[320] = "";
  cr_assert_neq(acl_table_write_atomic(dst, "one\n", 4, err, sizeof(err)), 0);
  cr_assert(strstr(err, "FIFO"), "the message names it: %s", err);
  struct stat st;
  cr_assert_eq(lstat(dst, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
  cr_assert_eq(files_in_dir(), 1, "no temporary file left");
}

Test(safefile, device_destination_is_refused_and_kept)
{
  if (mknod(dst, S_IFCHR | 0600, makedev(1, 3)) != 0)
    cr_skip_test("mknod needs CAP_MKNOD here (%s)", strerror(errno));
  char err[320] = "";
  cr_assert_neq(acl_table_write_atomic(dst, "one\n", 4, err, sizeof(err)), 0);
  cr_assert(strstr(err, "character device"), "%s", err);
  struct stat st;
  cr_assert_eq(lstat(dst, &st), 0);
  cr_assert(S_ISCHR(st.st_mode), "the device node was replaced");
}

Test(safefile, symlink_destination_is_refused_and_its_target_kept)
{
  char target[160];
  snprintf(target, sizeof(target), "%s/precious", dir);
  FILE *f = fopen(target, "w");
  fputs("precious\n", f);
  fclose(f);
  cr_assert_eq(symlink(target, dst), 0);
  char err[320] = "";
  cr_assert_neq(acl_table_write_atomic(dst, "one\n", 4, err, sizeof(err)), 0);
  cr_assert(strstr(err, "symbolic link"), "%s", err);
  struct stat st;
  cr_assert_eq(lstat(dst, &st), 0);
  cr_assert(S_ISLNK(st.st_mode), "the link is kept");
  cr_assert_eq(stat(target, &st), 0);
  cr_assert_eq(st.st_size, 9, "its target is untouched");
}

Test(safefile, regular_destination_is_replaced_with_a_private_then_umasked_file)
{
  char err[320];
  cr_assert_eq(acl_table_write_atomic(dst, "one\n", 4, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(acl_table_write_atomic(dst, "two!\n", 5, err, sizeof(err)), 0, "%s", err);
  struct stat st;
  cr_assert_eq(stat(dst, &st), 0);
  cr_assert_eq(st.st_size, 5);
  mode_t um = umask(0);
  umask(um);
  cr_assert_eq(st.st_mode & 0777, 0644 & ~um, "mode %o", st.st_mode & 0777);
  cr_assert_eq(files_in_dir(), 1, "no temporary file left");
}

Test(safefile, stream_refuses_fifo_and_link_and_replaces_a_regular_file)
{
  char err[320];
  cr_assert_eq(mkfifo(dst, 0600), 0);
  cr_assert_lt(acl_sfile_open_stream(dst, 0644, err, sizeof(err)), 0);
  unlink(dst);
  cr_assert_eq(symlink("/etc/hostname", dst), 0);
  cr_assert_lt(acl_sfile_open_stream(dst, 0644, err, sizeof(err)), 0);
  unlink(dst);
  FILE *f = fopen(dst, "w");
  fputs("old contents\n", f);
  fclose(f);
  int fd = acl_sfile_open_stream(dst, 0644, err, sizeof(err));
  cr_assert_geq(fd, 0, "%s", err);
  cr_assert_eq(write(fd, "new\n", 4), 4);
  close(fd);
  struct stat st;
  cr_assert_eq(stat(dst, &st), 0);
  cr_assert_eq(st.st_size, 4, "a fresh file, not the old one appended or kept");
  cr_assert_eq(files_in_dir(), 1);
}
