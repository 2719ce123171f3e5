/* A small collective bound by its host time, through the real plugin: the
 * GroupApi event stays open across the decision and a host time that grows
 * with the channels (as NCCL's plan and launch do), and the kernels get
 * shorter with more channels and with Tree. On one H100 (64 KiB AllReduce,
 * two ranks) the plugin chased the kernel: Tree/LL/32, 1.5x by its kernel,
 * ran 1.5 us a call slower than NCCL's Ring/LL/8. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static acl_h_plugin_t P;
static void teardown(void) { acl_h_unload(&P); }
TestSuite(hostcost, .fini = teardown, .timeout = 120);

static int eff_nch(int nch) { return nch > 0 ? nch : 8; }

static double kernel_us(int a, int p, int nch)
{
  double f = (a == NCCL_ALGO_TREE ? 0.6 : 1.0) *
             (p == NCCL_PROTO_LL ? 1.0 : p == NCCL_PROTO_LL128 ? 1.5 : 2.5);
  return 4.0 * f * sqrt(8.0 / eff_nch(nch));
}

static double host_us(int nch) { return 6.0 + 0.3 * eff_nch(nch); }

/* What a call costs a loop of them: its host time or its kernel, the longer. */
static double true_us(int a, int p, int nch) { return fmax(kernel_us(a, p, nch), host_us(nch)); }

static void spin_us(double us)
{
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((double)(t.tv_sec - t0.tv_sec) * 1e6 + (double)(t.tv_nsec - t0.tv_nsec) * 1e-3 < us);
}

typedef struct play {
  double tail_us; /* true cost a call, last TAIL calls */
  double nccl_us; /* NCCL's choice's */
  int last[3];    /* the decision at the end */
} play_t;

/* Two ranks on one thread, CALLS calls of one AllReduce: host(call, nch)
 * us of host time inside each group, kernel(a, p, nch) us of GPU time. */
static void play(size_t nbytes, int calls, int tail, double (*host)(int call, int nch),
                 double (*kernel)(int a, int p, int nch), double (*truth)(int a, int p, int nch),
                 play_t *out)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_PROFILER", "nccl", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1); /* the search alone, not its budget */
  acl_h_load(&P);
  enum { N = 2 };
  void *pctx[N], *tctx[N];
  int mask[N];
  uint64_t comm = 0x40571c0570000000ull ^ (uint64_t)getpid() ^ nbytes;
  for (int i = 0; i < N; i++) {
    cr_assert_eq(P.prof->init(&pctx[i], comm, &mask[i], "harness", 1, N, i, acl_h_logger),
                 ncclSuccess);
    cr_assert_eq(P.v5->init(&tctx[i], comm, N, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  }
  uint64_t clock[N] = {0};
  int own[2] = {-1, -1};
  double sum = 0.0;
  for (int call = 0; call < calls; call++) {
    int got[N][3], api[N];
    for (int i = 0; i < N; i++) {
      float t[7][3], nccl[7][3];
      acl_h_cost_table(ncclFuncAllReduce, nbytes, N, t);
      memcpy(nccl, t, sizeof(t));
      acl_h_select(nccl, &own[0], &own[1]);
      void *group = NULL;
      api[i] = acl_h_enqueue_open(P.prof, pctx[i], &mask[i], ncclFuncAllReduce, nbytes, N, &group);
      int nch = 0;
      cr_assert_eq(P.v5->getCollInfo(tctx[i], ncclFuncAllReduce, nbytes, 1, (float **)(void *)t, 7,
                                     3, 0, &nch),
                   ncclSuccess);
      acl_h_select(t, &got[i][0], &got[i][1]);
      got[i][2] = nch;
      spin_us(host(call, nch)); /* NCCL's plan and launch */
      acl_h_group_end(P.prof, group);
    }
    cr_assert(memcmp(got[0], got[1], sizeof(got[0])) == 0, "call %d: the ranks disagree", call);
    for (int i = 0; i < N; i++)
      acl_h_report_call(P.prof, pctx[i], api[i], ncclFuncAllReduce, nbytes, got[i][0], got[i][1],
                        got[i][2], kernel(got[i][0], got[i][1], got[i][2]), &clock[i]);
    if (call >= calls - tail)
      sum += truth(got[0][0], got[0][1], got[0][2]);
    memcpy(out->last, got[0], sizeof(out->last));
  }
  out->tail_us = sum / tail;
  out->nccl_us = truth(own[0], own[1], 0);
  for (int i = 0; i < N; i++) {
    cr_assert_eq(P.v5->finalize(tctx[i]), ncclSuccess);
    cr_assert_eq(P.prof->finalize(pctx[i]), ncclSuccess);
  }
}

static double host_small(int call, int nch)
{
  (void)call;
  return host_us(nch);
}

Test(hostcost, a_host_bound_call_is_judged_by_its_host_time)
{
  play_t r;
  play(64u << 10, 6000, 500, host_small, kernel_us, true_us, &r);
  /* Chasing the kernel runs 32-64 channels: 15-25 us a call against 8.4. */
  cr_assert_leq(r.tail_us, r.nccl_us * 1.02,
                "the last calls cost %.2f us each (ends on algo %d proto %d %d channels), "
                "NCCL's choice %.2f",
                r.tail_us, r.last[0], r.last[1], r.last[2], r.nccl_us);
}

/* 4 MiB: NCCL's choice takes 60 us, Ring/LL128 with 16-32 channels 30-40. */
static double kernel_big(int a, int p, int nch)
{
  double base = a == NCCL_ALGO_RING ? 60.0 : 90.0;
  double proto = p == NCCL_PROTO_LL128 ? 0.55 : p == NCCL_PROTO_LL ? 1.4 : 1.0;
  return base * proto * (1.0 + 0.2 * fabs(log2(eff_nch(nch) / 16.0)));
}

/* The host ahead of the GPU: after its first calls every launch waits for
 * the GPU to drain one of NCCL's queued calls, whatever it runs. */
static double queued_us;
static double host_blocked(int call, int nch)
{
  return call < 8 ? host_us(nch) : queued_us;
}

Test(hostcost, a_launch_blocked_behind_the_gpu_hides_no_gain)
{
  float t[7][3];
  int a, p;
  acl_h_cost_table(ncclFuncAllReduce, 4u << 20, 2, t);
  acl_h_select(t, &a, &p);
  queued_us = kernel_big(a, p, 0);
  play_t r;
  play(4u << 20, 2500, 300, host_blocked, kernel_big, kernel_big, &r);
  /* Taken from the latest calls, the blocked launches made every candidate
   * as slow as NCCL's queued calls: it kept NCCL's choice. */
  cr_assert_leq(r.tail_us, r.nccl_us * 0.8,
                "the last calls take %.1f us each (algo %d proto %d %d channels), NCCL's "
                "choice %.1f",
                r.tail_us, r.last[0], r.last[1], r.last[2], r.nccl_us);
}
