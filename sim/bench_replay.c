/* The tuner benchmark on replayed traces (`autoccl-sim --bench --landscape
 * h200-traces`, docs/trace.md "Targets on replay"): the search is driven as
 * in sim/bench.c (through consensus, tuner/drive), but every sample is a recorded iteration (outliers, skew
 * between ranks), a decision runs as what NCCL ran (clamped channels), the
 * first use of an algorithm or of more channels pays its connection set-up, and a call pays the
 * profiler events' cost when it carries events: 1 call in 2^shift, the
 * search's published sampling rule that the plugin applies to NCCL's mask
 * (acl_search_sample_shift; only those calls give samples).
 *
 * Per workload (isolated and under GEMM x AllGather, ReduceScatter,
 * AllReduce x every recorded size) and seed:
 *   final_over_baseline  NCCL default's median / the final decision's, at
 *                        the end of a long run: 350 calls and at least
 *                        --run-seconds of NCCL's time (the GPU's long runs)
 *   incl_over_baseline   expected time of 350 default calls / of the 350
 *                        calls of a run (exploration, set-up, events)
 *   short_run            the same over a 200-call run
 *   tail_incl            the same over the long run's last 350 calls (the
 *                        GPU's long runs time those after their tuning time)
 *   final_over_oracle    best reachable config's median / the final's (long run)
 * A run that has not decided by its end is judged as the GPU's long runs
 * time it: by the median of its last TIMED_CALLS calls, whatever ran them
 * (NCCL's choice, a candidate, the explored pick in a wait). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/bench_int.h"
#include "sim/landscape.h"
#include "tuner/drive/drive.h"

#define T_FOB_MIN 0.99
#define T_INCL_MIN 0.97
#define T_SHORT_MIN 0.97
#define T_FOO_MEDIAN 0.98
#define T_FOO_P5 0.95
#define LONG_CALLS 350
#define TIMED_CALLS 50 /* the GPU's timed calls after its warm-up */
#define SHORT_CALLS 200
#define MAX_CALLS 1000000 /* a long run's cap: 2 s of 64 KiB calls is 200,000 */
#define MAX_LAG 4
/* One H200's sample lag (the replay's default, --sample-lag overrides):
 * calls of the host's lead where the GPU is the slower, and where the host
 * is; the host's time to launch a call, per launch model. */
#define ONE_GPU_QUEUE_CALLS 1000
#define ONE_GPU_HOST_BOUND_CALLS 16
#define ONE_GPU_LAUNCH_PROCS_S 16e-6
#define ONE_GPU_LAUNCH_SINGLE_S 25e-6
#define RANK_SKEW 0.3 /* ranks that arrive early measure up to 30 % more */
/* A CUPTI window's samples reach the search this many calls after their
 * call (one H100, one process per rank: 4 ms at 1 MiB AllReduce, ~300
 * calls; 102 ms at 256 MiB, ~116 calls), not behind NCCL's launch queue. */
#define WINDOW_LAG_CALLS 128

/* CUPTI's windows of one run, in calls (tuner/drive's window_*). */
typedef struct rwin {
  uint32_t calls, period, phase;
} rwin_t;

typedef struct rres {
  double fob, incl, foo;
  double tail; /* incl over the run's last LONG_CALLS calls */
  acl_candidate_t final, oracle, deflt;
} rres_t;

/* One seed of one workload, for --worst and --csv. */
typedef struct rrow {
  int w, rep;
  double shrt;  /* the short run's incl */
  rres_t r, ri; /* the long run, and the LONG_CALLS-call run */
} rrow_t;

/* Calls of the step [k, end) from call `from` on. */
static uint64_t calls_from(uint64_t k, uint64_t end, uint64_t from)
{
  return end > from ? end - (k > from ? k : from) : 0;
}

/* One run of `calls` calls through consensus (tuner/drive); returns the
 * ratios. */
static int replay_one(const acl_landscape_t *l, int samples, int buffer, int lag,
                      const rwin_t *win, int coll, uint64_t nbytes, double interf, uint64_t seed,
                      int calls, rres_t *out)
{
  const int nranks = 2;
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.samples_per_cand = samples;
  acl_drive_params_t dp = {.coll = coll,
                           .nbytes = nbytes,
                           .nranks = nranks,
                           .cfg = &cfg,
                           .max_lag = MAX_LAG,
                           .skew = RANK_SKEW,
                           .buffer = buffer,
                           .lag_calls = lag,
                           .window_calls = win->calls,
                           .window_period = win->period,
                           .window_phase = win->phase,
                           .window_lag_calls = win->calls ? WINDOW_LAG_CALLS : 0,
                           .seed = seed};
  acl_land_cost_table(l, coll, nbytes, nranks, dp.cost);
  char err[256] = "";
  acl_drive_t *dr = acl_drive_create(&dp, err, sizeof err);
  if (!dr) {
    fprintf(stderr, "autoccl-sim --bench: %s\n", err);
    return -1;
  }
  acl_candidate_t def;
  acl_land_nccl_default(l, coll, nbytes, nranks, &def);
  double t_base = acl_land_time(l, coll, nbytes, nranks, &def, interf);
  double m_base = acl_land_mean_time(l, coll, nbytes, nranks, &def, interf);
  double ev = acl_land_event_seconds(l, coll, nbytes);
  int conn[ACL_NUM_ALGO] = {0}; /* channels connected per algorithm */
  acl_candidate_t orc;
  double t_orc = acl_land_oracle(l, coll, nbytes, nranks, interf, &orc);
  int def_ch = acl_land_exec_channels(l, coll, nbytes, def.algo, def.proto, 0);
  conn[def.algo] = def_ch; /* ran before */
  uint64_t rng = acl_bench_mix(seed);
  /* the steps over the run's last TIMED_CALLS calls: each one's config's
   * median time and its calls there (a ring: one step is at least a call) */
  struct {
    acl_candidate_t c;
    double t;
    uint32_t n;
  } timed[TIMED_CALLS];
  int ntimed = 0;
  uint64_t timed_from = calls > TIMED_CALLS ? (uint64_t)(calls - TIMED_CALLS) : 0;
  double spent = 0, tail = 0;
  uint64_t k = 0, tail_from = calls > LONG_CALLS ? (uint64_t)(calls - LONG_CALLS) : 0;
  int rc = 0;
  while (k < (uint64_t)calls) {
    acl_drive_step_t st;
    if (acl_drive_next(dr, (uint64_t)calls - k, &st, err, sizeof err) != 0) {
      fprintf(stderr, "autoccl-sim --bench: %s\n", err);
      rc = -1;
      break;
    }
    acl_candidate_t run = st.d.cand;
    if (run.algo == ACL_ALGO_NCCL)
      run = def;
    double mean = acl_land_mean_time(l, coll, nbytes, nranks, &run, interf);
    /* events (and a sample) only on the step's first call, by the plugin's
     * sampling rule (tuner/drive) */
    double cost = mean * st.n + (st.events ? ev : 0.0);
    int need = acl_land_exec_channels(l, coll, nbytes, run.algo, run.proto, run.nchannels);
    if (need > conn[run.algo]) {
      cost += acl_land_connect_seconds(l, coll, nbytes, interf, run.algo, conn[run.algo], need);
      conn[run.algo] = need;
    }
    spent += cost;
    uint64_t end = k + st.n < (uint64_t)calls ? k + st.n : (uint64_t)calls;
    /* the part of the step in the tail, prorated */
    tail += cost * (double)calls_from(k, end, tail_from) / (double)st.n;
    uint64_t in_timed = calls_from(k, end, timed_from);
    if (in_timed > 0) {
      timed[ntimed % TIMED_CALLS].c = run;
      timed[ntimed % TIMED_CALLS].t = acl_land_time(l, coll, nbytes, nranks, &run, interf);
      timed[ntimed % TIMED_CALLS].n = (uint32_t)in_timed;
      ntimed++;
    }
    if (st.events) {
      double t = acl_land_draw(l, coll, nbytes, nranks, &run, interf, acl_bench_mix(rng + k), NULL);
      acl_drive_ran_t ran = {run.algo, run.proto, need}; /* the Coll event */
      acl_drive_sample(dr, &st, t, interf > 0 ? (float)interf : -1.0f, &ran);
    }
    k += st.n;
  }
  acl_search_report_t rep;
  if (rc == 0 && acl_drive_report(dr, &rep) != 0) {
    fprintf(stderr, "autoccl-sim --bench: no search state after %d calls\n", calls);
    rc = -1;
  }
  acl_drive_destroy(dr);
  if (rc != 0)
    return rc;
  /* a decision, else what ran the last TIMED_CALLS calls: the config of
   * their median call (the shortest time that, with the shorter ones, ran
   * half of them) */
  out->final = acl_phase_decided(rep.phase) ? rep.current : def;
  if (!acl_phase_decided(rep.phase) && ntimed > 0) {
    int m = ntimed < TIMED_CALLS ? ntimed : TIMED_CALLS, med = -1;
    uint32_t total = 0;
    for (int i = 0; i < m; i++)
      total += timed[i].n;
    for (int i = 0; i < m; i++) {
      uint32_t upto = 0;
      for (int j = 0; j < m; j++)
        if (timed[j].t <= timed[i].t)
          upto += timed[j].n;
      if (2 * upto >= total && (med < 0 || timed[i].t < timed[med].t))
        med = i;
    }
    if (med >= 0)
      out->final = timed[med].c;
  }
  if (out->final.algo == ACL_ALGO_NCCL)
    out->final = def;
  double t_fin = acl_land_time(l, coll, nbytes, nranks, &out->final, interf);
  out->oracle = orc;
  out->deflt = def;
  out->fob = t_base / t_fin;
  out->foo = t_orc / t_fin;
  out->incl = m_base * calls / spent;
  out->tail = tail > 0 ? m_base * (double)(calls - tail_from) / tail : NAN;
  return 0;
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

static int cmp_row_foo(const void *a, const void *b)
{
  return cmp_d(&((const rrow_t *)a)->r.foo, &((const rrow_t *)b)->r.foo);
}

/* --csv: one row per seed of every workload; 0, or -1 when it cannot be
 * written (said on stderr). */
static int write_rows(const char *path, const rrow_t *rows, size_t n, char (*wname)[64])
{
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "autoccl-sim --bench: cannot write '%s'\n", path);
    return -1;
  }
  fprintf(f, "workload,seed,default,final,oracle,final_over_baseline,final_over_oracle,"
             "incl_over_baseline,short_run_over_baseline,tail_incl_over_baseline\n");
  for (size_t i = 0; i < n; i++) {
    const rrow_t *x = &rows[i];
    char d[48], fi[48], o[48];
    fprintf(f, "%s,%d,%s,%s,%s,%.5f,%.5f,%.5f,%.5f,%.5f\n", wname[x->w], x->rep,
            acl_candidate_str(&x->r.deflt, d, sizeof d),
            acl_candidate_str(&x->r.final, fi, sizeof fi),
            acl_candidate_str(&x->r.oracle, o, sizeof o), x->r.fob, x->r.foo, x->ri.incl, x->shrt,
            x->r.tail);
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "autoccl-sim --bench: error writing '%s'\n", path);
    return -1;
  }
  return 0;
}

/* --worst: the k runs furthest from the oracle (rows sorted by it). */
static void print_worst(const rrow_t *rows, size_t n, int k, char (*wname)[64])
{
  printf("\nworst %d runs by final/oracle:\n", k);
  for (size_t i = 0; i < n && i < (size_t)k; i++) {
    char d[48], fi[48], o[48];
    printf("  %-28s seed %-3d def %-18s final %-18s oracle %-18s f/o %.4f f/b %.4f\n",
           wname[rows[i].w], rows[i].rep, acl_candidate_str(&rows[i].r.deflt, d, sizeof d),
           acl_candidate_str(&rows[i].r.final, fi, sizeof fi),
           acl_candidate_str(&rows[i].r.oracle, o, sizeof o), rows[i].r.foo, rows[i].r.fob);
  }
}

int acl_sim_bench_replay(const acl_bench_opts_t *o)
{
  char err[512] = "";
  acl_landscape_t *l = acl_land_create_spec_traces(o->landscape, err, sizeof err);
  if (!l) {
    fprintf(stderr, "autoccl-sim --bench: landscape %s: %s\n", o->landscape, err);
    return 2;
  }
  /* One H200 (2026-12-05, both launch models): nearly every sample came
   * from NCCL's events, one by one, about 1,000 calls after its call (the
   * host's lead over the GPU, a CUDA queue's depth) where a call's GPU
   * time exceeds the host's time to launch one; a few calls after it
   * below that (64-256 KiB; 1 MiB too in one process, whose launches cost
   * more). */
  bool one_gpu = acl_land_is_1gpu_spec(o->landscape);
  double host_launch_s =
      strstr(o->landscape, ":single") ? ONE_GPU_LAUNCH_SINGLE_S : ONE_GPU_LAUNCH_PROCS_S;
  int buffer = o->sample_buffer < 0 ? 0 : o->sample_buffer;
  static const int colls[] = {4, 2, 3}; /* AllReduce, AllGather, ReduceScatter */
  static const uint64_t sizes[] = {65536ull,    262144ull,   1ull << 20,   4ull << 20,
                                   16ull << 20, 64ull << 20, 256ull << 20, 1ull << 30};
  enum { NS = sizeof sizes / sizeof sizes[0], NW = 2 * 3 * NS };
  int reps = o->h200_reps;
  rrow_t *rows = malloc(sizeof(rrow_t) * NW * (size_t)reps);
  if (!rows) {
    acl_land_destroy(l);
    fprintf(stderr, "autoccl-sim --bench: out of memory\n");
    return 2;
  }
  double fob_min = INFINITY, incl_min = INFINITY, short_min = INFINITY;
  const char *fob_w = "", *incl_w = "", *short_w = "";
  static char wname[NW][64];
  static struct {
    double fob, incl, shrt, foo, lincl;
    char fin[48];
    bool skip;
  } det[NW];
  int nskip = 0;
  size_t nrows = 0;
  int w = 0;
  if (!o->json)
    printf("tuner on replayed traces: %s, %d trace files (%d recorded), %d seeds per workload\n"
           "%-5s %-14s %10s  %8s %8s %8s %8s  %s\n",
           acl_land_name(l), acl_land_traces(l), acl_land_traces_recorded(l), reps, "load",
           "collective", "bytes", "final/b", "incl/b", "short/b", "final/o",
           "final decision (runs as)");
  for (int regime = 0; regime < 2; regime++)
    for (int ci = 0; ci < 3; ci++)
      for (int z = 0; z < NS; z++, w++) {
        double interf = regime ? 1.0 : 0.0;
        double fob = 0, incl = 0, shrt = 0, fo = 0, lincl = 0;
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
        /* the long run lasts as long as the GPU's long runs, in NCCL's time */
        double t_def = acl_land_mean_time(l, colls[ci], sizes[z], 2, &dflt, interf);
        double want = t_def > 0 ? ceil(o->run_seconds / t_def) : 0.0;
        int long_calls = want > MAX_CALLS ? MAX_CALLS : want > LONG_CALLS ? (int)want : LONG_CALLS;
        rres_t r = {0}, ri, rs;
        int lag = o->sample_lag >= 0      ? o->sample_lag
                  : !one_gpu              ? 0
                  : t_def > host_launch_s ? ONE_GPU_QUEUE_CALLS
                                          : ONE_GPU_HOST_BOUND_CALLS;
        /* the plugin's CUPTI windows in NCCL's calls, at a phase of the
         * run's own: a window covers every call, its samples come soon */
        rwin_t win = {0};
        if (one_gpu && o->window_period_ms > 0 && t_def > 0) {
          double on = ceil(o->window_on_ms * 1e-3 / t_def);
          double per = ceil(o->window_period_ms * 1e-3 / t_def);
          if (per < 1e9 && on < per) {
            win.calls = (uint32_t)on;
            win.period = (uint32_t)per;
          }
        }
        for (int rep = 0; rep < reps; rep++) {
          uint64_t seed = acl_bench_mix(o->seed * 1000003ull + (uint64_t)(rep * 131 + w * 7));
          if (win.calls)
            win.phase = (uint32_t)(acl_bench_mix(seed ^ 0x77696eull) % win.period);
          if (replay_one(l, o->samples, buffer, lag, &win, colls[ci], sizes[z], interf, seed,
                         long_calls, &r) ||
              replay_one(l, o->samples, buffer, lag, &win, colls[ci], sizes[z], interf, seed,
                         LONG_CALLS, &ri) ||
              replay_one(l, o->samples, buffer, lag, &win, colls[ci], sizes[z], interf,
                         acl_bench_mix(seed + 1), SHORT_CALLS, &rs)) {
            free(rows);
            acl_land_destroy(l);
            return 2;
          }
          rows[nrows++] = (rrow_t){.w = w, .rep = rep, .shrt = rs.incl, .r = r, .ri = ri};
          fob += r.fob / reps;
          lincl += r.tail / reps;
          incl += ri.incl / reps;
          shrt += rs.incl / reps;
          fo += r.foo / reps;
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
        det[w].lincl = lincl;
        acl_candidate_str(&ran, det[w].fin, sizeof det[w].fin);
        if (!o->json) {
          printf("%-5s %-14s %10llu  %8.3f %8.3f %8.3f %8.3f  %s\n", regime ? "gemm" : "iso",
                 acl_coll_name(colls[ci]), (unsigned long long)sizes[z], fob, incl, shrt, fo,
                 det[w].fin);
        }
      }
  if (nrows == 0) {
    fprintf(stderr,
            "autoccl-sim --bench: %s has no workload with NCCL's default recorded "
            "(a default run with the probe, docs/trace.md)\n",
            acl_land_name(l));
    free(rows);
    acl_land_destroy(l);
    return 2;
  }
  /* the CSV in the table's order, then the runs by final/oracle */
  int rc_rows = o->csv ? write_rows(o->csv, rows, nrows, wname) : 0;
  qsort(rows, nrows, sizeof *rows, cmp_row_foo);
  double foo_med = rows[nrows / 2].r.foo;
  double foo_p5 = rows[(size_t)(0.05 * (double)(nrows - 1))].r.foo;
  /* the targets, each with its figure (the text names the missed ones) */
  const struct {
    const char *name;
    double v, t;
  } tg[] = {{"final/baseline min", fob_min, T_FOB_MIN},
            {"incl/baseline min", incl_min, T_INCL_MIN},
            {"short run/baseline min", short_min, T_SHORT_MIN},
            {"final/oracle median", foo_med, T_FOO_MEDIAN},
            {"final/oracle p5", foo_p5, T_FOO_P5}};
  enum { NTG = sizeof tg / sizeof tg[0] };
  bool ok = true;
  for (int k = 0; k < NTG; k++)
    ok = ok && tg[k].v >= tg[k].t;
  if (o->json) {
    printf("{\"landscape\":\"%s\",\"traces\":%d,\"traces_recorded\":%d,\"workloads\":%d,"
           "\"runs\":%zu,\"per_workload\":[",
           acl_land_name(l), acl_land_traces(l), acl_land_traces_recorded(l), NW - nskip, nrows);
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
      printf(",\"tail_incl_over_baseline\":");
      jnum(det[i].lincl);
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
    if (ok) {
      printf("targets met\n");
    } else {
      /* which, to four places: a p5 of 0.9496 prints as 0.950 above */
      const char *sep = " ";
      printf("targets MISSED:");
      for (int k = 0; k < NTG; k++)
        if (!(tg[k].v >= tg[k].t)) {
          printf("%s%s %.4f < %.2f", sep, tg[k].name, tg[k].v, tg[k].t);
          sep = "; ";
        }
      printf("\n");
    }
    if (o->worst > 0)
      print_worst(rows, nrows, o->worst, wname);
  }
  free(rows);
  acl_land_destroy(l);
  return rc_rows ? 2 : ok ? 0 : 1;
}
