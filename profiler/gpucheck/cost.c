/* Cost and accuracy of one profiler mode on one GPU, one process per run
 * (CUPTI, once attached, cannot be compared with "never attached" inside
 * one process): scripts/gpu-profiler-cost.py interleaves the runs.
 *
 *   acl-gpucheck-profiler-cost MODE LOOP ITERS
 *   MODE  nccl | default | default_keep | cupti
 *         (default_keep: windows closed by disabling CUPTI's kinds only)
 *   LOOP  launch:  ITERS launches of 3 us kernels, 1 in 20 a tagged "collective"
 *                  (an NCCL-named kernel), the rest compute, one stream;
 *         compute: ITERS steps of a tagged 1 ms "collective" with a 0.6 ms
 *                  compute kernel on another stream that starts with it: the
 *                  constructed overlap is 0.6 and the exposed time 0.4 ms a call;
 *                  the host runs at most AHEAD steps ahead;
 *         shift:   the compute loop with the compute stream idle for the first
 *                  half: the windows must see the regime change (0 -> 0.6).
 * Prints one JSON object: wall time, samples, overlap and exposed time as
 * the profiler measured them, and the constructed values. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "profiler/gpucheck/check.h"
#include "profiler/overlap.h"
#include "profiler/profiler.h"

/* The compute loop's construction: collective 1 ms, compute 0.6 ms. */
#define COLL_NS 1000000ull
#define COMP_NS 600000ull
#define LAUNCH_NS 3000ull /* launch loop kernels: 3 us */
#define LAUNCH_TAG_EVERY 20
/* The compute loop's host stays at most this many steps ahead of its GPU,
 * as a training step's host does (a few ms): a host seconds ahead would tag
 * calls whose kernels run after the window closed. */
#define AHEAD 8

static int rank_id;
static uint64_t half = UINT64_MAX; /* shift loop: compute starts at this call */
static atomic_ulong n_ov_half[2];
static _Atomic uint64_t ov_micro_half[2];
static atomic_ulong n_samples, n_ov;
static _Atomic uint64_t sum_ns, ov_coll_ns, ov_exp_ns, ov_milli_sum;

static void sink(void *u, const acl_prof_sample_t *s)
{
  (void)u;
  if (s->seconds < 0.0)
    return; /* a fact (what NCCL's own choice runs), no sample */
  atomic_fetch_add(&n_samples, 1);
  atomic_fetch_add(&sum_ns, (uint64_t)(s->seconds * 1e9));
  if (s->overlap >= 0.0f) {
    atomic_fetch_add(&n_ov, 1);
    atomic_fetch_add(&ov_milli_sum, (uint64_t)lround(s->overlap * 1e6));
    atomic_fetch_add(&ov_coll_ns, (uint64_t)(s->seconds * 1e9));
    atomic_fetch_add(&ov_exp_ns, (uint64_t)(s->seconds * (1.0 - s->overlap) * 1e9));
    int h = s->tag.call_idx >= half;
    atomic_fetch_add(&n_ov_half[h], 1);
    atomic_fetch_add(&ov_micro_half[h], (uint64_t)lround(s->overlap * 1e6));
  }
}

static void tag(acl_prof_t *p, void *pr, uint64_t i)
{
  if (!p)
    return;
  acl_call_tag_t t;
  memset(&t, 0, sizeof(t));
  t.rank_ctx = &rank_id;
  t.call_idx = i;
  t.coll = 4;
  t.nbytes = 1 << 20;
  t.cand.algo = ACL_ALGO_NCCL;
  acl_prof_on_call(p, pr, &t, 0, false);
}

int main(int argc, char **argv)
{
  if (argc != 4) {
    fprintf(stderr, "usage: %s nccl|default|default_keep|cupti launch|compute ITERS\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1], *loop = argv[2];
  long iters = atol(argv[3]);
  bool shift = strcmp(loop, "shift") == 0;
  bool compute = shift || strcmp(loop, "compute") == 0;
  if (shift)
    half = (uint64_t)iters / 2;
  acl_log_set_prefix("gpucheck-cost");
  acl_log_set_level(ACL_LOG_WARN);
  cudaStream_t s1, s2;
  cudaEvent_t ev_a, ev_b;
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&ev_a, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&ev_b, cudaEventDisableTiming));
  cudaEvent_t ahead[AHEAD];
  for (int i = 0; i < AHEAD; i++)
    CK(cudaEventCreateWithFlags(&ahead[i], cudaEventDisableTiming));
  for (int i = 0; i < 100; i++) { /* warm-up: modules loaded, clocks up */
    acl_check_fake_launch(s1, 10000);
    acl_check_spin_launch(s2, 10000);
  }
  CK(cudaDeviceSynchronize());

  acl_config_t cfg;
  acl_config_defaults(&cfg); /* the default window rule (AUTOCCL_CUPTI_WINDOW) */
  acl_config_from_env(&cfg);
  acl_prof_opts_t o = {0};
  cfg.profiler = strcmp(mode, "cupti") == 0  ? ACL_PROF_CUPTI
                 : strcmp(mode, "nccl") == 0 ? ACL_PROF_NCCL
                                             : ACL_PROF_AUTO;
  if (strcmp(mode, "default_keep") == 0) {
    o.keep_attached = true;
    acl_config_window_ms(cfg.cupti_window, &o.on_ms, &o.period_ms);
  }
  acl_prof_t *p = acl_prof_create_ex(&cfg, sink, NULL, &o);
  void *pr = acl_prof_rank_attach(p, &rank_id, 0x1234, 0, 1);

  double t0 = acl_mono_s();
  if (!compute) {
    for (long i = 0; i < iters; i++) {
      if (i % LAUNCH_TAG_EVERY == 0) {
        tag(p, pr, (uint64_t)i);
        acl_check_fake_launch(s1, LAUNCH_NS);
      } else {
        acl_check_spin_launch(s1, LAUNCH_NS);
      }
    }
  } else {
    for (long i = 0; i < iters; i++) {
      if (i >= AHEAD)
        CK(cudaEventSynchronize(ahead[i % AHEAD]));
      /* both start together: s1 waits for s2's mark, s2 for s1's last end */
      CK(cudaStreamWaitEvent(s2, ev_b, 0));
      CK(cudaEventRecord(ev_a, s2));
      if ((uint64_t)i >= half || !shift)
        acl_check_spin_launch(s2, COMP_NS);
      CK(cudaStreamWaitEvent(s1, ev_a, 0));
      tag(p, pr, (uint64_t)i);
      acl_check_fake_launch(s1, COLL_NS);
      CK(cudaEventRecord(ev_b, s1));
      CK(cudaEventRecord(ahead[i % AHEAD], s1));
    }
  }
  CK(cudaDeviceSynchronize());
  double wall = acl_mono_s() - t0;
  usleep(300000); /* the last window's samples */
  acl_prof_flush(p);
  acl_prof_stats_t st;
  acl_prof_stats(p, &st);
  acl_prof_stats_ex_t x;
  acl_prof_stats_ex(p, &x);
  uint64_t calls = (uint64_t)(compute ? iters : (iters + LAUNCH_TAG_EVERY - 1) / LAUNCH_TAG_EVERY);
  acl_exposure_t ex;
  bool has_ex = acl_exposure_estimate(
      calls, atomic_load(&n_samples), (double)atomic_load(&sum_ns) * 1e-9,
      (double)atomic_load(&ov_coll_ns) * 1e-9, (double)atomic_load(&ov_exp_ns) * 1e-9, &ex);
  unsigned long nov = atomic_load(&n_ov);
  double ov_mean = nov ? (double)atomic_load(&ov_milli_sum) * 1e-6 / (double)nov : -1.0;
  /* Launch loop: nothing overlaps, so the whole collective time is exposed
   * (its 3 us are not known to 5 %: the share is what is constructed). */
  double exp_constructed = shift ? ((double)half * (double)COLL_NS +
                                    (double)(calls - half) * (double)(COLL_NS - COMP_NS)) *
                                       1e-9
                           : compute ? (double)calls * (double)(COLL_NS - COMP_NS) * 1e-9
                                     : ex.collective_seconds;
  printf("{\"mode\": \"%s\", \"loop\": \"%s\", \"iters\": %ld, \"wall_s\": %.6f, "
         "\"source\": \"%s\", \"window\": \"%s\", \"on_ms\": %u, \"period_ms\": %u, "
         "\"windows\": %llu, \"on_s\": %.4f, \"calls\": %llu, \"samples\": %lu, "
         "\"samples_with_overlap\": %lu, \"overlap_mean\": %.5f, \"overlap_constructed\": %.3f, "
         "\"exposed_s\": %.6f, \"exposed_share\": %.5f, \"exposed_constructed_s\": %.6f, "
         "\"has_exposed\": %s, \"lost\": %llu, \"untagged\": %llu, \"backed_off\": %s, "
         "\"overlap_first_half\": %.5f, \"overlap_second_half\": %.5f}\n",
         mode, loop, iters, wall, st.source, st.cupti_window, st.cupti_on_ms, st.cupti_period_ms,
         (unsigned long long)st.cupti_windows, st.cupti_on_seconds, (unsigned long long)calls,
         atomic_load(&n_samples), nov, ov_mean,
         (compute ? (double)COMP_NS / (double)COLL_NS : 0.0) * (shift ? 0.5 : 1.0),
         ex.exposed_seconds, ex.share, exp_constructed, has_ex ? "true" : "false",
         (unsigned long long)x.lost, (unsigned long long)x.untagged,
         st.cupti_backed_off ? "true" : "false",
         n_ov_half[0] ? (double)ov_micro_half[0] * 1e-6 / (double)n_ov_half[0] : -1.0,
         n_ov_half[1] ? (double)ov_micro_half[1] * 1e-6 / (double)n_ov_half[1] : -1.0);
  fflush(stdout);
  acl_prof_rank_detach(p, pr);
  acl_prof_destroy(p);
  return 0;
}
