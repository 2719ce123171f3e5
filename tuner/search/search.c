/* The search for one workload (see tuner/search/search.h and docs/tuner.md):
 * warm-up, baseline and exploration (planning and judging). Convergence,
 * background validation, drift and reporting are in search_conv.c; the
 * candidate grid and table and the statistics in search_grid.c.
 *
 * Phases: warm-up (NCCL's choice, samples dropped) -> baseline (NCCL's choice
 * measured) -> exploring (subspaces by (algo, proto) in NCCL's cost order,
 * pattern-search coordinate descent over the resource axes) -> converged
 * (best measured candidate, validated against the baseline in the
 * background) -> retuning on drift.
 *
 * Everything lives in the flat acl_search_t; no pointers, no allocation, no
 * clock, no randomness: the same calls with the same samples give the same
 * bytes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tuner/search/search_int.h"

static bool better(const acl_search_t *s, int a, int b)
{
  return s->cands[a].robust_seconds <
         s->cands[b].robust_seconds * (1.0 - ACL_SEARCH_BETTER_EPS);
}

static void traj_push(acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  acl_traj_point_t *t = &s->traj[s->traj_head];
  memset(t, 0, sizeof *t);
  t->step = s->steps;
  t->cand_id = (uint16_t)id;
  t->cand = c->cand;
  t->busbw = (float)acl_search_busbw(s, c->robust_seconds);
  t->overlap = (float)acl_search_mean_overlap(c);
  s->traj_head = (s->traj_head + 1) % ACL_SEARCH_TRAJ;
  if (s->traj_len < ACL_SEARCH_TRAJ)
    s->traj_len++;
}

/* A verdict; steps count the verdicts that cost calls. */
static void judge_ex(acl_search_t *s, int id, bool costs_calls)
{
  acl_search_cand_t *c = &s->cands[id];
  c->robust_seconds = acl_search_trimmed_mean(c->seconds, c->nsamples);
  c->judged = 1;
  if (costs_calls)
    s->steps++;
  traj_push(s, id);
  int b = acl_search_best_judged(s, true);
  if (b >= 0)
    s->best = (uint16_t)b;
}

static void judge(acl_search_t *s, int id) { judge_ex(s, id, true); }

/* ---- init ---------------------------------------------------------------- */

void acl_search_params_default(acl_search_params_t *p)
{
  memset(p, 0, sizeof *p);
  p->warmup_calls = ACL_CONFIG_WARMUP_DEFAULT;
  p->samples_per_cand = ACL_CONFIG_SAMPLES_DEFAULT;
  p->max_channels = 32;
  p->nranks = 2;
  p->drift_ratio = 0.8;
  p->drift_window = 16;
  p->prune_ratio = 1.15;
  p->budget = ACL_CONFIG_BUDGET_PCT_DEFAULT / 100.0;
}

void acl_search_params_from_config(acl_search_params_t *p, const acl_config_t *cfg, int nranks)
{
  acl_search_params_default(p);
  p->warmup_calls = cfg->warmup_calls;
  p->samples_per_cand = cfg->samples_per_cand;
  p->budget = cfg->explore_budget_pct / 100.0;
  p->nranks = nranks;
}

/* One out-of-range value: counted, the first described. */
static void fixed(int *n, char *err, size_t errlen, const char *what, double had, double now)
{
  if ((*n)++ == 0 && err && errlen)
    snprintf(err, errlen, "search setting %s = %g is out of range; %g is used", what, had, now);
}

int acl_search_params_fix(acl_search_params_t *p, char *err, size_t errlen)
{
  acl_search_params_t d;
  acl_search_params_default(&d);
  int n = 0;
  if (err && errlen)
    err[0] = '\0';
#define FIX(field, bad, value)                                                               \
  if (bad) {                                                                                 \
    double had_ = (double)p->field;                                                          \
    p->field = (value);                                                                      \
    fixed(&n, err, errlen, #field, had_, (double)p->field);                                  \
  }
  FIX(warmup_calls, p->warmup_calls < 0 || p->warmup_calls > ACL_CONFIG_WARMUP_MAX,
      d.warmup_calls)
  FIX(samples_per_cand, p->samples_per_cand < ACL_CONFIG_SAMPLES_MIN, ACL_CONFIG_SAMPLES_MIN)
  FIX(samples_per_cand, p->samples_per_cand > ACL_SEARCH_MAX_SAMPLES, ACL_SEARCH_MAX_SAMPLES)
  FIX(max_channels, p->max_channels < 1, d.max_channels)
  FIX(max_channels, p->max_channels > ACL_SEARCH_MAX_CHANNELS, ACL_SEARCH_MAX_CHANNELS)
  FIX(nranks, p->nranks < 1, 1)
  FIX(drift_ratio, !(p->drift_ratio > 0.0 && p->drift_ratio < 1.0), d.drift_ratio)
  FIX(drift_window, p->drift_window < 4, 4)
  FIX(drift_window, p->drift_window > ACL_SEARCH_MAX_DRIFT_WINDOW, ACL_SEARCH_MAX_DRIFT_WINDOW)
  FIX(prune_ratio, !(p->prune_ratio >= 1.0 && p->prune_ratio < 1e6), d.prune_ratio)
  FIX(budget, !(p->budget >= 0.0 && p->budget <= 1e9), d.budget)
  FIX(chunk_axis, p->chunk_axis != 0 && p->chunk_axis != 1, 0)
#undef FIX
  return n;
}

static uint32_t mask_of(const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  uint32_t m = 0;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      if (cost[a][p] >= 0.0f && isfinite(cost[a][p]))
        m |= ACL_AP_BIT(a, p);
  return m;
}

void acl_search_init(acl_search_t *s, const acl_search_params_t *p, const acl_wkey_t *key,
                     const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  memset(s, 0, sizeof *s);
  if (p)
    s->params = *p;
  else
    acl_search_params_default(&s->params);
  acl_search_params_fix(&s->params, NULL, 0);
  if (key)
    s->key = *key;
  s->phase = ACL_PHASE_WARMUP;
  s->cur_sub = ACL_SEARCH_NONE;
  s->nccl_algo = s->nccl_proto = -1;
  s->overlap_conv = -1.0;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int q = 0; q < ACL_NUM_PROTO; q++)
      s->cost[a][q] = cost ? cost[a][q] : -1.0f;
  s->valid_mask = mask_of(s->cost);

  /* NCCL's pick: strict minimum, algorithm-major, lowest index on ties. */
  float minc = 0.0f;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int q = 0; q < ACL_NUM_PROTO; q++)
      if (acl_search_pair_valid(s, a, q) && (s->nccl_algo < 0 || s->cost[a][q] < minc)) {
        minc = s->cost[a][q];
        s->nccl_algo = (int8_t)a;
        s->nccl_proto = (int8_t)q;
      }

  /* Subspaces in NCCL's predicted order: likely winners first. */
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int q = 0; q < ACL_NUM_PROTO; q++) {
      if (!acl_search_pair_valid(s, a, q))
        continue;
      int i = s->nsubs++;
      while (i > 0 && s->cost[s->subs[i - 1].algo][s->subs[i - 1].proto] > s->cost[a][q]) {
        s->subs[i] = s->subs[i - 1];
        i--;
      }
      memset(&s->subs[i], 0, sizeof s->subs[i]);
      s->subs[i].algo = (int8_t)a;
      s->subs[i].proto = (int8_t)q;
      s->subs[i].clamp_idx = ACL_SEARCH_NONE;
    }
  /* NCCL's model is off by tens of percent, not by 3x: a subspace it
   * predicts that much slower than its pick is not worth its calls. */
  for (int i = 0; i < s->nsubs; i++)
    if (minc > 0.0f && s->cost[s->subs[i].algo][s->subs[i].proto] > ACL_SEARCH_SKIP_PRIOR * minc)
      s->subs[i].state = SUB_PRUNED;

  s->ncands = 1;
  s->cands[0].cand.algo = ACL_ALGO_NCCL;
  s->cands[0].cand.proto = -1;
  s->cands[0].sub = ACL_SEARCH_NONE;
}

void acl_search_restrict(acl_search_t *s, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  if (!s || !cost)
    return;
  s->valid_mask &= mask_of(cost);
  for (int i = 0; i < s->nsubs; i++)
    if (!acl_search_pair_valid(s, s->subs[i].algo, s->subs[i].proto))
      s->subs[i].state = SUB_INVALID;
  if (s->cur_sub != ACL_SEARCH_NONE && s->subs[s->cur_sub].state == SUB_INVALID)
    s->cur_sub = ACL_SEARCH_NONE;
  /* A decision some rank cannot run falls back to NCCL's own choice. */
  if (s->current != ACL_SEARCH_CAND_NCCL && !acl_search_usable(s, s->current) &&
      s->phase == ACL_PHASE_CONVERGED)
    acl_search_converge(s, ACL_SEARCH_CAND_NCCL);
  int b = acl_search_best_judged(s, true);
  s->best = (uint16_t)(b >= 0 ? b : 0);
}

void acl_search_hint_channels(acl_search_t *s, int nch)
{
  if (!s || nch <= 0 || nch > 4096)
    return;
  if (s->phase != ACL_PHASE_WARMUP && s->phase != ACL_PHASE_BASELINE)
    return; /* the descent has started: changing its origin helps nobody */
  s->hint_ch = (int16_t)(nch > s->params.max_channels ? s->params.max_channels : nch);
}

void acl_search_hint_nccl(acl_search_t *s, int algo, int proto, int nch)
{
  acl_search_hint_channels(s, nch);
  if (!s || s->hint_ch <= 0 || algo < 0 || algo >= ACL_NUM_ALGO || proto < 0 ||
      proto >= ACL_NUM_PROTO || !acl_search_pair_valid(s, algo, proto))
    return;
  if (s->phase != ACL_PHASE_WARMUP && s->phase != ACL_PHASE_BASELINE)
    return;
  s->nccl_algo = (int8_t)algo;
  s->nccl_proto = (int8_t)proto;
}

void acl_search_observe_channels(acl_search_t *s, int cand_id, int nch)
{
  if (!s || cand_id <= 0 || cand_id >= s->ncands || nch <= 0 || nch > 4096)
    return;
  acl_search_cand_t *c = &s->cands[cand_id];
  c->ran_ch = (int16_t)nch;
  if (c->sub == ACL_SEARCH_NONE || c->cand.nchannels <= 0 || nch >= c->cand.nchannels)
    return;
  acl_search_sub_t *sub = &s->subs[c->sub];
  if (sub->clamp_idx == ACL_SEARCH_NONE || c->axis_idx[0] < sub->clamp_idx) {
    sub->clamp_idx = c->axis_idx[0];
    sub->clamp_ch = (uint16_t)nch;
  }
}

/* ---- exploration --------------------------------------------------------- */

/* Candidate id takes the samples and verdict of `from`, which NCCL runs
 * identically: no calls spent. */
static void copy_verdict(acl_search_t *s, int id, int from, bool costs_calls)
{
  acl_search_cand_t *c = &s->cands[id];
  const acl_search_cand_t *b = &s->cands[from];
  if (c->judged || !b->judged || b->nsamples == 0)
    return;
  memcpy(c->seconds, b->seconds, sizeof c->seconds);
  memcpy(c->overlap, b->overlap, sizeof c->overlap);
  c->nsamples = b->nsamples;
  c->ntotal_lo = b->nsamples;
  c->got = b->nsamples;
  judge_ex(s, id, costs_calls);
}

/* NCCL's own subspace at the channel count NCCL ran is the baseline itself:
 * its samples stand for that point instead of measuring it again. */
static void seed_from_baseline(acl_search_t *s, int id) { copy_verdict(s, id, 0, true); }

/* A grid point at or above a channel request NCCL was seen to clamp runs as
 * the clamped count: when a judged candidate of the subspace runs that count
 * (or it is NCCL's own choice), the point is its twin and costs nothing.
 * Returns whether id is judged now. */
static bool merge_twin(acl_search_t *s, int id)
{
  acl_search_cand_t *c = &s->cands[id];
  if (c->sub == ACL_SEARCH_NONE)
    return false;
  const acl_search_sub_t *sub = &s->subs[c->sub];
  if (sub->clamp_idx == ACL_SEARCH_NONE || c->axis_idx[0] < sub->clamp_idx)
    return false;
  int ran = sub->clamp_ch, twin = -1;
  if (sub->algo == s->nccl_algo && sub->proto == s->nccl_proto && s->hint_ch == ran &&
      s->cands[0].judged && c->cand.chunk_log2 == 0)
    twin = 0;
  for (int i = 1; i < s->ncands && twin < 0; i++) {
    const acl_search_cand_t *t = &s->cands[i];
    if (i != id && t->judged && t->sub == c->sub && t->cand.chunk_log2 == c->cand.chunk_log2 &&
        (t->ran_ch == ran || (t->ran_ch == 0 && t->cand.nchannels == ran)))
      twin = i;
  }
  if (twin < 0)
    return false;
  c->ran_ch = (int16_t)ran;
  c->merged = 1;
  s->merged++;
  copy_verdict(s, id, twin, false);
  return c->judged;
}

static void sub_begin(acl_search_t *s, int si)
{
  acl_search_sub_t *sub = &s->subs[si];
  sub->state = SUB_ACTIVE;
  /* Start where the best point so far is (channel optima transfer well
   * between subspaces), else at NCCL's channel count or mid-range. */
  int b = acl_search_best_judged(s, false);
  for (int ax = 0; ax < ACL_SEARCH_NUM_AXES; ax++)
    sub->center[ax] = (uint8_t)(b > 0 ? s->cands[b].axis_idx[ax] : acl_search_axis_start(s, ax));
  sub->axis = 0;
  sub->lo = -1;
  sub->hi = (int8_t)acl_search_axis_count(s, 0);
  /* Near a known optimum refine locally; from scratch take big steps. */
  sub->step = b > 0 ? 1 : 3;
  sub->dir = 0;
  sub->checked = 0;
  s->cur_sub = (uint8_t)si;
  if (b <= 0 && s->hint_ch > 0 && sub->algo == s->nccl_algo && sub->proto == s->nccl_proto &&
      acl_search_axis_value(s, ACL_SEARCH_AXIS_CHANNELS, sub->center[0]) == s->hint_ch) {
    int id = acl_search_find_or_add(s, si, sub->center);
    if (id > 0)
      seed_from_baseline(s, id);
  }
}

static void sub_next_axis(acl_search_t *s, acl_search_sub_t *sub)
{
  sub->axis++;
  if (sub->axis == ACL_SEARCH_AXIS_CHUNK && acl_search_axis_count(s, sub->axis) > 1) {
    int c = acl_search_find_or_add(s, (int)(sub - s->subs), sub->center);
    if (!acl_search_chunk_worth(s, c))
      sub->axis++; /* far from the best: chunk size will not make it win */
  }
  if (sub->axis < ACL_SEARCH_NUM_AXES) {
    sub->lo = -1;
    sub->hi = (int8_t)(sub->axis == ACL_SEARCH_AXIS_CHUNK ? acl_search_chunk_hi(s, sub->algo)
                                                          : acl_search_axis_count(s, sub->axis));
    sub->step = 2;
    sub->dir = 0;
  }
}

/* The next candidate that needs samples, advancing the descent through every
 * point already judged; -1 when exploration is over. */
static int plan(acl_search_t *s)
{
  uint64_t cap = (uint64_t)ACL_SEARCH_MAX_EXPLORE_MULT * (uint64_t)s->params.samples_per_cand;
  for (int guard = 0; guard < 1024; guard++) {
    if (s->steps - s->tune_start_step >= ACL_SEARCH_MAX_STEPS || s->explore_calls >= cap)
      return -1;
    if (s->cur_sub == ACL_SEARCH_NONE || s->subs[s->cur_sub].state != SUB_ACTIVE) {
      s->cur_sub = ACL_SEARCH_NONE;
      int si = -1;
      for (int i = 0; i < s->nsubs && si < 0; i++)
        if (s->subs[i].state == SUB_PENDING)
          si = i;
      if (si < 0)
        return -1;
      sub_begin(s, si);
    }
    acl_search_sub_t *sub = &s->subs[s->cur_sub];
    if (sub->axis >= ACL_SEARCH_NUM_AXES) {
      sub->state = SUB_DONE;
      continue;
    }
    int ax = sub->axis, n = acl_search_axis_count(s, ax);
    if (n <= 1) {
      sub_next_axis(s, sub);
      continue;
    }
    int c = acl_search_find_or_add(s, s->cur_sub, sub->center);
    if (c < 0)
      return -1;
    if (!s->cands[c].judged && !merge_twin(s, c))
      return c;
    if (!sub->checked) {
      /* Prune rule: a subspace whose first point (taken at the best channel
       * count so far) is > prune_ratio x slower than the best so far. NCCL's
       * own subspace is never pruned: the baseline lies in it. */
      sub->checked = 1;
      int b = acl_search_best_judged(s, true);
      bool own = sub->algo == s->nccl_algo && sub->proto == s->nccl_proto;
      if (!own && b >= 0 && b != c &&
          s->cands[c].robust_seconds > s->params.prune_ratio * s->cands[b].robust_seconds) {
        sub->state = SUB_PRUNED;
        continue;
      }
    }
    int center = sub->center[ax];
    int next;
    if (sub->dir == 0) {
      next = center + sub->step;
      if (next >= sub->hi)
        next = sub->hi - 1;
      if (next <= center) {
        sub->dir = 1;
        continue;
      }
    } else {
      next = center - sub->step;
      if (next <= sub->lo)
        next = sub->lo + 1;
      if (next >= center) {
        /* Both sides tried at this step: shrink it, or the axis is done. */
        if (sub->hi - sub->lo <= 2 || sub->step <= 1) {
          sub_next_axis(s, sub);
        } else {
          sub->step = (uint8_t)(sub->step / 2);
          sub->dir = 0;
        }
        continue;
      }
    }
    uint8_t idx[ACL_SEARCH_NUM_AXES];
    memcpy(idx, sub->center, sizeof idx);
    idx[ax] = (uint8_t)next;
    int nc = acl_search_find_or_add(s, s->cur_sub, idx);
    if (nc < 0)
      return -1;
    if (!s->cands[nc].judged && !merge_twin(s, nc))
      return nc;
    if (better(s, nc, c)) {
      /* Unimodal: the optimum lies beyond the incumbent; keep going the
       * same way with a doubled step. */
      if (sub->dir == 0)
        sub->lo = (int8_t)center;
      else
        sub->hi = (int8_t)center;
      sub->center[ax] = (uint8_t)next;
      if (sub->step < 64)
        sub->step = (uint8_t)(sub->step * 2);
    } else if (sub->dir == 0) {
      sub->hi = (int8_t)next;
      sub->dir = 1;
    } else {
      sub->lo = (int8_t)next;
    }
  }
  return -1;
}

/* Exploration over: the best measured candidate becomes the (provisional)
 * decision when its estimate beats the baseline by ACL_SEARCH_PROV_MARGIN;
 * the background validation (search_conv.c) then confirms or reverts it. */
static void finish(acl_search_t *s)
{
  int b = -1;
  for (int i = 1; i < s->ncands; i++) /* NCCL's own choice in disguise is no gain */
    if (s->cands[i].judged && acl_search_usable(s, i) && !acl_search_is_nccl(s, i) &&
        (b < 0 || s->cands[i].robust_seconds < s->cands[b].robust_seconds))
      b = i;
  const acl_search_cand_t *base = &s->cands[0];
  if (b > 0 && s->cands[b].robust_seconds < base->robust_seconds * (1.0 - ACL_SEARCH_PROV_MARGIN))
    acl_search_converge(s, b);
  else
    acl_search_converge(s, ACL_SEARCH_CAND_NCCL);
}

/* Calls to hand out for a candidate under evaluation. */
static uint32_t block_len(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  uint32_t spc = (uint32_t)s->params.samples_per_cand;
  uint32_t target = spc;
  if (id != ACL_SEARCH_CAND_NCCL && spc > ACL_SEARCH_EARLY2_N && c->got < ACL_SEARCH_EARLY2_N)
    target = ACL_SEARCH_EARLY2_N;
  else if (id != ACL_SEARCH_CAND_NCCL && spc > ACL_SEARCH_EARLY_N && c->got < ACL_SEARCH_EARLY_N)
    target = ACL_SEARCH_EARLY_N;
  if (c->planned < target)
    return target - c->planned;
  /* Samples are late (a host far ahead of its GPU: 500 calls at 1 GiB) or
   * lost: wait for them (hand_out), NCCL's choice running with one probe
   * sample per block. Samples arrive in call order, so once a probe arrived
   * the missing ones are lost and run again (the baseline's own probes are
   * baseline samples). */
  if (c->waits < ACL_SEARCH_SAMPLE_WAITS &&
      (id == ACL_SEARCH_CAND_NCCL || s->cands[0].got <= s->wait_mark))
    return 0;
  return target > c->got ? target - c->got : 1;
}

static int hand_out(acl_search_t *s, int id, acl_candidate_t *out, uint32_t *len)
{
  uint32_t l = block_len(s, id);
  acl_search_cand_t *c = &s->cands[id];
  bool wait = l == 0;
  if (wait) {
    if (c->waits++ == 0)
      s->wait_mark = s->c0_sampled;
    id = ACL_SEARCH_CAND_NCCL;
    c = &s->cands[0];
    l = ACL_SEARCH_WAIT_MIN;
  } else {
    c->waits = 0;
  }
  /* Every call of a measuring block carries profiler events (a waiting
   * block only its probe); a config's first call pays its set-up once. */
  uint32_t sampled = wait ? 1 : l;
  s->spent_s += sampled * ACL_SEARCH_EVENT_COST_S;
  if (!s->events_paid) {
    s->spent_s += ACL_SEARCH_FIRST_EVENTS_COST_S;
    s->events_paid = 1;
  }
  if (id == ACL_SEARCH_CAND_NCCL)
    s->c0_sampled += sampled;
  if (id != ACL_SEARCH_CAND_NCCL && c->planned == 0)
    s->spent_s += ACL_SEARCH_SETUP_COST_S;
  s->waiting = 0;
  s->probe = wait;
  c->planned = (uint16_t)(c->planned + l > 0xffff ? 0xffff : c->planned + l);
  s->current = (uint16_t)id;
  s->calls_planned += l;
  if ((s->phase == ACL_PHASE_EXPLORING || s->phase == ACL_PHASE_RETUNING) && !wait)
    s->explore_calls += l;
  if (out)
    *out = c->cand;
  if (len)
    *len = l;
  return id;
}

/* What the first look at candidate id (ACL_SEARCH_EARLY2_N samples) is
 * expected to cost beyond the incumbent: NCCL's cost table gives its prior
 * slowdown (clamped to [1, ACL_SEARCH_SKIP_PRIOR]: it is only a prior). */
static double step_cost(const acl_search_t *s, int id)
{
  const acl_candidate_t *c = &s->cands[id].cand;
  double ref = acl_search_ref_seconds(s), ratio = 1.0;
  float cn = s->nccl_algo >= 0 ? s->cost[s->nccl_algo][s->nccl_proto] : -1.0f;
  float cc = c->algo >= 0 && c->proto >= 0 ? s->cost[c->algo][c->proto] : -1.0f;
  if (cn > 0.0f && cc > 0.0f)
    ratio = fmin(fmax((double)cc / cn, 1.0), ACL_SEARCH_SKIP_PRIOR);
  int n = s->params.samples_per_cand < ACL_SEARCH_EARLY2_N ? s->params.samples_per_cand
                                                           : ACL_SEARCH_EARLY2_N;
  return n * (ACL_SEARCH_EVENT_COST_S + ref * (ratio - 1.0)) + ACL_SEARCH_SETUP_COST_S;
}

int acl_search_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  if (s->phase == ACL_PHASE_WARMUP) {
    if (s->calls_planned < (uint64_t)s->params.warmup_calls) {
      uint32_t l = (uint32_t)((uint64_t)s->params.warmup_calls - s->calls_planned);
      s->calls_planned += l;
      s->current = ACL_SEARCH_CAND_NCCL;
      if (out)
        *out = s->cands[0].cand;
      if (len)
        *len = l;
      return ACL_SEARCH_CAND_NCCL;
    }
    s->phase = ACL_PHASE_BASELINE;
  }
  if (s->phase == ACL_PHASE_BASELINE && s->cands[0].judged)
    s->phase = ACL_PHASE_EXPLORING;
  if (s->phase == ACL_PHASE_BASELINE ||
      ((s->phase == ACL_PHASE_EXPLORING || s->phase == ACL_PHASE_RETUNING) &&
       !s->cands[0].judged)) {
    /* Measuring the baseline costs its profiler events (the first ones of
     * the workload dearly). */
    double need = (double)s->params.samples_per_cand * ACL_SEARCH_EVENT_COST_S +
                  (s->events_paid ? 0.0 : ACL_SEARCH_FIRST_EVENTS_COST_S);
    if (s->cands[0].planned == 0 && need > acl_search_budget_left(s))
      return acl_search_wait_block(s, need, ACL_SEARCH_CAND_NCCL, out, len);
    return hand_out(s, ACL_SEARCH_CAND_NCCL, out, len);
  }
  if (s->phase == ACL_PHASE_EXPLORING || s->phase == ACL_PHASE_RETUNING) {
    int id = plan(s);
    if (id >= 0 && s->cands[id].planned == 0 && step_cost(s, id) > acl_search_budget_left(s))
      /* NCCL's own choice waits for the budget: unvalidated, a candidate
       * ahead on a few samples may well be slower. */
      return acl_search_wait_block(s, step_cost(s, id), ACL_SEARCH_CAND_NCCL, out, len);
    if (id >= 0)
      return hand_out(s, id, out, len);
    finish(s);
  }
  if (s->phase == ACL_PHASE_CONVERGED)
    return acl_search_next_converged(s, out, len);
  /* DISABLED or corrupt: NCCL's own choice. */
  if (out)
    *out = s->cands[0].cand;
  if (len)
    *len = ACL_SEARCH_CONVERGED_BLOCK;
  return ACL_SEARCH_CAND_NCCL;
}

/* ---- samples ------------------------------------------------------------- */

void acl_search_add_sample(acl_search_t *s, int cand_id, double seconds, float overlap)
{
  if (!s || cand_id < 0 || cand_id >= s->ncands || !(seconds > 0.0) || !isfinite(seconds))
    return;
  if (!(overlap >= 0.0f && overlap <= 1.0f))
    overlap = -1.0f;
  /* Warm-up calls carry no profiler events (acl_search_sample_shift); a
   * source that samples them anyway (CUPTI) has them dropped here, and the
   * consensus layer drops late ones by call index. */
  if (cand_id == ACL_SEARCH_CAND_NCCL && s->phase == ACL_PHASE_WARMUP) {
    s->warmup_dropped++;
    return;
  }
  s->samples_seen++;
  acl_search_cand_t *c = &s->cands[cand_id];
  if (c->nsamples >= 3 && seconds > ACL_SEARCH_OUTLIER * acl_search_median(c->seconds, c->nsamples))
    s->outliers++; /* classified (preempted, a straggler); the statistics trim it */
  /* What exploring costs beyond the incumbent is charged to the budget. */
  if (s->phase != ACL_PHASE_CONVERGED && !acl_search_is_nccl(s, cand_id) && s->cands[0].judged)
    s->spent_s += fmax(0.0, seconds - acl_search_ref_seconds(s));
  int slot = c->nsamples < ACL_SEARCH_MAX_SAMPLES ? c->nsamples
                                                  : (int)(c->ntotal_lo % ACL_SEARCH_MAX_SAMPLES);
  c->seconds[slot] = (float)seconds;
  c->overlap[slot] = overlap;
  if (c->nsamples < ACL_SEARCH_MAX_SAMPLES)
    c->nsamples++;
  c->ntotal_lo++;
  if (c->got < 0xffff)
    c->got++;

  if (s->phase == ACL_PHASE_CONVERGED) {
    acl_search_converged_sample(s, cand_id, seconds, overlap);
    return;
  }
  if (c->judged) { /* a late extra sample refines the verdict */
    c->robust_seconds = acl_search_trimmed_mean(c->seconds, c->nsamples);
    return;
  }
  int spc = s->params.samples_per_cand;
  if (c->got >= spc) {
    judge(s, cand_id);
    return;
  }
  /* Early verdict for a clearly slower candidate (median, robust to one
   * outlier among three): saves the rest of its samples. */
  if (cand_id != ACL_SEARCH_CAND_NCCL && c->got >= ACL_SEARCH_EARLY2_N) {
    int b = acl_search_best_judged(s, true);
    double ref = b >= 0 ? s->cands[b].robust_seconds : 0.0;
    /* After 2 samples only when both are clearly slower (the faster of two
     * is robust to a straggler); after 3 on the median. */
    bool early2 = b >= 0 && c->got < ACL_SEARCH_EARLY_N && c->nsamples >= 2 &&
                  fminf(c->seconds[0], c->seconds[1]) > ACL_SEARCH_EARLY2_REJECT * ref;
    bool early3 = b >= 0 && c->got >= ACL_SEARCH_EARLY_N &&
                  acl_search_median(c->seconds, c->nsamples) > ACL_SEARCH_EARLY_REJECT * ref;
    if (early2 || early3)
      judge(s, cand_id);
  }
}
