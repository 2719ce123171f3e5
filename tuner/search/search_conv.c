/* The search once exploration is over (see tuner/search/search.h and
 * docs/tuner.md): the decision, its background validation against NCCL's
 * own choice and refinement, drift re-tuning, and reporting. Builds on
 * search_grid.c; calls nothing in search.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/search/search_int.h"

/* ---- decision and validation --------------------------------------------- */

static void seed_failed(acl_search_t *s);

static void val_reset(acl_search_t *s)
{
  s->val.handed = 0;
  s->val.challenger = ACL_SEARCH_CAND_NCCL;
  memset(s->val.n, 0, sizeof s->val.n);
  memset(s->val.sum, 0, sizeof s->val.sum);
  memset(s->val.sq, 0, sizeof s->val.sq);
  s->val.mark = s->val.out = s->val.in = 0;
  s->val.call0 = (uint32_t)acl_search_call_index(s);
  s->val.paused = 0;
  s->val.full_at = s->val.seen = 0;
}

bool acl_search_val_lost(const acl_search_t *s)
{
  uint32_t blocks = s->val.handed / 2;
  if (blocks >= ACL_VAL_LOST_BLOCKS)
    return true;
  if (blocks < ACL_VAL_MAX_BLOCKS)
    return false;
  /* a stream on time: 48 blocks without a verdict say the samples stopped */
  if (!s->late)
    return true;
  /* a late one whose samples say their calls (consensus's do): lost once a
   * sample of a call after those blocks arrived (samples come in call
   * order), else only after ACL_VAL_LOST_BLOCKS. The lag estimate below is
   * a lower bound: it once let a 1.8x faster decision go for NCCL's choice
   * before its samples were due. */
  if (s->calls_known)
    return s->val.full_at && s->val.seen && (int32_t)(s->val.seen - s->val.full_at) >= 0;
  /* a late one: its lag, measured, on top (counting samples received
   * breaks where a source samples every call: the earlier blocks' samples
   * still arriving count too). Calls that waited for the budget ran no
   * block and owe no sample. */
  if (s->lag_calls > ACL_SEARCH_LATE_CALLS)
    return (uint32_t)s->calls_planned - s->val.call0 - s->val.paused >=
           ACL_VAL_MAX_BLOCKS * (ACL_VAL_RUN + ACL_VAL_BLOCK) / 2 + 2u * s->lag_calls;
  return s->val.in >= s->val.mark + ACL_VAL_MAX_BLOCKS * (ACL_VAL_RUN + ACL_VAL_BLOCK) / 2;
}

/* The overlap reference of a decision about to be watched begins with its
 * samples' known overlaps; its first readings after it was taken complete
 * it (overlap_shift). */
static void drift_overlap_reset(acl_search_t *s, const acl_search_cand_t *c)
{
  acl_search_drift_t *d = &s->drift;
  d->ref_overlap = -1.0;
  d->ov_n = 0;
  for (int i = 0; i < c->nsamples && d->ov_n < ACL_SEARCH_OVERLAP_REF_READINGS; i++)
    if (c->overlap[i] >= 0.0f)
      d->ov[d->ov_n++] = c->overlap[i];
  d->ov_head = d->ov_n;
  /* measured with its overlaps known, its own samples set the regime
   * (completed to 16 by the first readings); measured on NCCL's events, the
   * reference is CUPTI's first windows, three of them (one window is one
   * step's readings) */
  d->ov_ref = d->ov_n > 0 ? ACL_SEARCH_MAX_SAMPLES : ACL_SEARCH_OVERLAP_REF_READINGS;
}

/* Make cand id the decision (drift reference included). */
static void adopt(acl_search_t *s, int id)
{
  acl_search_cand_t *c = &s->cands[id];
  if (id != ACL_SEARCH_CAND_NCCL && !c->judged && c->nsamples > 0) {
    c->judged = 1; /* a refinement challenger promoted on its own samples */
    c->robust_seconds = acl_search_trimmed_mean(c->seconds, c->nsamples);
  }
  s->current = (uint16_t)id;
  s->best = (uint16_t)id;
  acl_search_place_reset(s); /* its samples by place are the old decision's */
  s->drift.ref_seconds = c->robust_seconds;
  drift_overlap_reset(s, c);
  s->drift.count = 0;
  s->drift.head = 0;
  s->drift.run = 0;
  s->decision_call = s->calls_planned - s->tune_start_call;
  if (id == ACL_SEARCH_CAND_NCCL)
    s->pair.n = s->pair.unpaired = 0; /* NCCL's own choice: its speedup is 1 by definition */
}

/* Validation is over (the caller fires the event that says why). */
static void val_over(acl_search_t *s)
{
  s->verdict_call = s->calls_planned - s->tune_start_call;
  if (s->verdict_call == 0)
    s->verdict_call = 1;
}

/* Background refinement (after the baseline verdict): exploration judged
 * each point on a handful of noisy samples, so the decision's channel
 * neighbours and the best points of close subspaces get a second, long look.
 * Around NCCL's own choice the centre is its subspace at the hinted count. */
static int centre_of(const acl_search_t *s)
{
  if (!acl_search_is_nccl(s, s->current))
    return s->current;
  for (int i = 1; i < s->ncands; i++) {
    const acl_search_cand_t *c = &s->cands[i];
    if (c->sub != ACL_SEARCH_NONE && c->cand.algo == s->nccl_algo &&
        c->cand.proto == s->nccl_proto && c->cand.nchannels == s->hint_ch && s->hint_ch > 0)
      return i;
  }
  return -1;
}

static int pick_challenger(acl_search_t *s)
{
  if (s->val.refines >= ACL_REF_MAX_TRIES)
    return -1;
  int d = centre_of(s);
  if (d < 0)
    return -1;
  s->cands[d].tried = 1;
  const acl_search_cand_t *dc = &s->cands[d];
  int n = acl_search_axis_count(s, ACL_SEARCH_AXIS_CHANNELS);
  /* Around NCCL's own choice one grid step is a few percent at most, too
   * little to prove against it: look two steps away. */
  int reach = acl_search_is_nccl(s, s->current) ? ACL_REF_REACH_NCCL : ACL_REF_REACH;
  for (int dir = 1; dir >= -1; dir -= 2) {
    int at = dc->axis_idx[0] + dir * reach;
    if (at < 0 || at >= n)
      continue;
    uint8_t idx[ACL_SEARCH_NUM_AXES];
    memcpy(idx, dc->axis_idx, sizeof idx);
    idx[0] = (uint8_t)at;
    int id = acl_search_find_or_add(s, dc->sub, idx);
    if (id > 0 && acl_search_runs_channels(s, id) == acl_search_runs_channels(s, d))
      s->cands[id].tried = 1; /* NCCL runs it as the decision itself: nothing to learn */
    if (id > 0 && !s->cands[id].tried) {
      s->cands[id].tried = 1;
      return id;
    }
  }
  double ref = s->cands[s->current].robust_seconds;
  int best = -1;
  for (int i = 1; i < s->ncands; i++) {
    const acl_search_cand_t *c = &s->cands[i];
    if (c->tried || !c->judged || c->sub == dc->sub || !acl_search_usable(s, i) ||
        !(c->robust_seconds < ACL_REF_NEAR * ref))
      continue;
    if (best < 0 || c->robust_seconds < s->cands[best].robust_seconds)
      best = i;
  }
  if (best > 0)
    s->cands[best].tried = 1;
  return best;
}

void acl_search_next_challenger(acl_search_t *s)
{
  int id = pick_challenger(s);
  if (id <= 0) {
    val_over(s);
    acl_sm_fire(s, EV_SETTLED);
    return;
  }
  s->val.challenger = (uint16_t)id;
  s->val.refines++;
  s->val.handed = 0;
  s->val.mark = s->val.out;
  s->val.call0 = (uint32_t)acl_search_call_index(s);
  s->val.paused = 0;
  s->val.full_at = s->val.seen = 0;
  s->val.n[1] = 0;
  s->val.sum[1] = s->val.sq[1] = 0.0;
  acl_search_place_challenger(s);
  acl_sm_fire(s, EV_CHALLENGE);
}

void acl_search_converge(acl_search_t *s, int id)
{
  bool first = !acl_phase_decided(acl_sm_base(s));
  if (!first && s->from_table && s->current == s->seed_id && id != s->seed_id) {
    /* the table's decision cannot run on some rank (acl_search_restrict):
     * as if the table were silent, the workload explores */
    seed_failed(s);
    return;
  }
  adopt(s, id);
  if (!first) {
    val_reset(s);
    val_over(s);
    acl_sm_fire(s, EV_FALLBACK);
    return;
  }
  s->calls_to_converge = s->calls_planned - s->tune_start_call;
  if (s->calls_to_converge == 0)
    s->calls_to_converge = 1;
  s->explore.cur_sub = ACL_SEARCH_NONE;
  s->val.refines = 0;
  /* A decision other than NCCL's own is provisional until validated
   * against it; NCCL's own gets its neighbours challenged. */
  val_reset(s);
  if (id == ACL_SEARCH_CAND_NCCL)
    acl_search_next_challenger(s);
  else
    acl_sm_fire(s, EV_PROVISIONAL);
}

/* The challenger wins: it becomes the decision, its samples the decision's. */
static void promote(acl_search_t *s, double gain, double se)
{
  /* A refinement challenger faster than the decision by -gain (log): its
   * speedup over NCCL's own choice composes with the decision's. */
  if (s->val.challenger != ACL_SEARCH_CAND_NCCL && acl_search_is_nccl(s, s->current)) {
    s->pair.log = -gain;
    s->pair.se = se;
    s->pair.n = s->val.n[1];
    s->pair.unpaired = 0;
  } else if (s->val.challenger != ACL_SEARCH_CAND_NCCL && s->pair.n > 0) {
    s->pair.log -= gain;
    s->pair.se = hypot(s->pair.se, se);
  }
  adopt(s, s->val.challenger);
  s->val.n[0] = s->val.n[1];
  s->val.sum[0] = s->val.sum[1];
  s->val.sq[0] = s->val.sq[1];
}

/* Stragglers (a slow rank, a page fault) would dominate a plain mean: a
 * sample beyond ACL_VAL_STRAGGLER x the candidate's robust time is dropped.
 * The rest is compared in log space (relative differences). */
static bool val_straggler(const acl_search_t *s, int id, double seconds)
{
  const acl_search_cand_t *c = &s->cands[id];
  double ref = acl_search_trimmed_mean(c->seconds, c->nsamples);
  return ref > 0.0 && seconds > ACL_VAL_STRAGGLER * ref;
}

/* Whether call (index + 1, low 32 bits; 0 unknown: now) ran in the
 * validation's latest pause. */
static bool in_pause(const acl_search_t *s, uint64_t call)
{
  if (!call)
    return s->state == ACL_PHASE_PAUSED;
  uint32_t c = (uint32_t)call;
  return (int32_t)(c - s->val.pause_from) > 0 && (int32_t)(c - s->val.pause_to) <= 0;
}

static void val_add(acl_search_t *s, int k, int id, double seconds)
{
  if (val_straggler(s, id, seconds))
    return;
  double x = log(seconds);
  s->val.n[k]++;
  s->val.sum[k] += x;
  s->val.sq[k] += x * x;
}

static void retune(acl_search_t *s, int cause);

/* The table's decision is slower than NCCL's own choice here: the workload
 * explores as if the table were silent. */
static void seed_failed(acl_search_t *s) { retune(s, ACL_RETUNE_TABLE); }

/* The decision lost against NCCL's own choice: back to it (a table's
 * decision: the workload explores as if the table were silent). */
static void revert(acl_search_t *s, double gain, double se)
{
  if (s->from_table) {
    seed_failed(s);
    return;
  }
  promote(s, gain, se);
  acl_search_next_challenger(s);
}

/* Sequential test, looked at once per challenger block. Against NCCL's
 * choice (challenger 0): keep the decision when it is faster by
 * ACL_VAL_Z_KEEP standard errors, revert when it is slower by
 * ACL_VAL_Z_DROP_UNPROVEN,
 * or when ACL_VAL_MAX samples still leave it undecided (a gain too small to
 * prove is not worth the risk of being slower than NCCL). A refinement
 * challenger is promoted when faster by ACL_REF_Z (ACL_REF_Z_BASE and 1% when
 * the decision is NCCL's own), dropped when slower by ACL_VAL_Z_DROP or still
 * undecided after ACL_REF_MAX samples. Noise is pooled from both (same
 * relative noise), so the decision's many samples tighten the estimate. */
static void val_check(acl_search_t *s)
{
  uint32_t nd = s->val.n[0], nc = s->val.n[1];
  if (nc < ACL_VAL_MIN || nd < 2 || nc % ACL_VAL_BLOCK != 0)
    return;
  double md = s->val.sum[0] / nd, mc = s->val.sum[1] / nc;
  double ss = (s->val.sq[0] - nd * md * md) + (s->val.sq[1] - nc * mc * mc);
  double var = ss > 0.0 ? ss / (double)(nd + nc - 2) : 0.0;
  double se = sqrt(var * (1.0 / nd + 1.0 / nc));
  double gain = mc - md; /* log(t_challenger / t_decision): > 0 when the decision is faster */
  /* each challenger sample against the decision's at its place in the
   * step, where the places' spread made the means' difference the noisier */
  acl_search_place_estimate(s, se, &gain, &se);
  if (acl_sm_base(s) == ACL_PHASE_VALIDATING) { /* against NCCL's own choice */
    /* The speedup shown is this interleaved estimate, updated at the looks
     * only: a decision measured slower (by ACL_VAL_Z_DROP_UNPROVEN SE)
     * goes back to NCCL's choice at the same look, so no converged row
     * shows a loss its interval confirms, and the test keeps its looks. */
    s->pair.log = gain;
    s->pair.se = se;
    s->pair.n = nc;
    s->pair.unpaired = 0;
    /* The last look is a single test, not one of many: a lower bar. */
    double zk = nc >= ACL_VAL_MAX ? ACL_VAL_Z_LAST : ACL_VAL_Z_KEEP;
    if (gain - zk * se > 0.0) {
      if (s->from_table) { /* a table's decision was refined when it was explored */
        val_over(s);
        acl_sm_fire(s, EV_SETTLED);
      } else {
        acl_search_next_challenger(s);
      }
    } else if (gain + ACL_VAL_Z_DROP_UNPROVEN * se < 0.0 || nc >= ACL_VAL_MAX) {
      revert(s, gain, se);
    }
    return;
  }
  /* Replacing NCCL's own choice needs proof of a real (> 1%) gain: several
   * challengers are tried, and each look is a chance of a lucky streak. */
  bool base = acl_search_is_nccl(s, s->current);
  double z = base ? ACL_REF_Z_BASE : ACL_REF_Z;
  if (-gain - z * se > (base ? ACL_SEARCH_PROV_MARGIN : 0.0)) {
    promote(s, gain, se);
    acl_search_next_challenger(s);
  } else if (-gain + ACL_VAL_Z_DROP * se < 0.0 || nc >= ACL_REF_MAX) {
    acl_search_next_challenger(s);
  }
}

/* Validation lost NCCL's samples while the decision's arrived. On one GPU
 * shared by two ranks, the events of NCCL's own 64-channel calls, four
 * between every twelve of a decision with fewer channels, stopped coming
 * (likely dropped as stale, their channels' stamps from several kernels;
 * not confirmed), while the
 * decision's kept coming; at 4 MiB two of three 1.5-1.9x decisions went
 * back to NCCL's choice. Then the decision's recent samples are compared
 * with NCCL's choice's own, taken before validation: unpaired, without the
 * shared interference that pairing cancels, hence the margin. */
bool acl_search_val_unpaired_keep(acl_search_t *s)
{
  const acl_search_cand_t *b = &s->cands[ACL_SEARCH_CAND_NCCL];
  const acl_search_cand_t *d = &s->cands[s->current];
  uint32_t n = s->val.n[0];
  int nb = b->nsamples, nmin = s->params.samples_per_cand;
  if (acl_sm_base(s) != ACL_PHASE_VALIDATING || s->from_table || n < ACL_VAL_MAX ||
      s->val.n[1] >= ACL_VAL_MIN || nb < nmin || d->nsamples < nmin)
    return false;
  double tb = acl_search_trimmed_mean(b->seconds, nb);
  double td = acl_search_trimmed_mean(d->seconds, d->nsamples);
  if (!(td > 0.0 && tb >= ACL_VAL_UNPAIRED_MARGIN * td))
    return false;
  /* the decision's spread stands for both (same relative noise) */
  double m = s->val.sum[0] / n, var = (s->val.sq[0] - n * m * m) / (n - 1);
  double gain = log(tb / td), se = sqrt((var > 0.0 ? var : 0.0) * (1.0 / n + 1.0 / nb));
  if (gain - ACL_VAL_Z_KEEP * se <= 0.0)
    return false;
  s->pair.log = gain;
  s->pair.se = se;
  s->pair.n = (uint32_t)nb;
  s->pair.unpaired = 1;
  return true;
}

void acl_search_val_abandon(acl_search_t *s)
{
  adopt(s, ACL_SEARCH_CAND_NCCL);
  val_over(s);
  acl_sm_fire(s, EV_SETTLED);
}

int acl_search_val_block(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  bool challenger_turn = s->val.handed & 1u;
  /* the run's length from the block's number (golden-ratio hash, the same
   * on every rank): ACL_VAL_RUN on average, the challenger's place in the
   * step moving */
  uint64_t h = acl_search_golden(s->val.handed / 2u);
  uint32_t l = challenger_turn ? ACL_VAL_BLOCK
                               : ACL_VAL_RUN - ACL_VAL_RUN_JITTER +
                                     (uint32_t)((h >> 32) % (2u * ACL_VAL_RUN_JITTER + 1u));
  int id = challenger_turn ? s->val.challenger : s->current;
  s->spent_s += l * ACL_SEARCH_EVENT_COST_S;
  s->val.handed++;
  s->val.out += l;
  s->calls_planned += l;
  if (s->val.handed == 2 * ACL_VAL_MAX_BLOCKS)
    s->val.full_at = (uint32_t)acl_search_call_index(s) + 1u;
  if (out)
    *out = s->cands[id].cand;
  if (len)
    *len = l;
  return id;
}

/* ---- drift and re-tuning ------------------------------------------------- */

/* Re-tuning: every measurement is stale; keep the candidates (ids stay valid
 * for late samples) and the trajectory, search again from the baseline. */
static void retune(acl_search_t *s, int cause)
{
  /* The budget prices every call so far at the baseline's time: forgotten
   * with the measurements, it fell back on the cost table (5x low on one
   * H200), below what exploring had already spent, and the re-tune waited
   * for the budget the rest of the run. */
  s->ref_kept = acl_search_ref_seconds(s);
  /* the report's NCCL time until it is measured again: a workload that
   * re-tunes was sampled, and its NCCL time shown as none read as never */
  double measured = acl_search_measured_ref(s);
  if (measured > 0.0)
    s->baseline_kept = measured;
  acl_search_explore_reset(s);
  s->retunes++;
  s->retune_cause = (uint8_t)cause;
  s->from_table = 0; /* measured again from here: explored */
  s->calls_to_converge = 0;
  s->drift.count = 0;
  s->drift.run = 0;
  s->decision_call = 0;
  s->verdict_call = 0;
  s->val.refines = 0;
  s->pair.n = s->pair.unpaired = 0;
  for (int i = 0; i < s->ncands; i++)
    s->cands[i].tried = 0;
  val_reset(s);
  acl_sm_fire(s, EV_DRIFT);
}

/* The overlap of a candidate's latest sample (its ring's newest slot). */
static double latest_overlap(const acl_search_cand_t *c)
{
  if (c->nsamples == 0)
    return -1.0;
  uint32_t slot = c->nsamples < ACL_SEARCH_MAX_SAMPLES ? c->nsamples - 1u
                                                      : (c->ntotal_lo - 1u) % ACL_SEARCH_MAX_SAMPLES;
  return c->overlap[slot];
}

/* The overlap side of the drift rule, on the decision's latest sample:
 * true when the mean of its last ACL_SEARCH_OVERLAP_READINGS known
 * overlaps moved by more than ACL_SEARCH_OVERLAP_SHIFT from the reference
 * (the mean of its first ov_ref readings, from drift_overlap_reset on).
 * Unknown overlaps (between CUPTI's windows) add nothing; the verdict on
 * the last readings holds until the next one. */
_Static_assert(ACL_SEARCH_OVERLAP_REF_READINGS <= ACL_SEARCH_OVERLAP_READINGS &&
                   ACL_SEARCH_MAX_SAMPLES <= ACL_SEARCH_OVERLAP_REF_READINGS,
               "the reference's readings fit the ring's first slots");
static bool overlap_shift(acl_search_t *s, double overlap)
{
  acl_search_drift_t *d = &s->drift;
  enum { K = ACL_SEARCH_OVERLAP_READINGS };
  int R = d->ov_ref ? d->ov_ref : ACL_SEARCH_OVERLAP_REF_READINGS;
  if (overlap >= 0.0) {
    d->ov[d->ov_head] = (float)overlap;
    d->ov_head = (uint16_t)((d->ov_head + 1) % K);
    if (d->ov_n < K)
      d->ov_n++;
  }
  if (d->ref_overlap < 0.0) {
    if (d->ov_n < R)
      return false;
    double sum = 0.0; /* the ring's first R slots: it started empty */
    for (int i = 0; i < R; i++)
      sum += d->ov[i];
    d->ref_overlap = sum / R; /* the next readings are judged against it */
    d->ov_n = 0;
    d->ov_head = 0;
    return false;
  }
  if (d->ov_n < K)
    return false;
  double sum = 0.0;
  for (int i = 0; i < K; i++)
    sum += d->ov[i];
  return fabs(sum / K - d->ref_overlap) > ACL_SEARCH_OVERLAP_SHIFT;
}

/* Whether the window is slower than the reference by more than 1 / ratio:
 * more than half of the (window, reference) pairs have the window's sample,
 * sped up by the ratio, still the slower. With one mode that is the medians'
 * comparison, outliers never moving it; with two (a call's place in the
 * step: a DDP bucket 0.4 ms at one, 2.9 ms at another on one H100) a window
 * whose mix of places moved by a few samples moves it by as much, where
 * the median jumps from one mode to the other. */
static bool slower_than(const float *win, const float *ref, int w, double ratio)
{
  int above = 0;
  for (int i = 0; i < w; i++)
    for (int j = 0; j < w; j++)
      above += (double)win[i] * ratio > (double)ref[j];
  return 2 * above > w * w;
}

/* Drift rule (docs/tuner.md): the decision's first drift_window samples
 * once taken are the reference; from then on the rule holds when the last
 * drift_window are slower than it by more than 1 / drift_ratio (bandwidth
 * below drift_ratio x converged: slower_than), or when the overlap moved
 * (overlap_shift: the interference regime, hence the winner, changed). The
 * reference is sampled as the window is: the time the decision was judged
 * on came from a few consecutive calls, one or two places of the step, and
 * against it the window's mix of every place read "slower" (six seeds of
 * the simulated DDP job with one H100's 7x between places: 3-5 re-tunes of
 * its 64 MiB bucket in 3,000 steps, each one costing more than the
 * decision saved). */
static void drift_check(acl_search_t *s, double seconds, double overlap)
{
  int w = s->params.drift_window;
  /* Where NCCL's KernelCh events time the calls, CUPTI's windows bring the
   * overlap only: a config's CUPTI durations run longer by an offset of its
   * own (1 MiB AllReduce on one H100: RING/LL/48 7.6 us, NCCL's choice
   * 2.1 us), past what the search takes off as the clock's (at most 5 us),
   * and a window's burst of them filled the window and re-tuned a 1.6x
   * decision on "slower" in 2 of 3 runs. */
  bool timed = !s->clock.last_cupti || !s->clock.kch_any;
  if (timed) {
    s->drift.win[s->drift.head] = (float)seconds;
    s->drift.head = (s->drift.head + 1) % (uint32_t)w;
    if (++s->drift.count == (uint32_t)w) /* the first full window: the reference */
      memcpy(s->drift.base, s->drift.win, sizeof(float) * (size_t)w);
  }
  bool shift = overlap_shift(s, overlap);
  if (s->drift.count < (uint32_t)w)
    return;
  bool slow = slower_than(s->drift.win, s->drift.base, w, s->params.drift_ratio);
  /* Sustained: the rule must hold for w consecutive samples (a second
   * window), and each re-tune doubles the evidence the next one needs. */
  uint32_t backoff =
      s->retunes < ACL_SEARCH_RETUNE_BACKOFF_MAX ? s->retunes : ACL_SEARCH_RETUNE_BACKOFF_MAX;
  if (!(slow || shift))
    s->drift.run = 0;
  else if (++s->drift.run >= (uint32_t)w << backoff)
    retune(s, slow ? ACL_RETUNE_SLOWER : ACL_RETUNE_OVERLAP);
}

void acl_search_converged_sample(acl_search_t *s, int id, double seconds, uint64_t call)
{
  acl_search_cand_t *c = &s->cands[id];
  if (s->from_table && s->samples_seen <= (uint64_t)s->params.warmup_calls)
    return; /* a warm start's first calls are its warm-up */
  if (c->judged)
    c->robust_seconds = acl_search_trimmed_mean(c->seconds, c->nsamples);
  if (id == s->current && s->drift.ref_seconds <= 0.0 &&
      c->nsamples >= s->params.samples_per_cand) {
    /* A decision taken before it was measured (a warm start, or NCCL's own
     * choice it reverted to): its drift reference once it has samples. */
    c->judged = 1;
    c->robust_seconds = acl_search_trimmed_mean(c->seconds, c->nsamples);
    s->drift.ref_seconds = c->robust_seconds;
    drift_overlap_reset(s, c);
  }
  /* Validation pairs the samples of its own calls only (call0's low 32 bits
   * against the call's, both call indices): a sample from before it began,
   * NCCL's choice's from the waits before all, is no challenger's. */
  bool validating = acl_sm_validating(acl_sm_base(s)) &&
                    !(call && (int32_t)((uint32_t)(call - 1) - s->val.call0) < 0);
  if (validating) {
    s->val.in++;
    if (call && (!s->val.seen || (int32_t)((uint32_t)call - s->val.seen) > 0))
      s->val.seen = (uint32_t)call;
  }
  if (id == s->current) {
    if (s->drift.ref_seconds > 0.0)
      drift_check(s, seconds, latest_overlap(c));
    if (validating) {
      val_add(s, 0, id, seconds);
      acl_search_place_sample(s, false, seconds, call);
    }
  } else if (id == s->val.challenger && validating) {
    acl_search_place_sample(s, true, seconds, call);
    const acl_search_cand_t *d = &s->cands[s->current];
    double ref = s->drift.ref_seconds > 0.0 ? s->drift.ref_seconds
                 : d->nsamples > 0          ? acl_search_trimmed_mean(d->seconds, d->nsamples)
                                            : seconds;
    /* A straggler (a slow rank, a page fault) would have hit the decision
     * as well: not the challenger's cost. Charged, one 2-3x sample of a
     * 1 GiB call paused validation for 60 calls, and runs ended on an
     * unproven decision slower than NCCL's choice. Nor is a call of a
     * pause, where NCCL's choice runs as the safe one: charged, NCCL's
     * excess over the decision outgrew what the budget earns meanwhile and
     * kept the pause going (a 416 MiB AllGather paused to the end of its
     * run, its 1.09x decision unused). */
    if (!val_straggler(s, id, seconds) && !in_pause(s, call))
      acl_search_charge_sample(s, seconds, ref);
    val_add(s, 1, id, seconds);
    val_check(s);
  }
}

/* ---- warm start ---------------------------------------------------------- */

int acl_search_seed(acl_search_t *s, const acl_candidate_t *cand)
{
  if (!s || !cand || s->calls_planned > 0 || acl_sm_base(s) != ACL_PHASE_WARMUP)
    return -1;
  int id = ACL_SEARCH_CAND_NCCL;
  if (cand->algo != ACL_ALGO_NCCL) {
    int si = -1;
    for (int i = 0; i < s->nsubs; i++)
      if (s->subs[i].algo == cand->algo && s->subs[i].proto == cand->proto &&
          s->subs[i].state != ACL_SUB_INVALID)
        si = i;
    if (si < 0 || s->ncands >= ACL_SEARCH_MAX_CANDS)
      return -1;
    /* Its own candidate, on the grid point nearest its channels (where a
     * later exploration would start from), whatever its exact count. */
    id = s->ncands++;
    acl_search_cand_t *c = &s->cands[id];
    memset(c, 0, sizeof *c);
    c->cand = *cand;
    /* Its chunk scale where this run can set one (else NCCL's own). */
    c->cand.chunk_log2 = s->params.chunk_axis ? cand->chunk_log2 : 0;
    c->axis_idx[1] = (uint8_t)acl_search_chunk_index(s, c->cand.chunk_log2);
    c->sub = (uint8_t)si;
    c->axis_idx[0] = (uint8_t)acl_search_axis_start(s, ACL_SEARCH_AXIS_CHANNELS);
    int n = acl_search_axis_count(s, ACL_SEARCH_AXIS_CHANNELS);
    for (int i = 0; i < n && cand->nchannels > 0; i++)
      if (abs(acl_search_axis_value(s, ACL_SEARCH_AXIS_CHANNELS, i) - cand->nchannels) <
          abs(acl_search_axis_value(s, ACL_SEARCH_AXIS_CHANNELS, c->axis_idx[0]) - cand->nchannels))
        c->axis_idx[0] = (uint8_t)i;
    c->judged = 1; /* a verdict from an earlier run: usable; timed once sampled */
    c->tried = 1;
  }
  s->from_table = 1;
  s->seed_id = (uint16_t)id;
  s->tune_start_call = 0;
  /* adopt + validation against NCCL's own choice, no refinement: the table's
   * decision was refined when it was explored. */
  s->explore.cur_sub = ACL_SEARCH_NONE;
  s->calls_to_converge = 1;
  adopt(s, id);
  s->decision_call = 1;
  s->val.refines = ACL_REF_MAX_TRIES;
  val_reset(s);
  if (id == ACL_SEARCH_CAND_NCCL) {
    val_over(s);
    acl_sm_fire(s, EV_SEED_NCCL);
  } else {
    acl_sm_fire(s, EV_SEED_TABLE);
  }
  return 0;
}

const char *acl_search_source_name(int src) { return acl_source_name(src); }

/* ---- reporting ----------------------------------------------------------- */

acl_phase_t acl_search_phase(const acl_search_t *s) { return acl_sm_block(s); }

int acl_search_safe(const acl_search_t *s, acl_candidate_t *out)
{
  acl_phase_t base = acl_sm_base(s);
  bool proven = base == ACL_PHASE_CONVERGED || base == ACL_PHASE_REFINING ||
                (base == ACL_PHASE_VALIDATING && s->from_table);
  int id = proven && s->current < s->ncands ? s->current : ACL_SEARCH_CAND_NCCL;
  if (!out)
    return id;
  if (id == ACL_SEARCH_CAND_NCCL) {
    memset(out, 0, sizeof(*out));
    out->algo = ACL_ALGO_NCCL; /* as step_locked publishes cand 0 */
  } else {
    *out = s->cands[id].cand;
  }
  return id;
}

void acl_search_report(const acl_search_t *s, acl_search_report_t *r)
{
  memset(r, 0, sizeof *r);
  r->phase = acl_sm_block(s);
  bool decided = acl_phase_decided(acl_sm_base(s));
  int cur = s->current < s->ncands ? s->current : 0;
  r->current = s->cands[cur].cand;
  r->baseline = s->cands[0].cand;
  if (s->cands[0].robust_seconds > 0.0)
    r->baseline_seconds = s->cands[0].robust_seconds;
  else
    r->baseline_kept_seconds = s->baseline_kept;
  int b = decided ? s->current : acl_search_best_judged(s, true);
  if (b >= 0 && s->cands[b].robust_seconds > 0.0) {
    r->best = s->cands[b].cand;
    r->best_seconds = s->cands[b].robust_seconds;
  } else {
    r->best = s->cands[0].cand;
  }
  if (decided && acl_search_is_nccl(s, cur)) {
    r->speedup = r->speedup_lo = r->speedup_hi = 1.0;
    r->speedup_paired = 1;
  } else if (decided && (s->pair.n >= ACL_VAL_MIN || s->pair.unpaired)) {
    /* measured interleaved with NCCL's own choice, never against a
     * baseline from another interference regime; or, NCCL's samples lost
     * in validation, against its earlier ones: then no interval is shown */
    r->speedup = exp(s->pair.log);
    r->speedup_lo = exp(s->pair.log - ACL_SEARCH_SPEEDUP_Z * s->pair.se);
    r->speedup_hi = exp(s->pair.log + ACL_SEARCH_SPEEDUP_Z * s->pair.se);
    r->speedup_paired = !s->pair.unpaired;
  } else if (!decided && r->baseline_seconds > 0.0 && r->best_seconds > 0.0) {
    /* exploring: the best so far against the baseline, no interval */
    r->speedup = r->baseline_seconds / r->best_seconds;
  }
  /* else a decision not yet measured against NCCL's choice: unknown */
  const acl_search_cand_t *c = &s->cands[cur];
  if (c->nsamples > 0)
    r->busbw = acl_search_busbw(s, acl_search_trimmed_mean(c->seconds, c->nsamples));
  else if (s->traj_len > 0)
    r->busbw = s->traj[(s->traj_head + ACL_SEARCH_TRAJ - 1) % ACL_SEARCH_TRAJ].busbw;
  r->overlap = c->nsamples > 0 ? acl_search_mean_overlap(c) : -1.0;
  r->candidates_evaluated = s->steps;
  r->calls_to_converge = s->calls_to_converge;
  r->retunes = s->retunes;
  r->retune_cause = s->retune_cause;
  r->clock_offset_seconds = s->clock.offset_s;
  r->validating = acl_sm_validating(acl_sm_base(s));
  r->calls_to_decision = decided ? s->decision_call : 0;
  r->calls_to_verdict = decided ? s->verdict_call : 0;
  r->exploration_spent_seconds = s->spent_s;
  r->cost_seconds = acl_search_time_so_far(s);
  r->merged = s->merged;
  r->outliers = s->outliers;
  r->samples = s->samples_seen;
  if (s->state == ACL_PHASE_WAIT_BUDGET || s->state == ACL_PHASE_PAUSED) {
    r->budget_wait_calls = s->budget_wait;
    r->budget_wait_for = s->budget_wait_for;
  }
  if (s->from_table && cur == s->seed_id)
    r->source = ACL_SEARCH_SRC_TABLE;
  else if (!decided || acl_search_is_nccl(s, cur))
    r->source = ACL_SEARCH_SRC_NCCL;
  else
    r->source = ACL_SEARCH_SRC_EXPLORED;
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
