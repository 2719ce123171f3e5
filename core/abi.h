/* NCCL plugin ABI as seen by autoccl: tuner v2–v6 and profiler v5–v6.
 *
 * Written from NCCL's plugin headers (src/include/plugin/tuner/tuner_v2..6.h,
 * profiler/profiler_v5..6.h) and checked against NCCL 2.28 (v5) and the
 * v2.30.3-1 … v2.30.7-1 tags (v6); NCCL's own headers
 * are deliberately not included so the plugin builds without NCCL installed.
 * Layouts must match NCCL byte for byte: the static asserts at the end pin
 * them. */
#ifndef ACL_CORE_ABI_H
#define ACL_CORE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

/* Subsystem flags of NCCL's logger (NCCL_DEBUG_SUBSYS). */
enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_ENV = 0x80,
  NCCL_TUNING = 0x40,
  NCCL_PROFILE = 0x4000,
};

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
                                  int line, const char *fmt, ...);

typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
} ncclFunc_t;

#define NCCL_NUM_ALGORITHMS 7
#define NCCL_NUM_PROTOCOLS 3
#define NCCL_ALGO_UNDEF -1
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_PROTO_UNDEF -1
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2

/* ---- tuner v5 ---- */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double hwLatencies[3][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
} ncclTunerConstants_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                       ncclTunerConstants_v5_t *constants);
  /* collCostTable is really float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]. */
  ncclResult_t (*getCollInfo)(void *ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *ctx);
} ncclTuner_v5_t;

/* ---- tuner v6 (NCCL 2.30): v5 plus an optional getChunkSize ---- */
/* getChunkSize: *chunkSize arrives as NCCL's own chunk size for this call
 * (bytes) and may be changed; NCCL clamps it to its buffer limit, then
 * rounds it down to the protocol's grain. It may be called 1-3 times per
 * collective (nChannels 1 for the parts of a split schedule) and an error
 * fails the collective. */
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;
typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;

typedef struct ncclTuner_v6 {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t *nvlDomainInfo,
                       ncclTunerConstants_v6_t *constants);
  ncclResult_t (*getCollInfo)(void *ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *ctx);
  ncclResult_t (*getChunkSize)(void *ctx, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                               int nChannels, size_t *chunkSize);
} ncclTuner_v6_t;

/* ---- tuner v4 ---- */
typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **ctx);
  ncclResult_t (*getCollInfo)(void *ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*destroy)(void *ctx);
} ncclTuner_v4_t;

/* ---- tuner v3: v4 without regBuff ---- */
typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **ctx);
  ncclResult_t (*getCollInfo)(void *ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int *nChannels);
  ncclResult_t (*destroy)(void *ctx);
} ncclTuner_v3_t;

/* ---- tuner v2: no cost table; the plugin writes algorithm/protocol ---- */
typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **ctx);
  ncclResult_t (*getCollInfo)(void *ctx, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int *algorithm, int *protocol,
                              int *nChannels);
  ncclResult_t (*destroy)(void *ctx);
} ncclTuner_v2_t;

/* ---- profiler v5 ---- */
enum {
  ncclProfileGroup = (1 << 0),
  ncclProfileColl = (1 << 1),
  ncclProfileP2p = (1 << 2),
  ncclProfileProxyOp = (1 << 3),
  ncclProfileProxyStep = (1 << 4),
  ncclProfileProxyCtrl = (1 << 5),
  ncclProfileKernelCh = (1 << 6),
  ncclProfileNetPlugin = (1 << 7),
  ncclProfileGroupApi = (1 << 8),
  ncclProfileCollApi = (1 << 9),
  ncclProfileP2pApi = (1 << 10),
  ncclProfileKernelLaunch = (1 << 11),
};

typedef enum {
  ncclProfilerKernelChStop = 22,
} ncclProfilerEventState_v5_t;

typedef pid_t ncclPid_t;

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      int root;
      void *stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char *func;
      size_t count;
      const char *datatype;
      void *stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void *stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
      void *parentGroup;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void *parentGroup;
    } p2p;
    struct {
      ncclPid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer; /* GPU globaltimer (ns) at channel start */
    } kernelCh;
    struct {
      int64_t id;
      void *data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void *data;
  } netPlugin;
  struct {
    uint64_t pTimer; /* GPU globaltimer (ns) at channel stop */
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *ctx, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t *eStateArgs);
  ncclResult_t (*finalize)(void *ctx);
} ncclProfiler_v5_t;

/* ---- profiler v6 (NCCL 2.29, 2.30): v5's descriptor plus copy-engine
 * collective events (ceColl, ceCollSync, ceCollBatch) in the same union;
 * state arguments, event states and the function table are v5's. The
 * plugin never asks for the CE events, so it reads only the v5 members. */
enum {
  ncclProfileCeColl = (1 << 12),
  ncclProfileCeSync = (1 << 13),
  ncclProfileCeBatch = (1 << 14),
};

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    /* v5's members, at v5's offsets: coll and kernelCh (what the plugin
     * reads) are spelled out and asserted below; groupApi ... netPlugin
     * are there too, unnamed. The adapter hands the plugin a v5 copy. */
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
      void *parentGroup;
    } coll;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      uint64_t seqNumber;
      const char *func;
      void const *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      const char *syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void *stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventState_v5_t ncclProfilerEventState_v6_t;
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *ctx, void **eHandle, ncclProfilerEventDescr_v6_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t *eStateArgs);
  ncclResult_t (*finalize)(void *ctx);
} ncclProfiler_v6_t;

/* The layout NCCL 2.28 has on 64-bit Linux (x86-64, aarch64): sizes and the
 * offsets of every field the plugin reads or writes, computed from NCCL's
 * src/include/plugin/{tuner/tuner_v5.h,profiler/profiler_v5.h}. A mismatch
 * here means a field was mistyped, dropped or reordered above. */
#if UINTPTR_MAX == UINT64_MAX
#define ACL_ABI_ASSERT(c) _Static_assert(c, "NCCL 2.28 ABI layout: " #c)
ACL_ABI_ASSERT(sizeof(ncclNvlDomainInfo_v5_t) == 12);
ACL_ABI_ASSERT(sizeof(ncclTunerConstants_v5_t) == 1152);
ACL_ABI_ASSERT(offsetof(ncclTunerConstants_v5_t, hwLatencies) == 168);
ACL_ABI_ASSERT(offsetof(ncclTunerConstants_v5_t, llMaxBws) == 672);
ACL_ABI_ASSERT(offsetof(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws) == 1056);
ACL_ABI_ASSERT(sizeof(ncclTuner_v5_t) == 32);
ACL_ABI_ASSERT(offsetof(ncclTuner_v5_t, getCollInfo) == 16);
ACL_ABI_ASSERT(offsetof(ncclTuner_v5_t, finalize) == 24);
ACL_ABI_ASSERT(sizeof(ncclTuner_v4_t) == 32 && offsetof(ncclTuner_v4_t, destroy) == 24);
ACL_ABI_ASSERT(sizeof(ncclTuner_v3_t) == 32 && offsetof(ncclTuner_v3_t, destroy) == 24);
ACL_ABI_ASSERT(sizeof(ncclTuner_v2_t) == 32 && offsetof(ncclTuner_v2_t, destroy) == 24);
ACL_ABI_ASSERT(sizeof(ncclProfilerEventDescr_v5_t) == 112);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, rank) == 16);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.func) == 32);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.root) == 64);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.datatype) == 72);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.nWarps) == 81);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.algo) == 88);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.proto) == 96);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, collApi.graphCaptured) == 64);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, p2p.nChannels) == 60);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.channelId) == 24);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 32);
ACL_ABI_ASSERT(sizeof(ncclProfilerEventStateArgs_v5_t) == 8);
ACL_ABI_ASSERT(sizeof(ncclProfiler_v5_t) == 48);
ACL_ABI_ASSERT(offsetof(ncclProfiler_v5_t, startEvent) == 16);
ACL_ABI_ASSERT(offsetof(ncclProfiler_v5_t, recordEventState) == 32);
ACL_ABI_ASSERT(offsetof(ncclProfiler_v5_t, finalize) == 40);
ACL_ABI_ASSERT(ncclProfileKernelCh == 64 && ncclProfilerKernelChStop == 22);
#undef ACL_ABI_ASSERT
/* NCCL 2.30 (v2.30.3-1 … v2.30.7-1, same layouts in all three): tuner v6 is
 * v5 with getChunkSize appended; profiler v6's descriptor is v5's with the
 * copy-engine members in the union, which leaves its size unchanged. */
#define ACL_ABI_ASSERT(c) _Static_assert(c, "NCCL 2.30 ABI layout: " #c)
ACL_ABI_ASSERT(sizeof(ncclTuner_v6_t) == 40);
ACL_ABI_ASSERT(offsetof(ncclTuner_v6_t, init) == offsetof(ncclTuner_v5_t, init));
ACL_ABI_ASSERT(offsetof(ncclTuner_v6_t, getCollInfo) == 16);
ACL_ABI_ASSERT(offsetof(ncclTuner_v6_t, finalize) == 24);
ACL_ABI_ASSERT(offsetof(ncclTuner_v6_t, getChunkSize) == 32);
ACL_ABI_ASSERT(sizeof(ncclProfilerEventDescr_v6_t) == 112);
ACL_ABI_ASSERT(sizeof(ncclProfilerEventDescr_v6_t) == sizeof(ncclProfilerEventDescr_v5_t));
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, rank) == 16);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, coll.seqNumber) == 24);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, coll.nChannels) == 80);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, coll.algo) == 88);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, coll.proto) == 96);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup) == 104);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, kernelCh.pTimer) == 32);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, ceColl.syncStrategy) == 80);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, ceColl.intraBatchSync) == 88);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, ceColl.ceSeqNum) == 100);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream) == 104);
ACL_ABI_ASSERT(offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.totalBytes) == 32);
ACL_ABI_ASSERT(sizeof(ncclProfiler_v6_t) == 48);
ACL_ABI_ASSERT(offsetof(ncclProfiler_v6_t, recordEventState) == 32);
ACL_ABI_ASSERT(ncclProfileCeColl == 4096 && ncclProfileCeBatch == 16384);
#undef ACL_ABI_ASSERT
#endif

#endif
