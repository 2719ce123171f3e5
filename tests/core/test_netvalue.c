/* core/netvalue: the net-value arithmetic on known call sequences. A small
 * replay drives the folds the way the plugin does: monotonic per-class
 * totals, folded with the baseline and best known at that moment. */
#include <criterion/criterion.h>
#include <math.h>

#include "core/netvalue.h"

typedef struct replay {
  acl_netvalue_t nv;
  uint64_t ecalls, dcalls;
  double esec;
} replay_t;

/* n calls of d seconds made in phase ph (what the sample sink counts). */
static void calls(replay_t *r, acl_phase_t ph, int n, double d)
{
  for (int i = 0; i < n; i++) {
    if (acl_nv_class(ph) == ACL_NV_EXPLORE) {
      r->ecalls++;
      r->esec += d;
    } else if (acl_nv_class(ph) == ACL_NV_DECIDED) {
      r->dcalls++;
    }
  }
}

static void fold(replay_t *r, bool hb, double b, bool hbest, double best)
{
  acl_nv_fold(&r->nv, r->ecalls, r->esec, r->dcalls, hb, b, hbest, best);
}

#define NEAR(a, b) cr_expect(fabs((a) - (b)) < 1e-9, "%s = %.12g, expected %.12g", #a, (a), (b))

Test(netvalue, classes)
{
  cr_expect_eq(acl_nv_class(ACL_PHASE_WARMUP), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_BASELINE), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_DISABLED), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_EXPLORING), ACL_NV_EXPLORE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_RETUNING), ACL_NV_EXPLORE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_CONVERGED), ACL_NV_DECIDED);
}

/* Baseline 1 ms. 5 warm-up + 5 baseline calls (free), 10 exploration calls
 * at 1.5 ms (cost 5 ms), then 100 calls of a 0.9 ms decision (saves 10 ms):
 * net +5 ms. */
Test(netvalue, pays_for_itself)
{
  replay_t r = {0};
  calls(&r, ACL_PHASE_WARMUP, 5, 3e-3);
  calls(&r, ACL_PHASE_BASELINE, 5, 1e-3);
  fold(&r, true, 1e-3, false, 0);
  NEAR(acl_nv_net(&r.nv), 0.0);
  calls(&r, ACL_PHASE_EXPLORING, 10, 1.5e-3);
  fold(&r, true, 1e-3, true, 0.9e-3);
  NEAR(r.nv.cost_seconds, 5e-3);
  NEAR(acl_nv_net(&r.nv), -5e-3); /* not earned back yet */
  calls(&r, ACL_PHASE_CONVERGED, 100, 0.9e-3);
  fold(&r, true, 1e-3, true, 0.9e-3);
  NEAR(r.nv.saved_seconds, 10e-3);
  NEAR(r.nv.cost_seconds, 5e-3);
  NEAR(acl_nv_net(&r.nv), 5e-3);
  /* Folding again with nothing new changes nothing. */
  fold(&r, true, 1e-3, true, 0.9e-3);
  NEAR(acl_nv_net(&r.nv), 5e-3);
}

/* NCCL's choice kept after 10 tried candidates: decided calls save nothing
 * (best == baseline), the exploration is a pure loss. */
Test(netvalue, nccl_kept_is_a_loss)
{
  replay_t r = {0};
  calls(&r, ACL_PHASE_EXPLORING, 10, 2e-6 + 25e-6);
  calls(&r, ACL_PHASE_CONVERGED, 1000, 25e-6);
  fold(&r, true, 25e-6, true, 25e-6);
  NEAR(r.nv.saved_seconds, 0.0);
  NEAR(r.nv.cost_seconds, 20e-6);
  NEAR(acl_nv_net(&r.nv), -20e-6);
}

/* Calls made before a baseline exists wait and are priced at the first
 * baseline; a re-tune's new baseline prices only later calls. */
Test(netvalue, baseline_changes_price_only_new_calls)
{
  replay_t r = {0};
  calls(&r, ACL_PHASE_EXPLORING, 4, 2e-3);
  fold(&r, false, 0, false, 0);
  cr_expect_not(r.nv.priced);
  NEAR(acl_nv_net(&r.nv), 0.0);
  fold(&r, true, 1e-3, false, 0);
  cr_expect(r.nv.priced);
  NEAR(r.nv.cost_seconds, 4e-3);
  calls(&r, ACL_PHASE_CONVERGED, 10, 0.5e-3);
  fold(&r, true, 1e-3, true, 0.5e-3); /* 10 x 0.5 ms saved */
  NEAR(r.nv.saved_seconds, 5e-3);
  /* Interference: the re-tune measures NCCL at 2 ms, explores 4 calls at
   * 3 ms, settles on 1.5 ms. */
  calls(&r, ACL_PHASE_RETUNING, 4, 3e-3);
  calls(&r, ACL_PHASE_CONVERGED, 10, 1.5e-3);
  fold(&r, true, 2e-3, true, 1.5e-3);
  NEAR(r.nv.cost_seconds, 4e-3 + 4e-3);
  NEAR(r.nv.saved_seconds, 5e-3 + 5e-3);
  NEAR(acl_nv_net(&r.nv), 2e-3);
}

/* Candidates faster than NCCL while exploring make the cost negative. */
Test(netvalue, fast_exploration_is_negative_cost)
{
  replay_t r = {0};
  calls(&r, ACL_PHASE_EXPLORING, 3, 0.8e-3);
  fold(&r, true, 1e-3, true, 0.8e-3);
  NEAR(r.nv.cost_seconds, -0.6e-3);
  NEAR(acl_nv_net(&r.nv), 0.6e-3);
}

/* Nonsense inputs price nothing; totals that went backwards start over. */
Test(netvalue, bad_inputs)
{
  acl_netvalue_t nv = {0};
  acl_nv_fold(&nv, 5, 1.0, 5, true, NAN, true, 1.0);
  acl_nv_fold(&nv, 5, 1.0, 5, true, -1.0, true, 1.0);
  acl_nv_fold(&nv, 5, 1.0, 5, true, 0.0, true, 1.0);
  cr_expect_not(nv.priced);
  acl_nv_fold(&nv, 2, 4.0, 3, true, 1.0, true, NAN); /* best unknown: decided count 0 */
  NEAR(nv.cost_seconds, 2.0);
  NEAR(nv.saved_seconds, 0.0);
  acl_nv_fold(&nv, 1, 0.5, 1, true, 1.0, true, 0.5); /* reset: 1 call at 0.5 s, 1 decided */
  NEAR(nv.cost_seconds, 2.0 - 0.5);
  NEAR(nv.saved_seconds, 0.5);
}
