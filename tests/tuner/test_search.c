/* tuner/search/: phases, pruning, drift, determinism, degenerate tables,
 * baseline protection, late/missing samples (termination, validation and
 * the rest in test_search_decide.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/tuner/drive.h"
#include "tests/tuner/search_model.h"
#include "tuner/search/search.h"
#include "tuner/search/search_int.h"
#include "tuner/search/search_tunables.h"

/* One validation: defaults and in-range values pass untouched; each value
 * outside its limits is replaced and counted, the first one described. */
Test(search, params_fix_checks_the_real_limits)
{
  acl_search_params_t p = params(), q = params();
  char err[160];
  cr_assert_eq(acl_search_params_fix(&p, err, sizeof(err)), 0);
  cr_assert_eq(memcmp(&p, &q, sizeof(p)), 0);
  p.samples_per_cand = ACL_SEARCH_MAX_SAMPLES;
  cr_assert_eq(acl_search_params_fix(&p, err, sizeof(err)), 0);
  p.samples_per_cand = ACL_SEARCH_MAX_SAMPLES + 1;
  p.drift_window = 1000;
  cr_assert_eq(acl_search_params_fix(&p, err, sizeof(err)), 2);
  cr_assert_eq(p.samples_per_cand, ACL_SEARCH_MAX_SAMPLES);
  cr_assert_eq(p.drift_window, ACL_SEARCH_MAX_DRIFT_WINDOW);
  cr_assert_str_eq(err, "search setting samples_per_cand = 17 is out of range; 16 is used");
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  acl_search_params_from_config(&p, &cfg, 8);
  cr_assert_eq(p.samples_per_cand, ACL_CONFIG_SAMPLES_DEFAULT);
  cr_assert_eq(p.warmup_calls, ACL_CONFIG_WARMUP_DEFAULT);
  cr_assert_eq(p.nranks, 8);
}

Test(search, phases_in_order_and_warmup_dropped)
{
  acl_search_t s;
  model_t m;
  ring_tree_start(&s, &m);
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_WARMUP);
  acl_candidate_t c;
  uint32_t len;
  int id = acl_search_next(&s, &c, &len);
  cr_assert_eq(id, ACL_SEARCH_CAND_NCCL);
  cr_assert_eq(c.algo, ACL_ALGO_NCCL);
  cr_assert_eq(len, (uint32_t)params().warmup_calls);
  for (uint32_t i = 0; i < len; i++)
    acl_search_observe(&s,
                       &(acl_search_obs_t){.cand_id = id,
                                           .seconds = 10.0,
                                           .overlap = 0.0f}); /* warm-up: absurd, must be dropped */
  id = acl_search_next(&s, &c, &len);
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_BASELINE);
  cr_assert_eq(id, ACL_SEARCH_CAND_NCCL);
  for (uint32_t i = 0; i < len; i++)
    acl_search_observe(
        &s, &(acl_search_obs_t){.cand_id = id, .seconds = m.nccl_seconds, .overlap = 0.25f});
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_float_eq(r.baseline_seconds, m.nccl_seconds, 1e-9, "warm-up leaked: %g",
                     r.baseline_seconds);
  cr_assert_float_eq(r.overlap, 0.25, 1e-6);
  id = acl_search_next(&s, &c, &len);
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_EXPLORING);
  cr_assert_neq(id, ACL_SEARCH_CAND_NCCL);
  /* NCCL's predicted winner is explored first. */
  cr_assert_eq(c.algo, 1);
  cr_assert_eq(c.proto, 2);
  cr_assert(len >= 1 && len <= (uint32_t)params().samples_per_cand);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(&s, model_time, &m, &o) > 0, "did not converge");
  acl_search_report(&s, &r);
  cr_assert(acl_phase_decided(r.phase));
  cr_assert_eq(r.best.algo, 1);
  cr_assert_eq(r.best.proto, 2);
  cr_assert_eq(r.best.nchannels, 24);
  cr_assert_eq(r.speedup, 0.0, "not measured against NCCL's choice yet: %g", r.speedup);
  cr_assert(r.overlap < 0.0 || (r.overlap >= 0.0 && r.overlap <= 1.0));
  cr_assert_eq(r.validating, 1, "a non-default decision is validated in the background");
  /* Validation: short blocks of NCCL's choice between blocks of the decision. */
  int seen_base = 0, seen_dec = 0;
  for (int i = 0; i < 8 && r.validating; i++) {
    id = acl_search_next(&s, &c, &len);
    cr_assert(len >= 1 && len < 1024);
    if (id == ACL_SEARCH_CAND_NCCL) {
      seen_base++;
    } else if (id == s.current) {
      seen_dec++;
      cr_assert_eq(c.nchannels, 24);
    }
    for (uint32_t k = 0; k < len; k++)
      acl_search_observe(&s, &(acl_search_obs_t){
                                 .cand_id = id, .seconds = model_time(&m, &c, 0), .overlap = 0.0f});
    acl_search_report(&s, &r);
  }
  /* Noise-free, a 7% gain is significant at the first look (8 samples). */
  cr_assert(seen_base == 2 && seen_dec >= 1, "base %d dec %d", seen_base, seen_dec);
  drive_opts_t o2 = {.max_calls = 2000, .settle = 1};
  cr_assert(drive(&s, model_time, &m, &o2) > 0, "validation never ended");
  acl_search_report(&s, &r);
  cr_assert_eq(r.validating, 0);
  cr_assert_eq(r.current.nchannels, 24,
               "a 7%% gain without noise is confirmed, and the "
               "slower neighbours (16, 32) challenged in the background are not promoted");
  cr_assert_eq(r.current.proto, 2);
  cr_assert(r.calls_to_verdict >= r.calls_to_converge);
  cr_assert(r.speedup > 1.005 && r.speedup_paired, "speedup %g", r.speedup);
  cr_assert(r.speedup_lo > 1.0 && r.speedup_hi >= r.speedup, "interval %g..%g", r.speedup_lo,
            r.speedup_hi);
  /* Converged and validated: long blocks of the decision only. */
  for (int i = 0; i < 3; i++) {
    id = acl_search_next(&s, &c, &len);
    cr_assert(len >= 1024);
    cr_assert_eq(c.nchannels, 24);
  }
}

Test(search, prunes_clearly_worse_subspaces)
{
  acl_search_t s;
  model_t m;
  ring_tree_start(&s, &m);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  /* TREE/LL (3x slower) and RING/LL (2.8x) are judged at one point only. */
  int per_pair[ACL_NUM_ALGO][ACL_NUM_PROTO] = {{0}};
  for (int i = 1; i < s.ncands; i++)
    if (s.cands[i].judged || s.cands[i].nsamples)
      per_pair[s.cands[i].cand.algo][s.cands[i].cand.proto]++;
  cr_assert_eq(per_pair[0][0], 1, "TREE/LL points %d", per_pair[0][0]);
  cr_assert_eq(per_pair[1][0], 1, "RING/LL points %d", per_pair[1][0]);
  cr_assert(per_pair[1][2] >= 3, "RING/SIMPLE walked %d points", per_pair[1][2]);
}

Test(search, drift_retunes_but_not_on_one_outlier)
{
  acl_search_t s;
  model_t m;
  converge_simple(&s, &m);
  acl_candidate_t c;
  uint32_t len;
  int id = acl_search_next(&s, &c, &len);
  if (id == ACL_SEARCH_CAND_NCCL) /* a validation block: the decision's comes next */
    id = acl_search_next(&s, &c, &len);
  cr_assert_eq(id, s.current);
  double t = model_time(&m, &c, 0);
  double before = s.cands[0].robust_seconds; /* NCCL's choice, as measured */
  /* One huge outlier among normal samples: stays converged. */
  for (int i = 0; i < 100; i++)
    acl_search_observe(&s, &(acl_search_obs_t){
                               .cand_id = id, .seconds = i == 50 ? 100.0 * t : t, .overlap = 0.0f});
  cr_assert(acl_phase_decided(acl_search_phase(&s)));
  /* Mildly slower (10%), sustained: below the drift threshold, stays. */
  for (int i = 0; i < 100; i++)
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = 1.1 * t, .overlap = 0.0f});
  cr_assert(acl_phase_decided(acl_search_phase(&s)));
  /* Sustained 2x slower: re-tunes once the rule held over a second window
   * (the median flips after half a window, then a window of evidence). */
  int i = 0;
  for (; i < 128 && acl_phase_decided(acl_search_phase(&s)); i++)
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = 2.0 * t, .overlap = 0.0f});
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_RETUNING);
  cr_assert_gt(i, s.params.drift_window, "re-tuned after %d samples: one window is no proof", i);
  cr_assert_leq(i, 2 * s.params.drift_window, "took %d samples", i);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.retunes, 1);
  cr_assert_eq(r.retune_cause, ACL_RETUNE_SLOWER);
  /* The baseline is measured again, so none is reported; the one before
   * stays for the job report's NCCL time (a re-tuning workload was sampled;
   * a PyTorch run's report counted it as never sampled). */
  cr_assert_eq(r.baseline_seconds, 0.0);
  cr_assert_gt(before, 0.0);
  cr_assert_float_eq(r.baseline_kept_seconds, before, 1e-12);
  /* And tunes again to completion (the baseline is re-measured first). */
  id = acl_search_next(&s, &c, &len);
  cr_assert_eq(id, ACL_SEARCH_CAND_NCCL);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  cr_assert(acl_phase_decided(acl_search_phase(&s)));
  acl_search_report(&s, &r);
  cr_assert_gt(r.baseline_seconds, 0.0, "measured again");
  cr_assert_eq(r.baseline_kept_seconds, 0.0, "the kept one only stands in while none is measured");
}

/* Overlap comes in CUPTI's windows (the default source) and is unknown
 * (< 0) between them: unknown is no evidence of a shift. */
Test(search, unknown_overlap_between_windows_never_retunes)
{
  acl_search_t s;
  model_t m;
  double t;
  int id = converged_decision(&s, &m, &t); /* converged with overlap 0 known */
  for (int i = 0; i < 2000; i++)
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = -1.0f});
  cr_assert(acl_phase_decided(acl_search_phase(&s)), "state %s",
            acl_phase_name(acl_search_phase(&s)));
}

/* A new interference regime seen only in windows (20 samples with overlap
 * every 100) still re-tunes: the drift rule works from duty-cycled samples. */
Test(search, windowed_overlap_shift_retunes)
{
  acl_search_t s;
  model_t m;
  double t;
  int id = converged_decision(&s, &m, &t);
  int i = 0;
  for (; i < 5000 && acl_phase_decided(acl_search_phase(&s)); i++)
    acl_search_observe(
        &s,
        &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = i % 100 < 20 ? 0.7f : -1.0f});
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_RETUNING, "after %d samples", i);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.retune_cause, ACL_RETUNE_OVERLAP, "the report says why: the overlap moved");
}

/* A window's readings move with the call's place in the step (FSDP's
 * per-layer AllGathers): windows of 16 readings, the first 8 at 0.5 and
 * the rest at 0.0, around the reference 0, are no new regime (a mean of
 * 0.25, within the 0.3 of a shift), though a mean of the first 8 is 0.5
 * away (a reading alone in the samples' ring, or a mean of 8, re-tuned). */
Test(search, swinging_overlap_readings_never_retune)
{
  acl_search_t s;
  model_t m;
  double t;
  int id = converged_decision(&s, &m, &t); /* converged with overlap 0 known */
  int readings = 0;
  for (int i = 0; i < 5000; i++) {
    float ov = -1.0f;
    if (i % 100 < 16) {
      ov = i % 100 < 8 ? 0.5f : 0.0f;
      readings++;
    }
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = ov});
    cr_assert(acl_phase_decided(acl_search_phase(&s)), "re-tuned after %d samples, %d readings",
              i + 1, readings);
  }
}

/* FSDP's 96 MiB AllGather on one H100 (2026-12-07, rank 0's trace): a
 * decision judged on NCCL's events (no overlap known), then CUPTI's windows,
 * 16 readings each, their means 0.80, 0.30, 0.47, 0.44, 0.21, 0.49, 0.35
 * and 0.23 with the step each caught. No new regime: a reference of the
 * first window against the latest 32 readings re-tuned it (on the GPU twice
 * in the run, to the same decision); three windows against the latest 64
 * do not. */
static const float fsdp_windows[][16] = {
    {1.00f, 0.01f, 1.00f, 0.00f, 0.70f, 0.98f, 0.97f, 0.97f, 0.99f, 0.97f, 0.70f, 0.98f, 0.51f,
     1.00f, 1.00f, 1.00f},
    {1.00f, 1.00f, 0.01f, 1.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.15f,
     0.60f, 0.52f, 0.51f},
    {0.07f, 0.53f, 0.51f, 0.49f, 0.00f, 0.00f, 0.99f, 0.99f, 0.47f, 0.35f, 0.75f, 0.14f, 0.75f,
     0.92f, 0.54f, 0.01f},
    {0.00f, 0.99f, 0.00f, 0.67f, 0.98f, 0.51f, 0.50f, 0.51f, 0.52f, 0.51f, 0.51f, 0.00f, 0.02f,
     0.45f, 0.40f, -1.0f},
    {0.52f, 0.52f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.85f, 0.05f, 0.51f,
     0.50f, -1.0f, -1.0f},
    {0.82f, 1.00f, 1.00f, 0.00f, 0.00f, 0.42f, 0.03f, 0.55f, 0.64f, 0.70f, 0.56f, 0.48f, 0.04f,
     0.51f, 0.51f, 0.52f},
    {0.64f, 0.01f, 0.79f, 0.26f, 0.51f, 0.51f, 0.52f, 0.51f, 0.51f, 0.51f, 0.00f, 0.01f, 0.06f,
     0.10f, -1.0f, -1.0f},
    {0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 0.08f, 0.96f, 1.00f, 0.01f, 1.00f,
     0.01f, 0.32f, 0.33f},
};

Test(search, fsdp_windows_of_one_regime_never_retune)
{
  static acl_search_t s;
  model_t m;
  ring_tree_start(&s, &m);
  drive_opts_t o = {.max_calls = 2000, .no_overlap = 1};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  double t;
  int id = decision_next(&s, &m, &t);
  for (int rep = 0; rep < 2; rep++) /* the run had 17 windows */
    for (size_t w = 0; w < sizeof(fsdp_windows) / sizeof(fsdp_windows[0]); w++) {
      for (int i = 0; i < 16; i++) /* a window's readings (-1: a call it missed) */
        acl_search_observe(&s, &(acl_search_obs_t){
                                   .cand_id = id, .seconds = t, .overlap = fsdp_windows[w][i]});
      for (int i = 0; i < 300; i++) /* NCCL's events until the next window */
        acl_search_observe(&s,
                           &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = -1.0f});
      cr_assert(acl_phase_decided(acl_search_phase(&s)), "re-tuned after window %zu of pass %d",
                w + 1, rep + 1);
    }
  /* a new regime (the step's compute now hides nearly all of it) still
   * re-tunes once the latest 64 readings show it */
  int w = 0;
  for (; w < 8 && acl_phase_decided(acl_search_phase(&s)); w++)
    for (int i = 0; i < 316; i++)
      acl_search_observe(&s, &(acl_search_obs_t){
                                 .cand_id = id, .seconds = t, .overlap = i < 16 ? 0.95f : -1.0f});
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_RETUNING, "after %d windows", w);
  cr_assert_leq(w, 4, "after %d windows of the new regime", w);
}

/* A workload called 16 times a step whose first call of each step runs
 * 3x longer (DDP on one H100: a bucket's time moved with its place in the
 * backward, 0.4 to 2.9 ms). Converged on every call's samples, then sampled
 * 1 call in 2^shift: with shift >= 4 and call % 2^shift == 0 every sample
 * came from that first place and the decision re-tuned on "slower"; at
 * offsets moving from period to period the places mix and it stays. */
static double place_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  return 0.2 * model_time(user, c, call) * (call % 16 == 0 ? 3.0 : 1.0);
}

Test(search, samples_of_every_place_in_the_step)
{
  static acl_search_t s;
  model_t m;
  ring_tree_start(&s, &m);
  drive_opts_t o = {.max_calls = 20000, .settle = 1};
  uint64_t k = drive(&s, place_time, &m, &o);
  cr_assert(k > 0, "converged");
  cr_assert_eq(s.retunes, 0);
  uint64_t end = k + 200000;
  int places = 0, sampled = 0;
  while (k < end) {
    acl_candidate_t c;
    uint32_t len = 0;
    int id = acl_search_next(&s, &c, &len);
    uint8_t shift = acl_search_sample_shift(&s);
    for (uint32_t j = 0; j < len; j++, k++)
      if (acl_search_sampled(shift, k)) {
        places |= 1 << (k % 16);
        sampled++;
        acl_search_observe(&s, &(acl_search_obs_t){
                                   .cand_id = id, .seconds = place_time(&m, &c, k), .overlap = 0.0f});
      }
    cr_assert(acl_phase_decided(acl_search_phase(&s)) && s.retunes == 0,
              "re-tuned (state %d) at call %llu, shift %u", acl_search_phase(&s),
              (unsigned long long)k, shift);
  }
  cr_assert_geq(acl_search_sample_shift(&s), 4, "one sample in 16 calls or fewer");
  cr_assert_gt(sampled, 1000);
  cr_assert_eq(places, 0xffff, "samples from every place in the step (%#x)", places);
}

/* The ring/tree model with every time scaled (small calls), driven until
 * converged; the decision's next call: its id and noise-free time. */
static int scaled_decision(acl_search_t *s, model_t *m, double scale, double *t)
{
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(m, cost);
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int q = 0; q < ACL_NUM_PROTO; q++)
      m->base[a][q] *= scale;
  m->nccl_seconds *= scale;
  acl_search_params_t p = params();
  acl_search_init(s, &p, &key, cost);
  drive_opts_t o = {.max_calls = 4000};
  cr_assert(drive(s, model_time, m, &o) > 0);
  return decision_next(s, m, t);
}

/* Two clocks (one H100, 256 KiB AllGather's trace): CUPTI's windows time
 * NCCL's choice at 4.80 us, NCCL's KernelCh stamps at 3.01 us; a decision
 * judged on KernelCh then sampled by a window read 1.6x slower and
 * re-tuned on "slower". The incumbent on both clocks gives the offset, and
 * CUPTI's durations are taken onto KernelCh's: the window's samples of the
 * decision are its converged time again. */
Test(search, cupti_durations_on_the_kernelch_clock)
{
  static acl_search_t s;
  model_t m;
  double t;
  int id = scaled_decision(&s, &m, 3e-3, &t); /* ~3 us a call, as at 256 KiB */
  const double skew = 2.3e-6;                 /* CUPTI's excess at 256 KiB */
  for (int i = 0; i < 16; i++) /* the decision between windows: NCCL's events */
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = -1.0f});
  for (int i = 0; i < 2000; i++) { /* then a window */
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id,
                                               .seconds = t + skew,
                                               .overlap = 0.0f,
                                               .cupti = 1});
    cr_assert(acl_phase_decided(acl_search_phase(&s)),
              "re-tuned after %d of a CUPTI window's samples (%g us on the decision's %g)", i + 1,
              (t + skew) * 1e6, t * 1e6);
  }
  cr_assert_float_eq(s.clock.offset_s, skew, 1e-8, "offset %g s", s.clock.offset_s);
}

/* 1 MiB AllReduce on one H100 (2026-12-07): the decision RING/LL/48 ran
 * 5.7 us by NCCL's KernelCh stamps, and CUPTI's windows timed it at 13.4 us
 * (7.6 us more; NCCL's choice 2.1 us more), past the 5 us the search takes
 * off as the clock's. A window's burst filled the drift window and the
 * decision re-tuned on "slower" (in 2 of 3 runs, one ending on a config
 * 1.6x slower). Once KernelCh times the decision, CUPTI's samples bring
 * only the overlap; a real slowdown on KernelCh still re-tunes. */
Test(search, cuptis_longer_durations_of_a_decision_never_retune)
{
  static acl_search_t s;
  model_t m;
  double t;
  int id = scaled_decision(&s, &m, 5e-3, &t); /* ~6 us a call, as at 1 MiB */
  for (int round = 0; round < 10; round++) {
    for (int i = 0; i < 16; i++) /* between windows: NCCL's events */
      acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = -1.0f});
    for (int i = 0; i < 500; i++) /* a window: CUPTI's durations, 7.6 us longer */
      acl_search_observe(&s, &(acl_search_obs_t){
                                 .cand_id = id, .seconds = t + 7.6e-6, .overlap = 0.0f, .cupti = 1});
    cr_assert(acl_phase_decided(acl_search_phase(&s)), "re-tuned in window %d (%g us on %g)",
              round + 1, (t + 7.6e-6) * 1e6, t * 1e6);
  }
  int i = 0;
  for (; i < 2000 && acl_phase_decided(acl_search_phase(&s)); i++)
    acl_search_observe(&s,
                       &(acl_search_obs_t){.cand_id = id, .seconds = 2.0 * t, .overlap = -1.0f});
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_RETUNING, "2x slower on KernelCh: %d samples", i);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.retune_cause, ACL_RETUNE_SLOWER);
}

/* A difference beyond a clock's (CUPTI's kernel includes the wait for the
 * other rank: 733 against 333 us in a DDP job) is left alone. */
Test(search, skew_is_no_clock_offset)
{
  acl_search_t s;
  model_t m;
  double t;
  int id = converged_decision(&s, &m, &t);
  for (int i = 0; i < 16; i++) {
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = -1.0f});
    acl_search_observe(
        &s, &(acl_search_obs_t){.cand_id = id, .seconds = 2.2 * t, .overlap = -1.0f, .cupti = 1});
  }
  cr_assert_eq(s.clock.offset_s, 0.0f, "offset %g s", s.clock.offset_s);
}

Test(search, deterministic_state_bytes)
{
  static acl_search_t a, b;
  model_t m;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  acl_search_params_t p = params();
  drive_opts_t o = {.max_calls = 3000, .noise = 0.1, .lag = 2, .drop = 0.1, .seed = 42};
  acl_search_init(&a, &p, &key, cost);
  acl_search_init(&b, &p, &key, cost);
  uint64_t ka = drive(&a, model_time, &m, &o);
  uint64_t kb = drive(&b, model_time, &m, &o);
  cr_assert_eq(ka, kb);
  cr_assert(memcmp(&a, &b, sizeof a) == 0, "state bytes differ");
  o.seed = 43; /* different samples: the bytes must differ (the test can fail) */
  acl_search_init(&b, &p, &key, cost);
  drive(&b, model_time, &m, &o);
  cr_assert(memcmp(&a, &b, sizeof a) != 0);
}

static void one_pair(int algo, int proto, double nccl_factor)
{
  acl_search_t s;
  model_t m;
  memset(&m, 0, sizeof m);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  int a[] = {algo}, p[] = {proto};
  float us[] = {50};
  table_only(cost, 1, a, p, us);
  m.base[algo][proto] = 1e-4;
  m.peak[algo][proto] = 4;
  m.curv = 0.1;
  m.nccl_seconds = 1e-4 * nccl_factor;
  acl_search_params_t pr = params();
  acl_search_init(&s, &pr, &key, cost);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.best.algo, algo);
  cr_assert_eq(r.best.proto, proto);
  cr_assert_eq(r.best.nchannels, 4);
  for (int i = 1; i < s.ncands; i++)
    cr_assert(s.cands[i].cand.algo == algo && s.cands[i].cand.proto == proto);
}

Test(search, degenerate_one_valid_entry) { one_pair(1, 2, 1.3); }
Test(search, degenerate_nvls_only) { one_pair(4, 2, 1.2); }

Test(search, degenerate_all_invalid_converges_to_nccl)
{
  acl_search_t s;
  model_t m;
  memset(&m, 0, sizeof m);
  m.nccl_seconds = 1e-4;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  table_only(cost, 0, NULL, NULL, NULL);
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  drive_opts_t o = {.max_calls = 200};
  uint64_t k = drive(&s, model_time, &m, &o);
  cr_assert(k > 0 && k <= 20, "calls %llu", (unsigned long long)k);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.current.algo, ACL_ALGO_NCCL);
}

Test(search, restrict_intersects_ranks)
{
  acl_search_t s;
  model_t m;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], other[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  memcpy(other, cost, sizeof other);
  other[1][2] = -1.0f; /* another rank cannot run RING/SIMPLE */
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  acl_search_restrict(&s, other);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(&s, model_time, &m, &o) > 0); /* model_time asserts validity too */
  for (int i = 1; i < s.ncands; i++)
    cr_assert(!(s.cands[i].cand.algo == 1 && s.cands[i].cand.proto == 2),
              "explored a pair another rank cannot run");
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.current.algo, ACL_ALGO_NCCL, "RING/LL128 is slower than NCCL's RING/SIMPLE");
}

Test(search, baseline_protection)
{
  acl_search_t s;
  model_t m;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  /* NCCL's choice is better than anything the tuner can set. */
  m.nccl_seconds = 0.95e-3;
  acl_search_params_t p = params();
  for (uint64_t seed = 1; seed <= 20; seed++) {
    acl_search_init(&s, &p, &key, cost);
    drive_opts_t o = {.max_calls = 3000, .noise = 0.05, .seed = seed, .settle = 1};
    cr_assert(drive(&s, model_time, &m, &o) > 0);
    acl_search_report_t r;
    acl_search_report(&s, &r);
    cr_assert_eq(r.current.algo, ACL_ALGO_NCCL, "seed %llu converged to %d/%d/%d",
                 (unsigned long long)seed, r.current.algo, r.current.proto, r.current.nchannels);
  }
  /* A 0.5% gain is inside the 1% margin: NCCL's choice is kept. */
  m.nccl_seconds = 1.005e-3;
  acl_search_init(&s, &p, &key, cost);
  drive_opts_t o = {.max_calls = 3000};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  cr_assert_eq(s.current, ACL_SEARCH_CAND_NCCL);
}

Test(search, late_and_missing_samples)
{
  acl_search_t s;
  model_t m;
  ring_tree_start(&s, &m);
  drive_opts_t o = {.max_calls = 5000, .lag = 7, .drop = 0.3, .seed = 5};
  uint64_t k = drive(&s, model_time, &m, &o);
  cr_assert(k > 0, "never converged with late/missing samples");
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.best.algo, 1);
  cr_assert_eq(r.best.proto, 2);
  cr_assert_eq(r.best.nchannels, 24);

  /* No samples at all: the search keeps asking for the baseline, safely. */
  ring_tree_start(&s, &m);
  for (int i = 0; i < 50; i++) {
    acl_candidate_t c;
    uint32_t len;
    int id = acl_search_next(&s, &c, &len);
    cr_assert_eq(id, ACL_SEARCH_CAND_NCCL);
    cr_assert(len >= 1);
  }
  /* Garbage samples are ignored. */
  acl_search_observe(&s, &(acl_search_obs_t){.cand_id = 999, .seconds = 1.0, .overlap = 0.0f});
  acl_search_observe(&s, &(acl_search_obs_t){.cand_id = -1, .seconds = 1.0, .overlap = 0.0f});
  acl_search_observe(&s, &(acl_search_obs_t){.cand_id = 0, .seconds = NAN, .overlap = 0.0f});
  acl_search_observe(&s, &(acl_search_obs_t){.cand_id = 0, .seconds = -1.0, .overlap = 0.0f});
  cr_assert_eq(s.samples_seen, 0);
}

/* A stall (5 ms on one GPU shared by two processes, NCCL's choice's calls
 * hit alike) in an exploring candidate's samples is charged to the budget
 * as at most 4x the candidate's median: charged whole, one costs a 9.5 us
 * workload ~17,500 calls of budget. */
Test(search, a_stall_costs_the_budget_at_most_an_outlier)
{
  acl_search_t s;
  model_t m;
  ring_tree_start(&s, &m);
  acl_candidate_t c;
  uint32_t len;
  int id = ACL_SEARCH_CAND_NCCL, guard = 0;
  while (guard++ < 64) {
    id = acl_search_next(&s, &c, &len);
    if (acl_search_phase(&s) == ACL_PHASE_EXPLORING && id != ACL_SEARCH_CAND_NCCL)
      break;
    for (uint32_t i = 0; i < len; i++)
      acl_search_observe(&s, &(acl_search_obs_t){
                                 .cand_id = id, .seconds = model_time(&m, &c, 0), .overlap = 0.0f});
  }
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_EXPLORING);
  cr_assert_neq(id, ACL_SEARCH_CAND_NCCL);
  double t = model_time(&m, &c, 0);
  for (int i = 0; i < ACL_SEARCH_OUTLIER_MIN_N; i++)
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = 0.0f});
  double before = s.spent_s;
  acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = 500.0 * t, .overlap = 0.0f});
  cr_assert_gt(s.spent_s, before, "an outlier is still charged");
  cr_assert_leq(s.spent_s - before, ACL_SEARCH_OUTLIER * t, "charged %g s for a %g s candidate",
                s.spent_s - before, t);
}

/* A validation that begins with the budget spent (exploration spends it to
 * the last) pauses, running NCCL's choice as the safe one while the
 * decision is unproven. CUPTI's windows sample those calls too: they cost
 * the job nothing beyond NCCL's own, so they are not charged, the budget
 * earns back, and validation goes on. Charged as the challenger's excess
 * over the decision, they outgrew what the budget earns and a 416 MiB
 * AllGather paused to the end of its run, its 1.09x decision unused. */
Test(search, a_pause_owes_nothing_for_the_calls_it_runs)
{
  acl_search_t s;
  model_t m;
  ring_tree_start(&s, &m);
  acl_candidate_t c;
  uint32_t len;
  int guard = 0;
  while (acl_search_phase(&s) != ACL_PHASE_VALIDATING && guard++ < 4096) {
    uint64_t at = acl_search_call_index(&s);
    int id = acl_search_next(&s, &c, &len);
    if (acl_search_phase(&s) == ACL_PHASE_VALIDATING)
      break;
    for (uint32_t i = 0; i < len; i++)
      acl_search_observe(
          &s,
          &(acl_search_obs_t){.cand_id = id, .seconds = model_time(&m, &c, 0), .call = at + i + 1});
  }
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_VALIDATING);
  /* the budget of test_budget.c's runs, spent to the last */
  s.params.budget = 0.03;
  s.spent_s = s.params.budget * (double)s.calls_planned * acl_search_ref_seconds(&s) + 1e-6;
  double t_nccl = m.nccl_seconds;
  int paused = 0, resumed = 0;
  for (int b = 0; b < 64 && !resumed; b++) {
    uint64_t at = acl_search_call_index(&s);
    int id = acl_search_next(&s, &c, &len);
    if (acl_search_phase(&s) != ACL_PHASE_PAUSED) {
      resumed = paused > 0;
      break;
    }
    paused++;
    cr_assert_eq(id, ACL_SEARCH_CAND_NCCL, "an unproven decision does not run in a pause");
    double before = s.spent_s;
    for (uint32_t i = 0; i < len; i++) /* a window over every call of the pause */
      acl_search_observe(&s,
                         &(acl_search_obs_t){.cand_id = id, .seconds = t_nccl, .call = at + i + 1});
    cr_assert_eq(s.spent_s, before, "charged %g s for the pause's own calls", s.spent_s - before);
  }
  cr_assert_gt(paused, 0, "the spent budget paused validation");
  cr_assert(resumed, "still paused after %d pause blocks", paused);
}
