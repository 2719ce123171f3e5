/* A profiler plugin that only counts NCCL's API events and their
 * graphCaptured flag (tests/gpu/capture_events.c reads the counts through
 * acl_capture_counts). It checks on a GPU what autoccl's capture detection
 * relies on (README, CUDA graphs): NCCL >= 2.28 says graphCaptured on the
 * API events of a collective enqueued on a capturing stream. */
#include <stdatomic.h>
#include <stdint.h>

#include "core/abi.h"

enum { GROUP_API, COLL_API, P2P_API, NKIND };
static atomic_ulong total[NKIND], captured[NKIND];

__attribute__((visibility("default"))) void acl_capture_counts(uint64_t out[2 * NKIND])
{
  for (int k = 0; k < NKIND; k++) {
    out[2 * k] = atomic_load(&total[k]);
    out[2 * k + 1] = atomic_load(&captured[k]);
  }
}

static ncclResult_t init(void **ctx, uint64_t commId, int *mask, const char *name, int nnodes,
                         int nranks, int rank, ncclDebugLogger_t log)
{
  (void)commId, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
  static int token;
  *ctx = &token;
  *mask = ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi;
  return ncclSuccess;
}

static ncclResult_t start(void *ctx, void **h, ncclProfilerEventDescr_v5_t *d)
{
  (void)ctx;
  *h = NULL;
  int k = d->type == ncclProfileGroupApi ? GROUP_API
          : d->type == ncclProfileCollApi ? COLL_API
          : d->type == ncclProfileP2pApi  ? P2P_API
                                          : -1;
  if (k < 0)
    return ncclSuccess;
  bool cap = k == GROUP_API  ? d->groupApi.graphCaptured
             : k == COLL_API ? d->collApi.graphCaptured
                             : d->p2pApi.graphCaptured;
  atomic_fetch_add(&total[k], 1);
  if (cap)
    atomic_fetch_add(&captured[k], 1);
  return ncclSuccess;
}

static ncclResult_t stop(void *h)
{
  (void)h;
  return ncclSuccess;
}

static ncclResult_t state(void *h, ncclProfilerEventState_v5_t s, ncclProfilerEventStateArgs_v5_t *a)
{
  (void)h, (void)s, (void)a;
  return ncclSuccess;
}

static ncclResult_t fini(void *ctx)
{
  (void)ctx;
  return ncclSuccess;
}

__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {
    .name = "acl-capture-count",
    .init = init,
    .startEvent = start,
    .stopEvent = stop,
    .recordEventState = state,
    .finalize = fini,
};
