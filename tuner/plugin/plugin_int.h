/* Internals shared by plugin.c (decisions) and plugin_obs.c (snapshots,
 * endpoint). Not used outside tuner/. */
#ifndef ACL_TUNER_PLUGIN_INT_H
#define ACL_TUNER_PLUGIN_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/config.h"
#include "core/table.h"
#include "observe/observe.h"
#include "profiler/overlap.h"
#include "tuner/plugin/plugin.h"

/* This process's view of one workload of one rank (the search state itself
 * is shared, in the consensus segment). Relaxed atomics: the getCollInfo
 * thread, the sample thread and the endpoint touch them concurrently. */
typedef struct acl_rank_stats {
  _Atomic uint64_t calls;
  _Atomic uint64_t bytes;
  _Atomic uint64_t hist[ACL_HIST_N];
  _Atomic uint64_t dur_count;
  _Atomic uint64_t dur_ns;
  /* Samples with a known overlap: their collective ns and exposed ns, by
   * what ran (NCCL's choice, the decision, a tried candidate: ACL_OV_*,
   * profiler/overlap.h). */
  _Atomic uint64_t ov_coll_ns[ACL_OV_N], ov_exposed_ns[ACL_OV_N];
  /* Stopped calls (plugin_stall.c), also the rank's own calls only: the
   * rank's stall_calls at this workload's last call and what it ran. */
  uint32_t last_call;
  uint8_t last_phase;
  uint8_t coll;
  bool stall_warned;
  size_t nbytes;
  acl_candidate_t last_cand;
  /* CUDA-graph capture (profiler/profiler.h acl_prof_captured): calls that
   * were captured, whether the latest one was (the views then show the
   * workload as captured), and what the captures got (acl_candidate_t's 8
   * bytes, so that the endpoint reads it whole). */
  _Atomic uint64_t captured_calls;
  atomic_bool last_captured;
  _Atomic uint64_t captured_cand;
  /* Net value (core/netvalue.h): calls made by class (getCollInfo), the
   * sampled exploration calls and their time (sample sink), and their
   * pricing, which only snapshot builds touch (under acl_proc.lock). */
  _Atomic uint64_t explore_calls, decided_calls, explore_sampled, explore_ns;
  acl_netvalue_t nv;
  acl_exposure_acc_t exposure; /* snapshot builds only, under acl_proc.lock */
} acl_rank_stats_t;

enum {
  ACL_LOGGED_JOIN = 1u << 0,
  ACL_LOGGED_DECIDE = 1u << 1,
  ACL_LOGGED_STATIC = 1u << 2,
  ACL_LOGGED_TABLE_HASH = 1u << 3,
};

/* A getCollInfo decision that getChunkSize calls may still ask about
 * (tuner v6): NCCL chooses every (algorithm, protocol) of a group first,
 * then sizes the chunks of its collectives, 1-3 calls each, each with the
 * bytes of the part it schedules (at most the decision's). */
#define ACL_CHUNK_PENDING 8 /* decisions remembered per rank: a group's bins */
typedef struct acl_chunk_pending {
  uint64_t nbytes; /* 0 = empty slot */
  int8_t coll;
  int8_t algo, proto; /* -1: NCCL's own choice ran (any pair matches, scale 0) */
  int8_t log2;        /* the candidate's chunk scale */
} acl_chunk_pending_t;

struct acl_rank {
  uint64_t comm_id;
  char name[64];
  int rank; /* -1 until the profiler ABI tells */
  int nranks, nnodes;
  int abi;
  bool has_profiler, has_tuner;
  bool online_unsafe; /* tuner ABI without commId */
  struct acl_cons *cons;
  char cons_err[256];
  void *prof_rank;
  int *nccl_mask;          /* NCCL's event mask (profiler init), kept by the profiler */
  uint32_t ncalls;         /* this rank's calls, for the profiler duty check */
  uint32_t stall_calls;    /* this rank's calls, for the stopped-workload check */
  acl_rank_stats_t *stats; /* indexed by workload index */
  int nstats;
  _Atomic unsigned logged;
  /* tuner v6: the last decisions, newest at chunk_head - 1; only touched by
   * the thread that enqueues this communicator's collectives */
  acl_chunk_pending_t chunk_pend[ACL_CHUNK_PENDING];
  uint32_t chunk_head;
  _Atomic uint64_t chunk_set, chunk_kept; /* getChunkSize calls changed / left */
  struct acl_rank *next;
};

typedef struct acl_proc {
  pthread_mutex_t lock; /* ranks list, start/stop */
  bool cfg_loaded;
  acl_config_t cfg;
  acl_table_t *table;     /* AUTOCCL_TABLE: static mode, online warm start */
  acl_table_entry_t *out; /* decisions of communicators gone (AUTOCCL_TABLE_OUT) */
  int nout, nout_cap;
  bool out_full_warned;          /* ACL_TABLE_KEEP_MAX reached (plugin_table.c) */
  _Atomic unsigned table_warned; /* bit per unavailable (algo, proto): warned once */
  bool table_failed;             /* reported; not retried until the last rank goes */
  uint64_t t0_ns;                /* acl_mono_ns() when the configuration was loaded */
  struct acl_prof *prof;
  struct acl_web *web;
  bool web_failed;   /* logged once; not retried */
  bool obs_stopping; /* acl_obs_stop_locked has dropped the lock */
  pthread_t watcher;
  bool watcher_running;
  atomic_bool watcher_stop;
  struct acl_rank *ranks;
  int nranks_live;
} acl_proc_t;

extern acl_proc_t acl_proc;

/* plugin_stall.c: after each online decision of r's own calls; warns once
 * per workload whose calls stopped while its search explored. */
struct acl_decision;
void acl_stall_note(struct acl_rank *r, int coll, size_t nbytes, const struct acl_decision *d);
/* plugin.c: the candidate packed in acl_rank_stats_t.captured_cand. */
acl_candidate_t acl_captured_cand(const acl_rank_stats_t *st);

/* plugin_table.c; called with acl_proc.lock held. */
void acl_table_keep_locked(struct acl_rank *r);      /* r's decisions outlive it */
void acl_table_write_out_locked(void);               /* AUTOCCL_TABLE_OUT, atomically */
void acl_table_render_json_locked(acl_strbuf_t *sb); /* GET /api/v1/table */
/* acl_proc.table was measured with another NCCL version or GPU model than
 * this process has (acl_table_meta_check): true, with err saying which. */
bool acl_table_meta_refused_locked(char *err, size_t errlen);

/* plugin_chunk.c (tuner v6). getCollInfo notes each call (NULL before v6)
 * and, when a candidate runs, its choice. */
acl_chunk_pending_t *acl_chunk_note(acl_rank_t *r, int coll, size_t nbytes);
void acl_chunk_choose(acl_chunk_pending_t *pe, const acl_candidate_t *c);

/* plugin_obs.c; called with acl_proc.lock held. */
void acl_obs_start_locked(void);
void acl_obs_stop_locked(void);
/* r joined its segment: records this process's endpoint there (host view). */
void acl_obs_joined_locked(struct acl_rank *r);
/* The snapshot of /api/v1/state, built in two steps: the process's fields,
 * then one rank at a time (the job report keeps ranks as they finalize). */
void acl_obs_snap_head_locked(acl_snapshot_t *s);
/* s's profiler fields now (the job report's, at its writing). */
void acl_obs_snap_profiler_locked(acl_snapshot_t *s);
void acl_obs_snap_add_rank_locked(acl_snapshot_t *s, struct acl_rank *r);

/* plugin_report.c (AUTOCCL_REPORT); called with acl_proc.lock held. */
void acl_report_keep_locked(struct acl_rank *r); /* r's rows outlive it */
/* Writes the job report of the ranks kept (at_exit: and of those still live,
 * which NCCL never finalized); then forgets them. */
void acl_report_write_locked(bool at_exit);

#endif
