/* The process-wide profiler: picks a sample source (CUPTI, NCCL profiler
 * events, simulated), routes tags and events to it, turns what it produces
 * into samples for the sink, and keeps the counters the endpoint shows. */
#include "profiler/profiler.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "profiler/attrib.h"
#include "profiler/gate.h"
#include "profiler/hostcost.h"
#include "profiler/ncclev.h"
#include "profiler/prof_cupti.h"
#include "profiler/simfeed.h"
#include "profiler/trace.h"

#include "profiler/prof_int.h"

static pthread_mutex_t g_live_mu = PTHREAD_MUTEX_INITIALIZER;
static acl_prof_t *g_live; /* for the atexit handler */
static bool g_atexit_done;

/* ran: algo, proto, channels NCCL ran (-1, -1, 0 unknown). src: the path
 * that measured it (between CUPTI windows the NCCL-event path does). */
static void deliver(acl_prof_t *p, const prank_t *r, int src, const acl_call_tag_t *tag,
                    uint64_t call_ns, uint64_t start, uint64_t end, float overlap, uint16_t kernels,
                    const int ran[3])
{
  acl_prof_sample_t s;
  memset(&s, 0, sizeof(s));
  s.tag = *tag;
  s.ran_nch = ran[2];
  s.ran_algo = (int8_t)ran[0];
  s.ran_proto = (int8_t)ran[1];
  s.call_ns = call_ns;
  s.gpu_start = start;
  s.gpu_stop = end;
  s.source = (uint8_t)src;
  s.seconds = (double)(end - start) * 1e-9;
  s.overlap = overlap;
  s.compute_kernels = kernels;
  if (r && acl_trace_on())
    s.host_seconds = (double)acl_hostcost_ns(&r->host, tag->widx) * 1e-9;
  uint64_t now = acl_mono_ns();
  if (call_ns && now >= call_ns) {
    uint64_t i = atomic_fetch_add_explicit(&p->nlat, 1, memory_order_relaxed);
    atomic_store_explicit(&p->lat_ns[i % LAT_N], now - call_ns, memory_order_relaxed);
  }
  atomic_fetch_add(&p->samples, 1);
  if (p->sink)
    p->sink(p->user, &s);
}

/* NCCL's Coll event of its own choice, when the call is enqueued: kept for
 * the CUPTI samples (own_fill), and handed on at once as a fact (no time:
 * seconds < 0) where it is new for the workload. Its samples come up to
 * ~1,000 calls later (a host far ahead of its GPU), and the search plans
 * its first round from where NCCL's choice runs while the baseline's
 * samples are on their way. */
static void own_hook(void *u, void *rank_user, const acl_call_tag_t *tag, int nch, int algo,
                     int proto)
{
  acl_prof_t *p = u;
  prank_t *r = rank_user;
  if (!r || tag->cand.algo != ACL_ALGO_NCCL || nch <= 0 || nch > 0xffff)
    return;
  uint64_t v = (uint64_t)tag->widx << 32 | (uint64_t)nch << 16 | (uint64_t)(uint8_t)algo << 8 |
               (uint64_t)(uint8_t)proto;
  uint64_t was = atomic_exchange_explicit(&r->own[tag->widx % OWN_N], v, memory_order_relaxed);
  if (was == v || !p || !p->sink)
    return;
  acl_prof_sample_t s;
  memset(&s, 0, sizeof(s));
  s.tag = *tag;
  s.seconds = -1.0;
  s.overlap = -1.0f;
  s.ran_nch = nch;
  s.ran_algo = (int8_t)algo;
  s.ran_proto = (int8_t)proto;
  p->sink(p->user, &s);
}

/* ran[]: a CUPTI sample of NCCL's own choice gets what its workload's
 * latest Coll event said NCCL ran. */
static void own_fill(const prank_t *r, const acl_call_tag_t *tag, int ran[3])
{
  if (!r || tag->cand.algo != ACL_ALGO_NCCL || ran[2] > 0)
    return;
  uint64_t v = atomic_load_explicit(&r->own[tag->widx % OWN_N], memory_order_relaxed);
  if (!v || (uint32_t)(v >> 32) != tag->widx)
    return;
  ran[0] = (int8_t)(v >> 8);
  ran[1] = (int8_t)v;
  ran[2] = (int)(v >> 16 & 0xffff);
}

/* CUPTI path: called from the flush thread (or a synchronous flush). */
static void cupti_batch(void *u, bool final)
{
  acl_prof_t *p = u;
  acl_attr_sample_t buf[128];
  size_t n;
  bool more;
  do {
    n = acl_attr_process(p->attr, final, acl_mono_ns(), buf, 128, &more);
    for (size_t i = 0; i < n; i++) {
      int ran[3] = {-1, -1, 0};
      own_fill(buf[i].user, &buf[i].tag, ran);
      deliver(p, buf[i].user, SRC_CUPTI, &buf[i].tag, buf[i].call_ns, buf[i].start, buf[i].end,
              (float)buf[i].ov.frac,
              (uint16_t)(buf[i].ov.distinct > 65535 ? 65535 : buf[i].ov.distinct), ran);
    }
  } while (more);
}

/* Called per sample on NCCL's thread: once the feed is mapped it is a load.
 * The pointer is published once (release, after the mapping and its magic
 * check) and never changes until destroy, which runs after the last
 * sample: an acquire load that sees it sees a checked mapping. Until then
 * the mutex is taken only when a retry is due (once a second); retry_ns is
 * a hint read relaxed, re-checked under the mutex, so a stale read costs at
 * most one extra lock. */
static const acl_simfeed_t *feed_get(acl_prof_t *p)
{
  const acl_simfeed_t *f = atomic_load_explicit(&p->feed, memory_order_acquire);
  if (f || !p->cfg.sim_feed[0])
    return f;
  uint64_t now = acl_mono_ns();
  if (now < atomic_load_explicit(&p->feed_retry_ns, memory_order_relaxed))
    return NULL;
  pthread_mutex_lock(&p->feed_mu);
  f = atomic_load_explicit(&p->feed, memory_order_relaxed);
  if (!f && now >= atomic_load_explicit(&p->feed_retry_ns, memory_order_relaxed)) {
    /* the simulator may create it later */
    atomic_store_explicit(&p->feed_retry_ns, now + 1000000000ull, memory_order_relaxed);
    int fd = shm_open(p->cfg.sim_feed, O_RDONLY, 0);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(acl_simfeed_t)) {
      void *m = mmap(NULL, sizeof(acl_simfeed_t), PROT_READ, MAP_SHARED, fd, 0);
      if (m != MAP_FAILED) {
        if (((const acl_simfeed_t *)m)->magic == ACL_SIMFEED_MAGIC) {
          f = m;
          atomic_store_explicit(&p->feed, f, memory_order_release);
        } else {
          munmap(m, sizeof(acl_simfeed_t));
        }
      }
    }
    if (fd >= 0)
      close(fd);
  }
  pthread_mutex_unlock(&p->feed_mu);
  return f;
}

/* NCCL-event path: called from whichever NCCL thread stopped the last channel. */
static void ev_emit(void *u, const acl_ev_sample_t *s)
{
  acl_prof_t *p = u;
  const prank_t *r = s->user;
  float ov = -1.0f;
  uint16_t kern = 0;
  if (atomic_load(&p->source) == SRC_SIM && r) {
    const acl_simfeed_t *f = feed_get(p);
    if (f && r->rank >= 0 && r->rank < ACL_SIMFEED_MAX_RANKS && (uint32_t)r->rank < f->nranks) {
      uint32_t m = atomic_load(&f->overlap_milli[r->rank]);
      uint32_t k = atomic_load(&f->compute_kernels[r->rank]);
      ov = (float)(m > 1000 ? 1000 : m) / 1000.0f;
      kern = (uint16_t)(k > 65535 ? 65535 : k);
    }
  }
  deliver(p, r, atomic_load(&p->source) == SRC_SIM ? SRC_SIM : SRC_NCCL, &s->tag, s->call_ns,
          s->start, s->end, ov, kern, (const int[3]){s->ran_algo, s->ran_proto, s->ran_nch});
}

static void at_exit_handler(void)
{
  pthread_mutex_lock(&g_live_mu);
  acl_prof_t *p = g_live;
  if (p && p->cupti) {
    /* CUDA may already be torn down: stop our thread, touch CUPTI no more. */
    acl_cupti_stop(p->cupti, true);
    p->cupti = NULL;
    atomic_store(&p->source, SRC_NCCL);
  }
  pthread_mutex_unlock(&g_live_mu);
}

/* Bound to this library, as glibc's atexit in a shared object is: a plugin
 * unloaded before exit leaves no handler behind. Called directly because a
 * sanitizer's atexit drops that binding (TSan ran a handler of an unloaded
 * plugin at exit). */
extern void *__dso_handle;
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
static void at_exit_cb(void *u)
{
  (void)u;
  at_exit_handler();
}

acl_prof_t *acl_prof_create(const acl_config_t *cfg, acl_prof_sink_fn sink, void *user)
{
  return acl_prof_create_ex(cfg, sink, user, NULL);
}

acl_prof_t *acl_prof_create_ex(const acl_config_t *cfg, acl_prof_sink_fn sink, void *user,
                               const acl_prof_opts_t *opts)
{
  acl_prof_t *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  if (cfg)
    p->cfg = *cfg;
  else
    acl_config_defaults(&p->cfg);
  p->sink = sink;
  p->user = user;
  pthread_mutex_init(&p->feed_mu, NULL);
  pthread_mutex_init(&p->comms_mu, NULL);
  atomic_store(&p->source, SRC_NONE);
  if (p->cfg.mode == ACL_MODE_OFF || p->cfg.profiler == ACL_PROF_OFF) {
    acl_info("profiler: off (%s)",
             p->cfg.mode == ACL_MODE_OFF ? "AUTOCCL_MODE=off" : "AUTOCCL_PROFILER=off");
    return p;
  }
  p->ev = acl_ncclev_create(ev_emit, p);
  acl_ncclev_set_coll_hook(p->ev, own_hook, p);
  p->gate = acl_gate_create(opts ? opts->rule : NULL);
  if (!p->ev || !p->gate) {
    acl_ncclev_destroy(p->ev);
    acl_gate_destroy(p->gate);
    p->ev = NULL;
    p->gate = NULL;
    acl_warn("profiler: out of memory; no samples");
    return p;
  }
  if (p->cfg.sim_feed[0]) {
    atomic_store(&p->source, SRC_SIM);
    if (!feed_get(p))
      acl_info("profiler: sim feed '%s' not readable yet; overlap unknown until it is",
               p->cfg.sim_feed);
    return p;
  }
  /* CUPTI by default on a duty cycle (docs/profiler.md: its cost on a
   * launch-bound loop is ~25 % while attached, nothing while detached);
   * AUTOCCL_PROFILER=cupti keeps it attached, nccl never loads it. */
  if (p->cfg.profiler == ACL_PROF_AUTO || p->cfg.profiler == ACL_PROF_CUPTI) {
    char why[512] = "";
    bool always = p->cfg.profiler == ACL_PROF_CUPTI;
    p->attr = acl_attr_create();
    unsigned on_ms = 0, period_ms = 0;
    if (opts && opts->period_ms) {
      on_ms = opts->on_ms;
      period_ms = opts->period_ms;
    } else if (!acl_config_window_ms(p->cfg.cupti_window, &on_ms, &period_ms)) {
      acl_config_window_ms(acl_setting_find("AUTOCCL_CUPTI_WINDOW")->dstr, &on_ms, &period_ms);
    }
    acl_cupti_opts_t co = {
        .lib = opts ? opts->cupti_lib : NULL,
        .flush_us = opts ? opts->flush_us : 0,
        .on_ms = on_ms,
        .period_ms = always ? 0 : period_ms,
        .keep_attached = opts && opts->keep_attached,
    };
    if (p->attr)
      p->cupti = acl_cupti_start(&co, p->attr, cupti_batch, p, why, sizeof(why));
    if (p->cupti) {
      p->cupti_available = true;
      atomic_store(&p->source, SRC_CUPTI);
      pthread_mutex_lock(&g_live_mu);
      if (!g_live)
        g_live = p;
      if (!g_atexit_done && __cxa_atexit(at_exit_cb, NULL, &__dso_handle) == 0)
        g_atexit_done = true;
      pthread_mutex_unlock(&g_live_mu);
      return p;
    }
    acl_attr_destroy(p->attr);
    p->attr = NULL;
    if (always)
      acl_warn("profiler: CUPTI unavailable (%s); samples come from NCCL profiler events "
               "(AUTOCCL_PROFILER=nccl silences this)",
               why);
    else
      acl_info("profiler: CUPTI unavailable (%s); samples come from NCCL profiler events, "
               "overlap unknown",
               why);
  }
  atomic_store(&p->source, SRC_NCCL);
  return p;
}

void acl_prof_destroy(acl_prof_t *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&g_live_mu);
  if (p->cupti)
    acl_cupti_stop(p->cupti, false);
  p->cupti = NULL;
  if (g_live == p)
    g_live = NULL;
  pthread_mutex_unlock(&g_live_mu);
  if (p->ev) {
    /* What the NCCL-event source saw, for NCCL_DEBUG=INFO readers. */
    acl_ev_stats_t es;
    acl_ncclev_stats(p->ev, &es);
    acl_info("profiler: %llu Coll events, %llu matched to decided calls, %llu samples, "
             "%llu mismatches (%llu clamped), %llu decided calls carried no events, "
             "%llu events found the pool full, %llu overlapping an earlier kernel of their rank "
             "(not used)",
             (unsigned long long)es.colls, (unsigned long long)es.colls_matched,
             (unsigned long long)es.samples, (unsigned long long)es.mismatches,
             (unsigned long long)es.clamped, (unsigned long long)es.unsampled,
             (unsigned long long)es.pool_exhausted, (unsigned long long)es.overlapped);
    acl_gate_stats_t gs;
    acl_gate_stats(p->gate, &gs);
    acl_info("profiler: %llu collectives enqueued, %llu of them with events; %llu decisions, "
             "%llu without an enqueue of their size (aggregated by NCCL)",
             (unsigned long long)gs.enqueued, (unsigned long long)gs.carried,
             (unsigned long long)gs.decided, (unsigned long long)gs.unseen);
  }
  if (p->attr) {
    /* What the CUPTI source attributed, and what it refused to. */
    acl_attr_stats_t as;
    acl_attr_stats(p->attr, &as);
    if (as.nccl_records)
      acl_info("profiler: CUPTI: %llu NCCL kernels, %llu samples, %llu ambiguous, %llu untagged, "
               "%llu bad clock, %llu overlapping an earlier kernel of their rank (not used), "
               "%llu with the overlap unknown (compute records dropped), %llu held for later "
               "compute records, %llu whose overlap grew by %.3f s that way",
               (unsigned long long)as.nccl_records, (unsigned long long)as.samples,
               (unsigned long long)as.ambiguous, (unsigned long long)as.untagged,
               (unsigned long long)as.bad_clock, (unsigned long long)as.overlapped,
               (unsigned long long)as.ov_truncated, (unsigned long long)as.held,
               (unsigned long long)as.ov_late, (double)as.ov_late_ns * 1e-9);
  }
  acl_attr_destroy(p->attr);
  acl_ncclev_destroy(p->ev);
  acl_gate_destroy(p->gate);
  const acl_simfeed_t *feed = atomic_load(&p->feed);
  if (feed)
    munmap((void *)feed, sizeof(acl_simfeed_t));
  pthread_mutex_destroy(&p->feed_mu);
  pthread_mutex_destroy(&p->comms_mu);
  free(p);
}

/* A CUPTI window is open: CUPTI samples the calls, KernelCh waits. */
static bool cupti_live(const acl_prof_t *p)
{
  return atomic_load(&p->source) == SRC_CUPTI && acl_cupti_tagging(p->cupti);
}

bool acl_prof_is_cupti(const acl_prof_t *p) { return p && atomic_load(&p->source) == SRC_CUPTI; }

/* Counts this process's ranks of comm_id (delta +1 at attach, -1 at
 * detach). Two ranks of one communicator in one process (ncclCommInitAll,
 * or several ranks on one GPU) launch kernels that wait for each other's
 * launches: CUPTI must not attach while they run. */
static void comm_count(acl_prof_t *p, uint64_t comm_id, int delta)
{
  int free_slot = -1, n = 0;
  pthread_mutex_lock(&p->comms_mu);
  for (int i = 0; i < ACL_PROF_MAX_COMMS; i++) {
    if (p->comm_ranks[i] && p->comm_ids[i] == comm_id) {
      p->comm_ranks[i] = (uint16_t)(p->comm_ranks[i] + delta);
      n = p->comm_ranks[i];
      free_slot = -2;
      break;
    }
    if (!p->comm_ranks[i] && free_slot == -1)
      free_slot = i;
  }
  if (delta > 0 && free_slot >= 0) {
    p->comm_ids[free_slot] = comm_id;
    p->comm_ranks[free_slot] = 1;
  }
  pthread_mutex_unlock(&p->comms_mu);
  if (n >= 2 && !atomic_exchange(&p->shared_process, true) && p->cupti) {
    char why[160];
    snprintf(why, sizeof(why),
             "this process drives %d ranks of communicator %016llx: attaching CUPTI while "
             "their kernels wait on each other's launches can deadlock",
             n, (unsigned long long)comm_id);
    acl_cupti_retire(p->cupti, why);
  }
}

void *acl_prof_rank_attach(acl_prof_t *p, void *rank_ctx, uint64_t comm_id, int rank, int nranks)
{
  if (!p)
    return NULL;
  if (nranks > 1)
    comm_count(p, comm_id, +1);
  prank_t *r = calloc(1, sizeof(*r));
  if (!r)
    return NULL;
  r->p = p;
  r->rank_ctx = rank_ctx;
  r->func_v = -1;
  r->comm_id = comm_id;
  r->rank = rank;
  r->nranks = nranks > 0 ? nranks : 1;
  if (p->ev && !(r->evr = acl_ncclev_rank_create(p->ev, r, r->nranks))) {
    free(r);
    return NULL;
  }
  return r;
}

void acl_prof_rank_detach(acl_prof_t *p, void *prof_rank)
{
  prank_t *r = prof_rank;
  if (!r)
    return;
  if (p && r->nranks > 1)
    comm_count(p, r->comm_id, -1);
  acl_ncclev_rank_destroy(p ? p->ev : NULL, r->evr);
  acl_gate_forget(p ? p->gate : NULL, r);
  free(r);
}

void acl_prof_on_call(acl_prof_t *p, void *prof_rank, const acl_call_tag_t *tag,
                      uint8_t sample_shift, bool captured)
{
  prank_t *r = prof_rank;
  if (!p || !r || !tag || atomic_load(&p->source) == SRC_NONE)
    return;
  if (!captured && acl_trace_on()) /* only the trace reads it; no group opens without */
    acl_hostcost_group_call(&r->host, tag->widx);
  /* While a CUPTI window is open CUPTI sees every call; otherwise only the
   * calls whose enqueue carried events are measured. A captured call's
   * kernel runs at the graph's replays, which never come back. */
  bool carries = acl_gate_decided(p->gate, r, tag->coll, tag->nbytes, tag->call_idx,
                                  sample_shift > ACL_GATE_NEVER ? ACL_GATE_NEVER : sample_shift) ||
                 !atomic_load_explicit(&r->enq_seen, memory_order_relaxed);
  if (!captured && atomic_load(&p->source) == SRC_CUPTI)
    acl_cupti_called(p->cupti);
  if (captured || !(carries || cupti_live(p)))
    return;
  uint64_t now = acl_mono_ns();
  if (atomic_load(&p->source) == SRC_CUPTI && acl_cupti_begin(p->cupti)) {
    int slot = acl_cupti_thread_slot(p->cupti);
    if (slot >= 0) {
      uint64_t ext = acl_attr_tag(p->attr, (unsigned)slot, tag, r, now);
      acl_cupti_push(p->cupti, ext);
    }
    acl_cupti_end(p->cupti);
    if (slot >= 0)
      acl_cupti_kick(p->cupti);
  }
  /* Coll events are checked for mismatches whatever the source. */
  acl_ncclev_push(p->ev, r->evr, tag, now);
}

int acl_prof_mask_init(acl_prof_t *p, int *mask, bool online)
{
  if (!mask)
    return 0;
  if (!p || !p->gate) {
    *mask = online ? ACL_PROF_CAPTURE_MASK : 0;
    return *mask;
  }
  return acl_gate_set_mask(p->gate, mask, online ? ACL_PROF_CAPTURE_MASK : 0);
}

void acl_prof_mask_release(acl_prof_t *p, int *mask)
{
  if (p)
    acl_gate_release_mask(p->gate, mask);
}

int acl_prof_nccl_mask(const acl_prof_t *p)
{
  if (!p || atomic_load(&p->source) == SRC_NONE || !p->ev)
    return 0;
  if (cupti_live(p))
    return ncclProfileColl; /* mismatch checks only */
  return ncclProfileColl | ncclProfileKernelCh;
}

bool acl_prof_captured(const void *prof_rank)
{
  const prank_t *r = prof_rank;
  return r && atomic_load_explicit(&r->captured, memory_order_relaxed);
}

uint64_t acl_prof_captured_events(const void *prof_rank)
{
  const prank_t *r = prof_rank;
  return r ? atomic_load_explicit(&r->captured_events, memory_order_relaxed) : 0;
}

ncclResult_t acl_prof_nccl_start(acl_prof_t *p, void *prof_rank, void **eHandle,
                                 ncclProfilerEventDescr_v5_t *d)
{
  prank_t *r = prof_rank;
  if (eHandle)
    *eHandle = NULL;
  if (d && d->type == ncclProfileCollApi) {
    /* whatever the sample source, even none: capture is about safety */
    if (r) {
      atomic_store_explicit(&r->captured, d->collApi.graphCaptured, memory_order_relaxed);
      if (d->collApi.graphCaptured)
        atomic_fetch_add_explicit(&r->captured_events, 1, memory_order_relaxed);
    }
    /* CUPTI attached, enabled or finalized around a capture: on one H200
     * under MPS, 2 of 4 runs of a captured all_reduce faulted at replay
     * (unspecified launch failure) with CUPTI's windows, 0 of 7 without
     * them. From the first captured call on, no window opens or closes. */
    if (d->collApi.graphCaptured && p && p->cupti &&
        !atomic_load_explicit(&p->graph_captured, memory_order_relaxed) &&
        !atomic_exchange(&p->graph_captured, true))
      acl_cupti_retire(p->cupti, "a collective was captured into a CUDA graph: CUPTI's "
                                 "windows around a capture can fault its replays");
    /* The enqueue: NCCL just stamped its mask on this collective (gate.h).
     * NCCL names functions and types with the same literals every call. */
    if (r && d->collApi.func != r->func_s) {
      r->func_v = acl_coll_parse(d->collApi.func);
      r->func_s = d->collApi.func;
    }
    if (r && d->collApi.datatype != r->type_s) {
      r->type_v = acl_ncclev_dtype_size(d->collApi.datatype);
      r->type_s = d->collApi.datatype;
    }
    int coll = r ? r->func_v : -1, dsz = r ? r->type_v : 0;
    if (r && p && p->gate && coll >= 0 && dsz > 0) {
      uint64_t bytes = (uint64_t)d->collApi.count * (uint64_t)dsz;
      if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter)
        bytes *= (uint64_t)r->nranks; /* the tuner sees the whole buffer */
      acl_gate_enqueued(p->gate, r, coll, bytes, acl_prof_nccl_mask(p));
      if (!atomic_load_explicit(&r->enq_seen, memory_order_relaxed))
        atomic_store_explicit(&r->enq_seen, true, memory_order_relaxed);
    }
    return ncclSuccess;
  }
  if (d && d->type == ncclProfileGroupApi) {
    /* NCCL starts it whenever CollApi is on; its span is the calls' host
     * time, which the trace records (hostcost.h). */
    if (r && p && atomic_load(&p->source) != SRC_NONE && !d->groupApi.graphCaptured && eHandle &&
        acl_trace_on())
      *eHandle = acl_hostcost_group_start(acl_mono_ns());
    return ncclSuccess;
  }
  if (d && (d->type & (ncclProfileP2pApi | ncclProfileKernelLaunch)))
    return ncclSuccess; /* NCCL starts these whenever CollApi is on: not used */
  if (!p || !p->ev)
    return ncclSuccess;
  /* KernelCh events are only sampled when CUPTI is not the source. */
  if (d && d->type == ncclProfileKernelCh && cupti_live(p))
    return ncclSuccess;
  if (d && d->type == ncclProfileColl)
    acl_ncclev_hold_children(p->ev, !cupti_live(p));
  return acl_ncclev_start(p->ev, r ? r->evr : NULL, eHandle, d);
}

ncclResult_t acl_prof_nccl_stop(acl_prof_t *p, void *eHandle)
{
  if (acl_hostcost_is_group(eHandle)) {
    acl_hostcost_group_stop(eHandle, acl_mono_ns());
    return ncclSuccess;
  }
  return p ? acl_ncclev_stop(p->ev, eHandle) : ncclSuccess;
}

ncclResult_t acl_prof_nccl_state(acl_prof_t *p, void *eHandle, ncclProfilerEventState_v5_t st,
                                 ncclProfilerEventStateArgs_v5_t *args)
{
  if (acl_hostcost_is_group(eHandle))
    return ncclSuccess; /* the group's API start/end marks: its span is enough */
  return p ? acl_ncclev_state(p->ev, eHandle, (int)st, args) : ncclSuccess;
}

void acl_prof_flush(acl_prof_t *p)
{
  if (p && atomic_load(&p->source) == SRC_CUPTI)
    acl_cupti_flush(p->cupti);
}
