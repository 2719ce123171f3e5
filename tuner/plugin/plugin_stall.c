/* A workload whose calls stop while its search explores. The likely cause
 * in a training job: its collective was captured into a CUDA graph, and
 * replays of a graph never reach the tuner (NCCL asks getCollInfo once, at
 * capture). The graph then replays whatever ran at capture, perhaps an
 * exploratory candidate, for the rest of the job; the plugin cannot
 * change it, only say so (README, "CUDA graphs"). With NCCL's profiler
 * events (NCCL >= 2.28, autoccl loaded as the profiler too) a captured call
 * got the proven decision or NCCL's choice instead: a workload whose last
 * call was captured is not warned about. Touched by the rank's own
 * getCollInfo calls only, like the event gating. */
#include <stdio.h>

#include "core/log.h"
#include "tuner/consensus/consensus.h"
#include "tuner/plugin/plugin_int.h"

/* How often the rank's workloads are scanned, and how many calls of the
 * rank without one of a workload count as "stopped": a training step calls
 * each of its workloads at least once, and steps have tens to a few
 * hundred collectives (sim workloads: 7-40), so 16,384 calls are dozens of
 * steps without the workload. */
#define ACL_STALL_CHECK_CALLS 4096u
#define ACL_STALL_CALLS 16384u

static bool searching(uint8_t phase)
{
  return phase == ACL_PHASE_BASELINE || phase == ACL_PHASE_EXPLORING || phase == ACL_PHASE_RETUNING;
}

void acl_stall_note(acl_rank_t *r, int coll, size_t nbytes, const acl_decision_t *d)
{
  uint32_t now = ++r->stall_calls;
  if (d->widx < (uint32_t)r->nstats) {
    acl_rank_stats_t *st = &r->stats[d->widx];
    st->last_call = now;
    st->last_phase = d->phase;
    st->coll = (uint8_t)coll;
    st->nbytes = nbytes;
    st->last_cand = d->cand;
  }
  if (now % ACL_STALL_CHECK_CALLS)
    return;
  for (int i = 0; i < r->nstats; i++) {
    acl_rank_stats_t *st = &r->stats[i];
    if (st->stall_warned || !st->last_call || !searching(st->last_phase) ||
        now - st->last_call < ACL_STALL_CALLS ||
        atomic_load_explicit(&st->last_captured, memory_order_relaxed))
      continue;
    st->stall_warned = true;
    char cand[48] = "NCCL's own choice";
    if (st->last_cand.algo != ACL_ALGO_NCCL)
      snprintf(cand, sizeof(cand), "%s/%s/%d channels", acl_algo_name(st->last_cand.algo),
               acl_proto_name(st->last_cand.proto), st->last_cand.nchannels);
    acl_warn("comm %016llx rank %d: %s %zu bytes stopped reaching the tuner %u calls ago while "
             "its search was at %s (last ran %s); if it was captured into a CUDA graph, the "
             "graph replays what ran at capture: capture after tuning, or use a table in "
             "AUTOCCL_MODE=static (README, CUDA graphs)",
             (unsigned long long)r->comm_id, r->rank, acl_coll_name(st->coll), st->nbytes,
             now - st->last_call, acl_phase_name((acl_phase_t)st->last_phase), cand);
  }
}
