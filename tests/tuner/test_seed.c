/* Warm start (acl_search_seed): the table's decision runs from the first
 * call, validated against NCCL's own choice in the background; kept when
 * faster, reverted and explored when slower; never seeded where its pair
 * cannot run. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/tuner/drive.h"
#include "tuner/search/search.h"

/* NCCL's own choice 1 ms; RING/SIMPLE is fastest at 24 channels, TREE/LL
 * slow everywhere. */
static double model(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)user;
  (void)call;
  if (c->algo == ACL_ALGO_NCCL)
    return 1.0e-3;
  double base = c->algo == 1 && c->proto == 2   ? 0.8e-3
                : c->algo == 0 && c->proto == 0 ? 2.0e-3
                                                : 1.1e-3;
  double x = log2((c->nchannels > 0 ? c->nchannels : 16) / 24.0);
  return base * (1.0 + 0.05 * x * x);
}

static const acl_wkey_t key = {.comm_id = 9, .nbytes = 1 << 26, .num_pipe_ops = 1, .coll = 4};

static void init(acl_search_t *s)
{
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  int a[] = {0, 0, 0, 1, 1, 1}, p[] = {0, 1, 2, 0, 1, 2};
  float us[] = {900, 900, 1100, 1200, 1050, 1000};
  table_only(cost, 6, a, p, us);
  acl_search_params_t pr;
  acl_search_params_default(&pr);
  acl_search_init(s, &pr, &key, cost);
}

Test(seed, table_decision_runs_from_the_first_call_and_is_kept)
{
  static acl_search_t s;
  init(&s);
  acl_candidate_t c = {.algo = 1, .proto = 2, .nchannels = 24}, out;
  cr_assert_eq(acl_search_seed(&s, &c), 0);
  uint32_t len = 0;
  int id = acl_search_next(&s, &out, &len);
  cr_assert_neq(id, 0);
  cr_assert(acl_candidate_eq(&out, &c), "first call runs the table's decision");
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert(acl_phase_decided(r.phase));
  cr_assert_eq(r.source, ACL_SEARCH_SRC_TABLE);
  cr_assert_eq(r.validating, 1);
  init(&s);
  acl_search_seed(&s, &c);
  drive_opts_t o = {.noise = 0.03, .seed = 3, .max_calls = 200000, .settle = 1};
  cr_assert_gt(drive(&s, model, NULL, &o), 0);
  acl_search_report(&s, &r);
  cr_assert(acl_candidate_eq(&r.current, &c), "kept");
  cr_assert_eq(r.source, ACL_SEARCH_SRC_TABLE);
  cr_assert_eq(r.validating, 0, "validation over");
  cr_assert_eq(r.candidates_evaluated, 0, "nothing explored");
  cr_assert_eq(r.retunes, 0);
  cr_assert_gt(r.calls_to_verdict, 0);
}

Test(seed, slower_table_decision_reverts_and_explores)
{
  static acl_search_t s;
  init(&s);
  acl_candidate_t c = {.algo = 0, .proto = 0, .nchannels = 4}; /* 2x slower than NCCL's */
  cr_assert_eq(acl_search_seed(&s, &c), 0);
  drive_opts_t o = {.noise = 0.03, .seed = 5, .max_calls = 400000, .settle = 1};
  cr_assert_gt(drive(&s, model, NULL, &o), 0);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_not(acl_candidate_eq(&r.current, &c), "reverted");
  cr_assert_neq(r.source, ACL_SEARCH_SRC_TABLE);
  cr_assert_gt(r.candidates_evaluated, 0, "explored once the table lost");
  cr_assert_eq(r.current.algo, 1, "found RING");
  cr_assert_eq(r.current.proto, 2);
}

Test(seed, nccl_own_choice_from_the_table_explores_nothing)
{
  static acl_search_t s;
  init(&s);
  acl_candidate_t c = {.algo = ACL_ALGO_NCCL, .proto = -1};
  cr_assert_eq(acl_search_seed(&s, &c), 0);
  drive_opts_t o = {.noise = 0.03, .seed = 7, .max_calls = 100000, .settle = 1};
  cr_assert_gt(drive(&s, model, NULL, &o), 0);
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_eq(r.current.algo, ACL_ALGO_NCCL);
  cr_assert_eq(r.source, ACL_SEARCH_SRC_TABLE);
  cr_assert_eq(r.candidates_evaluated, 0);
}

Test(seed, unrunnable_pair_is_not_seeded)
{
  static acl_search_t s;
  init(&s);
  acl_candidate_t c = {.algo = 4, .proto = 2, .nchannels = 8}; /* NVLS: not in the table */
  cr_assert_eq(acl_search_seed(&s, &c), -1);
  cr_assert_eq(acl_search_phase(&s), ACL_PHASE_WARMUP, "explores as without a table");
  acl_candidate_t ok = {.algo = 1, .proto = 2, .nchannels = 8};
  acl_candidate_t out;
  uint32_t len;
  acl_search_next(&s, &out, &len);
  cr_assert_eq(acl_search_seed(&s, &ok), -1, "only before the first call");
}

Test(seed, a_rank_that_cannot_run_it_explores_from_nccl)
{
  static acl_search_t s;
  init(&s);
  acl_candidate_t c = {.algo = 1, .proto = 2, .nchannels = 24}, out;
  cr_assert_eq(acl_search_seed(&s, &c), 0);
  float other[ACL_NUM_ALGO][ACL_NUM_PROTO];
  int a[] = {0, 1}, p[] = {2, 1};
  float us[] = {100, 100};
  table_only(other, 2, a, p, us); /* RING/SIMPLE invalid on this rank */
  acl_search_restrict(&s, other);
  uint32_t len;
  cr_assert_eq(acl_search_next(&s, &out, &len), 0);
  cr_assert_eq(out.algo, ACL_ALGO_NCCL);
  cr_assert(!acl_phase_decided(acl_search_phase(&s)), "explores as without a table");
  acl_search_report_t r;
  acl_search_report(&s, &r);
  cr_assert_neq(r.source, ACL_SEARCH_SRC_TABLE);
}
