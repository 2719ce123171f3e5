/* Training-step call lists and interference schedules. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/abi.h"
#include "sim/nccl_model.h"
#include "sim/workload.h"

Test(workload, parse_names)
{
  cr_assert_eq(acl_sim_mix_parse("fsdp-llama8b"), ACL_SIM_MIX_FSDP);
  cr_assert_eq(acl_sim_mix_parse("ddp"), ACL_SIM_MIX_DDP);
  cr_assert_eq(acl_sim_mix_parse("tp"), ACL_SIM_MIX_TP);
  cr_assert_eq(acl_sim_mix_parse("mixed"), ACL_SIM_MIX_MIXED);
  cr_assert_eq(acl_sim_mix_parse("torch-fsdp-1gpu"), ACL_SIM_MIX_TORCH_FSDP_1GPU);
  cr_assert_str_eq(acl_sim_mix_name(ACL_SIM_MIX_TORCH_FSDP_1GPU), "torch-fsdp-1gpu");
  cr_assert_eq(acl_sim_mix_parse("torch-ddp-1gpu"), ACL_SIM_MIX_TORCH_DDP_1GPU);
  cr_assert_str_eq(acl_sim_mix_name(ACL_SIM_MIX_TORCH_DDP_1GPU), "torch-ddp-1gpu");
  cr_assert_eq(acl_sim_mix_parse("Mixed"), -1);
  cr_assert_eq(acl_sim_mix_parse(""), -1);
  cr_assert_eq(acl_sim_mix_parse(NULL), -1);
}

Test(workload, ddp_buckets)
{
  acl_sim_step_t *s = acl_sim_step_create(ACL_SIM_MIX_DDP, 4, 1);
  cr_assert_not_null(s);
  cr_assert_eq(s->ncalls, 5);
  cr_assert_eq(s->nworkloads, 2, "25 MiB buckets and the small last one");
  for (size_t i = 0; i < 4; i++) {
    cr_assert_eq(s->calls[i].coll, ncclFuncAllReduce);
    cr_assert_eq(s->calls[i].nbytes, 25u << 20);
    cr_assert_eq(s->calls[i].wid, 0);
  }
  cr_assert_lt(s->calls[4].nbytes, 4u << 20);
  cr_assert_eq(s->calls[4].wid, 1);
  acl_sim_step_destroy(s);
}

Test(workload, fsdp_sizes_split_over_ranks)
{
  for (int n = 2; n <= 8; n += 3) {
    acl_sim_step_t *s = acl_sim_step_create(ACL_SIM_MIX_FSDP, n, 1);
    cr_assert_not_null(s);
    int ag = 0, rs = 0;
    for (size_t i = 0; i < s->ncalls; i++) {
      const acl_sim_call_t *c = &s->calls[i];
      cr_assert(c->coll == ncclFuncAllGather || c->coll == ncclFuncReduceScatter);
      cr_assert_neq(acl_sim_count_from_bytes(c->coll, c->nbytes, n, 4), 0,
                    "%llu bytes splits over %d ranks", (unsigned long long)c->nbytes, n);
      cr_assert_gt(c->nbytes, 400000000ull, "layer-sized buffers");
      ag += c->coll == ncclFuncAllGather;
      rs += c->coll == ncclFuncReduceScatter;
    }
    cr_assert_eq(ag, 65, "embeddings + 32 layers forward + 32 backward");
    cr_assert_eq(rs, 33);
    cr_assert(s->nworkloads >= 3 && s->nworkloads <= 4);
    acl_sim_step_destroy(s);
  }
}

Test(workload, mixed_spreads_over_comms)
{
  acl_sim_step_t *one = acl_sim_step_create(ACL_SIM_MIX_MIXED, 4, 1);
  acl_sim_step_t *three = acl_sim_step_create(ACL_SIM_MIX_MIXED, 4, 3);
  acl_sim_step_t *many = acl_sim_step_create(ACL_SIM_MIX_MIXED, 4, 16);
  cr_assert(one && three && many);
  cr_assert_eq(one->ncalls, three->ncalls, "3 comms: one part of the mix each");
  bool seen[3] = {false, false, false};
  for (size_t i = 0; i < three->ncalls; i++) {
    cr_assert_eq(three->calls[i].comm, three->calls[i].group);
    seen[three->calls[i].group] = true;
  }
  cr_assert(seen[0] && seen[1] && seen[2], "fsdp, ddp and tp all present");
  /* 16 comms: every comm carries something, workloads are per comm. */
  bool used[16] = {false};
  for (size_t i = 0; i < many->ncalls; i++)
    used[many->calls[i].comm] = true;
  for (int c = 0; c < 16; c++)
    cr_assert(used[c], "comm %d idle", c);
  cr_assert_gt(many->nworkloads, one->nworkloads * 4);
  acl_sim_step_destroy(one);
  acl_sim_step_destroy(three);
  acl_sim_step_destroy(many);
  cr_assert_null(acl_sim_step_create(ACL_SIM_MIX_MIXED, 0, 1));
  cr_assert_null(acl_sim_step_create(ACL_SIM_MIX_MIXED, 4, 0));
}

Test(interference, schedules)
{
  acl_sim_interf_t in;
  char err[256];
  cr_assert(acl_sim_interf_parse("none", &in, err, sizeof(err)));
  cr_assert_eq(in.n, 0);
  cr_assert_float_eq(acl_sim_interf_level(&in, 5), 0.0, 1e-12);
  cr_assert(acl_sim_interf_parse("10-20=0.6,30-=0.25", &in, err, sizeof(err)), "%s", err);
  cr_assert_float_eq(acl_sim_interf_level(&in, 9), 0.0, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 10), 0.6, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 19), 0.6, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 20), 0.0, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 1000000), 0.25, 1e-12);
  cr_assert(acl_sim_interf_parse("every:100:30=0.6", &in, err, sizeof(err)), "%s", err);
  cr_assert_float_eq(acl_sim_interf_level(&in, 129), 0.6, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 130), 0.0, 1e-12);
  cr_assert(acl_sim_interf_parse("every:100:40-70=0.5", &in, err, sizeof(err)), "%s", err);
  cr_assert_float_eq(acl_sim_interf_level(&in, 39), 0.0, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 140), 0.5, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 169), 0.5, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 170), 0.0, 1e-12);
  /* The demo starts quiet (the tuner converges first), then interferes, and
   * repeats. */
  cr_assert(acl_sim_interf_parse("demo", &in, err, sizeof(err)));
  cr_assert_gt(in.n, 0);
  cr_assert_float_eq(acl_sim_interf_level(&in, 0), 0.0, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 399), 0.0, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 400), 0.6, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 700), 0.0, 1e-12);
  cr_assert_float_eq(acl_sim_interf_level(&in, 1450), 0.6, 1e-12);
}

Test(interference, bad_specs_are_refused_with_a_message)
{
  const char *bad[] = {"",
                       "10-20",
                       "10-20=1.5",
                       "20-10=0.5",
                       "x-=0.1",
                       "every:0:0=0.5",
                       "every:10:20=0.5",
                       "10-20=0.5,",
                       "10-20=-0.1",
                       "5-5=0.2",
                       "every:10:5-5=0.5",
                       "every:10:5-11=0.5",
                       "every:10:-3=0.5",
                       "every:10:3-=0.5"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    acl_sim_interf_t in = {.n = 7};
    char err[256] = "";
    cr_assert_not(acl_sim_interf_parse(bad[i], &in, err, sizeof(err)), "'%s' accepted", bad[i]);
    cr_assert_neq(err[0], '\0', "no message for '%s'", bad[i]);
    cr_assert_eq(in.n, 7, "'%s' changed the output", bad[i]);
  }
}

/* The one-H100 FSDP2 job: per step 1 + 16 gathers and 8 + 1 reduce-scatters
 * on one communicator, the backward ones in pairs, the step's first call the
 * 250 MiB gather right after the last call of the step before, the 250 MiB
 * reduce-scatter. */
Test(workload, torch_fsdp_1gpu_step)
{
  acl_sim_step_t *s = acl_sim_step_create(ACL_SIM_MIX_TORCH_FSDP_1GPU, 2, 2);
  cr_assert_not_null(s);
  cr_assert_eq(s->ncalls, 26u);
  cr_assert_eq(s->nworkloads, 4u);
  int pairs = 0;
  for (size_t i = 0; i < s->ncalls; i++) {
    cr_assert_eq(s->calls[i].comm, 0);
    pairs += s->calls[i].cgroup != 0;
  }
  cr_assert_eq(pairs, 16);
  cr_assert_eq(s->calls[0].coll, ncclFuncAllGather);
  cr_assert_eq(s->calls[25].coll, ncclFuncReduceScatter);
  cr_assert_eq(s->calls[0].nbytes, s->calls[25].nbytes);
  acl_sim_step_destroy(s);
}

/* The one-H100 DDP job: per step 16, 8 and 8 AllReduce buckets of three
 * sizes and two of 250 MiB, five workloads on one communicator; the first
 * calls of each size run longer (their place in the backward: 64 MiB's
 * first 5 of 8 at 7x, most of its calls, as on the GPU), the rest as the
 * landscape says. */
Test(workload, torch_ddp_1gpu_step)
{
  acl_sim_step_t *s = acl_sim_step_create(ACL_SIM_MIX_TORCH_DDP_1GPU, 2, 1);
  cr_assert_not_null(s);
  cr_assert_eq(s->ncalls, 34u);
  cr_assert_eq(s->nworkloads, 5u);
  unsigned per[5] = {0}, slow[5] = {0};
  for (size_t i = 0; i < s->ncalls; i++) {
    cr_assert_eq(s->calls[i].coll, ncclFuncAllReduce);
    cr_assert_eq(s->calls[i].cgroup, 0);
    per[s->calls[i].wid]++;
    slow[s->calls[i].wid] += s->calls[i].slow > 1.0f;
  }
  const unsigned want[5] = {1, 16, 8, 8, 1}, want_slow[5] = {1, 4, 5, 3, 0};
  for (int w = 0; w < 5; w++) {
    cr_assert_eq(per[w], want[w], "workload %d: %u calls a step", w, per[w]);
    cr_assert_eq(slow[w], want_slow[w], "workload %d: %u slowed calls", w, slow[w]);
  }
  acl_sim_step_destroy(s);
}
