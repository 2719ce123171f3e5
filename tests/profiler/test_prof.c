/* Source selection and the simulated source: CUPTI absent or bogus falls
 * back to NCCL events with a clear log line; sim feed overlap per rank. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"
#include "profiler/profiler.h"
#include "profiler/simfeed.h"

#include "logcap.h"

static acl_prof_sample_t last, last_fact;
static int nsamples, nfacts;
static void sink(void *u, const acl_prof_sample_t *s)
{
  (void)u;
  if (s->seconds < 0.0) { /* a fact: what NCCL's own choice runs */
    last_fact = *s;
    nfacts++;
    return;
  }
  last = *s;
  nsamples++;
}

static void init(void)
{
  acl_log_set_nccl(logger);
  acl_log_set_level(ACL_LOG_INFO);
  logbuf[0] = 0;
  nsamples = 0;
  nfacts = 0;
}
TestSuite(prof, .init = init);

Test(prof, bogus_cupti_path_falls_back_to_nccl)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_CUPTI;
  acl_prof_opts_t o = {.cupti_lib = "/nonexistent/libcupti.so.13"};
  acl_prof_t *p = acl_prof_create_ex(&cfg, sink, NULL, &o);
  cr_assert_not_null(p);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  cr_assert_str_eq(st.source, "nccl");
  cr_assert_not(st.cupti_available);
  cr_assert_not(st.cupti_backed_off);
  cr_assert_eq(acl_prof_nccl_mask(p), ncclProfileColl | ncclProfileKernelCh);
  cr_assert_not_null(strstr(logbuf, "CUPTI unavailable"), "log: %s", logbuf);
#ifdef ACL_HAVE_CUPTI
  cr_assert_not_null(strstr(logbuf, "/nonexistent/libcupti.so.13"), "log: %s", logbuf);
#else
  cr_assert_not_null(strstr(logbuf, "built without CUPTI headers"), "log: %s", logbuf);
#endif
  cr_assert_not_null(strstr(logbuf, "NCCL profiler events"), "log: %s", logbuf);
  acl_prof_destroy(p);
}

Test(prof, auto_tries_cupti_and_falls_back_quietly)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cr_assert_eq(cfg.profiler, ACL_PROF_AUTO);
  acl_log_set_level(ACL_LOG_WARN); /* the fallback of the default is no warning */
  acl_prof_opts_t o = {.cupti_lib = "/nonexistent/libcupti.so.13"};
  acl_prof_t *p = acl_prof_create_ex(&cfg, sink, NULL, &o);
  cr_assert_not_null(p);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  cr_assert_str_eq(st.source, "nccl");
  cr_assert_str_eq(st.cupti_window, "");
  cr_assert_eq(logbuf[0], 0, "warned: %s", logbuf);
  acl_prof_destroy(p);
  acl_log_set_level(ACL_LOG_INFO);
  logbuf[0] = 0;
  p = acl_prof_create_ex(&cfg, sink, NULL, &o);
  cr_assert_not_null(strstr(logbuf, "overlap unknown"), "log: %s", logbuf);
#ifdef ACL_HAVE_CUPTI
  cr_assert_not_null(strstr(logbuf, "/nonexistent/libcupti.so.13"), "log: %s", logbuf);
#endif
  acl_prof_destroy(p);
}

Test(prof, nccl_never_loads_cupti)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_NCCL;
  acl_prof_opts_t o = {.cupti_lib = "/nonexistent/libcupti.so.13"};
  acl_prof_t *p = acl_prof_create_ex(&cfg, sink, NULL, &o);
  cr_assert_not_null(p);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  cr_assert_str_eq(st.source, "nccl");
  cr_assert_null(strstr(logbuf, "/nonexistent/libcupti.so.13"), "CUPTI was tried: %s", logbuf);
  acl_prof_destroy(p);
}

/* Two ranks of one communicator in this process (ncclCommInitAll, or
 * several ranks on one GPU) make it a shared process, where CUPTI windows
 * must stay off; ranks of different communicators do not. */
Test(prof, shared_process_is_two_ranks_of_one_comm)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_NCCL;
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  cr_assert_not_null(p);
  int ctx[4];
  void *a = acl_prof_rank_attach(p, &ctx[0], 0x11, 0, 2);
  void *b = acl_prof_rank_attach(p, &ctx[1], 0x22, 1, 2);
  void *c = acl_prof_rank_attach(p, &ctx[2], 0x33, 0, 1); /* one rank: never shared */
  void *d = acl_prof_rank_attach(p, &ctx[3], 0x33, 0, 1);
  acl_prof_stats_ex_t ex;
  acl_prof_stats_ex(p, &ex);
  cr_assert_not(ex.shared_process, "one rank each of two communicators");
  acl_prof_rank_detach(p, a); /* 0x11 gone: a later rank of it is the first again */
  a = acl_prof_rank_attach(p, &ctx[0], 0x11, 1, 2);
  acl_prof_stats_ex(p, &ex);
  cr_assert_not(ex.shared_process, "a communicator's ranks one after the other");
  void *e = acl_prof_rank_attach(p, &ctx[0], 0x22, 0, 2);
  acl_prof_stats_ex(p, &ex);
  cr_assert(ex.shared_process, "two ranks of communicator 0x22");
  for (void **r = (void *[]){a, b, c, d, e, NULL}; *r; r++)
    acl_prof_rank_detach(p, *r);
  acl_prof_destroy(p);
}

Test(prof, not_a_cupti_library_falls_back)
{
  /* a real shared object without CUPTI's symbols */
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_CUPTI;
  acl_prof_opts_t o = {.cupti_lib = "libm.so.6"};
  acl_prof_t *p = acl_prof_create_ex(&cfg, sink, NULL, &o);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  cr_assert_str_eq(st.source, "nccl");
#ifdef ACL_HAVE_CUPTI
  cr_assert_not_null(strstr(logbuf, "lacks cuptiGetVersion"), "log: %s", logbuf);
#else
  cr_assert_not_null(strstr(logbuf, "built without CUPTI headers"), "log: %s", logbuf);
#endif
  acl_prof_destroy(p);
}

Test(prof, off_modes_ask_nothing)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_OFF;
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  cr_assert_eq(acl_prof_nccl_mask(p), 0);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  cr_assert_str_eq(st.source, "none");
  void *r = acl_prof_rank_attach(p, &cfg, 1, 0, 2);
  acl_call_tag_t t;
  memset(&t, 0, sizeof(t));
  acl_prof_on_call(p, r, &t, 0, false); /* dropped, no crash */
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
  acl_config_defaults(&cfg);
  cfg.mode = ACL_MODE_OFF;
  p = acl_prof_create(&cfg, sink, NULL);
  cr_assert_eq(acl_prof_nccl_mask(p), 0);
  acl_prof_destroy(p);
  acl_prof_destroy(NULL);
  acl_prof_stats(NULL, &st);
  cr_assert_str_eq(st.source, "none");
}

static void run_one(acl_prof_t *p, void *r, int rank_tag)
{
  acl_call_tag_t t;
  memset(&t, 0, sizeof(t));
  t.coll = 4;
  t.nbytes = 4096;
  t.call_idx = (uint64_t)rank_tag;
  t.cand.algo = ACL_ALGO_NCCL;
  acl_prof_on_call(p, r, &t, 0, false);
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 1;
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  void *c = NULL, *k = NULL;
  acl_prof_nccl_start(p, r, &c, &d);
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileKernelCh;
  d.parentObj = c;
  d.kernelCh.pTimer = 1000;
  acl_prof_nccl_start(p, r, &k, &d);
  ncclProfilerEventStateArgs_v5_t a = {.kernelCh = {.pTimer = 3000}};
  acl_prof_nccl_state(p, k, ncclProfilerKernelChStop, &a);
  acl_prof_nccl_stop(p, k);
  acl_prof_nccl_stop(p, c);
}

Test(prof, sim_feed_overlap_per_rank)
{
  char name[64];
  snprintf(name, sizeof(name), "/acl-prof-test-%d", (int)getpid());
  int fd = shm_open(name, O_CREAT | O_RDWR | O_EXCL, 0600);
  cr_assert_geq(fd, 0);
  cr_assert_eq(ftruncate(fd, sizeof(acl_simfeed_t)), 0);
  acl_simfeed_t *f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  cr_assert_neq(f, MAP_FAILED);
  f->magic = ACL_SIMFEED_MAGIC;
  f->nranks = 4;
  atomic_store(&f->overlap_milli[2], 250);
  atomic_store(&f->compute_kernels[2], 3);
  atomic_store(&f->overlap_milli[1], 900);

  acl_config_t cfg;
  acl_config_defaults(&cfg);
  snprintf(cfg.sim_feed, sizeof(cfg.sim_feed), "%s", name);
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  cr_assert_str_eq(st.source, "sim");
  cr_assert_eq(acl_prof_nccl_mask(p), ncclProfileColl | ncclProfileKernelCh);
  int ctx2, ctx7;
  void *r2 = acl_prof_rank_attach(p, &ctx2, 5, 2, 4);
  run_one(p, r2, 2);
  cr_assert_eq(nsamples, 1);
  cr_assert_float_eq(last.overlap, 0.25f, 1e-6);
  cr_assert_eq(last.compute_kernels, 3);
  cr_assert_float_eq(last.seconds, 2e-6, 1e-12);
  /* the simulator changes the overlap: the next sample sees it */
  atomic_store(&f->overlap_milli[2], 1500); /* out of range: clamped to 1 */
  run_one(p, r2, 2);
  cr_assert_float_eq(last.overlap, 1.0f, 1e-6);
  /* a rank outside the feed: overlap unknown */
  void *r7 = acl_prof_rank_attach(p, &ctx7, 5, 7, 8);
  run_one(p, r7, 7);
  cr_assert_eq(nsamples, 3);
  cr_assert_lt(last.overlap, 0.0f);
  acl_prof_rank_detach(p, r2);
  acl_prof_rank_detach(p, r7);
  acl_prof_destroy(p);
  munmap(f, sizeof(*f));
  shm_unlink(name);
}

/* NCCL's Coll event of its own choice says what it runs when the call is
 * enqueued: handed on at once as a fact (no time), once per workload while
 * it stays the same, before the call's sample (which can come ~1,000 calls
 * later). */
Test(prof, own_choice_is_a_fact_at_its_coll_event)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_NCCL;
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  int ctx;
  void *r = acl_prof_rank_attach(p, &ctx, 5, 0, 2);
  run_one(p, r, 0);
  cr_assert_eq(nfacts, 1);
  cr_assert_eq(nsamples, 1);
  cr_assert_eq(last_fact.ran_nch, 1);
  cr_assert_eq(last_fact.ran_algo, NCCL_ALGO_RING);
  cr_assert_eq(last_fact.ran_proto, NCCL_PROTO_LL);
  cr_assert_eq(last_fact.tag.widx, last.tag.widx);
  run_one(p, r, 1);
  cr_assert_eq(nfacts, 1, "the same again: no new fact");
  cr_assert_eq(nsamples, 2);
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
}

Test(prof, sim_feed_missing_or_bad_magic)
{
  char name[64];
  snprintf(name, sizeof(name), "/acl-prof-test-bad-%d", (int)getpid());
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  snprintf(cfg.sim_feed, sizeof(cfg.sim_feed), "%s", name);
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  cr_assert_not_null(strstr(logbuf, "not readable yet"), "log: %s", logbuf);
  int ctx;
  void *r = acl_prof_rank_attach(p, &ctx, 5, 0, 2);
  run_one(p, r, 0);
  cr_assert_eq(nsamples, 1, "durations still come from NCCL events");
  cr_assert_lt(last.overlap, 0.0f);
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
  /* wrong magic: refused */
  int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
  cr_assert_eq(ftruncate(fd, sizeof(acl_simfeed_t)), 0);
  close(fd);
  p = acl_prof_create(&cfg, sink, NULL);
  r = acl_prof_rank_attach(p, &ctx, 5, 0, 2);
  run_one(p, r, 0);
  cr_assert_lt(last.overlap, 0.0f);
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
  shm_unlink(name);
}

/* ---- event gating at the enqueue (profiler/gate.h) ---- */
#include "profiler/gate.h"

#define FULL (ncclProfileColl | ncclProfileKernelCh)

/* the search's rule (tuner/search/search.h acl_search_sampled) */
static bool rule(uint8_t shift, uint64_t call) { return (call & ((1ull << shift) - 1)) == 0; }

/* A coalesced group: both collectives are stamped before either decision,
 * and each decision learns its own call's stamp, whatever NCCL's order. */
Test(gate, group_decisions_take_their_own_enqueue)
{
  acl_gate_t *g = acl_gate_create(rule);
  int mask = 0, who = 0;
  cr_assert_eq(acl_gate_set_mask(g, &mask, ncclProfileCollApi), ncclProfileCollApi);
  const int A = ncclFuncAllGather, B = ncclFuncReduceScatter;
  /* step 1 teaches the sequence A, B and both workloads' rules (every call) */
  cr_assert(!acl_gate_enqueued(g, &who, A, 100, FULL));
  cr_assert(!acl_gate_enqueued(g, &who, B, 200, FULL));
  cr_assert(!acl_gate_decided(g, &who, B, 200, 0, 0));
  cr_assert(!acl_gate_decided(g, &who, A, 100, 0, 0));
  /* step 2: the last decision left the mask for what follows B, B itself
   * until something did: A comes instead and carries events all the same;
   * A's enqueue predicts B (learnt in step 1), whose call 1 is sampled */
  cr_assert(acl_gate_enqueued(g, &who, A, 100, FULL), "stamped by step 1's last decision");
  cr_assert_eq(mask, FULL | ncclProfileCollApi, "B follows A and samples every call");
  cr_assert(acl_gate_enqueued(g, &who, B, 200, FULL));
  /* NCCL decides the larger first; each decision learns its own stamp */
  cr_assert(acl_gate_decided(g, &who, B, 200, 1, 0), "B's enqueue carried events");
  cr_assert(acl_gate_decided(g, &who, A, 100, 1, 0), "so did A's");
  /* a decision whose enqueue was not seen is not measured */
  cr_assert(!acl_gate_decided(g, &who, A, 100, 2, ACL_GATE_NEVER), "no enqueue of call 2 yet");
  /* the stamp is what the mask held, whatever A's own rule says now */
  acl_gate_enqueued(g, &who, A, 100, FULL);
  cr_assert(acl_gate_decided(g, &who, A, 100, 2, ACL_GATE_NEVER));
  cr_assert_eq(mask & FULL, FULL, "B is expected next, on its every-call rule");
  /* a decision with no enqueue of its size (NCCL aggregated it): not measured */
  cr_assert(!acl_gate_decided(g, &who, A, 300, 0, 0));
  acl_gate_stats_t st;
  acl_gate_stats(g, &st);
  cr_assert_eq(st.enqueued, 5);
  cr_assert_eq(st.carried, 3);
  cr_assert_eq(st.unseen, 2);
  acl_gate_destroy(g);
}

/* The mask is one for the process: the prediction follows the enqueue
 * order across communicators, and a workload's rule picks its grid calls. */
Test(gate, prediction_crosses_communicators)
{
  acl_gate_t *g = acl_gate_create(rule);
  int mask = 0, c0 = 0, c1 = 0;
  acl_gate_set_mask(g, &mask, ncclProfileCollApi);
  const int AR = ncclFuncAllReduce;
  /* c0's X then c1's Y, every step; Y samples 1 call in 2, X none */
  int carried_y = 0;
  for (uint64_t k = 0; k < 8; k++) {
    acl_gate_enqueued(g, &c0, AR, 64, FULL);
    acl_gate_decided(g, &c0, AR, 64, k, ACL_GATE_NEVER);
    bool y = acl_gate_enqueued(g, &c1, AR, 64, FULL);
    bool yd = acl_gate_decided(g, &c1, AR, 64, k, 1);
    cr_assert_eq(y, yd, "step %llu: the decision learns its enqueue's stamp",
                 (unsigned long long)k);
    if (k >= 2) /* learnt: Y follows X; Y's even calls carry events */
      cr_assert_eq(yd, k % 2 == 0, "step %llu: Y carried %d", (unsigned long long)k, yd);
    carried_y += yd;
  }
  cr_assert_geq(carried_y, 3);
  /* a communicator gone: its keys are forgotten, the other's kept */
  acl_gate_forget(g, &c1);
  cr_assert(!acl_gate_decided(g, &c1, AR, 64, 8, 1));
  acl_gate_release_mask(g, &mask);
  acl_gate_destroy(g);
  acl_gate_destroy(NULL);
}
