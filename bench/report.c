/* Statistics, nccl-tests-like tables, JSON and the progress line. No CUDA. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double acl_bench_median_of(double *v, int n)
{
  if (n <= 0)
    return NAN;
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double acl_bench_bus_factor(acl_bench_coll_t c, int n)
{
  switch (c) {
  case ACL_BENCH_COLL_ALL_REDUCE:
    return n > 0 ? 2.0 * (n - 1) / n : 0;
  case ACL_BENCH_COLL_ALL_GATHER:
  case ACL_BENCH_COLL_REDUCE_SCATTER:
    return n > 0 ? (double)(n - 1) / n : 0;
  default:
    return 1.0;
  }
}

static double algbw(size_t bytes, double us) { return us > 0 ? (double)bytes / 1e3 / us : NAN; }

void acl_bench_json_num(FILE *f, double v)
{
  if (isfinite(v))
    fprintf(f, "%.6g", v);
  else
    fputs("null", f);
}

void acl_bench_json_str(FILE *f, const char *s)
{
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch == '\n')
      fputs("\\n", f);
    else if (ch == '\t')
      fputs("\\t", f);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

void acl_bench_print_table_header(FILE *f, const acl_bench_cfg_t *c, int nranks)
{
  fprintf(f,
          "# " ACL_BENCH_NAME " " ACL_BENCH_VERSION
          ": %s %s %s, %d rank%s (%s), %s, iters %d, warm-up %d, check %d\n",
          acl_bench_coll_name(c->coll), acl_bench_dtype_name(c->dt), acl_bench_op_name(c->op),
          nranks, nranks == 1 ? "" : "s",
          c->procs ? "one process per GPU" : "one process, all GPUs",
          c->inplace ? "in-place" : "out-of-place", c->iters, c->warmup, c->check);
  if (c->gemm)
    fprintf(f,
            "# interference: cuBLAS bf16 GEMM %dx%dx%d on another stream of every GPU, duty %.2f\n",
            c->gemm_n, c->gemm_n, c->gemm_n, c->gemm_duty);
  fprintf(f,
          "# time: median of the last %d iterations (slowest rank per iteration); time_incl: mean "
          "of all %d from the first call\n",
          c->iters, c->iters + c->warmup);
  fprintf(f, "#\n");
  fprintf(f, "# %12s %12s %8s %6s %5s %10s %8s %8s %7s %10s%s\n", "size", "count", "type", "redop",
          "root", "time", "algbw", "busbw", "#wrong", "time_incl", c->gemm ? "   gemm" : "");
  fprintf(f, "# %12s %12s %8s %6s %5s %10s %8s %8s %7s %10s%s\n", "(B)", "(elements)", "", "", "",
          "(us)", "(GB/s)", "(GB/s)", "", "(us)", c->gemm ? " TFLOP/s" : "");
  fflush(f);
}

void acl_bench_print_table_row(FILE *f, const acl_bench_cfg_t *c, int nranks,
                               const acl_bench_size_result_t *r)
{
  int root =
      (c->coll == ACL_BENCH_COLL_BROADCAST || c->coll == ACL_BENCH_COLL_REDUCE) ? c->root : -1;
  const char *op = (c->coll == ACL_BENCH_COLL_ALL_GATHER || c->coll == ACL_BENCH_COLL_BROADCAST)
                       ? "none"
                       : acl_bench_op_name(c->op);
  if (r->status != 0) {
    fprintf(f, "  %12zu %12zu %8s %6s %5d %10s %8s %8s %7s %10s\n", r->bytes, r->count,
            acl_bench_dtype_name(c->dt), op, root, "failed", "-", "-", "-", "-");
  } else {
    double ab = algbw(r->bytes, r->time_us);
    char wrong[32];
    if (c->check)
      snprintf(wrong, sizeof(wrong), "%lld", r->wrong);
    else
      snprintf(wrong, sizeof(wrong), "N/A");
    fprintf(f, "  %12zu %12zu %8s %6s %5d %10.2f %8.2f %8.2f %7s %10.2f", r->bytes, r->count,
            acl_bench_dtype_name(c->dt), op, root, r->time_us, ab,
            ab * acl_bench_bus_factor(c->coll, nranks), wrong, r->time_incl_us);
    if (c->gemm) {
      if (r->gemm_tflops >= 0)
        fprintf(f, " %7.1f", r->gemm_tflops);
      else
        fprintf(f, " %7s", "-");
    }
    fputc('\n', f);
  }
  fflush(f);
}

static long long total_wrong(const acl_bench_run_summary_t *s)
{
  long long w = 0;
  for (int i = 0; i < s->nsizes; i++)
    w += s->res[i].wrong;
  return w;
}

static double avg_busbw(const acl_bench_cfg_t *c, int nranks, const acl_bench_run_summary_t *s)
{
  double sum = 0;
  int n = 0;
  for (int i = 0; i < s->nsizes; i++) {
    if (s->res[i].status)
      continue;
    sum += algbw(s->res[i].bytes, s->res[i].time_us) * acl_bench_bus_factor(c->coll, nranks);
    n++;
  }
  return n ? sum / n : NAN;
}

void acl_bench_print_run_footer(FILE *f, const acl_bench_cfg_t *c, int nranks,
                                const acl_bench_run_summary_t *s)
{
  long long w = total_wrong(s);
  if (c->check)
    fprintf(f, "# Wrong values: %lld %s\n", w, w ? "FAILED" : "OK");
  else
    fprintf(f, "# Wrong values: not checked (-c 0)\n");
  double ab = avg_busbw(c, nranks, s);
  if (isfinite(ab))
    fprintf(f, "# Avg bus bandwidth    : %.3f GB/s\n", ab);
  else
    fprintf(f, "# Avg bus bandwidth    : n/a\n");
  if (c->gemm)
    fprintf(f,
            "# GEMM: %.1f TFLOP/s alone before the run, %.1f TFLOP/s during the run (stream busy "
            "%.0f%% of the time)\n",
            s->gemm_iso_tflops, s->gemm_run_tflops, 100.0 * s->gemm_duty_seen);
  if (s->nccl_version)
    fprintf(f, "# NCCL version %d\n", s->nccl_version);
  if (s->errmsg[0])
    fprintf(f, "# error: %s\n", s->errmsg);
  fflush(f);
}

void acl_bench_print_run_json(FILE *f, const acl_bench_cfg_t *c, int nranks,
                              const acl_bench_run_summary_t *s)
{
  fprintf(f, "{\"bench\":\"" ACL_BENCH_NAME "\",\"version\":\"" ACL_BENCH_VERSION
             "\",\"kind\":\"run\",\"label\":");
  acl_bench_json_str(f, c->label);
  fprintf(
      f,
      ",\"coll\":\"%s\",\"dtype\":\"%s\",\"op\":\"%s\",\"root\":%d,\"nranks\":%d,\"launch\":\"%s\","
      "\"inplace\":%s,\"iters\":%d,\"warmup\":%d,\"warmup_s\":%.17g,\"check\":%d,"
      "\"nccl_version\":%d",
      acl_bench_coll_name(c->coll), acl_bench_dtype_name(c->dt), acl_bench_op_name(c->op), c->root,
      nranks, c->procs ? "procs" : "single", c->inplace ? "true" : "false", c->iters, c->warmup,
      c->warmup_s, c->check, s->nccl_version);
  fprintf(f, ",\"reps\":1");
  acl_bench_json_testbed(f, c);
  fprintf(f, ",\"interference\":");
  if (c->gemm) {
    fprintf(f, "{\"kind\":\"gemm\",\"duty\":");
    acl_bench_json_num(f, c->gemm_duty);
    fprintf(f, ",\"n\":%d,\"iso_tflops\":", c->gemm_n);
    acl_bench_json_num(f, s->gemm_iso_tflops);
    fprintf(f, ",\"run_tflops\":");
    acl_bench_json_num(f, s->gemm_run_tflops);
    fprintf(f, ",\"duty_seen\":");
    acl_bench_json_num(f, s->gemm_duty_seen);
    fputc('}', f);
  } else {
    fputs("null", f);
  }
  fprintf(f, ",\"results\":[");
  for (int i = 0; i < s->nsizes; i++) {
    const acl_bench_size_result_t *r = &s->res[i];
    double ab = r->status ? NAN : algbw(r->bytes, r->time_us);
    fprintf(f, "%s{\"size\":%zu,\"count\":%zu,\"status\":\"%s\",\"time_us\":", i ? "," : "",
            r->bytes, r->count, r->status ? "failed" : "ok");
    acl_bench_json_num(f, r->status ? NAN : r->time_us);
    fprintf(f, ",\"time_incl_us\":");
    acl_bench_json_num(f, r->status ? NAN : r->time_incl_us);
    fprintf(f, ",\"time_min_us\":");
    acl_bench_json_num(f, r->status ? NAN : r->time_min_us);
    fprintf(f, ",\"algbw_gbs\":");
    acl_bench_json_num(f, ab);
    fprintf(f, ",\"busbw_gbs\":");
    acl_bench_json_num(f, ab * acl_bench_bus_factor(c->coll, nranks));
    fprintf(f, ",\"wrong\":%lld,\"gemm_tflops\":", r->wrong);
    acl_bench_json_num(f, r->gemm_tflops >= 0 ? r->gemm_tflops : NAN);
    fputc('}', f);
  }
  fprintf(f, "],\"wrong\":%lld,\"avg_busbw_gbs\":", total_wrong(s));
  acl_bench_json_num(f, avg_busbw(c, nranks, s));
  fprintf(f, ",\"error\":");
  if (s->errmsg[0])
    acl_bench_json_str(f, s->errmsg);
  else
    fputs("null", f);
  fprintf(f, ",\"exit\":%d}\n", s->rc);
  fflush(f);
}

/* "2.28.3" from ncclGetVersion's code (MAJOR*10000+MINOR*100+PATCH since
 * 2.9, MAJOR*1000+MINOR*100+PATCH before); empty when unknown. */
void acl_bench_nccl_version_str(int v, char *buf, size_t len)
{
  if (v <= 0)
    snprintf(buf, len, "%s", "");
  else if (v >= 10000)
    snprintf(buf, len, "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
  else
    snprintf(buf, len, "%d.%d.%d", v / 1000, v % 1000 / 100, v % 100);
}

/* Machine-readable lines for the compare driver (--internal-child). */
void acl_bench_print_child_lines(FILE *f, const acl_bench_run_summary_t *s)
{
  for (int i = 0; i < s->nsizes; i++) {
    const acl_bench_size_result_t *r = &s->res[i];
    fprintf(f, "#ACB-SIZE %d %zu %zu %d %.6f %.6f %.6f %lld %.6f\n", i, r->bytes, r->count,
            r->status, isfinite(r->time_us) ? r->time_us : -1.0,
            isfinite(r->time_incl_us) ? r->time_incl_us : -1.0,
            isfinite(r->time_min_us) ? r->time_min_us : -1.0, r->wrong, r->gemm_tflops);
  }
  fprintf(f, "#ACB-RUN %d %.6f %.6f %.6f %d\n", s->rc, s->gemm_iso_tflops, s->gemm_run_tflops,
          s->gemm_duty_seen, s->nccl_version);
  if (s->errmsg[0])
    fprintf(f, "#ACB-ERR %s\n", s->errmsg);
  fflush(f);
}

static int progress_active;

void acl_bench_progress(const acl_bench_cfg_t *c, const char *fmt, ...)
{
  if (c->quiet || c->internal_child)
    return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (isatty(STDERR_FILENO)) {
    fprintf(stderr, "\r\033[K[" ACL_BENCH_NAME "] %s", buf);
    progress_active = 1;
  } else {
    fprintf(stderr, "[" ACL_BENCH_NAME "] %s\n", buf);
  }
  fflush(stderr);
}

void acl_bench_progress_done(const acl_bench_cfg_t *c)
{
  if (c->quiet || c->internal_child)
    return;
  if (progress_active)
    fprintf(stderr, "\r\033[K");
  progress_active = 0;
  fflush(stderr);
}
