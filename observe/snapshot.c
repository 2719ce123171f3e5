/* Snapshot helpers: the duration histogram's fixed buckets, job totals, the
 * state a view shows. */
#include "observe/observe.h"

#include <math.h>
#include <string.h>

const char *acl_snap_state_name(const acl_snap_workload_t *w)
{
  return w->captured ? ACL_CAPTURED_NAME : acl_phase_name(w->phase);
}

bool acl_snap_decided(const acl_snap_workload_t *w)
{
  return !w->captured && acl_phase_decided(w->phase);
}

void acl_snap_job_totals(const acl_snapshot_t *s, acl_snap_job_t *out)
{
  memset(out, 0, sizeof(*out));
  int nw = s->nworkloads < 0
               ? 0
               : (s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? ACL_SNAP_MAX_WORKLOADS : s->nworkloads);
  for (int i = 0; i < nw; i++) {
    const acl_snap_workload_t *w = &s->workloads[i];
    if (w->has_exposed && isfinite(w->collective_seconds) && isfinite(w->exposed_seconds)) {
      out->collective_seconds += w->collective_seconds;
      out->exposed_seconds += w->exposed_seconds;
      out->has_exposed = true;
    }
    if (w->has_net && isfinite(w->time_saved_seconds)) {
      out->time_saved_seconds += w->time_saved_seconds;
      out->has_net = true;
    }
  }
  if (out->collective_seconds > 0.0)
    out->exposed_share = out->exposed_seconds / out->collective_seconds;
}

double acl_hist_bound(int i)
{
  if (i < 0 || i >= ACL_HIST_N)
    return INFINITY;
  /* 1e-6 * 4^i; ldexp keeps the power of four exact. */
  return 1e-6 * ldexp(1.0, 2 * i);
}

int acl_hist_bucket(double seconds)
{
  /* NaN and +Inf land beyond the last bound (Prometheus' +Inf bucket);
   * negative and zero durations in the first. Buckets are "le" (inclusive). */
  if (isnan(seconds))
    return ACL_HIST_N;
  for (int i = 0; i < ACL_HIST_N; i++)
    if (seconds <= acl_hist_bound(i))
      return i;
  return ACL_HIST_N;
}
