/* The tuner benchmark on replayed traces (`autoccl-sim --bench --landscape
 * h200-traces`, docs/trace.md "Targets on replay"): the search is driven as
 * in sim/bench.c, but every sample is a recorded iteration (outliers, skew
 * between ranks), a decision runs as what NCCL ran (clamped channels), the
 * first use of an algorithm or of more channels pays its connection set-up, and a call pays the
 * profiler events' cost when it carries events: 1 call in 2^shift, the
 * search's published sampling rule that the plugin applies to NCCL's mask
 * (acl_search_sample_shift; only those calls give samples).
 *
 * Per workload (isolated and under GEMM x AllGather, ReduceScatter,
 * AllReduce x every recorded size) and seed:
 *   final_over_baseline  NCCL default's median / the final decision's
 *   incl_over_baseline   expected time of 350 default calls / of the 350
 *                        calls of the run (exploration, set-up, events)
 *   short_run            the same over a 200-call run
 *   final_over_oracle    best reachable config's median / the final's */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/bench_int.h"
#include "sim/landscape.h"
#include "tuner/search/search.h"

#define T_FOB_MIN 0.99
#define T_INCL_MIN 0.97
#define T_SHORT_MIN 0.97
#define T_FOO_MEDIAN 0.98
#define T_FOO_P5 0.95
#define LONG_CALLS 350
#define SHORT_CALLS 200
#define MAX_LAG 4

typedef struct rres {
  double fob, incl, foo;
  acl_candidate_t final;
} rres_t;

typedef struct pend {
  int cand;
  uint64_t due;
  double seconds;
} pend_t;

/* One run of `calls` calls; returns the ratios. */
static void replay_one(const acl_landscape_t *l, int samples, int coll, uint64_t nbytes,
                       double interf, uint64_t seed, int calls, acl_search_t *s, rres_t *out)
{
  const int nranks = 2;
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.samples_per_cand = samples;
  p.max_channels = acl_land_max_channels(l);
  p.nranks = nranks;
  acl_wkey_t key = {.comm_id = 1, .nbytes = nbytes, .num_pipe_ops = 1, .coll = (uint8_t)coll};
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  acl_land_cost_table(l, coll, nbytes, nranks, cost);
  acl_search_init(s, &p, &key, cost);
  acl_search_restrict(s, cost);
  acl_candidate_t def;
  acl_land_nccl_default(l, coll, nbytes, nranks, &def);
  acl_search_hint_channels(s, def.nchannels);
  double t_base = acl_land_time(l, coll, nbytes, nranks, &def, interf);
  double m_base = acl_land_mean_time(l, coll, nbytes, nranks, &def, interf);
  double ev = acl_land_event_seconds(l, coll, nbytes);
  int conn[ACL_NUM_ALGO] = {0}; /* channels connected per algorithm */
  acl_candidate_t orc;
  double t_orc = acl_land_oracle(l, coll, nbytes, nranks, interf, &orc);
  conn[def.algo] = acl_land_exec_channels(l, coll, nbytes, def.algo, def.proto, 0); /* ran before */
  uint64_t rng = acl_bench_mix(seed);
  pend_t q[MAX_LAG + 1];
  int nq = 0;
  double spent = 0;
  uint64_t k = 0;
  while (k < (uint64_t)calls) {
    acl_candidate_t c;
    uint32_t len = 0;
    int id = acl_search_next(s, &c, &len);
    /* the plugin's rule: events (and a sample) on 1 call in 2^shift */
    uint8_t shift = acl_search_sample_shift(s);
    if (len == 0)
      len = 1;
    acl_candidate_t run = c;
    if (run.algo == ACL_ALGO_NCCL)
      run = def;
    double mean = acl_land_mean_time(l, coll, nbytes, nranks, &run, interf);
    for (uint32_t j = 0; j < len && k < (uint64_t)calls; j++, k++) {
      bool events = shift < ACL_SEARCH_SAMPLE_NEVER && (k & ((1ull << shift) - 1)) == 0;
      spent += mean + (events ? ev : 0.0);
      int need = acl_land_exec_channels(l, coll, nbytes, run.algo, run.proto, run.nchannels);
      if (need > conn[run.algo]) {
        spent += acl_land_connect_seconds(l, coll, nbytes, interf, run.algo, conn[run.algo], need);
        conn[run.algo] = need;
      }
      if (!events)
        continue;                               /* no events, no sample */
      acl_search_observe_channels(s, id, need); /* the Coll event's channel count */
      double t = acl_land_draw(l, coll, nbytes, nranks, &run, interf, acl_bench_mix(rng + k), NULL);
      q[nq++] = (pend_t){id, k + (uint64_t)(acl_bench_unif(&rng) * MAX_LAG), t};
      int w = 0;
      for (int i = 0; i < nq; i++) {
        if (q[i].due <= k || nq == MAX_LAG + 1)
          acl_search_add_sample(s, q[i].cand, q[i].seconds, interf > 0 ? (float)interf : -1.0f);
        else
          q[w++] = q[i];
      }
      nq = w;
    }
  }
  acl_search_report_t rep;
  acl_search_report(s, &rep);
  out->final = acl_phase_decided(rep.phase) ? rep.current : rep.best;
  if (out->final.algo == ACL_ALGO_NCCL)
    out->final = def;
  double t_fin = acl_land_time(l, coll, nbytes, nranks, &out->final, interf);
  out->fob = t_base / t_fin;
  out->foo = t_orc / t_fin;
  out->incl = m_base * calls / spent;
}

/* A JSON number, null when not finite (a workload with no recorded config). */
static void jnum(double v)
{
  if (isfinite(v))
    printf("%.4f", v);
  else
    printf("null");
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int acl_sim_bench_replay(const acl_bench_opts_t *o)
{
  char err[512] = "";
  acl_landscape_t *l = acl_land_create_spec_traces(o->landscape, err, sizeof err);
  if (!l) {
    fprintf(stderr, "autoccl-sim --bench: landscape %s: %s\n", o->landscape, err);
    return 2;
  }
  static const int colls[] = {4, 2, 3}; /* AllReduce, AllGather, ReduceScatter */
  static const uint64_t sizes[] = {65536ull,    262144ull,   1ull << 20,   4ull << 20,
                                   16ull << 20, 64ull << 20, 256ull << 20, 1ull << 30};
  enum { NS = sizeof sizes / sizeof sizes[0], NW = 2 * 3 * NS };
  int reps = o->h200_reps;
  double *foo = malloc(sizeof(double) * NW * (size_t)reps);
  acl_search_t *s = malloc(sizeof *s);
  if (!foo || !s) {
    free(foo);
    free(s);
    acl_land_destroy(l);
    fprintf(stderr, "autoccl-sim --bench: out of memory\n");
    return 2;
  }
  double fob_min = INFINITY, incl_min = INFINITY, short_min = INFINITY;
  const char *fob_w = "", *incl_w = "", *short_w = "";
  static char wname[NW][64];
  static struct {
    double fob, incl, shrt, foo;
    char fin[48];
    bool skip;
  } det[NW];
  int nskip = 0;
  size_t nfoo = 0;
  int w = 0;
  if (!o->json)
    printf("tuner on replayed traces: %s, %d trace files (%d recorded), %d seeds per workload\n"
           "%-5s %-14s %10s  %8s %8s %8s %8s  %s\n",
           acl_land_name(l), acl_land_traces(l), acl_land_traces_recorded(l), reps, "load",
           "collective", "bytes", "final/b",
           "incl/b", "short/b", "final/o", "final decision (runs as)");
  for (int regime = 0; regime < 2; regime++)
    for (int ci = 0; ci < 3; ci++)
      for (int z = 0; z < NS; z++, w++) {
        double interf = regime ? 1.0 : 0.0;
        double fob = 0, incl = 0, shrt = 0, fo = 0;
        snprintf(wname[w], sizeof wname[w], "%s %s %llu", regime ? "gemm" : "iso",
                 acl_coll_name(colls[ci]), (unsigned long long)sizes[z]);
        acl_candidate_t dflt;
        acl_land_nccl_default(l, colls[ci], sizes[z], 2, &dflt);
        det[w].skip = !isfinite(acl_land_time(l, colls[ci], sizes[z], 2, &dflt, interf)) ||
                      !acl_land_trace_covers(l, colls[ci], (double)sizes[z], regime != 0);
        if (det[w].skip) { /* not recorded: no default to compare with */
          nskip++;
          continue;
        }
        rres_t r = {0}, rs;
        for (int rep = 0; rep < reps; rep++) {
          uint64_t seed = acl_bench_mix(o->seed * 1000003ull + (uint64_t)(rep * 131 + w * 7));
          replay_one(l, o->samples, colls[ci], sizes[z], interf, seed, LONG_CALLS, s, &r);
          replay_one(l, o->samples, colls[ci], sizes[z], interf, acl_bench_mix(seed + 1),
                     SHORT_CALLS, s, &rs);
          fob += r.fob / reps;
          incl += r.incl / reps;
          shrt += rs.incl / reps;
          fo += r.foo / reps;
          foo[nfoo++] = r.foo;
        }
        if (fob < fob_min) {
          fob_min = fob;
          fob_w = wname[w];
        }
        if (incl < incl_min) {
          incl_min = incl;
          incl_w = wname[w];
        }
        if (shrt < short_min) {
          short_min = shrt;
          short_w = wname[w];
        }
        acl_candidate_t ran = r.final;
        ran.nchannels = (int16_t)acl_land_exec_channels(l, colls[ci], sizes[z], ran.algo, ran.proto,
                                                        ran.nchannels);
        det[w].fob = fob;
        det[w].incl = incl;
        det[w].shrt = shrt;
        det[w].foo = fo;
        acl_candidate_str(&ran, det[w].fin, sizeof det[w].fin);
        if (!o->json) {
          printf("%-5s %-14s %10llu  %8.3f %8.3f %8.3f %8.3f  %s\n", regime ? "gemm" : "iso",
                 acl_coll_name(colls[ci]), (unsigned long long)sizes[z], fob, incl, shrt, fo,
                 det[w].fin);
        }
      }
  if (nfoo == 0) {
    fprintf(stderr,
            "autoccl-sim --bench: %s has no workload with NCCL's default recorded "
            "(a default run with the probe, docs/trace.md)\n",
            acl_land_name(l));
    free(foo);
    free(s);
    acl_land_destroy(l);
    return 2;
  }
  qsort(foo, nfoo, sizeof *foo, cmp_d);
  double foo_med = nfoo ? foo[nfoo / 2] : NAN;
  double foo_p5 = nfoo ? foo[(size_t)(0.05 * (double)(nfoo - 1))] : NAN;
  bool ok = fob_min >= T_FOB_MIN && incl_min >= T_INCL_MIN && short_min >= T_SHORT_MIN &&
            foo_med >= T_FOO_MEDIAN && foo_p5 >= T_FOO_P5;
  if (o->json) {
    printf("{\"landscape\":\"%s\",\"traces\":%d,\"traces_recorded\":%d,\"workloads\":%d,"
           "\"runs\":%zu,\"per_workload\":[",
           acl_land_name(l), acl_land_traces(l), acl_land_traces_recorded(l), NW - nskip, nfoo);
    /* per workload, in the table's order (scripts/replay-fidelity.py) */
    bool first = true;
    for (int i = 0; i < NW; i++) {
      if (det[i].skip)
        continue;
      printf("%s{\"workload\":\"%s\",\"final_over_baseline\":", first ? "" : ",", wname[i]);
      jnum(det[i].fob);
      printf(",\"incl_over_baseline\":");
      jnum(det[i].incl);
      printf(",\"short_run_over_baseline\":");
      jnum(det[i].shrt);
      printf(",\"final_over_oracle\":");
      jnum(det[i].foo);
      printf(",\"final\":\"%s\"}", det[i].fin);
      first = false;
    }
    printf("],\"final_over_baseline_min\":");
    jnum(fob_min);
    printf(",\"final_over_baseline_min_at\":\"%s\",\"incl_over_baseline_min\":", fob_w);
    jnum(incl_min);
    printf(",\"incl_over_baseline_min_at\":\"%s\",\"short_run_over_baseline_min\":", incl_w);
    jnum(short_min);
    printf(",\"short_run_over_baseline_min_at\":\"%s\",\"final_over_oracle_median\":", short_w);
    jnum(foo_med);
    printf(",\"final_over_oracle_p5\":");
    jnum(foo_p5);
    printf(",\"targets\":{\"final_over_baseline_min\":%.2f,\"incl_over_baseline_min\":%.2f,"
           "\"short_run_over_baseline_min\":%.2f,\"final_over_oracle_median\":%.2f,"
           "\"final_over_oracle_p5\":%.2f},\"targets_met\":%s}\n",
           T_FOB_MIN, T_INCL_MIN, T_SHORT_MIN, T_FOO_MEDIAN, T_FOO_P5, ok ? "true" : "false");
  } else {
    printf("final/baseline min %.3f (%s; target >= %.2f)\n", fob_min, fob_w, T_FOB_MIN);
    printf("incl/baseline min %.3f over %d calls (%s; target >= %.2f)\n", incl_min, LONG_CALLS,
           incl_w, T_INCL_MIN);
    printf("short run/baseline min %.3f over %d calls (%s; target >= %.2f)\n", short_min,
           SHORT_CALLS, short_w, T_SHORT_MIN);
    printf("final/oracle median %.3f (target >= %.2f), p5 %.3f (target >= %.2f)\n", foo_med,
           T_FOO_MEDIAN, foo_p5, T_FOO_P5);
    printf("targets %s\n", ok ? "met" : "MISSED");
  }
  free(foo);
  free(s);
  acl_land_destroy(l);
  return ok ? 0 : 1;
}
