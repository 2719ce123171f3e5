/* The exploration budget of one search (docs/tuner.md): what exploring and
 * validating cost beyond the incumbent (other candidates' extra time,
 * profiler events, a config's first use) never exceeds params.budget x the
 * time the workload has cost so far. While the next block would overdraw
 * it, the incumbent runs unsampled: a waiting state (search_sm.c). */
#include <math.h>

#include "tuner/search/search_int.h"

/* The budget earned so far: params.budget x the time so far. */
static double earned(const acl_search_t *s)
{
  return s->params.budget * (double)s->calls_planned * acl_search_ref_seconds(s);
}

double acl_search_budget_left(const acl_search_t *s)
{
  if (acl_search_ref_seconds(s) <= 0.0)
    return INFINITY; /* no time known yet: the baseline's samples tell it */
  return earned(s) - s->spent_s + s->loan_s;
}

/* Exploring or validating, a workload needs its budget. Before any
 * workload of the communicator converged, its first events (paid once for
 * all of them) are paid by the budgets of all that still owe them, begun or
 * not: on one H100 CUPTI's windows measured FSDP's 95 MiB baselines without
 * NCCL's events in the first windows, and while only the workloads whose
 * baseline had not begun lent, the two 250 MiB ones (once a step) pooled
 * alone and still owed 790-975 calls at 30 % of the run. */
static bool may_lend(const acl_search_t *s, bool first_events)
{
  bool owes = first_events && acl_search_owes_first_events(s);
  return acl_sm_base(s) == ACL_PHASE_CONVERGED || owes;
}

double acl_search_lendable(const acl_search_t *s, bool first_events)
{
  if (!s || !may_lend(s, first_events))
    return 0.0;
  double left = acl_search_budget_left(s);
  return isfinite(left) && left > 0.0 ? left : 0.0;
}

double acl_search_lend_earned(const acl_search_t *s, bool first_events)
{
  if (!s || !may_lend(s, first_events))
    return 0.0;
  return earned(s);
}

bool acl_search_owes_first_events(const acl_search_t *s)
{
  return s && s->params.events_per_comm && !s->events_paid;
}

bool acl_search_wants_loan(const acl_search_t *s)
{
  return s && s->cands[0].planned == 0 && !s->cands[0].judged &&
         !acl_phase_decided(acl_sm_base(s));
}

double acl_search_loan_taken(const acl_search_t *s) { return s ? s->loan_new_s : 0.0; }

bool acl_search_events_charged(const acl_search_t *s) { return s && s->events_paid; }

double acl_search_time_so_far(const acl_search_t *s)
{
  return s ? (double)s->calls_planned * acl_search_ref_seconds(s) : 0.0;
}

/* What a step lacks is borrowed only when the offer covers all of it and
 * it is at most cap: a part would not start the step, only shorten its
 * wait at the lenders' cost. */
bool acl_search_afford(acl_search_t *s, double need, double cap)
{
  double lack = need - acl_search_budget_left(s);
  if (!(lack > 0.0))
    return true;
  if (lack > s->loan_offer_s || lack > cap)
    return false;
  s->loan_s += lack;
  s->loan_new_s += lack;
  s->loan_offer_s = 0.0;
  return true;
}

/* The workload's first profiler events, until charged (once; with
 * events_per_comm, once for its communicator). */
static double first_events_cost(const acl_search_t *s)
{
  return s->params.events_per_comm ? ACL_SEARCH_FIRST_EVENTS_COMM_COST_S
                                   : ACL_SEARCH_FIRST_EVENTS_COST_S;
}

double acl_search_first_events_due(const acl_search_t *s)
{
  return s->events_paid ? 0.0 : first_events_cost(s);
}

/* Measuring the baseline costs its profiler events (the first ones of the
 * workload dearly). */
double acl_search_baseline_need(const acl_search_t *s)
{
  return (double)s->params.samples_per_cand * ACL_SEARCH_EVENT_COST_S +
         acl_search_first_events_due(s);
}

/* n samples of a candidate, each `excess` slower than the incumbent, with
 * their profiler events, the config's set-up and the workload's first
 * events if not yet paid. */
static double samples_cost(const acl_search_t *s, int n, double excess)
{
  return n * (ACL_SEARCH_EVENT_COST_S + excess) + ACL_SEARCH_SETUP_COST_S +
         acl_search_first_events_due(s);
}

/* What the first look at candidate id (ACL_SEARCH_EARLY2_N samples) is
 * expected to cost beyond the incumbent: NCCL's cost table gives its prior
 * slowdown (clamped to [1, ACL_SEARCH_SKIP_PRIOR]: it is only a prior);
 * the workload's first events too, where CUPTI's windows measured the
 * baseline without any. */
double acl_search_step_cost(const acl_search_t *s, int id)
{
  const acl_candidate_t *c = &s->cands[id].cand;
  double ref = acl_search_ref_seconds(s), ratio = 1.0;
  float cn = s->nccl_algo >= 0 ? s->cost[s->nccl_algo][s->nccl_proto] : -1.0f;
  float cc = c->algo >= 0 && c->proto >= 0 ? s->cost[c->algo][c->proto] : -1.0f;
  if (cn > 0.0f && cc > 0.0f)
    ratio = fmin(fmax((double)cc / cn, 1.0), ACL_SEARCH_SKIP_PRIOR);
  int n = s->params.samples_per_cand < ACL_SEARCH_EARLY2_N ? s->params.samples_per_cand
                                                           : ACL_SEARCH_EARLY2_N;
  return samples_cost(s, n, ref * (ratio - 1.0));
}

double acl_search_spec_cost(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  double ref = acl_search_ref_seconds(s);
  /* the fewest channels measured in its subspace, and their time (NCCL's
   * own choice stands for its own pair at the count it ran) */
  int low = 0;
  double low_t = 0.0;
  const acl_search_sub_t *sub = c->sub != ACL_SEARCH_NONE ? &s->subs[c->sub] : NULL;
  if (sub && sub->algo == s->nccl_algo && sub->proto == s->nccl_proto && s->hint_ch > 0) {
    low = s->hint_ch; /* before its verdict (the baseline's look-ahead) at the time so far's */
    low_t = s->cands[0].judged ? s->cands[0].robust_seconds : ref;
  }
  for (int i = 1; i < s->ncands; i++) {
    const acl_search_cand_t *o = &s->cands[i];
    int ch = acl_search_runs_channels(s, i);
    if (o->judged && o->sub == c->sub && ch > 0 && (low == 0 || ch < low)) {
      low = ch;
      low_t = o->robust_seconds;
    }
  }
  int ch = acl_search_runs_channels(s, id);
  double t = ref;
  if (low > 0 && ch > 0 && ch < low && low_t > 0.0)
    t = low_t * fmin((double)low / ch, ACL_SEARCH_SPEC_CH_MAX);
  return samples_cost(s, s->params.samples_per_cand, t > ref ? t - ref : 0.0);
}

double acl_search_confirm_cost(const acl_search_t *s, int id, uint32_t n)
{
  /* set up and judged already: its events and its measured excess */
  double excess = s->cands[id].robust_seconds - acl_search_ref_seconds(s);
  return n * (ACL_SEARCH_EVENT_COST_S + (excess > 0.0 ? excess : 0.0));
}

/* Runs cand id unsampled for as many calls as the budget needs to grow by
 * `need` (within [ACL_SEARCH_WAIT_MIN, ACL_SEARCH_WAIT_MAX]). */
int acl_search_wait_block(acl_search_t *s, double need, int id, int why, acl_candidate_t *out,
                          uint32_t *len)
{
  /* the first events dwarf what else a step costs (30 ms against ~5 us a
   * sample): a wait that still owes them waits for them */
  s->budget_wait_for =
      (uint8_t)(need > 0.0 && acl_search_first_events_due(s) > 0.0 ? ACL_WAIT_FOR_FIRST_EVENTS
                                                                   : why);
  double per_call = s->params.budget * acl_search_ref_seconds(s);
  double deficit = need - acl_search_budget_left(s);
  if (acl_search_wants_loan(s) || acl_search_owes_first_events(s)) {
    /* a baseline, or a step owing the communicator's first events, borrows
     * from the communicator's pool once it covers all it lacks: the pool
     * and what it earns per call count toward the wait */
    deficit -= s->loan_offer_s;
    per_call += s->loan_rate_s;
  }
  double l = per_call > 0.0 ? ceil(deficit / per_call) : (double)ACL_SEARCH_WAIT_MAX;
  s->budget_wait = l >= (double)UINT32_MAX ? UINT32_MAX : l > 0.0 ? (uint32_t)l : 1u;
  /* planned on the cost table alone, the wait is looked at again soon
   * (samples arriving meanwhile give the real time), then ever later; so
   * is one owing the communicator's first events, measured or not (CUPTI's
   * windows measure NCCL's choice without them), since a neighbour's
   * charge may clear them any block: planned whole, FSDP's 250 MiB
   * AllGather on one H100 waited from its call 57 past the run's end (its
   * 1,015th call), while its neighbours paid them at call 63 */
  uint32_t max = ACL_SEARCH_WAIT_MAX;
  if (s->params.events_per_comm && !s->events_paid) {
    /* growing with the calls so far, not doubling: a doubled look came
     * up to twice as late as the communicator's pooled budget (FSDP on
     * one H100: step 256 for step ~150, or 505 for a look missed by a few
     * calls); a quarter overshoots by at most that */
    uint64_t q = s->calls_planned / ACL_SEARCH_WAIT_EVENTS_SHARE;
    max = q < ACL_SEARCH_WAIT_EVENTS_MAX ? ACL_SEARCH_WAIT_EVENTS_MAX
          : q > ACL_SEARCH_WAIT_MAX    ? ACL_SEARCH_WAIT_MAX
                                       : (uint32_t)q;
  } else if (s->cands[0].nsamples == 0) {
    max = ACL_SEARCH_WAIT_PRIOR_MAX << s->prior_waits;
    if (max < ACL_SEARCH_WAIT_MAX)
      s->prior_waits++;
    else
      max = ACL_SEARCH_WAIT_MAX;
  }
  uint32_t n = l < ACL_SEARCH_WAIT_MIN ? ACL_SEARCH_WAIT_MIN : l > max ? max : (uint32_t)l;
  if (!acl_phase_decided(acl_sm_base(s)))
    s->current = (uint16_t)id; /* decided: current stays the decision */
  acl_sm_fire(s, EV_NO_BUDGET);
  s->calls_planned += n;
  if (out)
    *out = s->cands[id].cand;
  if (len)
    *len = n;
  return id;
}

void acl_search_charge_block(acl_search_t *s, int id, uint32_t sampled)
{
  s->spent_s += sampled * ACL_SEARCH_EVENT_COST_S;
  if (!s->events_paid) {
    s->spent_s += first_events_cost(s);
    s->events_paid = 1;
  }
  if (id == ACL_SEARCH_CAND_NCCL)
    s->c0_sampled += sampled;
  if (id != ACL_SEARCH_CAND_NCCL && !s->cands[id].set_up) {
    s->spent_s += ACL_SEARCH_SETUP_COST_S;
    s->cands[id].set_up = 1;
  }
}

void acl_search_charge_sample(acl_search_t *s, double seconds, double ref)
{
  s->spent_s += fmax(0.0, seconds - ref);
}
