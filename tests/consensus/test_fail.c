/* Consensus under failure: table cap, stale segments, a lock holder killed,
 * settings mismatch, a stopped rank, bad parameters. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "helpers.h"
#include "tuner/consensus/cons_int.h"

static bool shm_exists(const char *name)
{
  char path[160];
  snprintf(path, sizeof(path), "/dev/shm%s", name);
  return access(path, F_OK) == 0;
}

static acl_cons_t *mk(th_rank_t *r, char *err) { return acl_cons_create(&r->p, err, 256); }

Test(fail, null_and_bad_params)
{
  acl_cons_destroy(NULL);
  char err[256];
  cr_assert_null(acl_cons_create(NULL, err, sizeof(err)));
  th_rank_t r;
  th_params(&r, th_comm_id(1), -1, 4, 2, "bad");
  cr_assert_null(mk(&r, err));
  cr_assert(strstr(err, "unknown"), "%s", err);
  th_params(&r, th_comm_id(2), 5, 4, 1, "bad");
  cr_assert_null(mk(&r, err));
  cr_assert(strstr(err, "invalid communicator"), "%s", err);
  th_params(&r, th_comm_id(3), 1, 4, 2, "bad");
  unsetenv("MASTER_ADDR");
  cr_assert_null(mk(&r, err));
  cr_assert(strstr(err, "AUTOCCL_COORDINATOR"), "%s", err);
  snprintf(r.cfg.coordinator, sizeof(r.cfg.coordinator), "host-without-port");
  cr_assert_null(mk(&r, err));
  cr_assert(strstr(err, "host:port"), "%s", err);
  /* refused after the allocation: the one unwinding path, no leak under LSan */
  th_params(&r, th_comm_id(4), 0, 1, 1, "bad");
  r.cfg.samples_per_cand = ACL_SEARCH_MAX_SAMPLES + 1;
  cr_assert_null(mk(&r, err));
  cr_assert(strstr(err, "samples_per_cand"), "%s", err);
}

Test(fail, last_rank_removes_segment)
{
  th_rank_t a, b;
  uint64_t id = th_comm_id(4);
  th_params(&a, id, 0, 2, 1, "rm");
  th_params(&b, id, 1, 2, 1, "rm");
  char err[256];
  acl_cons_t *ca = mk(&a, err), *cb = mk(&b, err);
  cr_assert(ca && cb, "%s", err);
  acl_cons_stats_t st;
  acl_cons_stats(ca, &st);
  cr_assert_eq(st.attached, 2);
  cr_assert(shm_exists(st.shm_name));
  acl_cons_destroy(ca);
  cr_assert(shm_exists(st.shm_name));
  acl_cons_destroy(cb);
  cr_assert_not(shm_exists(st.shm_name), "%s left behind", st.shm_name);
}

/* The table cap: the same keys are refused on every rank, consistently. */
Test(fail, table_cap_consistent)
{
  uint64_t id = th_comm_id(5);
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  uint32_t *res = th_shared(2 * 12 * sizeof(uint32_t));
  pid_t pid[2];
  for (int p = 0; p < 2; p++) {
    pid[p] = fork();
    if (pid[p] == 0) {
      th_rank_t r;
      th_params(&r, id, p, 2, 1, "cap");
      r.cfg.max_workloads = 4;
      char err[256];
      acl_cons_t *c = mk(&r, err);
      if (!c)
        _exit(2);
      float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
      th_cost(cost, -1);
      for (int round = 0; round < 3; round++)
        for (int w = 0; w < 12; w++) {
          acl_wkey_t k = th_key(id, 4, 1024u << w);
          acl_decision_t d;
          if (acl_cons_decide(c, &k, cost, &d, err, sizeof(err)) != 0)
            _exit(3);
          if (round == 2)
            res[p * 12 + w] = d.widx;
          if (d.widx == ACL_CONS_WIDX_NONE && d.cand.algo != ACL_ALGO_NCCL)
            _exit(4);
          usleep(p * 300);
        }
      acl_cons_stats_t st;
      acl_cons_stats(c, &st);
      if (st.nworkloads != 4 || st.refused == 0)
        _exit(5);
      sleep(1); /* keep the segment while the other one runs */
      acl_cons_destroy(c);
      _exit(0);
    }
  }
  for (int p = 0; p < 2; p++)
    cr_assert_eq(th_wait(pid[p], 20000), 0);
  int refused = 0;
  for (int w = 0; w < 12; w++) {
    cr_assert_eq(res[w], res[12 + w], "workload %d: widx %u vs %u", w, res[w], res[12 + w]);
    refused += res[w] == ACL_CONS_WIDX_NONE;
  }
  cr_assert_eq(refused, 8);
}

/* A crashed job's segment (every attached process dead) is replaced. */
Test(fail, stale_segment_replaced)
{
  uint64_t id = th_comm_id(6);
  pid_t pid = fork();
  if (pid == 0) {
    th_rank_t r;
    th_params(&r, id, 0, 2, 1, "stale");
    char err[256];
    acl_decision_t d;
    acl_cons_t *c = mk(&r, err);
    acl_wkey_t k = th_key(id, 4, 4096);
    if (!c || th_decide_n(c, &k, 10, &d, err) != 0)
      _exit(2);
    _exit(0); /* "crash": no destroy */
  }
  cr_assert_eq(th_wait(pid, 10000), 0);
  th_rank_t r;
  th_params(&r, id, 1, 2, 1, "stale");
  char err[256];
  acl_cons_t *c = mk(&r, err);
  cr_assert_not_null(c, "%s", err);
  acl_cons_stats_t st;
  acl_cons_stats(c, &st);
  cr_assert_eq(st.nworkloads, 0, "stale workloads reused");
  cr_assert_eq(st.attached, 1);
  acl_cons_destroy(c);
  cr_assert_not(shm_exists(st.shm_name));
}

/* A creator that died before finishing initialisation. */
Test(fail, half_initialised_segment_replaced)
{
  uint64_t id = th_comm_id(7);
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  th_wait(dead, 5000);
  char name[128];
  snprintf(name, sizeof(name), "/autoccl-%u-%016llx-half", (unsigned)getuid(),
           (unsigned long long)id);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(fd, 0);
  cr_assert_eq(ftruncate(fd, sizeof(cons_hdr_t)), 0);
  cons_hdr_t *h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  h->creator_pid = dead; /* magic never written */
  munmap(h, sizeof(*h));
  close(fd);
  th_rank_t r;
  th_params(&r, id, 0, 1, 1, "half");
  char err[256];
  acl_cons_t *c = mk(&r, err);
  cr_assert_not_null(c, "%s", err);
  acl_cons_destroy(c);
  cr_assert_not(shm_exists(name));
}

/* A live segment of another job (different job identity) is never joined. */
Test(fail, other_live_job_refused)
{
  uint64_t id = th_comm_id(8);
  int go[2];
  cr_assert_eq(pipe(go), 0);
  int ready[2];
  cr_assert_eq(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("MASTER_PORT", "40001", 1);
    th_rank_t r;
    th_params(&r, id, 0, 2, 1, "job");
    char err[256], b = 0;
    acl_cons_t *c = mk(&r, err);
    if (write(ready[1], c ? "y" : "n", 1) != 1 || read(go[0], &b, 1) != 1)
      _exit(3);
    acl_cons_destroy(c);
    _exit(c ? 0 : 2);
  }
  char b = 0;
  cr_assert_eq(read(ready[0], &b, 1), 1);
  cr_assert_eq(b, 'y');
  setenv("MASTER_PORT", "40002", 1);
  th_rank_t r;
  th_params(&r, id, 1, 2, 1, "job");
  char err[256];
  acl_cons_t *c = mk(&r, err);
  unsetenv("MASTER_PORT");
  cr_assert_null(c);
  cr_assert(strstr(err, "another live job"), "%s", err);
  cr_assert_eq(write(go[1], "g", 1), 1);
  cr_assert_eq(th_wait(pid, 5000), 0);
}

Test(fail, settings_mismatch)
{
  uint64_t id = th_comm_id(9);
  th_rank_t a, b, m;
  th_params(&a, id, 0, 3, 1, "mm");
  th_params(&b, id, 1, 3, 1, "mm");
  b.cfg.warmup_calls = 7;
  th_params(&m, id, 2, 3, 1, "mm");
  m.cfg.mode = ACL_MODE_STATIC;
  char err[256];
  acl_cons_t *ca = mk(&a, err);
  cr_assert_not_null(ca, "%s", err);
  cr_assert_null(mk(&b, err));
  cr_assert(strstr(err, "AUTOCCL_WARMUP differs"), "%s", err);
  cr_assert_null(mk(&m, err));
  cr_assert(strstr(err, "AUTOCCL_MODE differs"), "%s", err);
  /* the same from another process (not the per-process mapping) */
  pid_t pid = fork();
  if (pid == 0) {
    char e2[256];
    acl_cons_t *c = acl_cons_create(&m.p, e2, sizeof(e2));
    _exit(!c && strstr(e2, "AUTOCCL_MODE differs") ? 0 : 1);
  }
  cr_assert_eq(th_wait(pid, 10000), 0);
  /* a value outside the search's limits is refused, not clamped and hashed */
  th_rank_t o;
  th_params(&o, id, 1, 3, 1, "mm");
  o.cfg.samples_per_cand = ACL_SEARCH_MAX_SAMPLES + 1;
  cr_assert_null(mk(&o, err));
  cr_assert(strstr(err, "samples_per_cand = 17 is out of range; 16 is used"), "%s", err);
  acl_cons_destroy(ca);
}

/* kill -9 while holding the lock: the others recover within the timeout; the
 * workload being mutated falls back to NCCL's choice on every rank. */
Test(fail, crashed_lock_holder, .timeout = 30)
{
  uint64_t id = th_comm_id(10);
  th_rank_t a;
  th_params(&a, id, 0, 2, 1, "crash");
  char err[256];
  acl_cons_t *ca = mk(&a, err);
  cr_assert_not_null(ca, "%s", err);
  acl_wkey_t k = th_key(id, 4, 1u << 20), k2 = th_key(id, 2, 8192);
  int ready[2];
  cr_assert_eq(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    th_rank_t b;
    th_params(&b, id, 1, 2, 1, "crash");
    char e2[256];
    acl_decision_t d;
    acl_cons_t *cb = acl_cons_create(&b.p, e2, sizeof(e2));
    if (!cb || th_decide_n(cb, &k, 20, &d, e2) || th_decide_n(cb, &k2, 20, &d, e2))
      _exit(2);
    acl_cons_test_hold_lock(cb, d.widx == 0 ? 1 : 0); /* the other workload is "dirty" */
    if (write(ready[1], "y", 1) != 1)
      _exit(3);
    pause();
    _exit(4);
  }
  char b = 0;
  cr_assert_eq(read(ready[0], &b, 1), 1);
  kill(pid, SIGKILL);
  cr_assert_eq(th_wait(pid, 5000), 128 + SIGKILL);
  acl_decision_t d;
  double t0 = acl_mono_s();
  cr_assert_eq(th_decide_n(ca, &k, 5000, &d, err), 0, "%s", err);
  cr_assert_eq(th_decide_n(ca, &k2, 5000, &d, err), 0, "%s", err);
  cr_assert_lt(acl_mono_s() - t0, 3.0);
  acl_cons_stats_t st;
  acl_cons_stats(ca, &st);
  cr_assert_eq(st.recoveries, 1);
  cr_assert_eq(st.attached, 1, "the dead process's rank still counted");
  /* widx 0 (k) was dirty: disabled, NCCL's choice from now on */
  acl_cons_wl_stats_t w[4];
  int n = acl_cons_snapshot(ca, NULL, w, 4);
  cr_assert_eq(n, 2);
  int dis = (w[0].phase == ACL_PHASE_DISABLED) + (w[1].phase == ACL_PHASE_DISABLED);
  cr_assert_eq(dis, 1);
  acl_cons_destroy(ca);
}

/* A stopped rank only slows itself: the others never wait for its progress. */
Test(fail, stopped_rank_does_not_block, .timeout = 30)
{
  uint64_t id = th_comm_id(11);
  int ready[2];
  cr_assert_eq(pipe(ready), 0);
  acl_wkey_t k = th_key(id, 4, 1u << 16);
  pid_t pid = fork();
  if (pid == 0) {
    th_rank_t b;
    th_params(&b, id, 1, 2, 1, "slow");
    char e2[256];
    acl_decision_t d;
    acl_cons_t *cb = acl_cons_create(&b.p, e2, sizeof(e2));
    if (!cb || th_decide_n(cb, &k, 2, &d, e2))
      _exit(2);
    if (write(ready[1], "y", 1) != 1)
      _exit(3);
    pause();
    _exit(0);
  }
  th_rank_t a;
  th_params(&a, id, 0, 2, 1, "slow");
  char err[256];
  acl_cons_t *ca = mk(&a, err);
  cr_assert_not_null(ca, "%s", err);
  char b = 0;
  cr_assert_eq(read(ready[0], &b, 1), 1);
  kill(pid, SIGSTOP);
  acl_decision_t d;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  double t0 = acl_mono_s();
  bool explored = false;
  for (int i = 0; i < 100000; i++) {
    cr_assert_eq(acl_cons_decide(ca, &k, cost, &d, err, sizeof(err)), 0, "%s", err);
    acl_cons_observe(ca, &(acl_cons_obs_t){.widx = d.widx,
                                           .call_idx = d.call_idx,
                                           .cand_id = d.cand_id,
                                           .seconds = th_duration(&d.cand, k.nbytes, 0.5),
                                           .overlap = 0.0f,
                                           .ran_algo = -1,
                                           .ran_proto = -1});
    explored |= d.cand_id > 0;
  }
  double dt = acl_mono_s() - t0;
  kill(pid, SIGKILL);
  th_wait(pid, 5000);
  cr_assert_lt(dt, 5.0, "100000 calls took %.2f s with a stopped peer", dt);
  cr_assert(explored, "the search never left the baseline");
  acl_cons_stats_t st;
  acl_cons_stats(ca, &st);
  acl_cons_destroy(ca);
  cr_assert_not(shm_exists(st.shm_name), "the killed rank kept %s alive", st.shm_name);
}

/* A published candidate this rank's cost table cannot run: a clear error. */
Test(fail, unrunnable_candidate_is_an_error)
{
  uint64_t id = th_comm_id(12);
  th_rank_t a;
  th_params(&a, id, 0, 1, 1, "unrun");
  char err[256];
  acl_cons_t *c = mk(&a, err);
  cr_assert_not_null(c, "%s", err);
  acl_wkey_t k = th_key(id, 4, 1u << 20);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  acl_decision_t d;
  int i = 0;
  for (; i < 2000; i++) {
    cr_assert_eq(acl_cons_decide(c, &k, cost, &d, err, sizeof(err)), 0, "%s", err);
    acl_cons_observe(c, &(acl_cons_obs_t){.widx = d.widx,
                                          .call_idx = d.call_idx,
                                          .cand_id = d.cand_id,
                                          .seconds = th_duration(&d.cand, k.nbytes, 0.3),
                                          .overlap = 0.0f,
                                          .ran_algo = -1,
                                          .ran_proto = -1});
    if (d.cand.algo >= 0)
      break;
  }
  cr_assert_geq(d.cand.algo, 0, "no candidate was ever explored");
  uint64_t next = d.call_idx + 1;
  /* a fresh candidate's block covers several calls (samples_per_cand) */
  float bad[ACL_NUM_ALGO][ACL_NUM_PROTO];
  memcpy(bad, cost, sizeof(bad));
  bad[d.cand.algo][d.cand.proto] = -1.0f;
  acl_decision_t d2;
  cr_assert_neq(acl_cons_decide(c, &k, bad, &d2, err, sizeof(err)), 0);
  cr_assert(strstr(err, "unsupported"), "%s", err);
  /* the failed call consumed nothing: the retry is the same call */
  cr_assert_eq(acl_cons_decide(c, &k, cost, &d2, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(d2.call_idx, next);
  cr_assert(acl_candidate_eq(&d2.cand, &d.cand));
  acl_cons_destroy(c);
}

/* Arrival skew: a rank's kernel runs from its own arrival to the end of the
 * collective, so the rank that arrived first measures the wait for the other
 * (2xH200, 10-20 us collectives: as long as the collective). Per call the
 * fastest local rank's time is the sample; the call is counted as skewed. */
Test(fail, skew_removed_fastest_rank_kept)
{
  th_rank_t a, b;
  uint64_t id = th_comm_id(9);
  th_params(&a, id, 0, 2, 1, "skew");
  th_params(&b, id, 1, 2, 1, "skew");
  a.cfg.warmup_calls = b.cfg.warmup_calls = 0;
  a.p.cfg = &a.cfg;
  b.p.cfg = &b.cfg;
  char err[256];
  acl_cons_t *ca = mk(&a, err), *cb = mk(&b, err);
  cr_assert(ca && cb, "%s", err);
  acl_wkey_t k = th_key(id, 4, 1 << 20);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  acl_decision_t da, db;
  for (int i = 0; i < 64; i++) {
    cr_assert_eq(acl_cons_decide(ca, &k, (const float(*)[ACL_NUM_PROTO])cost, &da, err, 256), 0,
                 "%s", err);
    cr_assert_eq(acl_cons_decide(cb, &k, (const float(*)[ACL_NUM_PROTO])cost, &db, err, 256), 0,
                 "%s", err);
    cr_assert_eq(da.cand_id, db.cand_id);
    /* rank 0 arrived 40 us early every time: it measures 50 us, rank 1 10 us */
    acl_cons_observe(ca, &(acl_cons_obs_t){.widx = da.widx,
                                           .call_idx = da.call_idx,
                                           .cand_id = da.cand_id,
                                           .seconds = 50e-6,
                                           .overlap = -1.0f,
                                           .ran_algo = -1,
                                           .ran_proto = -1});
    acl_cons_observe(cb, &(acl_cons_obs_t){.widx = db.widx,
                                           .call_idx = db.call_idx,
                                           .cand_id = db.cand_id,
                                           .seconds = 10e-6,
                                           .overlap = -1.0f,
                                           .ran_algo = -1,
                                           .ran_proto = -1});
  }
  acl_cons_wl_stats_t w[4];
  cr_assert_eq(acl_cons_snapshot(ca, NULL, w, 4), 1);
  cr_assert(w[0].has_baseline);
  cr_assert_float_eq(w[0].baseline_seconds, 10e-6, 1e-9, "baseline %g s: the skew was kept",
                     w[0].baseline_seconds);
  acl_cons_stats_t st;
  acl_cons_stats(ca, &st);
  cr_assert_geq(st.samples_fed, 5);
  cr_assert_eq(st.samples_skewed, st.samples_fed, "%llu skewed of %llu",
               (unsigned long long)st.samples_skewed, (unsigned long long)st.samples_fed);
  cr_assert_eq(st.samples_partial, 0);
  acl_cons_destroy(ca);
  acl_cons_destroy(cb);
}
