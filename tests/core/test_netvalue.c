/* core/netvalue: the net-value arithmetic on known call sequences. A small
 * replay drives the folds the way the plugin does: monotonic per-class
 * totals, folded with the baseline and best known at that moment. */
#include <criterion/criterion.h>
#include <math.h>

#include "core/netvalue.h"

typedef struct replay {
  acl_netvalue_t nv;
  uint64_t ecalls, esamp, dcalls;
  double esec;
} replay_t;

/* n calls of a candidate (nccl: NCCL's own choice) of d seconds made in
 * phase ph, one in every `every` of them sampled (what getCollInfo and the
 * sample sink count). */
static void calls_of(replay_t *r, acl_phase_t ph, bool nccl, int n, double d, int every)
{
  for (int i = 0; i < n; i++) {
    acl_nv_class_t c = acl_nv_class(ph, nccl);
    if (c == ACL_NV_EXPLORE) {
      r->ecalls++;
      if (i % every == 0) {
        r->esamp++;
        r->esec += d;
      }
    } else if (c == ACL_NV_DECIDED) {
      r->dcalls++;
    }
  }
}

static void calls(replay_t *r, acl_phase_t ph, int n, double d)
{
  calls_of(r, ph, false, n, d, 1);
}

static void fold(replay_t *r, bool hb, double b, bool hbest, double best)
{
  acl_nv_fold(&r->nv, r->ecalls, r->esamp, r->esec, r->dcalls, hb, b, hbest, best);
}

#define NEAR(a, b) cr_expect(fabs((a) - (b)) < 1e-9, "%s = %.12g, expected %.12g", #a, (a), (b))

Test(netvalue, classes)
{
  cr_expect_eq(acl_nv_class(ACL_PHASE_WARMUP, true), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_BASELINE, true), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_DISABLED, true), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_EXPLORING, false), ACL_NV_EXPLORE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_RETUNING, false), ACL_NV_EXPLORE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_CONVERGED, false), ACL_NV_DECIDED);
  /* NCCL's own choice is the baseline whatever the phase. */
  cr_expect_eq(acl_nv_class(ACL_PHASE_EXPLORING, true), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_CONVERGED, true), ACL_NV_FREE);
  /* the states a decision is applied in count as decided; waits as free */
  cr_expect_eq(acl_nv_class(ACL_PHASE_VALIDATING, false), ACL_NV_DECIDED);
  cr_expect_eq(acl_nv_class(ACL_PHASE_REFINING, false), ACL_NV_DECIDED);
  cr_expect_eq(acl_nv_class(ACL_PHASE_PAUSED, false), ACL_NV_DECIDED);
  cr_expect_eq(acl_nv_class(ACL_PHASE_WAIT_BUDGET, true), ACL_NV_FREE);
  cr_expect_eq(acl_nv_class(ACL_PHASE_WAIT_SAMPLES, true), ACL_NV_FREE);
}

/* Sampling: 40 exploration calls of which 1 in 4 measured (10 samples at
 * 1.2 ms, baseline 1 ms) cost 40 x 0.2 ms = 8 ms; NCCL's own choice running
 * unsampled in between (budget refills) costs nothing. */
Test(netvalue, sampled_exploration_scales_to_calls_made)
{
  replay_t r = {0};
  calls_of(&r, ACL_PHASE_EXPLORING, false, 40, 1.2e-3, 4);
  calls_of(&r, ACL_PHASE_EXPLORING, true, 100, 1.0e-3, 1000);
  cr_expect_eq(r.ecalls, 40);
  cr_expect_eq(r.esamp, 10);
  fold(&r, true, 1e-3, false, 0);
  NEAR(r.nv.cost_seconds, 8e-3);
  /* New calls without a new sample wait for one, then take its price. */
  r.ecalls += 3;
  fold(&r, true, 1e-3, false, 0);
  NEAR(r.nv.cost_seconds, 8e-3);
  r.ecalls += 1;
  r.esamp += 1;
  r.esec += 2e-3;
  fold(&r, true, 1e-3, false, 0);
  NEAR(r.nv.cost_seconds, 8e-3 + 4 * 1e-3);
  /* A sample counted before its call (a fold reading between the two):
   * priced once, never twice. */
  r.esamp += 1;
  r.esec += 1.5e-3;
  fold(&r, true, 1e-3, false, 0);
  NEAR(r.nv.cost_seconds, 12e-3 + 0.5e-3);
  r.ecalls += 1;
  fold(&r, true, 1e-3, false, 0);
  NEAR(r.nv.cost_seconds, 12.5e-3);
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

/* NCCL's choice kept after 10 tried candidates: its calls are the baseline
 * (they count zero), the exploration is a pure loss. */
Test(netvalue, nccl_kept_is_a_loss)
{
  replay_t r = {0};
  calls(&r, ACL_PHASE_EXPLORING, 10, 2e-6 + 25e-6);
  calls_of(&r, ACL_PHASE_CONVERGED, true, 1000, 25e-6, 1);
  cr_expect_eq(r.dcalls, 0);
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
  acl_nv_fold(&nv, 5, 5, 1.0, 5, true, NAN, true, 1.0);
  acl_nv_fold(&nv, 5, 5, 1.0, 5, true, -1.0, true, 1.0);
  acl_nv_fold(&nv, 5, 5, 1.0, 5, true, 0.0, true, 1.0);
  cr_expect_not(nv.priced);
  acl_nv_fold(&nv, 2, 2, 4.0, 3, true, 1.0, true, NAN); /* best unknown: decided count 0 */
  NEAR(nv.cost_seconds, 2.0);
  NEAR(nv.saved_seconds, 0.0);
  acl_nv_fold(&nv, 1, 1, 0.5, 1, true, 1.0, true, 0.5); /* reset: 1 call at 0.5 s, 1 decided */
  NEAR(nv.cost_seconds, 2.0 - 0.5);
  NEAR(nv.saved_seconds, 0.5);
}
