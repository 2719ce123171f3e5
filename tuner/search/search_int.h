/* Private to tuner/search/. Calls go down this list only:
 *   search.c          entry points: settings, init, hints, next, samples
 *   search_conv.c     the decision, background validation and refinement,
 *                     drift and re-tuning, warm start, reporting
 *   search_explore.c  exploration: the descent's plan, blocks, verdicts
 *   search_budget.c   the exploration budget: what is charged, waiting
 *   search_sm.c       the state machine: states, events, the one transition
 *   search_grid.c     the candidate grid and table, statistics */
#ifndef ACL_TUNER_SEARCH_INT_H
#define ACL_TUNER_SEARCH_INT_H

#include <stdbool.h>

#include "tuner/search/search.h"

/* Tuning constants (documented in docs/tuner.md). */
#define ACL_SEARCH_BETTER_EPS 0.02   /* a move must beat the incumbent by 2% */
#define ACL_SEARCH_PROV_MARGIN 0.01  /* provisional decision: >1% better than cand 0 */
#define ACL_SEARCH_EARLY_N 3         /* samples before an early verdict */
#define ACL_SEARCH_EARLY_REJECT 1.15 /* median > 1.15x best so far: judged early */
#define ACL_SEARCH_EARLY2_N 2        /* first look at a candidate: 2 samples ... */
#define ACL_SEARCH_EARLY2_REJECT 1.40 /* ... both > 1.40x best so far: judged at once */
#define ACL_SEARCH_SKIP_PRIOR 3.0    /* subspaces NCCL predicts > 3x the min: skipped */
#define ACL_SEARCH_MAX_STEPS 40      /* candidates judged per (re)tuning */
#define ACL_SEARCH_MAX_EXPLORE_MULT 48 /* explore calls <= 48 x samples_per_cand */
#define ACL_SEARCH_CONVERGED_BLOCK 1024u
#define ACL_SEARCH_OVERLAP_SHIFT 0.3 /* sustained overlap change that re-tunes */
#define ACL_SEARCH_NONE 0xff

/* Exploration budget (docs/tuner.md, measured on 2xH200 in
 * docs/benchmarks.md; the share itself is params.budget, AUTOCCL_EXPLORE_BUDGET):
 * what one call with NCCL's profiler events costs the host, and the one-time
 * cost charged for a config's first call. */
#define ACL_SEARCH_EVENT_COST_S 5e-6
#define ACL_SEARCH_SETUP_COST_S 5e-4
/* NCCL's first calls of a size with profiler events cost milliseconds once
 * (2xH200: 5-11 ms, overhead.jsonl): charged before the baseline. */
#define ACL_SEARCH_FIRST_EVENTS_COST_S 6e-3
#define ACL_SEARCH_WAIT_MIN 16u
#define ACL_SEARCH_WAIT_MAX 8192u
#define ACL_SEARCH_SAMPLE_WAITS 64 /* wait blocks for late samples before re-running */
#define ACL_SEARCH_PROBE_SHIFT 4   /* a wait block (ACL_SEARCH_WAIT_MIN calls) samples one */
#define ACL_SEARCH_OUTLIER 4.0 /* a sample > 4x its candidate's median */
#define ACL_SEARCH_RETUNE_BACKOFF_MAX 6 /* drift evidence x 2^retunes, capped */

/* Background validation (search_conv.c). */
#define ACL_VAL_RUN 12u      /* decision calls between two challenger blocks */
#define ACL_VAL_BLOCK 4u     /* challenger (cand 0) calls per block */
#define ACL_VAL_MIN 8u       /* challenger samples before any verdict */
#define ACL_VAL_MAX 96u      /* challenger samples: no verdict by then -> revert */
#define ACL_VAL_Z_KEEP 3.5   /* keep: gain > 3 standard errors */
#define ACL_VAL_Z_LAST 2.5   /* keep at the last look (ACL_VAL_MAX samples) */
#define ACL_VAL_Z_DROP 2.0   /* revert early: gain < 0 by 2 standard errors */
#define ACL_VAL_STRAGGLER 1.35 /* samples > 1.35x the robust time are stragglers */
#define ACL_REF_MAX 48u      /* samples of a refinement challenger */
#define ACL_REF_Z 2.5        /* promote a challenger: faster by 2.5 standard errors */
#define ACL_REF_Z_BASE 4.0   /* ... over NCCL's own choice: 4 SE and 1% (many looks) */
#define ACL_REF_MAX_TRIES 6  /* refinement challengers per tuning */
#define ACL_REF_NEAR 1.10    /* other subspaces: only bests within 10% of the decision */

enum { SUB_PENDING = 0, SUB_ACTIVE, SUB_DONE, SUB_PRUNED, SUB_INVALID };

/* search_sm.c: the state machine. Its states are acl_phase_t (core/types.h,
 * with their names); acl_search_t.state changes only in acl_sm_fire(), by
 * the transition table there (docs/tuner.md draws it). */
typedef enum acl_sm_event {
  EV_WARMED = 0,   /* the warm-up calls are handed out */
  EV_SEED_TABLE,   /* a tuning table's decision is taken (warm start) */
  EV_SEED_NCCL,    /* a tuning table says NCCL's own choice */
  EV_MEASURED,     /* the baseline is judged */
  EV_NO_BUDGET,    /* the next block would overdraw the budget */
  EV_LATE,         /* the candidate's samples have not arrived */
  EV_NEXT_BLOCK,   /* a waiting block is over */
  EV_PROVISIONAL,  /* exploration found a faster candidate */
  EV_CHALLENGE,    /* a challenger of the decision is picked */
  EV_SETTLED,      /* no challenger left: validation is over */
  EV_FALLBACK,     /* the decision cannot run on some rank: NCCL's choice */
  EV_DRIFT,        /* sustained drift, or the table's decision lost */
  EV_COUNT
} acl_sm_event_t;

/* Apply ev. Waiting states return to the state they came from at the next
 * block; an event that arrives meanwhile (a late sample's verdict) changes
 * that state, not the wait. An event with no transition from the current
 * state turns the search off (NCCL's choice): a bug, never a crash. */
void acl_sm_fire(acl_search_t *s, acl_sm_event_t ev);
/* The state the search is in when no block is waiting. */
acl_phase_t acl_sm_base(const acl_search_t *s);
bool acl_sm_is_wait(int st);
/* The validation runs: a challenger (NCCL's choice or a neighbour) is
 * interleaved with the decision. */
bool acl_sm_validating(int st);

/* search_budget.c: the exploration budget (docs/tuner.md). */
double acl_search_budget_left(const acl_search_t *s);
/* What measuring the baseline needs from the budget. */
double acl_search_baseline_need(const acl_search_t *s);
/* What the first look at candidate id is expected to cost. */
double acl_search_step_cost(const acl_search_t *s, int id);
/* Runs cand id unsampled for as many calls as the budget needs to grow by
 * `need` (a waiting state). */
int acl_search_wait_block(acl_search_t *s, double need, int id, acl_candidate_t *out,
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
/* The block that measures cand id (or waits for its late samples). */
int acl_search_hand_out(acl_search_t *s, int id, acl_candidate_t *out, uint32_t *len);
/* Exploration over: the candidate to take as the decision (0 = NCCL's). */
int acl_search_explored_pick(const acl_search_t *s);
/* Re-tuning: every measurement of the exploration is stale. */
void acl_search_explore_reset(acl_search_t *s);

/* search_grid.c: the candidate grid and table, statistics. Calls nothing
 * else in the search. */
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
double acl_search_mean_overlap(const acl_search_cand_t *c);
double acl_search_busbw(const acl_search_t *s, double seconds);
bool acl_search_usable(const acl_search_t *s, int id);
/* The workload's reference call time (the measured baseline, else NCCL's
 * prediction). */
double acl_search_ref_seconds(const acl_search_t *s);
/* The channels NCCL runs cand id with, as far as the clamps seen tell. */
int acl_search_runs_channels(const acl_search_t *s, int id);
int acl_search_best_judged(const acl_search_t *s, bool include_baseline);

/* search_conv.c: the decision, its validation and refinement, drift,
 * reporting. Uses search_grid.c only. */
/* Adopt cand id as the decision (starts validation when id != 0). */
void acl_search_converge(acl_search_t *s, int id);
/* Converged phase: a sample (already stored in the candidate's ring). */
void acl_search_converged_sample(acl_search_t *s, int id, double seconds, float overlap);
/* Converged phase: the next block (decision, or a challenger block). */
int acl_search_next_converged(acl_search_t *s, acl_candidate_t *out, uint32_t *len);

#endif
