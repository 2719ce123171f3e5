/* Private to bench/compare.c (the jobs, running them as child processes)
 * and bench/compare_report.c (per-mode tables, the oracle, ratios, JSON). */
#ifndef ACL_BENCH_COMPARE_INT_H
#define ACL_BENCH_COMPARE_INT_H

#include "bench/bench.h"

#define ACL_BENCH_JOB_MAX_ENV (ACL_BENCH_MAX_MODE_ENV + 8)

typedef struct acl_bench_job {
  char name[64];
  int sweep;               /* 0: a --compare mode; 1: a sweep config; 2: an --advise variable */
  char var[48], value[24]; /* --advise: the variable(s) and value set */
  char mode[16];
  char algo[32], proto[16];
  int nch;
  char *env[ACL_BENCH_JOB_MAX_ENV];
  int nenv;
  int keep_autoccl;
  int skip;
  int runs;                /* repetitions run */
  int reps_max;            /* repetitions planned */
  double *t, *incl, *gemm; /* [rep][size] */
  int *st;
  long long *wrong;
  int child_failures;
  char err[320];
  double gemm_iso, gemm_run;
  int nccl_version; /* ncclGetVersion of its runs (0: none reported) */
  int gemm_n;
} acl_bench_job_t;

/* One --compare / --sweep invocation. */
typedef struct acl_bench_compare {
  acl_bench_cfg_t cfg; /* the command line's, with the default plugin path filled in */
  char exe[ACL_BENCH_PATH_MAX];
  char plugin_abs[ACL_BENCH_PATH_MAX], table_abs[ACL_BENCH_PATH_MAX];
  size_t sizes[ACL_BENCH_MAX_SIZES];
  int nsizes;
  size_t es;             /* element size */
  acl_bench_job_t *jobs; /* the modes (cfg.nmodes), then the sweep configs */
  int nj, maxjobs;
  char skipped_algos[256]; /* sweep algorithms left out (NCCL_NVLS_ENABLE=0) */
  int done_runs;
  double t_start;
} acl_bench_compare_t;

/* compare.c: a job's environment assignment VAR=VALUE (fmt with two %s),
 * replacing an earlier one of the same variable; its result arrays. 0 or -1. */
int acl_bench_job_setenv(acl_bench_job_t *j, const char *fmt, const char *a, const char *b);
int acl_bench_job_alloc(acl_bench_job_t *j, int reps, int nsizes);
/* compare_jobs.c: absolute plugin and table paths (0, or an exit code after
 * a message), then the jobs of the modes, the sweep and --advise (0, or -1
 * out of memory). */
int acl_bench_resolve_paths(acl_bench_compare_t *x);
int acl_bench_add_mode_jobs(acl_bench_compare_t *x);
int acl_bench_add_sweep_jobs(acl_bench_compare_t *x);
int acl_bench_add_advise_jobs(acl_bench_compare_t *x);

/* Prints the per-mode tables, the oracle, the ratios, the summary line and
 * (--json) the JSON line; returns rc, or the exit code the results call for
 * (wrong values, failed runs) when rc is ACL_BENCH_EXIT_OK. */
int acl_bench_compare_report(const acl_bench_compare_t *x, int rc);

/* bench/advise.c: the --advise report (gains and recommendations) of the
 * jobs compare.c ran (job 0 NCCL's defaults, then one per variable value). */
int acl_bench_advise_report(const acl_bench_compare_t *x, int rc);
/* compare_report.c: median time of size s over the job's runs (NaN: none) */
double acl_bench_job_time(const acl_bench_job_t *j, int s, int nsizes);

#endif
