/* Overlap arithmetic on synthetic intervals. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "profiler/overlap.h"

#define EPS 1e-12

Test(overlap, disjoint_is_zero)
{
  acl_ival_t iv[] = {{0, 100}, {300, 400}};
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 2, 100, 300), 0.0, EPS);
}

Test(overlap, nested_counts_once)
{
  /* [150,250) inside [100,300): the union covers 200 of the collective's 400 */
  acl_ival_t iv[] = {{100, 300}, {150, 250}};
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 2, 0, 400), 0.5, EPS);
}

Test(overlap, partial_both_edges)
{
  acl_ival_t iv[] = {{0, 150}, {350, 1000}};
  /* collective [100,400): covered 50 + 50 of 300 */
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 2, 100, 400), 100.0 / 300.0, EPS);
}

Test(overlap, full_cover_clamps_to_one)
{
  acl_ival_t iv[] = {{0, 1000}, {0, 1000}, {10, 20}};
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 3, 100, 200), 1.0, EPS);
}

Test(overlap, zero_length_and_reversed_ignored)
{
  acl_ival_t iv[] = {{150, 150}, {300, 200}, {120, 130}};
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 3, 100, 200), 0.1, EPS);
  /* an empty collective overlaps nothing; a reversed one is a bad clock */
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 3, 100, 100), 0.0, EPS);
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 3, 200, 100), -1.0, EPS);
}

Test(overlap, many_kernels_merge)
{
  /* 1000 kernels of 10 ns every 20 ns over [0, 20000): half covered, in
   * shuffled order, with duplicates */
  enum { N = 2000 };
  acl_ival_t *iv = malloc(sizeof(*iv) * N);
  for (int i = 0; i < 1000; i++) {
    iv[i].start = (uint64_t)i * 20;
    iv[i].end = iv[i].start + 10;
    iv[1000 + i] = iv[i];
  }
  srand(7);
  for (int i = N - 1; i > 0; i--) {
    int j = rand() % (i + 1);
    acl_ival_t t = iv[i];
    iv[i] = iv[j];
    iv[j] = t;
  }
  size_t m = acl_prof_ival_merge(iv, N);
  cr_assert_eq(m, 1000);
  for (size_t i = 1; i < m; i++)
    cr_assert_gt(iv[i].start, iv[i - 1].end);
  cr_assert_eq(acl_prof_ival_covered(iv, m, 0, 20000), 10000);
  free(iv);
}

Test(overlap, touching_intervals_merge)
{
  acl_ival_t iv[] = {{0, 10}, {10, 20}, {20, 30}};
  cr_assert_eq(acl_prof_ival_merge(iv, 3), 1);
  cr_assert_eq(iv[0].end, 30);
}

Test(overlap, huge_values_no_overflow)
{
  uint64_t base = UINT64_MAX - 1000;
  acl_ival_t iv[] = {{base, base + 500}};
  cr_assert_float_eq(acl_prof_overlap_frac(iv, 1, base + 250, base + 750), 0.5, EPS);
}

Test(overlap, window_counts_and_names)
{
  static acl_cwin_t w;
  acl_cwin_push(&w, 0, 50, 1);    /* before: no */
  acl_cwin_push(&w, 90, 200, 2);  /* 110 ns inside [100,300) ... covers 100 */
  acl_cwin_push(&w, 150, 160, 3); /* nested in the previous */
  acl_cwin_push(&w, 250, 400, 2); /* same name again, 50 inside */
  acl_cwin_push(&w, 300, 310, 4); /* starts at the end: no */
  acl_overlap_res_t r;
  acl_cwin_overlap(&w, 100, 300, &r);
  cr_assert_eq(r.kernels, 3);
  cr_assert_eq(r.distinct, 2);
  cr_assert_eq(r.nnames, 2);
  cr_assert_eq(r.names[0], 2, "the name covering most time comes first");
  cr_assert_float_eq(r.frac, 150.0 / 200.0, EPS);
}

Test(overlap, window_ring_keeps_last)
{
  static acl_cwin_t w;
  for (uint64_t i = 0; i < ACL_CWIN_CAP + 10; i++)
    acl_cwin_push(&w, i * 100, i * 100 + 50, (uint32_t)i);
  acl_overlap_res_t r;
  acl_cwin_overlap(&w, 0, 1000, &r); /* the first kernels were overwritten */
  cr_assert_eq(r.kernels, 0);
  acl_cwin_overlap(&w, (ACL_CWIN_CAP + 9) * 100, (ACL_CWIN_CAP + 9) * 100 + 100, &r);
  cr_assert_eq(r.kernels, 1);
  cr_assert_float_eq(r.frac, 0.5, EPS);
}

/* CUPTI hands over a window's records in completion order, and the
 * collectives are resolved after the whole buffer went in: where the ring
 * dropped a compute kernel that ended after a collective began, the
 * collective's overlap is unknown, not the low figure the survivors give.
 * A kernel dropped that ended before the collective does not matter. */
Test(overlap, window_that_lost_an_overlapping_kernel_says_unknown)
{
  static acl_cwin_t w;
  acl_cwin_push(&w, 1000, 2000, 1);           /* covers the collective [1000, 2000) whole */
  for (uint64_t i = 0; i < ACL_CWIN_CAP; i++) /* later compute: the first is dropped */
    acl_cwin_push(&w, 3000 + i * 10, 3005 + i * 10, 2);
  acl_overlap_res_t r;
  acl_cwin_overlap(&w, 1000, 2000, &r);
  cr_assert(r.truncated, "the covering kernel was dropped: frac %g", r.frac);
  cr_assert_float_eq(r.frac, -1.0, EPS);
  /* a collective after the dropped kernel's end is measured as usual */
  acl_cwin_overlap(&w, 3000, 3010, &r);
  cr_assert_not(r.truncated);
  cr_assert_float_eq(r.frac, 0.5, EPS);
}

/* Exposed communication: the part of the collective no compute kernel of
 * any stream covers; kernels of two streams that overlap each other count
 * once, and kernels across the collective's edges count only inside. */
Test(exposed, several_streams_merged_and_edges_clipped)
{
  /* collective [1000, 2000); stream A: [900, 1200) (crosses the start),
   * [1500, 1600); stream B: [1550, 1700) (overlaps A's), [1900, 2300)
   * (crosses the end). Covered: 200 + 200 + 100 = 500. */
  acl_ival_t iv[] = {{1500, 1600}, {1900, 2300}, {900, 1200}, {1550, 1700}};
  cr_assert_eq(acl_prof_exposed_ns(iv, 4, 1000, 2000), 500u);
}

Test(exposed, alone_is_all_and_covered_is_none)
{
  acl_ival_t none[1];
  cr_assert_eq(acl_prof_exposed_ns(none, 0, 10, 60), 50u);
  acl_ival_t all[] = {{0, 100}};
  cr_assert_eq(acl_prof_exposed_ns(all, 1, 10, 60), 0u);
  cr_assert_eq(acl_prof_exposed_ns(all, 1, 60, 10), 0u); /* reversed: nothing */
}

Test(exposed, estimate_scales_the_sampled_share_to_all_calls)
{
  acl_exposure_t e;
  /* 10 samples of 2 ms (20 ms), 1000 calls; 4 with overlap known: 8 ms of
   * collective, 2 ms exposed (share 0.25). */
  cr_assert(acl_exposure_estimate(1000, 10, 0.020, 0.008, 0.002, &e));
  cr_assert_float_eq(e.collective_seconds, 2.0, 1e-12);
  cr_assert_float_eq(e.share, 0.25, 1e-12);
  cr_assert_float_eq(e.exposed_seconds, 0.5, 1e-12);
  /* nothing with a known overlap yet: no estimate */
  cr_assert_not(acl_exposure_estimate(1000, 10, 0.020, 0.0, 0.0, &e));
  cr_assert_float_eq(e.exposed_seconds, 0.0, 0.0);
  /* rounding can put exposed a hair above the collective: clamped */
  cr_assert(acl_exposure_estimate(1, 1, 1.0, 1.0, 1.0000001, &e));
  cr_assert_leq(e.share, 1.0);
}

Test(exposed, fold_never_goes_down)
{
  acl_exposure_acc_t a = {0};
  cr_assert_not(acl_exposure_fold(&a, 100, 10, 0.010, 0.0, 0.0));
  cr_assert_eq(a.calls, 0u);
  /* share 0.5, 1 ms a call: 100 calls -> 0.1 s, 0.05 s exposed */
  cr_assert(acl_exposure_fold(&a, 100, 10, 0.010, 0.004, 0.002));
  cr_assert_float_eq(a.collective_seconds, 0.1, 1e-12);
  cr_assert_float_eq(a.exposed_seconds, 0.05, 1e-12);
  /* the share drops to 0.1: only the 100 new calls are priced at it */
  cr_assert(acl_exposure_fold(&a, 200, 20, 0.020, 0.010, 0.001));
  cr_assert_float_eq(a.collective_seconds, 0.2, 1e-12);
  cr_assert_float_eq(a.exposed_seconds, 0.06, 1e-12);
  /* no new calls: unchanged */
  cr_assert(acl_exposure_fold(&a, 200, 20, 0.020, 0.010, 0.0));
  cr_assert_float_eq(a.exposed_seconds, 0.06, 1e-12);
}

/* The share is what runs: a DDP AllReduce whose decision ran 40 % exposed,
 * after exploration tried candidates twice as long that ran 80 % exposed,
 * shows 0.4, not the time-weighted mix; with only tried samples, those. */
Test(exposed, share_is_read_from_what_runs)
{
  double coll[ACL_OV_N] = {[ACL_OV_NCCL] = 1.0, [ACL_OV_TRIED] = 2.0};
  double exp[ACL_OV_N] = {[ACL_OV_NCCL] = 0.4, [ACL_OV_TRIED] = 1.6};
  double c = 0.0, e = 0.0;
  acl_exposure_pick(coll, exp, &c, &e);
  cr_assert_float_eq(e / c, 0.4, 1e-12, "share %g: the tried candidates weighed in", e / c);
  coll[ACL_OV_NCCL] = 0.0;
  exp[ACL_OV_NCCL] = 0.0;
  acl_exposure_pick(coll, exp, &c, &e);
  cr_assert_float_eq(c, 2.0, 1e-12);
  cr_assert_float_eq(e / c, 0.8, 1e-12);
}

/* Once a decision runs, its own samples say what is exposed: a DDP bucket
 * whose decision (faster than NCCL's choice) ran 30 % exposed shows 0.3,
 * not the mix with NCCL's choice's 60 % from before it was found. */
Test(exposed, share_is_the_decisions_once_it_runs)
{
  double coll[ACL_OV_N] = {[ACL_OV_NCCL] = 3.0, [ACL_OV_DECIDED] = 1.0, [ACL_OV_TRIED] = 2.0};
  double exp[ACL_OV_N] = {[ACL_OV_NCCL] = 1.8, [ACL_OV_DECIDED] = 0.3, [ACL_OV_TRIED] = 1.6};
  double c = 0.0, e = 0.0;
  acl_exposure_pick(coll, exp, &c, &e);
  cr_assert_float_eq(c, 1.0, 1e-12);
  cr_assert_float_eq(e / c, 0.3, 1e-12, "share %g: NCCL's choice weighed in", e / c);
}
