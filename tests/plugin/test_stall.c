/* A workload whose calls stop while its search explores (what a capture
 * into a CUDA graph looks like to the tuner: replays never call it) is
 * reported once per rank with the workload and what it last ran; a
 * workload that keeps being called is not. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NR 2
static acl_h_plugin_t P;
static void teardown(void) { acl_h_unload(&P); }
TestSuite(stall, .fini = teardown, .timeout = 60);

typedef struct rank {
  void *pctx, *tctx;
  int mask;
  uint64_t clock;
} rank_t;

static void call(rank_t *r, int coll, size_t nbytes)
{
  for (int i = 0; i < NR; i++) {
    float t[7][3];
    acl_h_cost_table(coll, nbytes, NR, t);
    int nch = 0, mask = acl_h_enqueue(P.prof, r[i].pctx, &r[i].mask, coll, nbytes, NR), a, p;
    cr_assert_eq(P.v5->getCollInfo(r[i].tctx, (ncclFunc_t)coll, nbytes, 1, (float **)(void *)t, 7,
                                   3, 0, &nch),
                 ncclSuccess);
    acl_h_select(t, &a, &p);
    acl_h_report_call(P.prof, r[i].pctx, mask, coll, nbytes, a, p, nch,
                      40.0 + (double)(nbytes >> 12) * (a == NCCL_ALGO_RING ? 1.0 : 1.3),
                      &r[i].clock);
  }
}

Test(stall, calls_stopping_while_exploring_are_reported_once)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1);
  acl_h_load(&P);
  rank_t r[NR] = {0};
  uint64_t comm = 0x57a11ull ^ ((uint64_t)getpid() << 24);
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.prof->init(&r[i].pctx, comm, &r[i].mask, "stall", 1, NR, i, acl_h_logger),
                 ncclSuccess);
    cr_assert_eq(P.v5->init(&r[i].tctx, comm, NR, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  }
  /* 60 steps of both workloads: AllReduce 4 MiB is exploring by then (its
   * baseline's first call carries no events, the mask following the
   * unsampled warm-up, so it waits for a probe before it explores) */
  for (int s = 0; s < 60; s++) {
    call(r, ncclFuncAllReduce, 4u << 20);
    call(r, ncclFuncAllGather, 64u << 10);
  }
  cr_assert_eq(acl_h_log_count("stopped reaching the tuner"), 0, "%s", acl_h_log_text());
  /* AllReduce captured (its calls stop); AllGather goes on past the
   * plugin's 16,384 calls (checked every 4,096) */
  for (int s = 0; s < 24000; s++)
    call(r, ncclFuncAllGather, 64u << 10);
  cr_assert_eq(acl_h_log_count("stopped reaching the tuner"), NR, "one per rank:\n%s",
               acl_h_log_text());
  cr_assert_eq(acl_h_log_count("AllReduce 4194304 bytes stopped reaching the tuner"), NR, "%s",
               acl_h_log_text());
  cr_assert_eq(acl_h_log_count("AllGather"), 0, "%s", acl_h_log_text());
  for (int s = 0; s < 20000; s++)
    call(r, ncclFuncAllGather, 64u << 10);
  cr_assert_eq(acl_h_log_count("stopped reaching the tuner"), NR, "warned once");
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.v5->finalize(r[i].tctx), ncclSuccess);
    cr_assert_eq(P.prof->finalize(r[i].pctx), ncclSuccess);
  }
}
