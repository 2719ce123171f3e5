/* The search on the traces recorded on one H200 with two ranks (NCCL 2.30.7,
 * sim/data/traces/h200-1gpu, the landscape h200-1gpu-traces), driven as the
 * plugin drives it there: the search's own defaults (the plugin sets no
 * channel ceiling), NCCL's own choice hinted from its first Coll event
 * (Ring/Simple with 64 channels from 4 MiB), what NCCL ran reported for
 * every sampled call, samples drawn from the recorded calls (outliers
 * included) and arriving late as CUPTI's do there (about 48 ms, ~1,000
 * calls at 4 MiB), for 2 s of collective time. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/landscape.h"
#include "tuner/drive/drive.h"
#include "tuner/search/search.h"

#define NRANKS 2
#define MAXQ 4096

typedef struct pend {
  int id;
  uint64_t due, call;
  double sec;
} pend_t;

typedef struct run_res {
  double final_s, nccl_s, oracle_s;
  double last_s; /* what the run's last call ran (drive_run only) */
  acl_candidate_t final;
  acl_search_report_t rep;
} run_res_t;

static uint64_t mix(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* NCCL 2.30 does not run every channel count it is asked for, and not as a
 * ceiling either: the plugin's traces there show asked -> ran 12 -> 11 with
 * 32 -> 32 (Ring/LL, 256 KiB), 6 -> 4 with 8 -> 8 and 24 -> 8 (Ring/LL,
 * 64 KiB), 24 -> 22 with 32 -> 32 (Ring/Simple, 4 MiB AllGather). When set,
 * these two roundings apply on top of the landscape's own clamps. */
static bool g_recorded_rounding;
/* Share of the samples that never arrive (a lost event), when set. */
static double g_drop;
/* CUPTI samples every decided call while its window is open, not only
 * those the sampling rule picks (the plugin's source on the GPU). */
static bool g_every;
/* Share of NCCL's choice's samples lost while its decision is validated,
 * on top (one GPU, two ranks: NCCL's 64-channel calls between the
 * decision's lost their events). */
static double g_starve;

static int rounded(int asked)
{
  if (!g_recorded_rounding)
    return asked;
  return asked == 24 ? 22 : asked == 12 ? 11 : asked;
}

/* The run's final (its decision, else NCCL's choice) priced on the
 * landscape, with NCCL's choice and the oracle beside it. */
static void finish(const acl_landscape_t *l, int coll, uint64_t nbytes, const acl_candidate_t *def,
                   run_res_t *out)
{
  out->final = acl_phase_decided(out->rep.phase) ? out->rep.current : *def;
  if (out->final.algo == ACL_ALGO_NCCL)
    out->final = *def;
  out->final_s = acl_land_time(l, coll, nbytes, NRANKS, &out->final, 0.0);
  out->nccl_s = acl_land_time(l, coll, nbytes, NRANKS, def, 0.0);
  acl_candidate_t orc;
  out->oracle_s = acl_land_oracle(l, coll, nbytes, NRANKS, 0.0, &orc);
}

/* What a run ended on, for an assertion's message. */
static const char *outcome(const run_res_t *r, char *buf, size_t n)
{
  snprintf(buf, n, "final %d/%d/%d %.1f us, NCCL %.1f us, oracle %.1f us (phase %d, %u judged)",
           r->final.algo, r->final.proto, r->final.nchannels, r->final_s * 1e6, r->nccl_s * 1e6,
           r->oracle_s * 1e6, (int)r->rep.phase, r->rep.candidates_evaluated);
  return buf;
}

/* One workload for `seconds` of collective time; samples `lag` calls late. */
static void run(const acl_landscape_t *l, int coll, uint64_t nbytes, double seconds, int lag,
                uint64_t seed, run_res_t *out)
{
  static acl_search_t s;
  static pend_t q[MAXQ];
  acl_search_params_t p;
  acl_search_params_default(&p); /* as the consensus layer: no channel ceiling given */
  acl_wkey_t key = {.comm_id = 1, .nbytes = nbytes, .num_pipe_ops = 1, .coll = (uint8_t)coll};
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  acl_land_cost_table(l, coll, nbytes, NRANKS, cost);
  acl_search_init(&s, &p, &key, cost);
  acl_search_restrict(&s, cost);
  acl_candidate_t def;
  acl_land_nccl_default(l, coll, nbytes, NRANKS, &def);
  int nq = 0;
  bool hinted = false;
  double t = 0.0;
  uint64_t k = 0;
  while (t < seconds) {
    acl_candidate_t c;
    uint32_t len = 0;
    int id = acl_search_next(&s, &c, &len);
    uint64_t blk0 = k; /* the latest block's first call (what consensus tells) */
    uint8_t shift = acl_search_sample_shift(&s);
    acl_candidate_t ran = c.algo == ACL_ALGO_NCCL ? def : c;
    int nch = acl_land_exec_channels(l, coll, nbytes, ran.algo, ran.proto, ran.nchannels);
    if (c.algo != ACL_ALGO_NCCL && rounded(nch) != nch)
      ran.nchannels = (int16_t)(nch = rounded(nch));
    for (uint32_t j = 0; j < (len ? len : 1) && t < seconds; j++, k++) {
      double sec = acl_land_draw(l, coll, nbytes, NRANKS, &ran, 0.0, mix(seed + k), NULL);
      t += sec;
      bool ev = g_every || (shift < ACL_SEARCH_SAMPLE_NEVER && (k & ((1ull << shift) - 1)) == 0);
      if (ev) {
        if (c.algo == ACL_ALGO_NCCL && !hinted) { /* the plugin: NCCL's first Coll event */
          acl_search_observe(&s, &(acl_search_obs_t){.cand_id = ACL_SEARCH_CAND_NCCL,
                                                     .seconds = -1.0,
                                                     .ran_algo = def.algo,
                                                     .ran_proto = def.proto,
                                                     .ran_nch = nch});
          hinted = true;
        } else if (c.algo != ACL_ALGO_NCCL && nch < c.nchannels) {
          acl_search_observe(&s,
                             &(acl_search_obs_t){.cand_id = id, .seconds = -1.0, .ran_nch = nch});
        }
        bool lost = (double)(mix(seed * 31 + k) >> 11) * 0x1.0p-53 < g_drop;
        if (nq < MAXQ && !lost)
          q[nq++] = (pend_t){id, k + (uint64_t)lag, k, sec};
      }
      int w = 0;
      for (int i = 0; i < nq; i++) {
        if (q[i].due <= k)
          acl_search_observe(
              &s, &(acl_search_obs_t){.cand_id = q[i].id,
                                      .seconds = q[i].sec,
                                      .overlap = -1.0f,
                                      .ran_algo = -1,
                                      .ran_proto = -1,
                                      .behind = blk0 > q[i].call ? (uint32_t)(blk0 - q[i].call) : 0,
                                      .call = q[i].call + 1});
        else
          q[w++] = q[i];
      }
      nq = w;
    }
  }
  acl_search_report(&s, &out->rep);
  finish(l, coll, nbytes, &def, out);
}

static acl_landscape_t *L;

static void setup(void)
{
  char err[512] = "";
  L = acl_land_create_spec_traces(ACL_LAND_1GPU, err, sizeof err);
  cr_assert_not_null(L, "%s", err);
}

static void teardown(void) { acl_land_destroy(L); }

TestSuite(replay1gpu, .init = setup, .fini = teardown);

/* NCCL built 64 channels and runs Ring/Simple with all of them from 4 MiB;
 * the recorded oracle is Ring/Simple with 32 from 16 MiB up. The channel
 * axis must reach past the search's default ceiling of 32: otherwise the
 * hint is cut to 32, Ring/Simple with 32 channels passes for NCCL's own
 * choice (its samples the baseline's) and is never measured. */
Test(replay1gpu, channels_above_the_default_ceiling)
{
  static const int colls[] = {4, 2, 3}; /* AllReduce, AllGather, ReduceScatter */
  for (int ci = 0; ci < 3; ci++)
    for (uint64_t b = 16u << 20; b <= (256u << 20); b *= 16) {
      run_res_t r;
      run(L, colls[ci], b, 2.0, 1, 7, &r);
      cr_assert(r.oracle_s >= 0.98 * r.final_s,
                "coll %d %llu B: final %d/%d/%d %.1f us, NCCL %.1f us, oracle %.1f us", colls[ci],
                (unsigned long long)b, r.final.algo, r.final.proto, r.final.nchannels,
                r.final_s * 1e6, r.nccl_s * 1e6, r.oracle_s * 1e6);
    }
}

/* The same with samples ~1,000 calls late (CUPTI there): a candidate's
 * samples are waited for, not taken as lost and run again until the
 * exploration's call cap ends the descent on an unjudged candidate. */
Test(replay1gpu, late_samples_are_waited_for)
{
  static const int colls[] = {4, 2, 3};
  for (int ci = 0; ci < 3; ci++) {
    run_res_t r;
    run(L, colls[ci], 4u << 20, 2.0, 1000, 11, &r);
    /* the descent ran (re-runs of late candidates ate its call cap after
     * two points), the decision held (validation gave it up after 768
     * calls, before the first sample of NCCL's choice came) */
    cr_assert(r.rep.candidates_evaluated >= 8 && r.rep.phase == ACL_PHASE_CONVERGED,
              "coll %d: %u candidates judged, phase %d", colls[ci], r.rep.candidates_evaluated,
              (int)r.rep.phase);
    cr_assert(r.final_s <= 0.75 * r.nccl_s && r.oracle_s >= 0.85 * r.final_s,
              "coll %d 4 MiB, lag 1000: final %.1f us, NCCL %.1f us, oracle %.1f us (phase %d)",
              colls[ci], r.final_s * 1e6, r.nccl_s * 1e6, r.oracle_s * 1e6, (int)r.rep.phase);
  }
}

/* Never worse than NCCL's own choice at any recorded size, at either lag. */
Test(replay1gpu, never_slower_than_nccl)
{
  static const int colls[] = {4, 2, 3};
  for (int ci = 0; ci < 3; ci++)
    for (uint64_t b = 65536; b <= (256u << 20); b *= 4)
      for (int lag = 1; lag <= 1000; lag *= 1000) {
        run_res_t r;
        run(L, colls[ci], b, 2.0, lag, 3, &r);
        cr_assert(r.final_s <= 1.01 * r.nccl_s, "coll %d %llu B lag %d: final %.1f us, NCCL %.1f",
                  colls[ci], (unsigned long long)b, lag, r.final_s * 1e6, r.nccl_s * 1e6);
      }
}

/* With NCCL's recorded roundings (24 runs as 22, 12 as 11): a request
 * rounded down says nothing about larger ones. Taking 24 -> 22 for a
 * ceiling made 32, 48 and 64 twins of 24, and 32, the oracle from 4 MiB up
 * there, was never measured. */
Test(replay1gpu, a_rounded_request_is_no_ceiling)
{
  static const int colls[] = {4, 2, 3};
  g_recorded_rounding = true;
  for (int ci = 0; ci < 3; ci++)
    for (uint64_t b = 16u << 20; b <= (64u << 20); b *= 4) {
      run_res_t r;
      run(L, colls[ci], b, 2.0, 1, 5, &r);
      cr_assert(r.oracle_s >= 0.98 * r.final_s,
                "coll %d %llu B: final %d/%d/%d %.1f us, NCCL %.1f us, oracle %.1f us", colls[ci],
                (unsigned long long)b, r.final.algo, r.final.proto, r.final.nchannels,
                r.final_s * 1e6, r.nccl_s * 1e6, r.oracle_s * 1e6);
    }
  g_recorded_rounding = false;
}

/* Samples ~1,000 calls late and one in five lost: a candidate short of a
 * sample or two is judged on the ones it has once the stream shows the
 * rest lost, instead of running again and waiting the lag once more. */
Test(replay1gpu, late_and_lost_samples)
{
  static const int colls[] = {4, 2, 3};
  g_drop = 0.2;
  for (int ci = 0; ci < 3; ci++) {
    run_res_t r;
    run(L, colls[ci], 4u << 20, 2.0, 1000, 13, &r);
    cr_assert(r.rep.phase == ACL_PHASE_CONVERGED && r.oracle_s >= 0.85 * r.final_s,
              "coll %d 4 MiB, lag 1000, 20%% lost: final %d/%d/%d %.1f us, NCCL %.1f us, oracle "
              "%.1f us (phase %d, %u judged)",
              colls[ci], r.final.algo, r.final.proto, r.final.nchannels, r.final_s * 1e6,
              r.nccl_s * 1e6, r.oracle_s * 1e6, (int)r.rep.phase, r.rep.candidates_evaluated);
  }
  g_drop = 0.0;
}

/* 16 MiB with every call sampled ~1,000 calls late, as CUPTI delivered
 * them on the GPU: the search alone reaches the recorded oracle (Ring/Simple
 * with 32 channels). On the GPU the same workload kept NCCL's choice: its
 * refinement ended after 48 challenger blocks (768 calls), so what the
 * search got there differs from what this harness feeds it (the consensus
 * layer's aggregation of both ranks' samples is not played here). */
Test(replay1gpu, refinement_waits_for_late_samples)
{
  static const int colls[] = {4, 2, 3};
  g_every = true;
  for (int ci = 0; ci < 3; ci++) {
    run_res_t r;
    char o[160];
    run(L, colls[ci], 16u << 20, 2.0, 1000, 5, &r);
    cr_assert(r.final_s <= 0.9 * r.nccl_s && r.oracle_s >= 0.95 * r.final_s,
              "coll %d 16 MiB, lag 1000: %s", colls[ci], outcome(&r, o, sizeof o));
  }
}

/* One process on one H200: NCCL's choice 212 us at 64 MiB AllReduce, 32
 * channels 180 us, every sample clean and ~1,000 calls late (the GPU's
 * trace); there the search ended on NCCL's choice. With the lag measured,
 * a candidate waits for its samples instead of being run again (re-runs
 * ate the exploration's call cap), and validation and refinement wait out
 * the lag before calling samples lost: a long run reaches the oracle with
 * samples 1,000 and 2,000 calls late. */
Test(replay1gpu, late_samples_reach_the_oracle_in_a_long_run)
{
  char err[512] = "";
  acl_landscape_t *ls = acl_land_create_spec_traces(ACL_LAND_1GPU ":single", err, sizeof err);
  cr_assert_not_null(ls, "%s", err);
  g_every = true; /* CUPTI sees every call (the GPU's traces) */
  static const int colls[] = {4, 3};
  for (int ci = 0; ci < 2; ci++)
    for (int lag = 1000; lag <= 2000; lag += 1000) {
      run_res_t r;
      char o[160];
      run(ls, colls[ci], 64u << 20, 8.0, lag, 5, &r);
      cr_expect(r.oracle_s >= 0.95 * r.final_s && r.final_s < r.nccl_s,
                "coll %d 64 MiB, lag %d: %s", colls[ci], lag, outcome(&r, o, sizeof o));
    }
  acl_land_destroy(ls);
}

/* 64 MiB, one process per rank: samples ~1,000 calls late (the host 220 ms
 * ahead of its GPU in the benchmark), NCCL's events sampling, 2 s. Judging
 * one candidate per lag, the descent judged 9 and ended at 0.84 of the
 * recorded oracle for AllReduce (the GPU: 0.85); measuring meanwhile what
 * the plan tries next on either verdict, it reaches the oracle. */
Test(replay1gpu, late_samples_at_64MiB_reach_the_oracle_in_2s)
{
  static const int colls[] = {4, 2, 3};
  for (int ci = 0; ci < 3; ci++) {
    run_res_t r;
    char o[160];
    run(L, colls[ci], 64u << 20, 2.0, 1000, 3, &r);
    cr_assert(r.oracle_s >= 0.98 * r.final_s && r.final_s < r.nccl_s,
              "coll %d 64 MiB, lag 1000: %s", colls[ci], outcome(&r, o, sizeof o));
  }
}

/* 4 MiB, 1,000 calls late, one sample in five lost, 40 seeds: a decision
 * 1.6-2.3x faster than NCCL's choice is never given up for NCCL's. The lag
 * estimate once decayed to 268 on lower bounds (calls before the latest
 * block, which a long budget wait makes small), and validation called the
 * decision's samples lost before they were due. */
Test(replay1gpu, late_and_lost_samples_never_give_up_a_found_decision)
{
  static const int colls[] = {4, 2, 3};
  g_drop = 0.2;
  for (int ci = 0; ci < 3; ci++)
    for (uint64_t seed = 1; seed <= 40; seed++) {
      run_res_t r;
      run(L, colls[ci], 4u << 20, 2.0, 1000, seed, &r);
      cr_assert(r.final_s < 0.8 * r.nccl_s,
                "coll %d seed %llu: final %d/%d/%d %.1f us, NCCL %.1f us (phase %d, %u judged)",
                colls[ci], (unsigned long long)seed, r.final.algo, r.final.proto, r.final.nchannels,
                r.final_s * 1e6, r.nccl_s * 1e6, (int)r.rep.phase, r.rep.candidates_evaluated);
    }
  g_drop = 0.0;
}

/* 256 MiB AllGather and ReduceScatter, samples 1,000 calls late, 2 s (some
 * 2,400 calls): the look-ahead's candidates below every channel count
 * measured are priced at the fewest's time x their count / its own. Priced
 * like any other step, looks at 1-3 channels (several times slower) spent
 * the budget and the runs ended waiting for it on NCCL's choice, 0.92 and
 * 0.95 of the oracle. */
Test(replay1gpu, late_lookahead_leaves_budget_for_the_decision)
{
  static const int colls[] = {2, 3};
  for (int ci = 0; ci < 2; ci++)
    for (uint64_t seed = 1; seed <= 5; seed++) {
      run_res_t r;
      char o[160];
      run(L, colls[ci], 256u << 20, 2.0, 1000, seed, &r);
      cr_assert(r.oracle_s >= 0.98 * r.final_s, "coll %d 256 MiB seed %llu: %s", colls[ci],
                (unsigned long long)seed, outcome(&r, o, sizeof o));
    }
}

/* One CUPTI window over a run's first calls (0: none), its samples this
 * many calls late (drive_run). */
static uint32_t g_window_calls;
static int g_window_lag;
/* ... every this many calls (0: once, at the start), its samples on
 * CUPTI's clock this much longer than NCCL's events' (0: one clock). */
static uint32_t g_window_period;
static double g_window_clock;

/* The host keeps pace with its GPU for this many calls before it runs
 * `lag` ahead (drive's lag_from), when set. */
static uint32_t g_lag_from;

/* The same workload played through consensus (tuner/drive), as the plugin
 * plays it: its warm-up span and starvation back-off run calls the search
 * did not plan, so the calls' indices run ahead of the search's count. */
static void drive_run(const acl_landscape_t *l, int coll, uint64_t nbytes, double seconds, int lag,
                      uint64_t seed, run_res_t *out)
{
  acl_drive_params_t dp = {.coll = coll,
                           .nbytes = nbytes,
                           .nranks = NRANKS,
                           .lag_calls = lag,
                           .lag_from = g_lag_from,
                           .skew = 0.3,
                           .window_calls = g_window_calls,
                           .window_period = !g_window_calls ? 0
                                            : g_window_period ? g_window_period
                                                              : 1u << 31,
                           .window_lag_calls = g_window_lag,
                           .window_clock_s = g_window_clock,
                           .seed = seed};
  acl_land_cost_table(l, coll, nbytes, NRANKS, dp.cost);
  char err[256] = "";
  acl_drive_t *d = acl_drive_create(&dp, err, sizeof err);
  cr_assert_not_null(d, "%s", err);
  acl_candidate_t def;
  acl_land_nccl_default(l, coll, nbytes, NRANKS, &def);
  double t = 0.0;
  acl_candidate_t ran = def;
  while (t < seconds) {
    acl_drive_step_t st;
    cr_assert_eq(acl_drive_next(d, UINT64_MAX, &st, err, sizeof err), 0, "%s", err);
    ran = st.d.cand.algo == ACL_ALGO_NCCL ? def : st.d.cand;
    int nch = acl_land_exec_channels(l, coll, nbytes, ran.algo, ran.proto, ran.nchannels);
    t += acl_land_mean_time(l, coll, nbytes, NRANKS, &ran, 0.0) * st.n;
    bool starved = st.d.phase == ACL_PHASE_VALIDATING && st.d.cand.algo == ACL_ALGO_NCCL &&
                   (double)(mix(seed * 31 + st.call) >> 11) * 0x1.0p-53 < g_starve;
    if (st.events && !starved) {
      double sec = acl_land_draw(l, coll, nbytes, NRANKS, &ran, 0.0, mix(seed + st.call), NULL);
      acl_drive_ran_t r = {ran.algo, ran.proto, nch};
      acl_drive_sample(d, &st, sec, -1.0f, &r);
    }
  }
  cr_assert_eq(acl_drive_report(d, &out->rep), 0);
  acl_drive_destroy(d);
  finish(l, coll, nbytes, &def, out);
  out->last_s = acl_land_time(l, coll, nbytes, NRANKS, &ran, 0.0);
}

/* 16 and 64 MiB through consensus, samples 500-1,000 calls late in call
 * order (one H200, one process per rank, 2026-12-05: NCCL's events arrived
 * ~93 ms, ~1,000 calls, after their call). Validation counted its calls
 * from the calls the search planned, while the call indices also count
 * consensus's warm-up span and grown blocks: at 64 MiB every run, and on
 * the GPU at 16 MiB too, called a decision 1.2-1.4x faster than NCCL's
 * choice lost, all 48 of its blocks handed out and not one sample due yet,
 * and went back to NCCL's choice. */
Test(replay1gpu, validation_counts_the_calls_consensus_ran)
{
  static const int colls[] = {4, 2, 3};
  for (int ci = 0; ci < 3; ci++)
    for (uint64_t sz = 16u << 20; sz <= 64u << 20; sz *= 4)
      for (int lag = 500; lag <= 1000; lag += 500)
        for (uint64_t seed = 1; seed <= 3; seed++) {
          run_res_t r;
          char o[160];
          drive_run(L, colls[ci], sz, 2.0, lag, seed, &r);
          cr_expect(r.oracle_s >= 0.95 * r.final_s && r.final_s < 0.9 * r.nccl_s,
                    "coll %d %llu MiB, lag %d, seed %llu: %s", colls[ci],
                    (unsigned long long)(sz >> 20), lag, (unsigned long long)seed,
                    outcome(&r, o, sizeof o));
        }
}

/* 4 and 16 MiB through consensus, samples 1,000 calls late, and every
 * sample of NCCL's choice lost while the decision is validated (one H100,
 * 2026-12-05: NCCL's Ring/Simple 64-channel calls, four between every
 * twelve of the decision's, gave no sample until validation had given up,
 * the decision's 40 % of theirs; two of three 4 MiB AllReduce runs with a
 * 1.7x decision went back to NCCL's choice). The decision is kept on its
 * own samples. */
Test(replay1gpu, validation_keeps_a_win_when_nccl_samples_are_lost)
{
  static const int colls[] = {4, 2, 3};
  g_starve = 1.0;
  for (int ci = 0; ci < 3; ci++)
    for (uint64_t sz = 4u << 20; sz <= 16u << 20; sz *= 4)
      for (uint64_t seed = 1; seed <= 3; seed++) {
        run_res_t r;
        char o[160];
        drive_run(L, colls[ci], sz, 2.0, 1000, seed, &r);
        cr_expect(r.final_s < 0.9 * r.nccl_s, "coll %d %llu MiB, seed %llu: %s", colls[ci],
                  (unsigned long long)(sz >> 20), (unsigned long long)seed,
                  outcome(&r, o, sizeof o));
      }
  g_starve = 0.0;
}

/* 256 MiB through consensus, samples 1,000 calls late (one H200,
 * 2026-12-05, both launch models: AllGather still waiting for samples
 * when its 2-second run of ~4,800 calls ended, 0.92-0.93 of the oracle).
 * The search sees its samples only between blocks, and consensus's
 * starvation back-off had grown the wait to 1,024 calls (0.7 s there):
 * the baseline's samples arrived at that block's start, and exploring
 * began a block later. AllReduce (~2,900 calls in 2 s) needs three round
 * trips of the lag: not played here. */
Test(replay1gpu, starving_blocks_stay_short_at_256MiB)
{
  static const int colls[] = {2, 3};
  for (int ci = 0; ci < 2; ci++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      run_res_t r;
      char o[160];
      drive_run(L, colls[ci], 256u << 20, 2.0, 1000, seed, &r);
      cr_expect(r.oracle_s >= 0.95 * r.final_s, "coll %d 256 MiB, seed %llu: %s", colls[ci],
                (unsigned long long)seed, outcome(&r, o, sizeof o));
    }
}

/* AllReduce 256 MiB, samples 1,000 calls late: ~2,900 calls in 2 s, and
 * each round of exploration waits the lag, so the run ends in its third
 * wait, with Ring/Simple/32 (8 % faster than NCCL's 64 channels) measured
 * a round earlier. The waits ran NCCL's choice (the run ended 0.93 of the
 * oracle); they now run the explored pick once it is 5 % ahead. */
/* 256 MiB AllReduce, samples 1,000 calls late, seeds 1-3: the last call
 * of a 2 s run within 5 % of the oracle. */
static void allreduce_256mib_ends_near_the_oracle(void)
{
  for (uint64_t seed = 1; seed <= 3; seed++) {
    run_res_t r;
    char o[160];
    drive_run(L, 4, 256u << 20, 2.0, 1000, seed, &r);
    cr_expect(r.oracle_s >= 0.95 * r.last_s, "seed %llu: the last call ran %.1f us; %s",
              (unsigned long long)seed, r.last_s * 1e6, outcome(&r, o, sizeof o));
  }
}

Test(replay1gpu, late_waits_run_the_explored_pick_at_256MiB)
{
  allreduce_256mib_ends_near_the_oracle();
}

/* 4 MiB AllGather: Ring/LL is best at 32 channels (29 us, NCCL's 64 take
 * 59 us), Ring/LL128 takes 38 us at 32 but 26 us at 16. Started at the
 * best channel count so far, LL128's first point was 1.3x the best and the
 * subspace pruned; one more look at half the channels finds it. */
/* Of seeds 1..10 of 4 MiB AllGather through consensus (samples 1,000 calls
 * late, 2 s), how many end within 3 % of the oracle; miss: a miss's outcome. */
static int allgather_4mib_near_oracle(char *miss, size_t n)
{
  int found = 0;
  for (uint64_t seed = 1; seed <= 10; seed++) {
    run_res_t r;
    drive_run(L, 2, 4u << 20, 2.0, 1000, seed, &r);
    bool near = r.oracle_s >= 0.97 * r.final_s;
    found += near;
    if (!near)
      outcome(&r, miss, n);
  }
  return found;
}

Test(replay1gpu, a_subspace_near_the_prune_line_gets_a_second_look)
{
  char o[160] = "";
  int found = allgather_4mib_near_oracle(o, sizeof o);
  /* within the prune line too: Ring/LL128 at 32 channels, as good as at 24
   * on its fast samples, left 16 unmeasured in 1 of these 10 seeds (7 of
   * the benchmark's 20) */
  cr_expect_geq(found, 10, "%d of 10 seeds within 3 %% of the oracle (a miss: %s)", found, o);
}

/* One H100, one process per rank, 4 MiB AllGather (2026-12-06): CUPTI's
 * first window sampled NCCL's choice on ~1,200 calls, its samples ~10 ms
 * behind, then NCCL's events came ~54 ms (~1,000 calls) behind. A
 * candidate's wait for its late samples ended once NCCL's choice had more
 * samples than probes handed out, at once after the window: the 2x faster
 * Ring/Simple/16 ran 40 times in 5-call blocks, its samples not yet due,
 * the exploration's call cap ran out and the run settled on NCCL's choice
 * (here: 0 of 10 seeds within 3 % of the oracle, 2 candidates judged). */
Test(replay1gpu, a_cupti_window_before_late_events)
{
  g_window_calls = 1200;
  g_window_lag = 200;
  char o[160] = "";
  int found = allgather_4mib_near_oracle(o, sizeof o);
  g_window_calls = 0;
  g_window_lag = 0;
  cr_expect_geq(found, 7, "%d of 10 seeds within 3 %% of the oracle (a miss: %s)", found, o);
}

/* 1 MiB AllGather (Ring/LL at 16 channels 7 % faster than NCCL's 32) and
 * 256 KiB ReduceScatter (Ring/LL at 2-16 channels 5 % faster): exploration
 * often stays on NCCL's choice on 5 noisy samples, and refinement then
 * challenges the better point against it. At 4 SE and 1 % over NCCL's
 * choice, 48 challenger samples could not prove a gain below ~7.7 %; with
 * as many as validation's blocks give (192) more of these runs end near
 * the oracle. Seeds 1..20 through consensus, samples 1,000 calls late
 * (the replay benchmark's seeds: 12 -> 10 and 8 -> 5 runs below 0.95 of the
 * oracle). */
static int near_oracle(int coll, uint64_t nbytes)
{
  int found = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    run_res_t r;
    drive_run(L, coll, nbytes, 2.0, 1000, seed, &r);
    found += r.oracle_s >= 0.97 * r.final_s;
  }
  return found;
}

Test(replay1gpu, refinement_proves_a_small_gain_over_nccl)
{
  /* 18 of 40 at 48 samples (5 and 13); 22 at 192 (7 and 15) */
  int ag = near_oracle(2, 1u << 20), rs = near_oracle(3, 256u << 10);
  cr_expect_geq(ag + rs, 21,
                "within 3 %% of the oracle: 1 MiB AllGather %d of 20, 256 KiB ReduceScatter %d of 20",
                ag, rs);
}

/* Two clocks (one H100, 2026-12-07): CUPTI's windows time a call 2.0-2.4 us
 * longer than NCCL's KernelCh stamps at 256 KiB-4 MiB (the fastest
 * rank's), and sample every call they cover, NCCL's choice's above all
 * while it waits. Through consensus, as the plugin plays it, the search
 * learns that offset from NCCL's choice and takes it off CUPTI's samples.
 * One H100's traces at 256 KiB, windows of 20,000 calls every 300,000
 * (100 ms every 1.5 s at 5 us), their samples 200 calls late and 2.3 us
 * long, NCCL's events 1,000 calls late, 2 s, seeds 1..10 of the three
 * collectives: 27 of the 30 runs learn an offset (at least 24 asked),
 * 2.4 us at their median (0.8-3.6), and none re-tunes on "slower". (These traces time a call at 17-19 us, the bench's own clock,
 * so 2.3 us does not reach the drift rule's 25 % here: the search's own
 * test, search/cupti_durations_on_the_kernelch_clock, plays the GPU's
 * 3 us.) */
Test(replay1gpu, cuptis_clock_reaches_the_search_through_consensus)
{
  static const int colls[] = {4, 2, 3};
  g_window_calls = 20000;
  g_window_period = 300000;
  g_window_lag = 200;
  g_window_clock = 2.3e-6;
  char err[512] = "";
  acl_landscape_t *h100 = acl_land_create_spec_traces(ACL_LAND_1GPU_H100, err, sizeof err);
  cr_assert_not_null(h100, "%s", err);
  double learned[30];
  int slower = 0, n = 0;
  char o[160] = "";
  for (int ci = 0; ci < 3; ci++)
    for (uint64_t seed = 1; seed <= 10; seed++) {
      run_res_t r;
      drive_run(h100, colls[ci], 256u << 10, 2.0, 1000, seed, &r);
      if (r.rep.retunes > 0 && r.rep.retune_cause == ACL_RETUNE_SLOWER) {
        slower++;
        snprintf(o, sizeof o, "coll %d seed %llu", colls[ci], (unsigned long long)seed);
      }
      if (r.rep.clock_offset_seconds > 0.0)
        learned[n++] = r.rep.clock_offset_seconds;
    }
  g_window_calls = 0;
  g_window_period = 0;
  g_window_lag = 0;
  g_window_clock = 0.0;
  acl_land_destroy(h100);
  /* the median of what the runs learned (these traces' calls vary by a few
   * us: one run's medians of 64 samples land within about 1 us) */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && learned[j - 1] > learned[j]; j--) {
      double x = learned[j];
      learned[j] = learned[j - 1];
      learned[j - 1] = x;
    }
  double med = n ? learned[n / 2] : 0.0;
  cr_expect_geq(n, 24, "%d of 30 runs learned an offset", n);
  cr_expect(fabs(med - 2.3e-6) < 0.3e-6, "the runs learned %.2f us at the median", med * 1e6);
  cr_expect_eq(slower, 0, "%d of 30 runs re-tuned on \"slower\" (the last: %s)", slower, o);
}

/* One H100, 256 MiB AllReduce: the host kept pace with the GPU through the
 * baseline (its samples 1-9 ms late), then ran ~1,000 calls ahead. The
 * first candidate's samples were then late, but a wait NCCL's choice had
 * ended counted as answered for it too: it ran again at once, and again,
 * 795 of the size's 2,577 calls, its samples arriving only after them.
 * Here the host runs ahead from call 305, just after the baseline: the
 * candidate ran ~1,000 calls, the budget went on it, and the run ended on
 * NCCL's choice (0.93 of the oracle). A candidate now waits for its own
 * samples before it runs again. */
Test(replay1gpu, a_lag_that_grows_after_the_baseline_is_waited_for)
{
  g_lag_from = 305;
  allreduce_256mib_ends_near_the_oracle();
  g_lag_from = 0;
}

/* 256 MiB AllReduce on the one-H100 traces, samples 1,000 calls late: a
 * 2 s run is ~2,270 calls of 0.88 ms, two round trips of the lag after
 * the baseline's first block. Exploring began only when the baseline's
 * samples came (~1,240), its first round's verdicts came at the run's end,
 * and every seed ended on NCCL's 64 channels, 0.91 of the oracle (32). The
 * plan's first round now goes out while the baseline's samples are on
 * their way (NCCL's Coll event says at once where its choice starts the
 * descent), and the second round's waits run the explored pick. */
Test(replay1gpu, the_first_round_goes_out_while_the_baseline_waits)
{
  char err[512] = "";
  acl_landscape_t *h100 = acl_land_create_spec_traces(ACL_LAND_1GPU_H100, err, sizeof err);
  cr_assert_not_null(h100, "%s", err);
  int near = 0;
  char o[160] = "";
  for (uint64_t seed = 1; seed <= 5; seed++) {
    run_res_t r;
    drive_run(h100, 4, 256u << 20, 2.0, 1000, seed, &r);
    if (r.oracle_s >= 0.95 * r.last_s)
      near++;
    else
      outcome(&r, o, sizeof o);
  }
  acl_land_destroy(h100);
  cr_expect_eq(near, 5, "%d of 5 seeds end within 5 %% of the oracle; a miss: %s", near, o);
}
