/* Online tuning through the real plugin, played like NCCL: profiler init
 * then tuner init per rank, one thread driving every rank of the
 * communicator inside each "group" (the hazard of docs/consensus.md:
 * nobody waits for another rank's progress), samples fed
 * back through the profiler ABI (Coll + KernelCh events). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NR 4
static acl_h_plugin_t P;

typedef struct rank {
  void *pctx, *tctx;
  int mask;
  int api_mask; /* NCCL stamps the mask on a call when it is enqueued */
} rank_t;

static void teardown(void) { acl_h_unload(&P); }
TestSuite(online, .fini = teardown, .timeout = 60);

/* The simulated truth: RING/LL128 with 16 channels is fastest for this
 * size; NCCL's cost table believes otherwise. */
static double true_us(int a, int p, int nch)
{
  double base = a == NCCL_ALGO_RING ? 100.0 : 140.0;
  double proto = p == NCCL_PROTO_LL128 ? 0.8 : p == NCCL_PROTO_LL ? 1.6 : 1.0;
  int ch = nch > 0 ? nch : 8;
  double chf = 1.0 + 0.15 * fabs(log2((double)ch / 16.0));
  return base * proto * chf;
}

static void feed(rank_t *r, int coll, size_t nbytes, int a, int p, int nch, uint64_t *clock)
{
  acl_h_report_call(P.prof, r->pctx, r->api_mask, coll, nbytes, a, p, nch, true_us(a, p, nch),
                    clock);
}

Test(online, one_thread_drives_four_ranks_and_they_agree)
{
  setenv("AUTOCCL_MODE", "online", 1);
  /* Convergence within 1500 calls: the exploration budget is lifted (at the
   * default 3 % these 100 us calls would wait; tests/tuner/test_budget.c). */
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1);
  acl_h_load(&P);
  rank_t r[NR] = {0};
  uint64_t comm = 0xfeedbeef12345678ull ^ (uint64_t)getpid();
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.prof->init(&r[i].pctx, comm, &r[i].mask, "harness", 1, NR, i, acl_h_logger),
                 ncclSuccess);
    cr_assert_eq(P.v5->init(&r[i].tctx, comm, NR, 1, acl_h_logger, NULL, NULL), ncclSuccess);
    cr_assert_not_null(r[i].tctx);
  }
  const size_t sizes[3] = {64u << 10, 4u << 20, 64u << 20};
  uint64_t clock[NR] = {0};
  int changed = 0, last[3][3] = {{-1}}, stable_since[3] = {0};
  for (int call = 0; call < 1500; call++) {
    int w = call % 3, coll = w == 1 ? ncclFuncAllGather : ncclFuncAllReduce;
    int got[NR][3];
    /* One group: rank 0, 1, 2, 3 in turn on this thread. */
    for (int i = 0; i < NR; i++) {
      float t[7][3];
      acl_h_cost_table(coll, sizes[w], NR, t);
      int nch = 0;
      r[i].api_mask = acl_h_enqueue(P.prof, r[i].pctx, &r[i].mask, coll, sizes[w], NR);
      cr_assert_eq(P.v5->getCollInfo(r[i].tctx, (ncclFunc_t)coll, sizes[w], 1, (float **)(void *)t,
                                     7, 3, 0, &nch),
                   ncclSuccess, "call %d rank %d failed: %s", call, i, acl_h_log_text());
      acl_h_select(t, &got[i][0], &got[i][1]);
      got[i][2] = nch;
    }
    for (int i = 1; i < NR; i++)
      cr_assert(got[i][0] == got[0][0] && got[i][1] == got[0][1] && got[i][2] == got[0][2],
                "call %d: rank %d runs %d/%d/%d, rank 0 runs %d/%d/%d", call, i, got[i][0],
                got[i][1], got[i][2], got[0][0], got[0][1], got[0][2]);
    for (int i = 0; i < NR; i++)
      feed(&r[i], coll, sizes[w], got[i][0], got[i][1], got[i][2], &clock[i]);
    if (memcmp(last[w], got[0], sizeof(last[w])) != 0) {
      changed++;
      stable_since[w] = call;
      memcpy(last[w], got[0], sizeof(last[w]));
    }
  }
  /* It explored (decisions changed) and then settled on something. */
  cr_assert_gt(changed, 3, "the tuner never tried another candidate");
  for (int w = 0; w < 3; w++)
    cr_assert_lt(stable_since[w], 1200, "workload %d still changing at call %d", w,
                 stable_since[w]);
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.v5->finalize(r[i].tctx), ncclSuccess);
    cr_assert_eq(P.prof->finalize(r[i].pctx), ncclSuccess);
  }
}

/* The call at which the plugin first runs something other than NCCL's own
 * choice (a changed selection or a set channel count), for one AllReduce
 * workload on two ranks: the warm-up and the baseline's samples_per_cand
 * calls come first. Runs in a child process (the plugin reads AUTOCCL_* once
 * per process) and returns through its exit status; -1 on any failure. */
static int first_candidate_call(const char *samples)
{
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid > 0) {
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) && WEXITSTATUS(st) < 255 ? WEXITSTATUS(st) : -1;
  }
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_WARMUP", "5", 1);
  setenv("AUTOCCL_SAMPLES", samples, 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1); /* the descent alone */
  acl_h_load(&P);
  enum { N = 2 };
  rank_t r[N] = {0};
  uint64_t comm = 0x5a3b1e5000000000ull ^ (uint64_t)getpid();
  for (int i = 0; i < N; i++)
    if (P.prof->init(&r[i].pctx, comm, &r[i].mask, "harness", 1, N, i, acl_h_logger) !=
            ncclSuccess ||
        P.v5->init(&r[i].tctx, comm, N, 1, acl_h_logger, NULL, NULL) != ncclSuccess)
      _exit(255);
  if (acl_h_log_count("AUTOCCL_SAMPLES") != 0) /* accepted as is */
    _exit(255);
  const size_t nbytes = 4u << 20;
  uint64_t clock[N] = {0};
  int first = 255;
  for (int call = 0; call < 250 && first == 255; call++) {
    int got[N][3], own[2];
    for (int i = 0; i < N; i++) {
      float t[7][3], nccl[7][3];
      acl_h_cost_table(ncclFuncAllReduce, nbytes, N, t);
      memcpy(nccl, t, sizeof(t));
      acl_h_select(nccl, &own[0], &own[1]);
      int nch = 0;
      r[i].api_mask = acl_h_enqueue(P.prof, r[i].pctx, &r[i].mask, ncclFuncAllReduce, nbytes, N);
      if (P.v5->getCollInfo(r[i].tctx, ncclFuncAllReduce, nbytes, 1, (float **)(void *)t, 7, 3, 0,
                            &nch) != ncclSuccess)
        _exit(255);
      acl_h_select(t, &got[i][0], &got[i][1]);
      got[i][2] = nch;
    }
    if (got[0][0] != own[0] || got[0][1] != own[1] || got[0][2] != 0)
      first = call;
    for (int i = 0; i < N; i++)
      feed(&r[i], ncclFuncAllReduce, nbytes, got[i][0], got[i][1], got[i][2], &clock[i]);
  }
  for (int i = 0; i < N; i++)
    if (P.v5->finalize(r[i].tctx) != ncclSuccess || P.prof->finalize(r[i].pctx) != ncclSuccess)
      _exit(255);
  _exit(first);
}

/* AUTOCCL_SAMPLES at its documented maximum (16, README) reaches the search
 * unclamped: the baseline lasts longer than at 15, and that longer than at
 * the default 5 (before, 17..64 were accepted and silently clamped to 16). */
Test(online, samples_at_max_16_changes_the_search)
{
  int d = first_candidate_call("5"), s15 = first_candidate_call("15"),
      s16 = first_candidate_call("16");
  cr_assert(d > 5 && s15 > 0 && s16 > 0, "first candidate at calls %d, %d, %d", d, s15, s16);
  /* More samples, a longer baseline (late samples are waited for in blocks
   * of 16 calls, so the difference is not one call per sample). */
  cr_assert_gt(s16, s15, "AUTOCCL_SAMPLES 15 -> 16: first candidate at %d -> %d", s15, s16);
  cr_assert_gt(s15, d, "AUTOCCL_SAMPLES 5 -> 15: first candidate at %d -> %d", d, s15);
}

/* Above the maximum: a warning that names the variable and its range, and
 * the default instead (never a silent clamp). */
Test(online, samples_above_max_rejected_with_default)
{
  setenv("AUTOCCL_SAMPLES", "17", 1);
  acl_h_load(&P);
  void *ctx = NULL;
  cr_assert_eq(P.v5->init(&ctx, 0x17ull ^ (uint64_t)getpid(), 2, 1, acl_h_logger, NULL, NULL),
               ncclSuccess);
  cr_assert_eq(acl_h_log_count("invalid AUTOCCL_SAMPLES=\"17\": accepted values are integers "
                               "from 2 to 16; using 5"),
               1, "%s", acl_h_log_text());
  cr_assert_eq(P.v5->finalize(ctx), ncclSuccess);
}

/* NCCL 2.30's order with one thread driving two ranks (ncclCommInitAll,
 * then ncclGroupStart; AllReduce on each; ncclGroupEnd): both calls are
 * enqueued under NCCL's one process-wide event mask, then getCollInfo runs
 * for rank 0 and rank 1, then the kernels launch (Coll events); each
 * kernel's channels are reported by NCCL's proxy thread once it ran, after
 * the host enqueued `lag` more groups. Returns the calls that carried
 * KernelCh events before the first call that ran something other than
 * NCCL's own choice (-1 none), and what the last call ran. */
typedef struct late_run {
  int evented_before_first, first;
  int algo, proto, nch;
} late_run_t;

static void late_play(int lag, int ncalls, late_run_t *out)
{
  enum { N = 2, Q = 64 };
  const size_t nbytes = 64u << 10;
  acl_h_load(&P);
  void *pctx[N], *tctx[N];
  int mask = 0; /* ncclProfilerEventMask: one int for the process */
  uint64_t comm = 0x1a7e500000000000ull ^ (uint64_t)getpid();
  for (int i = 0; i < N; i++) {
    cr_assert_eq(P.prof->init(&pctx[i], comm, &mask, "late", 1, N, i, acl_h_logger), ncclSuccess);
    cr_assert_eq(P.v5->init(&tctx[i], comm, N, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  }
  struct {
    int mask, a, p, nch;
  } q[Q][N];
  uint64_t clock[N] = {0};
  *out = (late_run_t){.evented_before_first = 0, .first = -1};
  for (int k = 0; k < ncalls + lag; k++) {
    if (k < ncalls) {
      int m = mask, got[N][3];
      for (int i = 0; i < N; i++)
        acl_h_api_events(P.prof, pctx[i], m, ncclFuncAllReduce, nbytes, 0);
      for (int i = 0; i < N; i++) {
        float t[7][3], nccl[7][3];
        acl_h_cost_table(ncclFuncAllReduce, nbytes, N, t);
        memcpy(nccl, t, sizeof(t));
        int own[2], nch = 0;
        acl_h_select(nccl, &own[0], &own[1]);
        cr_assert_eq(P.v5->getCollInfo(tctx[i], ncclFuncAllReduce, nbytes, 1, (float **)(void *)t,
                                       7, 3, 0, &nch),
                     ncclSuccess, "call %d rank %d: %s", k, i, acl_h_log_text());
        acl_h_select(t, &got[i][0], &got[i][1]);
        got[i][2] = nch;
        if (i == 0 && out->first < 0 && (got[0][0] != own[0] || got[0][1] != own[1] || nch))
          out->first = k;
      }
      cr_assert(got[1][0] == got[0][0] && got[1][1] == got[0][1] && got[1][2] == got[0][2],
                "call %d: the ranks diverged", k);
      if (out->first < 0 && (m & ncclProfileKernelCh))
        out->evented_before_first++;
      for (int i = 0; i < N; i++) {
        q[k % Q][i].mask = m;
        q[k % Q][i].a = got[i][0];
        q[k % Q][i].p = got[i][1];
        q[k % Q][i].nch = got[i][2];
      }
      out->algo = got[0][0];
      out->proto = got[0][1];
      out->nch = got[0][2];
    }
    if (k >= lag) /* the proxy thread reports call k - lag */
      for (int i = 0; i < N; i++) {
        int j = (k - lag) % Q;
        feed(&(rank_t){.pctx = pctx[i], .api_mask = q[j][i].mask}, ncclFuncAllReduce, nbytes,
             q[j][i].a, q[j][i].p, q[j][i].nch, &clock[i]);
      }
  }
  for (int i = 0; i < N; i++) {
    cr_assert_eq(P.v5->finalize(tctx[i]), ncclSuccess);
    cr_assert_eq(P.prof->finalize(pctx[i]), ncclSuccess);
  }
}

/* At the default budget a 64 KiB workload first waits for its budget
 * (unsampled blocks of NCCL's choice), then measures NCCL's choice on
 * AUTOCCL_SAMPLES calls. The consensus's starvation back-off must not take
 * the unsampled wait for starvation: it made that measuring block 1024
 * calls long, each carrying NCCL's profiler events. */
Test(online, baseline_after_the_budget_wait_carries_few_events)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_PROFILER", "nccl", 1);
  unsetenv("AUTOCCL_EXPLORE_BUDGET");
  late_run_t r;
  late_play(1, 60000, &r);
  cr_assert_geq(r.first, 0, "no candidate within 60000 calls");
  cr_assert_leq(r.evented_before_first, 64,
                "%d calls carried profiler events before the first candidate (call %d)",
                r.evented_before_first, r.first);
}
