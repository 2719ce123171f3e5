/* NCCL 2.30's ABIs through the real plugin: tuner v6 (getChunkSize) and
 * profiler v6 are found first and the older versions in NCCL's order
 * after them; a candidate's chunk size reaches exactly the calls that run
 * it, the same on every rank; the chunk axis is held with AUTOCCL_CHUNK=off
 * and where NCCL's own choice runs; tables carry chunk sizes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NR 4
static acl_h_plugin_t P;

static void teardown(void) { acl_h_unload(&P); }
TestSuite(v6, .fini = teardown, .timeout = 60);

Test(v6, fallback_order_is_ncclS_newest_first)
{
  /* NCCL 2.30 takes v6; 2.28 (which knows v5 at most) v5; older NCCLs
   * (tuner v4 = 2.23 ..., v2 = 2.19) theirs; profiler v6 -> v5 -> none. */
  for (int max = 6; max >= 2; max--) {
    acl_h_load_max(&P, max);
    cr_assert_eq(P.version, max, "an NCCL knowing tuner v%d takes v%d", max, P.version);
    cr_assert_eq(P.prof_version, max >= 6 ? 6 : max == 5 ? 5 : 0);
    acl_h_unload(&P);
  }
  acl_h_load(&P);
  cr_assert_str_eq(P.v6->name, "autoccl");
  cr_assert_str_eq(P.prof6->name, "autoccl");
  cr_assert_not_null(P.v6->getChunkSize, "v6 without getChunkSize is v5 with extra bytes");
  cr_assert_not_null(P.v5, "v5 stays exported for NCCL 2.28");
  cr_assert_not_null(P.prof, "profiler v5 stays exported for NCCL 2.28");
}

Test(v6, profiler_v6_declines_copy_engine_events_and_takes_coll_events)
{
  acl_h_load(&P);
  void *pctx = NULL;
  int mask = 0;
  cr_assert_eq(P.prof6->init(&pctx, 0x6006, &mask, "v6", 1, 2, 0, acl_h_logger), ncclSuccess);
  cr_assert_eq(mask & (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch), 0,
               "the plugin never asks for copy-engine events");
  ncclProfilerEventDescr_v6_t ce = {.type = ncclProfileCeColl};
  ce.ceColl.func = "AllGather";
  ce.ceColl.syncStrategy = "batch";
  void *h = (void *)1;
  cr_assert_eq(P.prof6->startEvent(pctx, &h, &ce), ncclSuccess);
  cr_assert_null(h, "a copy-engine event gets no handle");
  ncclProfilerEventDescr_v6_t d = {.type = ncclProfileColl};
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 8;
  d.coll.algo = "Ring";
  d.coll.proto = "Simple";
  h = NULL;
  cr_assert_eq(P.prof6->startEvent(pctx, &h, &d), ncclSuccess);
  if (h)
    cr_assert_eq(P.prof6->stopEvent(h), ncclSuccess);
  cr_assert_eq(P.prof6->finalize(pctx), ncclSuccess);
}

/* NCCL 2.30's own chunk for this test: Ring/Simple's buffer limit (2 MiB),
 * which it also clamps to; the others may grow 4x. */
static size_t nccl_chunk(int a, int p)
{
  return a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE ? 2u << 20 : 512u << 10;
}

/* The simulated truth: RING/LL128 at 16 channels with a quarter of NCCL's
 * chunk is fastest; chunk size matters 30% per doubling away from it. */
static double true_us(int a, int p, int nch, int k)
{
  double base = a == NCCL_ALGO_RING ? 100.0 : 140.0;
  double proto = p == NCCL_PROTO_LL128 ? 0.8 : p == NCCL_PROTO_LL ? 1.6 : 1.0;
  int ch = nch > 0 ? nch : 8;
  return base * proto * (1.0 + 0.15 * fabs(log2((double)ch / 16.0))) *
         (1.0 + 0.3 * fabs((double)k + 2.0));
}

typedef struct rank {
  void *pctx, *tctx;
  int mask, api_mask;
} rank_t;

/* Plays NCCL 2.30 for 4 ranks on one thread (group style) for `calls` calls
 * of one AllReduce workload: getCollInfo, NCCL's pick, then getChunkSize
 * with NCCL's own chunk, then the profiler events with the time the truth
 * gives. Checks at every call that the ranks run the same (algo, proto,
 * channels, chunk) and that the chunk differs from NCCL's own only where
 * a candidate runs. Returns the chunk scale of the last call, sets
 * *nonzero to the calls that ran another chunk. */
static int play(int calls, int *nonzero, int *stable_since)
{
  rank_t r[NR] = {0};
  uint64_t comm = 0x6006000000000000ull ^ (uint64_t)getpid(), clock[NR] = {0};
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.prof6->init(&r[i].pctx, comm, &r[i].mask, "v6", 1, NR, i, acl_h_logger),
                 ncclSuccess);
    cr_assert_eq(P.v6->init(&r[i].tctx, comm, NR, 1, acl_h_logger, NULL, NULL), ncclSuccess);
    cr_assert_not_null(r[i].tctx);
  }
  const size_t nbytes = 64u << 20;
  int k_last = 0, last[4] = {-9, -9, -9, -9};
  *nonzero = 0;
  *stable_since = 0;
  for (int call = 0; call < calls; call++) {
    int got[NR][4];
    for (int i = 0; i < NR; i++) { /* NCCL asks for every bin first ... */
      float t[7][3], ref[7][3];
      acl_h_cost_table(ncclFuncAllReduce, nbytes, NR, t);
      memcpy(ref, t, sizeof t);
      int nch = 0;
      r[i].api_mask = acl_h_enqueue(P.prof, r[i].pctx, &r[i].mask, ncclFuncAllReduce, nbytes, NR);
      cr_assert_eq(P.v6->getCollInfo(r[i].tctx, ncclFuncAllReduce, nbytes, 1, (float **)(void *)t,
                                     7, 3, 0, &nch),
                   ncclSuccess, "call %d rank %d: %s", call, i, acl_h_log_text());
      acl_h_select(t, &got[i][0], &got[i][1]);
      got[i][2] = nch;
      got[i][3] = memcmp(t, ref, sizeof t) != 0 || nch != 0; /* a candidate runs */
    }
    int kk[NR];
    for (int i = 0; i < NR; i++) { /* ... then sizes the chunks */
      size_t own = nccl_chunk(got[i][0], got[i][1]), c = own;
      cr_assert_eq(P.v6->getChunkSize(r[i].tctx, ncclFuncAllReduce, nbytes, got[i][0], got[i][1],
                                      got[i][2] > 0 ? got[i][2] : 8, &c),
                   ncclSuccess);
      cr_assert_gt(c, 0u, "a zero chunk would stall NCCL");
      kk[i] = (int)lround(log2((double)c / (double)own));
      if (!got[i][3])
        cr_assert_eq(kk[i], 0, "call %d: NCCL's own choice ran with chunk x2^%d", call, kk[i]);
    }
    for (int i = 1; i < NR; i++)
      cr_assert(got[i][0] == got[0][0] && got[i][1] == got[0][1] && got[i][2] == got[0][2] &&
                    kk[i] == kk[0],
                "call %d: rank %d runs %d/%d/%d chunk %d, rank 0 %d/%d/%d chunk %d", call, i,
                got[i][0], got[i][1], got[i][2], kk[i], got[0][0], got[0][1], got[0][2], kk[0]);
    *nonzero += kk[0] != 0;
    int now[4] = {got[0][0], got[0][1], got[0][2], kk[0]};
    if (memcmp(now, last, sizeof now) != 0) {
      memcpy(last, now, sizeof now);
      *stable_since = call;
    }
    k_last = kk[0];
    for (int i = 0; i < NR; i++)
      acl_h_report_call(P.prof, r[i].pctx, r[i].api_mask, ncclFuncAllReduce, nbytes, got[i][0],
                        got[i][1], got[i][2], true_us(got[i][0], got[i][1], got[i][2], kk[i]),
                        &clock[i]);
  }
  for (int i = 0; i < NR; i++) {
    cr_assert_eq(P.v6->finalize(r[i].tctx), ncclSuccess);
    cr_assert_eq(P.prof6->finalize(r[i].pctx), ncclSuccess);
  }
  return k_last;
}

Test(v6, chunk_axis_finds_the_chunk_and_ranks_agree_at_every_call)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1); /* no waiting: see test_online.c */
  acl_h_load(&P);
  int nonzero, stable;
  int k = play(3000, &nonzero, &stable);
  cr_assert_gt(nonzero, 0, "no call ever ran another chunk size");
  cr_assert_eq(k, -2, "settled on chunk x2^%d, the truth's best is x1/4", k);
  cr_assert_lt(stable, 2500, "still changing at call %d", stable);
}

Test(v6, chunk_off_holds_the_axis)
{
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1);
  setenv("AUTOCCL_CHUNK", "off", 1);
  acl_h_load(&P);
  int nonzero, stable;
  cr_assert_eq(play(1500, &nonzero, &stable), 0);
  cr_assert_eq(nonzero, 0, "AUTOCCL_CHUNK=off: %d calls ran another chunk", nonzero);
}

Test(v6, static_table_chunk_reaches_only_its_calls)
{
  char path[] = "/tmp/acl-v6-table-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  const char *text = "all_reduce 0 max RING LL128 16:x1/4\n";
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  cr_assert_eq(P.v6->init(&ctx, 0x6007, 8, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  float t[7][3];
  acl_h_cost_table(ncclFuncAllReduce, 1u << 20, 8, t);
  int nch = 0, a, p;
  cr_assert_eq(
      P.v6->getCollInfo(ctx, ncclFuncAllReduce, 1u << 20, 1, (float **)(void *)t, 7, 3, 0, &nch),
      ncclSuccess);
  acl_h_select(t, &a, &p);
  cr_assert(a == NCCL_ALGO_RING && p == NCCL_PROTO_LL128 && nch == 16);
  size_t c = 1u << 20;
  P.v6->getChunkSize(ctx, ncclFuncAllReduce, 1u << 20, a, p, 16, &c);
  cr_assert_eq(c, 256u << 10, "the rule's x1/4 of NCCL's 1 MiB");
  c = 1u << 20; /* a part of a split schedule: fewer bytes, one channel */
  P.v6->getChunkSize(ctx, ncclFuncAllReduce, 300000, a, p, 1, &c);
  cr_assert_eq(c, 256u << 10);
  c = 1u << 20; /* NCCL ran another pair: not this decision's call */
  P.v6->getChunkSize(ctx, ncclFuncAllReduce, 1u << 20, NCCL_ALGO_TREE, p, 16, &c);
  cr_assert_eq(c, 1u << 20);
  c = 1u << 20; /* another collective type */
  P.v6->getChunkSize(ctx, ncclFuncAllGather, 1u << 20, a, p, 16, &c);
  cr_assert_eq(c, 1u << 20);
  c = 8192; /* never below the 4 KiB floor */
  P.v6->getChunkSize(ctx, ncclFuncAllReduce, 1u << 20, a, p, 16, &c);
  cr_assert_eq(c, 4096u);
  /* A later call NCCL decides (no rule covers Broadcast) leaves the chunk. */
  acl_h_cost_table(ncclFuncBroadcast, 1u << 20, 8, t);
  nch = 0;
  P.v6->getCollInfo(ctx, ncclFuncBroadcast, 1u << 20, 1, (float **)(void *)t, 7, 3, 0, &nch);
  c = 1u << 20;
  P.v6->getChunkSize(ctx, ncclFuncBroadcast, 1u << 20, NCCL_ALGO_RING, NCCL_PROTO_LL128, 16, &c);
  cr_assert_eq(c, 1u << 20);
  cr_assert_eq(P.v6->finalize(ctx), ncclSuccess);
  unlink(path);
}
