/* libautoccl-bench-probe.so: what NCCL ran, for autoccl-bench --trace.
 *
 * A tuner (v5) and profiler (v5) plugin in one .so that changes nothing:
 * getCollInfo leaves the cost table and nChannels alone. The first time a
 * process sees a (collective, bytes), it turns NCCL's event mask to Coll
 * until every rank of the process has reported one Coll event of it, and
 * writes "rank func count datatype algo proto nChannels" to
 * $AUTOCCL_BENCH_PROBE (one line, O_APPEND); then the mask goes back to 0,
 * so timed iterations pay no event cost. Built from the ABI facts in
 * core/abi.h; no NCCL or CUDA library is linked. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/abi.h"
#include "core/setting_names.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXK 256
#define MAXR 64

typedef struct pctx {
  int rank;
  unsigned char done[MAXK]; /* key index -> this rank reported it */
} pctx_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int *g_mask; /* NCCL's mask (one per process in 2.28) */
static pctx_t *g_ranks[MAXR];
static int g_nranks;
static struct {
  int coll;
  size_t bytes;
  int left;
} g_keys[MAXK];
static int g_nkeys, g_open; /* keys still waiting for Coll events */
static int g_fd = -2;

static void mask_set(int m)
{
  if (g_mask)
    __atomic_store_n(g_mask, m, __ATOMIC_RELAXED);
}

static ncclResult_t p_init(void **ctx, uint64_t commId, int *mask, const char *name, int nNodes,
                           int nranks, int rank, ncclDebugLogger_t log)
{
  (void)commId, (void)name, (void)nNodes, (void)log;
  pctx_t *c = calloc(1, sizeof(*c));
  *ctx = c;
  *mask = 0;
  if (!c || nranks < 2)
    return ncclSuccess;
  c->rank = rank;
  pthread_mutex_lock(&mu);
  g_mask = mask;
  if (g_nranks < MAXR)
    g_ranks[g_nranks++] = c;
  if (g_fd == -2) {
    const char *p = getenv(ACL_ENV(AUTOCCL_BENCH_PROBE));
    g_fd = p && *p ? open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }
  pthread_mutex_unlock(&mu);
  return ncclSuccess;
}

static int dsize(const char *d)
{
  if (!d)
    return 0;
  if (strstr(d, "64") || !strcmp(d, "ncclDouble"))
    return 8;
  if (strstr(d, "32") || !strcmp(d, "ncclFloat") || !strcmp(d, "ncclInt"))
    return 4;
  if (strstr(d, "16") || !strcmp(d, "ncclHalf"))
    return 2;
  return 1;
}

static ncclResult_t p_start(void *ctx, void **eHandle, ncclProfilerEventDescr_v5_t *d)
{
  *eHandle = NULL;
  pctx_t *c = ctx;
  if (!c || !d || d->type != ncclProfileColl || !d->coll.func)
    return ncclSuccess;
  size_t b = d->coll.count * (size_t)dsize(d->coll.datatype);
  if (b == 0)
    return ncclSuccess; /* unknown datatype or an empty call: nothing to match */
  pthread_mutex_lock(&mu);
  for (int k = 0; k < g_nkeys; k++) {
    /* AllGather / ReduceScatter: the tuner's bytes are the whole buffer */
    if (g_keys[k].left <= 0 || c->done[k] || (g_keys[k].bytes != b && g_keys[k].bytes % b != 0))
      continue;
    c->done[k] = 1;
    if (g_fd >= 0)
      dprintf(g_fd, "%d %s %zu %s %s %s %d\n", c->rank, d->coll.func, d->coll.count,
              d->coll.datatype ? d->coll.datatype : "?", d->coll.algo ? d->coll.algo : "?",
              d->coll.proto ? d->coll.proto : "?", (int)d->coll.nChannels);
    if (--g_keys[k].left == 0 && --g_open == 0)
      mask_set(0);
    break;
  }
  pthread_mutex_unlock(&mu);
  return ncclSuccess;
}

static ncclResult_t p_stop(void *h)
{
  (void)h;
  return ncclSuccess;
}
static ncclResult_t p_state(void *h, ncclProfilerEventState_v5_t s,
                            ncclProfilerEventStateArgs_v5_t *a)
{
  (void)h, (void)s, (void)a;
  return ncclSuccess;
}
static ncclResult_t p_fini(void *ctx)
{
  (void)ctx;
  return ncclSuccess;
}

EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {
    "autoccl-bench-probe", p_init, p_start, p_stop, p_state, p_fini};

static __thread int t_coll = -1;
static __thread size_t t_bytes;

static ncclResult_t t_init(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                           ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t *nvl,
                           ncclTunerConstants_v5_t *k)
{
  (void)commId, (void)nRanks, (void)nNodes, (void)log, (void)nvl, (void)k;
  *ctx = NULL;
  return ncclSuccess;
}

static ncclResult_t t_get(void *ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float **table,
                          int numAlgo, int numProto, int regBuff, int *nch)
{
  (void)ctx, (void)numPipeOps, (void)table, (void)numAlgo, (void)numProto, (void)regBuff, (void)nch;
  if (t_coll == (int)coll && t_bytes == nBytes)
    return ncclSuccess; /* the common case: same workload as this thread's last call */
  t_coll = (int)coll;
  t_bytes = nBytes;
  pthread_mutex_lock(&mu);
  int k;
  for (k = 0; k < g_nkeys; k++)
    if (g_keys[k].coll == (int)coll && g_keys[k].bytes == nBytes)
      break;
  if (k == g_nkeys && g_nkeys < MAXK && g_nranks > 0) {
    g_keys[k].coll = (int)coll;
    g_keys[k].bytes = nBytes;
    g_keys[k].left = g_nranks;
    g_nkeys++;
    g_open++;
    mask_set(ncclProfileColl);
  }
  pthread_mutex_unlock(&mu);
  return ncclSuccess;
}

static ncclResult_t t_fini(void *ctx)
{
  (void)ctx;
  return ncclSuccess;
}

EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {"autoccl-bench-probe", t_init, t_get, t_fini};
