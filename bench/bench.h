/* autoccl-bench — a CUDA/NCCL collective benchmark in the style of
 * nccl-tests, with optional concurrent cuBLAS GEMM interference and an
 * A/B comparison driver (NCCL default vs the autoccl tuner plugin vs an
 * oracle found by sweeping NCCL_ALGO/NCCL_PROTO/channels).
 *
 * This header is shared by the pure modules (args, dtype, stats, report,
 * compare) that need no CUDA header, and the CUDA modules (worker, gemm). */
#ifndef AUTOCCL_BENCH_H
#define AUTOCCL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_NAME "autoccl-bench"
#define BENCH_VERSION "0.1.0"

#define BENCH_MAX_SIZES 64
#define BENCH_MAX_MODES 8
#define BENCH_MAX_RANKS 64
#define BENCH_MAX_MODE_ENV 32
#define BENCH_PATH_MAX 4096

/* exit codes */
#define BENCH_EXIT_OK 0
#define BENCH_EXIT_RUNTIME 1 /* CUDA/NCCL failure, child failure */
#define BENCH_EXIT_USAGE 2   /* bad command line */
#define BENCH_EXIT_WRONG 3   /* -c 1 found wrong values */

enum bench_coll {
  COLL_ALL_REDUCE,
  COLL_ALL_GATHER,
  COLL_REDUCE_SCATTER,
  COLL_BROADCAST,
  COLL_REDUCE,
  COLL_COUNT
};

/* same order and values as ncclDataType_t (0..9) */
enum bench_dtype {
  DT_INT8,
  DT_UINT8,
  DT_INT32,
  DT_UINT32,
  DT_INT64,
  DT_UINT64,
  DT_HALF,
  DT_FLOAT,
  DT_DOUBLE,
  DT_BF16,
  DT_COUNT
};

/* same order and values as ncclRedOp_t (0..3) */
enum bench_op { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_COUNT };

struct mode_env {
  char mode[16];  /* "default", "autoccl", "table", or "*" for all */
  char assign[256]; /* VAR=VALUE */
};

struct bench_cfg {
  /* sizes, nccl-tests semantics: the larger buffer in bytes */
  size_t minbytes, maxbytes;
  double factor;
  int iters, warmup;
  bool iters_set, warmup_set;
  double warmup_s; /* --warmup-time: untimed calls per size before the timed ones */
  int check;
  enum bench_dtype dt;
  enum bench_op op;
  enum bench_coll coll;
  int root;
  int ngpus;
  bool procs; /* true: one process per GPU; false: one process, all GPUs */
  bool inplace;
  /* interference */
  bool gemm;
  double gemm_duty;
  int gemm_n;
  /* compare driver */
  int nmodes;
  char modes[BENCH_MAX_MODES][16];
  char plugin[BENCH_PATH_MAX];
  char table[BENCH_PATH_MAX];
  int reps;
  bool sweep;
  char sweep_algos[256];
  char sweep_protos[128];
  char sweep_channels[256];
  int sweep_warmup;
  int sweep_reps;
  int nmode_env;
  struct mode_env mode_env[BENCH_MAX_MODE_ENV];
  double child_timeout; /* seconds, per child run; 0 = none */
  /* output */
  bool json;
  bool quiet;
  /* internal */
  bool fake;           /* synthesize timings without a GPU (tests) */
  bool internal_child; /* machine-readable output for the compare driver */
  char label[64];      /* mode label shown in headers */
};

/* Result of one message size, aggregated over ranks (per iteration the
 * slowest rank's time) and iterations. */
struct size_result {
  size_t bytes; /* nccl-tests "size": the larger buffer */
  size_t count; /* elements in that buffer */
  int status;   /* 0 ok; otherwise the run failed at this size */
  double time_us;      /* median of the last `iters` iterations */
  double time_incl_us; /* mean over all warmup+iters iterations */
  double time_min_us;
  long long wrong;     /* wrong values (-c 1), summed over ranks */
  double gemm_tflops;  /* concurrent GEMM throughput during this size, <0 if none */
};

struct run_summary {
  int nsizes;
  struct size_result res[BENCH_MAX_SIZES];
  double gemm_iso_tflops; /* GEMM alone before the run (mean over GPUs) */
  double gemm_run_tflops; /* GEMM during the whole run (mean over GPUs) */
  double gemm_duty_seen;  /* busy fraction of the GEMM stream, measured */
  int nccl_version;
  char errmsg[512];
  int rc;
};

/* bounded string copy that always terminates dst */
static inline void str_copy(char *dst, size_t len, const char *src) {
  size_t n = 0;
  if (!len) return;
  while (n + 1 < len && src[n]) n++;
  for (size_t i = 0; i < n; i++) dst[i] = src[i];
  dst[n] = 0;
}

/* ---- args.c ---- */
void cfg_defaults(struct bench_cfg *c);
/* returns 0 ok, BENCH_EXIT_USAGE on error (message printed), -1 if --help/--version printed */
int cfg_parse(struct bench_cfg *c, int argc, char **argv);
int parse_size(const char *s, size_t *out);
int parse_coll(const char *s, enum bench_coll *out);
int parse_dtype(const char *s, enum bench_dtype *out);
int parse_op(const char *s, enum bench_op *out);
const char *coll_name(enum bench_coll c);
const char *dtype_name(enum bench_dtype d);
const char *op_name(enum bench_op o);
void print_help(FILE *f);
/* message sizes for nranks ranks; returns number of sizes */
int bench_sizes(const struct bench_cfg *c, int nranks, size_t *sizes, int max);
void format_size(size_t bytes, char *buf, size_t len);

/* ---- dtype.c: host-side patterns and checking ---- */
size_t dtype_size(enum bench_dtype d);
/* value of element i of rank r's input at iteration it */
int64_t pattern_value(const struct bench_cfg *c, int nranks, int r, size_t i, int it);
/* fill n elements of rank r's input at iteration it */
void pattern_fill(const struct bench_cfg *c, int nranks, int r, int it, void *buf, size_t n);
/* expected output element j on rank `rank` */
int64_t expected_value(const struct bench_cfg *c, int nranks, int rank, size_t count, size_t j, int it);
/* compare n output elements; returns wrong count; prints up to `maxprint` mismatches */
long long check_output(const struct bench_cfg *c, int nranks, int rank, size_t count, int it,
                       const void *out, size_t n, int *maxprint);
/* store an exact integer value as datatype d (integers wrap) */
void dtype_store(enum bench_dtype d, void *buf, size_t idx, int64_t v);
double dtype_load(enum bench_dtype d, const void *buf, size_t idx);
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t b);

/* ---- stats / report (report.c) ---- */
double median_of(double *v, int n); /* sorts v */
double bus_factor(enum bench_coll c, int nranks);
void print_table_header(FILE *f, const struct bench_cfg *c, int nranks);
void print_table_row(FILE *f, const struct bench_cfg *c, int nranks, const struct size_result *r);
void print_run_footer(FILE *f, const struct bench_cfg *c, int nranks, const struct run_summary *s);
void print_run_json(FILE *f, const struct bench_cfg *c, int nranks, const struct run_summary *s);
void json_num(FILE *f, double v); /* finite number or null */
void json_str(FILE *f, const char *s);
void print_child_lines(FILE *f, const struct run_summary *s);
void progress(const struct bench_cfg *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void progress_done(const struct bench_cfg *c);

/* ---- worker.c (CUDA + NCCL) ---- */
int worker_main(const struct bench_cfg *c);

/* ---- fake.c: synthetic timings for tests without a GPU (--fake) ----
 * per-iteration times (us) of one rank for one size under the NCCL_* and
 * NCCL_TUNER_PLUGIN variables of the environment; *status = 1 when the
 * environment asks for an algorithm the collective does not support. */
void fake_times(const struct bench_cfg *c, int nranks, size_t bytes, int T, double *out, int *status);

/* ---- compare.c ---- */
int compare_main(const struct bench_cfg *c);
/* default plugin path: <dir of exe>/../libnccl-tuner-autoccl.so, else <dir of exe>/ */
int default_plugin_path(char *buf, size_t len);

#endif
