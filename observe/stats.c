/* The plain statistics that consensus and the profiler return, as the
 * snapshot's entries: the one place where their figures meet the names the
 * endpoint and the job report show. */
#include <stdio.h>
#include <string.h>

#include "observe/observe.h"
#include "profiler/profiler.h"
#include "tuner/consensus/consensus.h"

_Static_assert(ACL_CONS_TRAJ == ACL_SNAP_TRAJ, "a snapshot holds what consensus reports");

void acl_snap_profiler_fill(acl_snap_profiler_t *o, const acl_prof_stats_t *p)
{
  memset(o, 0, sizeof(*o));
  snprintf(o->source, sizeof(o->source), "%s", p->source ? p->source : "none");
  o->cupti_available = p->cupti_available;
  o->cupti_backed_off = p->cupti_backed_off;
  o->records = p->records;
  o->records_dropped = p->records_dropped;
  o->samples = p->samples;
  o->ambiguous = p->ambiguous;
  o->stale = p->stale;
  o->overlap_unknown = p->overlap_unknown;
  o->overlap_late = p->overlap_late;
  o->overlap_late_seconds = p->overlap_late_seconds;
  o->mismatches = p->mismatches;
  o->sample_latency_seconds = p->sample_latency_seconds;
  snprintf(o->cupti_window, sizeof(o->cupti_window), "%s", p->cupti_window ? p->cupti_window : "");
  o->cupti_on_ms = p->cupti_on_ms;
  o->cupti_period_ms = p->cupti_period_ms;
  o->cupti_windows = p->cupti_windows;
  o->cupti_on_seconds = p->cupti_on_seconds;
}

void acl_snap_comm_fill(acl_snap_comm_t *o, const acl_cons_comm_stats_t *c)
{
  memset(o, 0, sizeof(*o));
  o->id = c->id;
  o->rank = c->rank;
  o->nranks = c->nranks;
  o->nnodes = c->nnodes;
  snprintf(o->role, sizeof(o->role), "%s", c->decider ? "decider" : "follower");
  o->consensus_wait_seconds = c->wait_seconds;
  o->blocks_published = c->blocks_published;
  o->lock_acquisitions = c->lock_acquisitions;
  o->samples_busy = c->samples_busy;
  o->workloads_refused = c->workloads_refused;
}

void acl_snap_workload_fill(acl_snap_workload_t *o, const acl_cons_wl_stats_t *w)
{
  memset(o, 0, sizeof(*o));
  o->rank = w->rank;
  o->widx = w->widx;
  o->key = w->key;
  o->phase = w->phase;
  o->current = w->current;
  o->best = w->best;
  o->baseline = w->baseline;
  o->has_best = w->has_best;
  o->has_baseline = w->has_baseline;
  o->baseline_seconds = w->baseline_seconds;
  o->baseline_kept_seconds = w->baseline_kept_seconds;
  o->best_seconds = w->best_seconds;
  o->has_speedup = w->has_speedup;
  o->speedup = w->speedup;
  o->has_speedup_ci = w->has_speedup_ci;
  o->speedup_lo = w->speedup_lo;
  o->speedup_hi = w->speedup_hi;
  o->has_busbw = w->has_busbw;
  o->busbw = w->busbw;
  o->has_overlap = w->has_overlap;
  o->overlap = w->overlap;
  o->candidates_evaluated = w->candidates_evaluated;
  o->calls_to_converge = w->calls_to_converge;
  o->retunes = w->retunes;
  o->retune_cause = w->retune_cause;
  o->budget_wait_calls = w->budget_wait_calls;
  o->budget_wait_for = w->budget_wait_for;
  o->clock_offset_seconds = w->clock_offset_seconds;
  o->source = w->source;
  o->samples = w->samples;
  int n = w->traj_len < 0 ? 0 : (w->traj_len > ACL_SNAP_TRAJ ? ACL_SNAP_TRAJ : w->traj_len);
  o->traj_len = w->traj_len;
  memcpy(o->traj, w->traj, (size_t)n * sizeof(o->traj[0]));
}
