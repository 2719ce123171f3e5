/* observe/ net value: the net-value arithmetic on known call sequences. A small
 * replay drives the folds the way the plugin does: monotonic per-class
 * totals, folded with the baseline and best known at that moment. */
#include <criterion/criterion.h>
#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "observe/observe.h"

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

static void calls(replay_t *r, acl_phase_t ph, int n, double d) { calls_of(r, ph, false, n, d, 1); }

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
  /* another candidate in the baseline's phase: its look-ahead explores */
  cr_expect_eq(acl_nv_class(ACL_PHASE_BASELINE, false), ACL_NV_EXPLORE);
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

/* Candidates faster than NCCL while exploring saved time: a saving, never
 * a negative cost; the net is the same either way. */
Test(netvalue, fast_exploration_is_a_saving_not_a_negative_cost)
{
  replay_t r = {0};
  calls(&r, ACL_PHASE_EXPLORING, 3, 0.8e-3);
  fold(&r, true, 1e-3, true, 0.8e-3);
  NEAR(r.nv.cost_seconds, 0.0);
  NEAR(r.nv.saved_seconds, 0.6e-3);
  NEAR(acl_nv_net(&r.nv), 0.6e-3);
  /* A later slower fold adds cost; the earlier gain stays a saving. */
  calls(&r, ACL_PHASE_EXPLORING, 2, 1.5e-3);
  fold(&r, true, 1e-3, true, 0.8e-3);
  NEAR(r.nv.cost_seconds, 1e-3);
  NEAR(r.nv.saved_seconds, 0.6e-3);
  NEAR(acl_nv_net(&r.nv), -0.4e-3);
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
  NEAR(nv.cost_seconds, 2.0);                           /* the fast call is a saving ... */
  NEAR(nv.saved_seconds, 0.5 + 0.5);                    /* ... beside the decided call's */
}

/* The job report (observe/observe.h): totals are the rows' sums, the decision is
 * absent while searching, state names come from acl_phase_name. */
Test(report, totals_rows_and_text)
{
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  strcpy(s->hostname, "node-1");
  s->ncomms = 1;
  s->comms[0].id = 0x11;
  strcpy(s->comms[0].name, "dp-0");
  s->comms[0].rank = 3;
  s->nworkloads = 2;
  for (int i = 0; i < 2; i++) {
    acl_snap_workload_t *w = &s->workloads[i];
    w->rank = 3;
    w->key.coll = 2;
    w->key.nbytes = 1u << (20 + i);
    w->calls = 100;
    w->has_baseline = true;
    w->baseline_seconds = 1e-3;
    w->has_net = true;
    w->time_saved_seconds = i ? -0.002 : 0.01;
    w->exploration_cost_seconds = i ? 0.003 : 0.0;
    w->current = (acl_candidate_t){.algo = 1, .proto = 2, .nchannels = 32};
  }
  s->workloads[0].phase = ACL_PHASE_CONVERGED;
  s->workloads[0].has_speedup = s->workloads[0].has_speedup_ci = true;
  s->workloads[0].speedup = 1.1;
  s->workloads[0].speedup_lo = 1.05;
  s->workloads[0].speedup_hi = 1.15;
  s->workloads[1].phase = ACL_PHASE_EXPLORING;
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  cr_expect_eq(t.ranks, 1);
  cr_expect_eq(t.workloads, 2);
  cr_expect_eq(t.converged, 1);
  NEAR(t.net_saved_seconds, 0.008);
  NEAR(t.exploration_cost_seconds, 0.003);
  NEAR(t.nccl_seconds, 0.2);
  NEAR(t.per_rank_seconds, 0.008);
  cr_expect_not_null(acl_report_decision(&s->workloads[0]));
  cr_expect_null(acl_report_decision(&s->workloads[1]), "no decision while exploring");
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_report_text(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  cr_expect(strstr(sb.data, "converged RING/SIMPLE/32ch"), "%s", sb.data);
  cr_expect(strstr(sb.data, "1.100x (1.050-1.150)"), "%s", sb.data);
  cr_expect(strstr(sb.data, acl_phase_name(ACL_PHASE_EXPLORING)), "%s", sb.data);
  cr_expect(strstr(sb.data, "total: net saved +8.0 ms of 200.0 ms NCCL time (+4.00 %)"), "%s",
            sb.data);
  acl_sb_free(&sb);
  acl_sb_init(&sb);
  acl_report_json(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  cr_expect(strstr(sb.data, "\"decision\": null"), "%s", sb.data);
  cr_expect(strstr(sb.data, "\"speedup_low\": 1.05"), "%s", sb.data);
  cr_expect(strstr(sb.data, "\"totals\": {\"ranks\": 1"), "%s", sb.data);
  acl_sb_free(&sb);
  free(s);
}

/* A re-tune measures NCCL's choice again: until then the job report's NCCL
 * time stands on the baseline before it (in a PyTorch run, a re-tuning
 * workload with none was counted as never sampled); with neither, none. */
Test(report, nccl_time_while_retuning)
{
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  s->nworkloads = 2;
  for (int i = 0; i < 2; i++) {
    acl_snap_workload_t *w = &s->workloads[i];
    w->phase = ACL_PHASE_RETUNING;
    w->key.nbytes = 1u << 26;
    w->calls = 200;
    w->current = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  }
  s->workloads[0].baseline_kept_seconds = 2e-3;
  cr_assert_float_eq(acl_report_nccl_seconds(&s->workloads[0]), 0.4, 1e-12);
  cr_assert_lt(acl_report_nccl_seconds(&s->workloads[1]), 0.0);
  /* a measured baseline wins over the kept one */
  s->workloads[0].has_baseline = true;
  s->workloads[0].baseline_seconds = 3e-3;
  cr_assert_float_eq(acl_report_nccl_seconds(&s->workloads[0]), 0.6, 1e-12);
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  cr_assert_float_eq(t.nccl_seconds, 0.6, 1e-12);
  /* the report says why each re-tuned (null where it never did), and the
   * clock offset its search took off CUPTI's samples (null: none) */
  s->workloads[0].retunes = 2;
  s->workloads[0].retune_cause = ACL_RETUNE_OVERLAP;
  s->workloads[0].clock_offset_seconds = 2.31e-6;
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_report_json(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  cr_expect(strstr(sb.data, "\"retunes\": 2, \"retune_cause\": \"overlap\""), "%s", sb.data);
  cr_expect(strstr(sb.data, "\"retunes\": 0, \"retune_cause\": null"), "%s", sb.data);
  cr_expect(strstr(sb.data, "\"clock_offset_us\": 2.310,"), "%s", sb.data);
  cr_expect(strstr(sb.data, "\"clock_offset_us\": null,"), "%s", sb.data);
  acl_sb_free(&sb);
  free(s);
}

/* Only converged workloads count as converged (not those still validating
 * or refining); a wait between two steps of the search shows no decision
 * beside its best-so-far speedup (the decision is NCCL's own choice exactly
 * when the speedup is 1); the text's columns are as wide as their widest
 * value, so every row lines up. */
Test(report, converged_count_wait_rows_and_columns)
{
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  const acl_phase_t ph[] = {ACL_PHASE_CONVERGED, ACL_PHASE_VALIDATING, ACL_PHASE_REFINING,
                            ACL_PHASE_WAIT_BUDGET, ACL_PHASE_WAIT_SAMPLES};
  s->nworkloads = 5;
  for (int i = 0; i < 5; i++) {
    acl_snap_workload_t *w = &s->workloads[i];
    w->phase = ph[i];
    w->key.nbytes = 1u << 20;
    w->calls = 10;
    w->current = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  }
  s->workloads[0].candidates_evaluated = 23; /* kept NCCL's choice after a search */
  s->workloads[3].has_speedup = true;        /* best so far against the baseline */
  s->workloads[3].speedup = 1.059;
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  cr_expect_eq(t.converged, 1, "validating and refining are not converged");
  cr_expect_null(acl_report_decision(&s->workloads[3]), "NCCL's choice shown beside 1.059x");
  cr_expect_not_null(acl_report_decision(&s->workloads[4]), "a wait with no best: NCCL's choice");
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_report_text(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  /* every row's SOURCE starts in the header's SOURCE column */
  char *line = strchr(sb.data, '\n') + 1;
  const char *hs = strstr(line, "SOURCE");
  cr_assert_not_null(hs);
  long col = hs - line;
  for (char *l = strchr(line, '\n') + 1; *l && strncmp(l, "total:", 6) != 0;
       l = strchr(l, '\n') + 1)
    cr_expect(strncmp(l + col, "nccl", 4) == 0, "row out of line: %.*s", (int)(strchr(l, '\n') - l),
              l);
  cr_expect(strstr(sb.data, "1/5 workloads converged"), "%s", sb.data);
  cr_expect(strstr(sb.data, " NCCL, 23 tried "), "the one spelling of a kept NCCL: %s", sb.data);
  acl_sb_free(&sb);
  free(s);
}

/* A workload with a net saving but no NCCL time yet (re-tuning: its new
 * baseline is not measured) does not inflate the share: the percentage is
 * taken over the workloads that have both, and says so. */
Test(report, share_saved_is_over_workloads_with_both)
{
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  s->nworkloads = 2;
  for (int i = 0; i < 2; i++) {
    acl_snap_workload_t *w = &s->workloads[i];
    w->calls = 100;
    w->has_net = true;
    w->time_saved_seconds = 0.01;
    w->phase = i ? ACL_PHASE_RETUNING : ACL_PHASE_CONVERGED;
  }
  s->workloads[0].has_baseline = true;
  s->workloads[0].baseline_seconds = 1e-3; /* 100 ms of NCCL time */
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  NEAR(t.net_saved_seconds, 0.02);
  NEAR(t.nccl_seconds, 0.1);
  NEAR(t.priced_saved_seconds, 0.01);
  NEAR(t.priced_nccl_seconds, 0.1);
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_report_totals_line(&t, &sb);
  cr_assert(acl_sb_ok(&sb));
  cr_expect(strstr(sb.data, "(+10.00 % where both are known)"), "%s", sb.data);
  cr_expect(!strstr(sb.data, "+20.00 %"), "%s", sb.data);
  acl_sb_free(&sb);
  free(s);
}

/* Times in the text are in s or ms only, and the unit is picked after
 * rounding: 0.9996 ms is not "1000 us", 0.99996 s is not "1000.0 ms". */
Test(report, times_in_s_or_ms)
{
  static const struct {
    double cost;
    const char *want;
  } cases[] = {{0.0009996, "exploration cost 1.000 ms;"},
               {0.000037, "exploration cost 0.037 ms;"},
               {0.0123, "exploration cost 12.3 ms;"},
               {0.99996, "exploration cost 1.000 s;"},
               {2.5, "exploration cost 2.500 s;"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    acl_report_totals_t t = {.exploration_cost_seconds = cases[i].cost, .ranks = 1};
    acl_strbuf_t sb;
    acl_sb_init(&sb);
    acl_report_totals_line(&t, &sb);
    cr_assert(acl_sb_ok(&sb));
    cr_expect(strstr(sb.data, cases[i].want), "%g s: %s", cases[i].cost, sb.data);
    cr_expect(!strstr(sb.data, " us"), "%s", sb.data);
    acl_sb_free(&sb);
  }
}

/* A waiting workload's report says how many calls it waits and what they
 * pay for, in the JSON and in the text; one not waiting says neither. */
Test(report, a_wait_says_what_it_pays_for)
{
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  s->nworkloads = 2;
  for (int i = 0; i < 2; i++) {
    acl_snap_workload_t *w = &s->workloads[i];
    w->key.coll = 2;
    w->key.nbytes = 250u << 20;
    w->calls = 183;
    w->current = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  }
  s->workloads[0].phase = ACL_PHASE_WAIT_BUDGET;
  s->workloads[0].budget_wait_calls = 975;
  s->workloads[0].budget_wait_for = ACL_WAIT_FOR_FIRST_EVENTS;
  s->workloads[1].phase = ACL_PHASE_CONVERGED;
  s->workloads[1].budget_wait_for = ACL_WAIT_FOR_CANDIDATE; /* stale: not waiting now */
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_report_json(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  cr_expect(strstr(sb.data, "\"budget_wait_calls\": 975, \"budget_wait_for\": \"first-events\""),
            "%s", sb.data);
  cr_expect(strstr(sb.data, "\"budget_wait_calls\": null, \"budget_wait_for\": null"), "%s",
            sb.data);
  acl_sb_free(&sb);
  acl_sb_init(&sb);
  acl_report_text(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  cr_expect(strstr(sb.data, "needs about 975 more calls before its next measurement is paid for: "
                            "the first profiler events, paid once"),
            "%s", sb.data);
  acl_sb_free(&sb);
  free(s);
}
