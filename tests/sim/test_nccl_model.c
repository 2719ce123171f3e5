/* NCCL semantics of the simulator: selection rule, channel clamp, byte and
 * element accounting, the alpha-beta cost model's shape. */
#include <criterion/criterion.h>
#include <math.h>

#include "core/abi.h"
#include "sim/nccl_model.h"

static void fill(float t[ACL_NUM_ALGO][ACL_NUM_PROTO], float v)
{
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      t[a][p] = v;
}

Test(select, strict_minimum)
{
  float t[ACL_NUM_ALGO][ACL_NUM_PROTO];
  fill(t, 100.0f);
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 7.0f;
  t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = 8.0f;
  int a, p;
  cr_assert(acl_sim_select(t, &a, &p));
  cr_assert_eq(a, NCCL_ALGO_RING);
  cr_assert_eq(p, NCCL_PROTO_LL128);
}

Test(select, ties_go_to_lowest_index_algorithm_major)
{
  float t[ACL_NUM_ALGO][ACL_NUM_PROTO];
  fill(t, 50.0f);
  /* Equal minimum at (RING, LL) and (TREE, SIMPLE): algorithm-major scan
   * meets TREE first, whatever the protocol index. */
  t[NCCL_ALGO_RING][NCCL_PROTO_LL] = 3.0f;
  t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 3.0f;
  int a, p;
  cr_assert(acl_sim_select(t, &a, &p));
  cr_assert_eq(a, NCCL_ALGO_TREE);
  cr_assert_eq(p, NCCL_PROTO_SIMPLE);
  /* Within one algorithm the lower protocol wins a tie. */
  t[NCCL_ALGO_TREE][NCCL_PROTO_LL128] = 3.0f;
  cr_assert(acl_sim_select(t, &a, &p));
  cr_assert_eq(p, NCCL_PROTO_LL128);
}

Test(select, minus_one_entries_are_skipped_and_zero_wins)
{
  float t[ACL_NUM_ALGO][ACL_NUM_PROTO];
  fill(t, -1.0f);
  int a, p;
  cr_assert_not(acl_sim_select(t, &a, &p), "all -1: NCCL has nothing to run");
  cr_assert_eq(a, -1);
  cr_assert_eq(p, -1);
  t[NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE] = 900.0f;
  cr_assert(acl_sim_select(t, &a, &p));
  cr_assert_eq(a, NCCL_ALGO_PAT);
  /* A plugin's 0.0 beats any positive cost; -1 (even "smaller") never wins. */
  t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 0.0f;
  t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = -1.0f;
  cr_assert(acl_sim_select(t, &a, &p));
  cr_assert_eq(a, NCCL_ALGO_RING);
  cr_assert_eq(p, NCCL_PROTO_SIMPLE);
}

Test(channels, clamp)
{
  cr_assert_eq(acl_sim_clamp_channels(0, 32), 0, "0 = NCCL decides");
  cr_assert_eq(acl_sim_clamp_channels(-5, 32), 0);
  cr_assert_eq(acl_sim_clamp_channels(1, 32), 1);
  cr_assert_eq(acl_sim_clamp_channels(24, 32), 24);
  cr_assert_eq(acl_sim_clamp_channels(32, 32), 32);
  cr_assert_eq(acl_sim_clamp_channels(64, 32), 32, "an upper bound clamped to the ceiling");
  cr_assert_eq(acl_sim_clamp_channels(64, 16), 16);
}

Test(bytes, count_from_bytes_per_collective)
{
  /* AllReduce: nBytes = count * 4. */
  cr_assert_eq(acl_sim_count_from_bytes(ncclFuncAllReduce, 4096, 8, 4), 1024);
  /* AllGather / ReduceScatter: nBytes is the whole buffer, count per rank. */
  cr_assert_eq(acl_sim_count_from_bytes(ncclFuncAllGather, 4096, 8, 4), 128);
  cr_assert_eq(acl_sim_count_from_bytes(ncclFuncReduceScatter, 4096, 4, 4), 256);
  cr_assert_eq(acl_sim_count_from_bytes(ncclFuncBroadcast, 4096, 4, 4), 1024);
  cr_assert_eq(acl_sim_count_from_bytes(ncclFuncAllGather, 4100, 8, 4), 0, "does not split");
  cr_assert_eq(acl_sim_count_from_bytes(ncclFuncAllReduce, 4098, 8, 4), 0, "partial element");
  for (int c = 0; c < ACL_NUM_COLL; c++) {
    size_t cnt = acl_sim_count_from_bytes(c, 1 << 20, 4, 4);
    cr_assert_eq(acl_sim_bytes_from_count(c, cnt, 4, 4), 1u << 20, "round trip, coll %d", c);
  }
}

Test(bytes, round_to_a_callable_size)
{
  uint64_t b = acl_sim_round_bytes(ncclFuncAllGather, 436224000, 3, 4);
  cr_assert_eq(b % 12, 0);
  cr_assert(b <= 436224000 && b > 436224000 - 12);
  cr_assert_eq(acl_sim_round_bytes(ncclFuncAllReduce, 4099, 3, 4), 4096);
  cr_assert_eq(acl_sim_round_bytes(ncclFuncReduceScatter, 1, 8, 4), 32, "one element per rank");
}

Test(cost, alpha_beta_shape)
{
  const uint64_t small = 1024, big = 1ull << 30;
  double ll_s = acl_sim_ab_cost_us(ncclFuncAllReduce, small, 8, 1, NCCL_ALGO_RING, NCCL_PROTO_LL);
  double si_s =
      acl_sim_ab_cost_us(ncclFuncAllReduce, small, 8, 1, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE);
  double ll_b = acl_sim_ab_cost_us(ncclFuncAllReduce, big, 8, 1, NCCL_ALGO_RING, NCCL_PROTO_LL);
  double si_b = acl_sim_ab_cost_us(ncclFuncAllReduce, big, 8, 1, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE);
  cr_assert(ll_s > 0 && si_s > 0);
  cr_assert_lt(ll_s, si_s, "latency-bound: LL beats SIMPLE on 1 KiB");
  cr_assert_lt(si_b, ll_b, "bandwidth-bound: SIMPLE beats LL on 1 GiB");
  /* Affine in bytes: equal increments give equal cost increments. */
  for (int p = 0; p < ACL_NUM_PROTO; p++) {
    double c1 = acl_sim_ab_cost_us(ncclFuncAllGather, 1 << 20, 4, 1, NCCL_ALGO_RING, p);
    double c2 = acl_sim_ab_cost_us(ncclFuncAllGather, 2 << 20, 4, 1, NCCL_ALGO_RING, p);
    double c3 = acl_sim_ab_cost_us(ncclFuncAllGather, 3 << 20, 4, 1, NCCL_ALGO_RING, p);
    cr_assert_gt(c2, c1);
    cr_assert_float_eq(c3 - c2, c2 - c1, 1e-6 * c3);
    /* alpha: the intercept is positive latency. */
    cr_assert_gt(2 * c1 - c2, 0.0);
  }
  /* More ranks: more ring steps, more latency. */
  cr_assert_gt(acl_sim_ab_cost_us(ncclFuncAllReduce, small, 16, 1, NCCL_ALGO_RING, NCCL_PROTO_LL),
               ll_s);
  /* Crossing nodes is slower than NVLink. */
  cr_assert_gt(acl_sim_ab_cost_us(ncclFuncAllReduce, big, 8, 2, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE),
               si_b);
  /* Pairs the model does not know. */
  cr_assert_lt(acl_sim_ab_cost_us(ncclFuncAllGather, big, 8, 1, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE),
               0);
  cr_assert_lt(
      acl_sim_ab_cost_us(ncclFuncAllReduce, big, 8, 1, NCCL_ALGO_COLLNET_DIRECT, NCCL_PROTO_SIMPLE),
      0);
}

Test(cost, table_marks_invalid_and_pins_the_default)
{
  float t[ACL_NUM_ALGO][ACL_NUM_PROTO];
  uint32_t valid =
      ACL_AP_BIT(NCCL_ALGO_RING, NCCL_PROTO_LL) | ACL_AP_BIT(NCCL_ALGO_RING, NCCL_PROTO_LL128) |
      ACL_AP_BIT(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE) | ACL_AP_BIT(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE);
  /* On 1 GiB the model prefers SIMPLE; NCCL's default says RING/LL128. */
  acl_sim_cost_table(t, ncclFuncAllReduce, 1ull << 30, 8, 1, valid, NCCL_ALGO_RING,
                     NCCL_PROTO_LL128);
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++) {
      if (valid & ACL_AP_BIT(a, p))
        cr_assert_gt(t[a][p], 0.0f, "(%d,%d) valid", a, p);
      else
        cr_assert_eq(t[a][p], -1.0f, "(%d,%d) invalid -> -1", a, p);
    }
  int a, p;
  cr_assert(acl_sim_select(t, &a, &p));
  cr_assert_eq(a, NCCL_ALGO_RING);
  cr_assert_eq(p, NCCL_PROTO_LL128, "an untouched table selects NCCL's default");
  /* Where the model already agrees, the table is the plain model. */
  acl_sim_cost_table(t, ncclFuncAllReduce, 1024, 8, 1, valid, NCCL_ALGO_RING, NCCL_PROTO_LL);
  cr_assert_float_eq(
      t[NCCL_ALGO_RING][NCCL_PROTO_LL],
      (float)acl_sim_ab_cost_us(ncclFuncAllReduce, 1024, 8, 1, NCCL_ALGO_RING, NCCL_PROTO_LL),
      1e-3);
  cr_assert(acl_sim_select(t, &a, &p));
  cr_assert_eq(p, NCCL_PROTO_LL);
}

Test(seed, mix_is_deterministic_and_spreads)
{
  cr_assert_eq(acl_sim_mix(42), acl_sim_mix(42));
  cr_assert_neq(acl_sim_mix(42), acl_sim_mix(43));
  int ones = __builtin_popcountll(acl_sim_mix(1) ^ acl_sim_mix(2));
  cr_assert(ones > 16 && ones < 48, "avalanche: %d bits differ", ones);
}
