/* NCCL's host time per call in the plugin's trace, through the real plugin:
 * the GroupApi event stays open across the decision and a host time that
 * grows with the channels (as NCCL's plan and launch do). On one H100 a
 * 64 KiB AllReduce's kernel took 2-3 us while a call took ~14 us of host
 * time (docs/profiler.md, "Host time per call"). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
  double f = (a == NCCL_ALGO_TREE ? 0.6 : 1.0) * (p == NCCL_PROTO_LL      ? 1.0
                                                  : p == NCCL_PROTO_LL128 ? 1.5
                                                                          : 2.5);
  return 4.0 * f * sqrt(8.0 / eff_nch(nch));
}

static double host_us(int nch) { return 6.0 + 0.3 * eff_nch(nch); }

static void spin_us(double us)
{
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((double)(t.tv_sec - t0.tv_sec) * 1e6 + (double)(t.tv_nsec - t0.tv_nsec) * 1e-3 < us);
}

/* Two ranks on one thread, `calls` calls of a 64 KiB AllReduce, traced to
 * `trace`: host_us(nch) of host time inside each group, kernel_us of GPU
 * time (Coll and KernelCh events). */
static void play(int calls, const char *trace)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_TRACE", trace, 1);
  setenv("AUTOCCL_PROFILER", "nccl", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1); /* explore, so that samples come */
  acl_h_load(&P);
  enum { N = 2 };
  const size_t nbytes = 64u << 10;
  void *pctx[N], *tctx[N];
  int mask[N] = {0}; /* NCCL's event mask is a zeroed global the plugin reads */
  uint64_t comm = 0x40571c0570000000ull ^ (uint64_t)getpid();
  for (int i = 0; i < N; i++) {
    cr_assert_eq(P.prof->init(&pctx[i], comm, &mask[i], "harness", 1, N, i, acl_h_logger),
                 ncclSuccess);
    cr_assert_eq(P.v5->init(&tctx[i], comm, N, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  }
  uint64_t clock[N] = {0};
  for (int call = 0; call < calls; call++) {
    int got[N][3], api[N];
    for (int i = 0; i < N; i++) {
      float t[7][3];
      acl_h_cost_table(ncclFuncAllReduce, nbytes, N, t);
      void *group = NULL;
      api[i] = acl_h_enqueue_open(P.prof, pctx[i], &mask[i], ncclFuncAllReduce, nbytes, N, &group);
      int nch = 0;
      cr_assert_eq(P.v5->getCollInfo(tctx[i], ncclFuncAllReduce, nbytes, 1, (float **)(void *)t, 7,
                                     3, 0, &nch),
                   ncclSuccess);
      acl_h_select(t, &got[i][0], &got[i][1]);
      got[i][2] = nch;
      spin_us(host_us(nch)); /* NCCL's plan and launch */
      acl_h_group_end(P.prof, group);
    }
    for (int i = 0; i < N; i++)
      acl_h_report_call(P.prof, pctx[i], api[i], ncclFuncAllReduce, nbytes, got[i][0], got[i][1],
                        got[i][2], kernel_us(got[i][0], got[i][1], got[i][2]), &clock[i]);
  }
  for (int i = 0; i < N; i++) {
    cr_assert_eq(P.v5->finalize(tctx[i]), ncclSuccess);
    cr_assert_eq(P.prof->finalize(pctx[i]), ncclSuccess);
  }
  acl_h_unload(&P); /* the process's last communicator: the trace writer stops */
  unsetenv("AUTOCCL_TRACE");
}

/* A number after "key": in a trace line, -1 for null or absent. */
static double field(const char *line, const char *key)
{
  const char *k = strstr(line, key);
  if (!k || strncmp(k + strlen(key), "null", 4) == 0)
    return -1.0;
  return strtod(k + strlen(key), NULL);
}

Test(hostcost, the_trace_records_each_calls_host_time)
{
  char trace[64];
  snprintf(trace, sizeof(trace), "/tmp/acl-hostcost-%d.jsonl", (int)getpid());
  unlink(trace);
  play(1500, trace);
  FILE *f = fopen(trace, "r");
  cr_assert_not_null(f, "no trace at %s", trace);
  char line[4096];
  int samples = 0, hosted = 0, bad = 0;
  double lo = 1e9, hi = 0.0;
  while (fgets(line, sizeof(line), f)) {
    if (!strstr(line, "\"t\":\"s\""))
      continue;
    samples++;
    double host = field(line, "\"host\":"), sec = field(line, "\"sec\":"),
           used = field(line, "\"used\":");
    if (used != sec)
      bad++; /* the search gets the kernel time */
    if (host < 0.0)
      continue;
    hosted++;
    lo = fmin(lo, host);
    hi = fmax(hi, host);
  }
  fclose(f);
  unlink(trace);
  cr_assert_gt(samples, 100, "%d samples traced", samples);
  cr_assert_eq(bad, 0, "%d samples handed the search something else than their kernel time", bad);
  /* Every sample but those before a workload's second call knows it. */
  cr_assert_geq(hosted, samples - 4, "%d of %d samples carry a host time", hosted, samples);
  /* The shortest call: at least the fewest channels' 6.3 us of host time,
   * well below a set-up or a preempted call. */
  cr_assert_geq(lo, 6.3e-6, "host time %.2f us", lo * 1e6);
  cr_assert_lt(hi, 1e-4, "host time %.2f us", hi * 1e6);
}

/* Without a trace the GroupApi event costs nothing: NCCL gets no handle. */
Test(hostcost, no_trace_no_group_handle)
{
  unsetenv("AUTOCCL_TRACE");
  setenv("AUTOCCL_MODE", "online", 1);
  acl_h_load(&P);
  void *pctx = NULL;
  int mask = 0;
  cr_assert_eq(P.prof->init(&pctx, 0x40571c0580000000ull ^ (uint64_t)getpid(), &mask, "harness", 1,
                            2, 0, acl_h_logger),
               ncclSuccess);
  void *group = (void *)1;
  acl_h_enqueue_open(P.prof, pctx, &mask, ncclFuncAllReduce, 64u << 10, 2, &group);
  cr_assert_null(group);
  cr_assert_eq(P.prof->finalize(pctx), ncclSuccess);
}
