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
