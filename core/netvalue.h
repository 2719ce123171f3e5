/* Net value of tuning: does the tuner pay for itself?
 *
 * Per workload, two running figures against the measured NCCL baseline b
 * (the search's robust duration of NCCL's own choice):
 *   exploration cost = sum over the calls that ran a candidate while
 *                      exploring or re-tuning (validation included) of
 *                      (d - b), d their measured durations: what trying
 *                      candidates cost. Only some calls carry profiler
 *                      events (the search samples 1 in 2^k), so the sampled
 *                      ones are priced, per fold, at their mean and scaled
 *                      to the calls made. A fold whose candidates ran
 *                      faster than b adds its gain to the saving instead:
 *                      the cost is never negative;
 *   gross saving     = calls that ran the converged decision x (b - best),
 *                      best the decision's duration as its speedup states
 *                      (b / speedup, so it agrees with the speedup shown
 *                      beside it), plus the gains of exploration above;
 *   net saved        = gross saving - exploration cost (negative while the
 *                      tuner has not earned back its exploration).
 * Calls that ran NCCL's own choice (warm-up, baseline, a kept NCCL choice,
 * unsampled refills) count zero: they are the baseline.
 *
 * The plugin keeps monotonic per-class totals (calls made, sampled calls and
 * their summed seconds) and folds what is new since the last fold at the
 * baseline and best known at that moment: a baseline re-measured by a
 * re-tune prices only later calls. Pure arithmetic, no locking: the caller
 * serialises folds. */
#ifndef ACL_CORE_NETVALUE_H
#define ACL_CORE_NETVALUE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/types.h"

typedef enum acl_nv_class {
  ACL_NV_FREE = 0,    /* NCCL's own choice ran (warm-up, baseline): counts zero */
  ACL_NV_EXPLORE = 1, /* exploring, validating, re-tuning */
  ACL_NV_DECIDED = 2, /* the converged decision ran */
} acl_nv_class_t;

/* Which total a call made in phase ph belongs to; nccl_choice: it ran
 * NCCL's own choice (candidate algo ACL_ALGO_NCCL). */
acl_nv_class_t acl_nv_class(acl_phase_t ph, bool nccl_choice);

typedef struct acl_netvalue {
  /* Totals already priced (monotonic copies of the plugin's counters). */
  uint64_t seen_explore_calls, seen_explore_sampled, seen_decided_calls;
  double seen_explore_seconds;
  /* Priced so far. */
  double cost_seconds;  /* exploration cost, seconds, >= 0 */
  double saved_seconds; /* gross saving of the decision, seconds */
  bool priced;          /* at least one fold had a baseline */
} acl_netvalue_t;

/* Prices the calls added to the totals since the last fold: explore_calls
 * exploration calls made, of which explore_sampled were measured, taking
 * explore_seconds in all; decided_calls calls of the decision made. The new
 * exploration calls are priced at the mean of the new sampled ones; new
 * exploration calls without a new sample wait for one. Without a baseline
 * (has_baseline false or b not > 0) nothing is priced and the calls wait for
 * the next fold. Without a best (or best not > 0) decided calls count zero.
 * Totals that went backwards (a reset) are taken as new. */
void acl_nv_fold(acl_netvalue_t *nv, uint64_t explore_calls, uint64_t explore_sampled,
                 double explore_seconds, uint64_t decided_calls, bool has_baseline,
                 double baseline_seconds, bool has_best, double best_seconds);

/* saved - cost; 0 before anything was priced. */
double acl_nv_net(const acl_netvalue_t *nv);

#endif
