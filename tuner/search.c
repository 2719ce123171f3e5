/* The search for one workload (see tuner/search.h and docs/tuner.md).
 *
 * Phases: warm-up (NCCL's choice, samples dropped) -> baseline (NCCL's choice
 * measured) -> exploring (subspaces by (algo, proto) in NCCL's cost order,
 * pattern-search coordinate descent over the resource axes) -> converged
 * (best measured candidate, baseline included) -> retuning on drift.
 *
 * Everything lives in the flat acl_search_t; no pointers, no allocation, no
 * clock, no randomness: the same calls with the same samples give the same
 * bytes. */
#include "tuner/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tuning constants (documented in docs/tuner.md). */
#define ACL_SEARCH_BETTER_EPS 0.02   /* a move must beat the incumbent by 2% */
#define ACL_SEARCH_BASE_MARGIN 0.01  /* and the final pick the baseline by 1% */
#define ACL_SEARCH_ACCEPT_Z 2.0     /* final gain must exceed 2 standard errors */
#define ACL_SEARCH_SE_INFLATE 1.1   /* trimmed mean vs plain mean efficiency */
#define ACL_SEARCH_EARLY_N 3         /* samples before an early verdict */
#define ACL_SEARCH_EARLY_REJECT 1.25 /* median > 1.25x best so far: judged early */
#define ACL_SEARCH_MAX_STEPS 40      /* candidates judged per (re)tuning */
#define ACL_SEARCH_MAX_EXPLORE_MULT 48 /* explore calls <= 48 x samples_per_cand */
#define ACL_SEARCH_CONVERGED_BLOCK 4096u
#define ACL_SEARCH_OVERLAP_SHIFT 0.3 /* sustained overlap change that re-tunes */
#define ACL_SEARCH_NONE 0xff

enum { SUB_PENDING = 0, SUB_ACTIVE, SUB_DONE, SUB_PRUNED, SUB_INVALID };

/* ---- axes ---------------------------------------------------------------- */

/* Channel grid: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64 (about sqrt(2)
 * apart, so doubling/halving the step in grid units doubles/halves the
 * factor), cut at max_channels, which is always the last point. */
static const int16_t chan_grid[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
#define CHAN_GRID_N ((int)(sizeof chan_grid / sizeof chan_grid[0]))

/* Chunk axis for tuner v6 (NCCL 2.30): disabled, a single point 0 = "NCCL
 * decides". Enabling it means listing values here; the descent needs no
 * change (an axis of one point is skipped). */
static const int32_t chunk_grid[] = {0};
#define CHUNK_GRID_N ((int)(sizeof chunk_grid / sizeof chunk_grid[0]))

static int axis_count(const acl_search_t *s, int axis)
{
  if (axis == ACL_SEARCH_AXIS_CHANNELS) {
    int n = 0;
    while (n < CHAN_GRID_N && chan_grid[n] < s->params.max_channels)
      n++;
    return n + 1; /* max_channels itself closes the grid */
  }
  return CHUNK_GRID_N;
}

static int axis_value(const acl_search_t *s, int axis, int idx)
{
  if (axis == ACL_SEARCH_AXIS_CHANNELS) {
    int n = axis_count(s, axis);
    return idx >= n - 1 ? s->params.max_channels : chan_grid[idx];
  }
  return chunk_grid[idx < CHUNK_GRID_N ? idx : CHUNK_GRID_N - 1];
}

/* Where a subspace's descent starts on an axis when nothing is known yet:
 * the middle of the channel range (half of NCCL's ceiling). */
static int axis_start(const acl_search_t *s, int axis)
{
  if (axis != ACL_SEARCH_AXIS_CHANNELS)
    return 0;
  int n = axis_count(s, axis), want = s->params.max_channels / 2, best = 0;
  for (int i = 0; i < n; i++)
    if (abs(axis_value(s, axis, i) - want) < abs(axis_value(s, axis, best) - want))
      best = i;
  return best;
}

/* ---- statistics ---------------------------------------------------------- */

static void sort_floats(float *v, int n)
{
  for (int i = 1; i < n; i++) {
    float x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      j--;
    }
    v[j + 1] = x;
  }
}

/* Mean of the fastest 75% (rounded up): slow outliers never count. */
static double trimmed_mean(const float *src, int n)
{
  float v[64];
  if (n <= 0)
    return 0.0;
  if (n > 64)
    n = 64;
  memcpy(v, src, (size_t)n * sizeof v[0]);
  sort_floats(v, n);
  int k = (3 * n + 3) / 4;
  double sum = 0.0;
  for (int i = 0; i < k; i++)
    sum += v[i];
  return sum / k;
}

static double median_of(const float *src, int n)
{
  float v[ACL_SEARCH_MAX_SAMPLES];
  if (n <= 0)
    return 0.0;
  memcpy(v, src, (size_t)n * sizeof v[0]);
  sort_floats(v, n);
  return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

/* Relative noise of single samples, pooled over every judged candidate
 * (robust: 1.4826 x MAD / median), so the final comparison knows how much a
 * difference of trimmed means can be trusted. */
static double pooled_rel_sd(const acl_search_t *s)
{
  double sum = 0.0;
  int n = 0;
  for (int i = 0; i < s->ncands; i++) {
    const acl_search_cand_t *c = &s->cands[i];
    if (!c->judged || c->nsamples < 3)
      continue;
    double med = median_of(c->seconds, c->nsamples);
    float dev[ACL_SEARCH_MAX_SAMPLES];
    for (int k = 0; k < c->nsamples; k++)
      dev[k] = (float)fabs(c->seconds[k] - med);
    double rel = med > 0.0 ? 1.4826 * median_of(dev, c->nsamples) / med : 0.0;
    sum += rel * rel;
    n++;
  }
  return n ? sqrt(sum / n) : 0.0;
}

static double mean_overlap(const acl_search_cand_t *c)
{
  double sum = 0.0;
  int n = 0;
  for (int i = 0; i < c->nsamples; i++)
    if (c->overlap[i] >= 0.0f) {
      sum += c->overlap[i];
      n++;
    }
  return n ? sum / n : -1.0;
}

static double busbw_of(const acl_search_t *s, double seconds)
{
  if (seconds <= 0.0)
    return 0.0;
  return (double)s->key.nbytes * acl_busbw_factor(s->key.coll, s->params.nranks) / seconds;
}

/* ---- candidates ---------------------------------------------------------- */

static bool pair_valid(const acl_search_t *s, int a, int p)
{
  return (s->valid_mask & ACL_AP_BIT(a, p)) != 0;
}

static int find_or_add(acl_search_t *s, int sub, const uint8_t idx[ACL_SEARCH_NUM_AXES])
{
  for (int i = 1; i < s->ncands; i++) {
    const acl_search_cand_t *c = &s->cands[i];
    if (c->sub == sub && memcmp(c->axis_idx, idx, ACL_SEARCH_NUM_AXES) == 0)
      return i;
  }
  if (s->ncands >= ACL_SEARCH_MAX_CANDS)
    return -1;
  int id = s->ncands++;
  acl_search_cand_t *c = &s->cands[id];
  memset(c, 0, sizeof *c);
  c->sub = (uint8_t)sub;
  memcpy(c->axis_idx, idx, ACL_SEARCH_NUM_AXES);
  c->cand.algo = s->subs[sub].algo;
  c->cand.proto = s->subs[sub].proto;
  c->cand.nchannels = (int16_t)axis_value(s, ACL_SEARCH_AXIS_CHANNELS, idx[0]);
  c->cand.chunk_bytes = axis_value(s, ACL_SEARCH_AXIS_CHUNK, idx[1]);
  return id;
}

static bool cand_usable(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  if (id == ACL_SEARCH_CAND_NCCL)
    return true;
  return c->judged && pair_valid(s, c->cand.algo, c->cand.proto);
}

/* Best judged candidate (baseline included); 0xffff when none. */
static int best_judged(const acl_search_t *s, bool include_baseline)
{
  int best = -1;
  for (int i = include_baseline ? 0 : 1; i < s->ncands; i++) {
    const acl_search_cand_t *c = &s->cands[i];
    if (!c->judged || !cand_usable(s, i))
      continue;
    if (best < 0 || c->robust_seconds < s->cands[best].robust_seconds)
      best = i;
  }
  return best;
}

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
  t->busbw = (float)busbw_of(s, c->robust_seconds);
  t->overlap = (float)mean_overlap(c);
  s->traj_head = (s->traj_head + 1) % ACL_SEARCH_TRAJ;
  if (s->traj_len < ACL_SEARCH_TRAJ)
    s->traj_len++;
}

static void judge(acl_search_t *s, int id)
{
  acl_search_cand_t *c = &s->cands[id];
  c->robust_seconds = trimmed_mean(c->seconds, c->nsamples);
  c->judged = 1;
  s->steps++;
  traj_push(s, id);
  int b = best_judged(s, true);
  if (b >= 0)
    s->best = (uint16_t)b;
}

static void reset_eval(acl_search_cand_t *c)
{
  c->planned = 0;
  c->got = 0;
  c->judged = 0;
}

/* ---- init ---------------------------------------------------------------- */

void acl_search_params_default(acl_search_params_t *p)
{
  memset(p, 0, sizeof *p);
  p->warmup_calls = 5;
  p->samples_per_cand = 5;
  p->max_channels = 32;
  p->nranks = 2;
  p->drift_ratio = 0.8;
  p->drift_window = 16;
  p->prune_ratio = 1.15;
}

static void sanitize(acl_search_params_t *p)
{
  acl_search_params_t d;
  acl_search_params_default(&d);
  if (p->warmup_calls < 0 || p->warmup_calls > 1000)
    p->warmup_calls = d.warmup_calls;
  if (p->samples_per_cand < 2)
    p->samples_per_cand = 2;
  if (p->samples_per_cand > ACL_SEARCH_MAX_SAMPLES)
    p->samples_per_cand = ACL_SEARCH_MAX_SAMPLES;
  if (p->max_channels < 1)
    p->max_channels = d.max_channels;
  if (p->max_channels > 64)
    p->max_channels = 64;
  if (p->nranks < 1)
    p->nranks = 1;
  if (!(p->drift_ratio > 0.0 && p->drift_ratio < 1.0))
    p->drift_ratio = d.drift_ratio;
  if (p->drift_window < 4)
    p->drift_window = 4;
  if (p->drift_window > 64)
    p->drift_window = 64;
  if (!(p->prune_ratio >= 1.0 && p->prune_ratio < 1e6))
    p->prune_ratio = d.prune_ratio;
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
  sanitize(&s->params);
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
      if (pair_valid(s, a, q) && (s->nccl_algo < 0 || s->cost[a][q] < minc)) {
        minc = s->cost[a][q];
        s->nccl_algo = (int8_t)a;
        s->nccl_proto = (int8_t)q;
      }

  /* Subspaces in NCCL's predicted order: likely winners first. */
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int q = 0; q < ACL_NUM_PROTO; q++) {
      if (!pair_valid(s, a, q))
        continue;
      int i = s->nsubs++;
      while (i > 0 && s->cost[s->subs[i - 1].algo][s->subs[i - 1].proto] > s->cost[a][q]) {
        s->subs[i] = s->subs[i - 1];
        i--;
      }
      memset(&s->subs[i], 0, sizeof s->subs[i]);
      s->subs[i].algo = (int8_t)a;
      s->subs[i].proto = (int8_t)q;
    }

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
    if (!pair_valid(s, s->subs[i].algo, s->subs[i].proto))
      s->subs[i].state = SUB_INVALID;
  if (s->cur_sub != ACL_SEARCH_NONE && s->subs[s->cur_sub].state == SUB_INVALID)
    s->cur_sub = ACL_SEARCH_NONE;
  /* A decision some rank cannot run falls back to NCCL's own choice. */
  if (s->current != ACL_SEARCH_CAND_NCCL && !cand_usable(s, s->current) &&
      s->phase == ACL_PHASE_CONVERGED)
    s->current = ACL_SEARCH_CAND_NCCL;
  int b = best_judged(s, true);
  s->best = (uint16_t)(b >= 0 ? b : 0);
}

/* ---- exploration --------------------------------------------------------- */

static void sub_begin(acl_search_t *s, int si)
{
  acl_search_sub_t *sub = &s->subs[si];
  sub->state = SUB_ACTIVE;
  /* Start where the best point so far is (channel optima transfer well
   * between subspaces), else mid-range. */
  int b = best_judged(s, false);
  for (int ax = 0; ax < ACL_SEARCH_NUM_AXES; ax++)
    sub->center[ax] = (uint8_t)(b > 0 ? s->cands[b].axis_idx[ax] : axis_start(s, ax));
  sub->axis = 0;
  sub->lo = -1;
  sub->hi = (int8_t)axis_count(s, 0);
  /* Near a known optimum refine locally; from scratch take big steps. */
  sub->step = b > 0 ? 1 : 2;
  sub->dir = 0;
  sub->checked = 0;
  s->cur_sub = (uint8_t)si;
}

static void sub_next_axis(acl_search_t *s, acl_search_sub_t *sub)
{
  sub->axis++;
  if (sub->axis < ACL_SEARCH_NUM_AXES) {
    sub->lo = -1;
    sub->hi = (int8_t)axis_count(s, sub->axis);
    sub->step = 2;
    sub->dir = 0;
  }
}

/* The next candidate that needs samples, advancing the descent through every
 * point already judged; -1 when exploration is over. */
static int plan(acl_search_t *s)
{
  uint64_t cap = (uint64_t)ACL_SEARCH_MAX_EXPLORE_MULT * (uint64_t)s->params.samples_per_cand;
  if (s->confirm_round == 1) {
    if (!s->cands[0].judged)
      return 0;
    if (!s->cands[s->best].judged && s->best != 0)
      return s->best;
    return -1;
  }
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
    int ax = sub->axis, n = axis_count(s, ax);
    if (n <= 1) {
      sub_next_axis(s, sub);
      continue;
    }
    int c = find_or_add(s, s->cur_sub, sub->center);
    if (c < 0)
      return -1;
    if (!s->cands[c].judged)
      return c;
    if (!sub->checked) {
      /* Prune rule: a subspace whose first point (taken at the best channel
       * count so far) is > prune_ratio x slower than the best so far. NCCL's
       * own subspace is never pruned: the baseline lies in it. */
      sub->checked = 1;
      int b = best_judged(s, true);
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
    int nc = find_or_add(s, s->cur_sub, idx);
    if (nc < 0)
      return -1;
    if (!s->cands[nc].judged)
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

static void converge(acl_search_t *s, int id)
{
  acl_search_cand_t *c = &s->cands[id];
  s->phase = ACL_PHASE_CONVERGED;
  s->current = (uint16_t)id;
  s->best = (uint16_t)id;
  s->converged_seconds = c->robust_seconds;
  s->calls_to_converge = s->calls_planned - s->tune_start_call;
  if (s->calls_to_converge == 0)
    s->calls_to_converge = 1;
  s->overlap_conv = mean_overlap(c);
  s->drift_count = 0;
  s->drift_head = 0;
  s->tuned_once = 1;
  s->confirm_round = 0;
  s->cur_sub = ACL_SEARCH_NONE;
}

/* Final decision: the best measured candidate including the baseline. A
 * candidate replaces the baseline only when its gain exceeds both
 * ACL_SEARCH_BASE_MARGIN and ACL_SEARCH_ACCEPT_Z standard errors of the
 * difference (pooled sample noise); an undecided gain gets one confirmation
 * round that fills both sample rings before the verdict. */
static bool accept(const acl_search_t *s, int b, bool *undecided)
{
  const acl_search_cand_t *c = &s->cands[b], *base = &s->cands[0];
  double gain = 1.0 - c->robust_seconds / base->robust_seconds;
  double sd = pooled_rel_sd(s);
  double se = ACL_SEARCH_SE_INFLATE * sd *
              sqrt(1.0 / (c->nsamples ? c->nsamples : 1) + 1.0 / (base->nsamples ? base->nsamples : 1));
  double need = ACL_SEARCH_ACCEPT_Z * se;
  if (need < ACL_SEARCH_BASE_MARGIN)
    need = ACL_SEARCH_BASE_MARGIN;
  *undecided = gain > ACL_SEARCH_BASE_MARGIN && gain <= need;
  return gain > need;
}

static void finish(acl_search_t *s)
{
  int b = s->confirm_round == 1 ? s->best : best_judged(s, false);
  bool undecided = false;
  if (b > 0 && accept(s, b, &undecided)) {
    converge(s, b);
    return;
  }
  if (b > 0 && undecided && s->confirm_round == 0) {
    s->confirm_round = 1;
    s->best = (uint16_t)b;
    reset_eval(&s->cands[0]);
    reset_eval(&s->cands[b]);
    return;
  }
  converge(s, ACL_SEARCH_CAND_NCCL);
}

/* Samples a candidate needs in its current evaluation. */
static uint32_t eval_target(const acl_search_t *s, int id)
{
  if (s->confirm_round == 1 && (id == 0 || id == s->best))
    return ACL_SEARCH_MAX_SAMPLES - (uint32_t)s->params.samples_per_cand;
  return (uint32_t)s->params.samples_per_cand;
}

/* Calls to hand out for a candidate under evaluation. */
static uint32_t block_len(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  uint32_t spc = eval_target(s, id);
  uint32_t target = spc;
  if (id != ACL_SEARCH_CAND_NCCL && s->confirm_round == 0 && spc > ACL_SEARCH_EARLY_N &&
      c->got < ACL_SEARCH_EARLY_N)
    target = ACL_SEARCH_EARLY_N;
  if (c->planned < target)
    return target - c->planned;
  /* Samples are late or missing: run it again, as many as still missing. */
  return target > c->got ? target - c->got : 1;
}

static int hand_out(acl_search_t *s, int id, acl_candidate_t *out, uint32_t *len)
{
  uint32_t l = block_len(s, id);
  acl_search_cand_t *c = &s->cands[id];
  c->planned = (uint16_t)(c->planned + l > 0xffff ? 0xffff : c->planned + l);
  s->current = (uint16_t)id;
  s->calls_planned += l;
  if (s->phase == ACL_PHASE_EXPLORING || s->phase == ACL_PHASE_RETUNING)
    s->explore_calls += l;
  if (out)
    *out = c->cand;
  if (len)
    *len = l;
  return id;
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
  if (s->phase == ACL_PHASE_BASELINE)
    return hand_out(s, ACL_SEARCH_CAND_NCCL, out, len);
  if (s->phase == ACL_PHASE_EXPLORING || s->phase == ACL_PHASE_RETUNING) {
    if (!s->cands[0].judged)
      return hand_out(s, ACL_SEARCH_CAND_NCCL, out, len);
    for (int round = 0; round < 3; round++) {
      int id = plan(s);
      if (id >= 0)
        return hand_out(s, id, out, len);
      finish(s); /* converges, or opens a confirmation round */
      if (s->phase == ACL_PHASE_CONVERGED)
        break;
    }
    if (s->phase != ACL_PHASE_CONVERGED)
      converge(s, ACL_SEARCH_CAND_NCCL);
  }
  if (s->phase == ACL_PHASE_CONVERGED) {
    s->calls_planned += ACL_SEARCH_CONVERGED_BLOCK;
    if (out)
      *out = s->cands[s->current].cand;
    if (len)
      *len = ACL_SEARCH_CONVERGED_BLOCK;
    return s->current;
  }
  /* DISABLED or corrupt: NCCL's own choice. */
  if (out)
    *out = s->cands[0].cand;
  if (len)
    *len = ACL_SEARCH_CONVERGED_BLOCK;
  return ACL_SEARCH_CAND_NCCL;
}

/* ---- samples ------------------------------------------------------------- */

/* Re-tuning: every measurement is stale; keep the candidates (ids stay valid
 * for late samples) and the trajectory, search again from the baseline. */
static void retune(acl_search_t *s)
{
  s->phase = ACL_PHASE_RETUNING;
  s->retunes++;
  for (int i = 0; i < s->ncands; i++) {
    acl_search_cand_t *c = &s->cands[i];
    reset_eval(c);
    c->nsamples = 0;
    c->robust_seconds = 0.0;
  }
  for (int i = 0; i < s->nsubs; i++)
    if (s->subs[i].state != SUB_INVALID)
      s->subs[i].state = SUB_PENDING;
  s->cur_sub = ACL_SEARCH_NONE;
  s->confirm_round = 0;
  s->best = 0;
  s->current = 0;
  s->tune_start_call = s->calls_planned;
  s->explore_calls = 0;
  s->tune_start_step = s->steps;
  s->calls_to_converge = 0;
  s->drift_count = 0;
}

/* Drift rule (docs/tuner.md): once drift_window samples of the decision have
 * arrived since convergence, re-tune when the trimmed mean of the last
 * drift_window is slower than converged / drift_ratio (bandwidth below
 * drift_ratio x converged), or when their mean overlap moved by more than
 * ACL_SEARCH_OVERLAP_SHIFT (the interference regime, hence the winner,
 * changed). One outlier is trimmed away and never re-tunes. */
static void drift_check(acl_search_t *s, double seconds, float overlap)
{
  int w = s->params.drift_window;
  s->drift_win[s->drift_head] = (float)seconds;
  s->drift_head = (s->drift_head + 1) % (uint32_t)w;
  s->drift_count++;
  (void)overlap;
  if (s->drift_count < (uint32_t)w)
    return;
  double robust = trimmed_mean(s->drift_win, w);
  bool slow = robust * s->params.drift_ratio > s->converged_seconds;
  bool shift = false;
  const acl_search_cand_t *c = &s->cands[s->current];
  if (s->overlap_conv >= 0.0 && c->nsamples >= ACL_SEARCH_MAX_SAMPLES) {
    double ov = mean_overlap(c); /* the ring holds recent samples only */
    shift = fabs(ov - s->overlap_conv) > ACL_SEARCH_OVERLAP_SHIFT;
  }
  if (slow || shift)
    retune(s);
}

void acl_search_add_sample(acl_search_t *s, int cand_id, double seconds, float overlap)
{
  if (!s || cand_id < 0 || cand_id >= s->ncands || !(seconds > 0.0) || !isfinite(seconds))
    return;
  if (!(overlap >= 0.0f && overlap <= 1.0f))
    overlap = -1.0f;
  if (cand_id == ACL_SEARCH_CAND_NCCL && s->warmup_dropped < (uint32_t)s->params.warmup_calls &&
      !s->tuned_once) {
    s->warmup_dropped++; /* the first warmup_calls samples are warm-up */
    return;
  }
  s->samples_seen++;
  acl_search_cand_t *c = &s->cands[cand_id];
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
    if (c->judged)
      c->robust_seconds = trimmed_mean(c->seconds, c->nsamples);
    if (cand_id == s->current)
      drift_check(s, seconds, overlap);
    return;
  }
  if (c->judged) { /* a late extra sample refines the verdict */
    c->robust_seconds = trimmed_mean(c->seconds, c->nsamples);
    return;
  }
  int spc = (int)eval_target(s, cand_id);
  if (c->got >= spc) {
    judge(s, cand_id);
    return;
  }
  /* Early verdict for a clearly slower candidate (median, robust to one
   * outlier among three): saves the rest of its samples. */
  if (cand_id != ACL_SEARCH_CAND_NCCL && s->confirm_round == 0 && c->got >= ACL_SEARCH_EARLY_N &&
      c->got < spc) {
    int b = best_judged(s, true);
    if (b >= 0 && median_of(c->seconds, c->nsamples) >
                      ACL_SEARCH_EARLY_REJECT * s->cands[b].robust_seconds)
      judge(s, cand_id);
  }
}

/* ---- reporting ----------------------------------------------------------- */

acl_phase_t acl_search_phase(const acl_search_t *s) { return (acl_phase_t)s->phase; }

void acl_search_report(const acl_search_t *s, acl_search_report_t *r)
{
  memset(r, 0, sizeof *r);
  r->phase = (acl_phase_t)s->phase;
  int cur = s->current < s->ncands ? s->current : 0;
  r->current = s->cands[cur].cand;
  r->baseline = s->cands[0].cand;
  if (s->cands[0].robust_seconds > 0.0)
    r->baseline_seconds = s->cands[0].robust_seconds;
  int b = s->phase == ACL_PHASE_CONVERGED ? s->current : best_judged(s, true);
  if (b >= 0 && s->cands[b].robust_seconds > 0.0) {
    r->best = s->cands[b].cand;
    r->best_seconds = s->cands[b].robust_seconds;
  } else {
    r->best = s->cands[0].cand;
  }
  if (r->baseline_seconds > 0.0 && r->best_seconds > 0.0)
    r->speedup = r->baseline_seconds / r->best_seconds;
  const acl_search_cand_t *c = &s->cands[cur];
  if (c->nsamples > 0)
    r->busbw = busbw_of(s, trimmed_mean(c->seconds, c->nsamples));
  else if (s->traj_len > 0)
    r->busbw = s->traj[(s->traj_head + ACL_SEARCH_TRAJ - 1) % ACL_SEARCH_TRAJ].busbw;
  r->overlap = c->nsamples > 0 ? mean_overlap(c) : -1.0;
  r->candidates_evaluated = s->steps;
  r->calls_to_converge = s->calls_to_converge;
  r->retunes = s->retunes;
}

int acl_search_trajectory(const acl_search_t *s, acl_traj_point_t *out, int max)
{
  if (!out || max <= 0)
    return 0;
  int n = (int)s->traj_len < max ? (int)s->traj_len : max;
  /* The newest n points, oldest first. */
  int start = (int)((s->traj_head + ACL_SEARCH_TRAJ - (uint32_t)n) % ACL_SEARCH_TRAJ);
  for (int i = 0; i < n; i++)
    out[i] = s->traj[(start + i) % ACL_SEARCH_TRAJ];
  return n;
}
