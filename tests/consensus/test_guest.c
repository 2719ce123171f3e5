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

/* Random bytes written into the live header (the segment's first 4 KiB)
 * while 4 rank processes decide: no rank crashes, none waits past its
 * bound, and every call gets the same decision (algorithm, protocol,
 * channels) on every rank that made one. 20 seeds: even ones scribble a
 * few short spans during the run, odd ones overwrite the whole 4 KiB. */
#define FZ_RANKS 4
#define FZ_NWL 3
#define FZ_CALLS 3000 /* per rank, the workloads cycled */

typedef struct fz_shm {
  _Atomic int joined, go, done;
  char name[96];
  _Atomic uint64_t errors;
  _Atomic int sealed;
  char err[FZ_RANKS][256];
  uint64_t rec[FZ_RANKS][FZ_CALLS];
} fz_shm_t;

static int fz_rank(fz_shm_t *sh, uint64_t id, int rank)
{
  th_rank_t r;
  th_params(&r, id, rank, FZ_RANKS, 1, "fuzz");
  r.cfg.timeout_ms = 300;
  acl_cons_t *c = acl_cons_create(&r.p, sh->err[rank], 256);
  if (!c)
    return 3;
  if (rank == 0) {
    acl_cons_stats_t st;
    acl_cons_stats(c, &st);
    snprintf(sh->name, sizeof(sh->name), "%s", st.shm_name);
  }
  atomic_fetch_add(&sh->joined, 1);
  for (double end = acl_mono_s() + 10; !atomic_load(&sh->go) && acl_mono_s() < end;)
    usleep(100);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  th_feed_t f;
  th_feed_init(&f, 77u + (uint64_t)rank);
  static const uint64_t bytes[FZ_NWL] = {4096, 1u << 20, 1u << 24};
  for (int i = 0; i < FZ_CALLS; i++) {
    acl_wkey_t k = th_key(id, 4, bytes[i % FZ_NWL]);
    acl_decision_t d;
    char err[256];
    if (acl_cons_decide(c, &k, cost, &d, err, sizeof(err)) != 0) {
      atomic_fetch_add(&sh->errors, 1);
      snprintf(sh->err[rank], 256, "call %d: %.200s", i, err);
      continue; /* no decision recorded: the collective failed on this rank */
    }
    uint64_t v = th_pack(&d) >> 16 & 0xffffffffu; /* algo, proto, channels */
    if (d.widx != ACL_CONS_WIDX_NONE && d.call_idx != (uint64_t)(i / FZ_NWL))
      v |= 1ull << 40; /* a shifted call index diverges from the other ranks */
    sh->rec[rank][i] = v;
    th_feed_call(&f, c, &d, k.nbytes, 100);
  }
  atomic_fetch_add(&sh->done, 1);
  acl_cons_stats_t st;
  acl_cons_stats(c, &st);
  atomic_fetch_add(&sh->sealed, st.sealed);
  acl_cons_destroy(c);
  return 0;
}

Test(guest, header_scribbled_while_running, .timeout = 120)
{
  int crashes = 0, hangs = 0, failed = 0, seeds_hit = 0, writes = 0, seeds_sealed = 0;
  uint64_t divergent = 0, errors = 0, decided = 0;
  double t_all = acl_mono_s();
  for (int seed = 0; seed < 20; seed++) {
    fz_shm_t *sh = th_shared(sizeof(*sh));
    cr_assert_not_null(sh);
    memset(sh->rec, 0xff, sizeof(sh->rec));
    uint64_t id = th_comm_id(300 + seed);
    pid_t pids[FZ_RANKS];
    for (int r = 0; r < FZ_RANKS; r++) {
      pids[r] = fork();
      if (pids[r] == 0)
        _exit(fz_rank(sh, id, r));
    }
    for (double end = acl_mono_s() + 10; atomic_load(&sh->joined) < FZ_RANKS && acl_mono_s() < end;)
      usleep(200);
    char path[200];
    snprintf(path, sizeof(path), "/dev/shm%s", sh->name);
    int fd = sh->name[0] ? open(path, O_RDWR) : -1;
    unsigned char *hp =
        fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
      close(fd);
    atomic_store(&sh->go, 1);
    uint64_t rng = 0x5eed0000u + (uint64_t)seed * 7919;
    int n = 0;
    for (; hp != MAP_FAILED && n < (seed % 2 ? 1 : 8) && atomic_load(&sh->done) < FZ_RANKS; n++) {
      usleep((useconds_t)(200 + th_rand(&rng) % 3000));
      size_t len = seed % 2 ? 4096 : 1 + th_rand(&rng) % 64;
      size_t off = seed % 2 ? 0 : th_rand(&rng) % (4096 - len);
      for (size_t b = 0; b < len; b++)
        hp[off + b] = (unsigned char)th_rand(&rng);
      writes += atomic_load(&sh->done) < FZ_RANKS; /* while some rank still decides */
    }
    seeds_hit += n > 0;
    if (hp != MAP_FAILED)
      munmap(hp, 4096);
    for (int r = 0; r < FZ_RANKS; r++) {
      int st = th_wait(pids[r], 10000);
      if (st == -1)
        hangs++;
      else if (st >= 128)
        crashes++;
      else if (st != 0)
        failed++;
      if (st != 0)
        cr_log_warn("seed %d rank %d: status %d: %s", seed, r, st, sh->err[r]);
    }
    for (int i = 0; i < FZ_CALLS; i++) {
      uint64_t ref = UINT64_MAX;
      for (int r = 0; r < FZ_RANKS; r++) {
        uint64_t v = sh->rec[r][i];
        if (v == UINT64_MAX)
          continue;
        decided++;
        if (ref == UINT64_MAX)
          ref = v;
        else if (v != ref)
          divergent++;
      }
    }
    errors += atomic_load(&sh->errors);
    seeds_sealed += atomic_load(&sh->sealed) > 0;
    if (sh->name[0])
      shm_unlink(sh->name); /* a scribbled attach count may have kept it */
    munmap(sh, sizeof(*sh));
  }
  cr_log_info("header fuzz: 20 seeds in %.1f s, %d scribbled (%d writes while ranks ran), %d "
              "sealed: %llu decisions, %llu errors, %d crashes, %d hangs, %llu divergent",
              acl_mono_s() - t_all, seeds_hit, writes, seeds_sealed, (unsigned long long)decided,
              (unsigned long long)errors, crashes, hangs, (unsigned long long)divergent);
  cr_assert_geq(seeds_hit, 15, "only %d seeds scribbled on a running segment", seeds_hit);
  cr_assert_eq(crashes, 0, "%d rank processes crashed", crashes);
  cr_assert_eq(hangs, 0, "%d rank processes ran past 10 s", hangs);
  cr_assert_eq(failed, 0, "%d rank processes failed to join or run", failed);
  cr_assert_eq(divergent, 0, "%llu decisions differ between ranks", (unsigned long long)divergent);
  cr_assert_gt(decided, 20ull * FZ_RANKS * FZ_CALLS * 9 / 10, "too few decisions: %llu",
               (unsigned long long)decided);
}
