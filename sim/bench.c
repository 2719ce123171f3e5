/* Tuner benchmark runner: plays each workload through rank consensus as the
 * plugin does (tuner/drive: decisions per call, samples from the calls that
 * carry profiler events, late by a few calls, fed by every rank) against
 * landscapes, and measures what the search ends up choosing. */
#include "sim/bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "sim/bench_int.h"
#include "sim/landscape.h"
#include "tuner/drive/drive.h"

#define BENCH_MAX_LAG 4 /* samples arrive 0..3 calls late (GPU behind host) */
#define BENCH_MAX_CALLS 50000000ull
#define BENCH_OUTLIER_P 0.02
#define BENCH_RANK_SKEW 0.3 /* ranks that arrive early measure up to 30 % more */

uint64_t acl_bench_mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

double acl_bench_unif(uint64_t *s)
{
  *s = acl_bench_mix(*s + 0x9e3779b97f4a7c15ull);
  return (double)(*s >> 11) * 0x1.0p-53;
}

static void usage(FILE *f, const char *prog)
{
  fprintf(f,
          "usage: %s [--json] [--landscapes N] [--seed S] [--samples K] [--noise R]\n"
          "          [--calls C] [--run-seconds S] [--h200-reps R] [--worst N] [--no-hint]\n"
          "          [--csv FILE] [--landscape h200-traces|h200-1gpu-traces|h100-1gpu-traces]\n"
          "          [--nccl 2.28|2.30] [--chunk-landscape sensitive|flat]\n"
          "          [--sample-buffer N] [--sample-lag N] [--cupti-window ON/PERIOD]\n"
          "  --landscapes N  synthetic landscapes, 0..100000 (default 1000)\n"
          "  --seed S        random seed, unsigned integer (default 1)\n"
          "  --samples K     samples per candidate, 2..16 (default 5)\n"
          "  --noise R       relative noise sd, 0..0.5 (default 0.10)\n"
          "  --calls C       at least C calls per run, 100..100000 (default 1000)\n"
          "  --run-seconds S and at least S s of collective time, 0..100 (default 2;\n"
          "                  exploration is paid from a share of the time so far)\n"
          "  --h200-reps R   noise seeds per H200 workload, 1..1000 (default 20)\n"
          "  --worst N       also list the N worst runs (default 0)\n"
          "  --no-hint       do not tell the search NCCL's channel count\n"
          "  --csv FILE      write one row per run to FILE\n"
          "  --landscape L   h200-traces, h200-1gpu-traces (one H200, 2 ranks, NCCL\n"
          "                  2.30) or h100-1gpu-traces (the same on one H100), each\n"
          "                  with :single for one process: the tuner on replayed traces\n"
          "                  instead (docs/trace.md; --h200-reps seeds per workload)\n"
          "  --sample-buffer N  replay: each rank's samples arrive in batches of N, at\n"
          "                  its own phase, as CUPTI's buffers deliver them (default\n"
          "                  0: each when the GPU is done)\n"
          "  --sample-lag N  replay: every sample also arrives N calls after its call,\n"
          "                  in call order, as NCCL's events did on one H200 (default:\n"
          "                  for the 1gpu traces 1,000, the host's lead over the GPU,\n"
          "                  where the GPU is the slower, else 16; 0 otherwise)\n"
          "  --cupti-window ON/PERIOD  replay of the 1gpu traces: CUPTI's windows in ms,\n"
          "                  every call in one sampled and its sample 128 calls late, at\n"
          "                  a phase drawn per run (default 0/0: none, NCCL's events\n"
          "                  alone; the plugin's own rule is AUTOCCL_CUPTI_WINDOW's\n"
          "                  100/5000)\n"
          "  --nccl V        2.28 (default: tuner v5, no chunk axis) or 2.30 (tuner v6:\n"
          "                  chunk size is a search axis; each synthetic run is also\n"
          "                  played with the axis held, on the same landscape and seed)\n"
          "  --chunk-landscape sensitive|flat  with --nccl 2.30: synthetic landscapes\n"
          "                  where chunk size matters (default) or changes nothing\n",
          prog);
}

static int parse_opts(int argc, char **argv, acl_bench_opts_t *o)
{
  const char *prog = argc > 0 ? argv[0] : "autoccl-tunerbench";
  memset(o, 0, sizeof *o);
  o->landscapes = 1000;
  o->seed = 1;
  o->samples = 5;
  o->noise = 0.10;
  o->calls = 1000;
  o->run_seconds = 2.0;
  o->h200_reps = 20;
  o->chunk_amp = 1.0;
  o->sample_buffer = -1;
  o->sample_lag = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    if (strcmp(a, "--bench") == 0)
      continue;
    if (strcmp(a, "--json") == 0) {
      o->json = true;
      continue;
    }
    if (strcmp(a, "--no-hint") == 0) {
      o->no_hint = true;
      continue;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout, prog);
      return 1;
    }
    if (!v) {
      fprintf(stderr, "%s: unknown option or missing value: '%s'\n", prog, a);
      usage(stderr, prog);
      return -1;
    }
    i++;
    if (strcmp(a, "--landscapes") == 0 && acl_parse_int(v, 0, 100000, &n)) {
      o->landscapes = (int)n;
    } else if (strcmp(a, "--samples") == 0 && acl_parse_int(v, 2, 16, &n)) {
      o->samples = (int)n;
    } else if (strcmp(a, "--calls") == 0 && acl_parse_int(v, 100, 100000, &n)) {
      o->calls = (int)n;
    } else if (strcmp(a, "--worst") == 0 && acl_parse_int(v, 0, 1000, &n)) {
      o->worst = (int)n;
    } else if (strcmp(a, "--sample-lag") == 0 && acl_parse_int(v, 0, ACL_DRIVE_MAX_BUFFER, &n)) {
      o->sample_lag = (int)n;
    } else if (strcmp(a, "--sample-buffer") == 0 && acl_parse_int(v, 0, ACL_DRIVE_MAX_BUFFER, &n)) {
      o->sample_buffer = (int)n;
    } else if (strcmp(a, "--cupti-window") == 0 &&
               (strcmp(v, "0/0") == 0 ||
                acl_config_window_ms(v, &o->window_on_ms, &o->window_period_ms))) {
      if (strcmp(v, "0/0") == 0)
        o->window_on_ms = o->window_period_ms = 0;
    } else if (strcmp(a, "--h200-reps") == 0 && acl_parse_int(v, 1, 1000, &n)) {
      o->h200_reps = (int)n;
    } else if (strcmp(a, "--nccl") == 0 && (!strcmp(v, "2.28") || !strcmp(v, "2.30"))) {
      o->nccl230 = strcmp(v, "2.30") == 0;
    } else if (strcmp(a, "--chunk-landscape") == 0 &&
               (!strcmp(v, "sensitive") || !strcmp(v, "flat"))) {
      o->chunk_amp = strcmp(v, "flat") == 0 ? 0.0 : 1.0;
    } else if (strcmp(a, "--csv") == 0 && v[0]) {
      o->csv = v;
    } else if (strcmp(a, "--landscape") == 0) {
      if (!acl_land_is_trace_spec(v)) {
        fprintf(stderr,
                "%s: --bench --landscape takes h200-traces, h200-1gpu-traces or "
                "h100-1gpu-traces, each optionally with :single (the default bench runs h200 "
                "and synthetic landscapes), got '%s'\n",
                prog, v);
        return -1;
      }
      o->landscape = v;
    } else if (strcmp(a, "--seed") == 0) {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(v, &end, 10);
      if (errno || *end || end == v || v[0] == '-') {
        fprintf(stderr, "%s: --seed wants an unsigned integer, got '%s'\n", prog, v);
        return -1;
      }
      o->seed = s;
    } else if (strcmp(a, "--run-seconds") == 0) {
      char *end;
      double r = strtod(v, &end);
      if (*end || end == v || !(r >= 0.0 && r <= 100.0)) {
        fprintf(stderr, "%s: --run-seconds wants a number in 0..100, got '%s'\n", prog, v);
        return -1;
      }
      o->run_seconds = r;
    } else if (strcmp(a, "--noise") == 0) {
      char *end;
      double r = strtod(v, &end);
      if (*end || end == v || !(r >= 0.0 && r <= 0.5)) {
        fprintf(stderr, "%s: --noise wants a number in 0..0.5, got '%s'\n", prog, v);
        return -1;
      }
      o->noise = r;
    } else {
      fprintf(stderr, "%s: bad option or value: %s '%s'\n", prog, a, v);
      usage(stderr, prog);
      return -1;
    }
  }
  return 0;
}

/* What NCCL ran for decision c (its Coll event): its own choice resolved,
 * channels clamped to those it built. */
static acl_drive_ran_t ran_as(const acl_landscape_t *l, int coll, uint64_t nbytes,
                              const acl_candidate_t *c, const acl_candidate_t *deflt)
{
  if (c->algo == ACL_ALGO_NCCL)
    return (acl_drive_ran_t){deflt->algo, deflt->proto, deflt->nchannels};
  return (acl_drive_ran_t){
      c->algo, c->proto, acl_land_exec_channels(l, coll, nbytes, c->algo, c->proto, c->nchannels)};
}

/* One workload tuned for o->calls calls, through consensus (tuner/drive). */
static int run_one(const acl_landscape_t *l, const acl_bench_opts_t *o, int coll, uint64_t nbytes,
                   int nranks, double interf, uint64_t seed, int chunk_axis, acl_bench_run_t *r)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.samples_per_cand = o->samples;
  acl_drive_params_t dp = {.coll = coll,
                           .nbytes = nbytes,
                           .nranks = nranks,
                           .cfg = &cfg,
                           .chunk_axis = chunk_axis,
                           .max_lag = BENCH_MAX_LAG,
                           .skew = BENCH_RANK_SKEW,
                           .seed = seed};
  acl_land_cost_table(l, coll, nbytes, nranks, dp.cost);
  char err[256] = "";
  acl_drive_t *dr = acl_drive_create(&dp, err, sizeof err);
  if (!dr) {
    fprintf(stderr, "tunerbench: %s\n", err);
    return -1;
  }

  memset(r, 0, sizeof *r);
  r->coll = (uint8_t)coll;
  r->nbytes = nbytes;
  r->nranks = (uint8_t)nranks;
  r->interference = interf;
  acl_land_nccl_default(l, coll, nbytes, nranks, &r->deflt);
  double t_oracle = acl_land_oracle(l, coll, nbytes, nranks, interf, &r->oracle);

  uint64_t rng = acl_bench_mix(seed);
  /* A run lasts at least o->calls calls and o->run_seconds of collective
   * time (the exploration budget is a share of time, not of calls). Only
   * the calls that carry profiler events give a sample; the others only
   * cost their time. */
  uint64_t k = 0;
  double elapsed = 0.0;
  bool prov_seen = false;
  int rc = 0;
  while ((k < (uint64_t)o->calls || elapsed < o->run_seconds) && k < BENCH_MAX_CALLS) {
    acl_drive_step_t st;
    /* a step ends at o->calls, and past it where run_seconds is reached */
    uint64_t left = k < (uint64_t)o->calls ? (uint64_t)o->calls - k : BENCH_MAX_CALLS - k;
    if (acl_drive_next(dr, left, &st, err, sizeof err) != 0) {
      fprintf(stderr, "tunerbench: %s\n", err);
      rc = -1;
      break;
    }
    const acl_candidate_t *c = &st.d.cand;
    if (!prov_seen && acl_phase_decided((acl_phase_t)st.d.phase)) {
      acl_search_report_t pr;
      if (acl_drive_report(dr, &pr) == 0) {
        prov_seen = true;
        r->prov_over_baseline = acl_land_time(l, coll, nbytes, nranks, &r->deflt, interf) /
                                acl_land_time(l, coll, nbytes, nranks, &pr.current, interf);
      }
    }
    double t = acl_land_time(l, coll, nbytes, nranks, c, interf);
    uint32_t n = st.n;
    if (k >= (uint64_t)o->calls && elapsed + t * n > o->run_seconds && n > 1) {
      /* the run ends here: calls past run_seconds are not counted */
      uint64_t need = (uint64_t)((o->run_seconds - elapsed) / t) + 1;
      n = need < n ? (uint32_t)need : n;
    }
    elapsed += t * n;
    if (st.events) {
      double noisy = t * acl_land_noise(&rng, o->noise);
      if (acl_bench_unif(&rng) < BENCH_OUTLIER_P)
        noisy *= 1.5 + 1.5 * acl_bench_unif(&rng); /* stragglers: a slow rank, a page fault */
      float ov = (float)(interf + (interf > 0.0 ? 0.05 * (acl_bench_unif(&rng) - 0.5) : 0.0));
      acl_drive_ran_t ran = ran_as(l, coll, nbytes, c, &r->deflt);
      if (o->no_hint && c->algo == ACL_ALGO_NCCL)
        ran.nchannels = 0; /* --no-hint: the search never learns NCCL's count */
      acl_drive_sample(dr, &st, noisy, ov, &ran);
    }
    k += n;
  }
  r->calls = k;
  acl_search_report_t rep;
  if (rc == 0 && acl_drive_report(dr, &rep) != 0) {
    fprintf(stderr, "tunerbench: no search state after %llu calls\n", (unsigned long long)k);
    rc = -1;
  }
  acl_drive_destroy(dr);
  if (rc != 0)
    return rc;
  r->converged = acl_phase_decided(rep.phase);
  /* Not converged by the end: the exploration budget had it wait, which
   * runs NCCL's own choice, so that is what the job gets (the best measured
   * so far is only a guess, unvalidated). */
  r->final = r->converged ? rep.current : r->deflt;
  r->calls_to_converge = (uint32_t)rep.calls_to_converge;
  r->calls_to_final = (uint32_t)rep.calls_to_decision;
  r->calls_to_verdict = (uint32_t)rep.calls_to_verdict;
  r->validating = rep.validating;
  r->cands_evaluated = rep.candidates_evaluated;
  r->retunes = rep.retunes;
  double t_final = acl_land_time(l, coll, nbytes, nranks, &r->final, interf);
  double t_base = acl_land_time(l, coll, nbytes, nranks, &r->deflt, interf);
  r->final_over_oracle = t_oracle / t_final;
  r->final_over_baseline = t_base / t_final;
  r->oracle_over_baseline = t_base / t_oracle;
  r->overhead = (elapsed - t_final * (double)k) / (t_final * (double)k);
  return 0;
}

int acl_sim_bench_main(int argc, char **argv)
{
  acl_bench_opts_t o;
  int rc = parse_opts(argc, argv, &o);
  if (rc != 0)
    return rc < 0 ? 2 : 0;
  if (o.landscape)
    return acl_sim_bench_replay(&o);
  double t0 = acl_mono_s();

  char err[256] = "";
  acl_landscape_t *h200 = acl_land_create_h200(err, sizeof err);
  if (!h200) {
    fprintf(stderr, "tunerbench: H200 landscape: %s\n", err);
    return 2;
  }
  enum { NSIZES = 10 }; /* 4 KiB .. 1 GiB, x4 */
  size_t nh = (size_t)ACL_NUM_COLL * NSIZES * (size_t)o.h200_reps;
  size_t ns = (size_t)ACL_NUM_COLL * NSIZES * (size_t)o.landscapes;
  acl_bench_run_t *hr = calloc(nh ? nh : 1, sizeof *hr);
  acl_bench_run_t *sr = calloc(ns ? ns : 1, sizeof *sr);
  bool ok = false;
  if (!hr || !sr) {
    fprintf(stderr, "tunerbench: out of memory\n");
    goto out;
  }

  size_t i = 0;
  for (int rep = 0; rep < o.h200_reps; rep++)
    for (int c = 0; c < ACL_NUM_COLL; c++)
      for (int z = 0; z < NSIZES; z++) {
        uint64_t seed = acl_bench_mix(o.seed * 1000003ull + (uint64_t)(rep * 131 + c * 17 + z));
        uint64_t rr = seed;
        /* Half the runs isolated, half under a compute episode. */
        double interf = rep % 2 ? 0.2 + 0.6 * acl_bench_unif(&rr) : 0.0;
        if (run_one(h200, &o, c, 4096ull << (2 * z), 2, interf, seed, o.nccl230, &hr[i++]) != 0)
          goto out;
      }
  fprintf(stderr, "tunerbench: H200 landscape: %zu runs done\n", nh);

  i = 0;
  for (int n = 0; n < o.landscapes; n++) {
    /* Seeds must give disjoint landscape sets: seed ^ (base + n) alone made
     * seeds 1 and 2 the same 1000 landscapes in another order. Seed 1 keeps
     * its landscapes (published figures). */
    uint64_t lseed =
        acl_bench_mix(((o.seed - 1) * 0x9e3779b97f4a7c15ull) ^ 1u ^ (0xabcdefull + (uint64_t)n));
    acl_landscape_t *l = acl_land_create_synth(lseed);
    if (!l) {
      fprintf(stderr, "tunerbench: out of memory\n");
      goto out;
    }
    if (o.nccl230)
      acl_land_chunk_enable(l, lseed, o.chunk_amp);
    uint64_t rr = lseed;
    static const int ranks[] = {2, 4, 8};
    int nranks = ranks[(int)(acl_bench_unif(&rr) * 3)];
    for (int c = 0; c < ACL_NUM_COLL; c++)
      for (int z = 0; z < NSIZES; z++) {
        double interf = acl_bench_unif(&rr) < 0.5 ? 0.0 : 0.2 + 0.6 * acl_bench_unif(&rr);
        uint64_t rseed = acl_bench_mix(lseed + (uint64_t)(c * 16 + z));
        if (o.nccl230) { /* the same run with the axis held, for the side-by-side figures */
          acl_bench_run_t held;
          if (run_one(l, &o, c, 4096ull << (2 * z), nranks, interf, rseed, 0, &held) != 0 ||
              run_one(l, &o, c, 4096ull << (2 * z), nranks, interf, rseed, 1, &sr[i]) != 0) {
            acl_land_destroy(l);
            goto out;
          }
          sr[i].held_final_over_oracle = held.final_over_oracle;
          sr[i].held_overhead = held.overhead;
        } else {
          if (run_one(l, &o, c, 4096ull << (2 * z), nranks, interf, rseed, 0, &sr[i]) != 0) {
            acl_land_destroy(l);
            goto out;
          }
        }
        sr[i++].synthetic = 1;
      }
    acl_land_destroy(l);
    if ((n + 1) % 100 == 0 || n + 1 == o.landscapes)
      fprintf(stderr, "tunerbench: synthetic landscapes: %d/%d\n", n + 1, o.landscapes);
  }
  ok = acl_bench_print(&o, hr, nh, sr, ns, acl_mono_s() - t0);
out:
  free(hr);
  free(sr);
  acl_land_destroy(h200);
  return ok ? 0 : 1;
}
