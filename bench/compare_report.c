/* --compare / --sweep results (bench/compare.c runs the jobs): per-mode
 * tables, the oracle (fastest sweep config per size), the ratios to NCCL's
 * default and to the oracle, and the JSON line. No CUDA here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/compare_int.h"
#include "core/clock.h"

/* --- aggregation -------------------------------------------------------- */

static double job_time(const acl_bench_job_t *j, int s, int nsizes)
{
  double v[1024];
  int n = 0;
  for (int r = 0; r < j->runs && n < 1024; r++) {
    size_t k = (size_t)r * (size_t)nsizes + (size_t)s;
    if (!j->st[k] && isfinite(j->t[k]))
      v[n++] = j->t[k];
  }
  return n ? acl_bench_median_of(v, n) : NAN;
}

double acl_bench_job_time(const acl_bench_job_t *j, int s, int nsizes)
{
  return job_time(j, s, nsizes);
}

static double job_incl(const acl_bench_job_t *j, int s, int nsizes)
{
  double sum = 0;
  int n = 0;
  for (int r = 0; r < j->runs; r++) {
    size_t k = (size_t)r * (size_t)nsizes + (size_t)s;
    if (!j->st[k] && isfinite(j->incl[k])) {
      sum += j->incl[k];
      n++;
    }
  }
  return n ? sum / n : NAN;
}

static double job_gemm(const acl_bench_job_t *j, int s, int nsizes)
{
  double sum = 0;
  int n = 0;
  for (int r = 0; r < j->runs; r++) {
    size_t k = (size_t)r * (size_t)nsizes + (size_t)s;
    if (!j->st[k] && j->gemm[k] >= 0) {
      sum += j->gemm[k];
      n++;
    }
  }
  return n ? sum / n : NAN;
}

static long long job_wrong(const acl_bench_job_t *j, int nsizes)
{
  long long w = 0;
  for (int r = 0; r < j->runs; r++)
    for (int s = 0; s < nsizes; s++)
      w += j->wrong[(size_t)r * (size_t)nsizes + (size_t)s];
  return w;
}

static double bw(size_t bytes, double us) { return us > 0 ? (double)bytes / 1e3 / us : NAN; }

static void ratio_cell(FILE *f, double v)
{
  if (isfinite(v))
    fprintf(f, " %14.3f", v);
  else
    fprintf(f, " %14s", "-");
}

/* --- output ------------------------------------------------------------- */

/* Best sweep time per size and the job that ran it (-1: none). */
static void find_oracle(const acl_bench_compare_t *x, double *oracle, int *oracle_job)
{
  int nmodes = x->cfg.nmodes, nsizes = x->nsizes;
  for (int s = 0; s < nsizes; s++) {
    oracle[s] = NAN;
    oracle_job[s] = -1;
    for (int k = nmodes; k < x->nj; k++) {
      double t = job_time(&x->jobs[k], s, nsizes);
      if (isfinite(t) && (!isfinite(oracle[s]) || t < oracle[s])) {
        oracle[s] = t;
        oracle_job[s] = k;
      }
    }
  }
}

static void print_mode_tables(const acl_bench_compare_t *x, double bf)
{
  const acl_bench_cfg_t *c = &x->cfg;
  const size_t *sizes = x->sizes;
  int nsizes = x->nsizes;
  size_t es = x->es;
  for (int m = 0; m < c->nmodes; m++) {
    const acl_bench_job_t *j = &x->jobs[m];
    printf("#\n# mode %s: time = median over reps of each run's median of the last %d iterations; "
           "time_incl = mean over all %d iterations from the first call%s\n",
           j->name, c->iters, c->iters + c->warmup,
           strcmp(j->mode, "default") ? " (includes the tuning period)" : "");
    printf("# %12s %12s %8s %10s %8s %8s %10s %10s%s\n", "size", "count", "type", "time", "algbw",
           "busbw", "time_incl", "busbw_incl", c->gemm ? "    gemm" : "");
    printf("# %12s %12s %8s %10s %8s %8s %10s %10s%s\n", "(B)", "(elements)", "", "(us)", "(GB/s)",
           "(GB/s)", "(us)", "(GB/s)", c->gemm ? " TFLOP/s" : "");
    for (int s = 0; s < nsizes; s++) {
      double t = job_time(j, s, nsizes), ti = job_incl(j, s, nsizes);
      if (!isfinite(t)) {
        printf("  %12zu %12zu %8s %10s %8s %8s %10s %10s\n", sizes[s], sizes[s] / es,
               acl_bench_dtype_name(c->dt), "failed", "-", "-", "-", "-");
        continue;
      }
      printf("  %12zu %12zu %8s %10.2f %8.2f %8.2f %10.2f %10.2f", sizes[s], sizes[s] / es,
             acl_bench_dtype_name(c->dt), t, bw(sizes[s], t), bw(sizes[s], t) * bf, ti,
             bw(sizes[s], ti) * bf);
      if (c->gemm)
        printf(" %8.1f", job_gemm(j, s, nsizes));
      printf("\n");
    }
    if (c->gemm && j->gemm_iso > 0)
      printf("# mode %s: GEMM %.1f TFLOP/s alone, %.1f TFLOP/s during the last run\n", j->name,
             j->gemm_iso, j->gemm_run);
    if (c->check)
      printf("# mode %s: wrong values %lld\n", j->name, job_wrong(j, nsizes));
  }
}

static void print_oracle(const acl_bench_compare_t *x, double bf, const double *oracle,
                         const int *oracle_job)
{
  const acl_bench_cfg_t *c = &x->cfg;
  const size_t *sizes = x->sizes;
  int nmodes = c->nmodes, nsizes = x->nsizes, nj = x->nj;
  size_t es = x->es;
  int supported = 0;
  for (int k = nmodes; k < nj; k++)
    for (int s = 0; s < nsizes; s++)
      if (isfinite(job_time(&x->jobs[k], s, nsizes))) {
        supported++;
        break;
      }
  printf(
      "#\n# oracle: fastest of %d supported sweep configs (of %d) per size (algo/proto/channels)\n",
      supported, nj - nmodes);
  printf("# %12s %12s %8s %10s %8s %8s  %s\n", "size", "count", "type", "time", "algbw", "busbw",
         "config");
  printf("# %12s %12s %8s %10s %8s %8s\n", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)");
  for (int s = 0; s < nsizes; s++) {
    if (oracle_job[s] < 0) {
      printf("  %12zu %12zu %8s %10s %8s %8s  %s\n", sizes[s], sizes[s] / es,
             acl_bench_dtype_name(c->dt), "-", "-", "-", "none");
      continue;
    }
    printf("  %12zu %12zu %8s %10.2f %8.2f %8.2f  %s\n", sizes[s], sizes[s] / es,
           acl_bench_dtype_name(c->dt), oracle[s], bw(sizes[s], oracle[s]),
           bw(sizes[s], oracle[s]) * bf, x->jobs[oracle_job[s]].name);
  }
}

/* X/default (and including the tuning period) and X/oracle per size; def is
 * the job of mode default, -1 when it was not run. */
static void print_ratios(const acl_bench_compare_t *x, int def, const double *oracle)
{
  const acl_bench_cfg_t *c = &x->cfg;
  const acl_bench_job_t *jobs = x->jobs;
  int nmodes = c->nmodes, nsizes = x->nsizes;
  int ncols = 0;
  if (def < 0 && !c->sweep)
    return;
  printf("#\n# ratios of bandwidth (= inverse ratio of time): X/default > 1 means X is faster than "
         "NCCL's "
         "default; X/oracle is the fraction of the oracle's bandwidth reached\n");
  printf("# %12s", "size");
  for (int m = 0; m < nmodes; m++) {
    if (def >= 0 && m != def) {
      char h[64];
      snprintf(h, sizeof(h), "%s/default", jobs[m].name);
      printf(" %14s", h);
      snprintf(h, sizeof(h), "(incl.tuning)");
      printf(" %14s", h);
      ncols += 2;
    }
    if (c->sweep) {
      char h[64];
      snprintf(h, sizeof(h), "%s/oracle", jobs[m].name);
      printf(" %14s", h);
      ncols++;
    }
  }
  printf("\n");
  for (int s = 0; s < nsizes && ncols; s++) {
    printf("  %12zu", x->sizes[s]);
    for (int m = 0; m < nmodes; m++) {
      double t = job_time(&jobs[m], s, nsizes), ti = job_incl(&jobs[m], s, nsizes);
      if (def >= 0 && m != def) {
        ratio_cell(stdout, job_time(&jobs[def], s, nsizes) / t);
        ratio_cell(stdout, job_incl(&jobs[def], s, nsizes) / ti);
      }
      if (c->sweep)
        ratio_cell(stdout, oracle[s] / t);
    }
    printf("\n");
  }
}

/* What the modes with a plugin add over NCCL with the ceiling alone (mode
 * ceiling, job cei), and the ceiling alone over NCCL as it ships (def). */
static void print_over_ceiling(const acl_bench_compare_t *x, int def, int cei)
{
  const acl_bench_job_t *jobs = x->jobs;
  int nmodes = x->cfg.nmodes, nsizes = x->nsizes;
  if (cei < 0 || nmodes < 2)
    return;
  printf("#\n# over the ceiling alone: X/ceiling > 1 means X is faster than NCCL with\n"
         "# NCCL_MIN/MAX_NCHANNELS raised and no plugin%s\n",
         def >= 0 ? "; ceiling/default < 1 marks the sizes where the ceiling alone loses" : "");
  printf("# %12s", "size");
  if (def >= 0)
    printf(" %16s", "ceiling/default");
  for (int m = 0; m < nmodes; m++)
    if (m != def && m != cei) {
      char h[64];
      snprintf(h, sizeof(h), "%s/ceiling", jobs[m].name);
      printf(" %16s", h);
    }
  printf("\n");
  for (int s = 0; s < nsizes; s++) {
    double tc = job_time(&jobs[cei], s, nsizes);
    printf("  %12zu", x->sizes[s]);
    if (def >= 0)
      printf(" %16.3f", job_time(&jobs[def], s, nsizes) / tc);
    for (int m = 0; m < nmodes; m++)
      if (m != def && m != cei)
        printf(" %16.3f", tc / job_time(&jobs[m], s, nsizes));
    printf("\n");
  }
}

static void json_mode(FILE *f, const acl_bench_compare_t *x, const acl_bench_job_t *j, double bf)
{
  const size_t *sizes = x->sizes;
  int nsizes = x->nsizes;
  acl_bench_json_str(f, j->name);
  fprintf(f, ":{\"env\":[");
  for (int e = 0; e < j->nenv; e++) {
    if (e)
      fputc(',', f);
    acl_bench_json_str(f, j->env[e]);
  }
  fprintf(f, "],\"runs\":%d,\"failed_runs\":%d,\"wrong\":%lld,\"gemm_iso_tflops\":", j->runs,
          j->child_failures, job_wrong(j, nsizes));
  acl_bench_json_num(f, j->gemm_iso > 0 ? j->gemm_iso : NAN);
  fprintf(f, ",\"error\":");
  if (j->err[0])
    acl_bench_json_str(f, j->err);
  else
    fputs("null", f);
  fprintf(f, ",\"results\":[");
  for (int s = 0; s < nsizes; s++) {
    double t = job_time(j, s, nsizes), ti = job_incl(j, s, nsizes);
    fprintf(f, "%s{\"size\":%zu,\"count\":%zu,\"time_us\":", s ? "," : "", sizes[s],
            sizes[s] / x->es);
    acl_bench_json_num(f, t);
    fprintf(f, ",\"algbw_gbs\":");
    acl_bench_json_num(f, bw(sizes[s], t));
    fprintf(f, ",\"busbw_gbs\":");
    acl_bench_json_num(f, bw(sizes[s], t) * bf);
    fprintf(f, ",\"time_incl_us\":");
    acl_bench_json_num(f, ti);
    fprintf(f, ",\"busbw_incl_gbs\":");
    acl_bench_json_num(f, bw(sizes[s], ti) * bf);
    fprintf(f, ",\"gemm_tflops\":");
    acl_bench_json_num(f, job_gemm(j, s, nsizes));
    fprintf(f, ",\"reps_time_us\":[");
    for (int r = 0; r < j->runs; r++) {
      if (r)
        fputc(',', f);
      acl_bench_json_num(f, j->t[(size_t)r * (size_t)nsizes + (size_t)s]);
    }
    fprintf(f, "],\"reps_time_incl_us\":[");
    for (int r = 0; r < j->runs; r++) {
      if (r)
        fputc(',', f);
      acl_bench_json_num(f, j->incl[(size_t)r * (size_t)nsizes + (size_t)s]);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "]}");
}

static void json_oracle_sweep(FILE *f, const acl_bench_compare_t *x, double bf,
                              const double *oracle, const int *oracle_job)
{
  const size_t *sizes = x->sizes;
  int nmodes = x->cfg.nmodes, nsizes = x->nsizes;
  fputc('[', f);
  for (int s = 0; s < nsizes; s++) {
    fprintf(f, "%s{\"size\":%zu,\"time_us\":", s ? "," : "", sizes[s]);
    acl_bench_json_num(f, oracle[s]);
    fprintf(f, ",\"busbw_gbs\":");
    acl_bench_json_num(f, bw(sizes[s], oracle[s]) * bf);
    fprintf(f, ",\"config\":");
    if (oracle_job[s] >= 0)
      acl_bench_json_str(f, x->jobs[oracle_job[s]].name);
    else
      fputs("null", f);
    fputc('}', f);
  }
  fprintf(f, "],\"sweep\":[");
  for (int k = nmodes; k < x->nj; k++) {
    fprintf(f, "%s{\"config\":", k > nmodes ? "," : "");
    acl_bench_json_str(f, x->jobs[k].name);
    fprintf(f, ",\"skipped\":%s,\"time_us\":[", x->jobs[k].skip ? "true" : "false");
    for (int s = 0; s < nsizes; s++) {
      if (s)
        fputc(',', f);
      acl_bench_json_num(f, job_time(&x->jobs[k], s, nsizes));
    }
    fprintf(f, "]}");
  }
  fputc(']', f);
}

static void json_ratios(FILE *f, const acl_bench_compare_t *x, int def, int cei,
                        const double *oracle)
{
  const acl_bench_job_t *jobs = x->jobs;
  int nmodes = x->cfg.nmodes, nsizes = x->nsizes;
  fprintf(f, ",\"ratios\":[");
  for (int s = 0; s < nsizes; s++) {
    fprintf(f, "%s{\"size\":%zu", s ? "," : "", x->sizes[s]);
    for (int m = 0; m < nmodes; m++) {
      double t = job_time(&jobs[m], s, nsizes), ti = job_incl(&jobs[m], s, nsizes);
      if (def >= 0 && m != def) {
        fprintf(f, ",\"%s/default\":", jobs[m].name);
        acl_bench_json_num(f, job_time(&jobs[def], s, nsizes) / t);
        fprintf(f, ",\"%s/default_incl\":", jobs[m].name);
        acl_bench_json_num(f, job_incl(&jobs[def], s, nsizes) / ti);
      }
      if (cei >= 0 && m != cei && m != def) {
        fprintf(f, ",\"%s/ceiling\":", jobs[m].name);
        acl_bench_json_num(f, job_time(&jobs[cei], s, nsizes) / t);
      }
      if (x->cfg.sweep) {
        fprintf(f, ",\"%s/oracle\":", jobs[m].name);
        acl_bench_json_num(f, oracle[s] / t);
      }
    }
    fputc('}', f);
  }
}

/* The whole comparison as one JSON line (--json). */
static void print_json(const acl_bench_compare_t *x, double bf, int def, int cei,
                       const double *oracle, const int *oracle_job, long long wrong_total,
                       int failures, int rc)
{
  const acl_bench_cfg_t *c = &x->cfg;
  FILE *f = stdout;
  char ver[32] = "";
  for (int k = 0; k < x->nj && !ver[0]; k++)
    acl_bench_nccl_version_str(x->jobs[k].nccl_version, ver, sizeof(ver));
  fprintf(
      f,
      "{\"bench\":\"" ACL_BENCH_NAME "\",\"version\":\"" ACL_BENCH_VERSION
      "\",\"kind\":\"compare\",\"coll\":\"%s\","
      "\"dtype\":\"%s\",\"op\":\"%s\",\"root\":%d,\"nranks\":%d,\"launch\":\"%s\",\"inplace\":%s,"
      "\"reps\":%d,\"warmup\":%d,\"warmup_s\":%.17g,\"iters\":%d,\"check\":%d,\"bus_factor\":",
      acl_bench_coll_name(c->coll), acl_bench_dtype_name(c->dt), acl_bench_op_name(c->op), c->root,
      c->ngpus, c->procs ? "procs" : "single", c->inplace ? "true" : "false", c->reps, c->warmup,
      c->warmup_s, c->iters, c->check);
  acl_bench_json_num(f, bf);
  fprintf(f, ",\"nccl_version\":");
  if (ver[0])
    acl_bench_json_str(f, ver);
  else
    fputs("null", f);
  acl_bench_json_testbed(f, c);
  fprintf(f, ",\"interference\":");
  if (c->gemm) {
    fprintf(f, "{\"kind\":\"gemm\",\"duty\":");
    acl_bench_json_num(f, c->gemm_duty);
    fprintf(f, ",\"n\":%d}", c->gemm_n);
  } else {
    fputs("null", f);
  }
  fprintf(f, ",\"sizes\":[");
  for (int s = 0; s < x->nsizes; s++)
    fprintf(f, "%s%zu", s ? "," : "", x->sizes[s]);
  fprintf(f, "],\"modes\":{");
  for (int m = 0; m < c->nmodes; m++) {
    fprintf(f, "%s", m ? "," : "");
    json_mode(f, x, &x->jobs[m], bf);
  }
  fprintf(f, "},\"oracle\":");
  if (c->sweep)
    json_oracle_sweep(f, x, bf, oracle, oracle_job);
  else
    fprintf(f, "null,\"sweep\":null");
  json_ratios(f, x, def, cei, oracle);
  fprintf(f, "],\"wrong\":%lld,\"failed_runs\":%d,\"elapsed_s\":", wrong_total, failures);
  acl_bench_json_num(f, acl_mono_s() - x->t_start);
  fprintf(f, ",\"exit\":%d}\n", rc);
}

int acl_bench_compare_report(const acl_bench_compare_t *x, int rc)
{
  const acl_bench_cfg_t *c = &x->cfg;
  double bf = acl_bench_bus_factor(c->coll, c->ngpus);
  double oracle[ACL_BENCH_MAX_SIZES];
  int oracle_job[ACL_BENCH_MAX_SIZES];
  print_mode_tables(x, bf);
  find_oracle(x, oracle, oracle_job);
  if (c->sweep)
    print_oracle(x, bf, oracle, oracle_job);
  int def = -1, cei = -1;
  for (int m = 0; m < c->nmodes; m++) {
    if (!strcmp(x->jobs[m].mode, "default"))
      def = m;
    if (!strcmp(x->jobs[m].mode, "ceiling"))
      cei = m;
  }
  print_ratios(x, def, oracle);
  print_over_ceiling(x, def, cei);
  long long wrong_total = 0;
  int failures = 0;
  for (int m = 0; m < c->nmodes; m++) {
    wrong_total += job_wrong(&x->jobs[m], x->nsizes);
    failures += x->jobs[m].child_failures;
  }
  printf("# %d runs in %.1f s; mode runs failed: %d; wrong values: %s\n", x->done_runs,
         acl_mono_s() - x->t_start, failures,
         c->check ? (wrong_total ? "FOUND" : "0") : "not checked");
  if (wrong_total && rc == ACL_BENCH_EXIT_OK)
    rc = ACL_BENCH_EXIT_WRONG;
  if (failures && rc == ACL_BENCH_EXIT_OK)
    rc = ACL_BENCH_EXIT_RUNTIME;
  if (c->json)
    print_json(x, bf, def, cei, oracle, oracle_job, wrong_total, failures, rc);
  return rc;
}
