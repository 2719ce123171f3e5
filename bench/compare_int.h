/* Private to bench/compare.c (the jobs, running them as child processes)
 * and bench/compare_report.c (per-mode tables, the oracle, ratios, JSON). */
#ifndef AUTOCCL_BENCH_COMPARE_INT_H
#define AUTOCCL_BENCH_COMPARE_INT_H

#include "bench.h"

#define JOB_MAX_ENV (BENCH_MAX_MODE_ENV + 8)

struct job {
  char name[64];
  int sweep; /* 0: a --compare mode; 1: a sweep config */
  char mode[16];
  char algo[32], proto[16];
  int nch;
  char *env[JOB_MAX_ENV];
  int nenv;
  int keep_autoccl;
  int skip;
  int runs;      /* repetitions run */
  int reps_max;  /* repetitions planned */
  double *t, *incl, *gemm; /* [rep][size] */
  int *st;
  long long *wrong;
  int child_failures;
  char err[320];
  double gemm_iso, gemm_run;
  int gemm_n;
};

/* One --compare / --sweep invocation. */
struct compare {
  struct bench_cfg cfg; /* the command line's, with the default plugin path filled in */
  char exe[BENCH_PATH_MAX];
  char plugin_abs[BENCH_PATH_MAX], table_abs[BENCH_PATH_MAX];
  size_t sizes[BENCH_MAX_SIZES];
  int nsizes;
  size_t es; /* element size */
  struct job *jobs; /* the modes (cfg.nmodes), then the sweep configs */
  int nj, maxjobs;
  char skipped_algos[256]; /* sweep algorithms left out (NCCL_NVLS_ENABLE=0) */
  int done_runs;
  double t_start;
};

double compare_wall_s(void);
/* Prints the per-mode tables, the oracle, the ratios, the summary line and
 * (--json) the JSON line; returns rc, or the exit code the results call for
 * (wrong values, failed runs) when rc is BENCH_EXIT_OK. */
int compare_report(const struct compare *x, int rc);

#endif
