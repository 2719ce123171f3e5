/* The search's state machine (see search_int.h and docs/tuner.md): one state
 * enum, one event enum, one transition table, one transition function, and
 * beside them one handler per state: what the state hands out as the next
 * block and what it does with a sample. Every change of acl_search_t.state
 * goes through acl_sm_fire(); acl_search_next and add_sample (search.c) go
 * through the handlers.
 *
 * Waiting states (waiting for the budget, waiting for late samples, a paused
 * validation) last one block: the next block returns to the state they came
 * from (EV_NEXT_BLOCK), where the search decides afresh. An event that
 * arrives during a wait (a late sample's verdict, drift) changes the state it
 * returns to. */
#include <math.h>

#include "tuner/search/search_int.h"

typedef struct sm_edge {
  uint8_t from, ev, to;
} sm_edge_t;

/* The transition table. EV_NEXT_BLOCK out of a waiting state is not listed:
 * it returns to the state the wait came from. */
static const sm_edge_t sm_edges[] = {
    {ACL_PHASE_WARMUP, EV_WARMED, ACL_PHASE_BASELINE},
    {ACL_PHASE_WARMUP, EV_SEED_TABLE, ACL_PHASE_VALIDATING},
    {ACL_PHASE_WARMUP, EV_SEED_NCCL, ACL_PHASE_CONVERGED},
    {ACL_PHASE_BASELINE, EV_MEASURED, ACL_PHASE_EXPLORING},
    {ACL_PHASE_BASELINE, EV_NO_BUDGET, ACL_PHASE_WAIT_BUDGET},
    {ACL_PHASE_BASELINE, EV_LATE, ACL_PHASE_WAIT_SAMPLES},
    {ACL_PHASE_EXPLORING, EV_NO_BUDGET, ACL_PHASE_WAIT_BUDGET},
    {ACL_PHASE_EXPLORING, EV_LATE, ACL_PHASE_WAIT_SAMPLES},
    {ACL_PHASE_EXPLORING, EV_PROVISIONAL, ACL_PHASE_VALIDATING},
    {ACL_PHASE_EXPLORING, EV_CHALLENGE, ACL_PHASE_REFINING},
    {ACL_PHASE_EXPLORING, EV_SETTLED, ACL_PHASE_CONVERGED},
    {ACL_PHASE_RETUNING, EV_NO_BUDGET, ACL_PHASE_WAIT_BUDGET},
    {ACL_PHASE_RETUNING, EV_LATE, ACL_PHASE_WAIT_SAMPLES},
    {ACL_PHASE_RETUNING, EV_PROVISIONAL, ACL_PHASE_VALIDATING},
    {ACL_PHASE_RETUNING, EV_CHALLENGE, ACL_PHASE_REFINING},
    {ACL_PHASE_RETUNING, EV_SETTLED, ACL_PHASE_CONVERGED},
    {ACL_PHASE_VALIDATING, EV_NO_BUDGET, ACL_PHASE_PAUSED},
    {ACL_PHASE_VALIDATING, EV_CHALLENGE, ACL_PHASE_REFINING},
    {ACL_PHASE_VALIDATING, EV_SETTLED, ACL_PHASE_CONVERGED},
    {ACL_PHASE_VALIDATING, EV_FALLBACK, ACL_PHASE_CONVERGED},
    {ACL_PHASE_VALIDATING, EV_DRIFT, ACL_PHASE_RETUNING},
    {ACL_PHASE_REFINING, EV_NO_BUDGET, ACL_PHASE_PAUSED},
    {ACL_PHASE_REFINING, EV_CHALLENGE, ACL_PHASE_REFINING},
    {ACL_PHASE_REFINING, EV_SETTLED, ACL_PHASE_CONVERGED},
    {ACL_PHASE_REFINING, EV_FALLBACK, ACL_PHASE_CONVERGED},
    {ACL_PHASE_REFINING, EV_DRIFT, ACL_PHASE_RETUNING},
    {ACL_PHASE_CONVERGED, EV_FALLBACK, ACL_PHASE_CONVERGED},
    {ACL_PHASE_CONVERGED, EV_DRIFT, ACL_PHASE_RETUNING},
};
#define SM_NEDGES ((int)(sizeof sm_edges / sizeof sm_edges[0]))

static const char *const sm_event_names[EV_COUNT] = {
    "warmed",     "seeded",      "seeded-nccl", "measured", "no-budget", "late",
    "next-block", "provisional", "challenge",   "settled",  "fallback",  "drift"};

bool acl_search_phase_waits(acl_phase_t ph) { return acl_sm_is_wait(ph); }

int acl_search_transition(int i, acl_phase_t *from, const char **event, acl_phase_t *to)
{
  if (i < 0 || i >= SM_NEDGES)
    return -1;
  *from = (acl_phase_t)sm_edges[i].from;
  *event = sm_event_names[sm_edges[i].ev];
  *to = (acl_phase_t)sm_edges[i].to;
  return 0;
}

bool acl_sm_is_wait(int st)
{
  return st == ACL_PHASE_WAIT_BUDGET || st == ACL_PHASE_WAIT_SAMPLES || st == ACL_PHASE_PAUSED;
}

bool acl_sm_validating(int st) { return st == ACL_PHASE_VALIDATING || st == ACL_PHASE_REFINING; }

void acl_sm_start(acl_search_t *s) { s->state = s->resume = ACL_PHASE_WARMUP; }

acl_phase_t acl_sm_base(const acl_search_t *s)
{
  return (acl_phase_t)(acl_sm_is_wait(s->state) ? s->resume : s->state);
}

acl_phase_t acl_sm_block(const acl_search_t *s) { return (acl_phase_t)s->state; }

static int sm_target(int from, int ev)
{
  for (int i = 0; i < SM_NEDGES; i++)
    if (sm_edges[i].from == from && sm_edges[i].ev == ev)
      return sm_edges[i].to;
  return -1;
}

void acl_sm_fire(acl_search_t *s, acl_sm_event_t ev)
{
  if (ev == EV_NEXT_BLOCK) {
    if (acl_sm_is_wait(s->state))
      s->state = s->resume;
    return;
  }
  int from = acl_sm_base(s);
  int to = sm_target(from, ev);
  if (to < 0) {
    s->state = ACL_PHASE_DISABLED; /* not in the table: a bug; NCCL's choice is safe */
    return;
  }
  if (acl_sm_is_wait(to)) {
    s->resume = (uint8_t)from;
    s->state = (uint8_t)to;
  } else if (acl_sm_is_wait(s->state)) {
    s->resume = (uint8_t)to; /* the waiting block runs on; the next starts there */
  } else {
    s->state = (uint8_t)to;
  }
}

/* ---- the states' handlers ------------------------------------------------ */

/* warmup: NCCL's choice, no samples, warmup_calls calls in one block. */
static int warmup_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  if (s->calls_planned >= (uint64_t)s->params.warmup_calls) {
    acl_sm_fire(s, EV_WARMED);
    return -1;
  }
  uint32_t l = (uint32_t)((uint64_t)s->params.warmup_calls - s->calls_planned);
  s->calls_planned += l;
  s->current = ACL_SEARCH_CAND_NCCL;
  if (out)
    *out = s->cands[0].cand;
  if (len)
    *len = l;
  return ACL_SEARCH_CAND_NCCL;
}

/* Cand id's block, or while it waits for late samples what comes next
 * (search_explore.c, look-ahead), where the budget pays for it, priced
 * pessimistically, and one more step: spent to the last, it paused the
 * validation that followed for 2,000 calls. */
static int block_or_ahead(acl_search_t *s, int id, acl_candidate_t *out, uint32_t *len)
{
  int next = acl_search_lookahead(s, id);
  if (next > 0 &&
      acl_search_spec_cost(s, next) + acl_search_step_cost(s, next) <= acl_search_budget_left(s))
    return acl_search_hand_out(s, next, out, len);
  return acl_search_hand_out(s, id, out, len);
}

/* The baseline's next block (NCCL's choice measured), or the budget's wait
 * before its first one. */
static int baseline_block(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  double need = acl_search_baseline_need(s);
  if (s->cands[0].planned == 0 && !acl_search_afford(s, need, INFINITY))
    return acl_search_wait_block(s, need, ACL_SEARCH_CAND_NCCL, ACL_WAIT_FOR_BASELINE, out, len);
  return block_or_ahead(s, ACL_SEARCH_CAND_NCCL, out, len);
}

/* baseline: NCCL's choice until it is judged. */
static int baseline_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  if (s->cands[0].judged) {
    acl_sm_fire(s, EV_MEASURED);
    return -1;
  }
  return baseline_block(s, out, len);
}

/* exploring, retuning: the baseline first where it is not judged (a
 * re-tune measures it again), then the next candidate's block or the
 * budget's wait before it. Exploration over: the best measured candidate
 * becomes the (provisional) decision when it beats the baseline by
 * ACL_SEARCH_PROV_MARGIN; validation then confirms or reverts it. */
static int explore_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  if (!s->cands[0].judged)
    return baseline_block(s, out, len);
  int id = acl_search_plan(s);
  for (int guard = 0; id >= 0 && guard < ACL_SEARCH_MAX_STEPS && acl_search_settle_lost(s, id);
       guard++)
    id = acl_search_plan(s); /* judged on what it has: the plan moves on */
  if (id < 0) {
    /* the pick measured more first (its few samples are biased fast), then
     * picked again */
    int pick = acl_search_explored_pick(s);
    int more = acl_search_confirm(s, pick);
    if (more < 0) {
      acl_search_converge(s, acl_search_pick_proven(s, pick) ? pick : ACL_SEARCH_CAND_NCCL);
      return -1;
    }
    double cost = acl_search_confirm_cost(s, more, (uint32_t)s->params.samples_per_cand);
    if (cost > acl_search_budget_left(s))
      return acl_search_wait_block(s, cost, ACL_SEARCH_CAND_NCCL, ACL_WAIT_FOR_CONFIRM, out, len);
    return acl_search_hand_out(s, more, out, len);
  }
  if (s->cands[id].planned > 0)
    return block_or_ahead(s, id, out, len);
  /* the communicator's first events, owed with it, its neighbours may lend
   * for (its baseline measured by CUPTI's windows alone); the candidate
   * itself its own budget pays */
  double cost = acl_search_step_cost(s, id);
  if (!acl_search_afford(s, cost, acl_search_first_events_due(s)))
    /* NCCL's own choice waits for the budget: unvalidated, a candidate
     * ahead on a few samples may well be slower. */
    return acl_search_wait_block(s, cost, ACL_SEARCH_CAND_NCCL, ACL_WAIT_FOR_CANDIDATE, out, len);
  return block_or_ahead(s, id, out, len);
}

/* validating, refining: the decision interleaved with a challenger (NCCL's
 * choice, or a neighbour of the proven decision). */
static int validate_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  if (acl_search_val_lost(s)) {
    /* a proven decision loses only its challenger; one whose own samples
     * arrived when only NCCL's were lost is kept on them */
    if (acl_sm_base(s) == ACL_PHASE_REFINING || acl_search_val_unpaired_keep(s))
      acl_search_next_challenger(s);
    else
      acl_search_val_abandon(s); /* samples are not arriving: NCCL's choice is the safe one */
    if (!acl_sm_validating(acl_sm_base(s)))
      return -1;
  }
  /* Validation samples every call and runs a challenger: it draws on the
   * exploration budget, and pauses while the budget is spent. A decision
   * just explored and not yet proven against NCCL's own choice does not run
   * meanwhile (it may be slower): NCCL's does. A proven one being refined,
   * or a table's (measured before: warm start), runs. */
  bool unproven = acl_sm_base(s) == ACL_PHASE_VALIDATING && !s->from_table;
  if (acl_search_budget_left(s) < 0.0) {
    uint64_t before = s->calls_planned;
    uint32_t at = (uint32_t)acl_search_call_index(s);
    int id = acl_search_wait_block(s, 0.0, unproven ? ACL_SEARCH_CAND_NCCL : s->current,
                                   ACL_WAIT_FOR_VALIDATION, out, len);
    uint32_t n = (uint32_t)(s->calls_planned - before);
    s->val.paused += n;
    if (s->val.pause_to != at || s->val.pause_from == s->val.pause_to)
      s->val.pause_from = at; /* else it goes on the last one */
    s->val.pause_to = at + n;
    return id;
  }
  return acl_search_val_block(s, out, len);
}

/* converged: the decision, in long blocks. */
static int converged_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  s->calls_planned += ACL_SEARCH_CONVERGED_BLOCK;
  if (out)
    *out = s->cands[s->current].cand;
  if (len)
    *len = ACL_SEARCH_CONVERGED_BLOCK;
  return s->current;
}

/* disabled (and any state without a handler): NCCL's own choice. */
static int off_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  if (out)
    *out = s->cands[0].cand;
  if (len)
    *len = ACL_SEARCH_CONVERGED_BLOCK;
  return ACL_SEARCH_CAND_NCCL;
}

/* A sample while measuring: towards a verdict on its candidate. */
static void measuring_sample(acl_search_t *s, int id, double seconds, uint64_t call)
{
  (void)seconds; /* already in the candidate's ring */
  (void)call;
  acl_search_measured_sample(s, id);
}

/* A sample while a decision is applied: drift, validation. */
static void decided_sample(acl_search_t *s, int id, double seconds, uint64_t call)
{
  acl_search_converged_sample(s, id, seconds, call);
}

/* Sampling of a converged decision: about one call per
 * ACL_SEARCH_SAMPLE_PERIOD_S of collective time, enough to see drift. */
#define SM_SHIFT_PERIODIC 0xff

typedef struct sm_state {
  /* The next block: its cand id, or -1 when the handler changed the state
   * instead (the new state's handler hands the block out). */
  int (*next)(acl_search_t *s, acl_candidate_t *out, uint32_t *len);
  /* A sample of cand id, already kept in its ring. */
  void (*sample)(acl_search_t *s, int id, double seconds, uint64_t call);
  uint8_t shift; /* its blocks' sampling (acl_search_sample_shift) */
  bool hints;    /* what NCCL ran still moves the descent's origin */
} sm_state_t;

/* The waiting states have no handlers: the search never decides in them. */
static const sm_state_t sm_states[ACL_PHASE_COUNT] = {
    [ACL_PHASE_WARMUP] = {warmup_next, measuring_sample, ACL_SEARCH_SAMPLE_NEVER, true},
    [ACL_PHASE_BASELINE] = {baseline_next, measuring_sample, 0, true},
    [ACL_PHASE_EXPLORING] = {explore_next, measuring_sample, 0, false},
    [ACL_PHASE_RETUNING] = {explore_next, measuring_sample, 0, false},
    [ACL_PHASE_VALIDATING] = {validate_next, decided_sample, 0, false},
    [ACL_PHASE_REFINING] = {validate_next, decided_sample, 0, false},
    [ACL_PHASE_CONVERGED] = {converged_next, decided_sample, SM_SHIFT_PERIODIC, false},
    [ACL_PHASE_DISABLED] = {off_next, measuring_sample, ACL_SEARCH_SAMPLE_NEVER, false},
    [ACL_PHASE_WAIT_BUDGET] = {.shift = ACL_SEARCH_SAMPLE_NEVER},
    /* one call of the 16-call block */
    [ACL_PHASE_WAIT_SAMPLES] = {.shift = ACL_SEARCH_PROBE_SHIFT},
    [ACL_PHASE_PAUSED] = {.shift = ACL_SEARCH_SAMPLE_NEVER},
};

static const sm_state_t *sm_state(int st)
{
  static const sm_state_t none = {off_next, NULL, 0, false};
  return (unsigned)st < ACL_PHASE_COUNT && sm_states[st].next ? &sm_states[st] : &none;
}

int acl_sm_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len)
{
  acl_sm_fire(s, EV_NEXT_BLOCK);
  /* warmup -> baseline -> exploring -> validating -> converged is the
   * longest chain of handlers that pass the block on */
  for (int hop = 0; hop < ACL_PHASE_COUNT; hop++) {
    int id = sm_state(acl_sm_base(s))->next(s, out, len);
    if (id >= 0)
      return id;
  }
  return off_next(s, out, len);
}

void acl_sm_sample(acl_search_t *s, int st, int id, double seconds, uint64_t call)
{
  const sm_state_t *h = sm_state(st);
  if (h->sample)
    h->sample(s, id, seconds, call);
}

bool acl_sm_hints(const acl_search_t *s) { return sm_state(acl_sm_base(s))->hints; }

uint8_t acl_search_sample_shift(const acl_search_t *s)
{
  int st = acl_sm_block(s);
  uint8_t shift = (unsigned)st < ACL_PHASE_COUNT ? sm_states[st].shift : 0;
  if (shift != SM_SHIFT_PERIODIC)
    return shift; /* measuring or validating: every call (0) */
  double t = s->drift.ref_seconds;
  shift = 0;
  while (t > 0.0 && shift < ACL_SEARCH_SAMPLE_MAX_SHIFT &&
         t * (double)(2u << shift) <= ACL_SEARCH_SAMPLE_PERIOD_S)
    shift++;
  return shift;
}
