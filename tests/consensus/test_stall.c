/* Nothing silent, nothing unbounded on the collective path: a lock holder
 * that is stopped (SIGSTOP) is never waited for by the sample path nor by
 * calls a published block covers, is named in one warning, and does not
 * hold finalize; a full workload table is said once and counted. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "helpers.h"
#include "tuner/consensus/cons_int.h"

/* stderr (where warnings go without NCCL's logger) into a file. */
static int saved_fd = -1;
static FILE *cap;

static void cap_begin(void)
{
  fflush(stderr);
  cap = tmpfile();
  cr_assert_not_null(cap);
  saved_fd = dup(2);
  dup2(fileno(cap), 2);
}

static char *cap_end(void)
{
  fflush(stderr);
  dup2(saved_fd, 2);
  close(saved_fd);
  long n = ftell(cap);
  char *b = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
  rewind(cap);
  if (n > 0 && fread(b, 1, (size_t)n, cap) != (size_t)n)
    b[0] = '\0';
  fclose(cap);
  fprintf(stderr, "%s", b); /* still in the test's log */
  return b;
}

static int count_of(const char *text, const char *needle)
{
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

Test(stall, stopped_lock_holder_is_never_waited_for, .timeout = 60)
{
  uint64_t id = th_comm_id(40);
  th_rank_t a;
  th_params(&a, id, 0, 2, 1, "stall");
  a.cfg.timeout_ms = 2500; /* above the 2 s finalize bound: detach must not use it */
  char err[256];
  acl_cons_t *ca = acl_cons_create(&a.p, err, sizeof(err));
  cr_assert_not_null(ca, "%s", err);
  acl_wkey_t k = th_key(id, 4, 1u << 20);
  int to_child[2], to_parent[2];
  cr_assert_eq(pipe(to_child), 0);
  cr_assert_eq(pipe(to_parent), 0);
  pid_t pid = fork();
  if (pid == 0) {
    th_rank_t b;
    th_params(&b, id, 1, 2, 1, "stall");
    char e2[256], x;
    acl_decision_t d;
    acl_cons_t *cb = acl_cons_create(&b.p, e2, sizeof(e2));
    if (!cb || th_decide_n(cb, &k, 40, &d, e2) || write(to_parent[1], "d", 1) != 1)
      _exit(2);
    if (read(to_child[0], &x, 1) != 1 || acl_cons_test_hold_lock(cb, UINT32_MAX) != 0)
      _exit(3);
    if (write(to_parent[1], "h", 1) != 1)
      _exit(4);
    pause();
    _exit(5);
  }
  char x = 0;
  acl_decision_t d;
  cr_assert_eq(read(to_parent[0], &x, 1), 1);
  cr_assert_eq(th_decide_n(ca, &k, 5, &d, err), 0, "%s", err); /* this rank knows k */
  cr_assert_eq(write(to_child[1], "g", 1), 1);
  cr_assert_eq(read(to_parent[0], &x, 1), 1);
  cr_assert_eq(kill(pid, SIGSTOP), 0);

  cap_begin();
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  uint64_t max_decide = 0, max_sample = 0;
  int covered = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t t0 = acl_mono_ns();
    int rc = acl_cons_decide(ca, &k, cost, &d, err, sizeof(err));
    uint64_t t1 = acl_mono_ns();
    if (rc != 0 || d.widx == ACL_CONS_WIDX_NONE)
      break; /* past the published blocks: this one waited for the lock, then
              * sealed the segment and ran NCCL's choice */
    acl_cons_observe(ca, &(acl_cons_obs_t){.widx = d.widx,
                                           .call_idx = d.call_idx,
                                           .cand_id = d.cand_id,
                                           .seconds = 1e-4,
                                           .overlap = 0.0f,
                                           .ran_algo = -1,
                                           .ran_proto = -1});
    uint64_t t2 = acl_mono_ns();
    max_decide = t1 - t0 > max_decide ? t1 - t0 : max_decide;
    max_sample = t2 - t1 > max_sample ? t2 - t1 : max_sample;
    covered++;
  }
  acl_cons_stats_t st;
  acl_cons_stats(ca, &st);
  uint64_t t0 = acl_mono_ns();
  acl_cons_destroy(ca);
  double fin = (double)(acl_mono_ns() - t0) * 1e-9;
  char *log = cap_end();
  kill(pid, SIGKILL);
  th_wait(pid, 5000);

  fprintf(stderr,
          "stopped holder: %d covered calls, max decide %.1f us, max sample %.1f us, "
          "finalize %.3f s\n",
          covered, (double)max_decide * 1e-3, (double)max_sample * 1e-3, fin);
  cr_assert_geq(covered, 30, "calls covered by the child's blocks: %d", covered);
  /* The target is 10 us (a 5 us spin), measured in docs/benchmarks-consensus.md.
   * 100 ms leaves room for a test preempted on a loaded machine under ASan
   * (8.5 ms seen) and still fails the waits this replaces: 1 s per sample,
   * AUTOCCL_TIMEOUT_MS (2.5 s here) per decide. */
  cr_assert_lt(max_sample, 100000000, "a sample waited %.3f ms", (double)max_sample * 1e-6);
  cr_assert_lt(max_decide, 100000000, "a covered call waited %.3f ms", (double)max_decide * 1e-6);
  cr_assert_geq(st.samples_busy, (uint64_t)covered - 3, "samples dropped, counted: %llu",
                (unsigned long long)st.samples_busy);
  cr_assert_lt(fin, 2.0, "finalize took %.2f s with the holder stopped", fin);
  char who[48];
  snprintf(who, sizeof(who), "by pid %d ", (int)pid);
  cr_assert(strstr(log, who) && strstr(log, "stopped"), "the holder is named: %s", log);
  cr_assert_eq(count_of(log, "has been held for"), 1, "one warning: %s", log);
  free(log);
}

Test(stall, full_workload_table_is_said_once_and_counted, .timeout = 30)
{
  uint64_t id = th_comm_id(41);
  th_rank_t a;
  th_params(&a, id, 0, 1, 1, "full");
  a.cfg.max_workloads = 4;
  char err[256];
  acl_cons_t *ca = acl_cons_create(&a.p, err, sizeof(err));
  cr_assert_not_null(ca, "%s", err);
  cap_begin();
  acl_decision_t d;
  int nccl = 0;
  for (int i = 0; i < 10; i++) {
    acl_wkey_t k = th_key(id, 4, 4096u << i);
    cr_assert_eq(th_decide_n(ca, &k, 3, &d, err), 0, "%s", err);
    nccl += d.widx == ACL_CONS_WIDX_NONE;
  }
  char *log = cap_end();
  acl_cons_stats_t st;
  acl_cons_stats(ca, &st);
  acl_cons_comm_stats_t comm;
  acl_cons_snapshot(ca, &comm, NULL, 0);
  acl_cons_destroy(ca);
  cr_assert_eq(nccl, 6);
  cr_assert_eq(count_of(log, "is full"), 1, "said once: %s", log);
  cr_assert(strstr(log, "AUTOCCL_MAX_WORKLOADS=4"), "%s", log);
  cr_assert_eq(st.refused_here, 6);
  cr_assert_eq(comm.workloads_refused, 6, "in /metrics and the state");
  free(log);
}
