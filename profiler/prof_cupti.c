/* CUPTI activity collection through a dlopen'ed libcupti; see cupti.h.
 * Why each choice: CONCURRENT_KERNEL (KIND_KERNEL serialises kernels);
 * external correlation needs API records, so only the launch APIs' records
 * are enabled (cheaper than all of DRIVER/RUNTIME); buffers are malloc'ed on
 * request and recycled; a flush thread runs only while tagged calls wait. */
#include "profiler/prof_cupti.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

#ifndef ACL_HAVE_CUPTI

acl_cupti_t *acl_cupti_start(const acl_cupti_opts_t *o, acl_attr_t *attr,
                             acl_cupti_batch_fn batch, void *u, char *why, size_t whylen,
                             bool *backed_off)
{
  (void)o, (void)attr, (void)batch, (void)u;
  if (backed_off)
    *backed_off = false;
  snprintf(why, whylen, "built without CUPTI headers");
  return NULL;
}
void acl_cupti_stop(acl_cupti_t *c, bool at_exit) { (void)c, (void)at_exit; }
void acl_cupti_push(acl_cupti_t *c, uint64_t ext) { (void)c, (void)ext; }
int acl_cupti_thread_slot(acl_cupti_t *c) { (void)c; return -1; }
void acl_cupti_kick(acl_cupti_t *c) { (void)c; }
void acl_cupti_flush(acl_cupti_t *c) { (void)c; }
bool acl_cupti_backed_off(const acl_cupti_t *c) { (void)c; return false; }
uint64_t acl_cupti_buffers(const acl_cupti_t *c) { (void)c; return 0; }
void acl_cupti_set_active(acl_cupti_t *c, bool active) { (void)c, (void)active; }
bool acl_cupti_suspended(const acl_cupti_t *c) { (void)c; return false; }

#else

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"

#define BUF_SIZE (256u * 1024u)
#define BUF_KEEP 8
/* Flush period while calls wait for their kernels: chosen, not measured;
 * samples reach the search within a few ms, and the flush thread stays
 * idle most of the time. */
#define FLUSH_US_DEFAULT 2000u
/* Buffers stopped coming for this long while calls wait: someone else took
 * CUPTI's activity callbacks (far beyond any flush period or kernel). */
#define BUFFER_STALL_NS (60ull * 1000000000ull)

#define CUPTI_FNS(X)                                                                       \
  X(cuptiGetVersion, 1)                                                                    \
  X(cuptiGetResultString, 0)                                                               \
  X(cuptiSubscribe, 1)                                                                     \
  X(cuptiUnsubscribe, 1)                                                                   \
  X(cuptiActivityEnable, 1)                                                                \
  X(cuptiActivityDisable, 1)                                                               \
  X(cuptiActivityRegisterCallbacks, 1)                                                     \
  X(cuptiActivityFlushAll, 1)                                                              \
  X(cuptiActivityGetNextRecord, 1)                                                         \
  X(cuptiActivityGetNumDroppedRecords, 1)                                                  \
  X(cuptiActivityPushExternalCorrelationId, 1)                                             \
  X(cuptiActivityPopExternalCorrelationId, 1)

static struct {
  void *lib;
  char path[512];
#define X(f, req) __typeof__(&f) f; /* NOLINT(bugprone-macro-parentheses): declarator */
  CUPTI_FNS(X)
#undef X
} cu;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(acl_cupti_t *) g_active;
static atomic_ulong g_inst; /* instance generation, for thread slots */
static __thread struct {
  unsigned long inst;
  int slot;
  bool pushed; /* an id of ours is on this thread's CUPTI stack */
} tls;

struct acl_cupti {
  acl_attr_t *attr;
  acl_cupti_batch_fn batch;
  void *u;
  unsigned flush_us;
  unsigned long inst;
  atomic_int next_slot;
  atomic_bool backed_off;
  atomic_bool stopping;
  atomic_bool idle;
  atomic_ulong buffers;
  _Atomic uint64_t last_buffer_ns;
  bool driver_all, runtime_all; /* API kinds enabled (external correlation needs them) */
  atomic_bool suspended;        /* kinds off while the tuner needs no samples */
  pthread_t thr;
  bool thr_ok;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_mutex_t bmu; /* recycled buffers */
  uint8_t *bufs[BUF_KEEP];
  int nbufs;
};

static const char *res_str(CUptiResult r)
{
  const char *s = NULL;
  if (cu.cuptiGetResultString)
    cu.cuptiGetResultString(r, &s);
  return s ? s : "?";
}

static bool try_load(const char *path, char *why, size_t whylen)
{
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(why, whylen, "dlopen(%s): %s", path, e ? e : "failed");
    return false;
  }
#define X(f, req)                                                                           \
  cu.f = (__typeof__(&f))dlsym(h, #f); /* NOLINT(bugprone-macro-parentheses): a member */ \
  if ((req) && !cu.f) {                                                                    \
    snprintf(why, whylen, "%s lacks %s", path, #f);                                        \
    goto fail;                                                                             \
  }
  CUPTI_FNS(X)
#undef X
  cu.lib = h;
  snprintf(cu.path, sizeof(cu.path), "%s", path);
  return true;
fail:
  dlclose(h);
  memset(&cu, 0, sizeof(cu));
  return false;
}

/* The library stays loaded for the process's life (CUPTI keeps per-thread
 * state and our callbacks; unloading it under a live CUDA is not safe). */
static bool load_cupti(const char *only, char *why, size_t whylen)
{
  if (cu.lib)
    return true;
  if (only)
    return try_load(only, why, whylen);
  const char *home = getenv("CUDA_HOME");
  char cands[8][512];
  int n = 0;
  snprintf(cands[n++], 512, "libcupti.so.13");
  snprintf(cands[n++], 512, "libcupti.so");
  if (home && *home) {
    snprintf(cands[n++], 512, "%s/extras/CUPTI/lib64/libcupti.so.13", home);
    snprintf(cands[n++], 512, "%s/lib64/libcupti.so.13", home);
  }
  snprintf(cands[n++], 512, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  snprintf(cands[n++], 512, "/usr/local/cuda/lib64/libcupti.so.13");
  snprintf(cands[n++], 512, "/usr/local/cuda/lib64/libcupti.so");
  char first[256] = "";
  for (int i = 0; i < n; i++) {
    if (try_load(cands[i], why, whylen))
      return true;
    if (!first[0])
      snprintf(first, sizeof(first), "%s", why);
  }
  snprintf(why, whylen, "libcupti not found (%s; also tried CUDA_HOME and /usr/local/cuda)",
           first);
  return false;
}

static void CUPTIAPI buf_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
  acl_cupti_t *c = atomic_load(&g_active);
  uint8_t *b = NULL;
  if (c) {
    pthread_mutex_lock(&c->bmu);
    if (c->nbufs > 0)
      b = c->bufs[--c->nbufs];
    pthread_mutex_unlock(&c->bmu);
  }
  if (!b && posix_memalign((void **)&b, 8, BUF_SIZE) != 0)
    b = NULL;
  *buffer = b;
  *size = b ? BUF_SIZE : 0; /* no buffer: CUPTI drops and counts the records */
  *max_records = 0;
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid)
{
  (void)ctx, (void)stream, (void)size;
  acl_cupti_t *c = atomic_load(&g_active);
  if (c && valid > 0) {
    CUpti_Activity *rec = NULL;
    while (cu.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        acl_krec_t kr = {.start = k->start, .end = k->end, .device = k->deviceId,
                         .stream = k->streamId, .corr = k->correlationId, .name = k->name};
        acl_attr_kernel(c->attr, &kr);
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const CUpti_ActivityExternalCorrelation *x =
            (const CUpti_ActivityExternalCorrelation *)rec;
        if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          acl_attr_extcorr(c->attr, x->correlationId, x->externalId);
      } /* launch API records: only needed for external correlation */
    }
    size_t dropped = 0;
    if (cu.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
      acl_attr_add_dropped(c->attr, dropped);
    atomic_fetch_add(&c->buffers, 1);
    atomic_store(&c->last_buffer_ns, acl_mono_ns());
  }
  if (c) {
    pthread_mutex_lock(&c->bmu);
    if (c->nbufs < BUF_KEEP) {
      c->bufs[c->nbufs++] = buffer;
      buffer = NULL;
    }
    pthread_mutex_unlock(&c->bmu);
  }
  free(buffer);
}

static void back_off(acl_cupti_t *c, const char *what, CUptiResult r)
{
  if (!atomic_exchange(&c->backed_off, true))
    acl_warn("profiler: CUPTI %s failed (%s): backing off CUPTI, samples now come from NCCL "
             "profiler events",
             what, res_str(r));
}

static void *flush_main(void *arg)
{
  acl_cupti_t *c = arg;
  while (!atomic_load(&c->stopping) && !atomic_load(&c->backed_off)) {
    pthread_mutex_lock(&c->mu);
    while (!atomic_load(&c->stopping) && acl_attr_pending(c->attr) == 0) {
      atomic_store(&c->idle, true);
      pthread_cond_wait(&c->cv, &c->mu);
    }
    atomic_store(&c->idle, false);
    pthread_mutex_unlock(&c->mu);
    if (atomic_load(&c->stopping))
      break;
    CUptiResult r = cu.cuptiActivityFlushAll(0);
    if (r != CUPTI_SUCCESS) {
      back_off(c, "cuptiActivityFlushAll", r);
      break;
    }
    c->batch(c->u, false);
    /* Buffers stopped coming for a minute while calls wait: someone else
     * took CUPTI's activity callbacks. */
    uint64_t last = atomic_load(&c->last_buffer_ns), now = acl_mono_ns();
    if (acl_attr_pending(c->attr) > 0 && last && now > last + BUFFER_STALL_NS)
      back_off(c, "buffer delivery (none for 60 s)", CUPTI_SUCCESS);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)c->flush_us * 1000u;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&c->mu);
    if (!atomic_load(&c->stopping))
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    pthread_mutex_unlock(&c->mu);
  }
  return NULL;
}

/* External correlation needs API records. Measured on an H200 (CUDA 13.0,
 * driver 580): selecting only the launch calls (cuptiActivityEnable*Api per
 * callback id) yields no external-correlation records at all, so whole
 * DRIVER and RUNTIME kinds are enabled; their records are skipped on parse. */
static void enable_launch_records(acl_cupti_t *c, bool on)
{
  if (on) {
    c->driver_all = cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS;
    c->runtime_all = cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS;
    if (!c->driver_all || !c->runtime_all)
      acl_warn("profiler: CUPTI API records: driver %s, runtime %s; kernels launched "
               "without them cannot be attributed",
               c->driver_all ? "on" : "unavailable", c->runtime_all ? "on" : "unavailable");
    return;
  }
  if (c->driver_all)
    cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  if (c->runtime_all)
    cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
  c->driver_all = c->runtime_all = false;
}

static void CUPTIAPI probe_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
                              const void *data)
{
  (void)u, (void)d, (void)id, (void)data;
}

static bool is_multi(CUptiResult r)
{
  return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

acl_cupti_t *acl_cupti_start(const acl_cupti_opts_t *o, acl_attr_t *attr,
                             acl_cupti_batch_fn batch, void *u, char *why, size_t whylen,
                             bool *backed_off)
{
  acl_cupti_t *c = NULL;
  CUptiResult r;
  *backed_off = false;
  pthread_mutex_lock(&g_mu);
  if (atomic_load(&g_active)) {
    snprintf(why, whylen, "CUPTI already in use by another autoccl profiler in this process");
    goto fail_unlock;
  }
  if (!load_cupti(o ? o->lib : NULL, why, whylen))
    goto fail_unlock;
  uint32_t ver = 0;
  if (cu.cuptiGetVersion(&ver) != CUPTI_SUCCESS || ver < 130000) {
    snprintf(why, whylen, "%s: CUPTI API version %u, need >= 13 (record layouts differ)",
             cu.path, ver);
    goto fail_unlock;
  }
  /* Probe for another subscriber (PyTorch profiler, Nsight, a sanitizer);
   * released at once so a later tool can still subscribe. */
  CUpti_SubscriberHandle sub;
  r = cu.cuptiSubscribe(&sub, (CUpti_CallbackFunc)probe_cb, NULL);
  if (r != CUPTI_SUCCESS) {
    *backed_off = is_multi(r);
    snprintf(why, whylen, "cuptiSubscribe: %s%s", res_str(r),
             *backed_off ? " (another CUPTI subscriber holds CUPTI)" : "");
    goto fail_unlock;
  }
  cu.cuptiUnsubscribe(sub);
  c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(why, whylen, "out of memory");
    goto fail_unlock;
  }
  c->attr = attr;
  c->batch = batch;
  c->u = u;
  c->flush_us = o && o->flush_us ? o->flush_us : FLUSH_US_DEFAULT;
  c->inst = atomic_fetch_add(&g_inst, 1) + 1;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  pthread_mutex_init(&c->bmu, NULL);
  atomic_store(&g_active, c);
  if ((r = cu.cuptiActivityRegisterCallbacks(buf_request, buf_complete)) != CUPTI_SUCCESS) {
    snprintf(why, whylen, "cuptiActivityRegisterCallbacks: %s", res_str(r));
    goto fail_active;
  }
  if ((r = cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS) {
    *backed_off = is_multi(r);
    snprintf(why, whylen, "cuptiActivityEnable(CONCURRENT_KERNEL): %s", res_str(r));
    goto fail_active;
  }
  if ((r = cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) != CUPTI_SUCCESS) {
    *backed_off = is_multi(r);
    snprintf(why, whylen, "cuptiActivityEnable(EXTERNAL_CORRELATION): %s", res_str(r));
    goto fail_kernel;
  }
  enable_launch_records(c, true);
  if (pthread_create(&c->thr, NULL, flush_main, c) != 0) {
    snprintf(why, whylen, "cannot start the CUPTI flush thread");
    goto fail_all;
  }
  c->thr_ok = true;
  pthread_mutex_unlock(&g_mu);
  acl_info("profiler: CUPTI loaded from %s (API %u)", cu.path, ver);
  return c;
fail_all:
  enable_launch_records(c, false);
  cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
fail_kernel:
  cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
fail_active:
  atomic_store(&g_active, NULL);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->bmu);
  free(c);
fail_unlock:
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

void acl_cupti_stop(acl_cupti_t *c, bool at_exit)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->mu);
  atomic_store(&c->stopping, true);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (c->thr_ok)
    pthread_join(c->thr, NULL);
  pthread_mutex_lock(&g_mu);
  if (!at_exit && !atomic_load(&c->backed_off)) {
    /* Deliver what completed, then stop our kinds so CUPTI holds none of
     * our buffers and never calls into a plugin about to be unloaded. */
    cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    c->batch(c->u, true);
    enable_launch_records(c, false);
    cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  atomic_store(&g_active, NULL);
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < c->nbufs; i++)
    free(c->bufs[i]);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->bmu);
  free(c);
}

int acl_cupti_thread_slot(acl_cupti_t *c)
{
  if (!c)
    return -1;
  if (tls.inst != c->inst) {
    int s = atomic_fetch_add(&c->next_slot, 1);
    tls.inst = c->inst;
    tls.slot = s < ACL_ATTR_SLOTS ? s : -1;
  }
  return tls.slot;
}

void acl_cupti_push(acl_cupti_t *c, uint64_t ext)
{
  if (!c || atomic_load(&c->backed_off))
    return;
  if (atomic_load(&c->suspended)) {
    if (tls.pushed)
      cu.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
    tls.pushed = false;
    return;
  }
  /* Keep the id pushed until this thread's next tag: NCCL launches in
   * ncclGroupEnd, after getCollInfo returned. */
  if (tls.pushed)
    cu.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
  tls.pushed = cu.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                         ext) == CUPTI_SUCCESS;
}

void acl_cupti_kick(acl_cupti_t *c)
{
  if (!c || !atomic_load(&c->idle))
    return;
  pthread_mutex_lock(&c->mu);
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

void acl_cupti_flush(acl_cupti_t *c)
{
  if (!c || atomic_load(&c->backed_off))
    return;
  cu.cuptiActivityFlushAll(0);
  c->batch(c->u, true);
}

bool acl_cupti_backed_off(const acl_cupti_t *c) { return c && atomic_load(&c->backed_off); }
uint64_t acl_cupti_buffers(const acl_cupti_t *c) { return c ? atomic_load(&c->buffers) : 0; }

void acl_cupti_set_active(acl_cupti_t *c, bool active)
{
  if (!c || atomic_load(&c->backed_off))
    return;
  pthread_mutex_lock(&g_mu);
  if (active && atomic_load(&c->suspended)) {
    cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    enable_launch_records(c, true);
    atomic_store(&c->suspended, false);
  } else if (!active && !atomic_load(&c->suspended)) {
    atomic_store(&c->suspended, true);
    enable_launch_records(c, false);
    cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  pthread_mutex_unlock(&g_mu);
}

bool acl_cupti_suspended(const acl_cupti_t *c) { return c && atomic_load(&c->suspended); }

#endif
