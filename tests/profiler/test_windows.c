/* When CUPTI's windows start (profiler/prof_cupti.c), against a stand-in
 * libcupti that counts attaches: never before the first collective (a
 * process driving several ranks of one communicator is retired by then and
 * never attaches), and after the first collective even when no call
 * carries NCCL's events: a PyTorch job whose every workload waited for the
 * budget carried none, and its windows never opened (no samples, no
 * overlap, on the one-H200 testbed). And none opens or closes once a
 * collective was captured into a CUDA graph (its replays faulted there). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "profiler/profiler.h"

static void sink(void *u, const acl_prof_sample_t *s) { (void)u, (void)s; }

#include "logcap.h"

static void init(void)
{
  acl_log_set_nccl(logger);
  acl_log_set_level(ACL_LOG_INFO);
  logbuf[0] = 0;
}
TestSuite(windows, .init = init);

/* One of the stand-in's counters, by its function's name. */
static int fake_count(const char *name)
{
  void *h = dlopen(FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(h, "the stand-in CUPTI is not loaded");
  int (*f)(void) = (int (*)(void))dlsym(h, name);
  cr_assert_not_null(f, "%s", name);
  int n = f();
  dlclose(h);
  return n;
}

static int enables(void) { return fake_count("fake_cupti_kernel_enables"); }
static int disables(void) { return fake_count("fake_cupti_kernel_disables"); }

/* Says another CUPTI client arrived (1) or left (0). */
static void other_client(int on)
{
  void *h = dlopen(FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(h);
  void (*f)(int) = (void (*)(int))dlsym(h, "fake_cupti_set_other");
  cr_assert_not_null(f);
  f(on);
  dlclose(h);
}

static acl_prof_t *start(void)
{
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  cfg.profiler = ACL_PROF_AUTO;
  /* 20 ms every 40 ms: the first window is at most 40 ms away */
  acl_prof_opts_t o = {.cupti_lib = FAKE_CUPTI, .on_ms = 20, .period_ms = 40};
  acl_prof_t *p = acl_prof_create_ex(&cfg, sink, NULL, &o);
  cr_assert_not_null(p);
  cr_assert(acl_prof_is_cupti(p), "the stand-in CUPTI was not taken: %s", logbuf);
  return p;
}

/* NCCL's enqueue event for one call: the rank has seen enqueues, so a call
 * the gate did not pick carries no events. */
static void enqueue_ex(acl_prof_t *p, void *r, uint64_t count, bool captured)
{
  ncclProfilerEventDescr_v5_t d = {.type = ncclProfileCollApi};
  d.collApi.graphCaptured = captured;
  d.collApi.func = "AllReduce";
  d.collApi.count = count;
  d.collApi.datatype = "ncclFloat32";
  void *h = NULL;
  cr_assert_eq(acl_prof_nccl_start(p, r, &h, &d), ncclSuccess);
  if (h)
    acl_prof_nccl_stop(p, h);
}

static void enqueue(acl_prof_t *p, void *r, uint64_t count) { enqueue_ex(p, r, count, false); }

/* Windows opened within ms (polled: the first comes at most 40 ms after a
 * call, later on a loaded machine). */
static int windows_after(acl_prof_t *p, int ms)
{
  acl_prof_stats_t st;
  for (int t = 0;; t += 10) {
    acl_prof_stats(p, &st);
    if (st.cupti_windows > 0 || t >= ms)
      return (int)st.cupti_windows;
    usleep(10000);
  }
}

Test(windows, open_after_a_call_that_carries_no_events)
{
  acl_prof_t *p = start();
  int base = enables();
  int ctx = 0;
  void *r = acl_prof_rank_attach(p, &ctx, 0x1234, 0, 2);
  cr_assert_not_null(r);
  cr_assert_eq(windows_after(p, 120), 0, "a window opened before any collective");
  cr_assert_eq(enables(), base, "CUPTI attached before any collective");
  acl_call_tag_t t = {.rank_ctx = &ctx, .call_idx = 0, .coll = ncclFuncAllReduce,
                      .nbytes = 1u << 20};
  for (int i = 0; i < 3; i++) {
    enqueue(p, r, t.nbytes / 4);
    t.call_idx = (uint64_t)i;
    acl_prof_on_call(p, r, &t, ACL_GATE_SAMPLE_NEVER, false); /* waiting: no events asked */
  }
  int w = windows_after(p, 5000);
  cr_assert_geq(w, 1, "no window opened in 5 s after the first collective");
  cr_assert_gt(enables(), base);
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
}

/* Two ranks of one communicator in this process: retired before the first
 * collective, CUPTI never attaches. */
Test(windows, a_shared_process_never_attaches)
{
  acl_prof_t *p = start();
  int base = enables();
  int c0 = 0, c1 = 0;
  void *r0 = acl_prof_rank_attach(p, &c0, 0x5678, 0, 2);
  void *r1 = acl_prof_rank_attach(p, &c1, 0x5678, 1, 2);
  cr_assert(r0 && r1);
  acl_call_tag_t t = {.rank_ctx = &c0, .coll = ncclFuncAllReduce, .nbytes = 1u << 20};
  for (int i = 0; i < 3; i++) {
    t.call_idx = (uint64_t)i;
    t.rank_ctx = &c0;
    acl_prof_on_call(p, r0, &t, 0, false);
    t.rank_ctx = &c1;
    acl_prof_on_call(p, r1, &t, 0, false);
  }
  cr_assert_eq(windows_after(p, 300), 0, "a window opened in a process driving two ranks");
  cr_assert_eq(enables(), base, "CUPTI attached in a process driving two ranks");
  acl_prof_stats_ex_t sx;
  acl_prof_stats_ex(p, &sx);
  cr_assert(sx.shared_process);
  acl_prof_rank_detach(p, r0);
  acl_prof_rank_detach(p, r1);
  acl_prof_destroy(p);
}

/* CUPTI loads but cannot attach (no GPU, no permission): the first window
 * says so once, as a library that did not load would, and no window is
 * tried again. */
Test(windows, a_first_attach_that_fails_says_so_once)
{
  setenv("FAKE_CUPTI_FAIL", "1", 1);
  acl_prof_t *p = start();
  int ctx = 0;
  void *r = acl_prof_rank_attach(p, &ctx, 0x9abc, 0, 2);
  acl_call_tag_t t = {.rank_ctx = &ctx, .coll = ncclFuncAllReduce, .nbytes = 1u << 20};
  acl_prof_on_call(p, r, &t, ACL_GATE_SAMPLE_NEVER, false);
  acl_prof_stats_t st;
  for (int i = 0; i < 500; i++) {
    acl_prof_stats(p, &st);
    if (!st.cupti_available)
      break;
    usleep(10000);
  }
  cr_assert_not(st.cupti_available, "CUPTI still counted available: %s", logbuf);
  cr_assert_str_eq(st.source, "nccl");
  cr_assert_not(st.cupti_backed_off, "no other subscriber was there");
  usleep(300000); /* 7 more periods */
  const char *a = strstr(logbuf, "CUPTI unavailable");
  cr_assert_not_null(a, "log: %s", logbuf);
  cr_assert_null(strstr(a + 1, "CUPTI unavailable"), "said twice: %s", logbuf);
  cr_assert_null(strstr(logbuf, "window not opened"), "log: %s", logbuf);
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
  unsetenv("FAKE_CUPTI_FAIL");
}

/* Calls of one rank, uncaptured or captured (the decision after NCCL's
 * enqueue event, as the plugin runs them). */
static void calls(acl_prof_t *p, void *r, acl_call_tag_t *t, int n, bool captured)
{
  for (int i = 0; i < n; i++) {
    enqueue_ex(p, r, t->nbytes / 4, captured);
    acl_prof_on_call(p, r, t, captured ? ACL_GATE_SAMPLE_NEVER : 0, captured);
    t->call_idx++;
  }
}

/* CUPTI's windows were open before the capture: after the first captured
 * call none opens or closes again, and the log says why. */
Test(windows, a_capture_ends_the_windows)
{
  acl_prof_t *p = start();
  int ctx = 0;
  void *r = acl_prof_rank_attach(p, &ctx, 0x4444, 0, 2);
  acl_call_tag_t t = {.rank_ctx = &ctx, .coll = ncclFuncAllReduce, .nbytes = 1u << 20};
  calls(p, r, &t, 3, false);
  cr_assert_geq(windows_after(p, 5000), 1, "no window opened before the capture");
  calls(p, r, &t, 2, true);
  acl_prof_stats_ex_t sx;
  acl_prof_stats_ex(p, &sx);
  cr_assert(sx.graph_captured);
  acl_prof_stats_t st;
  for (int i = 0; i < 500 && !strstr(logbuf, "CUDA graph"); i++)
    usleep(10000);
  cr_assert_not_null(strstr(logbuf, "CUPTI windows off (a collective was captured into a CUDA graph"),
                     "log: %s", logbuf);
  acl_prof_stats(p, &st);
  uint64_t w = st.cupti_windows;
  int e = enables();
  calls(p, r, &t, 3, false); /* eager calls after the capture */
  usleep(300000);            /* 7 periods */
  acl_prof_stats(p, &st);
  cr_assert_eq(st.cupti_windows, w, "a window opened after the capture");
  cr_assert_eq(enables(), e, "CUPTI's kernel activity was enabled again after the capture");
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
}

/* The first collectives are captured (a graph warmed up on a side stream,
 * then captured, before any eager step): CUPTI never attaches. */
Test(windows, a_capture_before_the_first_window_never_attaches)
{
  acl_prof_t *p = start();
  int base = enables();
  int ctx = 0;
  void *r = acl_prof_rank_attach(p, &ctx, 0x5555, 0, 2);
  acl_call_tag_t t = {.rank_ctx = &ctx, .coll = ncclFuncAllReduce, .nbytes = 1u << 20};
  calls(p, r, &t, 2, true);
  calls(p, r, &t, 3, false);
  cr_assert_eq(windows_after(p, 300), 0, "a window opened after a capture");
  cr_assert_eq(enables(), base, "CUPTI attached after a capture");
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
}

/* PyTorch's profiler started while a window was open (one H100, FSDP,
 * 2026-12-07: "bufferCompleted called with unknown buffer" from PyTorch on
 * both ranks, then the job stopped making progress until it was killed
 * 226 s later). It registers its own activity callbacks, enables
 * the same kinds as ours and holds a subscriber until it tears CUPTI down.
 * The window's close disabled those kinds and tried to arm a detach;
 * now it leaves them, and CUPTI backs off for good. */
Test(windows, a_subscriber_arriving_in_a_window_is_left_alone)
{
  acl_prof_t *p = start();
  int ctx = 0;
  void *r = acl_prof_rank_attach(p, &ctx, 0x6666, 0, 2);
  acl_call_tag_t t = {.rank_ctx = &ctx, .coll = ncclFuncAllReduce, .nbytes = 1u << 20};
  calls(p, r, &t, 3, false);
  int i = 0;
  while (enables() <= disables() && i++ < 5000) /* until a window is open */
    usleep(1000);
  cr_assert_gt(enables(), disables(), "no window opened in 5 s");
  other_client(1);
  int d = disables();
  acl_prof_stats_t st;
  for (i = 0; i < 500; i++) { /* 20 ms windows: closed within 5 s */
    acl_prof_stats(p, &st);
    if (st.cupti_backed_off)
      break;
    usleep(10000);
  }
  cr_assert(st.cupti_backed_off, "CUPTI did not back off; log: %s", logbuf);
  usleep(100000); /* 2.5 periods: no window opens, none closes */
  cr_assert_eq(disables(), d, "the other client's kernel activity was disabled");
  cr_assert_not_null(strstr(logbuf, "another CUPTI subscriber"), "log: %s", logbuf);
  acl_prof_rank_detach(p, r);
  acl_prof_destroy(p);
  cr_assert_eq(disables(), d, "the other client's kernel activity was disabled at the end");
  other_client(0);
}
