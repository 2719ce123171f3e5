/* tuner/search: what the real GPUs asked for (docs/tuner.md):
 * exploration paid from a time budget, candidates NCCL runs identically
 * merged, the sampling rule. The budget runs go through consensus
 * (tuner/drive), as the plugin runs them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tuner/drive.h"
#include "tuner/drive/drive.h"
#include "tuner/search/search.h"

static const acl_wkey_t small_key = {
    .comm_id = 7, .nbytes = 64 << 10, .num_pipe_ops = 1, .coll = 4};

/* A 64 KiB AllReduce on 2 GPUs: NCCL picks RING/LL (10 us); RING/LL with 32
 * channels is 8 % faster; the other pairs are slower. */
static double small_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)user;
  (void)call;
  if (c->algo == ACL_ALGO_NCCL)
    return 10e-6;
  double base = c->proto == 0 ? 10e-6 : c->proto == 1 ? 12e-6 : 16e-6;
  if (c->algo == 0)
    base *= 1.3;
  int ch = c->nchannels > 0 ? c->nchannels : 24;
  return base * (ch >= 32 ? 0.92 : ch >= 24 ? 1.0 : 1.0 + 0.01 * (24 - ch));
}

static void small_cost(float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  int a[] = {0, 0, 0, 1, 1, 1}, p[] = {0, 1, 2, 0, 1, 2};
  float us[] = {13, 15, 21, 10, 12, 16};
  table_only(cost, 6, a, p, us);
}

/* Steps seen per state, and the budget waits that broke a rule (sampled,
 * or ran other than NCCL's choice while measuring). */
typedef struct seen {
  int steps[ACL_PHASE_COUNT];
  int bad_waits;
  uint64_t first_other; /* the first call that ran other than NCCL's choice, 0: none */
} seen_t;

/* What a call of the candidate costs in the test's world. */
typedef double (*world_time_fn)(void *user, const acl_candidate_t *c, uint64_t call);

/* The workload of these tests played through consensus by two ranks, as
 * the plugin plays it (tuner/drive), samples up to 3 calls late. */
static acl_drive_t *small_drive(bool per_call)
{
  acl_drive_params_t dp = {.coll = small_key.coll,
                           .nbytes = small_key.nbytes,
                           .nranks = 2,
                           .max_lag = 4,
                           .skew = 0.3,
                           .per_call = per_call,
                           .seed = 11};
  small_cost(dp.cost);
  char err[256] = "";
  acl_drive_t *d = acl_drive_create(&dp, err, sizeof err);
  cr_assert_not_null(d, "%s", err);
  return d;
}

static void report(acl_drive_t *d, acl_search_report_t *r)
{
  cr_assert_eq(acl_drive_report(d, r), 0, "no search state");
}

/* Runs at least n calls, each costing what world says; returns how many
 * ran something other than NCCL's choice. *worst is the largest overspend
 * (spent - 3 % of the time so far) seen after any step; *seen (may be NULL)
 * counts the states the steps ran in. */
static uint64_t run_world(acl_drive_t *d, uint64_t n, world_time_fn world, double *time,
                          double *worst, seen_t *seen)
{
  uint64_t k = 0, other = 0;
  char err[256];
  while (k < n) {
    acl_drive_step_t st;
    cr_assert_eq(acl_drive_next(d, n - k, &st, err, sizeof err), 0, "%s", err);
    const acl_candidate_t *c = &st.d.cand;
    acl_phase_t ph = (acl_phase_t)st.d.phase;
    if (seen) {
      seen->steps[ph]++;
      if ((ph == ACL_PHASE_WAIT_BUDGET || ph == ACL_PHASE_PAUSED) &&
          (st.d.sample_shift != ACL_SEARCH_SAMPLE_NEVER ||
           (ph == ACL_PHASE_WAIT_BUDGET && c->algo != ACL_ALGO_NCCL)))
        seen->bad_waits++;
    }
    double t = world(NULL, c, k);
    *time += t * st.n;
    if (c->algo != ACL_ALGO_NCCL) {
      if (seen && !seen->first_other)
        seen->first_other = st.call;
      other += st.n;
    }
    if (st.events)
      acl_drive_sample(d, &st, t, 0.0f, NULL);
    k += st.n;
    if (worst) {
      acl_search_report_t r;
      report(d, &r);
      if (r.exploration_spent_seconds - 0.03 * *time > *worst)
        *worst = r.exploration_spent_seconds - 0.03 * *time;
    }
  }
  return other;
}

static uint64_t run_calls_seen(acl_drive_t *d, uint64_t n, double *time, double *worst,
                               seen_t *seen)
{
  return run_world(d, n, small_time, time, worst, seen);
}

static uint64_t run_calls(acl_drive_t *d, uint64_t n, double *time, double *worst)
{
  return run_calls_seen(d, n, time, worst, NULL);
}

/* The driver's skipping of calls without events is exactly what deciding
 * each of them returns: the same run decided call by call ends in the same
 * state, having spent and sampled the same. */
Test(budget, driver_skipping_changes_nothing)
{
  acl_drive_t *a = small_drive(false), *b = small_drive(true);
  double ta = 0.0, tb = 0.0;
  uint64_t oa = run_calls(a, 300000, &ta, NULL), ob = run_calls(b, 300000, &tb, NULL);
  acl_search_report_t ra, rb;
  report(a, &ra);
  report(b, &rb);
  cr_assert(acl_phase_decided(ra.phase), "settles within the run");
  cr_assert_eq(oa, ob);
  cr_assert(fabs(ta - tb) <= 1e-9 * ta, "%.17g vs %.17g s", ta, tb);
  cr_assert_eq(ra.phase, rb.phase);
  cr_assert(acl_candidate_eq(&ra.current, &rb.current));
  cr_assert_eq(ra.samples, rb.samples);
  cr_assert_eq(ra.calls_to_converge, rb.calls_to_converge);
  cr_assert_eq(ra.exploration_spent_seconds, rb.exploration_spent_seconds);
  acl_cons_stats_t sa, sb;
  acl_drive_stats(a, &sa);
  acl_drive_stats(b, &sb);
  cr_assert_gt(sa.samples_fed, 0);
  cr_assert_eq(sa.samples_fed, sb.samples_fed);
  cr_assert_eq(sa.blocks_published, sb.blocks_published);
  acl_drive_destroy(a);
  acl_drive_destroy(b);
}

/* A short run (300 warm-up + 50 timed calls, as nccl-tests or autoccl-bench
 * do) at a small size cannot pay for exploring: it stays on NCCL's choice,
 * and what it did spend (the baseline's profiler events) is within 3 % of
 * the time the workload cost. */
Test(budget, short_run_at_small_size_stays_on_nccl)
{
  acl_drive_t *d = small_drive(false);
  double t = 0.0;
  uint64_t other = run_calls(d, 350, &t, NULL);
  acl_search_report_t r;
  report(d, &r);
  acl_drive_destroy(d);
  cr_assert_eq(other, 0, "%llu calls explored", (unsigned long long)other);
  /* not even the baseline: NCCL's first calls with profiler events cost
   * milliseconds, more than 3 % of 350 calls of 10 us */
  cr_assert_eq(r.exploration_spent_seconds, 0.0);
  cr_assert_leq(r.exploration_spent_seconds, 0.03 * t, "spent %g of %g",
                r.exploration_spent_seconds, t);
}

/* A workload waiting for the budget says about how many more calls it
 * waits (the job report shows it): half of them later it still waits, and
 * within them and one wait block more it has measured NCCL's choice. */
Test(budget, the_wait_for_the_budget_is_counted)
{
  acl_drive_t *d = small_drive(false);
  double t = 0.0;
  run_calls(d, 350, &t, NULL);
  acl_search_report_t r;
  report(d, &r);
  cr_assert_eq(r.phase, ACL_PHASE_WAIT_BUDGET);
  uint64_t n = r.budget_wait_calls;
  cr_assert_gt(n, 1000, "%llu calls: 6 ms of first events at 3 %% of 10 us calls take ~20,000",
               (unsigned long long)n);
  run_calls(d, n / 2, &t, NULL);
  report(d, &r);
  cr_assert_eq(r.phase, ACL_PHASE_WAIT_BUDGET, "left after half the calls it said (%llu)",
               (unsigned long long)n);
  cr_assert_gt(r.budget_wait_calls, 0);
  run_calls(d, n - n / 2 + 8192, &t, NULL);
  report(d, &r);
  acl_drive_destroy(d);
  cr_assert_gt(r.baseline_seconds, 0.0, "still no NCCL time %llu calls after it said %llu",
               (unsigned long long)(n + 8192), (unsigned long long)n);
}

/* A long run (2 s of 10 us calls) explores within the budget, finds the
 * faster point and validates it; the spend never exceeds 3 % of the time so
 * far by more than one step's misestimate. */
Test(budget, long_run_explores_within_budget)
{
  acl_drive_t *d = small_drive(false);
  double t = 0.0, worst = 0.0;
  run_calls(d, 200000, &t, &worst);
  acl_search_report_t r;
  report(d, &r);
  acl_drive_destroy(d);
  cr_assert(acl_phase_decided(r.phase));
  cr_assert_eq(r.current.algo, 1);
  cr_assert_eq(r.current.proto, 0);
  cr_assert_geq(r.current.nchannels, 32);
  cr_assert_gt(r.exploration_spent_seconds, 0.0);
  cr_assert_leq(worst, 100e-6, "overspent by %g s", worst);
}

/* The sampling rule: every call while measuring, none while waiting for
 * the budget, about one per ACL_SEARCH_SAMPLE_PERIOD_S once settled. */
Test(budget, sampling_rule)
{
  acl_search_t s;
  acl_search_params_t p;
  acl_search_params_default(&p);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  small_cost(cost);
  acl_search_init(&s, &p, &small_key, cost);
  acl_candidate_t c;
  uint32_t len;
  acl_search_next(&s, &c, &len);
  cr_assert_eq(acl_search_sample_shift(&s), ACL_SEARCH_SAMPLE_NEVER, "warm-up needs no samples");
  /* the search alone (its internals are read below), by the one rule */
  for (uint64_t k = 0; k < 2000000;) {
    int id = acl_search_next(&s, &c, &len);
    uint8_t sh = acl_search_sample_shift(&s);
    for (uint32_t j = 0; j < len; j++, k++)
      if (acl_search_sampled(sh, k))
        acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id,
                                                   .seconds = small_time(NULL, &c, k),
                                                   .overlap = 0.0f});
  }
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert(acl_phase_decided(r.phase));
  cr_assert_eq(r.validating, 0);
  acl_search_next(&s, &c, &len);
  uint8_t shift = acl_search_sample_shift(&s);
  double period = s.drift.ref_seconds * (double)(1u << shift);
  cr_assert(period <= ACL_SEARCH_SAMPLE_PERIOD_S && 2.0 * period > ACL_SEARCH_SAMPLE_PERIOD_S,
            "shift %u: one sample per %g s", shift, period);
}

/* NCCL built 24 channels and clamps LL to 16 at this size: requests above
 * run as the clamp. After the first clamped run is seen, grid points that
 * would run identically take their twin's verdict and cost no calls. */
static int ran_channels(const acl_candidate_t *c)
{
  int cap = c->proto == 0 ? 16 : 24;
  return c->nchannels > cap ? cap : c->nchannels;
}

static double clamp_time(const acl_candidate_t *c)
{
  if (c->algo == ACL_ALGO_NCCL)
    return 10e-6;
  acl_candidate_t r = *c;
  r.nchannels = (int16_t)ran_channels(c);
  return small_time(NULL, &r, 0);
}

Test(budget, clamped_candidates_are_merged)
{
  acl_search_t s;
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.budget = 1e9; /* the descent alone */
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  small_cost(cost);
  acl_search_init(&s, &p, &small_key, cost);
  acl_search_observe(&s, &(acl_search_obs_t){.ran_algo = -1, .ran_proto = -1, .ran_nch = 16});
  /* executed configs that got samples, per subspace: (proto, channels) */
  int sampled[ACL_NUM_ALGO][ACL_NUM_PROTO][65];
  memset(sampled, 0, sizeof sampled);
  uint64_t k = 0;
  while (k < 200000 && !acl_phase_decided(acl_search_phase(&s))) {
    acl_candidate_t c;
    uint32_t len = 0;
    int id = acl_search_next(&s, &c, &len);
    for (uint32_t j = 0; j < len; j++, k++) {
      if (c.algo != ACL_ALGO_NCCL) {
        int ran = ran_channels(&c);
        if (ran < c.nchannels)
          acl_search_observe(
              &s,
              &(acl_search_obs_t){.cand_id = id, .ran_algo = -1, .ran_proto = -1, .ran_nch = ran});
        sampled[c.algo][c.proto][ran] |= 1 << (id & 15);
      }
      acl_search_observe(
          &s, &(acl_search_obs_t){.cand_id = id, .seconds = clamp_time(&c), .overlap = 0.0f});
    }
  }
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert(acl_phase_decided(r.phase));
  cr_assert_gt(r.merged, 0u, "nothing merged");
  /* At most one candidate per executed (algo, proto, channels) beyond the
   * first clamped one ran: count executed configs that two ids ran. */
  int dup = 0;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int q = 0; q < ACL_NUM_PROTO; q++)
      for (int n = 0; n <= 64; n++)
        if (__builtin_popcount((unsigned)sampled[a][q][n]) > 2)
          dup++;
  cr_assert_eq(dup, 0, "%d executed configs were explored by three or more candidates", dup);
}

/* NCCL does not always run the argmin of the cost table the tuner sees (2xH200
 * AllReduce 256 KiB: the table's minimum is Tree/LL, NCCL ran Ring/LL/22).
 * Told what NCCL ran, the search treats that pair as NCCL's own: Tree/LL is
 * measured, never credited with the baseline's samples. */
Test(budget, nccl_pair_is_what_nccl_ran)
{
  acl_search_t s;
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.budget = 1e9;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  int a[] = {0, 1, 1}, q[] = {0, 0, 2};
  float us[] = {9, 10, 16}; /* the table says TREE/LL */
  table_only(cost, 3, a, q, us);
  acl_search_init(&s, &p, &small_key, cost);
  acl_search_observe(
      &s,
      &(acl_search_obs_t){.ran_algo = 1, .ran_proto = 0, .ran_nch = 22}); /* NCCL ran RING/LL/22 */
  uint64_t k = 0;
  while (k < 200000 && !acl_phase_decided(acl_search_phase(&s))) {
    acl_candidate_t c;
    uint32_t len = 0;
    int id = acl_search_next(&s, &c, &len);
    /* truth: RING/LL 5 us (NCCL's choice), TREE/LL 12 us */
    double t = c.algo == ACL_ALGO_NCCL || c.algo == 1 ? 5e-6 : c.proto == 0 ? 12e-6 : 20e-6;
    if (c.algo >= 0 && c.nchannels > 22) /* NCCL built 24, LL runs at most 22 here */
      acl_search_observe(
          &s, &(acl_search_obs_t){.cand_id = id, .ran_algo = -1, .ran_proto = -1, .ran_nch = 22});
    for (uint32_t j = 0; j < len; j++, k++)
      acl_search_observe(&s, &(acl_search_obs_t){.cand_id = id, .seconds = t, .overlap = 0.0f});
  }
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert(acl_phase_decided(r.phase));
  cr_assert_neq(r.current.algo, 0, "converged on TREE, 2.4x slower than what NCCL ran");
  for (int i = 1; i < s.ncands; i++)
    if (s.cands[i].cand.algo == 0 && s.cands[i].judged)
      cr_assert_gt(s.cands[i].robust_seconds, 10e-6, "TREE credited with the baseline's samples");
}

/* The state the search reports is the real one: at the default budget a
 * 64 KiB workload waits for the budget (NCCL's choice runs unsampled) before
 * it measures, validates or refines; each wait lasts one block; the
 * transition table covers every step (an event it lacks would turn the
 * search off). Through consensus, as the plugin runs it. */
Test(budget, waiting_states_are_reported)
{
  acl_drive_t *d = small_drive(false);
  seen_t seen = {0};
  double time = 0.0;
  run_calls_seen(d, 400000, &time, NULL, &seen);
  acl_drive_destroy(d);
  cr_assert_eq(seen.bad_waits, 0, "a budget wait sampled, or ran other than NCCL's choice");
  cr_assert_eq(seen.steps[ACL_PHASE_DISABLED], 0, "a transition missing from the table");
  cr_assert_gt(seen.steps[ACL_PHASE_WAIT_BUDGET], 0, "never waited for the budget");
  cr_assert_gt(seen.steps[ACL_PHASE_EXPLORING], 0);
  cr_assert_gt(seen.steps[ACL_PHASE_VALIDATING] + seen.steps[ACL_PHASE_REFINING], 0);
  cr_assert_gt(seen.steps[ACL_PHASE_CONVERGED], 0, "never settled");
  cr_assert_str_eq(acl_phase_name(ACL_PHASE_WAIT_BUDGET), "waiting-budget");
  cr_assert_eq(acl_phase_parse("paused"), ACL_PHASE_PAUSED);
}

/* Consensus's starvation back-off: a candidate repeated without new samples
 * (a profiler that never delivers) gets ever longer blocks, so ranks run
 * ahead without running the block ring out... */
Test(budget, starved_blocks_grow)
{
  acl_drive_t *d = small_drive(false);
  char err[256];
  uint64_t k = 0;
  while (k < 20000) {
    acl_drive_step_t st;
    cr_assert_eq(acl_drive_next(d, 20000 - k, &st, err, sizeof err), 0, "%s", err);
    k += st.n; /* no sample ever arrives */
  }
  acl_cons_stats_t cs;
  acl_drive_stats(d, &cs);
  acl_drive_destroy(d);
  /* waits of 16 calls would publish over a thousand blocks */
  cr_assert_leq(cs.blocks_published, 64, "%llu blocks", (unsigned long long)cs.blocks_published);
}

/* ... but a block that wanted no samples (a budget wait) starves nothing:
 * the baseline measured after a long wait is measured in a few calls, not
 * in twice the wait's length with profiler events on every call. */
Test(budget, no_backoff_after_an_unsampled_wait)
{
  acl_drive_t *d = small_drive(false);
  char err[256];
  uint64_t k = 0, run = 0, longest = 0;
  bool waited = false;
  while (k < 100000) {
    acl_drive_step_t st;
    cr_assert_eq(acl_drive_next(d, 100000 - k, &st, err, sizeof err), 0, "%s", err);
    if (st.d.phase == ACL_PHASE_WAIT_BUDGET)
      waited = true;
    run = st.d.phase == ACL_PHASE_BASELINE ? run + st.n : 0;
    if (run > longest)
      longest = run;
    if (st.events)
      acl_drive_sample(d, &st, small_time(NULL, &st.d.cand, k), 0.0f, NULL);
    k += st.n;
  }
  acl_drive_destroy(d);
  cr_assert(waited, "the baseline never waited for the budget");
  cr_assert_gt(longest, 0, "never measured the baseline");
  cr_assert_leq(longest, 40, "the baseline ran %llu calls", (unsigned long long)longest);
}

/* CUPTI's buffers (tuner/drive's buffer): each rank's samples arrive in
 * batches, the two ranks' half a buffer apart, so one call's reports meet
 * in consensus only when the aggregation ring spans that (it does not:
 * partial and late samples); without buffers every call's reports meet. */
Test(budget, buffered_samples_arrive_in_batches)
{
  acl_cons_stats_t st[2];
  for (int b = 0; b < 2; b++) {
    acl_drive_params_t dp = {.coll = small_key.coll,
                             .nbytes = small_key.nbytes,
                             .nranks = 2,
                             .max_lag = 4,
                             .skew = 0.3,
                             .buffer = b ? 1024 : 0,
                             .seed = 11};
    small_cost(dp.cost);
    char err[256] = "";
    acl_drive_t *d = acl_drive_create(&dp, err, sizeof err);
    cr_assert_not_null(d, "%s", err);
    double time = 0, worst = 0;
    run_calls_seen(d, 200000, &time, &worst, NULL);
    acl_drive_stats(d, &st[b]);
    acl_drive_destroy(d);
  }
  cr_assert_gt(st[0].samples_fed, 100, "%llu fed", (unsigned long long)st[0].samples_fed);
  cr_assert_eq(st[0].samples_partial + st[0].samples_late, 0, "reports met without buffers");
  cr_assert_gt(st[1].samples_fed, 100, "%llu fed with buffers", (unsigned long long)st[1].samples_fed);
  cr_assert_gt(st[1].samples_partial, 0, "a buffer's worth apart, yet every call paired");
  cr_assert_gt(st[1].samples_late, 0, "the trailing rank's samples are never late");
  acl_drive_params_t bad = {.coll = small_key.coll, .nbytes = 1, .nranks = 2, .buffer = -1};
  char err[256] = "";
  cr_assert_null(acl_drive_create(&bad, err, sizeof err));
  cr_assert(strstr(err, "buffer"), "%s", err);
}

/* A drive for dp whose cost table prices Tree and Ring, each with LL,
 * LL128 and Simple, at us (in that order). */
static acl_drive_t *table_drive(acl_drive_params_t *dp, const float us[6])
{
  int a[] = {0, 0, 0, 1, 1, 1}, p[] = {0, 1, 2, 0, 1, 2};
  table_only(dp->cost, 6, a, p, us);
  char err[256] = "";
  acl_drive_t *d = acl_drive_create(dp, err, sizeof err);
  cr_assert_not_null(d, "%s", err);
  return d;
}

/* PyTorch FSDP's 96 MiB AllGather on one H200 (two ranks, NCCL 2.30.7,
 * 2026-12-02): NCCL's Ring/Simple takes 222 us, its cost table says 41 us,
 * and CUPTI's windows (100 ms every 5 s: about 20 calls in 1,024) sample it
 * whatever the search asks. Ring/Simple at 32 channels is 10 % faster. */
static double fsdp_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)user;
  (void)call;
  if (c->algo == ACL_ALGO_NCCL)
    return 222e-6;
  double t = c->proto == 2 ? 222e-6 : c->proto == 1 ? 300e-6 : 700e-6;
  if (c->algo == 0)
    t *= 1.2;
  int ch = c->nchannels > 0 ? c->nchannels : 64;
  return t * (ch == 32 ? 0.9 : 1.0);
}

/* With the cost table's time (41 us) the first wait was planned at ~5,000
 * calls in one block, the whole 300-step run, though the windows measured
 * NCCL's choice within it: the job saw every workload `waiting-budget`. A
 * wait planned on the prior is looked at again once samples can have
 * corrected it, and the search explores within 30 % of the run, within its
 * budget. */
Test(budget, a_wait_on_the_cost_table_is_revised_by_measured_samples)
{
  acl_drive_params_t dp = {.coll = 0, /* AllGather */
                           .nbytes = 96u << 20,
                           .nranks = 2,
                           .max_lag = 4,
                           .skew = 0.2,
                           .window_calls = 20,
                           .window_period = 1024,
                           .seed = 5};
  acl_drive_t *d = table_drive(&dp, (const float[6]){140, 70, 50, 130, 60, 41});
  double time = 0.0, worst = 0.0;
  seen_t seen = {0};
  run_world(d, 5000, fsdp_time, &time, &worst, &seen);
  uint64_t first_other = seen.first_other;
  acl_search_report_t r;
  report(d, &r);
  acl_drive_destroy(d);
  cr_assert_gt(r.baseline_seconds, 200e-6, "NCCL's time %g s: measured, not the prior",
               r.baseline_seconds);
  cr_assert(first_other > 0 && first_other <= 1500,
            "the first candidate ran at call %llu of 5,000 (state %d, waiting %llu more)",
            (unsigned long long)first_other, r.phase, (unsigned long long)r.budget_wait_calls);
  cr_assert_leq(worst, 1e-3, "overspent by %g s", worst);
}

/* 4 MiB AllReduce, one H100, two ranks (2026-12-06): NCCL's Ring/Simple
 * takes 58 us (the cost table here says 8 us), Ring/LL128 at 32 channels
 * 27 us, and a config's first call 5 ms. Then LL128 takes 3x as long (what
 * changed does not matter here): the decision drifts and the search
 * re-tunes. */
static bool g_regime_changed;

static double regime_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)user;
  (void)call;
  static int seen[64], nseen;
  if (c->algo == ACL_ALGO_NCCL)
    return 58e-6;
  int key = (c->algo * 4 + c->proto) * 256 + c->nchannels, i = 0;
  while (i < nseen && seen[i] != key)
    i++;
  if (i == nseen && nseen < 64) {
    seen[nseen++] = key;
    return 5e-3; /* a config's first call: its set-up (NCCL's first calls of a size: 5-11 ms) */
  }
  double t = c->proto == 2 ? 31e-6 : c->proto == 1 ? 27e-6 : 36e-6;
  if (c->proto == 1 && g_regime_changed)
    t *= 3.0;
  if (c->algo == 0)
    t *= 1.5;
  int ch = c->nchannels > 0 ? c->nchannels : 64;
  return t * (ch == 32 ? 1.0 : ch > 32 ? 1.1 : 1.0 + 0.03 * (32 - ch));
}

/* A re-tune forgot NCCL's measured time (and paid its configs' set-up
 * again): the budget's time so far, every call of the run, was priced on
 * the cost table again (7x low here), far below what exploring had already
 * spent, and the re-tune waited for the budget the rest of the run (on the
 * GPU: 38,504 more calls, while the decision it left ran 2.3x faster than
 * NCCL's choice). */
Test(budget, a_retune_keeps_the_measured_time)
{
  acl_drive_params_t dp = {
      .coll = 4, .nbytes = 4u << 20, .nranks = 2, .max_lag = 4, .skew = 0.2, .seed = 3};
  acl_drive_t *d = table_drive(&dp, (const float[6]){16, 13, 11, 10, 9, 8});
  double time = 0.0;
  run_world(d, 30000, regime_time, &time, NULL, NULL);
  acl_search_report_t r;
  report(d, &r);
  cr_assert(acl_phase_decided(r.phase) && r.current.proto == 1, "state %d, proto %d", r.phase,
            r.current.proto);
  /* the regime changes: a re-tune, then exploring again within its budget */
  g_regime_changed = true;
  double worst = 0.0;
  run_world(d, 30000, regime_time, &time, &worst, NULL);
  g_regime_changed = false;
  report(d, &r);
  acl_drive_destroy(d);
  cr_assert_geq(r.retunes, 1);
  cr_assert(acl_phase_decided(r.phase) && r.current.proto != 1,
            "30,000 calls after the change: state %d, proto %d, waiting %llu more calls", r.phase,
            r.current.proto, (unsigned long long)r.budget_wait_calls);
  cr_assert_leq(worst, 1e-3, "overspent by %g s", worst);
}

/* A search of FSDP's 250 MiB AllGather (the table's 50 us a call) stepped
 * until it waits for the budget; the wait block's length. */
static uint32_t wait_for_budget(acl_search_t *s, int events_per_comm)
{
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.events_per_comm = events_per_comm;
  const acl_wkey_t key = {.comm_id = 9, .nbytes = 250u << 20, .num_pipe_ops = 1, .coll = 0};
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  int a[] = {0, 0, 0, 1, 1, 1}, pr[] = {0, 1, 2, 0, 1, 2};
  table_only(cost, 6, a, pr, (const float[6]){200, 90, 60, 180, 80, 50});
  acl_search_init(s, &p, &key, cost);
  acl_candidate_t c;
  uint32_t len = 0;
  for (int i = 0; i < 64 && acl_search_phase(s) != ACL_PHASE_WAIT_BUDGET; i++)
    acl_search_next(s, &c, &len);
  cr_assert_eq(acl_search_phase(s), ACL_PHASE_WAIT_BUDGET, "state %d", acl_search_phase(s));
  return len;
}

/* FSDP's 250 MiB AllGather on one H100 (2026-12-06): once per step, 0.5 ms
 * a call, so 315 calls earn 4.7 ms of budget, less than its baseline's
 * first profiler events (here the table's 50 us: thousands of calls). An
 * offer from the communicator (loan_offer) that covers all the baseline
 * lacks starts it at once, and the workload says what it borrowed; one
 * that covers only part changes nothing; a search that has not converged
 * has nothing to lend. */
Test(budget, a_baseline_borrows_all_it_lacks_or_nothing)
{
  acl_search_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  wait_for_budget(s, 0);
  acl_candidate_t c;
  uint32_t len = 0;
  cr_assert(acl_search_wants_loan(s));
  cr_assert_eq(acl_search_lendable(s, false), 0.0, "a waiting search lends nothing");
  cr_assert_eq(acl_search_lendable(s, true), 0.0,
               "nor for first events where they cost once per workload");

  acl_search_observe(s, &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .loan_offer = 1e-4});
  acl_search_next(s, &c, &len); /* far short of the first events' 6 ms */
  cr_assert_eq(acl_search_phase(s), ACL_PHASE_WAIT_BUDGET);
  cr_assert_eq(acl_search_loan_taken(s), 0.0);

  acl_search_observe(s, &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .loan_offer = 1.0});
  acl_search_next(s, &c, &len);
  double got = acl_search_loan_taken(s);
  cr_assert_eq(acl_search_phase(s), ACL_PHASE_BASELINE, "state %d", acl_search_phase(s));
  cr_assert_eq(c.algo, ACL_ALGO_NCCL);
  cr_assert_lt(acl_search_sample_shift(s), ACL_SEARCH_SAMPLE_NEVER, "the baseline is sampled");
  cr_assert(got > 0.0 && got < 7e-3, "borrowed %g s: what the baseline lacked, no more", got);
  cr_assert_not(acl_search_wants_loan(s));
  acl_search_next(s, &c, &len);
  cr_assert_eq(acl_search_loan_taken(s), 0.0, "the offer lasted one block");
  free(s);
}

/* NCCL 2.30 (params.events_per_comm): the first profiler events cost once
 * per communicator. A workload that owes them looks at its wait again
 * within 16 calls (not 256); once a neighbour had them charged
 * (events_nearby) its baseline needs only its own events, which a few
 * calls pay; until then, a neighbour that has not begun its baseline lends
 * for them, and lends nothing where the events cost per workload. */
Test(budget, first_events_paid_once_per_communicator)
{
  acl_search_t *s = calloc(2, sizeof(*s));
  cr_assert_not_null(s);
  uint32_t len = wait_for_budget(&s[0], 1);
  acl_candidate_t c;
  cr_assert_leq(len, 16u, "a wait owing the communicator's first events: %u calls", len);
  cr_assert_gt(acl_search_lendable(&s[0], true), 0.0, "not begun: it lends for first events");
  cr_assert_eq(acl_search_lendable(&s[0], false), 0.0, "but for nothing else");
  /* a neighbour had its first events charged: a few calls pay the baseline */
  acl_search_observe(&s[0], &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .events_nearby = 1});
  cr_assert(acl_search_events_charged(&s[0]));
  for (int i = 0; i < 8 && acl_search_phase(&s[0]) == ACL_PHASE_WAIT_BUDGET; i++)
    acl_search_next(&s[0], &c, &len);
  cr_assert_eq(acl_search_phase(&s[0]), ACL_PHASE_BASELINE, "state %d", acl_search_phase(&s[0]));
  cr_assert_lt(acl_search_sample_shift(&s[0]), ACL_SEARCH_SAMPLE_NEVER, "the baseline is sampled");
  /* per workload (NCCL 2.28): a neighbour's events change nothing, a wait
   * on the table is 256 calls, and a search not begun lends nothing */
  cr_assert_eq(wait_for_budget(&s[1], 0), 256u);
  acl_search_observe(&s[1], &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .events_nearby = 1});
  cr_assert_not(acl_search_events_charged(&s[1]));
  cr_assert_eq(acl_search_lendable(&s[1], true), 0.0);
  free(s);
}

/* On the GPU CUPTI's windows measure NCCL's choice while a workload waits,
 * without NCCL's events: FSDP's 250 MiB AllGather on one H100 had 15
 * samples and still owed the communicator's first events, planned its
 * whole deficit as one wait from its call 57 (past the run's 1,015 calls)
 * and missed its neighbours' paying them six calls later. Measured or not, a wait
 * owing them is looked at again within 16 calls, then ever later, and a
 * neighbour's charge starts the workload at its next look. */
Test(budget, a_measured_baseline_owing_first_events_looks_again_soon)
{
  acl_search_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  uint32_t len = wait_for_budget(s, 1);
  for (uint64_t call = 20; call < 35; call++)
    acl_search_observe(s, &(acl_search_obs_t){.cand_id = ACL_SEARCH_CAND_NCCL,
                                              .seconds = 5.3e-4,
                                              .overlap = 0.5f,
                                              .call = call});
  cr_assert_gt(s->cands[0].nsamples, 0);
  acl_candidate_t c;
  acl_search_next(s, &c, &len);
  cr_assert_eq(acl_search_phase(s), ACL_PHASE_WAIT_BUDGET, "state %d", acl_search_phase(s));
  cr_assert_leq(len, 64u, "a measured wait owing first events: %u calls", len);
  acl_search_observe(s, &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .events_nearby = 1});
  acl_search_next(s, &c, &len);
  cr_assert_neq(acl_search_phase(s), ACL_PHASE_WAIT_BUDGET,
                "its first events paid by a neighbour: it begins (a %u-call wait)", len);
  free(s);
}

/* FSDP on one H100 (2026-12-07): the communicator's pooled budget covered
 * its first events near step 150, and with waits doubling from 16 every
 * workload's next look came at step 256 (the 250 MiB ones, once a step,
 * at 505 after missing 249 by a few calls). A wait owing them grows by a
 * quarter of the calls so far at most: a neighbour's charge at call 300
 * starts the workload within a quarter more. */
Test(budget, a_wait_owing_first_events_looks_again_within_a_quarter)
{
  acl_search_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  uint64_t call = 9 + wait_for_budget(s, 1);
  acl_candidate_t c;
  uint32_t len = 0;
  while (call < 300) {
    acl_search_next(s, &c, &len);
    cr_assert_eq(acl_search_phase(s), ACL_PHASE_WAIT_BUDGET, "state %d", acl_search_phase(s));
    cr_assert_leq(len, 16u + call / 4, "a %u-call wait at call %llu", len,
                  (unsigned long long)call);
    call += len;
  }
  acl_search_observe(s, &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .events_nearby = 1});
  acl_search_next(s, &c, &len);
  cr_assert_neq(acl_search_phase(s), ACL_PHASE_WAIT_BUDGET,
                "paid by a neighbour before call %llu: it begins there", (unsigned long long)call);
  cr_assert_leq(call, 300u + 300u / 4u + 16u, "its first look after call 300 came at %llu",
                (unsigned long long)call);
  free(s);
}

/* A wait says what it pays for (the job report's budget_wait_for): FSDP's
 * 250 MiB AllGather on one H100 reported ~900 calls to go at 30 % of its
 * steps, and the number alone did not say it waited for its communicator's
 * first profiler events. Owing them, that is its reason; paid by a
 * neighbour, the baseline runs, and the wait before the next candidate's
 * first look (priced by the cost table as slower) names the candidate. */
Test(budget, a_wait_says_what_it_pays_for)
{
  acl_search_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  uint64_t call = 9 + wait_for_budget(s, 1);
  acl_search_report_t r;
  acl_search_report(s, &r);
  cr_assert_gt(r.budget_wait_calls, 0);
  cr_assert_eq(r.budget_wait_for, ACL_WAIT_FOR_FIRST_EVENTS, "waits for %d", r.budget_wait_for);
  cr_assert_str_eq(acl_wait_for_name(r.budget_wait_for), "first-events");

  acl_search_observe(s, &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .events_nearby = 1});
  acl_candidate_t c;
  uint32_t len = 0;
  int waited_for = ACL_WAIT_FOR_NONE;
  for (int i = 0; i < 256 && waited_for == ACL_WAIT_FOR_NONE; i++) {
    int id = acl_search_next(s, &c, &len);
    if (acl_search_phase(s) == ACL_PHASE_WAIT_BUDGET) {
      acl_search_report(s, &r);
      cr_assert_gt(r.budget_wait_calls, 0);
      waited_for = r.budget_wait_for;
    } else if (id >= 0 && acl_search_sample_shift(s) < ACL_SEARCH_SAMPLE_NEVER) {
      for (uint32_t k = 0; k < len; k++)
        acl_search_observe(s, &(acl_search_obs_t){.cand_id = id,
                                                  .seconds = id == 0 ? 5.0e-4 : 5.5e-4,
                                                  .overlap = 0.5f,
                                                  .call = call + k + 1});
    }
    call += len;
  }
  cr_assert(s->cands[0].judged, "the baseline was measured");
  cr_assert_eq(waited_for, ACL_WAIT_FOR_CANDIDATE, "its next wait was for %s",
               acl_wait_for_name(waited_for) ? acl_wait_for_name(waited_for) : "nothing");
  cr_assert_null(acl_wait_for_name(ACL_WAIT_FOR_NONE));
  free(s);
}
