/* --advise report: for each start-up variable (NCCL_MIN/MAX_NCHANNELS,
 * NCCL_NTHREADS, NCCL_BUFFSIZE) the gain each value measured against NCCL's
 * defaults, and the values worth setting. NCCL reads these once, at
 * communicator init, so a tuner plugin cannot change them per call: they
 * belong in the job's environment.
 *
 * Gain of a value: total time over the sizes under NCCL's defaults divided
 * by the total under the value (each size's median over the repetitions; a
 * job that runs each size once gains that). A value is recommended when its
 * gain is at least ACL_BENCH_ADVISE_MIN_GAIN and no size got slower than
 * ACL_BENCH_ADVISE_MAX_LOSS; per variable the best such value. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/compare_int.h"

#define ACL_BENCH_ADVISE_MIN_GAIN 1.02
#define ACL_BENCH_ADVISE_MAX_LOSS 0.98

typedef struct advice {
  double gain, worst, best; /* total-time ratio, per-size min and max ratios */
  int sizes;                /* sizes both ran */
} advice_t;

static advice_t measure(const acl_bench_compare_t *x, const acl_bench_job_t *base,
                        const acl_bench_job_t *j)
{
  advice_t a = {.gain = NAN, .worst = INFINITY, .best = -INFINITY};
  double tb = 0.0, tj = 0.0;
  for (int s = 0; s < x->nsizes; s++) {
    double b = acl_bench_job_time(base, s, x->nsizes), v = acl_bench_job_time(j, s, x->nsizes);
    if (!isfinite(b) || !isfinite(v) || v <= 0.0)
      continue;
    tb += b;
    tj += v;
    a.sizes++;
    a.worst = fmin(a.worst, b / v);
    a.best = fmax(a.best, b / v);
  }
  if (a.sizes)
    a.gain = tb / tj;
  return a;
}

/* The run's own arguments (sizes, collective, launch, iterations,
 * interference), so that each printed command repeats these measurements. */
static void run_args(const acl_bench_cfg_t *c, char *buf, size_t len)
{
  char lo[32], hi[32];
  acl_bench_format_size(c->minbytes, lo, sizeof(lo));
  acl_bench_format_size(c->maxbytes, hi, sizeof(hi));
  int n =
      snprintf(buf, len, "-g %d -b %s -e %s -f %g -C %s -d %s -w %d -n %d --reps %d %s", c->ngpus,
               lo, hi, c->factor, acl_bench_coll_name(c->coll), acl_bench_dtype_name(c->dt),
               c->warmup, c->iters, c->reps, c->procs ? "--procs" : "--single");
  if (n > 0 && (size_t)n < len && c->warmup_s > 0)
    n += snprintf(buf + n, len - (size_t)n, " --warmup-time %g", c->warmup_s);
  if (n > 0 && (size_t)n < len && c->gemm)
    snprintf(buf + n, len - (size_t)n, " --interference gemm:%g --gemm-size %d", c->gemm_duty,
             c->gemm_n);
}

/* The channels' best value that gains somewhere but loses at some size: the
 * ceiling alone is not advised, autoccl's ceiling mode may make it pay
 * (docs/channels.md). -1 when none. */
static int ceiling_candidate(const acl_bench_compare_t *x, const advice_t *adv, int n)
{
  int best = -1;
  for (int k = 1; k < n; k++) {
    const acl_bench_job_t *j = &x->jobs[k];
    if (j->sweep != 2 || !strchr(j->var, '/') || !adv[k].sizes ||
        adv[k].best < ACL_BENCH_ADVISE_MIN_GAIN)
      continue;
    if (best < 0 || adv[k].best > adv[best].best)
      best = k;
  }
  return best;
}

static bool recommended(const advice_t *a)
{
  return a->sizes > 0 && a->gain >= ACL_BENCH_ADVISE_MIN_GAIN &&
         a->worst >= ACL_BENCH_ADVISE_MAX_LOSS;
}

int acl_bench_advise_report(const acl_bench_compare_t *x, int rc)
{
  const acl_bench_cfg_t *c = &x->cfg;
  const acl_bench_job_t *base = &x->jobs[0];
  advice_t adv[1024] = {{0}};
  int n = x->nj < 1024 ? x->nj : 1024;
  printf("#\n# advise: gain = total time over %d sizes under NCCL's defaults / under the value "
         "(> 1: faster); worst/best = per-size ratios\n",
         x->nsizes);
  printf("# %-40s %10s %8s %8s %8s\n", "variable=value", "gain", "worst", "best", "sizes");
  for (int k = 1; k < n; k++) {
    const acl_bench_job_t *j = &x->jobs[k];
    if (j->sweep != 2)
      continue;
    adv[k] = measure(x, base, j);
    if (!adv[k].sizes) {
      printf("  %-40s %10s %8s %8s %8d%s%s\n", j->name, "failed", "-", "-", 0,
             j->err[0] ? "  " : "", j->err);
      continue;
    }
    printf("  %-40s %9.4fx %7.3fx %7.3fx %8d%s\n", j->name, adv[k].gain, adv[k].worst, adv[k].best,
           adv[k].sizes, recommended(&adv[k]) ? "  *" : "");
  }
  /* per variable, the best recommended value */
  int best_of[1024];
  int nvars = 0;
  for (int k = 1; k < n; k++) {
    const acl_bench_job_t *j = &x->jobs[k];
    if (j->sweep != 2)
      continue;
    int v = -1;
    for (int q = 0; q < nvars; q++)
      if (!strcmp(x->jobs[best_of[q] < 0 ? -best_of[q] - 1 : best_of[q]].var, j->var))
        v = q;
    if (v < 0) {
      v = nvars++;
      best_of[v] = -k - 1; /* negative: none recommended yet (k is the first) */
    }
    int cur = best_of[v];
    if (recommended(&adv[k]) && (cur < 0 || adv[k].gain > adv[cur].gain))
      best_of[v] = k;
  }
  printf("# recommend:");
  int nrec = 0;
  for (int q = 0; q < nvars; q++) {
    if (best_of[q] < 0)
      continue;
    const acl_bench_job_t *j = &x->jobs[best_of[q]];
    if (strchr(j->var, '/'))
      printf(" NCCL_MIN_NCHANNELS=%s NCCL_MAX_NCHANNELS=%s (%+.1f %%)", j->value, j->value,
             100.0 * (adv[best_of[q]].gain - 1.0));
    else
      printf(" %s=%s (%+.1f %%)", j->var, j->value, 100.0 * (adv[best_of[q]].gain - 1.0));
    nrec++;
  }
  printf("%s\n", nrec ? "" : " nothing: NCCL's defaults are as fast within 2 % on these sizes");
  for (int q = 0; q < nvars; q++)
    if (best_of[q] < 0)
      printf("# keep NCCL's default for %s (no value gained 2 %% without a size 2 %% slower)\n",
             x->jobs[-best_of[q] - 1].var);
  /* Commands: this measurement again, and each recommendation side by side
   * with NCCL as it ships (and the ceiling with autoccl's ceiling mode). */
  char args[512], cmd[1024], ceil_cmd[1024] = "";
  run_args(c, args, sizeof(args));
  printf("# reproduce: " ACL_BENCH_NAME " %s --advise\n", args);
  int ck = ceiling_candidate(x, adv, n);
  if (ck > 0) {
    snprintf(ceil_cmd, sizeof(ceil_cmd),
             ACL_BENCH_NAME " %s --compare default,ceiling,autoccl --ceiling %s", args,
             x->jobs[ck].value);
    printf("# ceiling %s: up to %.3fx at a size, %.3fx at the worst with the plugin off; with "
           "autoccl's ceiling mode (NCCL_MIN_NCHANNELS=%s AUTOCCL_STOCK_CHANNELS=<NCCL's own "
           "count>), check: %s\n",
           x->jobs[ck].value, adv[ck].best, adv[ck].worst, x->jobs[ck].value, ceil_cmd);
  }
  if (c->json) {
    printf("{\"advise\":{\"collective\":");
    acl_bench_json_str(stdout, acl_bench_coll_name(c->coll));
    printf(",\"ranks\":%d,\"sizes\":[", c->ngpus);
    for (int s = 0; s < x->nsizes; s++)
      printf("%s%zu", s ? "," : "", x->sizes[s]);
    printf("],\"reps\":%d,\"min_gain\":%.2f,\"max_loss\":%.2f,\"reproduce\":", c->reps,
           ACL_BENCH_ADVISE_MIN_GAIN, ACL_BENCH_ADVISE_MAX_LOSS);
    snprintf(cmd, sizeof(cmd), ACL_BENCH_NAME " %s --advise", args);
    acl_bench_json_str(stdout, cmd);
    printf(",\"ceiling\":");
    if (ck > 0) {
      printf("{\"value\":");
      acl_bench_json_str(stdout, x->jobs[ck].value);
      printf(",\"gain\":");
      acl_bench_json_num(stdout, adv[ck].gain);
      printf(",\"best\":");
      acl_bench_json_num(stdout, adv[ck].best);
      printf(",\"worst\":");
      acl_bench_json_num(stdout, adv[ck].worst);
      printf(",\"check\":");
      acl_bench_json_str(stdout, ceil_cmd);
      printf("}");
    } else {
      printf("null");
    }
    printf(",\"values\":[");
    int first = 1;
    for (int k = 1; k < n; k++) {
      const acl_bench_job_t *j = &x->jobs[k];
      if (j->sweep != 2)
        continue;
      printf("%s{\"variable\":", first ? "" : ",");
      first = 0;
      acl_bench_json_str(stdout, j->var);
      printf(",\"value\":");
      acl_bench_json_str(stdout, j->value);
      printf(",\"gain\":");
      acl_bench_json_num(stdout, adv[k].sizes ? adv[k].gain : NAN);
      printf(",\"worst\":");
      acl_bench_json_num(stdout, adv[k].sizes ? adv[k].worst : NAN);
      printf(",\"best\":");
      acl_bench_json_num(stdout, adv[k].sizes ? adv[k].best : NAN);
      printf(",\"sizes\":%d,\"recommended\":%s}", adv[k].sizes,
             recommended(&adv[k]) ? "true" : "false");
    }
    printf("],\"recommend\":[");
    first = 1;
    for (int q = 0; q < nvars; q++) {
      if (best_of[q] < 0)
        continue;
      const acl_bench_job_t *j = &x->jobs[best_of[q]];
      printf("%s{\"variable\":", first ? "" : ",");
      first = 0;
      acl_bench_json_str(stdout, j->var);
      printf(",\"value\":");
      acl_bench_json_str(stdout, j->value);
      printf(",\"gain\":");
      acl_bench_json_num(stdout, adv[best_of[q]].gain);
      /* the value with autoccl beside NCCL as it ships */
      if (strchr(j->var, '/'))
        snprintf(cmd, sizeof(cmd),
                 ACL_BENCH_NAME " %s --compare default,ceiling,autoccl --ceiling %s", args,
                 j->value);
      else
        snprintf(cmd, sizeof(cmd),
                 ACL_BENCH_NAME " %s --compare default,autoccl --mode-env autoccl:%s=%s", args,
                 j->var, j->value);
      printf(",\"check\":");
      acl_bench_json_str(stdout, cmd);
      printf("}");
    }
    printf("]}}\n");
  }
  if (rc == ACL_BENCH_EXIT_OK && base->child_failures)
    rc = ACL_BENCH_EXIT_RUNTIME;
  return rc;
}
