/* Rank consensus (docs/consensus.md): every rank of a communicator applies the
 * same candidate at the same call of a workload.
 *
 * Per communicator and host, a POSIX shared-memory segment (named from the
 * user id and commId) holds the workloads' search states, the published
 * decision blocks and the samples of every local rank, under a
 * process-shared robust mutex. The first rank to reach an undecided call
 * steps the search and publishes "calls [k, k+R) use candidate c"; every rank
 * applies the block covering its own call index, so nobody ever waits for
 * another rank's progress. Across hosts, the host with rank 0 decides and
 * relays blocks over TCP (tuner/consensus/relay.h).
 *
 * One acl_cons_t per rank (per tuner init): it holds that rank's call
 * counters; several may share one segment inside one process. */
#ifndef ACL_TUNER_CONSENSUS_H
#define ACL_TUNER_CONSENSUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/table.h"
#include "core/types.h"
#include "tuner/search/search.h"

typedef struct acl_cons acl_cons_t;

typedef struct acl_cons_params {
  uint64_t comm_id;
  int nranks;
  int nnodes;
  int rank;                /* -1 when unknown (no profiler ABI) */
  const acl_config_t *cfg; /* with nranks, the settings of every workload's search */
  /* Internal (tests, simulator): salts the segment name so that simulated
   * hosts on one machine do not share a segment. NULL or "" in production. */
  const char *shm_ns;
  /* AUTOCCL_TABLE (NULL none): online, every covered workload starts on its
   * decision (acl_search_seed). Ranks agree on its hash (acl_table_t.hash)
   * through the segment; the caller keeps it alive until destroy. */
  const acl_table_t *table;
  /* 1 when the tuner ABI can set chunk sizes (v6) and AUTOCCL_CHUNK is on:
   * the search gets a chunk axis. Part of the settings ranks agree on. */
  int chunk_axis;
  /* 1 when NCCL's first profiler events cost once per communicator, not
   * per workload (tuner v6, NCCL 2.30: acl_search_params_t.events_per_comm).
   * Part of the settings ranks agree on. */
  int events_per_comm;
} acl_cons_params_t;

/* acl_decision_t.widx of a workload refused because the communicator's
 * workload table (cfg->max_workloads) is full: NCCL's choice, on every rank. */
#define ACL_CONS_WIDX_NONE UINT32_MAX

/* What getCollInfo applies. */
typedef struct acl_decision {
  uint32_t widx;
  uint16_t cand_id;
  uint8_t phase; /* acl_phase_t of the block this call falls in */
  /* NCCL's profiler events cost host time on every call that carries them:
   * the search wants them on 1 call in 2^sample_shift (0 = every call).
   * Part of the published block, so every rank samples the same calls. */
  uint8_t sample_shift;
  uint64_t call_idx;
  acl_candidate_t cand; /* algo == ACL_ALGO_NCCL: leave NCCL's choice */
  /* What a call captured into a CUDA graph runs instead (the block's safe
   * candidate, acl_search_safe when the block was published): the proven
   * decision or NCCL's choice, never an exploratory one. Part of the
   * published block, so every rank maps call_idx to the same answer. */
  uint16_t safe_id;
  acl_candidate_t safe;
} acl_decision_t;

/* Joins (or creates) the communicator's segment. NULL with a message in err
 * when it cannot: the caller must then fail loudly, not fall back silently. */
acl_cons_t *acl_cons_create(const acl_cons_params_t *p, char *err, size_t errlen);
void acl_cons_destroy(acl_cons_t *c); /* last rank out removes the segment; NULL ok */

/* The decision for this rank's next call of the workload. 0 on success;
 * negative with a message in err when this rank cannot apply a consistent
 * decision (the collective must then fail with a clear NCCL error). */
int acl_cons_decide(acl_cons_t *c, const acl_wkey_t *key,
                    const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], acl_decision_t *out, char *err,
                    size_t errlen);

/* Calls k+1.. of this rank's workload that the block of its last decision
 * (call k) covers: advances over up to n of them and returns how many, 0
 * when that block ends at k. Exactly what deciding each of them would
 * return; the simulator and the tests use it to skip calls that carry no
 * profiler events (tuner/drive). */
uint64_t acl_cons_skip(acl_cons_t *c, const acl_wkey_t *key, uint64_t n);

/* One observed call of this rank, as the profiler delivers it: what it
 * took and what NCCL ran. The consensus layer's one way in for samples. */
typedef struct acl_cons_obs {
  uint32_t widx;
  uint64_t call_idx;
  uint16_t cand_id;
  int want_nch;                     /* the channels the candidate asked for (0: NCCL's own count) */
  double seconds;                   /* < 0: no time, only what NCCL ran */
  float overlap;                    /* 0..1, < 0 unknown */
  int ran_algo, ran_proto, ran_nch; /* what NCCL ran (its Coll event); -1, -1, 0 unknown */
  int cupti;                        /* 1: seconds from CUPTI's clock (acl_search_obs_t.cupti) */
} acl_cons_obs_t;
/* The sample is kept per call until every local rank reported it, then the
 * fastest rank's time goes to the search; what NCCL ran goes at once (NCCL's
 * own channels and pair, where the search starts; a clamped request). Never
 * waits for the lock: a busy one drops the observation (counted). */
void acl_cons_observe(acl_cons_t *c, const acl_cons_obs_t *o);

/* False once a rank of this host joined with another AUTOCCL_TABLE (or none
 * where others have one): every rank then leaves NCCL's choices. */
bool acl_cons_table_agreed(const acl_cons_t *c);

/* What this rank's consensus shows of its communicator and of each
 * workload: plain figures, which observe/ turns into the snapshot the
 * endpoint and the job report render. Absent figures have their flag false. */
#define ACL_CONS_TRAJ 64 /* trajectory points reported per workload, oldest first */
typedef struct acl_cons_comm_stats {
  uint64_t id;
  int rank; /* -1 when unknown */
  int nranks, nnodes;
  bool decider;        /* this host steps the search (the leader host) */
  double wait_seconds; /* lock + relay waits, this process */
  uint64_t blocks_published, lock_acquisitions;
  uint64_t samples_busy;      /* samples dropped: the lock was held */
  uint64_t workloads_refused; /* workloads the full table left on NCCL's choice */
} acl_cons_comm_stats_t;
typedef struct acl_cons_wl_stats {
  int rank;
  uint32_t widx;
  acl_wkey_t key;
  acl_phase_t phase;
  acl_candidate_t current; /* the latest block's candidate, or the search's */
  acl_candidate_t best, baseline;
  bool has_best, has_baseline, has_speedup, has_speedup_ci, has_busbw, has_overlap;
  double baseline_seconds, best_seconds;
  double baseline_kept_seconds; /* acl_search_report_t's: reports only */
  double speedup, speedup_lo, speedup_hi; /* the interval: has_speedup_ci */
  double busbw, overlap;
  uint32_t candidates_evaluated;
  uint64_t calls_to_converge; /* 0 = not converged */
  uint32_t retunes;
  int retune_cause;           /* ACL_RETUNE_* of the latest re-tune */
  uint64_t budget_wait_calls; /* waiting for the budget: about how many more calls, 0 not */
  int budget_wait_for;        /* ACL_WAIT_FOR_*: what that wait pays for */
  double clock_offset_seconds; /* CUPTI's clock minus KernelCh's taken off samples, 0 none */
  int source; /* acl_search_source_name */
  uint64_t samples;
  int traj_len;
  acl_traj_point_t traj[ACL_CONS_TRAJ];
} acl_cons_wl_stats_t;
/* Fills comm (one entry, never waits) and up to max workloads (returns how
 * many; waits for the lock a bounded time). */
int acl_cons_snapshot(acl_cons_t *c, acl_cons_comm_stats_t *comm, acl_cons_wl_stats_t *w, int max);
/* The same, handing each workload's figures to each(user, w) in turn, under
 * the lock (each only copies: it must not block or take locks), so that no
 * array of them is needed (the endpoint's snapshots). each NULL: comm only. */
int acl_cons_snapshot_each(acl_cons_t *c, acl_cons_comm_stats_t *comm,
                           void (*each)(void *user, const acl_cons_wl_stats_t *w), void *user,
                           int max);

/* The search's full report of workload widx (leader host; tests and the
 * simulator's benchmarks). 0, or -1 when there is none. */
int acl_cons_search_report(acl_cons_t *c, uint32_t widx, acl_search_report_t *out);

/* Counters beyond acl_cons_snapshot (tests, docs/consensus.md). */
typedef struct acl_cons_stats {
  uint64_t lock_acquisitions, blocks_published, relay_calls;
  double wait_seconds;
  uint64_t refused;    /* workloads refused by the full table (segment-wide) */
  uint64_t recoveries; /* dead lock holders recovered (segment-wide) */
  uint32_t attached;   /* ranks attached to this host's segment */
  uint32_t nworkloads;
  /* Sample classes over the segment's workloads (docs/profiler.md): fed,
   * late (dropped), partial (a local rank never reported), skewed (slowest
   * rank > 2x the fastest, which is kept). */
  uint64_t samples_fed, samples_late, samples_partial, samples_skewed;
  /* This rank: samples dropped because the lock was held (never waited
   * for), and workloads the full table refused it. */
  uint64_t samples_busy, refused_here;
  int role; /* 0 decider (leader host), 1 follower host */
  /* 1 once the segment is sealed (a corrupt header or an unusable lock):
   * the published blocks, then NCCL's choice (docs/consensus.md). */
  int sealed;
  char shm_name[96];
} acl_cons_stats_t;
void acl_cons_stats(acl_cons_t *c, acl_cons_stats_t *st);

/* A process of this host attached to the communicator, and the port its
 * HTTP endpoint serves (0: none). */
typedef struct acl_cons_peer {
  int pid;
  int local_rank;
  int http_port;
} acl_cons_peer_t;

/* Records this process's endpoint in the segment (for every other local
 * process's host view). Bounded wait on the lock; a miss is harmless. */
void acl_cons_set_endpoint(acl_cons_t *c, int local_rank, int http_port);
/* The processes of this host attached to c, up to max. -1 when the lock
 * was not obtained within the observers' bound. */
int acl_cons_peers(acl_cons_t *c, acl_cons_peer_t *out, int max);

#endif
