/* Attribution on synthetic CUPTI record streams (no GPU): tags as
 * getCollInfo would produce them, external-correlation and kernel records as
 * CUPTI would deliver them. */
#include <criterion/criterion.h>
#include <string.h>

#include "profiler/attrib.h"

static acl_attr_t *A;
static acl_attr_sample_t out[256];
static uint32_t next_corr = 1000;

static void setup(void) { A = acl_attr_create(); }
static void teardown(void) { acl_attr_destroy(A); }

static acl_call_tag_t mk(void *rank, uint32_t widx, uint64_t idx)
{
  acl_call_tag_t t;
  memset(&t, 0, sizeof(t));
  t.rank_ctx = rank;
  t.widx = widx;
  t.call_idx = idx;
  t.coll = 4;
  t.nbytes = 1 << 20;
  return t;
}

/* One launch under ext: its external-correlation record and its kernel. */
static uint32_t launch(uint64_t ext, const char *name, uint32_t dev, uint32_t stream,
                       uint64_t start, uint64_t end)
{
  uint32_t corr = next_corr++;
  acl_attr_extcorr(A, corr, ext);
  acl_krec_t k = {
      .start = start, .end = end, .device = dev, .stream = stream, .corr = corr, .name = name};
  acl_attr_kernel(A, &k);
  return corr;
}

static void compute(uint32_t dev, uint64_t s, uint64_t e, const char *name)
{
  acl_krec_t k = {.start = s, .end = e, .device = dev, .corr = next_corr++, .name = name};
  acl_attr_kernel(A, &k);
}

static size_t drain(void)
{
  size_t n = 0;
  bool more = true;
  while (more)
    n += acl_attr_process(A, true, 0, out + n, 256 - n, &more);
  return n;
}

TestSuite(attrib, .init = setup, .fini = teardown);

Test(attrib, nccl_name_classifier)
{
  cr_assert(acl_attr_is_nccl_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  cr_assert(acl_attr_is_nccl_kernel("ncclSymkDevKernel_AllGather"));
  cr_assert(acl_attr_is_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float"));
  cr_assert(acl_attr_is_nccl_kernel("_Z18ncclDevKernel_Fakey"));
  cr_assert(acl_attr_is_nccl_kernel(
      "_Z41ncclDevKernel_AllReduce_Sum_f32_RING_LL128P24ncclDevKernelArgs"));
  cr_assert_not(acl_attr_is_nccl_kernel("_Z8gemm_ncclv"));
  cr_assert_not(acl_attr_is_nccl_kernel("nccl_fake"));
  cr_assert_not(acl_attr_is_nccl_kernel("sm90_xmma_gemm_f16f16"));
  cr_assert_not(acl_attr_is_nccl_kernel(NULL));
}

Test(attrib, single_call_exact_with_overlap)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 3, 7);
  uint64_t e = acl_attr_tag(A, 0, &t, &r0, 111);
  cr_assert_neq(e, 0);
  compute(0, 0, 1500, "gemm_a");
  launch(e, "ncclDevKernel_AllReduce", 0, 7, 1000, 3000);
  compute(0, 2500, 5000, "gemm_b");
  cr_assert_eq(acl_attr_pending(A), 1);
  size_t n = drain();
  cr_assert_eq(n, 1);
  cr_assert_eq(out[0].tag.widx, 3);
  cr_assert_eq(out[0].tag.call_idx, 7);
  cr_assert_eq(out[0].user, &r0);
  cr_assert_eq(out[0].call_ns, 111);
  cr_assert_eq(out[0].end - out[0].start, 2000);
  cr_assert_float_eq(out[0].ov.frac, 0.5, 1e-9); /* 500 + 500 of 2000 */
  cr_assert_eq(out[0].ov.distinct, 2);
  cr_assert_eq(acl_attr_pending(A), 0);
}

Test(attrib, held_one_round_unless_final)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, 100, 200);
  cr_assert_eq(acl_attr_process(A, false, 0, out, 256, NULL), 0, "held for one round");
  /* a compute record arriving in the next batch still counts */
  compute(0, 150, 400, "late_gemm");
  cr_assert_eq(acl_attr_process(A, false, 0, out, 256, NULL), 1);
  cr_assert_float_eq(out[0].ov.frac, 0.5, 1e-9);
}

/* A compute kernel running across the collective's end is recorded when it
 * ends, rounds after the collective: the collective waits for a compute
 * record ending after it, so its tail is not read as exposed. */
Test(attrib, held_until_compute_passes_its_end)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &t, &r0, 0);
  compute(0, 0, 150, "gemm_a"); /* covers the first half */
  launch(e, "ncclDevKernel_X", 0, 1, 100, 200);
  cr_assert_eq(acl_attr_process(A, false, 1000, out, 256, NULL), 0, "held for one round");
  cr_assert_eq(acl_attr_process(A, false, 2000, out, 256, NULL), 0,
               "no compute record past its end yet");
  cr_assert_eq(acl_attr_process(A, false, 3000, out, 256, NULL), 0);
  compute(0, 150, 900, "gemm_b"); /* ran across the end, recorded late */
  cr_assert_eq(acl_attr_process(A, false, 4000, out, 256, NULL), 1);
  cr_assert_float_eq(out[0].ov.frac, 1.0, 1e-9);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.held, 1);
  cr_assert_eq(st.ov_late, 1, "the overlap grew by the late record");
  cr_assert_eq(st.ov_late_ns, 50); /* half of the 100 ns kernel */
  cr_assert_eq(acl_attr_pending(A), 0);
}

/* Without compute after it (a benchmark, the step's end) a collective waits
 * ACL_ATTR_HOLD_NS at most, and its overlap is what was there. */
Test(attrib, hold_is_bounded_without_compute)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &t, &r0, 0);
  compute(0, 0, 150, "gemm_a");
  launch(e, "ncclDevKernel_X", 0, 1, 100, 200);
  uint64_t t0 = 5000000;
  cr_assert_eq(acl_attr_process(A, false, t0, out, 256, NULL), 0);
  cr_assert_eq(acl_attr_process(A, false, t0 + 1, out, 256, NULL), 0);
  cr_assert_eq(acl_attr_process(A, false, t0 + ACL_ATTR_HOLD_NS - 1, out, 256, NULL), 0);
  cr_assert_eq(acl_attr_process(A, false, t0 + ACL_ATTR_HOLD_NS + 1, out, 256, NULL), 1);
  cr_assert_float_eq(out[0].ov.frac, 0.5, 1e-9);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.held, 1);
  cr_assert_eq(st.ov_late, 0);
}

Test(attrib, interleaved_comms_threads_streams)
{
  /* Two threads, each driving its own communicator on its own stream;
   * kernels complete out of launch order and interleave in the buffer. */
  int ra, rb;
  uint64_t ea[4], eb[4];
  uint32_t ca[4], cb[4];
  for (int i = 0; i < 4; i++) {
    acl_call_tag_t ta = mk(&ra, 1, (uint64_t)i), tb = mk(&rb, 2, (uint64_t)i);
    ea[i] = acl_attr_tag(A, 0, &ta, &ra, 0);
    eb[i] = acl_attr_tag(A, 1, &tb, &rb, 0);
    ca[i] = next_corr++;
    cb[i] = next_corr++;
    acl_attr_extcorr(A, ca[i], ea[i]);
    acl_attr_extcorr(A, cb[i], eb[i]);
  }
  for (int i = 3; i >= 0; i--) { /* completion order reversed */
    acl_krec_t kb = {.start = 1000u * i + 10,
                     .end = 1000u * i + 510,
                     .device = 0,
                     .stream = 2,
                     .corr = cb[i],
                     .name = "ncclDevKernel_B"};
    acl_krec_t ka = {.start = 1000u * i,
                     .end = 1000u * i + 100 * (i + 1),
                     .device = 0,
                     .stream = 1,
                     .corr = ca[i],
                     .name = "ncclDevKernel_A"};
    acl_attr_kernel(A, &kb);
    acl_attr_kernel(A, &ka);
  }
  size_t n = drain();
  cr_assert_eq(n, 8);
  int seen[2][4] = {{0}};
  for (size_t i = 0; i < n; i++) {
    int c = out[i].tag.widx == 1 ? 0 : 1;
    int idx = (int)out[i].tag.call_idx;
    seen[c][idx]++;
    if (c == 0) {
      cr_assert_eq(out[i].user, &ra);
      cr_assert_eq(out[i].end - out[i].start, 100u * (idx + 1), "call %d got its own kernel", idx);
    } else {
      cr_assert_eq(out[i].user, &rb);
      cr_assert_eq(out[i].start, 1000u * idx + 10);
    }
  }
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 4; i++)
      cr_assert_eq(seen[c][i], 1);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.ambiguous, 0);
  cr_assert_eq(st.samples, 8);
}

Test(attrib, fused_group_is_ambiguous)
{
  /* three tuned calls in one group on one rank, one kernel covering them */
  int r0;
  uint64_t e = 0;
  for (int i = 0; i < 3; i++) {
    acl_call_tag_t t = mk(&r0, (uint32_t)i, 0);
    e = acl_attr_tag(A, 0, &t, &r0, 0);
  }
  launch(e, "ncclDevKernel_Generic_4", 0, 1, 100, 900);
  cr_assert_eq(drain(), 0);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.ambiguous, 3);
  cr_assert_eq(st.samples, 0);
  cr_assert_eq(st.pending, 0);
  /* the next single call is exact again */
  acl_call_tag_t t = mk(&r0, 9, 1);
  e = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e, "ncclDevKernel_AllReduce", 0, 1, 1000, 1300);
  cr_assert_eq(drain(), 1);
  cr_assert_eq(out[0].tag.widx, 9);
}

Test(attrib, separate_kernels_same_device_still_ambiguous)
{
  /* two calls of one rank in a group: launch order is not call order */
  int r0;
  acl_call_tag_t t1 = mk(&r0, 1, 0), t2 = mk(&r0, 2, 0);
  acl_attr_tag(A, 0, &t1, &r0, 0);
  uint64_t e = acl_attr_tag(A, 0, &t2, &r0, 0);
  launch(e, "ncclDevKernel_A", 0, 1, 0, 10);
  launch(e, "ncclDevKernel_B", 0, 1, 20, 30);
  cr_assert_eq(drain(), 0);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.ambiguous, 2);
}

Test(attrib, one_thread_two_ranks_split_by_learned_device)
{
  /* ncclCommInitAll style: one thread, rank 0 on GPU 0 and rank 1 on GPU 1.
   * First each rank runs alone (devices learned), then grouped. */
  int r0, r1;
  acl_call_tag_t a = mk(&r0, 0, 0), b = mk(&r1, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &a, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, 0, 100);
  e = acl_attr_tag(A, 0, &b, &r1, 0);
  launch(e, "ncclDevKernel_X", 1, 1, 0, 120);
  cr_assert_eq(drain(), 2);
  a.call_idx = b.call_idx = 1;
  acl_attr_tag(A, 0, &a, &r0, 0);
  e = acl_attr_tag(A, 0, &b, &r1, 0);
  launch(e, "ncclDevKernel_X", 1, 1, 500, 530); /* launch order != tag order */
  launch(e, "ncclDevKernel_X", 0, 1, 500, 570);
  size_t n = drain();
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(out[i].tag.call_idx, 1);
    if (out[i].user == &r0)
      cr_assert_eq(out[i].device, 0);
    else
      cr_assert_eq(out[i].device, 1);
  }
}

Test(attrib, one_unknown_rank_takes_unclaimed_device)
{
  int r0, r1;
  acl_call_tag_t a = mk(&r0, 0, 0), b = mk(&r1, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &a, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, 0, 100); /* r0 -> GPU 0 learned */
  drain();
  acl_attr_tag(A, 0, &a, &r0, 0);
  e = acl_attr_tag(A, 0, &b, &r1, 0); /* r1 never seen */
  launch(e, "ncclDevKernel_X", 0, 1, 200, 300);
  launch(e, "ncclDevKernel_X", 1, 1, 200, 350);
  size_t n = drain();
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(out[i].device, out[i].user == &r0 ? 0u : 1u);
}

Test(attrib, extra_untuned_launch_not_attributed)
{
  /* a p2p launch after the tuned collective, before the next tag */
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e, "ncclDevKernel_AllReduce", 0, 1, 0, 100);
  launch(e, "ncclDevKernel_SendRecv", 0, 1, 200, 900);
  cr_assert_eq(drain(), 1);
  cr_assert_eq(out[0].end, 100);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.untagged, 1);
}

Test(attrib, compute_launches_under_tag_mark_window_only)
{
  /* after the collective the thread launches GEMMs under the same id; the
   * next call's window must still hold only the next call */
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  uint64_t e1 = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e1, "ncclDevKernel_AllReduce", 0, 1, 0, 100);
  launch(e1, "gemm", 0, 2, 50, 150);
  t.call_idx = 1;
  uint64_t e2 = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e2, "ncclDevKernel_AllReduce", 0, 1, 200, 300);
  cr_assert_eq(drain(), 2);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.ambiguous, 0);
}

Test(attrib, clock_edge_cases)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, 500, 400); /* stop < start */
  e = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, 500, 500); /* equal stamps */
  e = acl_attr_tag(A, 0, &t, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, 5, UINT64_MAX); /* garbage / wrapped */
  e = acl_attr_tag(A, 0, &t, &r0, 0);
  uint64_t big = UINT64_MAX - 10000; /* huge but sane */
  launch(e, "ncclDevKernel_X", 0, 1, big, big + 4000);
  size_t n = drain();
  cr_assert_eq(n, 1);
  cr_assert_eq(out[0].end - out[0].start, 4000);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.bad_clock, 3);
  cr_assert_eq(st.pending, 0);
}

Test(attrib, record_ring_overflow_counted)
{
  /* more NCCL records in one batch than the ring holds */
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  for (int i = 0; i < ACL_ATTR_KQ + 100; i++) {
    uint64_t e = acl_attr_tag(A, (unsigned)(i % 8), &t, &r0, 0);
    launch(e, "ncclDevKernel_X", 0, 1, 10, 20);
  }
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.ring_dropped, 100);
  size_t total = 0;
  bool more = true;
  while (more)
    total += acl_attr_process(A, true, 0, out, 256, &more);
  cr_assert_eq(total, ACL_ATTR_KQ);
  acl_attr_add_dropped(A, 5); /* CUPTI's own dropped count adds up */
  acl_attr_stats(A, &st);
  cr_assert_eq(st.ring_dropped, 105);
}

Test(attrib, untagged_nccl_kernel_and_foreign_ext)
{
  acl_krec_t k = {.start = 0, .end = 10, .corr = 42, .name = "ncclDevKernel_X"};
  acl_attr_kernel(A, &k);
  acl_attr_extcorr(A, 43, 7); /* someone else's id: ignored */
  k.corr = 43;
  acl_attr_kernel(A, &k);
  cr_assert_eq(drain(), 0);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.untagged, 2);
  cr_assert_eq(st.extcorr, 0);
}

Test(attrib, tags_expire_and_ring_wrap_counted)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  for (int i = 0; i < ACL_ATTR_TAGCAP + 3; i++)
    acl_attr_tag(A, 0, &t, &r0, 0);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.lost, 3);
  cr_assert_eq(st.pending, ACL_ATTR_TAGCAP);
  acl_attr_process(A, false, ACL_ATTR_TAG_TTL_NS + 2000000000ull, out, 256, NULL);
  acl_attr_stats(A, &st);
  cr_assert_eq(st.pending, 0);
  cr_assert_eq(st.lost, 3 + ACL_ATTR_TAGCAP);
}

Test(attrib, top_compute_names)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  for (int i = 0; i < 3; i++) {
    uint64_t e = acl_attr_tag(A, 0, &t, &r0, 0);
    uint64_t b = 1000u * i;
    compute(0, b, b + 50, "gemm_big");
    if (i == 0)
      compute(0, b, b + 50, "softmax");
    launch(e, "ncclDevKernel_X", 0, 1, b, b + 100);
    drain();
  }
  char names[4][ACL_ATTR_NAMELEN];
  uint64_t counts[4];
  int n = acl_attr_top_names(A, names, counts, 4);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(names[0], "gemm_big");
  cr_assert_eq(counts[0], 3);
  cr_assert_str_eq(names[1], "softmax");
  cr_assert_eq(counts[1], 1);
}

/* The kernels of one rank run one after another, so a record that overlaps
 * an earlier one of its rank misattributes. Both shapes seen on one H200:
 * the same kernel handed to two calls, and a start 63 ms before its end. */
Test(attrib, kernel_overlapping_its_rank_is_refused)
{
  int r0, r1;
  const uint64_t B = 100000000; /* 100 ms */
  acl_call_tag_t t0 = mk(&r0, 0, 0), t1 = mk(&r1, 0, 0);
  uint64_t e = acl_attr_tag(A, 0, &t0, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, B, B + 28000);
  cr_assert_eq(drain(), 1);
  e = acl_attr_tag(A, 0, &t0, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, B, B + 28000); /* the same kernel for the next call */
  e = acl_attr_tag(A, 0, &t0, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, B + 90000 - 63000000, B + 90000); /* start 63 ms early */
  cr_assert_eq(drain(), 0);
  /* the next kernel starts 1 us before that one's (right) end: within the
   * tolerance; another rank's kernel at the same time as the first is its own */
  e = acl_attr_tag(A, 0, &t0, &r0, 0);
  launch(e, "ncclDevKernel_X", 0, 1, B + 89000, B + 100000);
  e = acl_attr_tag(A, 1, &t1, &r1, 0);
  launch(e, "ncclDevKernel_X", 0, 2, B, B + 28000);
  cr_assert_eq(drain(), 2);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.overlapped, 2);
  cr_assert_eq(st.samples, 3);
}

/* Samples leave a round in no particular order: disjoint kernels of a rank
 * resolved in any order are all kept. */
Test(attrib, disjoint_kernels_in_any_order_kept)
{
  int r0;
  acl_call_tag_t t = mk(&r0, 0, 0);
  static const uint64_t starts[] = {5000, 1000, 9000, 3000, 7000};
  for (int i = 0; i < 5; i++) {
    uint64_t e = acl_attr_tag(A, 0, &t, &r0, 0);
    launch(e, "ncclDevKernel_X", 0, 1, starts[i], starts[i] + 1500);
  }
  cr_assert_eq(drain(), 5);
  acl_attr_stats_t st;
  acl_attr_stats(A, &st);
  cr_assert_eq(st.overlapped, 0);
}
