/* A hostile neighbour and crashes: a file that is not ours at a
 * segment's name is never used (another user's, a wrong mode, a link) and
 * the ranks meet on the next name; a corrupt segment of ours is refused
 * at once, naming it; segments whose processes all died are reclaimed
 * when a process next attaches. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "helpers.h"
#include "tuner/consensus/cons_int.h"

static bool shm_exists(const char *name)
{
  char path[300];
  snprintf(path, sizeof(path), "/dev/shm%s", name);
  return access(path, F_OK) == 0;
}

static void seg_path(char *out, size_t len, uint64_t id, const char *ns, const char *suffix)
{
  snprintf(out, len, "/dev/shm/autoccl-%u-%016llx-%s%s", (unsigned)getuid(), (unsigned long long)id,
           ns, suffix);
}

/* A file at the segment's name, pretending a live creator (this process). */
static void plant(const char *path, mode_t mode)
{
  unlink(path);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(fd, 0, "%s", path);
  size_t n = 2 * 1024 * 1024;
  cr_assert_eq(ftruncate(fd, (off_t)n), 0);
  cons_hdr_t *h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  cr_assert_neq(h, MAP_FAILED);
  h->creator_pid = getpid(); /* magic never written: "still initialising" */
  munmap(h, sizeof(*h));
  cr_assert_eq(fchmod(fd, mode), 0);
  close(fd);
}

static unsigned long digest(const char *path)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  unsigned long h = 5381;
  int c;
  while ((c = fgetc(f)) != EOF)
    h = h * 33 + (unsigned)c;
  fclose(f);
  return h;
}

/* Two ranks of one communicator meet on the same segment, not at path. */
static void two_ranks_meet_elsewhere(uint64_t id, const char *ns, const char *path)
{
  th_rank_t a, b;
  th_params(&a, id, 0, 2, 1, ns);
  th_params(&b, id, 1, 2, 1, ns);
  char err[256] = "";
  double t0 = acl_mono_s();
  acl_cons_t *ca = acl_cons_create(&a.p, err, sizeof(err));
  cr_assert_not_null(ca, "rank 0 did not join: %s", err);
  acl_cons_t *cb = acl_cons_create(&b.p, err, sizeof(err));
  cr_assert_not_null(cb, "rank 1 did not join: %s", err);
  cr_assert_lt(acl_mono_s() - t0, 2.0, "joining waited on the planted file");
  acl_cons_stats_t sa, sb;
  acl_cons_stats(ca, &sa);
  acl_cons_stats(cb, &sb);
  cr_assert_str_eq(sa.shm_name, sb.shm_name);
  cr_assert_eq(sa.attached, 2);
  char used[200];
  snprintf(used, sizeof(used), "/dev/shm%s", sa.shm_name);
  cr_assert_str_neq(used, path, "the planted file was used");
  cr_assert(strstr(used, "-alt1"), "%s", used);
  acl_cons_destroy(ca);
  acl_cons_destroy(cb);
  cr_assert_not(shm_exists(sa.shm_name), "%s left behind", sa.shm_name);
}

Test(guest, wrong_mode_file_is_not_used)
{
  uint64_t id = th_comm_id(101);
  char path[200];
  seg_path(path, sizeof(path), id, "mode", "");
  plant(path, 0644);
  unsigned long d0 = digest(path);
  two_ranks_meet_elsewhere(id, "mode", path);
  cr_assert_eq(digest(path), d0, "the file that is not ours was written");
  cr_assert_eq(access(path, F_OK), 0, "the file that is not ours was removed");
  unlink(path);
}

/* The reported attack: another user pre-creates our name, mode 0666, with
 * a live creator. Needs root to make a file of another owner. */
Test(guest, foreign_owner_file_is_not_used)
{
  if (geteuid() != 0)
    cr_skip_test("needs root to chown a file to nobody");
  uint64_t id = th_comm_id(102);
  char path[200];
  seg_path(path, sizeof(path), id, "owner", "");
  plant(path, 0666);
  cr_assert_eq(chown(path, 65534, 65534), 0);
  cr_assert_eq(chmod(path, 0666), 0);
  unsigned long d0 = digest(path);
  two_ranks_meet_elsewhere(id, "owner", path);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_uid, 65534u);
  cr_assert_eq(digest(path), d0, "the foreign segment was written");
  unlink(path);
}

Test(guest, symbolic_link_is_not_followed)
{
  uint64_t id = th_comm_id(103);
  char path[200], target[] = "/tmp/acl-guest-target.XXXXXX";
  int tfd = mkstemp(target);
  cr_assert_geq(tfd, 0);
  cr_assert_eq(write(tfd, "precious\n", 9), 9);
  close(tfd);
  seg_path(path, sizeof(path), id, "link", "");
  unlink(path);
  cr_assert_eq(symlink(target, path), 0);
  two_ranks_meet_elsewhere(id, "link", path);
  struct stat st;
  cr_assert_eq(stat(target, &st), 0);
  cr_assert_eq(st.st_size, 9, "the link's target was changed");
  unlink(path);
  unlink(target);
}

/* Ours but corrupt (a magic no version writes, live creator): refused at
 * once, naming the file, never waited on until the timeout. */
Test(guest, corrupt_segment_is_refused_at_once)
{
  uint64_t id = th_comm_id(104);
  char path[200];
  seg_path(path, sizeof(path), id, "corrupt", "");
  plant(path, 0600);
  int fd = open(path, O_RDWR);
  cons_hdr_t *h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  atomic_store(&h->magic, 0x4141414141414141ull);
  munmap(h, sizeof(*h));
  close(fd);
  th_rank_t a;
  th_params(&a, id, 0, 2, 1, "corrupt");
  char err[256] = "";
  double t0 = acl_mono_s();
  acl_cons_t *c = acl_cons_create(&a.p, err, sizeof(err));
  cr_assert_null(c);
  cr_assert_lt(acl_mono_s() - t0, 1.0, "waited %.1f s on a corrupt segment", acl_mono_s() - t0);
  cr_assert(strstr(err, "corrupt") && strstr(err, "/dev/shm"), "%s", err);
  unlink(path);
}

/* A job killed with SIGKILL leaves its segments; the next process that
 * attaches on this host reclaims them, and leaves live ones alone. */
Test(guest, dead_jobs_segments_reclaimed_at_next_start, .timeout = 30)
{
  uint64_t ids[2] = {th_comm_id(105), th_comm_id(106)}, live_id = th_comm_id(107);
  int ready[2];
  cr_assert_eq(pipe(ready), 0);
  pid_t live = fork();
  if (live == 0) { /* a live job's segment: must survive */
    th_rank_t r;
    th_params(&r, live_id, 0, 2, 1, "live");
    char err[256];
    acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
    if (write(ready[1], c ? "y" : "n", 1) != 1)
      _exit(3);
    pause();
    _exit(0);
  }
  char b = 0;
  cr_assert_eq(read(ready[0], &b, 1), 1);
  cr_assert_eq(b, 'y');
  char names[2][96];
  pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 2; i++) {
      th_rank_t r;
      th_params(&r, ids[i], 0, 2, 1, "dead");
      char err[256];
      if (!acl_cons_create(&r.p, err, sizeof(err)))
        _exit(2);
    }
    raise(SIGKILL);
  }
  cr_assert_eq(th_wait(pid, 10000), 128 + SIGKILL);
  for (int i = 0; i < 2; i++) {
    snprintf(names[i], sizeof(names[i]), "/autoccl-%u-%016llx-dead", (unsigned)getuid(),
             (unsigned long long)ids[i]);
    cr_assert(shm_exists(names[i]), "%s was not created", names[i]);
  }
  char live_name[96];
  snprintf(live_name, sizeof(live_name), "/autoccl-%u-%016llx-live", (unsigned)getuid(),
           (unsigned long long)live_id);
  /* The next start on this host: any communicator. */
  th_rank_t r;
  th_params(&r, th_comm_id(108), 0, 1, 1, "next");
  char err[256];
  acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
  cr_assert_not_null(c, "%s", err);
  for (int i = 0; i < 2; i++)
    cr_expect_not(shm_exists(names[i]), "%s of a dead job was not reclaimed", names[i]);
  cr_expect(shm_exists(live_name), "a live job's segment was removed");
  acl_cons_destroy(c);
  kill(live, SIGKILL);
  th_wait(live, 5000);
  for (int i = 0; i < 2; i++)
    shm_unlink(names[i]);
  shm_unlink(live_name);
}

/* A job killed while it held its segment's lock, with workloads past the
 * header: the next process reclaims the segment (recovering the lock on
 * the way) instead of crashing on the workloads it had not mapped. */
Test(guest, dead_lock_holders_segment_reclaimed_without_crash, .timeout = 30)
{
  uint64_t id = th_comm_id(109);
  pid_t pid = fork();
  if (pid == 0) {
    th_rank_t r;
    th_params(&r, id, 0, 2, 1, "held");
    char err[256];
    acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
    if (!c)
      _exit(2);
    float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
    th_cost(cost, -1);
    acl_decision_t d;
    for (int coll = 0; coll < 4; coll++) {
      acl_wkey_t k = th_key(id, coll, 1u << 20);
      if (acl_cons_decide(c, &k, cost, &d, err, sizeof(err)) != 0)
        _exit(3);
    }
    acl_cons_test_hold_lock(c, 3); /* the last workload is "dirty" */
    raise(SIGKILL);
  }
  cr_assert_eq(th_wait(pid, 10000), 128 + SIGKILL);
  char name[96];
  snprintf(name, sizeof(name), "/autoccl-%u-%016llx-held", (unsigned)getuid(),
           (unsigned long long)id);
  cr_assert(shm_exists(name), "%s was not created", name);
  th_rank_t r;
  th_params(&r, th_comm_id(110), 0, 1, 1, "after");
  char err[256];
  acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
  cr_assert_not_null(c, "%s", err);
  cr_expect_not(shm_exists(name), "%s of a dead lock holder was not reclaimed", name);
  acl_cons_destroy(c);
  shm_unlink(name);
}

/* A job whose processes exited but were not reaped yet (zombies, e.g. a
 * launcher that waits late): they never detach, so the next start reclaims
 * their segment at once, not one run later. */
Test(guest, zombie_jobs_segment_reclaimed, .timeout = 30)
{
  uint64_t id = th_comm_id(120);
  pid_t pid = fork();
  if (pid == 0) {
    th_rank_t r;
    th_params(&r, id, 0, 2, 1, "zombie");
    char err[256];
    if (!acl_cons_create(&r.p, err, sizeof(err)))
      _exit(2);
    _exit(0); /* no destroy: as a crash would */
  }
  char stat_path[64], st[512] = "";
  snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)pid);
  for (int i = 0; i < 1000 && !strstr(st, ") Z"); i++) { /* exited, not reaped */
    FILE *f = fopen(stat_path, "r");
    size_t n = f ? fread(st, 1, sizeof(st) - 1, f) : 0;
    st[n] = '\0';
    if (f)
      fclose(f);
    usleep(2000);
  }
  cr_assert(strstr(st, ") Z"), "the child is a zombie: %s", st);
  char name[96];
  snprintf(name, sizeof(name), "/autoccl-%u-%016llx-zombie", (unsigned)getuid(),
           (unsigned long long)id);
  cr_assert(shm_exists(name), "%s was not created", name);
  /* The next start on this host is a fresh process (reclaim runs at a
   * process's first attach); the zombie's parent has not reaped it. */
  pid_t next = fork();
  if (next == 0) {
    th_rank_t r;
    th_params(&r, th_comm_id(121), 0, 1, 1, "next");
    char err[256];
    acl_cons_t *c = acl_cons_create(&r.p, err, sizeof(err));
    acl_cons_destroy(c);
    _exit(c ? 0 : 2);
  }
  cr_assert_eq(th_wait(next, 10000), 0);
  bool left = shm_exists(name);
  th_wait(pid, 5000);
  shm_unlink(name);
  cr_assert_not(left, "%s of an exited (zombie) job was not reclaimed", name);
}
