/* A throwaway NCCL plugin for testing autoccl-sim's driver: it checks that
 * the simulator calls the ABIs as NCCL 2.28 does (order, arguments, event
 * descriptors consistent with its own decisions) and makes scripted
 * decisions. Any violation is logged as an NCCL WARN and returned as an
 * error, which autoccl-sim must count and report.
 *   ACL_FAKE_MODE  converge (default) | diverge | error | decline
 *   ACL_FAKE_OUT   file to append one summary line per tuner context to
 * It also reads the simulator feed (AUTOCCL_SIM_FEED) as the plugin's
 * simulated source does, and reports the highest overlap it saw. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/abi.h"
#include "core/setting_names.h"
#include "profiler/simfeed.h"

#define EXPORT __attribute__((visibility("default")))
#define NKEYS 128
#define RING 8

enum { MODE_CONVERGE, MODE_DIVERGE, MODE_ERROR, MODE_DECLINE };

typedef struct ev {
  int kind;
  struct pctx *owner;
  unsigned long long start;
} ev_t;

typedef struct pctx {
  uint64_t comm;
  int rank, nranks;
  ncclDebugLogger_t log;
  int exp_algo, exp_proto, exp_nch; /* what the last getCollInfo chose (-1: NCCL's) */
  ev_t colls[RING], kchs[RING];
  unsigned ncoll, nkch;
  ev_t *last_coll;
  unsigned long long coll_events, kch_events, violations;
} pctx_t;

typedef struct tctx {
  uint64_t comm;
  pctx_t *p;
  ncclDebugLogger_t log;
  int nranks;
  struct {
    int coll;
    size_t bytes;
    unsigned long long n;
  } keys[NKEYS];
  int nkeys;
  unsigned long long calls, violations;
  acl_simfeed_t *feed;
  unsigned overlap_max;
} tctx_t;

static _Thread_local pctx_t *last_prof;
static int mode(void)
{
  const char *m = getenv("ACL_FAKE_MODE");
  if (!m || !strcmp(m, "converge"))
    return MODE_CONVERGE;
  if (!strcmp(m, "diverge"))
    return MODE_DIVERGE;
  if (!strcmp(m, "error"))
    return MODE_ERROR;
  return MODE_DECLINE;
}

#define VIOLATION(counter, logf, ...)                                                              \
  do {                                                                                             \
    (counter)++;                                                                                   \
    if (logf)                                                                                      \
      (logf)(NCCL_LOG_WARN, NCCL_TUNING, __FILE__, __LINE__, "fake plugin: " __VA_ARGS__);         \
  } while (0)

/* ---- profiler ---- */
static ncclResult_t p_init(void **ctx, uint64_t commId, int *mask, const char *name, int nNodes,
                           int nranks, int rank, ncclDebugLogger_t log)
{
  pctx_t *p = calloc(1, sizeof(*p));
  if (!p)
    return ncclSystemError;
  p->comm = commId;
  p->rank = rank;
  p->nranks = nranks;
  p->log = log;
  p->exp_algo = -2;
  if (!name || !*name || nNodes < 1 || nranks < 1 || rank < 0 || rank >= nranks)
    VIOLATION(p->violations, log, "bad profiler init arguments");
  *mask = ncclProfileColl | ncclProfileKernelCh;
  *ctx = p;
  last_prof = p;
  return ncclSuccess;
}

static ncclResult_t p_start(void *ctx, void **h, ncclProfilerEventDescr_v5_t *d)
{
  pctx_t *p = ctx;
  *h = NULL;
  if (d->rank != p->rank)
    VIOLATION(p->violations, p->log, "event rank %d, profiler init said %d", d->rank, p->rank);
  if (d->type == ncclProfileColl) {
    static const char *const names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                        "AllReduce"};
    /* NCCL's own spellings (ncclAlgoStr, ncclProtoStr). */
    static const char *const algos[] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                        "NVLSTree", "PAT"};
    static const char *const protos[] = {"LL", "LL128", "Simple"};
    int f = -1;
    for (int i = 0; i < 5; i++)
      if (d->coll.func && !strcmp(d->coll.func, names[i]))
        f = i;
    if (f < 0 || !d->coll.datatype || strcmp(d->coll.datatype, "ncclFloat32") ||
        d->coll.count == 0 || d->coll.nChannels < 1 || !d->coll.algo || !d->coll.proto)
      VIOLATION(p->violations, p->log, "bad Coll descriptor");
    else if (p->exp_algo >= 0 && (strcmp(d->coll.algo, algos[p->exp_algo]) ||
                                  strcmp(d->coll.proto, protos[p->exp_proto]) ||
                                  (p->exp_nch > 0 && d->coll.nChannels != p->exp_nch)))
      VIOLATION(p->violations, p->log, "Coll ran %s/%s/%d, the tuner chose %s/%s/%d", d->coll.algo,
                d->coll.proto, d->coll.nChannels, algos[p->exp_algo], protos[p->exp_proto],
                p->exp_nch);
    ev_t *e = &p->colls[p->ncoll++ % RING];
    e->kind = ncclProfileColl;
    e->owner = p;
    p->last_coll = e;
    p->coll_events++;
    *h = e;
  } else if (d->type == ncclProfileKernelCh) {
    if (d->parentObj != p->last_coll)
      VIOLATION(p->violations, p->log, "KernelCh parent is not the last Coll");
    ev_t *e = &p->kchs[p->nkch++ % RING];
    e->kind = ncclProfileKernelCh;
    e->owner = p;
    e->start = d->kernelCh.pTimer;
    p->kch_events++;
    *h = e;
  } else if (d->type == ncclProfileGroupApi || d->type == ncclProfileCollApi) {
    /* NCCL 2.28 starts these whenever the mask has a bit of their own
     * masks (src/plugin/profiler.cc), Coll and KernelCh among them; the
     * handle stays NULL, so nothing stops them */
    if (d->type == ncclProfileCollApi && (!d->collApi.func || !d->collApi.datatype ||
                                          d->collApi.count == 0 || d->collApi.graphCaptured))
      VIOLATION(p->violations, p->log, "bad CollApi event");
  } else {
    VIOLATION(p->violations, p->log, "event type %llu was not enabled",
              (unsigned long long)d->type);
  }
  return ncclSuccess;
}

static ncclResult_t p_stop(void *h)
{
  ev_t *e = h;
  if (!e || (e->kind != ncclProfileColl && e->kind != ncclProfileKernelCh))
    return ncclInternalError;
  return ncclSuccess;
}

static ncclResult_t p_state(void *h, ncclProfilerEventState_v5_t st,
                            ncclProfilerEventStateArgs_v5_t *a)
{
  ev_t *e = h;
  if (!e || e->kind != ncclProfileKernelCh || st != ncclProfilerKernelChStop ||
      a->kernelCh.pTimer < e->start) {
    if (e)
      VIOLATION(e->owner->violations, e->owner->log, "bad KernelCh stop");
    return ncclInternalError;
  }
  return ncclSuccess;
}

static ncclResult_t p_fini(void *ctx)
{
  free(ctx);
  return ncclSuccess;
}

EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"fake", p_init, p_start, p_stop, p_state, p_fini};

/* ---- tuner v5 ---- */
static ncclResult_t t_init(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                           ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t *nvl,
                           ncclTunerConstants_v5_t *k)
{
  tctx_t *t = calloc(1, sizeof(*t));
  if (!t)
    return ncclSystemError;
  t->comm = commId;
  t->log = log;
  t->nranks = (int)nRanks;
  /* NCCL: profiler init ran just before, on this thread, same commId. */
  if (!last_prof || last_prof->comm != commId) {
    VIOLATION(t->violations, log, "tuner init without a preceding profiler init of comm");
    free(t);
    return ncclInternalError;
  }
  t->p = last_prof;
  const char *fn = getenv(ACL_ENV(AUTOCCL_SIM_FEED));
  int fd = fn && *fn ? shm_open(fn, O_RDONLY, 0) : -1;
  if (fd >= 0) {
    void *m = mmap(NULL, sizeof(acl_simfeed_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    t->feed = m == MAP_FAILED ? NULL : m;
  }
  if (!t->feed || t->feed->magic != ACL_SIMFEED_MAGIC || (int)t->feed->nranks != (int)nRanks)
    VIOLATION(t->violations, log, "no usable simulator feed at '%s'", fn ? fn : "(unset)");
  if (!nvl || !k || nNodes < 1 || nvl->nNvlDomains != (int)nNodes || nRanks < 1 ||
      (int)nRanks != last_prof->nranks)
    VIOLATION(t->violations, log, "bad tuner init arguments");
  *ctx = t;
  return ncclSuccess;
}

static ncclResult_t t_get(void *ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float **table_,
                          int numAlgo, int numProto, int regBuff, int *nch)
{
  tctx_t *t = ctx;
  float(*table)[3] = (float(*)[3])table_;
  t->calls++;
  t->p->exp_algo = -2;
  if (t->feed) {
    unsigned o = atomic_load(&t->feed->overlap_milli[t->p->rank]);
    t->overlap_max = o > t->overlap_max ? o : t->overlap_max;
  }
  if (numAlgo != 7 || numProto != 3 || numPipeOps != 1 || regBuff != 0 || *nch != 0 ||
      nBytes == 0 || (int)coll < 0 || coll > ncclFuncAllReduce) {
    VIOLATION(t->violations, t->log, "bad getCollInfo arguments");
    return ncclInternalError;
  }
  int valid[21][2], nv = 0;
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++) {
      if (table[a][p] >= 0) {
        valid[nv][0] = a;
        valid[nv++][1] = p;
      } else if (table[a][p] != -1.0f) {
        VIOLATION(t->violations, t->log, "cost table entry %f", table[a][p]);
      }
    }
  if (nv == 0) {
    VIOLATION(t->violations, t->log, "no valid cost table entry");
    return ncclInternalError;
  }
  int m = mode();
  if (m == MODE_DECLINE)
    return ncclSuccess;
  int i;
  for (i = 0; i < t->nkeys; i++)
    if (t->keys[i].coll == (int)coll && t->keys[i].bytes == nBytes)
      break;
  if (i == t->nkeys && t->nkeys < NKEYS) {
    t->keys[i].coll = (int)coll;
    t->keys[i].bytes = nBytes;
    t->nkeys++;
  }
  unsigned long long k = i < NKEYS ? t->keys[i].n++ : 0;
  if (m == MODE_ERROR && t->calls == 10)
    return ncclInternalError;
  int pick, c;
  if (k < 40) { /* "explore": every valid pair for a few calls, two channel settings */
    pick = (int)((k / 8) % (unsigned long long)nv);
    c = (k / 4) % 2 ? 8 : 0;
  } else { /* "converged" */
    pick = 0;
    c = 64; /* above the ceiling: NCCL clamps */
    if (m == MODE_DIVERGE && t->p->rank % 2 == 1)
      pick = nv - 1;
  }
  table[valid[pick][0]][valid[pick][1]] = 0.0f;
  *nch = c;
  t->p->exp_algo = valid[pick][0];
  t->p->exp_proto = valid[pick][1];
  t->p->exp_nch = c > 32 ? 0 : c; /* clamp value unknown here: only check <= 32 cases */
  return ncclSuccess;
}

static ncclResult_t t_fini(void *ctx)
{
  tctx_t *t = ctx;
  const char *out = getenv("ACL_FAKE_OUT");
  if (out && *out) {
    char line[256];
    int n = snprintf(
        line, sizeof(line),
        "rank=%d comm=%016llx calls=%llu coll=%llu kch=%llu overlap_max=%u violations=%llu\n",
        t->p->rank, (unsigned long long)t->comm, t->calls, t->p->coll_events, t->p->kch_events,
        t->overlap_max, t->violations + t->p->violations);
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd >= 0) {
      if (write(fd, line, (size_t)n) != n)
        t->violations++;
      close(fd);
    }
  }
  int bad = t->violations + t->p->violations > 0;
  if (t->feed)
    munmap(t->feed, sizeof(acl_simfeed_t));
  free(t);
  return bad ? ncclInternalError : ncclSuccess;
}

EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {"fake", t_init, t_get, t_fini};
