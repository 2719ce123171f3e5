/* Consensus prices a workload that has no sample of its own at the cost
 * table's error a neighbour of its communicator measured: on one H200 the
 * table was 5x low at 16-256 MiB, and a 64 MiB AllReduce waited 3,600 calls
 * for an exploration budget that its real time paid in about 950. A
 * converged neighbour does more: it pays the baseline from its unspent
 * budget. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "tuner/search/search.h"

/* The world: every call takes truth x the table's time for NCCL's choice
 * (5 at 16-256 MiB on one H200; about 1/10 at 64 KiB on one H100, where
 * a ReduceScatter's kernel took 2 us). */
typedef struct world {
  double truth;
  uint64_t a_bytes, b_bytes;
  /* A's other candidates' samples arrive: A converges, and lends B its
   * unspent budget (docs/tuner.md, "A baseline paid by its neighbours").
   * Without them A keeps exploring and lends nothing, and only its
   * measured error prices B's wait. */
  bool a_converges;
} world_t;

typedef struct played {
  uint64_t first_sampled; /* the first call of B with profiler events */
  uint64_t sampled_a;     /* samples fed to A */
} played_t;

/* Plays `a_calls` calls of an AllReduce of w->a_bytes (A), feeding its
 * sampled calls, then calls of one of w->b_bytes (B) of the same
 * communicator until one carries profiler events (at most max_b). */
static played_t play(const world_t *w, uint64_t a_calls, uint64_t max_b)
{
  th_rank_t r;
  th_params(&r, th_comm_id(a_calls ? 1 : 2), 0, 1, 1, NULL);
  r.cfg.explore_budget_pct = ACL_CONFIG_BUDGET_PCT_DEFAULT; /* the budget is what is tested */
  char err[256] = "";
  acl_cons_t *c = acl_cons_create(&r.p, err, sizeof err);
  cr_assert_not_null(c, "%s", err);
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  double table_s = 10e-6; /* th_cost's minimum: NCCL's choice */
  played_t out = {0};
  acl_wkey_t ka = th_key(r.p.comm_id, 4, w->a_bytes), kb = th_key(r.p.comm_id, 4, w->b_bytes);
  for (uint64_t k = 0; k < a_calls; k++) {
    acl_decision_t d;
    cr_assert_eq(acl_cons_decide(c, &ka, cost, &d, err, sizeof err), 0, "%s", err);
    if (!acl_search_sampled(d.sample_shift, d.call_idx) ||
        (!w->a_converges && d.cand.algo != ACL_ALGO_NCCL))
      continue;
    acl_cons_observe(c, &(acl_cons_obs_t){.widx = d.widx,
                                          .call_idx = d.call_idx,
                                          .cand_id = d.cand_id,
                                          .seconds = w->truth * table_s *
                                                     (d.cand.algo == ACL_ALGO_NCCL ? 1.0 : 1.1),
                                          .overlap = -1.0f,
                                          .ran_algo = -1,
                                          .ran_proto = -1});
    out.sampled_a++;
  }
  out.first_sampled = max_b;
  for (uint64_t k = 0; k < max_b; k++) {
    acl_decision_t d;
    cr_assert_eq(acl_cons_decide(c, &kb, cost, &d, err, sizeof err), 0, "%s", err);
    if (acl_search_sampled(d.sample_shift, d.call_idx)) {
      out.first_sampled = k;
      break;
    }
  }
  acl_cons_destroy(c);
  return out;
}

/* B played alone, and after A's calls (at least min_a samples of A fed). */
static void alone_and_after(const world_t *w, uint64_t a_calls, uint64_t max_b, uint64_t min_a,
                            played_t *alone, played_t *after)
{
  *alone = play(w, 0, max_b);
  *after = play(w, a_calls, max_b);
  cr_log_info("alone %llu, after %llu", (unsigned long long)alone->first_sampled,
              (unsigned long long)after->first_sampled);
  cr_assert_geq(after->sampled_a, min_a, "A was never measured (%llu samples)",
                (unsigned long long)after->sampled_a);
}

Test(prior, a_neighbours_measured_table_error_shortens_the_budget_wait, .timeout = 60)
{
  /* 6 ms of first events at 3 % of the time: 200 ms of collective time,
   * 4,000 calls of 50 us; the table's 10 us say 20,000 */
  const world_t w = {5.0, 16u << 20, 64u << 20, false};
  played_t alone, after;
  /* A played just past its baseline (its own wait ends near call 20,000):
   * its error is known and, still exploring, it lends nothing */
  alone_and_after(&w, 21000, 60000, 3, &alone, &after);
  cr_assert_gt(alone.first_sampled, 16000, "alone, B waited %llu calls (the table says 20,000)",
               (unsigned long long)alone.first_sampled);
  cr_assert(after.first_sampled >= 3500 && after.first_sampled <= 4600,
            "after A, B waited %llu calls (A's 5x error says 4,000; alone %llu)",
            (unsigned long long)after.first_sampled, (unsigned long long)alone.first_sampled);
}

/* A neighbour that found the table 10x high (a small size whose kernel is
 * a few microseconds) does not lengthen the next workload's wait: that
 * wait would be priced again only by samples of its own, which a process
 * without CUPTI's windows never gets while waiting (one H100, one process,
 * ReduceScatter 256 KiB-256 MiB: waiting through every 2 s run). */
Test(prior, a_neighbours_overrated_table_never_lengthens_the_wait, .timeout = 60)
{
  const world_t w = {0.1, 64u << 10, 256u << 10, false};
  played_t alone, after;
  /* three samples make a workload's error known (its baseline's) */
  alone_and_after(&w, 60000, 200000, 3, &alone, &after);
  cr_assert_lt(alone.first_sampled, 200000, "alone, B never sampled");
  cr_assert_leq(after.first_sampled, alone.first_sampled + alone.first_sampled / 10,
                "after A, B waited %llu calls, alone %llu", (unsigned long long)after.first_sampled,
                (unsigned long long)alone.first_sampled);
}

/* The same two workloads once A has converged: B's baseline is paid by A's
 * unspent budget as soon as B's time is 1 % of the communicator's (A's
 * 60,000 calls of 50 us against B's 50 us a call: ~600 calls), instead of
 * after ~4,000 calls of its own budget (on one H100 FSDP's 250 MiB
 * AllGather, once per step, never got a sample in 315 calls otherwise). */
Test(prior, a_converged_neighbour_pays_the_baseline, .timeout = 60)
{
  const world_t w = {5.0, 16u << 20, 64u << 20, true};
  played_t alone, after;
  alone_and_after(&w, 60000, 60000, 11, &alone, &after);
  cr_assert_gt(alone.first_sampled, 16000, "alone, B waited %llu calls",
               (unsigned long long)alone.first_sampled);
  cr_assert(after.first_sampled >= 550 && after.first_sampled <= 1100,
            "after A converged, B waited %llu calls (1 %% of the communicator's time: ~600)",
            (unsigned long long)after.first_sampled);
}

/* A communicator of one rank whose first profiler events cost once
 * (NCCL 2.30), at the default budget, and the cost table th_cost gives. */
static acl_cons_t *events_comm(th_rank_t *r, int id, float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  th_params(r, th_comm_id(id), 0, 1, 1, NULL);
  r->cfg.explore_budget_pct = ACL_CONFIG_BUDGET_PCT_DEFAULT;
  r->p.events_per_comm = 1;
  char err[256] = "";
  acl_cons_t *c = acl_cons_create(&r->p, err, sizeof err);
  cr_assert_not_null(c, "%s", err);
  th_cost(cost, -1);
  return c;
}

/* NCCL 2.30 charges a communicator's first profiler events (30 ms) once,
 * and its workloads that have not begun pay them together: each one's wait
 * is the pool's, not its own alone. DDP's two 250 MiB AllReduces (once a
 * step) on one H100 each said 700-1,000 calls at step 93 of 300, and the
 * pool paid them within about 50. Four workloads called once a step, each
 * 10 us on the table at 3 %: alone 100,000 calls, pooled 25,000. */
#define POOL_N 4
Test(prior, a_wait_for_the_communicators_first_events_is_the_pools, .timeout = 60)
{
  th_rank_t r;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  acl_cons_t *c = events_comm(&r, 3, cost);
  char err[256] = "";
  acl_wkey_t k[POOL_N];
  uint32_t widx[POOL_N];
  uint64_t said[POOL_N] = {0}, began[POOL_N] = {0};
  for (int i = 0; i < POOL_N; i++)
    k[i] = th_key(r.p.comm_id, 4, (uint64_t)(i + 1) << 26);
  const uint64_t read_at = 10000, max_steps = 120000;
  int n_began = 0;
  for (uint64_t step = 1; step <= max_steps && n_began < POOL_N; step++) {
    for (int i = 0; i < POOL_N; i++) {
      acl_decision_t d;
      cr_assert_eq(acl_cons_decide(c, &k[i], cost, &d, err, sizeof err), 0, "%s", err);
      widx[i] = d.widx;
      if (!began[i] && acl_search_sampled(d.sample_shift, d.call_idx)) {
        began[i] = step;
        n_began++;
      }
    }
    if (step == read_at)
      for (int i = 0; i < POOL_N; i++) {
        acl_search_report_t rep;
        cr_assert_eq(acl_cons_search_report(c, widx[i], &rep), 0);
        cr_assert_eq(rep.phase, ACL_PHASE_WAIT_BUDGET, "workload %d: phase %d at step %llu", i,
                     rep.phase, (unsigned long long)step);
        said[i] = rep.budget_wait_calls;
      }
  }
  acl_cons_destroy(c);
  for (int i = 0; i < POOL_N; i++) {
    cr_log_info("workload %d: said %llu more calls at step %llu, began at %llu", i,
                (unsigned long long)said[i], (unsigned long long)read_at,
                (unsigned long long)began[i]);
    cr_assert(began[i] > read_at, "workload %d began at step %llu", i,
              (unsigned long long)began[i]);
    double waited = (double)(began[i] - read_at);
    /* a wait block planned before the reading can be a quarter of the
     * calls so far old, and the last to begin pay what is left of their
     * baselines after lending */
    cr_assert(said[i] >= 0.7 * waited && said[i] <= 1.3 * waited + 64,
              "workload %d said %llu more calls at step %llu and began %.0f steps later", i,
              (unsigned long long)said[i], (unsigned long long)read_at, waited);
  }
}

/* FSDP on one H100 (2026-12-08): CUPTI's windows measured NCCL's choice of
 * the 95 MiB AllGather and ReduceScatter (16 and 8 calls a step) within
 * the first windows, so their baselines were judged without NCCL's events,
 * and they no longer lent toward the communicator's first events; the two
 * 250 MiB workloads (once a step) pooled alone and still owed 790-975
 * calls at 30 % of the run. Every workload that still owes the
 * communicator's first events pays its share of them, measured or not:
 * here two workloads of 4 calls a step and two of 1, all 10 us, windows of
 * 2 steps every 1,024. Each frequent one alone pays the 30 ms at 3 % in
 * 25,000 steps, the four together in 10,000. */
#define WIN_N 4
Test(prior, windows_measuring_a_baseline_leave_it_lending_for_first_events, .timeout = 60)
{
  th_rank_t r;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  acl_cons_t *c = events_comm(&r, 4, cost);
  char err[256] = "";
  const int per_step[WIN_N] = {4, 4, 1, 1};
  acl_wkey_t k[WIN_N];
  uint64_t began[WIN_N] = {0}, window_samples = 0;
  for (int i = 0; i < WIN_N; i++)
    k[i] = th_key(r.p.comm_id, 4, (uint64_t)(i + 1) << 26);
  int n_began = 0;
  for (uint64_t step = 1; step <= 60000 && n_began < WIN_N; step++) {
    bool window = step % 1024 < 2;
    for (int i = 0; i < WIN_N; i++)
      for (int j = 0; j < per_step[i]; j++) {
        acl_decision_t d;
        cr_assert_eq(acl_cons_decide(c, &k[i], cost, &d, err, sizeof err), 0, "%s", err);
        bool events = acl_search_sampled(d.sample_shift, d.call_idx);
        if (events && !began[i]) {
          began[i] = step;
          n_began++;
        }
        /* a window samples every call it covers, NCCL's events or not */
        if (events || (window && d.cand.algo == ACL_ALGO_NCCL)) {
          window_samples += !events;
          acl_cons_observe(c, &(acl_cons_obs_t){.widx = d.widx,
                                                .call_idx = d.call_idx,
                                                .cand_id = d.cand_id,
                                                .seconds = 10e-6,
                                                .overlap = -1.0f,
                                                .ran_algo = -1,
                                                .ran_proto = -1,
                                                .cupti = !events});
        }
      }
  }
  acl_cons_destroy(c);
  cr_assert_gt(window_samples, 20, "the windows sampled %llu calls",
               (unsigned long long)window_samples);
  for (int i = 0; i < WIN_N; i++) {
    cr_log_info("workload %d (%d a step): began at step %llu", i, per_step[i],
                (unsigned long long)began[i]);
    cr_assert(began[i] > 0 && began[i] <= 14000,
              "workload %d (%d calls a step) began at step %llu: the communicator's first "
              "events pooled take ~10,000, one frequent workload alone 25,000",
              i, per_step[i], (unsigned long long)began[i]);
  }
}
