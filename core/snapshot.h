/* A process's observable state at one instant: what /api/v1/state, /metrics,
 * the dashboard and autoccl-top show. Filled by the plugin (or a test) and
 * rendered by core/render.h. Plain data; validity flags keep missing values
 * absent rather than zero. */
#ifndef ACL_CORE_SNAPSHOT_H
#define ACL_CORE_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/types.h"

#define ACL_SNAPSHOT_VERSION 1
#define ACL_SNAP_MAX_COMMS 64
#define ACL_SNAP_MAX_WORKLOADS 512 /* bounds metric label cardinality */
#define ACL_SNAP_TRAJ 64
/* Duration histogram upper bounds in seconds: 1e-6 * 4^i, i = 0..ACL_HIST_N-1,
 * then +Inf (1 us .. ~268 s). */
#define ACL_HIST_N 15

typedef struct acl_snap_comm {
  uint64_t id;
  char name[64]; /* NCCL commName, or hex id when unknown */
  int rank;      /* -1 when unknown (no profiler ABI) */
  int nranks;
  int nnodes;
  char role[16];                 /* "decider" (leader host), "follower", "off" */
  double consensus_wait_seconds; /* lock + relay waits, this process */
  uint64_t blocks_published;
  uint64_t lock_acquisitions;
  uint64_t samples_busy;      /* samples dropped: the consensus lock was held */
  uint64_t workloads_refused; /* workloads the full table left on NCCL's choice */
} acl_snap_comm_t;

typedef struct acl_snap_workload {
  int comm;      /* index into comms */
  int rank;      /* rank of this process in that communicator, -1 unknown */
  uint32_t widx; /* workload index within the communicator */
  acl_wkey_t key;
  acl_phase_t phase;
  acl_candidate_t current; /* under test / applied now */
  acl_candidate_t best;
  acl_candidate_t baseline; /* NCCL's own choice (as the cost table predicts) */
  bool has_best, has_baseline;
  double baseline_seconds; /* measured, robust; valid when has_baseline */
  double best_seconds;     /* valid when has_best */
  double speedup;          /* NCCL's time / the decision's; valid when has_speedup */
  bool has_speedup;
  /* speedup's interval, valid when has_speedup_ci: the decision and NCCL's
   * choice measured interleaved (docs/tuner.md), or exactly 1 for NCCL's own */
  double speedup_lo, speedup_hi;
  bool has_speedup_ci;
  double busbw; /* bytes/s, latest robust; valid when has_busbw */
  bool has_busbw;
  double overlap; /* 0..1; valid when has_overlap */
  bool has_overlap;
  /* Exposed communication (profiler/overlap.h acl_exposure): collective time
   * not overlapped by compute, estimated over all this process's calls from
   * the share measured on the calls with a known overlap. Valid when
   * has_exposed. */
  double collective_seconds; /* calls x mean sampled duration */
  double exposed_seconds;
  double exposed_share; /* 0..1 */
  bool has_exposed;
  /* Net value (core/netvalue.h), valid when has_net: seconds the decision
   * saved against the NCCL baseline minus what exploration cost (can be < 0),
   * and that exploration cost. */
  double time_saved_seconds;
  double exploration_cost_seconds;
  bool has_net;
  uint32_t candidates_evaluated;
  uint64_t calls_to_converge; /* 0 = not converged */
  uint32_t retunes;
  uint64_t calls;            /* this process's calls of this workload */
  uint64_t captured_calls;   /* of which captured into a CUDA graph */
  uint64_t bytes;            /* nbytes summed over those calls */
  uint64_t hist[ACL_HIST_N]; /* per-bucket counts (not cumulative) */
  uint64_t dur_count;        /* samples in the histogram (>= sum of hist) */
  double dur_sum;            /* seconds */
  int source;                /* decision from: 0 NCCL's own, 1 explored, 2 table
                              * (acl_search_source_name) */
  uint64_t samples;          /* samples the search used (leader host), 0 unknown */
  int traj_len;
  acl_traj_point_t traj[ACL_SNAP_TRAJ]; /* oldest first */
} acl_snap_workload_t;

typedef struct acl_snap_profiler {
  char source[16]; /* "cupti", "nccl", "sim", "none" */
  bool cupti_available;
  bool cupti_backed_off; /* another CUPTI subscriber holds it */
  uint64_t records;      /* kernel records processed */
  uint64_t records_dropped;
  uint64_t samples;              /* samples delivered to the tuner */
  uint64_t ambiguous;            /* calls not used (fused launches) */
  uint64_t mismatches;           /* NCCL ran something else than decided */
  double sample_latency_seconds; /* median call->sample delay, <0 unknown */
  /* CUPTI windows (source "cupti"): state "closed" | "lead" | "open" |
   * "always" (AUTOCCL_PROFILER=cupti); empty when CUPTI is not the source. */
  char cupti_window[8];
  uint32_t cupti_on_ms, cupti_period_ms;
  uint64_t cupti_windows;  /* windows opened */
  double cupti_on_seconds; /* time attached, closed windows */
} acl_snap_profiler_t;

typedef struct acl_snapshot {
  int version; /* ACL_SNAPSHOT_VERSION */
  char hostname[64];
  int pid;
  int local_rank;
  char mode[8]; /* online | static | off */
  double uptime_seconds;
  acl_snap_profiler_t profiler;
  int ncomms;
  acl_snap_comm_t comms[ACL_SNAP_MAX_COMMS];
  int nworkloads;
  bool workloads_truncated; /* more existed than ACL_SNAP_MAX_WORKLOADS */
  acl_snap_workload_t workloads[ACL_SNAP_MAX_WORKLOADS];
} acl_snapshot_t;

/* The job's exposed communication, summed over this process's workloads,
 * and the tuner's net time saved beside it: the exposed time is the most
 * that any collective tuning could ever give back. */
typedef struct acl_snap_job {
  double collective_seconds, exposed_seconds, exposed_share; /* share: 0..1 */
  bool has_exposed;
  double time_saved_seconds; /* sum of the workloads' net value */
  bool has_net;
} acl_snap_job_t;
void acl_snap_job_totals(const acl_snapshot_t *s, acl_snap_job_t *out);

/* Histogram bucket index for a duration (ACL_HIST_N = beyond the last bound). */
int acl_hist_bucket(double seconds);
double acl_hist_bound(int i);

#endif
