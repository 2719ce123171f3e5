/* Private to a rank process (sim/rank.c, sim/rank_plugin.c). */
#ifndef ACL_SIM_RANK_INT_H
#define ACL_SIM_RANK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profiler/simfeed.h"
#include "sim/nccl_model.h"
#include "sim/sim.h"

typedef struct comm_rank {
  void *tctx, *pctx;
  bool tinit, pinit;
  uint64_t seq[ACL_NUM_COLL];
  uint64_t ncalls;            /* calls on this communicator (same on every rank) */
  int16_t conn[ACL_NUM_ALGO]; /* replay: channels connected per algorithm */
  bool connected;             /* replay: the first call connected (comm set-up) */
  uint32_t gen;               /* churn generation (acl_sim_comm_id) */
  /* --stale-stamps: the stamps of its last 64 calls that carried KernelCh
   * events (NCCL's per-channel ring), their count, and the calls left in
   * the current stale run (odd runs repeat, even ones start early) */
  uint64_t ring_start[64], ring_dur[64], nkch;
  uint32_t stale_left, stale_runs;
} comm_rank_t;

typedef struct rank_drv {
  const acl_sim_world_t *w;
  const acl_sim_plugin_t *pl;
  acl_simfeed_t *feed;
  int rank, host;
  comm_rank_t *comms;
  uint64_t clock_ns;
  uint64_t jitter_rng;
  uint64_t stale_rng;
  FILE *log;
  acl_sim_rank_slot_t *slot;
  /* The call in flight (decided, not yet run). */
  acl_candidate_t ran;
  bool failed_call;
  bool captured;  /* the call in flight is being captured into a CUDA graph */
  bool nccl_left; /* the plugin left NCCL's own choice for it */
  int api_mask;   /* the event mask when it was enqueued: what NCCL stamps on it */
} rank_drv_t;

/* NCCL's event mask: one int for the whole process (ncclProfilerEventMask,
 * src/plugin/profiler.cc), whose address every communicator's profiler init
 * gets; NCCL reads it once per collective, when the collective is enqueued
 * (collTaskAppend), and stamps it on the task. */
int acl_sim_event_mask(void);

/* Counts a plugin error on this rank's slot and keeps the first message
 * (fmt takes the rank, what and rc). */
void acl_sim_rank_note_error(rank_drv_t *d, const char *fmt, const char *what, int rc);
/* Channels the decided call runs on (NCCL's count when the plugin left it). */
int acl_sim_rank_channels_used(rank_drv_t *d, const acl_sim_call_t *call);
/* sim/rank_churn.c: ds[0..n)'s communicators finalized and made again under
 * the next generation's ids; whole_process: this thread drives all of the
 * process's ranks, so its resources are measured (rank_drv_t.slot). */
void acl_sim_rank_churn(rank_drv_t *ds, int n, bool whole_process);

/* sim/rank_plugin.c: communicator c's profiler and tuner init (-1 with err
 * when the tuner fails it, as NCCL fails the communicator) and finalize. */
int acl_sim_rank_comm_init(rank_drv_t *d, int c, char *err, size_t errlen);
void acl_sim_rank_comm_fini(rank_drv_t *d, int c);
/* What NCCL >= 2.28 emits when it enqueues a collective (collTaskAppend),
 * before the group reaches getCollInfo: GroupApi and CollApi events, the
 * latter with graphCaptured, each only when the stamped mask (d->api_mask)
 * enables it. */
void acl_sim_rank_api_events(rank_drv_t *d, const acl_sim_call_t *call, bool captured);
/* The Coll and KernelCh events of a call that ran [start_ns, +dur_ns). */
void acl_sim_rank_prof_events(rank_drv_t *d, const acl_sim_call_t *call, uint64_t start_ns,
                              uint64_t dur_ns);

/* sim/rank.c: one call's enqueue (the mask stamped, the API events; nth:
 * calls of its communicator already enqueued in its group), getCollInfo
 * and NCCL's choice, and its run (events, log; returns seconds). */
void acl_sim_rank_enqueue(rank_drv_t *d, const acl_sim_call_t *call, int nth);
void acl_sim_rank_decide(rank_drv_t *d, const acl_sim_call_t *call);
double acl_sim_rank_run(rank_drv_t *d, const acl_sim_call_t *call, double level);

/* sim/rank_group.c. The calls issued together from call k of the step,
 * in enqueue order (returns how many, <= ACL_SIM_GROUP_MAX), and a
 * coalesced group's run on one rank (returns the slowest call's seconds). */
#define ACL_SIM_GROUP_MAX 8
int acl_sim_group_at(const acl_sim_step_t *st, size_t k, uint64_t step, const acl_sim_call_t **out);
double acl_sim_rank_group(rank_drv_t *d, const acl_sim_call_t **g, int m, double level);

#endif
