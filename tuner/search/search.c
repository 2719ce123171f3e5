/* The search for one workload (see tuner/search/search.h and docs/tuner.md):
 * its settings, init and hints, and the two entry points that drive it,
 * acl_search_next and acl_search_observe. The states, their transitions
 * and each state's handler (what it hands out next, what it does with a
 * sample) are in search_sm.c, exploration in search_explore.c, the
 * budget in search_budget.c, the decision and its validation in
 * search_conv.c, the candidate grid and statistics in search_grid.c.
 *
 * States: warm-up (NCCL's choice, samples dropped) -> baseline (NCCL's choice
 * measured) -> exploring (subspaces by (algo, proto) in NCCL's cost order,
 * pattern-search coordinate descent over the resource axes) -> validating
 * (the best measured candidate against the baseline in the background) ->
 * refining -> converged -> retuning on drift; the waiting states between.
 *
 * Everything lives in the flat acl_search_t; no pointers, no allocation, no
 * clock, no randomness: the same calls with the same samples give the same
 * bytes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tuner/search/search_int.h"

/* ---- init ---------------------------------------------------------------- */

void acl_search_params_default(acl_search_params_t *p)
{
  memset(p, 0, sizeof *p);
  p->warmup_calls = ACL_CONFIG_WARMUP_DEFAULT;
  p->samples_per_cand = ACL_CONFIG_SAMPLES_DEFAULT;
  p->max_channels = ACL_SEARCH_DEFAULT_MAX_CHANNELS;
  p->nranks = ACL_SEARCH_DEFAULT_NRANKS;
  p->drift_ratio = ACL_SEARCH_DEFAULT_DRIFT_RATIO;
  p->drift_window = ACL_SEARCH_DEFAULT_DRIFT_WINDOW;
  p->prune_ratio = ACL_SEARCH_DEFAULT_PRUNE_RATIO;
  p->budget = ACL_CONFIG_BUDGET_PCT_DEFAULT / 100.0;
}

void acl_search_params_from_config(acl_search_params_t *p, const acl_config_t *cfg, int nranks)
{
  acl_search_params_default(p);
  p->warmup_calls = cfg->warmup_calls;
  p->samples_per_cand = cfg->samples_per_cand;
  p->budget = cfg->explore_budget_pct / 100.0;
  p->nranks = nranks;
  p->stock_channels = cfg->stock_channels;
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
#define FIX(field, bad, value)                                                                     \
  if (bad) {                                                                                       \
    double had_ = (double)p->field;                                                                \
    p->field = (value);                                                                            \
    fixed(&n, err, errlen, #field, had_, (double)p->field);                                        \
  }
  FIX(warmup_calls, p->warmup_calls < 0 || p->warmup_calls > ACL_CONFIG_WARMUP_MAX, d.warmup_calls)
  FIX(samples_per_cand, p->samples_per_cand < ACL_CONFIG_SAMPLES_MIN, ACL_CONFIG_SAMPLES_MIN)
  FIX(samples_per_cand, p->samples_per_cand > ACL_SEARCH_MAX_SAMPLES, ACL_SEARCH_MAX_SAMPLES)
  FIX(max_channels, p->max_channels < 1, d.max_channels)
  FIX(max_channels, p->max_channels > ACL_SEARCH_MAX_CHANNELS, ACL_SEARCH_MAX_CHANNELS)
  FIX(nranks, p->nranks < 1, 1)
  FIX(drift_ratio, !(p->drift_ratio > 0.0 && p->drift_ratio < 1.0), d.drift_ratio)
  FIX(drift_window, p->drift_window < ACL_SEARCH_MIN_DRIFT_WINDOW, ACL_SEARCH_MIN_DRIFT_WINDOW)
  FIX(drift_window, p->drift_window > ACL_SEARCH_MAX_DRIFT_WINDOW, ACL_SEARCH_MAX_DRIFT_WINDOW)
  FIX(prune_ratio, !(p->prune_ratio >= 1.0 && p->prune_ratio < ACL_SEARCH_MAX_PRUNE_RATIO),
      d.prune_ratio)
  FIX(budget, !(p->budget >= 0.0 && p->budget <= ACL_SEARCH_MAX_BUDGET), d.budget)
  FIX(stock_channels, p->stock_channels < 0 || p->stock_channels > ACL_SEARCH_MAX_CHANNELS, 0)
  FIX(chunk_axis, p->chunk_axis != 0 && p->chunk_axis != 1, 0)
  FIX(events_per_comm, p->events_per_comm != 0 && p->events_per_comm != 1, 0)
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
  acl_sm_start(s);
  s->explore.cur_sub = ACL_SEARCH_NONE;
  s->nccl_algo = s->nccl_proto = -1;
  s->drift.ref_overlap = -1.0;
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
    }
  /* NCCL's model is off by tens of percent, not by 3x: a subspace it
   * predicts that much slower than its pick is not worth its calls. */
  for (int i = 0; i < s->nsubs; i++)
    if (minc > 0.0f && s->cost[s->subs[i].algo][s->subs[i].proto] > ACL_SEARCH_SKIP_PRIOR * minc)
      s->subs[i].state = ACL_SUB_PRUNED;

  s->ncands = 1;
  s->cands[0].cand.algo = ACL_ALGO_NCCL;
  s->cands[0].cand.proto = -1;
  s->cands[0].sub = ACL_SEARCH_NONE;
}

/* Ceiling mode (docs/channels.md): with NCCL_MIN_NCHANNELS above what NCCL
 * builds as it ships, NCCL 2.28 keeps its stock pair (its cost model reads
 * the topology graphs' channels, not the raised count) and cuts channels for
 * small sizes as before, so its own choice is NCCL as it ships wherever it
 * runs at most the stock count. Where its Coll events show more, the
 * baseline becomes its pair capped at the stock count, measured afresh;
 * grid points above the stock count are what the ceiling adds. */
static void ceiling_cap(acl_search_t *s, int nch)
{
  int stock = s->params.stock_channels;
  acl_search_cand_t *c0 = &s->cands[0];
  if (stock <= 0 || stock >= s->params.max_channels || nch <= stock || c0->cand.nchannels > 0)
    return;
  c0->cand.nchannels = (int16_t)stock;
  /* samples of the uncapped runs are not the baseline */
  c0->nsamples = c0->ntotal_lo = c0->planned = c0->got = 0;
  c0->judged = 0;
  c0->robust_seconds = 0.0;
}

void acl_search_restrict(acl_search_t *s, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  if (!s || !cost)
    return;
  s->valid_mask &= mask_of(cost);
  for (int i = 0; i < s->nsubs; i++)
    if (!acl_search_pair_valid(s, s->subs[i].algo, s->subs[i].proto))
      s->subs[i].state = ACL_SUB_INVALID;
  if (s->explore.cur_sub != ACL_SEARCH_NONE && s->subs[s->explore.cur_sub].state == ACL_SUB_INVALID)
    s->explore.cur_sub = ACL_SEARCH_NONE;
  /* A decision some rank cannot run falls back to NCCL's own choice. */
  if (s->current != ACL_SEARCH_CAND_NCCL && !acl_search_usable(s, s->current) &&
      acl_phase_decided(acl_sm_base(s)))
    acl_search_converge(s, ACL_SEARCH_CAND_NCCL);
  int b = acl_search_best_judged(s, true);
  s->best = (uint16_t)(b >= 0 ? b : 0);
}

static void hint_channels(acl_search_t *s, int nch)
{
  if (!s || nch <= 0 || nch > ACL_SEARCH_MAX_SEEN_CHANNELS)
    return;
  if (!acl_sm_hints(s))
    return; /* the descent has started: changing its origin helps nobody */
  /* NCCL ran nch channels, so it built at least that many: the channel
   * axis reaches them. The default ceiling (32, what NCCL builds on 2xH200)
   * cut NCCL's 64 on one H200 to 32, and Ring/Simple with 32 channels, the
   * oracle there from 4 MiB up, passed for NCCL's own choice, never
   * measured. Ceiling mode sets its own top (stock_channels). */
  if (s->params.stock_channels == 0 && nch > s->params.max_channels)
    s->params.max_channels = nch > ACL_SEARCH_MAX_CHANNELS ? ACL_SEARCH_MAX_CHANNELS : nch;
  ceiling_cap(s, nch);
  if (s->cands[0].cand.nchannels > 0 && nch > s->cands[0].cand.nchannels)
    nch = s->cands[0].cand.nchannels; /* what the capped baseline runs */
  s->hint_ch = (int16_t)(nch > s->params.max_channels ? s->params.max_channels : nch);
}

static void hint_nccl(acl_search_t *s, int algo, int proto, int nch)
{
  hint_channels(s, nch);
  if (!s || s->hint_ch <= 0 || algo < 0 || algo >= ACL_NUM_ALGO || proto < 0 ||
      proto >= ACL_NUM_PROTO || !acl_search_pair_valid(s, algo, proto))
    return;
  if (!acl_sm_hints(s))
    return;
  s->nccl_algo = (int8_t)algo;
  s->nccl_proto = (int8_t)proto;
}

static void observe_channels(acl_search_t *s, int cand_id, int nch)
{
  if (!s || cand_id <= 0 || cand_id >= s->ncands || cand_id >= ACL_SEARCH_MAX_CANDS || nch <= 0 ||
      nch > ACL_SEARCH_MAX_SEEN_CHANNELS)
    return;
  s->cands[cand_id].ran_ch = (int16_t)nch; /* acl_search_runs_channels reads it */
}

int acl_search_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  s->loan_new_s = 0.0;
  int id = acl_sm_next(s, out, len); /* the state's handler (search_sm.c) */
  s->loan_offer_s = 0.0;             /* an offer lasts for one block */
  s->loan_rate_s = 0.0;
  return id;
}

/* ---- samples ------------------------------------------------------------- */

static void add_sample(acl_search_t *s, int cand_id, double seconds, float overlap, uint64_t call)
{
  if (!s || cand_id < 0 || cand_id >= s->ncands || !(seconds > 0.0) || !isfinite(seconds))
    return;
  if (!(overlap >= 0.0f && overlap <= 1.0f))
    overlap = -1.0f;
  /* Warm-up calls carry no profiler events (acl_search_sample_shift); a
   * source that samples them anyway (CUPTI) has them dropped here, and the
   * consensus layer drops late ones by call index. */
  int st = acl_sm_base(s);
  if (cand_id == ACL_SEARCH_CAND_NCCL && st == ACL_PHASE_WARMUP)
    return;
  if (call) {
    if (!s->calls_known || (int32_t)((uint32_t)call - s->seen_call) > 0)
      s->seen_call = (uint32_t)call;
    s->calls_known = 1;
  }
  s->samples_seen++;
  acl_search_cand_t *c = &s->cands[cand_id];
  /* A candidate's samples come from its own blocks only (NCCL's choice
   * also from the probes of the waits): one that came after two wait
   * blocks says the stream is far behind. */
  if (cand_id != ACL_SEARCH_CAND_NCCL && !c->judged && c->waits >= 2)
    s->late = 1;
  double cap = c->nsamples >= ACL_SEARCH_OUTLIER_MIN_N
                   ? ACL_SEARCH_OUTLIER * acl_search_median(c->seconds, c->nsamples)
                   : INFINITY;
  if (seconds > cap)
    s->outliers++; /* classified (preempted, a straggler); the statistics trim it */
  /* What exploring costs beyond the incumbent is charged to the budget; an
   * outlier at most as much as the candidate's 4x. Stalls of 5 ms came on
   * one GPU shared by two processes, to NCCL's choice alike: one charged
   * whole costs a 9.5 us workload ~17,500 calls of budget (a re-tuned
   * 1 MiB AllReduce that took one ended 62,750 calls from its next
   * measurement). */
  if (!acl_phase_decided(st) && !acl_search_is_nccl(s, cand_id) && s->cands[0].judged)
    acl_search_charge_sample(s, fmin(seconds, cap), acl_search_ref_seconds(s));
  int slot = c->nsamples < ACL_SEARCH_MAX_SAMPLES ? c->nsamples
                                                  : (int)(c->ntotal_lo % ACL_SEARCH_MAX_SAMPLES);
  c->seconds[slot] = (float)seconds;
  c->overlap[slot] = overlap;
  if (c->nsamples < ACL_SEARCH_MAX_SAMPLES)
    c->nsamples++;
  c->ntotal_lo++;
  if (c->got < 0xffff)
    c->got++;

  acl_sm_sample(s, st, cand_id, seconds, call); /* the state's handler (search_sm.c) */
}

/* A sample's seconds on NCCL's KernelCh clock. CUPTI's kernel durations run
 * 1.7-2.9 us longer (one H100, Ring, 64 KiB-4 MiB; 2-4 % at 1-4 MiB,
 * nothing from 16 MiB up), and its windows sample NCCL's choice while it
 * waits (2,606 of 2,843 samples at 256 KiB AllGather), the candidates mostly
 * between them: exploration saw candidates 1.8x faster than they were, and
 * a decision judged on KernelCh looked 1.6-1.8x slower once a window filled
 * its drift window (five of nine 256 KiB runs re-tuned on "slower"). The
 * incumbent (NCCL's choice while the workload waits, the decision once
 * taken) runs on both clocks: the difference of its medians is the offset,
 * kept until the next incumbent measures its own. */
static double one_clock(acl_search_t *s, int cand_id, double seconds, bool cupti)
{
  acl_search_clock_t *k = &s->clock;
  if (cand_id == s->current) {
    if (k->cand != s->current) {
      k->cand = s->current;
      k->ncupti = k->nkch = k->hcupti = k->hkch = 0;
    }
    float *ring = cupti ? k->cupti : k->kch;
    uint16_t *n = cupti ? &k->ncupti : &k->nkch, *h = cupti ? &k->hcupti : &k->hkch;
    ring[*h] = (float)seconds;
    *h = (uint16_t)((*h + 1) % ACL_SEARCH_CLOCK_N);
    if (*n < ACL_SEARCH_CLOCK_N)
      (*n)++;
    if (k->ncupti >= ACL_SEARCH_CLOCK_MIN && k->nkch >= ACL_SEARCH_CLOCK_MIN) {
      double d = acl_search_median(k->cupti, k->ncupti) - acl_search_median(k->kch, k->nkch);
      k->offset_s = d > 0.0 && d <= ACL_SEARCH_CLOCK_MAX_S ? (float)d : 0.0f;
    }
  }
  if (!cupti || k->offset_s <= 0.0f)
    return seconds;
  double t = seconds - k->offset_s;
  return t > 0.5 * seconds ? t : 0.5 * seconds;
}

void acl_search_observe(acl_search_t *s, const acl_search_obs_t *o)
{
  if (!s || !o)
    return;
  acl_search_prior_scale(s, o->prior_scale);
  if (o->loan_offer > 0.0 && isfinite(o->loan_offer))
    s->loan_offer_s = o->loan_offer;
  if (o->loan_earned > 0.0 && isfinite(o->loan_earned) && s->calls_planned > 0)
    s->loan_rate_s = o->loan_earned / (double)s->calls_planned;
  if (o->lent > 0.0 && isfinite(o->lent))
    s->loan_s -= o->lent;
  if (o->events_nearby && s->params.events_per_comm)
    s->events_paid = 1; /* paid by a neighbour: nothing charged here */
  if (o->next_call > s->calls_planned) /* index + 1 */
    s->calls_unplanned = o->next_call - 1 - s->calls_planned;
  if (o->ran_nch > 0 && o->cand_id == ACL_SEARCH_CAND_NCCL && s->hint_ch <= 0)
    hint_nccl(s, o->ran_algo, o->ran_proto, o->ran_nch); /* the first one tells */
  else if (o->ran_nch > 0)
    observe_channels(s, o->cand_id, o->ran_nch);
  if (o->seconds > 0.0 && o->cand_id >= 0 && o->cand_id < s->ncands) {
    /* the lag, measured: the largest seen, decaying by 1/16 of the gap (a
     * lower bound: calls before the latest block began; validation does
     * not rely on it where samples say their calls) */
    uint32_t lag = o->behind < ACL_SEARCH_LAG_MAX ? o->behind : ACL_SEARCH_LAG_MAX;
    s->lag_calls = (uint16_t)(lag >= s->lag_calls ? lag : s->lag_calls - (s->lag_calls - lag) / 16);
    if (s->lag_calls > ACL_SEARCH_LATE_CALLS)
      s->late = 1;
  }
  if (o->seconds > 0.0 && isfinite(o->seconds)) {
    s->clock.last_cupti = o->cupti != 0; /* the drift rule's time side reads it */
    if (!o->cupti)
      s->clock.kch_any = 1;
    add_sample(s, o->cand_id, one_clock(s, o->cand_id, o->seconds, o->cupti != 0), o->overlap,
               o->call);
  }
}
