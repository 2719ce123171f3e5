/* Calls captured into a CUDA graph, played the way NCCL >= 2.28 reports
 * them: a CollApi event with graphCaptured when the collective is enqueued
 * (collTaskAppend), then the group's getCollInfo calls. Two ranks driven
 * from one thread, as one process driving a group of ranks does: every
 * rank's events, then every rank's getCollInfo. Over thousands of capture
 * events while the workload explores and after it converged:
 *  - no captured call gets an exploratory candidate: only NCCL's own
 *    choice, or the decision the workload converged to;
 *  - every rank makes the same choice for every call;
 *  - the event mask keeps the CollApi bit on every call, as NCCL rereads
 *    it for each collective;
 *  - a workload whose last call was captured is not warned about when its
 *    calls stop (the graph replays a safe choice). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NR 2
#define STEPS 6000        /* calls of the workload */
#define CAPTURE_EVERY 3   /* call s is captured when s % 3 == 0: 2,000 per rank */
#define NBYTES (4u << 20) /* AllReduce 4 MiB */

static acl_h_plugin_t P;
static void teardown(void) { acl_h_unload(&P); }
TestSuite(capture, .fini = teardown, .timeout = 120);

typedef struct rank {
  void *pctx, *tctx;
  int mask;
  uint64_t clock;
} rank_t;

typedef struct choice {
  int algo, proto, nch;
  bool nccl; /* the cost table and nChannels left as NCCL made them */
} choice_t;

/* GPU time of a call (us): Ring/LL128 clearly fastest, more channels
 * faster, a small deterministic ripple so that samples are not identical. */
static double call_us(int a, int p, int nch, int s)
{
  double f = a == NCCL_ALGO_RING && p == NCCL_PROTO_LL128    ? 0.6
             : a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE ? 1.0
             : p == NCCL_PROTO_LL                            ? 1.6
                                                             : 1.3;
  double ch = 0.5 + 4.0 / (nch > 0 ? nch : 8);
  return 100.0 * f * ch * (1.0 + 0.02 * (double)((s * 7919) % 13) / 13.0);
}

static void init_ranks(rank_t *r, uint64_t comm, const char *name)
{
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.prof->init(&r[i].pctx, comm, &r[i].mask, name, 1, NR, i, acl_h_logger),
                 ncclSuccess);
    cr_assert_eq(P.v5->init(&r[i].tctx, comm, NR, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  }
}

static void fini_ranks(rank_t *r)
{
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.v5->finalize(r[i].tctx), ncclSuccess);
    cr_assert_eq(P.prof->finalize(r[i].pctx), ncclSuccess);
  }
}

/* One call on every rank, captured or not; the ranks' choices in out. */
static void call(rank_t *r, int coll, size_t nbytes, bool captured, int s, choice_t *out)
{
  int mask[NR];
  for (int i = 0; i < NR; i++) {
    mask[i] = r[i].mask; /* NCCL stamps the mask when it enqueues */
    cr_assert(mask[i] & ncclProfileCollApi, "call %d rank %d: mask %#x lost the CollApi bit", s, i,
              mask[i]);
    acl_h_api_events(P.prof, r[i].pctx, mask[i], coll, nbytes, captured);
  }
  for (int i = 0; i < NR; i++) {
    float t[7][3], t0[7][3];
    acl_h_cost_table(coll, nbytes, NR, t);
    memcpy(t0, t, sizeof t0);
    int nch = 0, a, p, a0, p0;
    cr_assert_eq(P.v5->getCollInfo(r[i].tctx, (ncclFunc_t)coll, nbytes, 1, (float **)(void *)t, 7,
                                   3, 0, &nch),
                 ncclSuccess);
    cr_assert_eq(acl_h_select(t, &a, &p), 0);
    acl_h_select(t0, &a0, &p0);
    out[i] = (choice_t){a, p, nch, a == a0 && p == p0 && nch == 0};
    if (!captured) /* a captured call's kernel runs at replay: no sample now */
      acl_h_report_call(P.prof, r[i].pctx, mask[i], coll, nbytes, a, p, nch, call_us(a, p, nch, s),
                        &r[i].clock);
  }
}

static bool same(const choice_t *x, const choice_t *y)
{
  return x->algo == y->algo && x->proto == y->proto && x->nch == y->nch && x->nccl == y->nccl;
}

Test(capture, captured_calls_get_the_proven_decision_on_every_rank)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1);
  acl_h_load(&P);
  rank_t r[NR] = {0};
  init_ranks(r, 0xca97ull ^ ((uint64_t)getpid() << 24), "capture");
  static choice_t got[STEPS][NR];
  int disagree = 0;
  for (int s = 0; s < STEPS; s++) {
    call(r, ncclFuncAllReduce, NBYTES, s % CAPTURE_EVERY == 0, s, got[s]);
    for (int i = 1; i < NR; i++)
      disagree += !same(&got[s][0], &got[s][i]);
  }
  cr_assert_eq(disagree, 0, "%d calls where the ranks chose differently", disagree);
  /* The decision: what the last uncaptured calls all run. */
  const choice_t *x = &got[STEPS - 1][0];
  int last_explore = -1, distinct = 0;
  choice_t seen[64];
  for (int s = 0; s < STEPS; s++) {
    const choice_t *c = &got[s][0];
    if (s % CAPTURE_EVERY == 0 || c->nccl)
      continue;
    if (!same(c, x))
      last_explore = s;
    bool known = false;
    for (int k = 0; k < distinct; k++)
      known = known || same(&seen[k], c);
    if (!known && distinct < 64)
      seen[distinct++] = *c;
  }
  cr_assert(!x->nccl, "the workload should settle on Ring/LL128, not NCCL's choice");
  cr_assert_geq(distinct, 3, "the uncaptured calls explored only %d candidates", distinct);
  cr_assert_lt(last_explore, STEPS - 600, "still exploring at call %d of %d", last_explore, STEPS);
  int captured = 0, exploratory = 0, got_decision = 0, nccl_while_exploring = 0;
  for (int s = 0; s < STEPS; s += CAPTURE_EVERY) {
    const choice_t *c = &got[s][0];
    captured++;
    if (!c->nccl && !same(c, x))
      exploratory++;
    got_decision += same(c, x);
    nccl_while_exploring += s < last_explore && c->nccl;
  }
  cr_assert_geq(captured, 1000);
  cr_assert_eq(exploratory, 0, "%d of %d captured calls got an exploratory candidate", exploratory,
               captured);
  cr_assert_gt(got_decision, 0, "no captured call got the proven decision");
  cr_assert_gt(nccl_while_exploring, 0, "no captured call got NCCL's choice while exploring");
  fini_ranks(r);
}

Test(capture, a_workload_captured_last_is_not_reported_as_stopped)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1);
  acl_h_load(&P);
  rank_t r[NR] = {0};
  init_ranks(r, 0xca98ull ^ ((uint64_t)getpid() << 24), "capture-stall");
  choice_t c[NR];
  for (int s = 0; s < 30; s++) {
    call(r, ncclFuncAllReduce, NBYTES, false, s, c);
    call(r, ncclFuncAllGather, 64u << 10, false, s, c);
  }
  /* AllReduce is captured (its replays never come back), AllGather goes on
   * past the plugin's 16,384 calls */
  call(r, ncclFuncAllReduce, NBYTES, true, 30, c);
  for (int s = 0; s < 24000; s++)
    call(r, ncclFuncAllGather, 64u << 10, false, s, c);
  cr_assert_eq(acl_h_log_count("stopped reaching the tuner"), 0, "%s", acl_h_log_text());
  fini_ranks(r);
}
