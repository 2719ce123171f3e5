/* Private to tuner/search/. Calls go down this list only:
 *   search.c          entry points: settings, init, hints, next, samples
 *   search_sm.c       the state machine: states, events, the one transition,
 *                     and each state's handler (its next block, its samples)
 *   search_conv.c     the decision, background validation and refinement,
 *                     drift and re-tuning, warm start, reporting
 *   search_explore.c  exploration: the descent's plan, blocks, verdicts
 *   search_place.c    validation's pairing by place in the step
 *   search_budget.c   the exploration budget: what is charged, waiting
 *   search_grid.c     the candidate grid and table, statistics, with
 *   search_chunk.c    the chunk-size axis (grid calls chunk, never back)
 * with one way back up: every file reads the state (acl_sm_base,
 * acl_sm_block, acl_sm_validating) and fires its events (acl_sm_fire), the
 * state machine's own part of search_sm.c, which calls nothing in the
 * search. */
#ifndef ACL_TUNER_SEARCH_INT_H
#define ACL_TUNER_SEARCH_INT_H

#include <stdbool.h>

#include "tuner/search/search.h"

#include "tuner/search/search_tunables.h"

#define ACL_SEARCH_NONE 0xff /* no subspace / no grid index */
/* Statistics work on a copy of at most this many samples (a candidate's
 * ring, the drift window, a clock's ring). */
#define ACL_SEARCH_STAT_MAX 64
_Static_assert(ACL_SEARCH_MAX_SAMPLES <= ACL_SEARCH_STAT_MAX &&
                   ACL_SEARCH_MAX_DRIFT_WINDOW <= ACL_SEARCH_STAT_MAX &&
                   ACL_SEARCH_CLOCK_N <= ACL_SEARCH_STAT_MAX,
               "statistics see every kept sample");

/* search_sm.c: the state machine. Its states are acl_phase_t (core/types.h,
 * with their names); acl_search_t.state changes only in acl_sm_fire(), by
 * the transition table there (docs/tuner.md draws it). */
typedef enum acl_sm_event {
  EV_WARMED = 0,  /* the warm-up calls are handed out */
  EV_SEED_TABLE,  /* a tuning table's decision is taken (warm start) */
  EV_SEED_NCCL,   /* a tuning table says NCCL's own choice */
  EV_MEASURED,    /* the baseline is judged */
  EV_NO_BUDGET,   /* the next block would overdraw the budget */
  EV_LATE,        /* the candidate's samples have not arrived */
  EV_NEXT_BLOCK,  /* a waiting block is over */
  EV_PROVISIONAL, /* exploration found a faster candidate */
  EV_CHALLENGE,   /* a challenger of the decision is picked */
  EV_SETTLED,     /* no challenger left: validation is over */
  EV_FALLBACK,    /* the decision cannot run on some rank: NCCL's choice */
  EV_DRIFT,       /* sustained drift, or the table's decision lost */
  EV_COUNT
} acl_sm_event_t;

/* The next block: the current state's handler (search_sm.c) decides, or
 * hands over to the state it moved to. */
int acl_sm_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len);
/* A sample of cand id (kept in its ring) that arrived in state st: the
 * state's handler takes it on. */
void acl_sm_sample(acl_search_t *s, int st, int id, double seconds, uint64_t call);
/* What NCCL ran still moves the descent's origin (warm-up, baseline). */
bool acl_sm_hints(const acl_search_t *s);
/* Apply ev. Waiting states return to the state they came from at the next
 * block; an event that arrives meanwhile (a late sample's verdict) changes
 * that state, not the wait. An event with no transition from the current
 * state turns the search off (NCCL's choice): a bug, never a crash. */
void acl_sm_fire(acl_search_t *s, acl_sm_event_t ev);
/* The search's state, the one every decision of the search reads: while a
 * block waits, the state the wait returns to. */
acl_phase_t acl_sm_base(const acl_search_t *s);
/* The state of the block last handed out, a waiting state included: what
 * the views show (acl_search_phase) and what sets the block's sampling
 * (acl_search_sample_shift); nothing else reads it. */
acl_phase_t acl_sm_block(const acl_search_t *s);
/* acl_search_init: the first state. */
void acl_sm_start(acl_search_t *s);
bool acl_sm_is_wait(int st);
/* The validation runs: a challenger (NCCL's choice or a neighbour) is
 * interleaved with the decision. */
bool acl_sm_validating(int st);

/* search_place.c: validation's pairing by place in the step. */
void acl_search_place_reset(acl_search_t *s);      /* a new decision */
void acl_search_place_challenger(acl_search_t *s); /* a new challenger */
/* A validation sample of the decision or the challenger; call = index + 1. */
void acl_search_place_sample(acl_search_t *s, bool challenger, double seconds, uint64_t call);
/* The paired gain (mean log(t_challenger / t_decision)) and its standard
 * error, where pairs exist and their error is well below unpaired_se. */
bool acl_search_place_estimate(const acl_search_t *s, double unpaired_se, double *gain,
                               double *se);

/* search_budget.c: the exploration budget (docs/tuner.md). */
double acl_search_budget_left(const acl_search_t *s);
/* What measuring the baseline needs from the budget. */
double acl_search_baseline_need(const acl_search_t *s);
/* Whether the budget pays `need`, borrowing from the offer what it lacks
 * (all or nothing, and nothing where that is more than cap). */
bool acl_search_afford(acl_search_t *s, double need, double cap);
/* The workload's first profiler events, while still due (0 once charged). */
double acl_search_first_events_due(const acl_search_t *s);
/* What the first look at candidate id is expected to cost. */
double acl_search_step_cost(const acl_search_t *s, int id);
/* What a look-ahead's candidate may cost (search_explore.c): all its
 * samples at once (a late stream's block), and below every channel count
 * measured in its subspace at their time x their count / its own (a
 * bandwidth-bound size slows with the channels lost: on one H200 3 and 1
 * channels took 5x and 14x 64 MiB's 213 us, and two such looks spent the
 * budget a decision needed). Pessimistic on purpose: it is speculation. */
double acl_search_spec_cost(const acl_search_t *s, int id);
/* What confirming the pick (id) with n more samples is expected to cost. */
double acl_search_confirm_cost(const acl_search_t *s, int id, uint32_t n);
/* Runs cand id unsampled for as many calls as the budget needs to grow by
 * `need` (a waiting state); why (ACL_WAIT_FOR_*) is what `need` pays for,
 * reported as the communicator's first events while those are still due. */
int acl_search_wait_block(acl_search_t *s, double need, int id, int why, acl_candidate_t *out,
                          uint32_t *len);
/* Charges a block of cand id with `sampled` calls carrying profiler events
 * (the workload's first events and a config's first call pay once more);
 * call it before the block counts as planned. */
void acl_search_charge_block(acl_search_t *s, int id, uint32_t sampled);
/* Charges a sample's time beyond the incumbent's (ref). */
void acl_search_charge_sample(acl_search_t *s, double seconds, double ref);

/* search_explore.c: exploration. */
/* A verdict on cand id from its samples (steps count the ones that cost calls). */
void acl_search_judge(acl_search_t *s, int id, bool costs_calls);
/* The next candidate that needs samples; -1 when exploration is over. */
int acl_search_plan(acl_search_t *s);
/* A late stream lost some of cand id's samples: judged on the ones it has
 * (enough for an early verdict) instead of run again; returns whether. */
bool acl_search_settle_lost(acl_search_t *s, int id);
/* The block that measures cand id (or waits for its late samples). */
int acl_search_hand_out(acl_search_t *s, int id, acl_candidate_t *out, uint32_t *len);
/* With a late stream, while cand id waits for its samples: a candidate the
 * plan tries next on one verdict on id or the other (two verdicts deep),
 * not measured yet, to measure meanwhile; -1 when none, or id's block is
 * not a wait. */
int acl_search_lookahead(acl_search_t *s, int id);
/* A sample while measuring (kept in the candidate's ring): the verdict on
 * cand id once it has enough, or an early one when it is clearly slower. */
void acl_search_measured_sample(acl_search_t *s, int id);
/* Exploration over: the candidate to take as the decision (0 = NCCL's). */
int acl_search_explored_pick(const acl_search_t *s);
/* Exploration over on pick: pick again when it still needs its confirming
 * samples (ACL_SEARCH_CONFIRM_MULT), else -1. */
int acl_search_confirm(const acl_search_t *s, int pick);
/* Whether the pick's lead over NCCL's choice, once confirmed, stands
 * ACL_SEARCH_PROV_Z standard errors beyond ACL_SEARCH_PROV_MARGIN. */
bool acl_search_pick_proven(const acl_search_t *s, int pick);
/* Re-tuning: every measurement of the exploration is stale. */
void acl_search_explore_reset(acl_search_t *s);

/* search_grid.c: the candidate grid and table, statistics. Calls
 * search_chunk.c only. */
int acl_search_axis_count(const acl_search_t *s, int axis);
int acl_search_axis_value(const acl_search_t *s, int axis, int idx);
/* Where a descent starts on an axis when nothing is known yet. */
int acl_search_axis_start(const acl_search_t *s, int axis);
bool acl_search_pair_valid(const acl_search_t *s, int a, int p);
/* The candidate at grid point idx of subspace sub (added when new); -1 when
 * the table is full. */
int acl_search_find_or_add(acl_search_t *s, int sub, const uint8_t idx[ACL_SEARCH_NUM_AXES]);
/* cand id runs what NCCL's own choice runs (cand 0, or NCCL's pair at the
 * hinted channel count, seeded from the baseline). */
bool acl_search_is_nccl(const acl_search_t *s, int id);
double acl_search_trimmed_mean(const float *src, int n);
double acl_search_median(const float *src, int n);
/* Robust spread of log times (1.4826 x the median absolute deviation from
 * each set's own median), pooled over two candidates' samples (the same
 * relative noise for both); 0 with fewer than 3 samples. */
double acl_search_log_sd(const float *a, int na, const float *b, int nb);
/* NCCL's choice's time as its own samples measure it (robust once judged,
 * else their median); 0 without a sample. */
double acl_search_measured_ref(const acl_search_t *s);
double acl_search_mean_overlap(const acl_search_cand_t *c);
double acl_search_busbw(const acl_search_t *s, double seconds);
bool acl_search_usable(const acl_search_t *s, int id);
/* Takes acl_search_obs_t.prior_scale (search_grid.c). */
void acl_search_prior_scale(acl_search_t *s, double scale);
/* The channels NCCL runs cand id with, as far as the clamps seen tell. */
int acl_search_runs_channels(const acl_search_t *s, int id);
int acl_search_best_judged(const acl_search_t *s, bool include_baseline);

/* search_chunk.c: the chunk-size axis (same level as search_grid.c). */
int acl_search_chunk_count(const acl_search_t *s);
int acl_search_chunk_value(const acl_search_t *s, int idx);  /* log2 of NCCL's own */
int acl_search_chunk_start(const acl_search_t *s);           /* index of NCCL's own */
int acl_search_chunk_index(const acl_search_t *s, int log2); /* nearest grid index */
/* Exclusive top of the chunk bracket for algo: Ring stops at NCCL's own. */
int acl_search_chunk_hi(const acl_search_t *s, int algo);
/* Whether a subspace whose channel descent ended on cand id explores chunk
 * sizes: judged and within ACL_SEARCH_CHUNK_NEAR of the best so far. */
bool acl_search_chunk_worth(const acl_search_t *s, int id);

/* search_conv.c: the decision, its validation and refinement, drift,
 * reporting. */
/* Adopt cand id as the decision (starts validation when id != 0). */
void acl_search_converge(acl_search_t *s, int id);
/* A decision applied: a sample (already stored in the candidate's ring)
 * for drift and validation. */
void acl_search_converged_sample(acl_search_t *s, int id, double seconds, uint64_t call);
/* The index of the next call (samples say theirs, acl_search_obs_t.call). */
static inline uint64_t acl_search_call_index(const acl_search_t *s)
{
  return s->calls_planned + s->calls_unplanned;
}
/* Validation: the challenger's samples are lost, not late
 * (ACL_VAL_MAX_BLOCKS). */
bool acl_search_val_lost(const acl_search_t *s);
/* The next background challenger, or the end of validation. */
void acl_search_next_challenger(acl_search_t *s);
/* Validation lost NCCL's samples only: whether the decision's own beat
 * NCCL's earlier ones by ACL_VAL_UNPAIRED_MARGIN (the speedup set if so). */
bool acl_search_val_unpaired_keep(acl_search_t *s);
/* Validation given up, its samples not arriving: NCCL's choice, settled. */
void acl_search_val_abandon(acl_search_t *s);
/* Validation's next block: the decision's run or the challenger's. */
int acl_search_val_block(acl_search_t *s, acl_candidate_t *out, uint32_t *len);

#endif
