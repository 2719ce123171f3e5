/* autoccl-bench — a CUDA/NCCL collective benchmark in the style of
 * nccl-tests, with optional concurrent cuBLAS GEMM interference and an
 * A/B comparison driver (NCCL default vs the autoccl tuner plugin vs an
 * oracle found by sweeping NCCL_ALGO/NCCL_PROTO/channels).
 *
 * This header is shared by the pure modules (args, dtype, stats, report,
 * compare) that need no CUDA header, and the CUDA modules (worker, gemm). */
#ifndef ACL_BENCH_BENCH_H
#define ACL_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ACL_BENCH_NAME "autoccl-bench"
#define ACL_BENCH_VERSION "0.1.0"

#define ACL_BENCH_MAX_SIZES 64
#define ACL_BENCH_MAX_MODES 8
#define ACL_BENCH_MAX_RANKS 64
#define ACL_BENCH_MAX_MODE_ENV 32
#define ACL_BENCH_PATH_MAX 4096
/* The ceiling mode's channels when --ceiling is not given, and the channels
 * NCCL 2.28.3 builds as it ships on 2x H200 (docs/channels.md). */
#define ACL_BENCH_CEILING_DEFAULT 32
#define ACL_BENCH_STOCK_CH_DEFAULT 24

/* exit codes */
#define ACL_BENCH_EXIT_OK 0
#define ACL_BENCH_EXIT_RUNTIME 1 /* CUDA/NCCL failure, child failure */
#define ACL_BENCH_EXIT_USAGE 2   /* bad command line */
#define ACL_BENCH_EXIT_WRONG 3   /* -c 1 found wrong values */

/* NCCL runs several ranks on one GPU from 2.30.3 on (ncclGetVersion's code),
 * with NCCL_MULTI_RANK_GPU_ENABLE=1. */
#define ACL_BENCH_NCCL_MULTI_RANK 23003
#define ACL_BENCH_MPS_DETECT 0
#define ACL_BENCH_MPS_START 1

typedef enum acl_bench_coll {
  ACL_BENCH_COLL_ALL_REDUCE,
  ACL_BENCH_COLL_ALL_GATHER,
  ACL_BENCH_COLL_REDUCE_SCATTER,
  ACL_BENCH_COLL_BROADCAST,
  ACL_BENCH_COLL_REDUCE,
  ACL_BENCH_COLL_COUNT
} acl_bench_coll_t;

/* same order and values as ncclDataType_t (0..9) */
typedef enum acl_bench_dtype {
  ACL_BENCH_DT_INT8,
  ACL_BENCH_DT_UINT8,
  ACL_BENCH_DT_INT32,
  ACL_BENCH_DT_UINT32,
  ACL_BENCH_DT_INT64,
  ACL_BENCH_DT_UINT64,
  ACL_BENCH_DT_HALF,
  ACL_BENCH_DT_FLOAT,
  ACL_BENCH_DT_DOUBLE,
  ACL_BENCH_DT_BF16,
  ACL_BENCH_DT_COUNT
} acl_bench_dtype_t;

/* same order and values as ncclRedOp_t (0..3) */
typedef enum acl_bench_op {
  ACL_BENCH_OP_SUM,
  ACL_BENCH_OP_PROD,
  ACL_BENCH_OP_MAX,
  ACL_BENCH_OP_MIN,
  ACL_BENCH_OP_COUNT
} acl_bench_op_t;

typedef struct acl_bench_mode_env {
  char mode[16];    /* "default", "autoccl", "table", or "*" for all */
  char assign[256]; /* VAR=VALUE */
} acl_bench_mode_env_t;

typedef struct acl_bench_cfg {
  /* sizes, nccl-tests semantics: the larger buffer in bytes */
  size_t minbytes, maxbytes;
  double factor;
  int iters, warmup;
  bool iters_set, warmup_set;
  double warmup_s; /* --warmup-time: untimed calls per size before the timed ones */
  int check;
  acl_bench_dtype_t dt;
  acl_bench_op_t op;
  acl_bench_coll_t coll;
  int root;
  int ngpus;         /* -g: ranks */
  int ranks_per_gpu; /* --ranks-per-gpu K: rank r runs on device r / K */
  bool procs; /* true: one process per rank; false: one process, all ranks */
  int mps;    /* --mps: ACL_BENCH_MPS_DETECT or ACL_BENCH_MPS_START */
  int fake_nccl_version; /* --fake-nccl-version (tests): the NCCL --fake reports */
  bool inplace;
  /* interference */
  bool gemm;
  double gemm_duty;
  int gemm_n;
  /* compare driver */
  int nmodes;
  char modes[ACL_BENCH_MAX_MODES][16];
  char plugin[ACL_BENCH_PATH_MAX];
  char table[ACL_BENCH_PATH_MAX];
  int reps;
  bool sweep;
  char sweep_algos[256];
  char sweep_protos[128];
  char sweep_channels[256];
  int sweep_warmup;
  int sweep_reps;
  int nmode_env;
  acl_bench_mode_env_t mode_env[ACL_BENCH_MAX_MODE_ENV];
  int ceiling;          /* --ceiling N: NCCL_MIN/MAX_NCHANNELS of the ceiling mode, and of
                       * the autoccl mode when given; 0 = not given */
  int stock_channels;   /* --stock-channels S: what NCCL builds as it ships (autoccl's
                       * AUTOCCL_STOCK_CHANNELS under --ceiling) */
  bool advise;          /* --advise: start-up variables, one at a time against NCCL's defaults */
  double child_timeout; /* seconds, per child run; 0 = none */
  /* recording (docs/trace.md): per run, every rank's per-iteration times */
  char trace_dir[ACL_BENCH_PATH_MAX];  /* --trace DIR */
  char trace_file[ACL_BENCH_PATH_MAX]; /* --trace-file FILE (a compare driver's child) */
  /* output */
  bool json;
  bool quiet;
  /* internal */
  bool fake;           /* synthesize timings without a GPU (tests) */
  bool internal_child; /* machine-readable output for the compare driver */
  char label[64];      /* mode label shown in headers */
} acl_bench_cfg_t;

/* Result of one message size, aggregated over ranks (per iteration the
 * slowest rank's time) and iterations. */
typedef struct acl_bench_size_result {
  size_t bytes;        /* nccl-tests "size": the larger buffer */
  size_t count;        /* elements in that buffer */
  int status;          /* 0 ok; otherwise the run failed at this size */
  double time_us;      /* median of the last `iters` iterations */
  double time_incl_us; /* mean over all warmup+iters iterations */
  double time_min_us;
  long long wrong;    /* wrong values (-c 1), summed over ranks */
  double gemm_tflops; /* concurrent GEMM throughput during this size, <0 if none */
} acl_bench_size_result_t;

typedef struct acl_bench_run_summary {
  int nsizes;
  acl_bench_size_result_t res[ACL_BENCH_MAX_SIZES];
  double gemm_iso_tflops; /* GEMM alone before the run (mean over GPUs) */
  double gemm_run_tflops; /* GEMM during the whole run (mean over GPUs) */
  double gemm_duty_seen;  /* busy fraction of the GEMM stream, measured */
  int nccl_version;
  char errmsg[512];
  int rc;
} acl_bench_run_summary_t;

/* bounded string copy that always terminates dst */
static inline void acl_bench_str_copy(char *dst, size_t len, const char *src)
{
  size_t n = 0;
  if (!len)
    return;
  while (n + 1 < len && src[n])
    n++;
  for (size_t i = 0; i < n; i++)
    dst[i] = src[i];
  dst[n] = 0;
}

/* ---- args.c ---- */
void acl_bench_cfg_defaults(acl_bench_cfg_t *c);
/* returns 0 ok, ACL_BENCH_EXIT_USAGE on error (message printed), -1 if --help/--version printed */
int acl_bench_cfg_parse(acl_bench_cfg_t *c, int argc, char **argv);
int acl_bench_parse_size(const char *s, size_t *out);
int acl_bench_parse_coll(const char *s, acl_bench_coll_t *out);
int acl_bench_parse_dtype(const char *s, acl_bench_dtype_t *out);
int acl_bench_parse_op(const char *s, acl_bench_op_t *out);
const char *acl_bench_coll_name(acl_bench_coll_t c);
const char *acl_bench_dtype_name(acl_bench_dtype_t d);
const char *acl_bench_op_name(acl_bench_op_t o);
void acl_bench_print_help(FILE *f);
/* message sizes for nranks ranks; returns number of sizes */
int acl_bench_sizes(const acl_bench_cfg_t *c, int nranks, size_t *sizes, int max);
void acl_bench_format_size(size_t bytes, char *buf, size_t len);

/* ---- dtype.c: host-side patterns and checking ---- */
size_t acl_bench_dtype_size(acl_bench_dtype_t d);
/* value of element i of rank r's input at iteration it */
int64_t acl_bench_pattern_value(const acl_bench_cfg_t *c, int nranks, int r, size_t i, int it);
/* fill n elements of rank r's input at iteration it */
void acl_bench_pattern_fill(const acl_bench_cfg_t *c, int nranks, int r, int it, void *buf,
                            size_t n);
/* expected output element j on rank `rank` */
int64_t acl_bench_expected_value(const acl_bench_cfg_t *c, int nranks, int rank, size_t count,
                                 size_t j, int it);
/* compare n output elements; returns wrong count; prints up to `maxprint` mismatches */
long long acl_bench_check_output(const acl_bench_cfg_t *c, int nranks, int rank, size_t count,
                                 int it, const void *out, size_t n, int *maxprint);
/* store an exact integer value as datatype d (integers wrap) */
void acl_bench_dtype_store(acl_bench_dtype_t d, void *buf, size_t idx, int64_t v);
double acl_bench_dtype_load(acl_bench_dtype_t d, const void *buf, size_t idx);
uint16_t acl_bench_float_to_half(float f);
float acl_bench_half_to_float(uint16_t h);
uint16_t acl_bench_float_to_bf16(float f);
float acl_bench_bf16_to_float(uint16_t b);

/* ---- stats / report (report.c) ---- */
double acl_bench_median_of(double *v, int n); /* sorts v */
double acl_bench_bus_factor(acl_bench_coll_t c, int nranks);
void acl_bench_print_table_header(FILE *f, const acl_bench_cfg_t *c, int nranks);
void acl_bench_print_table_row(FILE *f, const acl_bench_cfg_t *c, int nranks,
                               const acl_bench_size_result_t *r);
void acl_bench_print_run_footer(FILE *f, const acl_bench_cfg_t *c, int nranks,
                                const acl_bench_run_summary_t *s);
void acl_bench_print_run_json(FILE *f, const acl_bench_cfg_t *c, int nranks,
                              const acl_bench_run_summary_t *s);
void acl_bench_json_num(FILE *f, double v); /* finite number or null */
void acl_bench_json_str(FILE *f, const char *s);
void acl_bench_print_child_lines(FILE *f, const acl_bench_run_summary_t *s);
/* "2.28.3" from ncclGetVersion's code ("" when v <= 0) */
void acl_bench_nccl_version_str(int v, char *buf, size_t len);
void acl_bench_progress(const acl_bench_cfg_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void acl_bench_progress_done(const acl_bench_cfg_t *c);

/* ---- testbed.c: several ranks per GPU, MPS, the environment record ---- */
/* GPUs the ranks need: ceil(ngpus / ranks_per_gpu). */
int acl_bench_gpus_needed(const acl_bench_cfg_t *c);
/* The device of rank r (r / ranks_per_gpu). */
int acl_bench_rank_device(const acl_bench_cfg_t *c, int rank);
/* Whether an MPS control daemon answers for this environment's pipe
 * directory (CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps). */
bool acl_bench_mps_running(void);
/* "on", "off", or "started" (this process started it), for the records. */
const char *acl_bench_mps_state(void);
/* --mps start: start the daemon unless one runs (0, or an exit code after a
 * message); stop: quit the daemon this process started (no-op otherwise). */
int acl_bench_mps_start(void);
void acl_bench_mps_stop(void);
/* Refuses what cannot run (an NCCL too old for K > 1: an exit code after a
 * message) and warns loudly about what runs but measures the wrong thing
 * (one process per rank sharing a GPU without MPS). nccl_version 0: unknown. */
int acl_bench_testbed_check(const acl_bench_cfg_t *c, int nccl_version);
/* ,"ranks_per_gpu":K,"mps":"..","cpus":"..","env":{..}: the NCCL_* and AUTOCCL_*
 * variables of this process's environment, for every JSON record. */
void acl_bench_json_testbed(FILE *f, const acl_bench_cfg_t *c);

/* ---- worker.c (CUDA + NCCL) ---- */
int acl_bench_worker_main(const acl_bench_cfg_t *c);
/* ncclGetVersion's code (--fake: --fake-nccl-version); 0 unknown. */
int acl_bench_nccl_version(const acl_bench_cfg_t *c);

/* ---- fake.c: synthetic timings for tests without a GPU (--fake) ----
 * per-iteration times (us) of one rank for one size under the NCCL_* and
 * NCCL_TUNER_PLUGIN variables of the environment; *status = 1 when the
 * environment asks for an algorithm the collective does not support. */
void acl_bench_fake_times(const acl_bench_cfg_t *c, int nranks, size_t bytes, int T, double *out,
                          int *status);

/* ---- trace.c: bench traces (docs/trace.md, "autoccl-bench-trace") ----
 * times_us[r * nsizes * T + s * T + i]; gzip when built with zlib and the
 * name ends in .gz. 0 ok. */
typedef struct acl_bench_trace_size {
  size_t bytes, count;
  int status;
  double wall_s;      /* host time of all T iterations of this size (rank 0) */
  double gemm_tflops; /* <0 none */
  char ran[160];      /* JSON array of what NCCL ran per rank (probe), or "null" */
} acl_bench_trace_size_t;
int acl_bench_trace_write(const char *path, const acl_bench_cfg_t *c, int nranks, int nsizes, int T,
                          const acl_bench_trace_size_t *sz, const double *times_us,
                          int nccl_version);
/* mkdir -p; 0 ok, -1 with errno. */
int acl_bench_mkdirs(const char *path);
/* The probe plugin beside the executable (libautoccl-bench-probe.so); 0 found. */
int acl_bench_probe_path(char *buf, size_t len);
/* Reads the probe's lines for (coll, bytes) into a JSON array in out. */
void acl_bench_probe_ran(const char *probe_file, const acl_bench_cfg_t *c, size_t bytes, int nranks,
                         char *out, size_t len);

/* ---- compare.c ---- */
int acl_bench_compare_main(const acl_bench_cfg_t *c);
/* default plugin path: <dir of exe>/../libnccl-tuner-autoccl.so, else <dir of exe>/ */
int acl_bench_default_plugin_path(char *buf, size_t len);

#endif
