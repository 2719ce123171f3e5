/* The search for one workload: warm-up, measured NCCL baseline, subspaces by
 * (algorithm, protocol) with coordinate descent over resource axes, then a
 * converged decision that is re-tuned on sustained drift.
 *
 * Pure and deterministic (same samples -> same decisions). The whole state is
 * one pointer-free struct so that the consensus layer can keep it in a
 * shared-memory segment that several processes step in turn.
 *
 * Protocol, driven by the caller (the consensus layer):
 *   acl_search_init()        once, with the first caller's cost table
 *   acl_search_restrict()    for every rank's valid mask seen during warm-up
 *   acl_search_next()        "what do the next *len calls run?" -> cand id
 *   acl_search_observe()     for each measured call, tagged with the cand id
 *                            it ran (samples may arrive late or not at all),
 *                            and what NCCL ran for it (profiler Coll events)
 *
 * Once converged, a non-default decision is validated in the background:
 * NCCL's own choice (cand 0) still runs in short blocks interleaved with the
 * decision until their difference is significant; the decision reverts to
 * cand 0 when it is not confirmed. Then a few neighbours of the decision are
 * challenged the same way and promoted when significantly faster. */
#ifndef ACL_TUNER_SEARCH_H
#define ACL_TUNER_SEARCH_H

#include <stdint.h>

#include "core/config.h"
#include "core/types.h"

#define ACL_SEARCH_MAX_CANDS 96                       /* candidates tracked per workload */
#define ACL_SEARCH_TRAJ 64                            /* trajectory ring length */
#define ACL_SEARCH_MAX_SAMPLES ACL_CONFIG_SAMPLES_MAX /* samples kept per candidate */
#define ACL_SEARCH_CAND_NCCL                                                                       \
  0                                    /* cand id 0 is always NCCL's own choice (in ceiling
                                 * mode capped at the stock channel count) */
#define ACL_SEARCH_MAX_CHANNELS 64     /* highest max_channels */
#define ACL_SEARCH_MAX_DRIFT_WINDOW 64 /* highest drift_window (the ring's size) */
/* Known overlaps come in CUPTI's windows (2 % of the time), and one reading
 * moves with the ranks' skew and with the call's place in the step (FSDP's
 * per-layer AllGathers: 0 to 1 within one window), one window's mean with
 * the step it caught (0.21 to 0.80 for FSDP's 96 MiB AllGather on one
 * H100, 16 readings each). The overlap drift rule compares a reference
 * with the mean of the latest 64 readings; the reference is 16 readings
 * where the decision's own samples have overlaps known (completed by its
 * first readings), else its first 48 readings (three such windows). On one
 * GPU, means of 8 against 8 moved by more than 0.3 46 times over four
 * PyTorch runs' readings; a reference of one window against the latest 32
 * readings re-tuned FSDP's AllGather twice in a run, the same decision
 * back both times. */
#define ACL_SEARCH_OVERLAP_REF_READINGS 48
#define ACL_SEARCH_OVERLAP_READINGS 64

/* The search's settings: part of the settings every rank of a communicator
 * must agree on, hashed byte for byte by the consensus layer, so the layout
 * is fixed and has no implicit padding. */
typedef struct acl_search_params {
  double drift_ratio;       /* re-tune when bandwidth < ratio x converged ... */
  double prune_ratio;       /* drop a subspace whose best is > ratio x slower */
  double budget;            /* share of the workload's time so far that exploring
                             * and validating may cost (docs/tuner.md); tests of
                             * the descent alone lift it (1e9) */
  int32_t drift_window;     /* ... over this many consecutive samples */
  int32_t warmup_calls;     /* calls whose samples are dropped (AUTOCCL_WARMUP) */
  int32_t samples_per_cand; /* samples before a candidate is judged (AUTOCCL_SAMPLES) */
  int32_t max_channels;     /* top of the channel axis (NCCL's ceiling), e.g. 32 */
  int32_t nranks;           /* communicator size (for bus bandwidth) */
  int32_t stock_channels;   /* ceiling mode (AUTOCCL_STOCK_CHANNELS): the channels NCCL
                             * builds as it ships, below max_channels; cand 0 runs
                             * NCCL's pair capped there. 0 = cand 0 is NCCL's own */
  int32_t chunk_axis;       /* 1: chunk size is an axis (tuner v6 and AUTOCCL_CHUNK
                             * on); 0: held at NCCL's own (every older ABI) */
  int32_t events_per_comm;  /* 1: NCCL's first profiler events are paid once per
                             * communicator (tuner v6, NCCL 2.30); 0: once per
                             * workload (NCCL 2.28) */
} acl_search_params_t;
_Static_assert(sizeof(acl_search_params_t) == 56, "acl_search_params_t has no padding");

/* Resource axes of the coordinate descent: nChannels, then chunk size
 * (NCCL 2.30 tuner v6, params.chunk_axis; one point, NCCL's own, otherwise). */
#define ACL_SEARCH_AXIS_CHANNELS 0
#define ACL_SEARCH_AXIS_CHUNK 1
#define ACL_SEARCH_NUM_AXES 2
#define ACL_SEARCH_MAX_SUBS ACL_NUM_AP

typedef struct acl_search_cand {
  acl_candidate_t cand;
  uint16_t nsamples;  /* kept (ring of ACL_SEARCH_MAX_SAMPLES) */
  uint16_t ntotal_lo; /* total samples seen, low 16 bits */
  float seconds[ACL_SEARCH_MAX_SAMPLES];
  float overlap[ACL_SEARCH_MAX_SAMPLES];
  double robust_seconds; /* trimmed statistic, 0 = not judged yet */
  /* private */
  uint16_t planned;                      /* calls handed out in the current evaluation */
  uint16_t got;                          /* samples received in the current evaluation */
  uint8_t judged;                        /* 1 = robust_seconds is a verdict */
  uint8_t sub;                           /* subspace index, 0xff for the baseline */
  uint8_t axis_idx[ACL_SEARCH_NUM_AXES]; /* grid positions */
  uint8_t tried;                         /* 1 = already a decision or a background challenger */
  uint8_t set_up; /* its first call was charged (a re-tune keeps it: NCCL keeps the config) */
  int16_t ran_ch; /* channels NCCL ran it with (Coll events), 0 unknown */
  uint16_t waits; /* blocks waited for its pending samples */
  uint32_t handed_at; /* calls_planned (low 32 bits) after its latest measuring block, 0 none */
} acl_search_cand_t;

/* Where a subspace's descent is (search_explore.c). */
typedef enum acl_search_sub_state {
  ACL_SUB_PENDING = 0, /* not begun */
  ACL_SUB_ACTIVE,      /* being descended (acl_search_t.explore.cur_sub) */
  ACL_SUB_DONE,        /* every axis descended */
  ACL_SUB_PRUNED,      /* its first point, or NCCL's prior, says it is far slower */
  ACL_SUB_INVALID      /* some rank cannot run its pair */
} acl_search_sub_state_t;

/* One (algorithm, protocol) subspace and its coordinate-descent state. */
typedef struct acl_search_sub {
  acl_search_sub_state_t state;
  int8_t algo, proto;
  uint8_t axis;                        /* axis being descended */
  uint8_t center[ACL_SEARCH_NUM_AXES]; /* grid index of the incumbent */
  int8_t lo, hi;                       /* exclusive bracket on the current axis */
  uint8_t step;                        /* current step in grid indices */
  uint8_t dir;                         /* 0 try up next, 1 try down next */
  uint8_t checked;                     /* first point passed the prune rule */
  uint8_t pad;
} acl_search_sub_t;

/* The state-only data: one struct per state (or states) that use it. */

/* Exploring and retuning (search_explore.c). */
typedef struct acl_search_explore {
  uint64_t calls;      /* calls handed out while exploring (cap) */
  uint32_t start_step; /* steps when this (re)tuning began */
  uint32_t wait_mark;  /* c0_sampled when a candidate began waiting for its
                        * late samples */
  uint32_t wait_call;  /* ... and the next call's index (low 32 bits) */
  uint8_t cur_sub;     /* index into subs of the active subspace, 0xff none */
  uint8_t pad[3];
} acl_search_explore_t;

/* Validating and refining: the decision interleaved with a challenger
 * (search_conv.c). */
typedef struct acl_search_val {
  uint32_t handed;     /* blocks handed out in this validation: even = the
                        * decision's, odd = the challenger's */
  uint32_t n[2];       /* samples kept: [0] decision, [1] challenger */
  uint32_t mark;       /* out when the current challenger began */
  uint32_t call0;      /* the call index (low 32 bits) it began at */
  uint32_t out, in;    /* this validation's sampled calls handed out, and
                        * samples received (any candidate: they arrive in
                        * call order) */
  uint16_t challenger; /* cand id interleaved with the decision */
  uint8_t refines;     /* background challengers tried after the baseline */
  uint8_t pad;
  uint32_t paused;     /* calls since call0 that waited for the budget (no
                        * validation block ran, no sample is owed) */
  uint32_t full_at;    /* the call index (low 32 bits, + 1) after the blocks
                        * that make a verdict; 0: not all handed out yet */
  uint32_t seen;       /* the latest call (low 32 bits, + 1) of a sample
                        * received from this validation's blocks; 0: none */
  uint32_t pause_from, pause_to; /* the latest pause's calls (low 32 bits,
                                  * + 1): (from, to]; consecutive ones join */
  uint32_t pad2;
  double sum[2], sq[2]; /* sums of log(seconds) and their squares */
} acl_search_val_t;

/* Validation's pairing by place in the step (search_place.c): the
 * decision's samples by call (a direct-mapped ring, tag = call index + 1),
 * the challenger's waiting for a period, the period found (0 none), and the
 * paired differences log(t_challenger / t_decision) at the same place. */
#define ACL_SEARCH_PLACE_RING 512
#define ACL_SEARCH_PLACE_PEND 192
typedef struct acl_search_place {
  uint32_t call[ACL_SEARCH_PLACE_RING];
  float lx[ACL_SEARCH_PLACE_RING]; /* log(seconds) */
  uint32_t pend_call[ACL_SEARCH_PLACE_PEND];
  float pend_lx[ACL_SEARCH_PLACE_PEND];
  uint32_t npend;
  uint32_t since; /* decision samples since the period was last looked for */
  uint16_t period;
  uint8_t looks; /* times it was looked for */
  uint8_t pad;
  uint32_t pn;
  double psum, psq;
} acl_search_place_t;

/* Validation's result, kept while the decision stands (reporting): the
 * decision against NCCL's own choice measured interleaved (same
 * interference regime), log(t_nccl / t_decision) and its standard error,
 * from n samples of NCCL's choice; n 0 = no such measurement. */
typedef struct acl_search_pair {
  uint32_t n;
  uint32_t unpaired; /* 1: against NCCL's earlier samples (acl_search_val_unpaired_keep) */
  double log, se;
} acl_search_pair_t;

/* A decision applied (validating, refining, converged): the drift watch
 * (search_conv.c). */
typedef struct acl_search_drift {
  double ref_seconds; /* robust time of the decision when taken, 0 unknown */
  double ref_overlap; /* mean of ov_ref known overlaps, <0 until then */
  uint32_t count;     /* samples of the decision since it was taken */
  uint32_t head;
  uint32_t run;     /* consecutive samples past the drift rule */
  uint16_t ov_n;    /* known overlaps in ov (saturates at its size) */
  uint16_t ov_head;
  uint16_t ov_ref;  /* readings the reference takes (drift_overlap_reset) */
  uint16_t reserved;
  float ov[ACL_SEARCH_OVERLAP_READINGS]; /* its latest known overlaps (ring) */
  float win[ACL_SEARCH_MAX_DRIFT_WINDOW]; /* recent samples of the decision (ring) */
  /* its first drift_window samples once taken (copied when count reaches
   * drift_window): the "slower" rule's reference, sampled as the window is
   * (search_conv.c) */
  float base[ACL_SEARCH_MAX_DRIFT_WINDOW];
} acl_search_drift_t;

/* One candidate on both clocks (acl_search_obs_t.cupti): the incumbent's
 * latest durations from each, and the offset between them (search.c). */
#define ACL_SEARCH_CLOCK_N 64
typedef struct acl_search_clock {
  float cupti[ACL_SEARCH_CLOCK_N]; /* CUPTI's kernel durations (ring) */
  float kch[ACL_SEARCH_CLOCK_N];   /* NCCL's KernelCh durations (ring) */
  uint16_t ncupti, nkch;           /* kept in each (saturate at ACL_SEARCH_CLOCK_N) */
  uint16_t hcupti, hkch;           /* next slot of each */
  float offset_s;                  /* CUPTI minus KernelCh, taken off CUPTI's; 0 none */
  uint16_t cand;                   /* whose durations the rings hold */
  uint8_t kch_any;                 /* some sample came from NCCL's KernelCh events */
  uint8_t last_cupti;              /* the latest sample's clock (1: CUPTI) */
} acl_search_clock_t;

/* Pointer-free. Field layout is private to tuner/search/; other modules
 * only use the functions below and sizeof(). */
typedef struct acl_search {
  acl_search_params_t params;
  acl_wkey_t key;
  uint8_t state;  /* the state machine's state (search_sm.c) */
  uint8_t resume; /* in a waiting state: the state it returns to */
  uint8_t nsubs;
  uint8_t from_table;                      /* the decision is a tuning table's (acl_search_seed),
                                            * not measured again since: provenance, not state */
  uint32_t valid_mask;                     /* ACL_AP_BIT(a, p): runnable on every rank */
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]; /* NCCL's prior, us */
  int8_t nccl_algo, nccl_proto;            /* NCCL's argmin of the cost table */
  uint16_t ncands;
  uint16_t current;       /* cand id under test / applied */
  uint16_t best;          /* best cand id so far */
  uint64_t calls_planned; /* calls handed out by acl_search_next */
  uint64_t calls_unplanned; /* calls the caller ran beyond them (acl_search_obs_t.next_call) */
  uint64_t samples_seen;
  uint64_t calls_to_converge; /* 0 until converged */
  uint64_t tune_start_call;   /* calls_planned when this (re)tuning began */
  uint64_t decision_call;     /* calls since tuning began when the decision was taken */
  uint64_t verdict_call;      /* ... when validation ended, 0 = not yet */
  uint32_t steps;             /* candidates judged (exploration steps) */
  uint32_t traj_head;         /* next write index in traj */
  uint32_t traj_len;
  uint32_t retunes;
  int16_t hint_ch;  /* channels NCCL's choice ran, 0 = unknown */
  uint16_t seed_id; /* cand id of the table's decision (from_table) */
  /* Exploration budget (search_budget.c, docs/tuner.md): the extra time
   * spent on candidates other than the incumbent, on profiler events and on
   * first uses of a config, never above params.budget x the time the
   * workload has cost so far; while it would be, the incumbent runs
   * unsampled (a waiting state). */
  uint8_t events_paid; /* the workload's first profiler events were charged */
  uint8_t prior_waits; /* waits planned on the cost table alone: each may be
                        * twice as long as the last (none starves a ring) */
  uint8_t late;        /* samples come far behind the calls (CUPTI on one
                        * H200: ~1,000): a sample came after its candidate
                        * waited two blocks for it, or lag_calls says so; a
                        * first look measures them all */
  uint8_t calls_known;  /* samples say their call (acl_search_obs_t.call) */
  uint8_t retune_cause; /* ACL_RETUNE_* of the latest re-tune (0: none) */
  uint8_t budget_wait_for; /* ACL_WAIT_FOR_* of the latest budget wait */
  uint32_t seen_call;  /* the latest call a sample said (low 32 bits) */
  uint16_t lag_calls;  /* how far behind the calls samples arrive
                        * (acl_search_obs_t.behind: the largest seen,
                        * decaying; capped at ACL_SEARCH_LAG_MAX) */
  float prior_scale;   /* the cost table's error another workload of the
                        * communicator measured (acl_search_obs_t.prior_scale);
                        * 0: none */
  double spent_s;
  /* Budget moved between workloads of one communicator
   * (acl_search_obs_t.loan_offer, .lent): > 0 borrowed for a baseline,
   * < 0 lent. It moves the budget, not the cost: spent_s stays what this
   * workload spent. */
  double loan_s;
  double loan_offer_s; /* what the next block may borrow (0: none) */
  double loan_rate_s;  /* what that offer grows by per call of this workload */
  double loan_new_s;   /* what the latest acl_search_next borrowed */
  double ref_kept; /* NCCL's time as a re-tune found it (0: none): the time
                    * so far until the baseline is measured again */
  double baseline_kept; /* the measured baseline the latest re-tune dropped
                         * (0: none; never the cost table's) */
  uint32_t outliers;   /* samples > ACL_SEARCH_OUTLIER x their candidate's median */
  uint32_t merged;     /* candidates judged by a twin, no calls spent */
  uint32_t c0_sampled; /* sampled calls of NCCL's choice handed out this tuning */
  uint32_t budget_wait; /* calls the latest budget wait needed, unclamped (0: none) */
  acl_search_explore_t explore;
  acl_search_val_t val;
  acl_search_place_t place;
  acl_search_pair_t pair;
  acl_search_drift_t drift;
  acl_search_clock_t clock;
  acl_search_sub_t subs[ACL_SEARCH_MAX_SUBS];
  acl_search_cand_t cands[ACL_SEARCH_MAX_CANDS];
  acl_traj_point_t traj[ACL_SEARCH_TRAJ];
} acl_search_t;

/* What the endpoint shows for a workload. */
typedef struct acl_search_report {
  acl_phase_t phase;
  acl_candidate_t current, best, baseline;
  double baseline_seconds; /* 0 = not measured yet */
  /* while a re-tune measures NCCL's choice again: its time before (0: none),
   * for reports only (nothing is priced on it) */
  double baseline_kept_seconds;
  double best_seconds;     /* 0 = none */
  double speedup;          /* baseline / best, 0 = unknown */
  double busbw;            /* bytes/s of the current candidate (last robust) */
  double overlap;          /* recent mean overlap 0..1, <0 unknown */
  uint32_t candidates_evaluated;
  uint64_t calls_to_converge;
  uint32_t retunes;
  int retune_cause; /* ACL_RETUNE_* of the latest (0: none) */
  /* background validation (added; zero for searches that never converged) */
  uint8_t validating;               /* 1 while cand 0 is still interleaved */
  uint64_t calls_to_decision;       /* calls until the current decision was taken */
  uint64_t calls_to_verdict;        /* calls until validation ended, 0 = open */
  double exploration_spent_seconds; /* charged to the exploration budget */
  double cost_seconds;              /* the workload's estimated time so far */
  uint32_t merged, outliers;
  uint8_t source;   /* ACL_SEARCH_SRC_*: where the decision came from */
  uint64_t samples; /* samples the search has used */
  /* speedup's interval (ACL_SEARCH_SPEEDUP_Z standard errors), 0 = none:
   * only when speedup comes from the decision and NCCL's own choice measured
   * interleaved (background validation), or is exactly 1 (the decision is
   * NCCL's own choice). */
  double speedup_lo, speedup_hi;
  uint8_t speedup_paired; /* 1 = speedup measured interleaved (or exactly 1) */
  /* Waiting for the exploration budget: about how many more calls the
   * workload needs before its next measurement is paid for (0: not waiting). */
  uint64_t budget_wait_calls;
  int budget_wait_for; /* ACL_WAIT_FOR_*: what that wait pays for (0: not waiting) */
  /* CUPTI's clock minus NCCL's KernelCh stamps, taken off CUPTI's samples
   * (acl_search_obs_t.cupti); 0: none (one clock, or not learned yet). */
  double clock_offset_seconds;
} acl_search_report_t;
/* The interval's width in standard errors: the bar at which validation
 * reverts a decision (ACL_VAL_Z_DROP; an explored one at 1.5 SE already),
 * so a converged decision's interval
 * never lies wholly below 1. */
#define ACL_SEARCH_SPEEDUP_Z 2.0

/* Where a workload's decision comes from (acl_search_report_t.source). */
#define ACL_SEARCH_SRC_NCCL 0                /* NCCL's own choice (also while exploring) */
#define ACL_SEARCH_SRC_EXPLORED 1            /* found by this run's exploration */
#define ACL_SEARCH_SRC_TABLE 2               /* a tuning table's (warm start), validated */
const char *acl_search_source_name(int src); /* "nccl", "explored", "table" */

/* The one place of the search's defaults (the AUTOCCL_* ones from
 * core/config.h). */
void acl_search_params_default(acl_search_params_t *p);
/* Defaults, then what the configuration sets, for a communicator of nranks. */
void acl_search_params_from_config(acl_search_params_t *p, const acl_config_t *cfg, int nranks);
/* The one validation: each value outside its limits is replaced (by the
 * nearest limit, or the default); returns how many were, the first one
 * described in err (may be NULL). acl_search_init applies it. */
int acl_search_params_fix(acl_search_params_t *p, char *err, size_t errlen);
void acl_search_init(acl_search_t *s, const acl_search_params_t *p, const acl_wkey_t *key,
                     const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);
/* Intersect the valid (algo, proto) set with one rank's cost table. */
void acl_search_restrict(acl_search_t *s, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);
/* Decide what the next calls run. Returns the cand id; *out is the candidate,
 * *len the number of calls this decision covers (>= 1). */
int acl_search_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len);
/* What one call of cand_id took and what NCCL ran for it: the search's one
 * way in (tests/tuner/check_entries.sh fails on another). Every field is
 * optional:
 * - seconds > 0: a measured sample (late, missing ones are fine) with its
 *   overlap (0..1, < 0 unknown);
 * - ran_nch > 0 for NCCL's own choice (cand 0): the channel count (and
 *   ran_algo/ran_proto, -1 unknown) it ran, from the profiler's Coll events.
 *   The channel descent starts there instead of mid-range, the baseline's
 *   samples stand for that point, and NCCL's own subspace is the pair it
 *   ran (NCCL does not always run the argmin of the table the tuner sees:
 *   2xH200, AllReduce 256 KiB, the minimum is Tree/LL, NCCL runs Ring/LL).
 *   Ignored once exploration has begun;
 * - ran_nch > 0 for another candidate: the channels NCCL ran it with. NCCL
 *   rounds a request down (what it built, what the protocol and size allow,
 *   its work split: on one H200 NCCL 2.30 ran 24 as 22 and 12 as 11, but 32
 *   as 32): asked a, ran m < a, every request between m and a runs m, so
 *   those grid points are the same candidate and are never explored again.
 *   Larger requests are not implied.
 * The facts go in before the sample. */
typedef struct acl_search_obs {
  int cand_id;
  double seconds;
  float overlap;
  int ran_algo, ran_proto; /* -1 unknown */
  int ran_nch;             /* 0 unknown */
  /* How many calls before the workload's latest block began this sample's
   * call was (0: within it, or unknown): the samples' lag behind the calls. */
  uint32_t behind;
  /* The sample's call index + 1 (0: unknown). Validation pairs only the
   * samples of calls it handed out: NCCL's choice is the usual challenger,
   * and its late samples from the waits before would pass for its share. */
  uint64_t call;
  /* > 0: the cost table's error a neighbour of the communicator measured
   * (acl_search_prior_error; consensus picks it). Until the workload has
   * its own samples of NCCL's choice, its time (what the budget grows by
   * per call) is the table's times this. On one H200 the table was 5x low
   * at 16-256 MiB, and a 64 MiB workload waited 3,600 calls for a budget
   * its real time paid in about 950. Clamped to [1/16, 16]. */
  double prior_scale;
  /* > 0: the index + 1 of the next call, told before acl_search_next by a
   * caller that runs calls the search did not plan (consensus: its warm-up
   * span, a starving block grown). Validation pairs samples by call index
   * (call above); counted from its planned calls alone, its indices fell
   * behind the samples' and it called its blocks' samples lost before the
   * first was due (one H200, 16-64 MiB: decisions 1.2-1.4x faster than
   * NCCL's choice given up for it). Without it, the calls run are the
   * calls planned. */
  uint64_t next_call;
  /* > 0: budget (seconds) the communicator's converged workloads can lend,
   * told before acl_search_next (consensus, under its lock). A workload
   * called once per step earns its budget slowly: on one H100 FSDP's
   * 250 MiB AllGather (315 calls, 0.5 ms each) earned 4.7 ms in its whole
   * run, less than its baseline's first profiler events (6 ms), and never
   * got a sample, while its communicator's converged workloads left most
   * of theirs unspent. Only the baseline borrows (measuring NCCL's own
   * choice costs events, never a slower config), and only the whole of
   * what it lacks (acl_search_loan_taken says how much); the offer lasts
   * for that one acl_search_next. */
  double loan_offer;
  /* > 0: the budget (seconds) the lenders behind loan_offer have earned
   * so far (their share of their time so far): over this workload's calls
   * so far, what the offer grows by per call of its own. A baseline owing
   * the communicator's first events waits for the pooled budget, not for
   * its own alone: DDP's two 250 MiB AllReduces on one H100 each read a
   * wait of 700-1,000 calls at step 93, and in the simulator's same job the
   * pool paid them at calls 107-138. */
  double loan_earned;
  /* > 0: budget (seconds) this workload lent another's baseline: its
   * budget shrinks by that much (the caller splits a loan over the
   * lenders by what each could lend). */
  double lent;
  /* 1: another workload of the communicator has had its first profiler
   * events charged (consensus tells it before acl_search_next). With
   * params.events_per_comm this workload's are then not due: on one H200
   * with NCCL 2.30.7 (PyTorch, two processes) the first call with NCCL's
   * kernel events held each process 25-37 ms, and a later size's first one
   * nothing beyond the calls' own spread (-1.3 to +2.3 ms); a 250 MiB
   * AllGather once per step waited 256 calls for budget its own events
   * did not need. */
  int events_nearby;
  /* 1: seconds is a CUPTI kernel duration (profiler/profiler.h,
   * ACL_PROF_SOURCE_CUPTI), 0: NCCL's KernelCh stamps or another clock.
   * CUPTI's run 1.7-2.9 us longer (one H100, Ring, 64 KiB-4 MiB), and its
   * windows sample NCCL's choice while it waits, the candidates mostly
   * between them: the search brings CUPTI's onto KernelCh's clock by the
   * offset its incumbent shows on both (acl_search_clock_t). */
  int cupti;
} acl_search_obs_t;
void acl_search_observe(acl_search_t *s, const acl_search_obs_t *o);
/* Warm start (search_conv.c): right after acl_search_init, the workload
 * takes cand (a tuning table's decision; algo ACL_ALGO_NCCL = NCCL's own) as
 * its converged decision from the first call, treated like a provisional
 * one: NCCL's own choice is interleaved in the background until the
 * difference is significant, and the decision reverts to it, then the
 * workload explores, when it is slower. Samples of the first warmup_calls
 * calls are dropped. Returns 0, or -1 when cand cannot run here (its pair is
 * not in the cost table): the search explores as without a table. */
int acl_search_seed(acl_search_t *s, const acl_candidate_t *cand);
/* The proven decision, what a call captured into a CUDA graph may freeze
 * for the rest of the job (docs/consensus.md): the decision once validated
 * against NCCL's own choice (converged, or refining a challenger, or paused
 * there), or a tuning table's under validation (measured by the run that
 * wrote the table, as static mode trusts it). Otherwise, and while
 * measuring or re-tuning, NCCL's own choice (cand id 0). Never an
 * exploratory candidate or a challenger. Returns the cand id, *out its
 * candidate. */
int acl_search_safe(const acl_search_t *s, acl_candidate_t *out);
/* Budget lending within a communicator (docs/tuner.md, "Exploration
 * budget"; acl_search_obs_t.loan_offer and .lent carry it in).
 * acl_search_lendable: what s can lend, its unspent budget once converged
 * (0 otherwise); with first_events (the borrower still owes the
 * communicator's first profiler events, params.events_per_comm), also
 * while it owes them itself. acl_search_wants_loan: its baseline has not
 * begun.
 * acl_search_lend_earned: while s could lend, the budget it earned so far
 * (params.budget x its time so far), what its lendable grows with; 0
 * otherwise.
 * acl_search_loan_taken: what the latest acl_search_next borrowed.
 * acl_search_time_so_far: the workload's time so far, calls x its time of
 * NCCL's choice (0 while unknown), what the budget is a share of. */
double acl_search_lendable(const acl_search_t *s, bool first_events);
double acl_search_lend_earned(const acl_search_t *s, bool first_events);
bool acl_search_wants_loan(const acl_search_t *s);
/* It still owes its communicator's first profiler events
 * (params.events_per_comm, none of its workloads charged yet): it lends
 * toward them whatever its phase, and its next step may borrow for them. */
bool acl_search_owes_first_events(const acl_search_t *s);
/* Its first profiler events were charged (acl_search_obs_t.events_nearby). */
bool acl_search_events_charged(const acl_search_t *s);
double acl_search_loan_taken(const acl_search_t *s);
double acl_search_time_so_far(const acl_search_t *s);
/* The cost table's error for this workload: its measured time of NCCL's
 * own choice over the table's (a few samples at least). false while it has
 * none, or the table has no time for that choice. */
bool acl_search_prior_error(const acl_search_t *s, double *ratio);
/* The workload's time of one call of NCCL's own choice: the measured
 * baseline, else its first samples, else the cost table's prediction scaled
 * by the error measured nearby; 0 when none is known. */
double acl_search_ref_seconds(const acl_search_t *s);
/* Its time still rests on the cost table (no sample of NCCL's choice). */
bool acl_search_on_prior(const acl_search_t *s);
/* The search's state (acl_phase_name gives its name). */
acl_phase_t acl_search_phase(const acl_search_t *s);
/* Transition i of the state machine (docs/tuner.md draws them): the state
 * it leaves, the event's name and the state it enters. Returns -1 past the
 * last. A waiting state (ACL_PHASE_WAIT_BUDGET, ACL_PHASE_WAIT_SAMPLES,
 * ACL_PHASE_PAUSED) returns at the next block to the state it came from. */
int acl_search_transition(int i, acl_phase_t *from, const char **event, acl_phase_t *to);
bool acl_search_phase_waits(acl_phase_t ph); /* one of those waiting states */
/* Which calls need profiler events (each costs NCCL several us of host
 * time): 1 call in 2^shift, ACL_SEARCH_SAMPLE_NEVER for none. Every call
 * while measuring or validating; once settled, about one call per
 * ACL_SEARCH_SAMPLE_PERIOD_S of collective time, enough to see drift. */
#define ACL_SEARCH_SAMPLE_NEVER 15
#define ACL_SEARCH_SAMPLE_MAX_SHIFT 12
#define ACL_SEARCH_SAMPLE_PERIOD_S 0.01
uint8_t acl_search_sample_shift(const acl_search_t *s);
/* A spread of k's over 64 bits (k + 1 times 2^64 / golden ratio): the
 * same on every rank, and successive k's far apart in every high bit. */
static inline uint64_t acl_search_golden(uint64_t k) { return (k + 1) * 0x9e3779b97f4a7c15ull; }
/* The sampling rule, the one place it is written: whether call `call`
 * carries profiler events under `shift` (the plugin sets NCCL's event mask
 * with it; tuner/drive plays it), and the first call after `call` that does
 * (UINT64_MAX for none). One call in each period of 2^shift calls, at an
 * offset that moves from period to period (the high bits of the period's
 * number times 2^64 / golden ratio, so every rank picks the same calls): a
 * job calls a workload a fixed number of times a step (DDP's buckets 8 or
 * 16, FSDP's per-layer AllGathers 16), and with call % 2^shift == 0 every
 * sample came from one place in the step, whose overlap with compute made
 * a decision read 3x slower than its samples of every place (on one H100,
 * DDP's buckets re-tuned on "slower" 2-3 times). */
static inline uint64_t acl_search_sample_offset(uint8_t shift, uint64_t period)
{
  return shift ? acl_search_golden(period) >> (64 - shift) : 0;
}
static inline bool acl_search_sampled(uint8_t shift, uint64_t call)
{
  return shift < ACL_SEARCH_SAMPLE_NEVER &&
         (call & ((1ull << shift) - 1)) == acl_search_sample_offset(shift, call >> shift);
}
static inline uint64_t acl_search_next_sampled(uint8_t shift, uint64_t call)
{
  if (shift >= ACL_SEARCH_SAMPLE_NEVER)
    return UINT64_MAX;
  uint64_t p = call >> shift, k = (p << shift) + acl_search_sample_offset(shift, p);
  return k > call ? k : ((p + 1) << shift) + acl_search_sample_offset(shift, p + 1);
}
void acl_search_report(const acl_search_t *s, acl_search_report_t *r);
/* Copies the trajectory oldest-first; returns the number of points. */
int acl_search_trajectory(const acl_search_t *s, acl_traj_point_t *out, int max);

#endif
