/* Every rank applies the same decision at the same call: forked processes,
 * random host delays, random and late samples, the real search. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "run.h"

static void check(const run_spec_t *s, uint64_t min_recorded)
{
  run_result_t r;
  cr_assert_eq(run_consensus(s, &r), 0);
  fprintf(stderr,
          "  %d procs x %d ranks x %d comms, %llu calls: %.2f s, %llu decisions, "
          "%llu distinct, %llu not NCCL default; samples dropped for a busy lock: %llu of %llu\n",
          s->nprocs, s->ranks_per_proc, s->ncomms, (unsigned long long)s->calls, r.seconds,
          (unsigned long long)r.recorded, (unsigned long long)r.distinct,
          (unsigned long long)r.non_nccl, (unsigned long long)r.samples_busy,
          (unsigned long long)r.samples_sent);
  cr_assert_eq(r.child_fail, 0, "a rank failed: %s", r.first_error);
  cr_assert_eq(r.recorded, min_recorded, "decisions recorded %llu, want %llu",
               (unsigned long long)r.recorded, (unsigned long long)min_recorded);
  cr_assert_eq(r.disagreements, 0, "%llu disagreements", (unsigned long long)r.disagreements);
  /* the search really explored: a run of NCCL defaults only would prove nothing */
  cr_assert_geq(r.distinct, 3, "only %llu distinct decisions", (unsigned long long)r.distinct);
  cr_assert_gt(r.non_nccl, 0);
}

#define RUN(np, rpp, nc, n)                                                                        \
  .nprocs = np, .ranks_per_proc = rpp, .ncomms = nc, .calls = n, .keep_pct = 95,                   \
  .delay_per_mille = 3, .bad_proto_rank = -1, .nnodes = 1, .lag = 200

Test(agree, two_procs_100k, .timeout = 60)
{
  run_spec_t s = {RUN(2, 1, 1, 100000)};
  check(&s, 2 * 100000);
}

Test(agree, four_procs_100k, .timeout = 60)
{
  run_spec_t s = {RUN(4, 1, 1, 100000)};
  check(&s, 4 * 100000);
}

Test(agree, eight_procs_100k, .timeout = 60)
{
  run_spec_t s = {RUN(8, 1, 1, 100000)};
  check(&s, 8 * 100000);
}

/* One thread drives 4 ranks of one communicator in round-robin groups, in a
 * random order per group: must neither deadlock nor disagree. */
Test(agree, one_thread_four_ranks, .timeout = 30)
{
  run_spec_t s = {RUN(1, 4, 1, 50000)};
  s.permute = 1;
  check(&s, 4 * 50000);
}

/* Two processes, each one thread driving two ranks. */
Test(agree, two_procs_two_ranks_each, .timeout = 30)
{
  run_spec_t s = {RUN(2, 2, 1, 30000)};
  s.permute = 1;
  check(&s, 4 * 30000);
}

Test(agree, sixteen_comms, .timeout = 60)
{
  run_spec_t s = {RUN(4, 1, 16, 4000)};
  check(&s, 16 * 4 * 4000);
}

/* Rank 2 cannot run RING/LL: exploration uses the intersection only. */
Test(agree, valid_mask_intersection, .timeout = 30)
{
  run_spec_t s = {RUN(3, 1, 1, 20000)};
  s.bad_proto_rank = 2;
  s.bad_proto = 0;
  run_result_t r;
  cr_assert_eq(run_consensus(&s, &r), 0);
  cr_assert_eq(r.child_fail, 0, "%s", r.first_error);
  cr_assert_eq(r.disagreements, 0);
  cr_assert_eq(r.bad_choice, 0, "RING/LL chosen %llu times", (unsigned long long)r.bad_choice);
  cr_assert_gt(r.non_nccl, 0);
}
