/* The replay landscape (sim/landscape_trace.c) on a hand-made trace folder
 * whose outliers, skew, set-up and clamps are known: the draws reproduce
 * them, and the documented interpolation rules hold. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/landscape.h"

#define T 100
#define OUT_AT 40 /* iteration with a 1000x outlier on rank 1 */
#define OUT_AT2 70

static char dir[64];

/* One bench trace (all_reduce at 64 KiB and 1 MiB): every iteration 10 us
 * on rank 0 and 12 us on rank 1 (the early rank waits), times k64 at
 * 64 KiB, two 10 ms outliers, and `first` us more on iteration 0 of the
 * first size; "ran" null at 64 KiB with noran64 (the probe saw no event). */
typedef struct trace_spec {
  const char *name, *label, *algo, *proto;
  int nch[2];
  double first, k64;
  bool noran64;
} trace_spec_t;

static void write_trace(const trace_spec_t *ts)
{
  const char *name = ts->name, *label = ts->label;
  char path[256];
  snprintf(path, sizeof path, "%s/iso-procs-all_reduce/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "{\"format\":\"autoccl-bench-trace\",\"version\":1,\"label\":\"%s\",\"coll\":"
          "\"all_reduce\",\"nranks\":2,\"launch\":\"procs\",\"gemm\":null,\"env\":{}}\n",
          label);
  const unsigned long long sizes[2] = {65536, 1048576};
  for (int s = 0; s < 2; s++) {
    double k = s ? 4.0 : ts->k64 > 0 ? ts->k64 : 1.0; /* 1 MiB takes 4x as long */
    fprintf(f, "{\"t\":\"size\",\"bytes\":%llu,\"count\":1,\"status\":0,\"ran\":", sizes[s]);
    if (s == 0 && ts->noran64)
      fprintf(f, "null");
    else
      fprintf(f, "[{\"rank\":0,\"algo\":\"%s\",\"proto\":\"%s\",\"nch\":%d}]", ts->algo, ts->proto,
              ts->nch[s]);
    fprintf(f, ",\"times_us\":[");
    for (int r = 0; r < 2; r++) {
      fputc('[', f);
      for (int i = 0; i < T; i++) {
        double v = (r ? 12.0 : 10.0) * k;
        if (r == 1 && (i == OUT_AT || i == OUT_AT2))
          v = 10000.0;
        if (r == 0 && (i == OUT_AT || i == OUT_AT2))
          v = 10000.0 + 2.0; /* rank 0 waits for the late rank */
        if (i == 0 && s == 0)
          v += ts->first;
        fprintf(f, "%s%.3f", i ? "," : "", v);
      }
      fprintf(f, "]%s", r ? "" : ",");
    }
    fprintf(f, "]}\n");
  }
  fprintf(f, "{\"t\":\"end\"}\n");
  fclose(f);
}

static acl_landscape_t *L;

/* A trace folder of these runs, a plugin trace and events.tsv, loaded as L. */
static void make_folder(const trace_spec_t *runs, size_t nruns)
{
  snprintf(dir, sizeof dir, "/tmp/acl-replay-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  char sub[128];
  snprintf(sub, sizeof sub, "%s/iso-procs-all_reduce", dir);
  cr_assert_eq(mkdir(sub, 0755), 0);
  for (size_t i = 0; i < nruns; i++)
    write_trace(&runs[i]);
  /* a plugin trace beside them is not a landscape source */
  char p[256];
  snprintf(p, sizeof p, "%s/iso-procs-all_reduce/autoccl-rep0-plugin-r0.jsonl", dir);
  FILE *f = fopen(p, "w");
  fputs("{\"format\":\"autoccl-trace\",\"version\":1}\n", f);
  fclose(f);
  snprintf(p, sizeof p, "%s/events.tsv", dir);
  f = fopen(p, "w");
  fputs("# coll bytes event_us\nall_reduce\t65536\t3.5\nall_reduce\t1048576\t1.0\n", f);
  fclose(f);
  char err[256] = "";
  L = acl_land_create_traces(dir, "procs", err, sizeof err);
  cr_assert_not_null(L, "%s", err);
}

static void setup(void)
{
  /* first calls: communicator set-up 10 ms in every run, 2 ms per channel
   * beyond the default's 16, 30 ms more for Tree's own connections */
  static const trace_spec_t runs[] = {
      {"default-rep0.jsonl", "default", "Ring", "LL", {16, 22}, 10000, 1.0, false},
      {"ring-ll-auto-rep0.jsonl", "Ring/LL/auto", "Ring", "LL", {16, 22}, 10000, 1.0, false},
      {"ring-simple-auto-rep0.jsonl",
       "Ring/Simple/auto",
       "Ring",
       "Simple",
       {24, 24},
       10000 + 8 * 2000,
       1.0,
       false},
      {"ring-simple-32-rep0.jsonl",
       "Ring/Simple/32",
       "Ring",
       "Simple",
       {32, 32},
       10000 + 16 * 2000,
       1.0,
       false},
      {"tree-ll-auto-rep0.jsonl",
       "Tree/LL/auto",
       "Tree",
       "LL",
       {16, 16},
       10000 + 30000,
       1.0,
       false},
  };
  make_folder(runs, sizeof runs / sizeof runs[0]);
}

static void teardown(void)
{
  acl_land_destroy(L);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(replay, .init = setup, .fini = teardown);

static const acl_candidate_t RING_LL = {.algo = 1, .proto = 0, .nchannels = 0};
static const acl_candidate_t RING_SIMPLE = {.algo = 1, .proto = 2, .nchannels = 0};

Test(replay, loads_and_defaults)
{
  cr_assert_eq(acl_land_traces(L), 5);
  cr_assert(acl_land_is_replay(L));
  cr_assert(acl_land_valid(L, 4, 65536, 2, 1, 0));
  cr_assert(acl_land_valid(L, 4, 65536, 2, 1, 2));
  cr_assert(acl_land_valid(L, 4, 65536, 2, 0, 0));
  cr_assert_not(acl_land_valid(L, 4, 65536, 2, 0, 2), "Tree/Simple was not recorded");
  cr_assert_not(acl_land_valid(L, 4, 65536, 2, 2, 0), "CollNet was not recorded");
  acl_candidate_t d;
  acl_land_nccl_default(L, 4, 65536, 2, &d);
  cr_assert(d.algo == 1 && d.proto == 0 && d.nchannels == 16, "%d %d %d", d.algo, d.proto,
            d.nchannels);
  /* slowest rank per iteration: 12 us at 64 KiB, 48 us at 1 MiB */
  cr_assert_float_eq(acl_land_time(L, 4, 65536, 2, &RING_LL, 0.0), 12e-6, 1e-9);
  cr_assert_float_eq(acl_land_time(L, 4, 1048576, 2, &RING_LL, 0.0), 48e-6, 1e-9);
}

Test(replay, clamps_to_what_nccl_ran)
{
  /* 32 asked: built 24; LL at 64 KiB: NCCL's own 16 */
  cr_assert_eq(acl_land_exec_channels(L, 4, 65536, 1, 2, 32), 24);
  cr_assert_eq(acl_land_exec_channels(L, 4, 65536, 1, 0, 24), 16);
  cr_assert_eq(acl_land_exec_channels(L, 4, 1048576, 1, 0, 0), 22);
  cr_assert_eq(acl_land_exec_channels(L, 4, 65536, 1, 2, 8), 8);
  /* a decision of 32 runs (and costs) what 24 runs: the 32-channel
   * recording (NCCL_MIN_NCHANNELS=32) is out of reach */
  acl_candidate_t c32 = RING_SIMPLE, c24 = RING_SIMPLE;
  c32.nchannels = 32;
  c24.nchannels = 24;
  cr_assert_eq(acl_land_time(L, 4, 65536, 2, &c32, 0), acl_land_time(L, 4, 65536, 2, &c24, 0));
  cr_assert_eq(acl_land_max_channels(L), 24);
}

Test(replay, draws_reproduce_outliers_and_skew)
{
  int outliers = 0, n = 20000, skewed = 0;
  double mx = 0;
  for (int i = 0; i < n; i++) {
    double pr[2];
    double t = acl_land_draw(L, 4, 65536, 2, &RING_LL, 0.0, (uint64_t)i * 7919u + 1, pr);
    cr_assert_float_eq(t, pr[0] > pr[1] ? pr[0] : pr[1], 1e-15);
    if (t > 1e-3)
      outliers++;
    if (fabs(pr[1] - pr[0] - 2e-6) < 1e-9)
      skewed++;
    if (t > mx)
      mx = t;
  }
  /* default + Ring/LL/auto both ran Ring/LL/16: pooled, 2 x (100 - 5) steady
   * iterations, 4 of them outliers (2 per file) */
  double want = 4.0 / 190.0;
  cr_assert(fabs((double)outliers / n - want) < 0.006, "outlier share %.4f, want %.4f",
            (double)outliers / n, want);
  cr_assert_float_eq(mx, 10002e-6, 1e-9, "the 1000x outlier itself");
  cr_assert_eq(skewed, n - outliers, "rank 1 is 2 us behind rank 0 in every normal iteration");
  /* the mean sees the outliers, the median does not */
  double mean = acl_land_mean_time(L, 4, 65536, 2, &RING_LL, 0.0);
  cr_assert(mean > 12e-6 * 10, "mean %.3g", mean);
}

Test(replay, interpolates_sizes_log_log)
{
  /* Simple ran 24 channels at both sizes. 256 KiB: halfway (in log) between 64 KiB and 1 MiB: sqrt(12 * 48) us */
  double t = acl_land_time(L, 4, 262144, 2, &RING_SIMPLE, 0.0);
  cr_assert_float_eq(t, sqrt(12.0 * 48.0) * 1e-6, 1e-9);
  /* beyond the largest: bandwidth bound; below the smallest: latency bound */
  cr_assert_float_eq(acl_land_time(L, 4, 4194304, 2, &RING_SIMPLE, 0.0), 4 * 48e-6, 1e-9);
  cr_assert_float_eq(acl_land_time(L, 4, 1024, 2, &RING_SIMPLE, 0.0), 12e-6, 1e-9);
  /* draws at 256 KiB come from the nearer size, scaled to the median */
  double pr[2];
  acl_land_draw(L, 4, 262144, 2, &RING_SIMPLE, 0.0, 3, pr);
  cr_assert((pr[1] > 20e-6 && pr[1] < 30e-6) || pr[1] > 1e-3, "%g", pr[1]);
}

Test(replay, setup_and_events)
{
  /* fitted: 2 ms per channel beyond those connected, Tree's first use 30 ms
   * (+ its channels beyond the default's 16); a protocol switch is free */
  cr_assert_float_eq(acl_land_connect_seconds(L, 4, 65536, 0.0, 1, 16, 24), 0.016, 1e-6);
  cr_assert_float_eq(acl_land_connect_seconds(L, 4, 65536, 0.0, 1, 24, 16), 0.0, 1e-12);
  cr_assert_float_eq(acl_land_connect_seconds(L, 4, 65536, 0.0, 0, 0, 16), 0.030, 1e-6);
  cr_assert_float_eq(acl_land_connect_seconds(L, 4, 65536, 0.0, 0, 0, 24), 0.046, 1e-6);
  cr_assert_float_eq(acl_land_event_seconds(L, 4, 65536), 3.5e-6, 1e-12);
  cr_assert_float_eq(acl_land_event_seconds(L, 4, 1 << 30), 1.0e-6, 1e-12);
}

Test(replay, bad_folder, .init = NULL, .fini = NULL)
{
  char err[256] = "";
  cr_assert_null(acl_land_create_traces("/nonexistent/traces", "procs", err, sizeof err));
  cr_assert(strstr(err, "/nonexistent/traces"), "%s", err);
}

/* Runs whose 64 KiB record has no "ran" (the probe saw no event there, as
 * at AllGather's first size on one GPU), each in its own noise: 12, 18 and
 * 24 us for NCCL's default, Ring/LL/auto and Ring/LL/32, which at 1 MiB all
 * ran Ring/LL with NCCL's own 16 channels; Ring/LL/8 ran 8 there (36 us). */
static void setup_noran(void)
{
  static const trace_spec_t runs[] = {
      {"default-rep0.jsonl", "default", "Ring", "LL", {0, 16}, 0, 1.0, true},
      {"ring-ll-auto-rep0.jsonl", "Ring/LL/auto", "Ring", "LL", {0, 16}, 0, 1.5, true},
      {"ring-ll-32-rep0.jsonl", "Ring/LL/32", "Ring", "LL", {0, 16}, 0, 2.0, true},
      {"ring-ll-8-rep0.jsonl", "Ring/LL/8", "Ring", "LL", {0, 8}, 0, 3.0, true},
  };
  make_folder(runs, sizeof runs / sizeof runs[0]);
}

/* They ran what NCCL runs for their labels: NCCL's default and own channel
 * count of the nearest size that recorded them, so the three runs that
 * differ only in channels NCCL cut away are one config, pooled, not three
 * whose noise would pass for a 2x spread. */
Test(replay_noran, runs_without_ran_pool_as_nccl_ran_them, .init = setup_noran, .fini = teardown)
{
  acl_candidate_t d, c32 = RING_LL, c8 = RING_LL;
  acl_land_nccl_default(L, 4, 65536, 2, &d);
  cr_assert(d.algo == 1 && d.proto == 0 && d.nchannels == 16, "%d %d %d", d.algo, d.proto,
            d.nchannels);
  cr_assert_eq(acl_land_exec_channels(L, 4, 65536, 1, 0, 32), 16);
  cr_assert_eq(acl_land_exec_channels(L, 4, 65536, 1, 0, 8), 8);
  c32.nchannels = 32;
  c8.nchannels = 8;
  double t_def = acl_land_time(L, 4, 65536, 2, &d, 0.0);
  cr_assert_float_eq(t_def, 18e-6, 1e-9, "the pooled median of 12, 18 and 24 us: %.2f us",
                     t_def * 1e6);
  cr_assert_float_eq(acl_land_time(L, 4, 65536, 2, &c32, 0.0), t_def, 1e-12);
  cr_assert_float_eq(acl_land_time(L, 4, 65536, 2, &c8, 0.0), 36e-6, 1e-9);
}

/* The landscapes recorded on one H200 (2026-12-01) and on one H100
 * (2026-12-06) with two ranks on the GPU (NCCL 2.30.7): each loads from
 * the shipped traces, in both launch models, as recorded traces, with
 * NCCL's 64 channels and the room NCCL left at 4 MiB (Ring/Simple with 32
 * channels against NCCL's own 64). */
Test(replay_1gpu, shipped_traces_load_as_recorded)
{
  const char *specs[] = {ACL_LAND_1GPU, ACL_LAND_1GPU ":single", ACL_LAND_1GPU_H100,
                         ACL_LAND_1GPU_H100 ":single"};
  for (int k = 0; k < 4; k++) {
    char err[512] = "";
    acl_landscape_t *l = acl_land_create_spec_traces(specs[k], err, sizeof err);
    cr_assert_not_null(l, "%s: %s", specs[k], err);
    cr_assert(strstr(acl_land_name(l), "1gpu") && !strstr(acl_land_name(l), "derived"), "%s",
              acl_land_name(l));
    cr_assert_geq(acl_land_traces_recorded(l), 12, "%d", acl_land_traces_recorded(l));
    cr_assert_eq(acl_land_traces_recorded(l), acl_land_traces(l));
    cr_assert_eq(acl_land_max_channels(l), 64);
    acl_candidate_t d, c32 = RING_SIMPLE;
    acl_land_nccl_default(l, 4, 4u << 20, 2, &d);
    cr_assert(d.algo == 1 && d.proto == 2 && d.nchannels == 64, "%d %d %d", d.algo, d.proto,
              d.nchannels);
    c32.nchannels = 32;
    double t_def = acl_land_time(l, 4, 4u << 20, 2, &d, 0.0);
    double t_32 = acl_land_time(l, 4, 4u << 20, 2, &c32, 0.0);
    cr_assert(t_32 < 0.7 * t_def, "4 MiB AllReduce: 32 channels %.1f us, NCCL's %.1f us",
              t_32 * 1e6, t_def * 1e6);
    cr_assert(acl_land_trace_covers(l, 4, 256.0 * 1048576, false));
    cr_assert_not(acl_land_trace_covers(l, 4, 1024.0 * 1048576, false), "1 GiB not recorded");
    cr_assert_not(acl_land_trace_covers(l, 4, 65536, true), "no GEMM regime recorded");
    acl_land_destroy(l);
  }
  char err[256] = "";
  cr_assert_null(acl_land_create_spec_traces(ACL_LAND_1GPU ":both", err, sizeof err));
  cr_assert(strstr(err, ":single"), "%s", err);
  cr_assert_null(acl_land_create_spec_traces(ACL_LAND_1GPU_H100 ":both", err, sizeof err));
}
