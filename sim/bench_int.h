/* Private to the tuner benchmark (sim/bench.c, sim/bench_report.c). */
#ifndef ACL_SIM_BENCH_INT_H
#define ACL_SIM_BENCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

/* The targets, written here only: the benchmarks check them and print them
 * in their JSON ("targets"), which the scripts and tests read
 * (tests/sim/replay_bench.py, scripts/gen-figures.py). Both benchmarks:
 * final/baseline min, final/oracle median and p5. */
#define ACL_BENCH_T_FOB_MIN 0.99
#define ACL_BENCH_T_FOO_MEDIAN 0.98
#define ACL_BENCH_T_FOO_P5 0.95
/* The tunerbench: unconverged runs, mean exploration overhead. Calls to
 * converge are no target: exploring is paid from a share of the
 * workload's time (AUTOCCL_EXPLORE_BUDGET, 3 %), so a 10 us collective
 * takes thousands of calls and a 3 ms one a hundred; every run must
 * converge within its run (--run-seconds of collective time) instead. */
#define ACL_BENCH_T_NOT_CONVERGED 0.01
#define ACL_BENCH_T_OVERHEAD 0.03
/* --nccl 2.30: with the chunk axis, on chunk-sensitive synthetic
 * landscapes the median final/oracle (oracle over chunk sizes too); on
 * chunk-insensitive ones the mean exploration overhead grows by at most
 * this much of the workload's time over the same runs with the axis held. */
#define ACL_BENCH_T_CHUNK_FOO_MEDIAN 0.98
#define ACL_BENCH_T_CHUNK_OVERHEAD_GROWTH 0.005
/* The replay (docs/trace.md "Targets on replay"): also the whole run,
 * exploration included, over a long and a short run. */
#define ACL_BENCH_T_INCL_MIN 0.97
#define ACL_BENCH_T_SHORT_MIN 0.97

/* One tuning run: one workload on one landscape. */
typedef struct acl_bench_run {
  uint8_t coll;
  uint8_t synthetic;
  uint8_t converged;
  uint8_t validating; /* background validation still open at the end */
  uint8_t nranks;
  uint64_t nbytes;
  double interference;
  double final_over_oracle;   /* bandwidth ratio, <= 1 */
  double final_over_baseline; /* noise-free, at the run's interference */
  double oracle_over_baseline;
  double overhead; /* extra time over the first calls / final's */
  uint32_t calls_to_converge;
  uint32_t cands_evaluated;
  uint32_t retunes;
  uint32_t calls_to_final;   /* call at which the final decision was adopted */
  uint32_t calls_to_verdict; /* call at which background validation ended, 0 = open */
  double prov_over_baseline; /* first (provisional) decision, noise-free */
  uint64_t calls;            /* calls the run lasted */
  acl_candidate_t final, oracle, deflt;
  /* --nccl 2.30: the same run with the chunk axis held at NCCL's own */
  double held_final_over_oracle, held_overhead;
} acl_bench_run_t;

typedef struct acl_bench_opts {
  bool json;
  int landscapes; /* synthetic landscapes */
  uint64_t seed;
  int samples;           /* samples_per_cand */
  double noise;          /* relative sd of the multiplicative noise */
  int calls;             /* at least this many calls per run */
  double run_seconds;    /* ... and this much collective time */
  int h200_reps;         /* noise seeds per H200 workload */
  int worst;             /* list this many worst runs (table mode) */
  const char *csv;       /* per-run rows written here (analysis), NULL = none */
  bool no_hint;          /* do not tell the search NCCL's channel count */
  const char *landscape; /* "h200-traces[:single]": the replay benchmark */
  /* replay: each rank's samples reach consensus in batches of this many
   * (CUPTI's buffers, tuner/drive); -1 = none (0) */
  int sample_buffer;
  int sample_lag; /* replay: calls every sample arrives after its call (-1: the landscape's) */
  /* replay of the 1gpu traces: CUPTI's windows, ON ms every PERIOD ms (0:
   * none, the default) */
  unsigned window_on_ms, window_period_ms;
  /* --nccl 2.30: the search has its chunk axis (tuner v6) and synthetic
   * landscapes a chunk model of amplitude chunk_amp (sim/landscape_chunk.c);
   * every synthetic run is also played with the axis held, side by side. */
  bool nccl230;
  double chunk_amp;
} acl_bench_opts_t;

/* The benchmark on replayed traces (sim/bench_replay.c); exit status as
 * acl_sim_bench_main's. */
int acl_sim_bench_replay(const acl_bench_opts_t *o);

typedef struct acl_bench_summary {
  size_t n;
  double foo_median, foo_p5, foo_min; /* final / oracle */
  double calls_median, calls_p95, calls_max;
  double final_calls_median, final_calls_p95; /* calls until the final decision */
  size_t validating;                          /* runs whose validation is still open */
  double overhead_mean, overhead_median, overhead_p95;
  double fob_min, fob_median;           /* final / baseline */
  double oob_median;                    /* oracle / baseline: headroom */
  size_t not_converged, below_baseline; /* fob < 0.99 */
  double retunes_mean;
} acl_bench_summary_t;

/* The benchmarks' random streams (bench.c): a 64-bit finaliser and a
 * uniform draw in [0, 1) advancing *s. */
uint64_t acl_bench_mix(uint64_t x);
double acl_bench_unif(uint64_t *s);

void acl_bench_summarize(const acl_bench_run_t *runs, size_t n, acl_bench_summary_t *out);
/* Prints the human tables or the JSON line; returns true when targets are met. */
bool acl_bench_print(const acl_bench_opts_t *o, const acl_bench_run_t *h200, size_t nh,
                     const acl_bench_run_t *syn, size_t ns, double seconds);

#endif
