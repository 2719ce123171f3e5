/* Loads the built plugin exactly as NCCL does and plays NCCL's part around
 * it: dlopen(RTLD_NOW|RTLD_LOCAL), tuner symbol lookup v6 -> v2 (NCCL 2.30;
 * 2.28 starts at v5), profiler v6 -> v5, cost tables
 * shaped like NCCL's (float[7][3] passed as float**), NCCL's selection rule. */
#ifndef ACL_TESTS_HARNESS_H
#define ACL_TESTS_HARNESS_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/abi.h"

typedef struct acl_h_plugin {
  void *handle;
  int version;      /* highest tuner ABI found: 6..2, 0 = none */
  int prof_version; /* 6, 5, 0 = none */
  ncclTuner_v6_t *v6;
  ncclTuner_v5_t *v5;
  ncclTuner_v4_t *v4;
  ncclTuner_v3_t *v3;
  ncclTuner_v2_t *v2;
  ncclProfiler_v5_t *prof;
  ncclProfiler_v6_t *prof6;
} acl_h_plugin_t;

/* Path from $ACL_PLUGIN (set by meson); aborts the test on failure. Looks
 * every symbol up; version/prof_version say what NCCL 2.30 would take. */
void acl_h_load(acl_h_plugin_t *p);
/* The same as an NCCL that knows tuner and profiler ABIs up to max_version
 * only (5: NCCL 2.28, 6: 2.29/2.30): version is what it would take, in
 * its order (newest first), and the newer symbols stay NULL. */
void acl_h_load_max(acl_h_plugin_t *p, int max_version);
void acl_h_unload(acl_h_plugin_t *p);

/* A realistic cost table (us) for nranks GPUs on one NVLink node: an
 * alpha-beta model per (algo, proto), -1 where NCCL would not offer the pair
 * (CollNet without a CollNet network, NVLS outside AllReduce/AllGather/
 * ReduceScatter, PAT outside AllGather/ReduceScatter, Tree outside
 * AllReduce). */
void acl_h_cost_table(int coll, size_t nbytes, int nranks, float t[7][3]);
/* NCCL's rule: strict minimum over entries >= 0, algorithm-major scan, the
 * lowest index wins ties. Returns 0, or -1 when nothing is valid. */
int acl_h_select(float t[7][3], int *algo, int *proto);

/* Reports one call the way NCCL's profiler does: a Coll event (stopped at
 * launch, as NCCL does), then nch KernelCh events spanning `us`
 * microseconds of GPU time from *clock (advanced past the call). Only the
 * event types in mask are sent; nch 0 means NCCL's default of 8 channels. */
void acl_h_report_call(const ncclProfiler_v5_t *prof, void *pctx, int mask, int coll, size_t nbytes,
                       int algo, int proto, int nch, double us, uint64_t *clock);

/* What NCCL >= 2.28 does when a collective is enqueued (collTaskAppend),
 * before its group reaches getCollInfo: a GroupApi event with its state
 * record, then a CollApi event saying whether the stream is being
 * captured into a CUDA graph, each only when the mask NCCL reads at that
 * moment enables it (ncclProfilerStartGroupApiEvent's and
 * ncclProfilerStartCollApiEvent's masks), stopped when a handle came back. */
void acl_h_api_events(const ncclProfiler_v5_t *prof, void *pctx, int mask, int coll, size_t nbytes,
                      int captured);
/* The enqueue of a collective as NCCL >= 2.28 makes it: reads the event
 * mask (*mask, NCCL's one int), emits the API events it enables, and
 * returns the mask stamped on the call (what its Coll/KernelCh events
 * follow). */
int acl_h_enqueue(const ncclProfiler_v5_t *prof, void *pctx, const int *mask, int coll,
                  size_t nbytes, int nranks);

/* The same, as NCCL's implicit group runs it: the GroupApi event stays open
 * (*group, NULL when none started) through the decision and the launch,
 * which acl_h_group_end then ends (group.cc: the end's state record, then
 * the stop after the kernel launch). */
int acl_h_enqueue_open(const ncclProfiler_v5_t *prof, void *pctx, const int *mask, int coll,
                       size_t nbytes, int nranks, void **group);
void acl_h_group_end(const ncclProfiler_v5_t *prof, void *group);

/* Messages the plugin sent through the logger we hand it. */
void acl_h_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                  const char *fmt, ...);
int acl_h_log_count(const char *needle); /* lines containing needle */
const char *acl_h_log_text(void);
void acl_h_log_clear(void);

/* For the tests that are not Criterion executables (under TSan, or
 * counting their own threads): a failed check prints and exits 1. */
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n  ", __FILE__, __LINE__, #cond);                   \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#endif
