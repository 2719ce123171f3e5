/* --fake: a synthetic stand-in for NCCL so the compare driver, the sweep,
 * the tables and the JSON can be tested on a machine without a GPU. The
 * numbers mean nothing; only the plumbing is real. The model reads the same
 * environment a real child would: NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS,
 * NCCL_NTHREADS, NCCL_BUFFSIZE, NCCL_TUNER_PLUGIN. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench/bench.h"

static double model_us(const acl_bench_cfg_t *c, int nranks, size_t bytes, int proto, int nch,
                       int tree)
{
  static const double lat[3] = {6.0, 9.0, 14.0}, frac[3] = {0.25, 0.85, 1.0};
  double bw = 300.0 * frac[proto] * sqrt((nch < 32 ? nch : 32) / 32.0); /* GB/s */
  double l = lat[proto] + (tree ? 4.0 : 0.0);
  if (tree && bytes > (64u << 20))
    bw *= 1.05;
  double t =
      l + (double)bytes * acl_bench_bus_factor(c->coll, nranks > 1 ? nranks : 2) / (bw * 1e3);
  if (c->gemm)
    t *= 1.0 + 0.3 * c->gemm_duty;
  return t;
}

static int default_proto(size_t bytes)
{
  return bytes < (32u << 10) ? 0 : bytes < (2u << 20) ? 1 : 2;
}

void acl_bench_fake_times(const acl_bench_cfg_t *c, int nranks, size_t bytes, int T, double *out,
                          int *status)
{
  const char *algo = getenv("NCCL_ALGO"), *proto_s = getenv("NCCL_PROTO"),
             *nch_s = getenv("NCCL_MAX_NCHANNELS");
  const char *tuner = getenv("NCCL_TUNER_PLUGIN");
  int tree = 0, proto = default_proto(bytes), nch = nch_s ? atoi(nch_s) : 16;
  *status = 0;
  if (algo) {
    if (!strcasecmp(algo, "Tree")) {
      if (c->coll != ACL_BENCH_COLL_ALL_REDUCE) {
        *status = 1;
        return;
      }
      tree = 1;
    } else if (strcasecmp(algo, "Ring") != 0) {
      *status = 1;
      return;
    }
  }
  if (proto_s)
    proto = !strcasecmp(proto_s, "LL") ? 0 : !strcasecmp(proto_s, "LL128") ? 1 : 2;
  if (nch <= 0)
    nch = 16;
  const char *min_s = getenv("NCCL_MIN_NCHANNELS");
  if (min_s && atoi(min_s) > nch)
    nch = atoi(min_s);
  double base = model_us(c, nranks, bytes, proto, nch, tree);
  /* start-up variables (--advise): more threads help large Simple
   * transfers, fewer hurt; a larger buffer helps large ones a little */
  const char *nt_s = getenv("NCCL_NTHREADS"), *buf_s = getenv("NCCL_BUFFSIZE");
  int nt = nt_s ? atoi(nt_s) : 0;
  if (nt > 0 && nt < 256)
    base *= 1.08;
  else if (nt >= 512 && proto == 2)
    base *= 0.96;
  long long buf = buf_s ? atoll(buf_s) : 0;
  if (buf > 0 && buf < (4LL << 20) && bytes > (1u << 20))
    base *= 1.05;
  else if (buf > (4LL << 20) && bytes > (8u << 20))
    base *= 0.995;
  double best = INFINITY;
  if (tuner && *tuner)
    for (int p = 0; p < 3; p++)
      for (int ch = 8; ch <= 32; ch *= 2) {
        double t = model_us(c, nranks, bytes, p, ch, 0);
        if (t < best)
          best = t;
      }
  uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)bytes ^ ((uint64_t)getpid() << 20);
  for (int i = 0; i < T; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double noise = 1.0 + 0.02 * ((double)(x >> 11) / 9007199254740992.0 - 0.5);
    double t = base;
    if (tuner && *tuner)
      t = i < 60 ? base * (1.0 + 0.5 * (double)((i * 7) % 5) / 4.0) : best;
    out[i] = t * noise;
  }
}
