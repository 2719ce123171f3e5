/* CUPTI activity collection through a dlopen'ed libcupti; see cupti.h.
 * Why each choice: CONCURRENT_KERNEL (KIND_KERNEL serialises kernels);
 * external correlation needs API records, so only the launch APIs' records
 * are enabled (cheaper than all of DRIVER/RUNTIME); buffers are malloc'ed on
 * request and recycled; a flush thread runs only while tagged calls wait. */
#include "profiler/prof_cupti.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"


#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "profiler/cupti_lib.h"

#define BUF_SIZE (256u * 1024u)
#define BUF_KEEP 8
/* Flush period while calls wait for their kernels: chosen, not measured;
 * samples reach the search within a few ms, and the flush thread stays
 * idle most of the time. */
#define FLUSH_US_DEFAULT 2000u
/* Buffers stopped coming for this long while calls wait: someone else took
 * CUPTI's activity callbacks (far beyond any flush period or kernel). */
#define BUFFER_STALL_NS (60ull * 1000000000ull)

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(acl_cupti_t *) g_active;
static atomic_ulong g_inst; /* instance generation, for thread slots */
static __thread struct {
  unsigned long inst;
  int slot;
  bool pushed;         /* an id of ours is on this thread's CUPTI stack */
  unsigned long epoch; /* attach generation of that id (a detach empties the stacks) */
} tls;

/* Detach request (cuptiFinalize from an API exit, as CUPTI asks): */
enum { FIN_NONE = 0, FIN_ARMED, FIN_FIRING, FIN_DONE };
/* How long a closing window waits for its tagged calls' kernel records. */
#define DRAIN_NS 200000000ull

struct acl_cupti {
  acl_attr_t *attr;
  acl_cupti_batch_fn batch;
  void *u;
  unsigned flush_us;
  unsigned long inst;
  atomic_int next_slot;
  atomic_bool backed_off;
  atomic_bool unavailable; /* the first attach failed: as if CUPTI were absent */
  atomic_bool retire; /* acl_cupti_retire: the flush thread stops the windows */
  char retire_why[192];
  atomic_bool stopping;
  atomic_bool called; /* a collective was called: windows may open */
  atomic_bool idle;
  atomic_ulong buffers;
  _Atomic uint64_t last_buffer_ns;
  bool driver_all, runtime_all; /* API kinds enabled (external correlation needs them) */
  acl_duty_t duty;              /* the window rule; the flush thread's alone */
  bool detach;                  /* closing detaches CUPTI (else kinds are only disabled) */
  atomic_int wstate;            /* acl_duty_state_t applied; OPEN/ALWAYS: calls tagged */
  atomic_bool attached;         /* our activity kinds are enabled */
  atomic_int inflight;          /* tagging threads between begin and end */
  atomic_ulong epoch;           /* attach generation */
  atomic_int fin;               /* FIN_* */
  CUpti_SubscriberHandle fin_sub;
  atomic_ulong windows, detaches, attach_failures;
  _Atomic uint64_t on_ns; /* attached time, closed windows */
  pthread_t thr;
  bool thr_ok;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_mutex_t bmu; /* recycled buffers */
  uint8_t *bufs[BUF_KEEP];
  int nbufs;
};

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
    while (acl_cu.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        acl_krec_t kr = {.start = k->start,
                         .end = k->end,
                         .device = k->deviceId,
                         .stream = k->streamId,
                         .corr = k->correlationId,
                         .name = k->name};
        acl_attr_kernel(c->attr, &kr);
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)rec;
        if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          acl_attr_extcorr(c->attr, x->correlationId, x->externalId);
      } /* launch API records: only needed for external correlation */
    }
    size_t dropped = 0;
    if (acl_cu.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
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
             what, acl_cupti_res_str(r));
}

/* External correlation needs API records. Measured on an H200 (CUDA 13.0,
 * driver 580): selecting only the launch calls (cuptiActivityEnable*Api per
 * callback id) yields no external-correlation records at all, so whole
 * DRIVER and RUNTIME kinds are enabled; their records are skipped on parse. */
static void enable_launch_records(acl_cupti_t *c, bool on)
{
  if (on) {
    c->driver_all = acl_cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS;
    c->runtime_all = acl_cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS;
    if (!c->driver_all || !c->runtime_all)
      acl_warn("profiler: CUPTI API records: driver %s, runtime %s; kernels launched "
               "without them cannot be attributed",
               c->driver_all ? "on" : "unavailable", c->runtime_all ? "on" : "unavailable");
    return;
  }
  if (c->driver_all)
    acl_cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  if (c->runtime_all)
    acl_cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
  c->driver_all = c->runtime_all = false;
}

static void CUPTIAPI probe_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
                              const void *data)
{
  (void)u, (void)d, (void)id, (void)data;
}

static bool is_multi(CUptiResult r) { return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; }

/* Another CUPTI client (PyTorch's profiler, Nsight) holds a subscriber now.
 * One that arrives while a window is open has registered its own activity
 * callbacks and enabled its kinds (the same kinds as ours), and tears CUPTI
 * down itself when it is done: disabling the kinds or detaching CUPTI then
 * would pull them from under it. */
static bool other_subscriber(void)
{
  CUpti_SubscriberHandle sub;
  CUptiResult r = acl_cu.cuptiSubscribe(&sub, (CUpti_CallbackFunc)probe_cb, NULL);
  if (r == CUPTI_SUCCESS)
    acl_cu.cuptiUnsubscribe(sub);
  return is_multi(r);
}

/* Enables our kinds (a window opens). After a detach CUPTI starts afresh:
 * callbacks are registered again, and the probe sees a subscriber that
 * arrived meanwhile (PyTorch's profiler, Nsight), which makes us back off. */
static bool attach(acl_cupti_t *c, char *why, size_t whylen, bool *other)
{
  CUpti_SubscriberHandle sub;
  CUptiResult r = acl_cu.cuptiSubscribe(&sub, (CUpti_CallbackFunc)probe_cb, NULL);
  *other = false;
  if (r != CUPTI_SUCCESS) {
    *other = is_multi(r);
    snprintf(why, whylen, "cuptiSubscribe: %s%s", acl_cupti_res_str(r),
             *other ? " (another CUPTI subscriber holds CUPTI)" : "");
    return false;
  }
  acl_cu.cuptiUnsubscribe(sub);
  if ((r = acl_cu.cuptiActivityRegisterCallbacks(buf_request, buf_complete)) != CUPTI_SUCCESS) {
    snprintf(why, whylen, "cuptiActivityRegisterCallbacks: %s", acl_cupti_res_str(r));
    return false;
  }
  if ((r = acl_cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS) {
    *other = is_multi(r);
    snprintf(why, whylen, "cuptiActivityEnable(CONCURRENT_KERNEL): %s", acl_cupti_res_str(r));
    return false;
  }
  if ((r = acl_cu.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) != CUPTI_SUCCESS) {
    *other = is_multi(r);
    snprintf(why, whylen, "cuptiActivityEnable(EXTERNAL_CORRELATION): %s", acl_cupti_res_str(r));
    acl_cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    return false;
  }
  enable_launch_records(c, true);
  atomic_fetch_add(&c->epoch, 1);
  atomic_store(&c->attached, true);
  return true;
}

/* Another client took CUPTI while we were attached: nothing of ours is
 * switched off or detached, and no window opens again. */
static void leave_to_other(acl_cupti_t *c)
{
  atomic_store(&c->attached, false);
  if (!atomic_exchange(&c->backed_off, true))
    acl_warn("profiler: another CUPTI subscriber (PyTorch's profiler, Nsight) arrived while "
             "CUPTI was attached; its kinds and callbacks are left as they are, and CUPTI is "
             "backed off: samples now come from NCCL profiler events");
}

static void disable_kinds(acl_cupti_t *c)
{
  enable_launch_records(c, false);
  acl_cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  acl_cu.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  atomic_store(&c->attached, false);
}

/* The first CUDA API call to return after the request detaches CUPTI:
 * cuptiFinalize is safe at an API exit (cupti_activity.h). */
static void CUPTIAPI fin_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
  (void)id;
  acl_cupti_t *c = u;
  const CUpti_CallbackData *cb = data;
  if ((d != CUPTI_CB_DOMAIN_RUNTIME_API && d != CUPTI_CB_DOMAIN_DRIVER_API) || !cb ||
      cb->callbackSite != CUPTI_API_EXIT)
    return;
  int want = FIN_ARMED;
  if (!atomic_compare_exchange_strong(&c->fin, &want, FIN_FIRING))
    return;
  acl_cu.cuptiFinalize();
  atomic_fetch_add(&c->detaches, 1);
  atomic_store(&c->fin, FIN_DONE);
}

static void arm_detach(acl_cupti_t *c)
{
  if (c->detach && acl_cu.cuptiFinalize && acl_cu.cuptiEnableDomain &&
      acl_cu.cuptiSubscribe(&c->fin_sub, (CUpti_CallbackFunc)fin_cb, c) == CUPTI_SUCCESS) {
    atomic_store(&c->fin, FIN_ARMED);
    acl_cu.cuptiEnableDomain(1, c->fin_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    acl_cu.cuptiEnableDomain(1, c->fin_sub, CUPTI_CB_DOMAIN_DRIVER_API);
  }
}

/* Before touching CUPTI again: a request nobody fired yet (no CUDA call
 * since) is withdrawn; one firing is waited for. */
static void settle_detach(acl_cupti_t *c)
{
  int want = FIN_ARMED;
  if (atomic_compare_exchange_strong(&c->fin, &want, FIN_NONE)) {
    acl_cu.cuptiUnsubscribe(c->fin_sub);
    return;
  }
  while (atomic_load(&c->fin) == FIN_FIRING)
    sched_yield();
  atomic_store(&c->fin, FIN_NONE);
}

static void flush_round(acl_cupti_t *c)
{
  CUptiResult r = acl_cu.cuptiActivityFlushAll(0);
  if (r != CUPTI_SUCCESS) {
    back_off(c, "cuptiActivityFlushAll", r);
    return;
  }
  c->batch(c->u, false);
  /* Buffers stopped coming for a minute while calls wait: someone else
   * took CUPTI's activity callbacks. */
  uint64_t last = atomic_load(&c->last_buffer_ns), now = acl_mono_ns();
  if (acl_attr_pending(c->attr) > 0 && last && now > last + BUFFER_STALL_NS)
    back_off(c, "buffer delivery (none for 60 s)", CUPTI_SUCCESS);
}

/* A window closes: no new tags (callers inside begin/end finish first), the
 * tagged calls' records are drained, then our kinds go off and CUPTI is
 * detached at the next CUDA API exit. */
static void close_window(acl_cupti_t *c, uint64_t opened_ns)
{
  atomic_store(&c->wstate, ACL_DUTY_CLOSED);
  while (atomic_load(&c->inflight) > 0)
    sched_yield();
  uint64_t t0 = acl_mono_ns();
  while (acl_attr_pending(c->attr) > 0 && acl_mono_ns() - t0 < DRAIN_NS &&
         !atomic_load(&c->backed_off) && !atomic_load(&c->stopping)) {
    flush_round(c);
    usleep(c->flush_us);
  }
  pthread_mutex_lock(&g_mu);
  if (!atomic_load(&c->backed_off) && other_subscriber())
    leave_to_other(c);
  if (!atomic_load(&c->backed_off)) {
    disable_kinds(c);
    acl_cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    c->batch(c->u, false);
    arm_detach(c);
  }
  pthread_mutex_unlock(&g_mu);
  atomic_fetch_add(&c->on_ns, acl_mono_ns() - opened_ns);
}

static void open_window(acl_cupti_t *c)
{
  char why[256];
  bool other = false;
  pthread_mutex_lock(&g_mu);
  settle_detach(c);
  bool ok = attach(c, why, sizeof(why), &other);
  pthread_mutex_unlock(&g_mu);
  if (ok) {
    atomic_fetch_add(&c->windows, 1);
    return;
  }
  bool first = atomic_load(&c->windows) == 0 && atomic_fetch_add(&c->attach_failures, 1) == 0;
  if (other) {
    back_off(c, "attach (another CUPTI subscriber is active)", CUPTI_SUCCESS);
  } else if (first) {
    /* never attached (no GPU, no permission): what a failed load says, once */
    atomic_store(&c->unavailable, true);
    atomic_store(&c->backed_off, true);
    if (c->duty.period_ns)
      acl_info("profiler: CUPTI unavailable (%s); samples come from NCCL profiler events, "
               "overlap unknown",
               why);
    else
      acl_warn("profiler: CUPTI unavailable (%s); samples come from NCCL profiler events "
               "(AUTOCCL_PROFILER=nccl silences this)",
               why);
  } else
    acl_warn("profiler: CUPTI window not opened (%s); this window's samples come from NCCL "
             "profiler events",
             why);
}

static void timed_wait(acl_cupti_t *c, uint64_t ns)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (ns > 3600000000000ull)
    ns = 3600000000000ull;
  uint64_t t = (uint64_t)ts.tv_nsec + ns;
  ts.tv_sec += (time_t)(t / 1000000000u);
  ts.tv_nsec = (long)(t % 1000000000u);
  pthread_mutex_lock(&c->mu);
  if (!atomic_load(&c->stopping) && !atomic_load(&c->retire))
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  pthread_mutex_unlock(&c->mu);
}

/* acl_cupti_retire on the flush thread: as close_window, without arming
 * the detach (a later attach is what deadlocks), then backed off for good.
 * Usually it comes before the first window (see await_first_call), and
 * CUPTI never attached. */
static void retire_now(acl_cupti_t *c)
{
  bool was = atomic_load(&c->windows) > 0;
  atomic_store(&c->wstate, ACL_DUTY_CLOSED);
  while (atomic_load(&c->inflight) > 0)
    sched_yield();
  pthread_mutex_lock(&g_mu);
  settle_detach(c);
  if (atomic_load(&c->attached) && other_subscriber())
    leave_to_other(c);
  if (atomic_load(&c->attached)) {
    disable_kinds(c);
    acl_cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    c->batch(c->u, true);
  }
  atomic_store(&c->backed_off, true);
  pthread_mutex_unlock(&g_mu);
  acl_info("profiler: CUPTI windows off (%s); %s; samples come from NCCL profiler events, "
           "overlap unknown",
           c->retire_why,
           was ? "CUPTI stays in the launch path" : "CUPTI was never attached");
}

void acl_cupti_retire(acl_cupti_t *c, const char *why)
{
  if (!c || atomic_load(&c->backed_off))
    return;
  pthread_mutex_lock(&c->mu);
  if (!atomic_load(&c->retire)) {
    snprintf(c->retire_why, sizeof(c->retire_why), "%s", why);
    atomic_store(&c->retire, true);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* No window opens before the first collective, and the first opens then
 * (acl_duty_first_look). A process driving several
 * ranks of one communicator has attached all of them by then (NCCL runs no
 * collective before every rank of it is initialised), so it is retired
 * before CUPTI ever attaches: once attached, CUPTI stays in the launch path
 * unless detached, and detaching there is not safe. The windows keep their
 * wall-clock phase (acl_duty_align). False: stop, or retired. */
static bool await_first_call(acl_cupti_t *c)
{
  pthread_mutex_lock(&c->mu);
  while (!atomic_load(&c->called) && !atomic_load(&c->stopping) && !atomic_load(&c->retire))
    pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  if (atomic_load(&c->retire))
    retire_now(c);
  return !atomic_load(&c->stopping) && !atomic_load(&c->backed_off);
}

/* The flush thread applies the window rule and flushes while tagged calls
 * wait for their records. */
static void *flush_main(void *arg)
{
  acl_cupti_t *c = arg;
  if (!await_first_call(c))
    return NULL;
  acl_duty_first_look(&c->duty, acl_mono_ns());
  while (!atomic_load(&c->stopping) && !atomic_load(&c->backed_off)) {
    if (atomic_load(&c->retire)) {
      retire_now(c);
      break;
    }
    uint64_t now = acl_mono_ns();
    acl_duty_state_t want = acl_duty_step(&c->duty, now);
    bool attached = atomic_load(&c->attached);
    if (want == ACL_DUTY_CLOSED && attached)
      close_window(c, c->duty.opened_ns);
    else if (want != ACL_DUTY_CLOSED && !attached)
      open_window(c);
    if (atomic_load(&c->attached))
      atomic_store(&c->wstate, want);
    uint64_t wait = acl_duty_wait_ns(&c->duty, acl_mono_ns());
    if (atomic_load(&c->attached) && acl_attr_pending(c->attr) > 0) {
      flush_round(c);
      if (wait > (uint64_t)c->flush_us * 1000u)
        wait = (uint64_t)c->flush_us * 1000u;
    }
    atomic_store(&c->idle, acl_attr_pending(c->attr) == 0);
    timed_wait(c, wait);
  }
  return NULL;
}

acl_cupti_t *acl_cupti_start(const acl_cupti_opts_t *o, acl_attr_t *attr, acl_cupti_batch_fn batch,
                             void *u, char *why, size_t whylen)
{
  acl_cupti_t *c = NULL;
  pthread_mutex_lock(&g_mu);
  if (atomic_load(&g_active)) {
    snprintf(why, whylen, "CUPTI already in use by another autoccl profiler in this process");
    goto fail_unlock;
  }
  if (!acl_cupti_load(o ? o->lib : NULL, why, whylen))
    goto fail_unlock;
  uint32_t ver = 0;
  if (acl_cu.cuptiGetVersion(&ver) != CUPTI_SUCCESS || ver < 130000) {
    snprintf(why, whylen, "%s: CUPTI API version %u, need >= 13 (record layouts differ)",
             acl_cu.path, ver);
    goto fail_unlock;
  }
  c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(why, whylen, "out of memory");
    goto fail_unlock;
  }
  c->attr = attr;
  c->batch = batch;
  c->u = u;
  c->flush_us = o && o->flush_us ? o->flush_us : FLUSH_US_DEFAULT;
  c->detach = !(o && o->keep_attached);
  c->inst = atomic_fetch_add(&g_inst, 1) + 1;
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  uint64_t now = acl_mono_ns();
  acl_duty_init(&c->duty, o ? o->on_ms : 0, o ? o->period_ms : 0, now);
  acl_duty_align(&c->duty, now, (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  pthread_mutex_init(&c->bmu, NULL);
  atomic_store(&g_active, c);
  /* CUPTI attaches in the first window, at the first collective
   * (await_first_call); a subscriber already present is reported then. */
  if (pthread_create(&c->thr, NULL, flush_main, c) != 0) {
    snprintf(why, whylen, "cannot start the CUPTI flush thread");
    goto fail_active;
  }
  c->thr_ok = true;
  pthread_mutex_unlock(&g_mu);
  acl_info("profiler: CUPTI loaded from %s (API %u)", acl_cu.path, ver);
  return c;
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
  atomic_store(&c->wstate, ACL_DUTY_CLOSED);
  pthread_mutex_lock(&c->mu);
  atomic_store(&c->stopping, true);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (c->thr_ok)
    pthread_join(c->thr, NULL);
  while (atomic_load(&c->inflight) > 0)
    sched_yield();
  pthread_mutex_lock(&g_mu);
  if (!at_exit && !atomic_load(&c->backed_off)) {
    /* Deliver what completed, then stop our kinds so CUPTI holds none of
     * our buffers and never calls into a plugin about to be unloaded. */
    settle_detach(c);
    if (atomic_load(&c->attached) && other_subscriber())
      leave_to_other(c);
    if (atomic_load(&c->attached)) {
      acl_cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      c->batch(c->u, true);
      disable_kinds(c);
      acl_cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
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

static bool tags_now(int st) { return st == ACL_DUTY_OPEN || st == ACL_DUTY_ALWAYS; }

bool acl_cupti_begin(acl_cupti_t *c)
{
  if (!c || atomic_load(&c->backed_off))
    return false;
  atomic_fetch_add(&c->inflight, 1); /* before the check: close_window waits for it */
  if (tags_now(atomic_load(&c->wstate)))
    return true;
  atomic_fetch_sub(&c->inflight, 1);
  return false;
}

void acl_cupti_end(acl_cupti_t *c) { atomic_fetch_sub(&c->inflight, 1); }

void acl_cupti_called(acl_cupti_t *c)
{
  if (!c || atomic_load_explicit(&c->called, memory_order_relaxed) ||
      atomic_exchange(&c->called, true))
    return;
  pthread_mutex_lock(&c->mu);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

void acl_cupti_push(acl_cupti_t *c, uint64_t ext)
{
  unsigned long ep = atomic_load(&c->epoch);
  if (tls.epoch != ep) { /* a detach emptied this thread's id stack */
    tls.epoch = ep;
    tls.pushed = false;
  }
  /* Keep the id pushed until this thread's next tag: NCCL launches in
   * ncclGroupEnd, after getCollInfo returned. */
  if (tls.pushed)
    acl_cu.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
  tls.pushed = acl_cu.cuptiActivityPushExternalCorrelationId(
                   CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, ext) == CUPTI_SUCCESS;
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
  pthread_mutex_lock(&g_mu);
  if (atomic_load(&c->attached))
    acl_cu.cuptiActivityFlushAll(0);
  pthread_mutex_unlock(&g_mu);
  c->batch(c->u, true);
}

bool acl_cupti_backed_off(const acl_cupti_t *c)
{
  return c && atomic_load(&c->backed_off) && !atomic_load(&c->unavailable);
}
bool acl_cupti_unavailable(const acl_cupti_t *c) { return c && atomic_load(&c->unavailable); }
uint64_t acl_cupti_buffers(const acl_cupti_t *c) { return c ? atomic_load(&c->buffers) : 0; }

bool acl_cupti_tagging(const acl_cupti_t *c)
{
  return c && !atomic_load(&c->backed_off) && tags_now(atomic_load(&c->wstate));
}

void acl_cupti_window_stats(const acl_cupti_t *c, acl_cupti_win_t *w)
{
  memset(w, 0, sizeof(*w));
  if (!c)
    return;
  w->state = (acl_duty_state_t)atomic_load(&c->wstate);
  w->on_ms = (unsigned)(c->duty.on_ns / 1000000u);
  w->period_ms = (unsigned)(c->duty.period_ns / 1000000u);
  w->windows = atomic_load(&c->windows);
  w->detaches = atomic_load(&c->detaches);
  w->attach_failures = atomic_load(&c->attach_failures);
  w->on_seconds = (double)atomic_load(&c->on_ns) * 1e-9;
}
