/* Host cost of the plugin's getCollInfo, measured through the real ABI.
 *
 *   build/tests/plugin/bench-getcollinfo [PLUGIN] [CALLS]
 *
 * Two ranks of one communicator in this process (as one thread driving two
 * GPUs would), samples fed back through profiler events until every workload
 * has converged; then CALLS (default 1e6) converged calls, timed in batches
 * of 1000, reporting the median and p99 batch mean in ns/call (each call:
 * the enqueue's API events, then getCollInfo), and the enqueue's part. Then the
 * exploration path: 64 fresh workloads driven through their first 300 calls.
 * Under `valgrind --tool=callgrind` pass a small CALLS and divide Ir by it. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "harness.h"

static acl_h_plugin_t P;

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct rank {
  void *pctx, *tctx;
  int mask;
  uint64_t clock;
} rank_t;

/* One call on one rank: decide, then report a sample like NCCL would. */
static void one_call(rank_t *r, size_t nbytes, int feed)
{
  float t[7][3];
  acl_h_cost_table(ncclFuncAllReduce, nbytes, 2, t);
  int nch = 0, a, p;
  /* the enqueue (CollApi, always on online), then getCollInfo */
  int mask = acl_h_enqueue(P.prof, r->pctx, &r->mask, ncclFuncAllReduce, nbytes, 2);
  P.v5->getCollInfo(r->tctx, ncclFuncAllReduce, nbytes, 1, (float **)(void *)t, 7, 3, 0, &nch);
  if (!feed)
    return;
  acl_h_select(t, &a, &p);
  acl_h_report_call(P.prof, r->pctx, mask, ncclFuncAllReduce, nbytes, a, p, 1, 50.0 + nch * 0.1,
                    &r->clock);
}

int main(int argc, char **argv)
{
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: %s [PLUGIN] [CALLS]\n", argv[0]);
    return 0;
  }
  if (argc > 1)
    setenv("ACL_PLUGIN", argv[1], 1);
  long calls = argc > 2 ? atol(argv[2]) : 1000000;
  if (calls < 1000)
    calls = 1000;
  void *h = dlopen(getenv("ACL_PLUGIN"), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "cannot load plugin (pass its path): %s\n", dlerror());
    return 2;
  }
  dlclose(h);
  acl_h_load(&P);
  rank_t r[2] = {0};
  uint64_t comm = 0xbe9c0000ull + (uint64_t)getpid();
  for (int i = 0; i < 2; i++) {
    P.prof->init(&r[i].pctx, comm, &r[i].mask, "bench", 1, 2, i, acl_h_logger);
    P.v5->init(&r[i].tctx, comm, 2, 1, acl_h_logger, NULL, NULL);
  }
  const size_t conv_size = 8u << 20;
  for (int i = 0; i < 3000; i++)
    for (int k = 0; k < 2; k++)
      one_call(&r[k], conv_size, 1);

  long nb = calls / 1000;
  double *batch = malloc(sizeof(double) * (size_t)nb);
  for (long b = 0; b < nb; b++) {
    double t0 = (double)acl_mono_ns();
    for (int i = 0; i < 1000; i++)
      one_call(&r[i & 1], conv_size, 0);
    batch[b] = ((double)acl_mono_ns() - t0) / 1000.0;
  }
  qsort(batch, (size_t)nb, sizeof(double), cmp_d);
  printf("converged getCollInfo: %ld calls, median %.1f ns/call, p99 %.1f ns/call\n", nb * 1000,
         batch[nb / 2], batch[nb * 99 / 100]);
  /* The enqueue's part alone: NCCL's GroupApi and CollApi callbacks, which
   * the CUDA-graph capture bit turns on for every call (a size never
   * decided, so its records only queue up). */
  for (long b = 0; b < nb; b++) {
    double t0 = (double)acl_mono_ns();
    for (int i = 0; i < 1000; i++)
      acl_h_enqueue(P.prof, r[i & 1].pctx, &r[i & 1].mask, ncclFuncAllReduce, 4096, 2);
    batch[b] = ((double)acl_mono_ns() - t0) / 1000.0;
  }
  qsort(batch, (size_t)nb, sizeof(double), cmp_d);
  printf("of which the enqueue's API events: median %.1f ns/call\n", batch[nb / 2]);

  /* Exploration path: fresh workloads, decisions and samples. */
  double expl[64];
  for (int w = 0; w < 64; w++) {
    size_t nbytes = (size_t)(w + 1) * 65536 + 4;
    double t0 = (double)acl_mono_ns();
    for (int i = 0; i < 300; i++)
      for (int k = 0; k < 2; k++)
        one_call(&r[k], nbytes, 1);
    expl[w] = ((double)acl_mono_ns() - t0) / 600.0;
  }
  qsort(expl, 64, sizeof(double), cmp_d);
  printf("exploring getCollInfo+sample: median %.1f ns/call (first 300 calls of 64 workloads)\n",
         expl[32]);
  for (int i = 0; i < 2; i++) {
    P.v5->finalize(r[i].tctx);
    P.prof->finalize(r[i].pctx);
  }
  free(batch);
  if (getenv("ACL_BENCH_VERBOSE"))
    fputs(acl_h_log_text(), stderr);
  acl_h_unload(&P);
  return 0;
}
