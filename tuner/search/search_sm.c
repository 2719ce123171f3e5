/* The search's state machine (see search_int.h and docs/tuner.md): one state
 * enum, one event enum, one transition table, one transition function. Every
 * change of acl_search_t.state goes through acl_sm_fire().
 *
 * Waiting states (waiting for the budget, waiting for late samples, a paused
 * validation) last one block: the next block returns to the state they came
 * from (EV_NEXT_BLOCK), where the search decides afresh. An event that
 * arrives during a wait (a late sample's verdict, drift) changes the state it
 * returns to. */
#include "tuner/search/search_int.h"

typedef struct sm_edge {
  uint8_t from, ev, to;
} sm_edge_t;

/* The transition table. EV_NEXT_BLOCK out of a waiting state is not listed:
 * it returns to the state the wait came from. */
static const sm_edge_t sm_edges[] = {
    {SM_WARMUP, EV_WARMED, SM_BASELINE},
    {SM_WARMUP, EV_SEED_TABLE, SM_VALIDATING},
    {SM_WARMUP, EV_SEED_NCCL, SM_CONVERGED},
    {SM_BASELINE, EV_MEASURED, SM_EXPLORING},
    {SM_BASELINE, EV_NO_BUDGET, SM_WAIT_BUDGET},
    {SM_BASELINE, EV_LATE, SM_WAIT_SAMPLES},
    {SM_EXPLORING, EV_NO_BUDGET, SM_WAIT_BUDGET},
    {SM_EXPLORING, EV_LATE, SM_WAIT_SAMPLES},
    {SM_EXPLORING, EV_PROVISIONAL, SM_VALIDATING},
    {SM_EXPLORING, EV_CHALLENGE, SM_REFINING},
    {SM_EXPLORING, EV_SETTLED, SM_CONVERGED},
    {SM_RETUNING, EV_NO_BUDGET, SM_WAIT_BUDGET},
    {SM_RETUNING, EV_LATE, SM_WAIT_SAMPLES},
    {SM_RETUNING, EV_PROVISIONAL, SM_VALIDATING},
    {SM_RETUNING, EV_CHALLENGE, SM_REFINING},
    {SM_RETUNING, EV_SETTLED, SM_CONVERGED},
    {SM_VALIDATING, EV_NO_BUDGET, SM_PAUSED},
    {SM_VALIDATING, EV_CHALLENGE, SM_REFINING},
    {SM_VALIDATING, EV_SETTLED, SM_CONVERGED},
    {SM_VALIDATING, EV_FALLBACK, SM_CONVERGED},
    {SM_VALIDATING, EV_DRIFT, SM_RETUNING},
    {SM_REFINING, EV_NO_BUDGET, SM_PAUSED},
    {SM_REFINING, EV_CHALLENGE, SM_REFINING},
    {SM_REFINING, EV_SETTLED, SM_CONVERGED},
    {SM_REFINING, EV_FALLBACK, SM_CONVERGED},
    {SM_REFINING, EV_DRIFT, SM_RETUNING},
    {SM_CONVERGED, EV_FALLBACK, SM_CONVERGED},
    {SM_CONVERGED, EV_DRIFT, SM_RETUNING},
};
#define SM_NEDGES ((int)(sizeof sm_edges / sizeof sm_edges[0]))

bool acl_sm_is_wait(int st)
{
  return st == SM_WAIT_BUDGET || st == SM_WAIT_SAMPLES || st == SM_PAUSED;
}

bool acl_sm_decided(int st)
{
  return st == SM_CONVERGED || st == SM_VALIDATING || st == SM_REFINING || st == SM_PAUSED;
}

bool acl_sm_validating(int st) { return st == SM_VALIDATING || st == SM_REFINING; }

acl_sm_state_t acl_sm_base(const acl_search_t *s)
{
  return (acl_sm_state_t)(acl_sm_is_wait(s->state) ? s->resume : s->state);
}

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
    s->state = SM_OFF; /* not in the table: a bug; NCCL's choice is safe */
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

acl_phase_t acl_sm_phase(const acl_search_t *s)
{
  switch (acl_sm_base(s)) {
  case SM_WARMUP: return ACL_PHASE_WARMUP;
  case SM_BASELINE: return ACL_PHASE_BASELINE;
  case SM_EXPLORING: return ACL_PHASE_EXPLORING;
  case SM_RETUNING: return ACL_PHASE_RETUNING;
  case SM_CONVERGED:
  case SM_VALIDATING:
  case SM_REFINING: return ACL_PHASE_CONVERGED;
  default: return ACL_PHASE_DISABLED;
  }
}
