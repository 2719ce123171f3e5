/* Tuner benchmark statistics and output (table, or one JSON line). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/bench_int.h"

/* Targets: sim/bench_int.h. */
#define T_FOO_MEDIAN ACL_BENCH_T_FOO_MEDIAN
#define T_FOO_P5 ACL_BENCH_T_FOO_P5
#define T_NOT_CONVERGED ACL_BENCH_T_NOT_CONVERGED
#define T_OVERHEAD ACL_BENCH_T_OVERHEAD
#define T_FOB_MIN ACL_BENCH_T_FOB_MIN
#define T_CHUNK_FOO_MEDIAN ACL_BENCH_T_CHUNK_FOO_MEDIAN
#define T_CHUNK_OVERHEAD_GROWTH ACL_BENCH_T_CHUNK_OVERHEAD_GROWTH

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Percentile by linear interpolation on sorted values, q in 0..1. */
static double pct(const double *v, size_t n, double q)
{
  if (n == 0)
    return NAN;
  double pos = q * (double)(n - 1);
  size_t i = (size_t)pos;
  if (i + 1 >= n)
    return v[n - 1];
  return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

void acl_bench_summarize(const acl_bench_run_t *runs, size_t n, acl_bench_summary_t *s)
{
  memset(s, 0, sizeof *s);
  s->n = n;
  if (n == 0)
    return;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  double *d = malloc(n * sizeof *d), *e = malloc(n * sizeof *e), *f = malloc(n * sizeof *f);
  if (!a || !b || !c || !d || !e || !f)
    goto out;
  double ov_sum = 0.0, rt = 0.0;
  for (size_t i = 0; i < n; i++) {
    a[i] = runs[i].final_over_oracle;
    b[i] = runs[i].calls_to_converge;
    c[i] = runs[i].overhead;
    d[i] = runs[i].final_over_baseline;
    e[i] = runs[i].oracle_over_baseline;
    f[i] = runs[i].calls_to_final;
    s->validating += runs[i].validating;
    ov_sum += runs[i].overhead;
    rt += runs[i].retunes;
    s->not_converged += !runs[i].converged;
    s->below_baseline += runs[i].final_over_baseline < T_FOB_MIN;
  }
  qsort(a, n, sizeof *a, cmp_d);
  qsort(b, n, sizeof *b, cmp_d);
  qsort(c, n, sizeof *c, cmp_d);
  qsort(d, n, sizeof *d, cmp_d);
  qsort(e, n, sizeof *e, cmp_d);
  qsort(f, n, sizeof *f, cmp_d);
  s->final_calls_median = pct(f, n, 0.5);
  s->final_calls_p95 = pct(f, n, 0.95);
  s->foo_median = pct(a, n, 0.5);
  s->foo_p5 = pct(a, n, 0.05);
  s->foo_min = a[0];
  s->calls_median = pct(b, n, 0.5);
  s->calls_p95 = pct(b, n, 0.95);
  s->calls_max = b[n - 1];
  s->overhead_mean = ov_sum / (double)n;
  s->overhead_median = pct(c, n, 0.5);
  s->overhead_p95 = pct(c, n, 0.95);
  s->fob_min = d[0];
  s->fob_median = pct(d, n, 0.5);
  s->oob_median = pct(e, n, 0.5);
  s->retunes_mean = rt / (double)n;
out:
  free(a);
  free(b);
  free(c);
  free(d);
  free(e);
  free(f);
}

static void print_row(const char *name, const acl_bench_summary_t *s)
{
  printf("%-10s %7zu %7.4f %7.4f %7.4f %6.0f %6.0f %6.0f %7.2f%% %7.2f%% %7.4f %7.4f %7.4f %5zu"
         " %6.0f %6.0f %5zu\n",
         name, s->n, s->foo_median, s->foo_p5, s->foo_min, s->calls_median, s->calls_p95,
         s->calls_max, 100.0 * s->overhead_mean, 100.0 * s->overhead_p95, s->fob_min, s->fob_median,
         s->oob_median, s->below_baseline, s->final_calls_median, s->final_calls_p95,
         s->validating);
}

static void json_obj(const char *name, const acl_bench_summary_t *s)
{
  printf("\"%s\":{\"runs\":%zu,\"final_over_oracle_median\":%.5f,\"final_over_oracle_p5\":%.5f,"
         "\"final_over_oracle_min\":%.5f,\"calls_to_converge_median\":%.1f,"
         "\"calls_to_converge_p95\":%.1f,\"exploration_overhead\":%.5f,"
         "\"exploration_overhead_p95\":%.5f,\"final_over_baseline_min\":%.5f,"
         "\"final_over_baseline_median\":%.5f,\"oracle_over_baseline_median\":%.5f,"
         "\"below_baseline_runs\":%zu,\"not_converged\":%zu,"
         "\"calls_to_final_decision_median\":%.1f,\"calls_to_final_decision_p95\":%.1f,"
         "\"validation_open\":%zu}",
         name, s->n, s->foo_median, s->foo_p5, s->foo_min, s->calls_median, s->calls_p95,
         s->overhead_mean, s->overhead_p95, s->fob_min, s->fob_median, s->oob_median,
         s->below_baseline, s->not_converged, s->final_calls_median, s->final_calls_p95,
         s->validating);
}

/* Per (collective, size) view of the H200 runs without interference. */
static void h200_detail(const acl_bench_run_t *h, size_t nh)
{
  printf("\nH200 landscape, isolated runs (median over noise seeds):\n");
  printf("%-14s %10s %-22s %-22s %-22s %8s %8s %6s\n", "collective", "bytes", "NCCL default",
         "final (last seed)", "oracle", "fin/orc", "fin/def", "calls");
  for (int c = 0; c < ACL_NUM_COLL; c++)
    for (uint64_t b = 4096; b <= (1ull << 30); b <<= 2) {
      double foo[1000], fob[1000], calls[1000];
      size_t n = 0;
      const acl_bench_run_t *last = NULL;
      for (size_t i = 0; i < nh && n < 1000; i++)
        if (h[i].coll == c && h[i].nbytes == b && h[i].interference == 0.0) {
          foo[n] = h[i].final_over_oracle;
          fob[n] = h[i].final_over_baseline;
          calls[n++] = h[i].calls_to_converge;
          last = &h[i];
        }
      if (!n)
        continue;
      qsort(foo, n, sizeof foo[0], cmp_d);
      qsort(fob, n, sizeof fob[0], cmp_d);
      qsort(calls, n, sizeof calls[0], cmp_d);
      char d[40], f[40], o[40];
      printf("%-14s %10llu %-22s %-22s %-22s %8.4f %8.4f %6.0f\n", acl_coll_name(c),
             (unsigned long long)b, acl_candidate_str(&last->deflt, d, sizeof d),
             acl_candidate_str(&last->final, f, sizeof f),
             acl_candidate_str(&last->oracle, o, sizeof o), pct(foo, n, 0.5), pct(fob, n, 0.5),
             pct(calls, n, 0.5));
    }
}

static int cmp_fob(const void *a, const void *b)
{
  const acl_bench_run_t *x = a, *y = b;
  return x->final_over_baseline < y->final_over_baseline
             ? -1
             : x->final_over_baseline > y->final_over_baseline;
}

static int cmp_foo(const void *a, const void *b)
{
  const acl_bench_run_t *x = a, *y = b;
  return x->final_over_oracle < y->final_over_oracle ? -1
                                                     : x->final_over_oracle > y->final_over_oracle;
}

static void print_worst(const acl_bench_run_t *runs, size_t n, int k, bool by_baseline)
{
  acl_bench_run_t *v = malloc((n + 1) * sizeof *v);
  if (!v)
    return;
  memcpy(v, runs, n * sizeof *v);
  qsort(v, n, sizeof *v, by_baseline ? cmp_fob : cmp_foo);
  printf("\nworst %d runs by %s:\n", k, by_baseline ? "final/baseline" : "final/oracle");
  for (size_t i = 0; i < n && i < (size_t)k; i++) {
    char d[40], f[40], o[40];
    printf("  %s %-13s %10llu n=%d i=%.2f def %-18s final %-18s oracle %-18s f/o %.4f f/b %.4f "
           "calls %u cands %u retunes %u%s\n",
           v[i].synthetic ? "syn " : "h200", acl_coll_name(v[i].coll),
           (unsigned long long)v[i].nbytes, v[i].nranks, v[i].interference,
           acl_candidate_str(&v[i].deflt, d, sizeof d), acl_candidate_str(&v[i].final, f, sizeof f),
           acl_candidate_str(&v[i].oracle, o, sizeof o), v[i].final_over_oracle,
           v[i].final_over_baseline, v[i].calls_to_converge, v[i].cands_evaluated, v[i].retunes,
           v[i].converged ? "" : " NOT CONVERGED");
  }
  free(v);
}

static void write_csv(const char *path, const acl_bench_run_t *h200, size_t nh,
                      const acl_bench_run_t *syn, size_t ns)
{
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "tunerbench: cannot write '%s'\n", path);
    return;
  }
  fprintf(f, "kind,coll,bytes,nranks,interference,default,final,oracle,final_over_oracle,"
             "final_over_baseline,oracle_over_baseline,overhead,calls,calls_to_final,"
             "calls_to_verdict,cands,retunes,validating,prov_over_baseline\n");
  for (size_t i = 0; i < nh + ns; i++) {
    const acl_bench_run_t *r = i < nh ? &h200[i] : &syn[i - nh];
    char d[40], fi[40], o[40];
    fprintf(f, "%s,%s,%llu,%u,%.4f,%s,%s,%s,%.5f,%.5f,%.5f,%.5f,%u,%u,%u,%u,%u,%u,%.5f\n",
            r->synthetic ? "syn" : "h200", acl_coll_name(r->coll), (unsigned long long)r->nbytes,
            r->nranks, r->interference, acl_candidate_str(&r->deflt, d, sizeof d),
            acl_candidate_str(&r->final, fi, sizeof fi), acl_candidate_str(&r->oracle, o, sizeof o),
            r->final_over_oracle, r->final_over_baseline, r->oracle_over_baseline, r->overhead,
            r->calls_to_converge, r->calls_to_final, r->calls_to_verdict, r->cands_evaluated,
            r->retunes, r->validating, r->prov_over_baseline);
  }
  if (fclose(f) != 0)
    fprintf(stderr, "tunerbench: error writing '%s'\n", path);
}

/* --nccl 2.30: the synthetic runs with the chunk axis against the same runs
 * with it held. */
typedef struct chunk_cmp {
  double foo_median, held_foo_median, overhead, held_overhead;
  bool met;
} chunk_cmp_t;

static chunk_cmp_t chunk_compare(const acl_bench_opts_t *o, const acl_bench_run_t *syn, size_t ns)
{
  chunk_cmp_t c = {0};
  double *a = malloc((ns + 1) * sizeof *a), *h = malloc((ns + 1) * sizeof *h);
  if (!a || !h || ns == 0) {
    free(a);
    free(h);
    return c;
  }
  for (size_t i = 0; i < ns; i++) {
    a[i] = syn[i].final_over_oracle;
    h[i] = syn[i].held_final_over_oracle;
    c.overhead += syn[i].overhead / (double)ns;
    c.held_overhead += syn[i].held_overhead / (double)ns;
  }
  qsort(a, ns, sizeof *a, cmp_d);
  qsort(h, ns, sizeof *h, cmp_d);
  c.foo_median = pct(a, ns, 0.5);
  c.held_foo_median = pct(h, ns, 0.5);
  c.met = o->chunk_amp > 0.0 ? c.foo_median >= T_CHUNK_FOO_MEDIAN
                             : c.overhead - c.held_overhead <= T_CHUNK_OVERHEAD_GROWTH;
  free(a);
  free(h);
  return c;
}

bool acl_bench_print(const acl_bench_opts_t *o, const acl_bench_run_t *h200, size_t nh,
                     const acl_bench_run_t *syn, size_t ns, double seconds)
{
  chunk_cmp_t cc = o->nccl230 ? chunk_compare(o, syn, ns) : (chunk_cmp_t){0};
  acl_bench_summary_t sh, ss, sa;
  acl_bench_summarize(h200, nh, &sh);
  acl_bench_summarize(syn, ns, &ss);
  acl_bench_run_t *all = malloc((nh + ns + 1) * sizeof *all);
  if (!all) {
    fprintf(stderr, "tunerbench: out of memory\n");
    return false;
  }
  memcpy(all, h200, nh * sizeof *all);
  memcpy(all + nh, syn, ns * sizeof *all);
  acl_bench_summarize(all, nh + ns, &sa);
  free(all);
  if (o->csv)
    write_csv(o->csv, h200, nh, syn, ns);
  bool met = sa.foo_median >= T_FOO_MEDIAN && sa.foo_p5 >= T_FOO_P5 &&
             (double)sa.not_converged <= T_NOT_CONVERGED * (double)sa.n &&
             sa.overhead_mean <= T_OVERHEAD && sa.fob_min >= T_FOB_MIN;
  if (o->json) {
    printf("{\"landscapes\":%d,\"seed\":%llu,\"samples_per_cand\":%d,\"noise\":%.3f,"
           "\"calls\":%d,\"seconds\":%.2f,\"nccl_version\":\"%s\",",
           o->landscapes, (unsigned long long)o->seed, o->samples, o->noise, o->calls, seconds,
           o->nccl230 ? "2.30" : "2.28");
    if (o->nccl230)
      printf("\"chunk\":{\"landscape\":\"%s\",\"final_over_oracle_median\":%.5f,"
             "\"held_final_over_oracle_median\":%.5f,\"exploration_overhead\":%.5f,"
             "\"held_exploration_overhead\":%.5f,\"overhead_growth\":%.5f,"
             "\"targets_met\":%s},",
             o->chunk_amp > 0.0 ? "sensitive" : "flat", cc.foo_median, cc.held_foo_median,
             cc.overhead, cc.held_overhead, cc.overhead - cc.held_overhead,
             cc.met ? "true" : "false");
    printf("\"final_over_oracle_median\":%.5f,\"final_over_oracle_p5\":%.5f,"
           "\"calls_to_converge_median\":%.1f,\"exploration_overhead\":%.5f,"
           "\"final_over_baseline_min\":%.5f,\"targets_met\":%s,",
           sa.foo_median, sa.foo_p5, sa.calls_median, sa.overhead_mean, sa.fob_min,
           met ? "true" : "false");
    json_obj("h200", &sh);
    printf(",");
    json_obj("synthetic", &ss);
    printf("}\n");
    return met;
  }
  printf("autoccl tuner benchmark: %d synthetic landscapes + H200 (x%d seeds), seed %llu, "
         "%d samples/cand, noise %.0f%%, %d calls/run, %.1f s\n\n",
         o->landscapes, o->h200_reps, (unsigned long long)o->seed, o->samples, 100.0 * o->noise,
         o->calls, seconds);
  printf("%-10s %7s %7s %7s %7s %6s %6s %6s %8s %8s %7s %7s %7s %5s %6s %6s %5s\n", "landscape",
         "runs", "f/o med", "f/o p5", "f/o min", "calls", "c p95", "c max", "ovh mean", "ovh p95",
         "f/b min", "f/b med", "o/b med", "<0.99", "dec", "d p95", "open");
  print_row("h200", &sh);
  print_row("synthetic", &ss);
  print_row("all", &sa);
  printf("\nf/o = final/oracle bandwidth; calls = calls to converge (warm-up included);\n"
         "ovh = extra time over the run (>= %d calls) vs always running the final choice;\n"
         "f/b = final/NCCL-default bandwidth (noise-free); o/b = oracle headroom;\n"
         "dec = calls until the final decision was taken (a revert after background\n"
         "validation counts); open = runs whose validation was still open at the end.\n",
         o->calls);
  printf("targets: f/o median >= %.2f, p5 >= %.2f, unconverged <= %.0f%%, overhead <= %.0f%%, "
         "f/b min >= %.2f: %s\n",
         T_FOO_MEDIAN, T_FOO_P5, 100.0 * T_NOT_CONVERGED, 100.0 * T_OVERHEAD, T_FOB_MIN,
         met ? "MET" : "NOT MET");
  if (o->nccl230)
    printf("\nNCCL 2.30 chunk axis, %s synthetic landscapes, same runs side by side:\n"
           "  f/o median %.5f (axis held %.5f); overhead mean %.5f (held %.5f), growth %+.5f\n"
           "  target: %s: %s\n",
           o->chunk_amp > 0.0 ? "chunk-sensitive" : "chunk-insensitive", cc.foo_median,
           cc.held_foo_median, cc.overhead, cc.held_overhead, cc.overhead - cc.held_overhead,
           o->chunk_amp > 0.0 ? "f/o median >= 0.98" : "overhead growth <= 0.005",
           cc.met ? "MET" : "NOT MET");
  h200_detail(h200, nh);
  if (o->worst > 0) {
    print_worst(syn, ns, o->worst, true);
    print_worst(syn, ns, o->worst, false);
    print_worst(h200, nh, o->worst, true);
    print_worst(h200, nh, o->worst, false);
  }
  return met;
}
