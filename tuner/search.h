/* The search for one workload: warm-up, measured NCCL baseline, subspaces by
 * (algorithm, protocol) with coordinate descent over resource axes, then a
 * converged decision that is re-tuned on sustained drift.
 *
 * Pure and deterministic (same samples -> same decisions). The whole state is
 * one flat, pointer-free struct so that the consensus layer can keep it in a
 * shared-memory segment that several processes step in turn.
 *
 * Protocol, driven by the caller (the consensus layer):
 *   acl_search_init()        once, with the first caller's cost table
 *   acl_search_restrict()    for every rank's valid mask seen during warm-up
 *   acl_search_next()        "what do the next *len calls run?" -> cand id
 *   acl_search_add_sample()  for each measured call, tagged with the cand id
 *                            it ran (samples may arrive late or not at all)
 */
#ifndef ACL_TUNER_SEARCH_H
#define ACL_TUNER_SEARCH_H

#include <stdint.h>

#include "core/types.h"

#define ACL_SEARCH_MAX_CANDS 96 /* candidates tracked per workload */
#define ACL_SEARCH_TRAJ 64      /* trajectory ring length */
#define ACL_SEARCH_MAX_SAMPLES 16 /* samples kept per candidate */
#define ACL_SEARCH_CAND_NCCL 0  /* cand id 0 is always NCCL's own choice */

typedef struct acl_search_params {
  int warmup_calls;     /* calls whose samples are dropped */
  int samples_per_cand; /* samples before a candidate is judged */
  int max_channels;     /* top of the channel axis (NCCL's ceiling), e.g. 32 */
  int nranks;           /* communicator size (for bus bandwidth) */
  double drift_ratio;   /* re-tune when bandwidth < ratio x converged ... */
  int drift_window;     /* ... over this many consecutive samples */
  double prune_ratio;   /* drop a subspace whose best is > ratio x slower */
} acl_search_params_t;

typedef struct acl_search_cand {
  acl_candidate_t cand;
  uint16_t nsamples;     /* kept (ring of ACL_SEARCH_MAX_SAMPLES) */
  uint16_t ntotal_lo;    /* total samples seen, low 16 bits */
  float seconds[ACL_SEARCH_MAX_SAMPLES];
  float overlap[ACL_SEARCH_MAX_SAMPLES];
  double robust_seconds; /* trimmed statistic, 0 = not judged yet */
} acl_search_cand_t;

/* Flat and pointer-free. Field layout is private to search.c; other modules
 * only use the functions below and sizeof(). */
typedef struct acl_search {
  acl_search_params_t params;
  acl_wkey_t key;
  uint8_t phase;            /* acl_phase_t */
  uint8_t pad0[3];
  uint32_t valid_mask;      /* ACL_AP_BIT(a, p): runnable on every rank */
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]; /* NCCL's prior, us */
  int8_t nccl_algo, nccl_proto;            /* NCCL's argmin of the cost table */
  uint16_t ncands;
  uint16_t current;         /* cand id under test / applied */
  uint16_t best;            /* best cand id so far */
  uint64_t calls_planned;   /* calls handed out by acl_search_next */
  uint64_t samples_seen;
  uint64_t calls_to_converge; /* 0 until converged */
  uint32_t steps;
  uint32_t traj_head;       /* next write index in traj */
  uint32_t traj_len;
  uint32_t retunes;
  double converged_seconds; /* robust time of the decision when converged */
  uint32_t drift_count;
  uint32_t state_words[64]; /* search-private scratch (axis positions etc.) */
  acl_search_cand_t cands[ACL_SEARCH_MAX_CANDS];
  acl_traj_point_t traj[ACL_SEARCH_TRAJ];
} acl_search_t;

/* What the endpoint shows for a workload. */
typedef struct acl_search_report {
  acl_phase_t phase;
  acl_candidate_t current, best, baseline;
  double baseline_seconds; /* 0 = not measured yet */
  double best_seconds;     /* 0 = none */
  double speedup;          /* baseline / best, 0 = unknown */
  double busbw;            /* bytes/s of the current candidate (last robust) */
  double overlap;          /* recent mean overlap 0..1, <0 unknown */
  uint32_t candidates_evaluated;
  uint64_t calls_to_converge;
  uint32_t retunes;
} acl_search_report_t;

void acl_search_params_default(acl_search_params_t *p);
void acl_search_init(acl_search_t *s, const acl_search_params_t *p, const acl_wkey_t *key,
                     const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);
/* Intersect the valid (algo, proto) set with one rank's cost table. */
void acl_search_restrict(acl_search_t *s, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);
/* Decide what the next calls run. Returns the cand id; *out is the candidate,
 * *len the number of calls this decision covers (>= 1). */
int acl_search_next(acl_search_t *s, acl_candidate_t *out, uint32_t *len);
void acl_search_add_sample(acl_search_t *s, int cand_id, double seconds, float overlap);
acl_phase_t acl_search_phase(const acl_search_t *s);
void acl_search_report(const acl_search_t *s, acl_search_report_t *r);
/* Copies the trajectory oldest-first; returns the number of points. */
int acl_search_trajectory(const acl_search_t *s, acl_traj_point_t *out, int max);

#endif
