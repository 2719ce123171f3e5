/* The symbols NCCL looks up: ncclTunerPlugin_v6..v2 and ncclProfiler_v6..v5
 * (NCCL tries the newest first: 2.30 takes v6, 2.28 v5).
 * Thin adapters onto plugin.c; they never fail an init (a NULL context means
 * "decline") and only fail a collective when consensus demands it. */
#include <string.h>

#include "core/abi.h"
#include "core/types.h"
#include "tuner/plugin/plugin.h"

#define ACL_EXPORT __attribute__((visibility("default")))

/* v5 and v6 (NCCL 2.30) init alike: the communicator id, NVLink domains
 * and NCCL's model constants (both left as NCCL made them). */
static ncclResult_t tuner_init_new(int abi, void **ctx, uint64_t commId, size_t nRanks,
                                   size_t nNodes, ncclDebugLogger_t log)
{
  *ctx = acl_plugin_tuner_attach(abi, commId, nRanks, nNodes, log);
  return ncclSuccess;
}

static ncclResult_t tuner_init_v6(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                                  ncclDebugLogger_t log, ncclNvlDomainInfo_v6_t *nvl,
                                  ncclTunerConstants_v6_t *constants)
{
  (void)nvl;
  (void)constants;
  return tuner_init_new(6, ctx, commId, nRanks, nNodes, log);
}

static ncclResult_t tuner_init_v5(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                                  ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t *nvl,
                                  ncclTunerConstants_v5_t *constants)
{
  (void)nvl;
  (void)constants;
  return tuner_init_new(5, ctx, commId, nRanks, nNodes, log);
}

static ncclResult_t tuner_init_old(int abi, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                                   void **ctx)
{
  *ctx = acl_plugin_tuner_attach(abi, 0, nRanks, nNodes, log);
  return ncclSuccess;
}

static ncclResult_t tuner_init_v4(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void **ctx)
{
  return tuner_init_old(4, nRanks, nNodes, log, ctx);
}

static ncclResult_t tuner_init_v3(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void **ctx)
{
  return tuner_init_old(3, nRanks, nNodes, log, ctx);
}

static ncclResult_t tuner_init_v2(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void **ctx)
{
  return tuner_init_old(2, nRanks, nNodes, log, ctx);
}

static ncclResult_t get_coll_info_v5(void *ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                                     float **collCostTable, int numAlgo, int numProto, int regBuff,
                                     int *nChannels)
{
  (void)regBuff; /* can differ between ranks: never part of a decision */
  if (numAlgo != NCCL_NUM_ALGORITHMS || numProto != NCCL_NUM_PROTOCOLS || !collCostTable)
    return ncclSuccess; /* a table shape we don't know: leave NCCL's choice */
  /* collCostTable is really float[7][3]. */
  return acl_plugin_get_coll_info(ctx, (int)coll, nBytes, numPipeOps,
                                  (float(*)[NCCL_NUM_PROTOCOLS])(void *)collCostTable, nChannels);
}

static ncclResult_t get_coll_info_v3(void *ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps,
                                     float **collCostTable, int numAlgo, int numProto,
                                     int *nChannels)
{
  return get_coll_info_v5(ctx, coll, nBytes, numPipeOps, collCostTable, numAlgo, numProto, 0,
                          nChannels);
}

static ncclResult_t get_coll_info_v2(void *ctx, ncclFunc_t coll, size_t nBytes, int collNetSupport,
                                     int nvlsSupport, int numPipeOps, int *algorithm, int *protocol,
                                     int *nChannels)
{
  (void)collNetSupport;
  (void)nvlsSupport;
  (void)numPipeOps;
  return acl_plugin_get_coll_info_v2(ctx, (int)coll, nBytes, algorithm, protocol, nChannels);
}

static ncclResult_t get_chunk_size_v6(void *ctx, ncclFunc_t coll, size_t nBytes, int algo,
                                      int proto, int nChannels, size_t *chunkSize)
{
  /* Never an error: NCCL would fail the collective. */
  return acl_plugin_get_chunk_size(ctx, (int)coll, nBytes, algo, proto, nChannels, chunkSize);
}

static ncclResult_t tuner_fini(void *ctx)
{
  acl_plugin_tuner_detach(ctx);
  return ncclSuccess;
}

ACL_EXPORT ncclTuner_v6_t ncclTunerPlugin_v6 = {.name = "autoccl",
                                                .init = tuner_init_v6,
                                                .getCollInfo = get_coll_info_v5,
                                                .finalize = tuner_fini,
                                                .getChunkSize = get_chunk_size_v6};
ACL_EXPORT ncclTuner_v5_t ncclTunerPlugin_v5 = {.name = "autoccl",
                                                .init = tuner_init_v5,
                                                .getCollInfo = get_coll_info_v5,
                                                .finalize = tuner_fini};
ACL_EXPORT ncclTuner_v4_t ncclTunerPlugin_v4 = {.name = "autoccl",
                                                .init = tuner_init_v4,
                                                .getCollInfo = get_coll_info_v5,
                                                .destroy = tuner_fini};
ACL_EXPORT ncclTuner_v3_t ncclTunerPlugin_v3 = {.name = "autoccl",
                                                .init = tuner_init_v3,
                                                .getCollInfo = get_coll_info_v3,
                                                .destroy = tuner_fini};
ACL_EXPORT ncclTuner_v2_t ncclTunerPlugin_v2 = {.name = "autoccl",
                                                .init = tuner_init_v2,
                                                .getCollInfo = get_coll_info_v2,
                                                .destroy = tuner_fini};

static ncclResult_t prof_init(void **ctx, uint64_t commId, int *mask, const char *commName,
                              int nNodes, int nranks, int rank, ncclDebugLogger_t log)
{
  *ctx = acl_plugin_profiler_attach(commId, commName, nNodes, nranks, rank, log, mask);
  return ncclSuccess;
}

static ncclResult_t prof_start(void *ctx, void **eHandle, ncclProfilerEventDescr_v5_t *d)
{
  return acl_plugin_event_start(ctx, eHandle, d);
}

/* v6 adds copy-engine events the plugin never asks for (its mask has no
 * ncclProfileCe* bit); everything else is v5's layout, handed on as a v5
 * copy. */
static ncclResult_t prof_start_v6(void *ctx, void **eHandle, ncclProfilerEventDescr_v6_t *d)
{
  if (!d || (d->type & (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch))) {
    if (eHandle)
      *eHandle = NULL;
    return ncclSuccess;
  }
  ncclProfilerEventDescr_v5_t d5;
  memcpy(&d5, d, sizeof d5);
  return acl_plugin_event_start(ctx, eHandle, &d5);
}

static ncclResult_t prof_fini(void *ctx)
{
  acl_plugin_profiler_detach(ctx);
  return ncclSuccess;
}

ACL_EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    .name = "autoccl",
    .init = prof_init,
    .startEvent = prof_start_v6,
    .stopEvent = acl_plugin_event_stop,
    .recordEventState = acl_plugin_event_state,
    .finalize = prof_fini,
};
ACL_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    .name = "autoccl",
    .init = prof_init,
    .startEvent = prof_start,
    .stopEvent = acl_plugin_event_stop,
    .recordEventState = acl_plugin_event_state,
    .finalize = prof_fini,
};
