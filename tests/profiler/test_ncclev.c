/* The NCCL profiler v5 source through the public acl_prof API: Coll +
 * KernelCh sequences as NCCL (or autoccl-sim) would report them. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "profiler/ncclev.h" /* ACL_EV_POOL */
#include "profiler/profiler.h"

static acl_prof_sample_t got[64];
static int ngot;
static pthread_mutex_t got_mu = PTHREAD_MUTEX_INITIALIZER;

static void sink(void *u, const acl_prof_sample_t *s)
{
  (void)u;
  pthread_mutex_lock(&got_mu);
  if (ngot < 64)
    got[ngot] = *s;
  ngot++;
  pthread_mutex_unlock(&got_mu);
}

#include "logcap.h"

static acl_prof_t *P;
static void *R;
static int rank_obj;

static void setup(void)
{
  acl_log_set_nccl(logger);
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_NCCL;
  P = acl_prof_create(&cfg, sink, NULL);
  R = acl_prof_rank_attach(P, &rank_obj, 0xabc, 0, 4);
  ngot = 0;
  logbuf[0] = 0;
}
static void teardown(void)
{
  acl_prof_rank_detach(P, R);
  acl_prof_destroy(P);
}
TestSuite(ncclev, .init = setup, .fini = teardown);

static acl_call_tag_t tag(int coll, uint64_t nbytes, uint64_t idx, int algo, int proto, int nch)
{
  acl_call_tag_t t;
  memset(&t, 0, sizeof(t));
  t.rank_ctx = &rank_obj;
  t.coll = (uint8_t)coll;
  t.nbytes = nbytes;
  t.call_idx = idx;
  t.widx = (uint32_t)(coll * 100 + (nbytes >> 20));
  t.cand.algo = (int8_t)algo;
  t.cand.proto = (int8_t)proto;
  t.cand.nchannels = (int16_t)nch;
  return t;
}

static void *coll_start(const char *func, size_t count, const char *dt, int nch, const char *algo,
                        const char *proto)
{
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileColl;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.datatype = dt;
  d.coll.nChannels = (uint8_t)nch;
  d.coll.algo = algo;
  d.coll.proto = proto;
  void *h = NULL;
  cr_assert_eq(acl_prof_nccl_start(P, R, &h, &d), ncclSuccess);
  return h;
}

static void *ch_start(void *coll, int ch, uint64_t t)
{
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileKernelCh;
  d.parentObj = coll;
  d.kernelCh.channelId = (uint8_t)ch;
  d.kernelCh.pTimer = t;
  void *h = NULL;
  acl_prof_nccl_start(P, R, &h, &d);
  return h;
}

static void ch_stop(void *h, uint64_t t)
{
  ncclProfilerEventStateArgs_v5_t a;
  memset(&a, 0, sizeof(a));
  a.kernelCh.pTimer = t;
  acl_prof_nccl_state(P, h, ncclProfilerKernelChStop, &a);
  acl_prof_nccl_stop(P, h);
}

Test(ncclev, mask_and_source)
{
  cr_assert_eq(acl_prof_nccl_mask(P), ncclProfileColl | ncclProfileKernelCh);
  acl_prof_stats_t st;
  acl_prof_stats(P, &st);
  cr_assert_str_eq(st.source, "nccl");
  cr_assert_eq(st.sample_latency_seconds, -1.0);
}

Test(ncclev, coll_kernelch_sample_out_of_order_stops)
{
  acl_call_tag_t t = tag(4, 4096 * 4, 5, 1, 2, 2);
  acl_prof_on_call(P, R, &t, 0, false);
  void *c = coll_start("AllReduce", 4096, "ncclFloat32", 2, "RING", "SIMPLE");
  cr_assert_not_null(c);
  void *k0 = ch_start(c, 0, 1000);
  void *k1 = ch_start(c, 1, 900);
  ch_stop(k1, 5000); /* channel 1 stops first, and last */
  cr_assert_eq(ngot, 0, "not all channels stopped yet");
  ch_stop(k0, 4000);
  cr_assert_eq(ngot, 1);
  acl_prof_nccl_stop(P, c);
  cr_assert_eq(got[0].tag.call_idx, 5);
  cr_assert_float_eq(got[0].seconds, 4100e-9, 1e-15); /* max(stop) - min(start) */
  cr_assert_lt(got[0].overlap, 0.0f, "overlap unknown without CUPTI");
  acl_prof_stats_t st;
  acl_prof_stats(P, &st);
  cr_assert_eq(st.samples, 1);
  cr_assert_eq(st.mismatches, 0);
  cr_assert_geq(st.sample_latency_seconds, 0.0);
}

Test(ncclev, missing_stop_gives_no_sample)
{
  acl_call_tag_t t = tag(4, 1024, 0, 1, 2, 0);
  acl_prof_on_call(P, R, &t, 0, false);
  void *c = coll_start("AllReduce", 256, "ncclFloat32", 2, "RING", "SIMPLE");
  void *k0 = ch_start(c, 0, 10);
  void *k1 = ch_start(c, 1, 10);
  ch_stop(k0, 100);
  acl_prof_nccl_stop(P, k1); /* stopEvent without its KernelChStop state */
  acl_prof_nccl_stop(P, c);
  cr_assert_eq(ngot, 0);
  acl_prof_stats_ex_t x;
  acl_prof_stats_ex(P, &x);
  cr_assert_eq(x.incomplete, 1);
}

Test(ncclev, clock_edges)
{
  acl_call_tag_t t = tag(4, 1024, 0, 1, 2, 0);
  acl_prof_on_call(P, R, &t, 0, false);
  void *c = coll_start("AllReduce", 256, "ncclFloat32", 1, "RING", "SIMPLE");
  ch_stop(ch_start(c, 0, 500), 400); /* stop < start */
  acl_prof_nccl_stop(P, c);
  acl_prof_on_call(P, R, &t, 0, false);
  c = coll_start("AllReduce", 256, "ncclFloat32", 1, "RING", "SIMPLE");
  ch_stop(ch_start(c, 0, 500), 500); /* equal */
  acl_prof_nccl_stop(P, c);
  acl_prof_on_call(P, R, &t, 0, false);
  c = coll_start("AllReduce", 256, "ncclFloat32", 1, "RING", "SIMPLE");
  ch_stop(ch_start(c, 0, UINT64_MAX - 100), UINT64_MAX - 10); /* near wrap, fine */
  acl_prof_nccl_stop(P, c);
  cr_assert_eq(ngot, 1);
  cr_assert_float_eq(got[0].seconds, 90e-9, 1e-15);
  acl_prof_stats_ex_t x;
  acl_prof_stats_ex(P, &x);
  cr_assert_eq(x.bad_clock, 2);
}

Test(ncclev, fifo_matching_by_coll_and_bytes)
{
  /* tags for A(AllReduce 1 MiB) then B(AllGather 4 MiB total on 4 ranks);
   * an untuned Broadcast's Coll arrives first and is skipped; B's Coll
   * carries the per-rank count */
  acl_call_tag_t a = tag(4, 1 << 20, 1, 1, 2, 0), b = tag(2, 4 << 20, 2, 1, 2, 0);
  acl_prof_on_call(P, R, &a, 0, false);
  acl_prof_on_call(P, R, &b, 0, false);
  void *u = coll_start("Broadcast", 100, "ncclInt8", 1, "RING", "SIMPLE");
  void *cb = coll_start("AllGather", 1 << 20, "ncclInt8", 1, "RING", "SIMPLE");
  void *ca = coll_start("AllReduce", 1 << 18, "ncclFloat32", 1, "RING", "SIMPLE");
  ch_stop(ch_start(u, 0, 0), 10);
  ch_stop(ch_start(ca, 0, 0), 30);
  ch_stop(ch_start(cb, 0, 0), 20);
  cr_assert_eq(ngot, 2);
  cr_assert_eq(got[0].tag.call_idx, 1);
  cr_assert_float_eq(got[0].seconds, 30e-9, 1e-15);
  cr_assert_eq(got[1].tag.call_idx, 2);
  cr_assert_float_eq(got[1].seconds, 20e-9, 1e-15);
  acl_prof_stats_ex_t x;
  acl_prof_stats_ex(P, &x);
  cr_assert_eq(x.colls, 3);
  cr_assert_eq(x.colls_matched, 2);
}

Test(ncclev, mismatch_and_clamp_logged_once_per_workload)
{
  for (int i = 0; i < 3; i++) {
    acl_call_tag_t t = tag(4, 1 << 20, (uint64_t)i, 1, 2, 32); /* RING/SIMPLE/32ch */
    acl_prof_on_call(P, R, &t, 0, false);
    void *c = coll_start("AllReduce", 1 << 18, "ncclFloat32", 16, "RING", "SIMPLE");
    acl_prof_nccl_stop(P, c);
  }
  acl_call_tag_t t = tag(4, 2 << 20, 9, 0, 1, 0); /* TREE/LL128 */
  acl_prof_on_call(P, R, &t, 0, false);
  acl_prof_nccl_stop(P, coll_start("AllReduce", 1 << 19, "ncclFloat32", 8, "RING", "LL128"));
  t = tag(4, 2 << 20, 10, ACL_ALGO_NCCL, 0, 0); /* NCCL's own choice: no check */
  acl_prof_on_call(P, R, &t, 0, false);
  acl_prof_nccl_stop(P, coll_start("AllReduce", 1 << 19, "ncclFloat32", 8, "RING", "LL"));
  acl_prof_stats_t st;
  acl_prof_stats(P, &st);
  cr_assert_eq(st.mismatches, 4);
  acl_prof_stats_ex_t x;
  acl_prof_stats_ex(P, &x);
  cr_assert_eq(x.clamped, 3);
  int clamp_lines = 0;
  for (char *s = logbuf; (s = strstr(s, "mismatch: clamped")); s++)
    clamp_lines++;
  cr_assert_eq(clamp_lines, 1, "log:\n%s", logbuf);
  cr_assert_not_null(strstr(logbuf, "mismatch: algo/proto"));
}

/* The kinds as counted, logged and written to traces (docs/profiler.md). */
Test(ncclev, ran_kinds_and_their_names)
{
  acl_candidate_t c = {.algo = 1, .proto = 0, .nchannels = 16};
  cr_assert_eq(acl_ran_kind(&c, 1, 0, 16), ACL_RAN_OK);
  cr_assert_eq(acl_ran_kind(&c, 1, 2, 16), ACL_RAN_ALGO_PROTO);
  cr_assert_eq(acl_ran_kind(&c, -1, 0, 16), ACL_RAN_ALGO_PROTO, "unrecognised counts as another");
  cr_assert_eq(acl_ran_kind(&c, 1, 0, 8), ACL_RAN_CLAMPED);
  cr_assert_eq(acl_ran_kind(&c, 1, 0, 24), ACL_RAN_CHANNELS);
  c.nchannels = 0; /* channels left to NCCL */
  cr_assert_eq(acl_ran_kind(&c, 1, 0, 8), ACL_RAN_OK);
  c.algo = ACL_ALGO_NCCL;
  cr_assert_eq(acl_ran_kind(&c, 0, 2, 8), ACL_RAN_OK, "NCCL's own choice: nothing to compare");
  const char *want[] = {"ok", "algo/proto", "clamped", "channels", "unknown"};
  cr_assert_eq(sizeof(want) / sizeof(want[0]), ACL_RAN_KINDS);
  for (int k = 0; k < ACL_RAN_KINDS; k++)
    cr_assert_str_eq(acl_ran_kind_name((acl_ran_kind_t)k), want[k]);
  cr_assert_str_eq(acl_ran_kind_name(ACL_RAN_KINDS), "?");
}

Test(ncclev, foreign_parent_and_null_handles_ignored)
{
  int bogus;
  void *h = ch_start(&bogus, 0, 1);
  cr_assert_null(h);
  cr_assert_eq(acl_prof_nccl_stop(P, NULL), ncclSuccess);
  cr_assert_eq(acl_prof_nccl_state(P, NULL, ncclProfilerKernelChStop, NULL), ncclSuccess);
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileProxyOp;
  void *x = (void *)1;
  acl_prof_nccl_start(P, R, &x, &d);
  cr_assert_null(x);
}

Test(ncclev, pool_bounded_no_leak)
{
  /* many complete collectives: handles are recycled */
  for (int i = 0; i < 10000; i++) {
    acl_call_tag_t t = tag(4, 1024, (uint64_t)i, 1, 2, 0);
    acl_prof_on_call(P, R, &t, 0, false);
    void *c = coll_start("AllReduce", 256, "ncclFloat32", 2, "RING", "SIMPLE");
    void *k0 = ch_start(c, 0, 10), *k1 = ch_start(c, 1, 11);
    acl_prof_nccl_stop(P, c); /* Coll may stop before its channels */
    ch_stop(k1, 50);
    ch_stop(k0, 40);
  }
  cr_assert_eq(ngot, 10000);
  acl_prof_stats_t st;
  acl_prof_stats(P, &st);
  cr_assert_eq(st.records_dropped, 0);
}

static void *proxy_thread(void *arg)
{
  void **ks = arg;
  for (int i = 0; i < 8; i++)
    ch_stop(ks[i], 1000 + (uint64_t)i);
  return NULL;
}

Test(ncclev, channels_stopped_from_another_thread)
{
  acl_call_tag_t t = tag(4, 1024, 77, 1, 2, 0);
  acl_prof_on_call(P, R, &t, 0, false);
  void *c = coll_start("AllReduce", 256, "ncclFloat32", 8, "RING", "SIMPLE");
  void *ks[8];
  for (int i = 0; i < 8; i++)
    ks[i] = ch_start(c, i, 100 + (uint64_t)i);
  pthread_t th;
  pthread_create(&th, NULL, proxy_thread, ks);
  pthread_join(th, NULL);
  acl_prof_nccl_stop(P, c);
  cr_assert_eq(ngot, 1);
  cr_assert_float_eq(got[0].seconds, 907e-9, 1e-15);
}

/* A host far ahead of its GPU (2xH200, 1 GiB AllGather: ~500 calls) holds
 * many Coll events whose channels have not started. When the pool runs dry
 * a new Coll gets no handle (that call goes unsampled) instead of reusing the
 * slot of a Coll still waiting for its channels, whose stamps would then be
 * credited to another call. */
Test(ncclev, full_pool_never_reuses_a_waiting_coll)
{
  acl_call_tag_t t0 = tag(4, 4096 * 4, 0, 1, 2, 1);
  acl_prof_on_call(P, R, &t0, 0, false);
  void *first = coll_start("AllReduce", 4096, "ncclFloat32", 1, "RING", "SIMPLE");
  cr_assert_not_null(first);
  acl_prof_nccl_stop(P, first); /* stopped at launch, channels to come */
  int got_handles = 1;
  for (int i = 1; i < ACL_EV_POOL + 8; i++) {
    acl_call_tag_t t = tag(4, 4096 * 4, (uint64_t)i, 1, 2, 1);
    acl_prof_on_call(P, R, &t, 0, false);
    void *c = coll_start("AllReduce", 4096, "ncclFloat32", 1, "RING", "SIMPLE");
    if (c) {
      got_handles++;
      acl_prof_nccl_stop(P, c);
    }
  }
  cr_assert_lt(got_handles, ACL_EV_POOL + 8, "the pool never ran dry");
  /* the first call's channel arrives now: still its own sample */
  void *k = ch_start(first, 0, 1000);
  cr_assert_not_null(k, "the waiting Coll's slot was reused");
  ch_stop(k, 3000);
  cr_assert_eq(ngot, 1);
  cr_assert_eq(got[0].tag.call_idx, 0);
  cr_assert_float_eq(got[0].seconds, 2000e-9, 1e-15);
}

/* One call of a 64 KiB AllReduce on two channels, its KernelCh stamps as
 * given. */
static void one_call(uint64_t idx, uint64_t s0, uint64_t e0, uint64_t s1, uint64_t e1)
{
  acl_call_tag_t t = tag(4, 65536, idx, 1, 0, 2);
  acl_prof_on_call(P, R, &t, 0, false);
  void *c = coll_start("AllReduce", 16384, "ncclFloat32", 2, "RING", "LL");
  void *k0 = ch_start(c, 0, s0);
  void *k1 = ch_start(c, 1, s1);
  ch_stop(k0, e0);
  ch_stop(k1, e1);
  acl_prof_nccl_stop(P, c);
}

/* What a one-H200 run recorded (two ranks, NCCL 2.30.7): calls 64 apart
 * got one kernel's stamps (NCCL keeps 64 per channel), and a channel's stale
 * start made a 50 us kernel last 63 ms (a 3 us one here). The kernels of
 * one rank run one after another, so neither is a measurement; the calls in
 * between are. */
Test(ncclev, stale_channel_stamps_are_not_samples)
{
  const uint64_t B = 1000000000ull, step = 10000; /* a call every 10 us */
  for (uint64_t i = 0; i < 64; i++) /* 64 honest calls, 3 us each */
    one_call(i, B + i * step, B + i * step + 3000, B + i * step + 100, B + i * step + 2900);
  cr_assert_eq(ngot, 64);
  /* call 64 reports call 0's stamps again */
  one_call(64, B, B + 3000, B + 100, B + 2900);
  /* call 65: channel 1's start is stale by 63 ms, its stops are right */
  uint64_t s = B + 65 * step;
  one_call(65, s, s + 3000, s - 63000000ull, s + 2900);
  cr_assert_eq(ngot, 64, "a repeated or stale stamp gave a sample");
  one_call(66, B + 66 * step, B + 66 * step + 3000, B + 66 * step + 100, B + 66 * step + 2900);
  cr_assert_eq(ngot, 65, "the next honest call is measured");
  acl_prof_stats_t st;
  acl_prof_stats(P, &st);
  cr_assert_eq(st.stale, 2);
}
