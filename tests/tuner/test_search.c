/* tuner/search/search.c: phases, pruning, drift, determinism, degenerate tables,
 * baseline protection, late/missing samples, termination. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/tuner/drive.h"
#include "tuner/search/search.h"

/* A unimodal landscape: per (algo, proto) a base time and a channel peak. */
typedef struct model {
  double base[ACL_NUM_ALGO][ACL_NUM_PROTO]; /* seconds at the peak; 0 = invalid */
  double peak[ACL_NUM_ALGO][ACL_NUM_PROTO];
  double nccl_seconds; /* NCCL's own choice */
  double curv;
} model_t;

static double model_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)call;
  const model_t *m = user;
  if (c->algo == ACL_ALGO_NCCL)
    return m->nccl_seconds;
  double b = m->base[c->algo][c->proto];
  cr_assert(b > 0.0, "search ran an invalid pair %d/%d", c->algo, c->proto);
  cr_assert(c->nchannels >= 1 && c->nchannels <= 32, "channels %d", c->nchannels);
  double x = log2((double)c->nchannels / m->peak[c->algo][c->proto]);
  return b * (1.0 + m->curv * x * x);
}

static const acl_wkey_t key = {.comm_id = 7, .nbytes = 1 << 24, .num_pipe_ops = 1, .coll = 4};

static void ring_tree_model(model_t *m, float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  memset(m, 0, sizeof *m);
  int a[] = {0, 0, 0, 1, 1, 1}, p[] = {0, 1, 2, 0, 1, 2};
  float us[] = {300, 200, 120, 280, 150, 100}; /* NCCL predicts RING/SIMPLE */
  table_only(cost, 6, a, p, us);
  double bases[] = {3e-3, 2e-3, 1.25e-3, 2.8e-3, 1.5e-3, 1.0e-3};
  for (int i = 0; i < 6; i++) {
    m->base[a[i]][p[i]] = bases[i];
    m->peak[a[i]][p[i]] = 24;
  }
  m->curv = 0.08;
  m->nccl_seconds = 1.0e-3 * (1.0 + 0.08 * pow(log2(16.0 / 24.0), 2)); /* RING/SIMPLE/16 */
}

/* The descent alone: the exploration budget lifted (its own tests below). */
static acl_search_params_t params(void)
{
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.budget = 1e9;
  return p;
}

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
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_WARMUP);
  acl_candidate_t c;
  uint32_t len;
  int id = acl_search_next(&s, &c, &len);
  cr_assert_eq(id, ACL_SEARCH_CAND_NCCL);
  cr_assert_eq(c.algo, ACL_ALGO_NCCL);
  cr_assert_eq(len, (uint32_t)p.warmup_calls);
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
  cr_assert(len >= 1 && len <= (uint32_t)p.samples_per_cand);
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
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
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

static void converge_simple(acl_search_t *s, model_t *m)
{
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(m, cost);
  acl_search_params_t p = params();
  acl_search_init(s, &p, &key, cost);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(s, model_time, m, &o) > 0);
}

/* Converged, then the decision's next call: its id and noise-free time. */
static int converged_decision(acl_search_t *s, model_t *m, double *t)
{
  converge_simple(s, m);
  acl_candidate_t c;
  uint32_t len;
  int id = acl_search_next(s, &c, &len);
  if (id == ACL_SEARCH_CAND_NCCL) /* a validation block: the decision's comes next */
    id = acl_search_next(s, &c, &len);
  *t = model_time(m, &c, 0);
  return id;
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
  /* And tunes again to completion (the baseline is re-measured first). */
  id = acl_search_next(&s, &c, &len);
  cr_assert_eq(id, ACL_SEARCH_CAND_NCCL);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  cr_assert(acl_phase_decided(acl_search_phase(&s)));
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
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  drive_opts_t o = {.max_calls = 5000, .lag = 7, .drop = 0.3, .seed = 5};
  uint64_t k = drive(&s, model_time, &m, &o);
  cr_assert(k > 0, "never converged with late/missing samples");
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.best.algo, 1);
  cr_assert_eq(r.best.proto, 2);
  cr_assert_eq(r.best.nchannels, 24);

  /* No samples at all: the search keeps asking for the baseline, safely. */
  acl_search_init(&s, &p, &key, cost);
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

static double chaos_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  uint64_t *st = user;
  *st = *st * 6364136223846793005ull + 1442695040888963407ull + call;
  (void)c;
  return 1e-5 * (1.0 + (double)(*st >> 40) / (double)(1ull << 20)); /* 1x..17x */
}

Test(search, exploration_always_terminates)
{
  acl_search_t s;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      cost[a][p] = (float)(10 + a * 3 + p);
  acl_search_params_t p = params();
  p.max_channels = 64;
  for (uint64_t seed = 1; seed <= 10; seed++) {
    acl_search_init(&s, &p, &key, cost);
    uint64_t st = seed;
    drive_opts_t o = {.max_calls = 1000, .lag = 3, .drop = 0.2, .seed = seed};
    uint64_t k = drive(&s, chaos_time, &st, &o);
    cr_assert(k > 0 && k < 600, "seed %llu: %llu calls", (unsigned long long)seed,
              (unsigned long long)k);
  }
}

Test(search, trajectory_and_report)
{
  acl_search_t s;
  model_t m;
  converge_simple(&s, &m);
  acl_traj_point_t t[ACL_SEARCH_TRAJ];
  int n = acl_search_trajectory(&s, t, ACL_SEARCH_TRAJ);
  cr_assert(n >= 3);
  cr_assert_eq(t[0].cand.algo, ACL_ALGO_NCCL, "the baseline is the first point");
  for (int i = 1; i < n; i++)
    cr_assert(t[i].step > t[i - 1].step, "oldest first");
  for (int i = 0; i < n; i++)
    cr_assert(t[i].busbw > 0.0f);
  cr_assert_eq(acl_search_trajectory(&s, t, 2), 2);
  cr_assert_eq(acl_search_trajectory(&s, NULL, 5), 0);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert(r.calls_to_converge > 0);
  cr_assert_eq(r.candidates_evaluated, s.steps);
  cr_assert(r.busbw > 0.0);
  /* Converged: the speedup is the interleaved measurement (or 1 for NCCL's
   * own choice), with its interval around it, not two robust times. */
  if (r.speedup > 0.0) {
    cr_assert(r.speedup_paired);
    cr_assert(r.speedup_lo <= r.speedup && r.speedup <= r.speedup_hi);
  }
}

/* A provisional decision that is in truth slower than NCCL's choice (the
 * exploration was fooled) is reverted by the background validation. */
typedef struct fooled {
  model_t m;
  const acl_search_t *s;
} fooled_t;

static double fooled_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  fooled_t *f = user;
  /* While exploring, the tuner's candidates look 20% faster than they are. */
  double t = model_time(&f->m, c, call);
  bool exploring = !acl_phase_decided(acl_search_phase(f->s));
  return c->algo != ACL_ALGO_NCCL && exploring ? 0.8 * t : t;
}

Test(search, validation_reverts_a_slower_decision)
{
  acl_search_t s;
  fooled_t f = {.s = &s};
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&f.m, cost);
  f.m.nccl_seconds = 0.97e-3; /* 3% faster than the best the tuner can set */
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  drive_opts_t o = {.max_calls = 4000, .noise = 0.05, .seed = 9};
  cr_assert(drive(&s, fooled_time, &f, &o) > 0);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_neq(r.current.algo, ACL_ALGO_NCCL, "the test needs a fooled exploration");
  cr_assert_eq(r.validating, 1);
  o.settle = 1;
  o.max_calls = 6000;
  o.seed = 10;
  cr_assert(drive(&s, fooled_time, &f, &o) > 0, "validation never ended");
  acl_search_report(&s, &r);
  cr_assert_eq(r.current.algo, ACL_ALGO_NCCL, "kept %d/%d/%d", r.current.algo, r.current.proto,
               r.current.nchannels);
  cr_assert(r.calls_to_decision > r.calls_to_converge);
}

/* The same fooled decision, looked at after every sample: no report ever
 * calls it converged at a speedup below 0.99 whose interval lies below 1
 * (the estimate shown and the revert change at the same looks). */
Test(search, never_converged_at_a_proven_loss)
{
  acl_search_t s;
  fooled_t f = {.s = &s};
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&f.m, cost);
  f.m.nccl_seconds = 0.98e-3; /* 2% faster than the best the tuner can set */
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  uint64_t rng = 12345;
  int reverted = 0, paired_seen = 0;
  for (int blk = 0; blk < 4000 && !reverted; blk++) {
    acl_candidate_t c;
    uint32_t len;
    int id = acl_search_next(&s, &c, &len);
    for (uint32_t k = 0; k < len && k < 64; k++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      double u = (double)(rng >> 11) / 9007199254740992.0;
      acl_search_observe(&s,
                         &(acl_search_obs_t){.cand_id = id,
                                             .seconds = fooled_time(&f, &c, 0) * (0.9 + 0.2 * u),
                                             .overlap = 0.0f});
      acl_search_report_t r;
      acl_search_report(&s, &r);
      if (!acl_phase_decided(r.phase))
        continue;
      paired_seen += r.speedup_paired && r.current.algo != ACL_ALGO_NCCL;
      cr_assert(!(r.speedup_paired && r.speedup < 0.99 && r.speedup_hi < 1.0),
                "converged at %g (%g..%g)", r.speedup, r.speedup_lo, r.speedup_hi);
      if (r.current.algo == ACL_ALGO_NCCL && paired_seen > 0) {
        cr_assert_float_eq(r.speedup, 1.0, 1e-12, "NCCL's own choice is 1x by definition");
        reverted = 1;
      }
    }
  }
  cr_assert(reverted, "the slower decision was kept");
  cr_assert(paired_seen > 0, "the loss was shown as measured before the revert");
}

/* Samples stop arriving after convergence: validation ends on NCCL's choice
 * after a bounded number of blocks instead of interleaving forever. */
Test(search, validation_without_samples_falls_back)
{
  acl_search_t s;
  model_t m;
  converge_simple(&s, &m);
  cr_assert_neq(s.current, ACL_SEARCH_CAND_NCCL);
  acl_candidate_t c;
  uint32_t len = 0;
  int i = 0;
  for (; i < 1000; i++) {
    acl_search_next(&s, &c, &len);
    if (len >= 1024)
      break;
  }
  cr_assert(i < 1000, "still interleaving after %d blocks", i);
  cr_assert_eq(c.algo, ACL_ALGO_NCCL);
  cr_assert_eq(s.current, ACL_SEARCH_CAND_NCCL);
}

/* The channel hint: the descent starts at NCCL's count and the baseline's
 * samples stand for that point (one measurement fewer); bad hints are ignored. */
Test(search, channel_hint_starts_descent_at_nccl_count)
{
  acl_search_t s;
  model_t m;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  acl_search_observe(&s, &(acl_search_obs_t){.ran_algo = -1, .ran_proto = -1, .ran_nch = -3});
  acl_search_observe(&s, &(acl_search_obs_t){.ran_algo = -1, .ran_proto = -1, .ran_nch = 0});
  cr_assert_eq(s.hint_ch, 0);
  acl_search_observe(&s, &(acl_search_obs_t){.ran_algo = -1, .ran_proto = -1, .ran_nch = 16});
  acl_candidate_t c;
  uint32_t len;
  int id = acl_search_next(&s, &c, &len); /* warm-up */
  for (uint32_t k = 0; k < len; k++)
    acl_search_observe(
        &s, &(acl_search_obs_t){.cand_id = id, .seconds = m.nccl_seconds, .overlap = 0.0f});
  id = acl_search_next(&s, &c, &len); /* baseline */
  for (uint32_t k = 0; k < len; k++)
    acl_search_observe(
        &s, &(acl_search_obs_t){.cand_id = id, .seconds = m.nccl_seconds, .overlap = 0.0f});
  id = acl_search_next(&s, &c, &len);
  acl_search_observe(&s, &(acl_search_obs_t){.ran_algo = -1,
                                             .ran_proto = -1,
                                             .ran_nch = 4}); /* too late once exploring: ignored */
  cr_assert_eq(s.hint_ch, 16);
  cr_assert_eq(c.algo, 1);
  cr_assert_eq(c.proto, 2);
  cr_assert_neq(c.nchannels, 16, "RING/SIMPLE/16 is the baseline: not measured again");
  cr_assert(c.nchannels == 32 || c.nchannels == 12 || c.nchannels == 24, "%d", c.nchannels);
  drive_opts_t o = {.max_calls = 2000, .settle = 1};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.current.nchannels, 24);
}

/* A subspace NCCL predicts > 3x slower than its pick is never explored. */
Test(search, skips_subspaces_predicted_far_slower)
{
  acl_search_t s;
  model_t m;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(&m, cost);
  cost[0][0] = 350.0f; /* TREE/LL: 3.5x RING/SIMPLE's 100 us */
  acl_search_params_t p = params();
  acl_search_init(&s, &p, &key, cost);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(&s, model_time, &m, &o) > 0);
  for (int i = 1; i < s.ncands; i++)
    cr_assert(!(s.cands[i].cand.algo == 0 && s.cands[i].cand.proto == 0), "TREE/LL explored");
}

/* Real samples are heavy-tailed (2xH200: 1000x outliers at 256 KiB) and
 * noisy: a converged decision fed such samples for a long time never
 * re-tunes, and the outliers are classified. */
Test(search, heavy_tailed_noise_never_retunes)
{
  acl_search_t s;
  model_t m;
  converge_simple(&s, &m);
  acl_candidate_t c;
  uint32_t len;
  int id = acl_search_next(&s, &c, &len);
  if (id == ACL_SEARCH_CAND_NCCL)
    id = acl_search_next(&s, &c, &len);
  double t = model_time(&m, &c, 0);
  uint64_t rng = 12345;
  for (int i = 0; i < 20000; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(rng >> 11) / 9007199254740992.0;
    double x = t * (0.9 + 0.2 * u); /* +-10 % */
    if ((rng >> 7) % 100 < 4)
      x *= 1000.0; /* 4 % preempted: 1000x */
    else if ((rng >> 7) % 100 < 10)
      x *= 1.6; /* 6 % late ranks */
    acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = x, .overlap = 0.0f});
  }
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert(acl_phase_decided(acl_search_phase(&s)));
  cr_assert_eq(r.retunes, 0);
  cr_assert_gt(r.outliers, 600u, "outliers classified: %u", r.outliers);
}

/* Each re-tune doubles the evidence the next one needs (exponential
 * back-off): a workload that keeps flipping settles. */
Test(search, retunes_back_off)
{
  acl_search_t s;
  model_t m;
  converge_simple(&s, &m);
  int needed[3];
  for (int k = 0; k < 3; k++) {
    acl_candidate_t c;
    uint32_t len;
    int id = acl_search_next(&s, &c, &len);
    if (id != s.current)
      id = acl_search_next(&s, &c, &len);
    double t = s.drift.ref_seconds;
    int i = 0;
    for (; i < 4096 && acl_phase_decided(acl_search_phase(&s)); i++)
      acl_search_observe(
          &s, &(acl_search_obs_t){.cand_id = s.current, .seconds = 3.0 * t, .overlap = 0.0f});
    cr_assert_eq(acl_search_phase(&s), ACL_PHASE_RETUNING, "round %d", k);
    needed[k] = i;
    drive_opts_t o = {.max_calls = 4000};
    cr_assert(drive(&s, model_time, &m, &o) > 0);
    cr_assert(acl_phase_decided(acl_search_phase(&s)));
  }
  cr_assert_gt(needed[1], needed[0] + s.params.drift_window / 2, "%d then %d", needed[0],
               needed[1]);
  cr_assert_gt(needed[2], needed[1] + s.params.drift_window, "%d then %d", needed[1], needed[2]);
}
