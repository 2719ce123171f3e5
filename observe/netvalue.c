/* Net value of tuning (observe/observe.h). */
#include "observe/observe.h"

#include <math.h>

acl_nv_class_t acl_nv_class(acl_phase_t ph, bool nccl_choice)
{
  if (nccl_choice)
    return ACL_NV_FREE;
  if (acl_phase_decided(ph))
    return ACL_NV_DECIDED;
  /* the baseline's phase runs another candidate only as its look-ahead
   * (tuner/search): exploring while NCCL's samples are on their way */
  return ph == ACL_PHASE_EXPLORING || ph == ACL_PHASE_RETUNING || ph == ACL_PHASE_BASELINE
             ? ACL_NV_EXPLORE
             : ACL_NV_FREE;
}

void acl_nv_fold(acl_netvalue_t *nv, uint64_t explore_calls, uint64_t explore_sampled,
                 double explore_seconds, uint64_t decided_calls, bool has_baseline,
                 double baseline_seconds, bool has_best, double best_seconds)
{
  if (!has_baseline || !(baseline_seconds > 0.0) || !isfinite(baseline_seconds))
    return;
  if (explore_sampled < nv->seen_explore_sampled || explore_seconds < nv->seen_explore_seconds) {
    nv->seen_explore_calls = 0;
    nv->seen_explore_sampled = 0;
    nv->seen_explore_seconds = 0.0;
  }
  if (decided_calls < nv->seen_decided_calls)
    nv->seen_decided_calls = 0;
  uint64_t dsamp = explore_sampled - nv->seen_explore_sampled;
  if (dsamp > 0) {
    /* Mean excess of the new samples, times the new calls made (at least
     * the samples: a sample may arrive before its call is counted). */
    uint64_t dcalls =
        explore_calls > nv->seen_explore_calls ? explore_calls - nv->seen_explore_calls : 0;
    double n = (double)(dcalls > dsamp ? dcalls : dsamp);
    double ds = explore_seconds - nv->seen_explore_seconds;
    double excess = (ds / (double)dsamp - baseline_seconds) * n;
    /* Candidates that ran faster than the baseline saved time: a saving,
     * not a negative cost (the cost is what trying cost, never below 0). */
    if (excess > 0.0)
      nv->cost_seconds += excess;
    else
      nv->saved_seconds -= excess;
    nv->seen_explore_calls = explore_calls > nv->seen_explore_calls + dsamp
                                 ? explore_calls
                                 : nv->seen_explore_calls + dsamp;
    nv->seen_explore_sampled = explore_sampled;
    nv->seen_explore_seconds = explore_seconds;
  }
  double gain = has_best && best_seconds > 0.0 && isfinite(best_seconds)
                    ? baseline_seconds - best_seconds
                    : 0.0;
  nv->saved_seconds += (double)(decided_calls - nv->seen_decided_calls) * gain;
  nv->seen_decided_calls = decided_calls;
  nv->priced = true;
}

double acl_nv_net(const acl_netvalue_t *nv) { return nv->saved_seconds - nv->cost_seconds; }
