/* Exploration of one search (see tuner/search/search.h and docs/tuner.md):
 * subspaces by (algorithm, protocol) in NCCL's predicted order, each a
 * pattern-search coordinate descent over the resource axes; the blocks that
 * measure a candidate, and the verdicts on its samples. */
#include <math.h>
#include <string.h>

#include "tuner/search/search_int.h"

static bool better(const acl_search_t *s, int a, int b)
{
  return s->cands[a].robust_seconds < s->cands[b].robust_seconds * (1.0 - ACL_SEARCH_BETTER_EPS);
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

void acl_search_judge(acl_search_t *s, int id, bool costs_calls)
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

void acl_search_measured_sample(acl_search_t *s, int id)
{
  acl_search_cand_t *c = &s->cands[id];
  if (c->judged) { /* a late extra sample refines the verdict */
    c->robust_seconds = acl_search_trimmed_mean(c->seconds, c->nsamples);
    return;
  }
  int spc = s->params.samples_per_cand;
  if (c->got >= spc) {
    acl_search_judge(s, id, true);
    return;
  }
  /* Early verdict for a clearly slower candidate (median, robust to one
   * outlier among three): saves the rest of its samples. */
  if (id != ACL_SEARCH_CAND_NCCL && c->got >= ACL_SEARCH_EARLY2_N) {
    int b = acl_search_best_judged(s, true);
    double ref = b >= 0 ? s->cands[b].robust_seconds : 0.0;
    /* After 2 samples only when both are clearly slower (the faster of two
     * is robust to a straggler); after 3 on the median. */
    bool early2 = b >= 0 && c->got < ACL_SEARCH_EARLY_N && c->nsamples >= 2 &&
                  fminf(c->seconds[0], c->seconds[1]) > ACL_SEARCH_EARLY2_REJECT * ref;
    bool early3 = b >= 0 && c->got >= ACL_SEARCH_EARLY_N &&
                  acl_search_median(c->seconds, c->nsamples) > ACL_SEARCH_EARLY_REJECT * ref;
    if (early2 || early3)
      acl_search_judge(s, id, true);
  }
}

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
  acl_search_judge(s, id, costs_calls);
}

/* A grid point between a request NCCL was seen to round down and what it
 * ran runs as that (acl_search_runs_channels): when a judged candidate of
 * the subspace runs the same (or it is NCCL's own choice), the point is its
 * twin and costs nothing. Returns whether id is judged now. */
static bool merge_twin(acl_search_t *s, int id)
{
  acl_search_cand_t *c = &s->cands[id];
  if (c->sub == ACL_SEARCH_NONE || c->ran_ch > 0)
    return false;
  int ran = acl_search_runs_channels(s, id), twin = -1;
  if (ran == c->cand.nchannels)
    return false; /* nothing known makes it another point's twin */
  const acl_search_sub_t *sub = &s->subs[c->sub];
  if (sub->algo == s->nccl_algo && sub->proto == s->nccl_proto && s->hint_ch == ran &&
      s->cands[0].judged && c->cand.chunk_log2 == 0)
    twin = 0;
  for (int i = 1; i < s->ncands && twin < 0; i++) {
    const acl_search_cand_t *t = &s->cands[i];
    if (i != id && t->judged && t->sub == c->sub && t->cand.chunk_log2 == c->cand.chunk_log2 &&
        acl_search_runs_channels(s, i) == ran)
      twin = i;
  }
  if (twin < 0)
    return false;
  c->ran_ch = (int16_t)ran;
  s->merged++;
  copy_verdict(s, id, twin, false);
  return c->judged;
}

/* Cand id needs samples (not judged, and no twin judged it). */
static bool needs_samples(acl_search_t *s, int id)
{
  return !s->cands[id].judged && !merge_twin(s, id);
}

static void sub_begin(acl_search_t *s, int si)
{
  acl_search_sub_t *sub = &s->subs[si];
  sub->state = ACL_SUB_ACTIVE;
  /* Start where the best point so far is (channel optima transfer well
   * between subspaces), else at NCCL's channel count or mid-range. */
  int b = acl_search_best_judged(s, false);
  for (int ax = 0; ax < ACL_SEARCH_NUM_AXES; ax++)
    sub->center[ax] = (uint8_t)(b > 0 ? s->cands[b].axis_idx[ax] : acl_search_axis_start(s, ax));
  sub->axis = 0;
  sub->lo = -1;
  sub->hi = (int8_t)acl_search_axis_count(s, 0);
  /* Near a known optimum refine locally; from scratch take big steps. */
  sub->step = b > 0 ? ACL_SEARCH_NEAR_STEP : ACL_SEARCH_FIRST_STEP;
  sub->dir = 0;
  sub->checked = 0;
  s->explore.cur_sub = (uint8_t)si;
  /* NCCL's own subspace at the channel count NCCL ran is the baseline
   * itself: its samples stand for that point instead of measuring it again. */
  if (b <= 0 && s->hint_ch > 0 && sub->algo == s->nccl_algo && sub->proto == s->nccl_proto &&
      acl_search_axis_value(s, ACL_SEARCH_AXIS_CHANNELS, sub->center[0]) == s->hint_ch) {
    int id = acl_search_find_or_add(s, si, sub->center);
    if (id > 0)
      copy_verdict(s, id, 0, true);
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
    sub->step = ACL_SEARCH_AXIS_STEP;
    sub->dir = 0;
  }
}

/* The active subspace, beginning the next pending one when needed; NULL
 * when none is left. */
static acl_search_sub_t *active_sub(acl_search_t *s)
{
  if (s->explore.cur_sub != ACL_SEARCH_NONE && s->subs[s->explore.cur_sub].state == ACL_SUB_ACTIVE)
    return &s->subs[s->explore.cur_sub];
  s->explore.cur_sub = ACL_SEARCH_NONE;
  for (int i = 0; i < s->nsubs; i++)
    if (s->subs[i].state == ACL_SUB_PENDING) {
      sub_begin(s, i);
      return &s->subs[i];
    }
  return NULL;
}

/* Prune rule: a subspace whose first point c (taken at the best channel
 * count so far) is > prune_ratio x slower than the best so far. NCCL's own
 * subspace is never pruned: the baseline lies in it. */
static bool prune(const acl_search_t *s, const acl_search_sub_t *sub, int c)
{
  int b = acl_search_best_judged(s, true);
  bool own = sub->algo == s->nccl_algo && sub->proto == s->nccl_proto;
  return !own && b >= 0 && b != c &&
         s->cands[c].robust_seconds > s->params.prune_ratio * s->cands[b].robust_seconds;
}

/* A subspace's first point, taken at the best channel count so far and
 * past the prune line but within ACL_SEARCH_SECOND_LOOK x the best: the grid index
 * of one more look, two grid points (x2) towards where its protocol peaks,
 * or -1. A protocol that moves more per channel peaks at fewer channels:
 * on one H200, 4 MiB AllGather, Ring/LL was best at 32 channels (29 us)
 * and Ring/LL128 took 38 us there, 26 us at 16, and was pruned. */
static int second_look(const acl_search_t *s, const acl_search_sub_t *sub, int c)
{
  int b = acl_search_best_judged(s, true);
  if (sub->axis != ACL_SEARCH_AXIS_CHANNELS || b < 0 ||
      s->cands[c].robust_seconds > ACL_SEARCH_SECOND_LOOK * s->cands[b].robust_seconds)
    return -1;
  int bproto = b == ACL_SEARCH_CAND_NCCL ? s->nccl_proto : s->cands[b].cand.proto;
  if (bproto < 0 || bproto == sub->proto)
    return -1;
  int at = sub->center[ACL_SEARCH_AXIS_CHANNELS];
  int to =
      sub->proto > bproto ? at - ACL_SEARCH_SECOND_LOOK_STEPS : at + ACL_SEARCH_SECOND_LOOK_STEPS;
  return to >= 0 && to < acl_search_axis_count(s, ACL_SEARCH_AXIS_CHANNELS) ? to : -1;
}

/* The grid index to try next on the current axis, or -1 when the direction,
 * step or axis changed instead (plan again). */
static int sub_next_point(acl_search_t *s, acl_search_sub_t *sub)
{
  int center = sub->center[sub->axis];
  if (sub->dir == 0) {
    int next = center + sub->step;
    if (next >= sub->hi)
      next = sub->hi - 1;
    if (next > center)
      return next;
    sub->dir = 1;
    return -1;
  }
  int next = center - sub->step;
  if (next <= sub->lo)
    next = sub->lo + 1;
  if (next < center)
    return next;
  /* Both sides tried at this step: shrink it, or the axis is done. */
  if (sub->hi - sub->lo <= 2 || sub->step <= 1) {
    sub_next_axis(s, sub);
  } else {
    sub->step = (uint8_t)(sub->step / 2);
    sub->dir = 0;
  }
  return -1;
}

/* Point nc (grid index next) was compared with the incumbent c. */
static void sub_move(acl_search_t *s, acl_search_sub_t *sub, int c, int nc, int next)
{
  int center = sub->center[sub->axis];
  if (better(s, nc, c)) {
    /* Unimodal: the optimum lies beyond the incumbent; keep going the same
     * way with a doubled step. */
    if (sub->dir == 0)
      sub->lo = (int8_t)center;
    else
      sub->hi = (int8_t)center;
    sub->center[sub->axis] = (uint8_t)next;
    if (sub->step < ACL_SEARCH_MAX_STEP)
      sub->step = (uint8_t)(sub->step * 2);
  } else if (sub->dir == 0) {
    sub->hi = (int8_t)next;
    sub->dir = 1;
  } else {
    /* Both sides failed at this step: halve it and look up again (without
     * this the next looks walked up from lo one grid point at a time: on
     * one H200, 3, 4, 6, 8, 12, 16 channels before 32). */
    sub->lo = (int8_t)next;
    if (sub->step > 1) {
      sub->step = (uint8_t)(sub->step / 2);
      sub->dir = 0;
    }
  }
}

int acl_search_plan(acl_search_t *s)
{
  uint64_t cap = (uint64_t)ACL_SEARCH_MAX_EXPLORE_MULT * (uint64_t)s->params.samples_per_cand;
  for (int guard = 0; guard < ACL_SEARCH_PLAN_GUARD; guard++) {
    if (s->steps - s->explore.start_step >= ACL_SEARCH_MAX_STEPS || s->explore.calls >= cap)
      return -1;
    acl_search_sub_t *sub = active_sub(s);
    if (!sub)
      return -1;
    if (sub->axis >= ACL_SEARCH_NUM_AXES) {
      sub->state = ACL_SUB_DONE;
      continue;
    }
    if (acl_search_axis_count(s, sub->axis) <= 1) {
      sub_next_axis(s, sub);
      continue;
    }
    int c = acl_search_find_or_add(s, s->explore.cur_sub, sub->center);
    if (c < 0 || needs_samples(s, c))
      return c;
    if (!sub->checked) {
      /* The first point sits at another protocol's best channel count:
       * one more look towards where this protocol peaks (second_look),
       * past the prune line or not. Not pruned, a step of one grid point
       * from the first stopped at a bump: on one H200, 4 MiB AllGather,
       * Ring/LL128 at 32 channels looked as good as at 24 on its fast
       * samples, and 16 (the oracle, 26 us against Ring/LL/32's 29) was
       * never measured in 7 of 20 replays. */
      bool pruned = prune(s, sub, c);
      int alt = second_look(s, sub, c);
      if (alt >= 0) {
        uint8_t idx[ACL_SEARCH_NUM_AXES];
        memcpy(idx, sub->center, sizeof idx);
        idx[ACL_SEARCH_AXIS_CHANNELS] = (uint8_t)alt;
        int ac = acl_search_find_or_add(s, s->explore.cur_sub, idx);
        if (ac < 0 || needs_samples(s, ac))
          return ac;
        int first = sub->center[ACL_SEARCH_AXIS_CHANNELS];
        sub->checked = 1;
        if (pruned ? !prune(s, sub, ac) : better(s, ac, c)) {
          /* better there: the descent goes on from it, the first point
           * bounding that side */
          if (alt < first)
            sub->hi = (int8_t)first;
          else
            sub->lo = (int8_t)first;
          sub->center[ACL_SEARCH_AXIS_CHANNELS] = (uint8_t)alt;
          sub->step = ACL_SEARCH_NEAR_STEP;
          sub->dir = 0;
          continue;
        }
        if (!pruned && alt < first)
          sub->lo = (int8_t)alt; /* unimodal: the optimum lies above it */
        else if (!pruned)
          sub->hi = (int8_t)alt;
      }
      sub->checked = 1;
      if (pruned) {
        sub->state = ACL_SUB_PRUNED;
        continue;
      }
    }
    int next = sub_next_point(s, sub);
    if (next < 0)
      continue;
    uint8_t idx[ACL_SEARCH_NUM_AXES];
    memcpy(idx, sub->center, sizeof idx);
    idx[sub->axis] = (uint8_t)next;
    int nc = acl_search_find_or_add(s, s->explore.cur_sub, idx);
    if (nc < 0 || needs_samples(s, nc))
      return nc;
    sub_move(s, sub, c, nc, next);
  }
  return -1;
}

int acl_search_explored_pick(const acl_search_t *s)
{
  int b = -1;
  for (int i = 1; i < s->ncands; i++) /* NCCL's own choice in disguise is no gain */
    if (s->cands[i].judged && acl_search_usable(s, i) && !acl_search_is_nccl(s, i) &&
        (b < 0 || s->cands[i].robust_seconds < s->cands[b].robust_seconds))
      b = i;
  const acl_search_cand_t *base = &s->cands[0];
  if (b > 0 && s->cands[b].robust_seconds < base->robust_seconds * (1.0 - ACL_SEARCH_PROV_MARGIN))
    return b;
  return ACL_SEARCH_CAND_NCCL;
}

/* Samples the pick needs before it is the provisional decision. */
static uint32_t confirm_target(const acl_search_t *s)
{
  uint32_t n = (uint32_t)s->params.samples_per_cand * ACL_SEARCH_CONFIRM_MULT;
  return n < ACL_SEARCH_MAX_SAMPLES ? n : ACL_SEARCH_MAX_SAMPLES;
}

int acl_search_confirm(const acl_search_t *s, int pick)
{
  uint64_t cap = (uint64_t)ACL_SEARCH_MAX_EXPLORE_MULT * (uint64_t)s->params.samples_per_cand;
  /* A late stream pays its lag (~1,000 calls on one H200) for every look:
   * runs of 2 s at 256 MiB ended waiting for the confirmation's samples on
   * NCCL's choice. Its validation alone guards it. */
  if (s->late || pick <= 0 || pick >= s->ncands || s->cands[pick].got >= confirm_target(s) ||
      s->explore.calls >= cap)
    return -1;
  return pick;
}

bool acl_search_pick_proven(const acl_search_t *s, int pick)
{
  if (pick <= 0 || s->late)
    return true; /* a late stream's pick has no confirmation: validation guards it */
  if (pick >= s->ncands)
    return false;
  const acl_search_cand_t *b = &s->cands[ACL_SEARCH_CAND_NCCL], *p = &s->cands[pick];
  if (!(b->robust_seconds > 0.0 && p->robust_seconds > 0.0))
    return false;
  double sd = acl_search_log_sd(b->seconds, b->nsamples, p->seconds, p->nsamples);
  double se = sd * sqrt(1.0 / (b->nsamples > 0 ? b->nsamples : 1) +
                        1.0 / (p->nsamples > 0 ? p->nsamples : 1));
  double gain = log(b->robust_seconds / p->robust_seconds);
  return gain - ACL_SEARCH_PROV_Z * se > -log1p(-ACL_SEARCH_PROV_MARGIN);
}

/* Whether a sample of a call after the wait began has arrived: then the
 * samples still missing from before it are lost (they arrive in call
 * order). Samples that say their call tell it; otherwise NCCL's choice's
 * samples beyond the probes handed out before the wait. Counting breaks
 * after a CUPTI window (one H100, one process per rank): it sampled ~1,200
 * calls of NCCL's choice, far more than its probes, so every wait ended
 * at once while NCCL's events were ~1,000 calls behind, and a 2x faster
 * candidate ran 40 times, its samples not yet due, until the exploration's
 * call cap ended the search on NCCL's choice. */
static bool wait_answered(const acl_search_t *s)
{
  if (s->calls_known)
    return (int32_t)(s->seen_call - s->explore.wait_call) >= 0;
  return s->cands[0].got > s->explore.wait_mark;
}

/* A candidate run a wait block's worth of calls past its target with not
 * one sample back: its samples are late, though the stream is not known
 * late yet (its lag grew after the baseline: the host ran ahead of its
 * GPU). Another re-run would cost more than a wait; a wait NCCL's choice
 * ended says nothing about these samples. On one H100 the first candidate
 * at 256 MiB AllReduce ran 795 calls of 2,577 so. */
static bool overdue(const acl_search_cand_t *c, uint32_t target)
{
  return c->got == 0 && c->planned >= target + ACL_SEARCH_WAIT_MIN;
}

/* Calls to hand out for a candidate under evaluation; 0 = wait for its
 * late samples. */
static uint32_t block_len(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  uint32_t spc = (uint32_t)s->params.samples_per_cand;
  uint32_t target = spc;
  /* Early verdicts save a slow candidate's last samples, at the price of a
   * round trip per look: with samples far behind the calls each look costs
   * the lag (~1,000 calls), three times per candidate; one block of all its
   * samples costs it once. */
  if (id != ACL_SEARCH_CAND_NCCL && c->judged) {
    /* the pick, confirmed (acl_search_confirm); a twin's copied samples
     * count as had */
    target = confirm_target(s);
    uint32_t had = c->planned > c->got ? c->planned : c->got;
    if (had < target)
      return target - had;
  } else if (s->late || !s->cands[0].judged)
    target = spc; /* before the baseline's verdict: a look-ahead's, its samples overdue */
  else if (id != ACL_SEARCH_CAND_NCCL && spc > ACL_SEARCH_EARLY2_N && c->got < ACL_SEARCH_EARLY2_N)
    target = ACL_SEARCH_EARLY2_N;
  else if (id != ACL_SEARCH_CAND_NCCL && spc > ACL_SEARCH_EARLY_N && c->got < ACL_SEARCH_EARLY_N)
    target = ACL_SEARCH_EARLY_N;
  if (c->planned < target)
    return target - c->planned;
  /* Samples are late (a host far ahead of its GPU: 500 calls at 1 GiB;
   * CUPTI on one H200: ~1,000 calls) or lost: wait for them, NCCL's choice
   * running with one probe sample per block, then run the candidate again.
   * Where the lag is measured (acl_search_obs_t.behind) and long, a
   * candidate waits twice the lag since its block: a re-run sooner costs the
   * lag again for a sample or two, and such re-runs ate the exploration's
   * call cap on one H200; counting samples instead (has a probe handed out
   * during the wait arrived?) breaks there, since a source that samples
   * every call (CUPTI windows) delivers the earlier calls' samples
   * meanwhile. Otherwise the missing samples are lost once a probe handed
   * out after the wait began arrived (samples arrive in call order); a
   * stream seen late is waited for first (a wait mark another candidate
   * left says nothing about these samples). NCCL's own choice waits by
   * blocks: the probes are its samples. */
  if (id == ACL_SEARCH_CAND_NCCL) {
    if (c->waits < ACL_SEARCH_SAMPLE_WAITS)
      return 0;
  } else if (s->lag_calls > ACL_SEARCH_LATE_CALLS) {
    uint32_t since = (uint32_t)s->calls_planned - c->handed_at;
    if (c->handed_at && since < 2u * s->lag_calls + ACL_SEARCH_WAIT_MIN)
      return 0;
  } else if (c->waits < ACL_SEARCH_SAMPLE_WAITS &&
             ((c->waits == 0 && (s->late || overdue(c, target))) || !wait_answered(s))) {
    return 0;
  }
  return target > c->got ? target - c->got : 1;
}

/* ---- look-ahead for late streams ------------------------------------------
 * With samples ~1,000 calls behind (a host far ahead of its GPU: the
 * one-H200 benchmark at 64 MiB, 220 ms), every verdict costs that lag, one
 * after another: 9 candidates judged in 2 s at 64 MiB AllReduce, and the
 * run ended before the descent reached the 32-channel oracle (0.84 of it).
 * The plan's next candidate depends on the verdict only through two
 * outcomes, better than the incumbent or not: while a candidate waits, the
 * ones the plan tries next on either outcome (two verdicts deep) are
 * measured meanwhile, in copies of the search that take each outcome. One
 * of each pair is wasted at most; a verdict costs the lag once for three. */
#define LOOKAHEAD_DEPTH 2

/* Cand id of s judged at `seconds`, in the copy t; returns the plan's next. */
static int plan_if(const acl_search_t *s, acl_search_t *t, int id, double seconds)
{
  memcpy(t, s, sizeof *t);
  acl_search_cand_t *c = &t->cands[id];
  c->robust_seconds = seconds;
  c->judged = 1;
  t->steps++;
  int b = acl_search_best_judged(t, true);
  if (b >= 0)
    t->best = (uint16_t)b;
  return acl_search_plan(t);
}

/* Candidate n of the copy t in s (added where the copy added it); sets
 * *flight when it is handed out and waiting for samples. -1: nothing to
 * measure there. */
static int adopt(acl_search_t *s, const acl_search_t *t, int n, bool *flight)
{
  *flight = false;
  if (n <= 0 || n >= t->ncands || n >= ACL_SEARCH_MAX_CANDS)
    return -1;
  int id = acl_search_find_or_add(s, t->cands[n].sub, t->cands[n].axis_idx);
  if (id <= 0 || s->cands[id].judged)
    return -1;
  if (s->cands[id].planned > 0) {
    *flight = true;
    return -1;
  }
  return id;
}

static int lookahead_from(acl_search_t *s, const acl_search_t *at, int id, int depth)
{
  static _Thread_local acl_search_t tmp[LOOKAHEAD_DEPTH];
  acl_search_t *t = &tmp[LOOKAHEAD_DEPTH - depth];
  int b = acl_search_best_judged(at, true);
  double ref = b >= 0 ? at->cands[b].robust_seconds : acl_search_ref_seconds(at);
  if (!(ref > 0.0))
    return -1;
  for (int v = 0; v < 2; v++) { /* not better first: most candidates are not */
    int n = plan_if(at, t, id, v == 0 ? 2.0 * ref : 0.5 * ref);
    bool flight;
    int got = adopt(s, t, n, &flight);
    if (got > 0)
      return got;
    if (flight && depth > 1) {
      got = lookahead_from(s, t, n, depth - 1);
      if (got > 0)
        return got;
    }
  }
  return -1;
}

/* The baseline waiting for its samples: what the plan measures first on
 * any baseline time, then two verdicts deep from there. The baseline's time
 * is only the reference the plan compares with, and where NCCL's choice
 * starts the descent is known before its samples (its Coll event says what
 * it runs when the call is enqueued). On the one-H100 replay at 256 MiB
 * AllReduce (samples 1,000 calls late, runs of ~2,300 calls) the
 * exploration began only when the baseline's samples came, the second
 * round's verdicts came after the run, and every seed ended on NCCL's
 * choice, 0.91 of the oracle. */
static int baseline_ahead(acl_search_t *s)
{
  static _Thread_local acl_search_t t;
  double ref = acl_search_ref_seconds(s);
  if ((!s->late && s->cands[0].waits < ACL_SEARCH_AHEAD_WAITS) || s->hint_ch <= 0 ||
      !(ref > 0.0))
    return -1;
  int n = plan_if(s, &t, ACL_SEARCH_CAND_NCCL, ref);
  /* NCCL's own point: the baseline's samples will stand for it (sub_begin) */
  for (int g = 0; g < ACL_SEARCH_PLAN_GUARD && n > 0 && n < t.ncands && acl_search_is_nccl(&t, n);
       g++) {
    t.cands[n].robust_seconds = ref;
    t.cands[n].judged = 1;
    n = acl_search_plan(&t);
  }
  bool flight;
  int got = adopt(s, &t, n, &flight);
  return got > 0 || !flight ? got : lookahead_from(s, &t, n, LOOKAHEAD_DEPTH);
}

int acl_search_lookahead(acl_search_t *s, int id)
{
  if (id < 0 || id >= s->ncands || id >= ACL_SEARCH_MAX_CANDS || s->cands[id].judged ||
      block_len(s, id) != 0)
    return -1;
  if (id == ACL_SEARCH_CAND_NCCL)
    return baseline_ahead(s);
  return s->late ? lookahead_from(s, s, id, LOOKAHEAD_DEPTH) : -1;
}

bool acl_search_settle_lost(acl_search_t *s, int id)
{
  acl_search_cand_t *c = &s->cands[id];
  /* With a late stream a re-run costs the lag again (~1,000 calls) for a
   * sample or two: once the missing ones are known lost (block_len would
   * run it again), enough samples for an early verdict are a verdict. */
  if (id == ACL_SEARCH_CAND_NCCL || !s->late || c->judged || c->got < ACL_SEARCH_EARLY_N ||
      c->planned < (uint32_t)s->params.samples_per_cand || block_len(s, id) == 0)
    return false;
  acl_search_judge(s, id, true);
  return true;
}

/* What a late stream's wait runs (hand_out): NCCL's own choice, or the
 * explored pick once it is ahead by ACL_SEARCH_INTERIM_MARGIN on a whole
 * candidate's samples. With samples ~1,000 calls behind (one H200 at
 * 256 MiB: 0.7 s) each round of exploration waits that long, and a 2 s
 * AllReduce ended its third wait on NCCL's choice with Ring/Simple/32 (8 %
 * faster) measured an exploration round before. Not a decision: the search
 * goes on, and the decision it reaches is validated against NCCL's choice
 * as before. Shorter lags wait too briefly to matter. */
static int interim(const acl_search_t *s)
{
  if (s->lag_calls <= ACL_SEARCH_LATE_CALLS || !s->cands[0].judged ||
      acl_sm_base(s) != ACL_PHASE_EXPLORING)
    return ACL_SEARCH_CAND_NCCL;
  int b = acl_search_explored_pick(s);
  if (b <= 0 || s->cands[b].got < (uint32_t)s->params.samples_per_cand ||
      s->cands[b].robust_seconds > (1.0 - ACL_SEARCH_INTERIM_MARGIN) * s->cands[0].robust_seconds)
    return ACL_SEARCH_CAND_NCCL;
  return b;
}

int acl_search_hand_out(acl_search_t *s, int id, acl_candidate_t *out, uint32_t *len)
{
  uint32_t l = block_len(s, id);
  acl_search_cand_t *c = &s->cands[id];
  bool wait = l == 0;
  if (wait) {
    if (c->waits++ == 0) {
      s->explore.wait_mark = s->c0_sampled;
      s->explore.wait_call = (uint32_t)acl_search_call_index(s);
    } else if (c->waits > ACL_SEARCH_LATE_WAITS)
      s->late = 1; /* the baseline's too: lost samples are re-run long before */
    id = interim(s);
    c = &s->cands[id];
    l = ACL_SEARCH_WAIT_MIN;
  } else {
    c->waits = 0;
  }
  /* Every call of a measuring block carries profiler events (a waiting
   * block only its probe). */
  acl_search_charge_block(s, id, wait ? 1 : l);
  /* the interim's samples are extra: they plan nothing */
  if (!wait || id == ACL_SEARCH_CAND_NCCL)
    c->planned = (uint16_t)(c->planned + l > 0xffff ? 0xffff : c->planned + l);
  s->current = (uint16_t)id;
  s->calls_planned += l;
  if (!wait)
    c->handed_at = (uint32_t)s->calls_planned | 1u; /* 0 = never handed out */
  int st = acl_sm_base(s);
  if ((st == ACL_PHASE_EXPLORING || st == ACL_PHASE_RETUNING) && !wait)
    s->explore.calls += l;
  if (wait)
    acl_sm_fire(s, EV_LATE);
  if (out)
    *out = c->cand;
  if (len)
    *len = l;
  return id;
}

void acl_search_explore_reset(acl_search_t *s)
{
  for (int i = 0; i < s->ncands; i++) {
    acl_search_cand_t *c = &s->cands[i];
    c->planned = 0;
    c->got = 0;
    c->judged = 0;
    c->nsamples = 0;
    c->robust_seconds = 0.0;
    c->tried = 0;
  }
  for (int i = 0; i < s->nsubs; i++)
    if (s->subs[i].state != ACL_SUB_INVALID)
      s->subs[i].state = ACL_SUB_PENDING;
  s->explore.cur_sub = ACL_SEARCH_NONE;
  s->best = 0;
  s->current = 0;
  s->tune_start_call = s->calls_planned;
  s->explore.calls = 0;
  s->explore.start_step = s->steps;
  s->c0_sampled = 0;
}
