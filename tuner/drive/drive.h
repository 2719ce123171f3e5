/* One workload played through rank consensus, as the plugin plays it: the
 * tuner tests, the tuner benchmark and the replay benchmark drive the search
 * with this, so that their figures describe the plugin's path (consensus's
 * warm-up span, slot aggregation over ranks, starvation back-off, and the
 * profiler-event gating that decides which calls give samples).
 *
 * Each simulated local rank has its own acl_cons_t on one private segment.
 * A step decides the next call on every rank (acl_cons_decide), then
 * advances over the following calls that share its block and carry no
 * profiler events (acl_cons_skip: exactly what deciding each of them would
 * return), so a long run of small collectives costs one step per sample.
 * The caller's world says what a call costs and measures a sampled one. */
#ifndef ACL_TUNER_DRIVE_H
#define ACL_TUNER_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/types.h"
#include "tuner/consensus/consensus.h"
#include "tuner/search/search.h"

typedef struct acl_drive acl_drive_t;

typedef struct acl_drive_params {
  int coll;
  uint64_t nbytes;
  int nranks;              /* local ranks of one host, 1..ACL_DRIVE_MAX_RANKS */
  const acl_config_t *cfg; /* the plugin's settings; NULL: the defaults */
  int chunk_axis;          /* tuner v6 with AUTOCCL_CHUNK on */
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]; /* NCCL's cost table, the same on every rank */
  int max_lag;  /* a call's samples arrive 0..max_lag-1 calls late, on every rank alike */
  /* ... on top of a fixed lag, in call order: a host this many calls ahead
   * of its GPU (one H200, NCCL's events: about 1,000 calls, the launch
   * queue). At most ACL_DRIVE_MAX_BUFFER. */
  int lag_calls;
  /* ... but only from this call on: before it the host keeps pace with its
   * GPU and samples come at once (one H100, 256 MiB AllReduce: its first
   * ~60 calls' samples came 1-9 ms late, the later ones 0.9 s, ~1,000
   * calls, as the host ran ahead). 0: from the first call. */
  uint32_t lag_from;
  double skew;  /* ranks that arrive early measure up to this share more */
  /* CUPTI hands a process its records a buffer at a time: each rank's
   * samples then reach consensus in batches of this many, rank r's first
   * batch after (1 - r / nranks) x buffer samples (0: each sample when due).
   * One H200, one process per rank: about 1,000. At most
   * ACL_DRIVE_MAX_BUFFER. */
  int buffer;
  /* CUPTI's windows (AUTOCCL_CUPTI_WINDOW) sample every call they cover,
   * whatever NCCL's event mask says: calls k with (k + window_phase) %
   * window_period < window_calls (0: no windows; NCCL's events alone). */
  uint32_t window_calls, window_period, window_phase;
  /* A window's samples come with CUPTI's flushes (every 2 ms), not behind
   * NCCL's launch queue: this many calls late instead of lag_calls (one
   * H100, one process per rank: ~10 ms against NCCL's events' ~54 ms).
   * 0: lag_calls, as NCCL's events. */
  int window_lag_calls;
  /* A window's samples are CUPTI's kernel durations: they read this much
   * longer than NCCL's KernelCh stamps (one H100, the fastest rank's, 256
   * KiB-4 MiB: 2.0-2.4 us) and say they are CUPTI's (acl_cons_obs_t.cupti).
   * 0: one clock. */
  double window_clock_s;
  bool per_call; /* decide every call, no skipping (proves skipping changes nothing) */
  uint64_t seed;
} acl_drive_params_t;

#define ACL_DRIVE_MAX_RANKS 8
#define ACL_DRIVE_MAX_BUFFER 65536

/* One step: `n` calls (>= 1) from `call` run the same decision; only the
 * first may be sampled (NCCL's events, or a CUPTI window). */
typedef struct acl_drive_step {
  uint64_t call;
  uint32_t n;
  bool events;      /* call `call` is sampled (NCCL's events or a window): measure it */
  acl_decision_t d; /* what every rank applies (rank 0's; they agree) */
} acl_drive_step_t;

/* What NCCL ran for a sampled call (its Coll event): algo/proto, -1 when
 * unknown, and channels, 0 when unknown. */
typedef struct acl_drive_ran {
  int algo, proto, nchannels;
} acl_drive_ran_t;

/* NULL with a message in err when the segment cannot be made. */
acl_drive_t *acl_drive_create(const acl_drive_params_t *p, char *err, size_t errlen);
void acl_drive_destroy(acl_drive_t *d); /* NULL ok */

/* Delivers the samples that are due, then decides the next call on every
 * rank and advances over at most max_calls calls. 0, or -1 with a message
 * in err when a rank gets no consistent decision (a failed collective). */
int acl_drive_next(acl_drive_t *d, uint64_t max_calls, acl_drive_step_t *out, char *err,
                   size_t errlen);
/* The measured time of the step's first call (the last rank to arrive
 * measures the collective alone; the others add their wait), fed on every
 * rank as the profiler feeds it. Only for a step with events. */
void acl_drive_sample(acl_drive_t *d, const acl_drive_step_t *st, double seconds, float overlap,
                      const acl_drive_ran_t *ran);
/* The search's report (leader host). -1 before the workload exists. */
int acl_drive_report(acl_drive_t *d, acl_search_report_t *r);
void acl_drive_stats(acl_drive_t *d, acl_cons_stats_t *st); /* rank 0's */

#endif
