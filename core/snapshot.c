/* Snapshot helpers: the duration histogram's fixed buckets. */
#include "core/snapshot.h"

#include <math.h>

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
