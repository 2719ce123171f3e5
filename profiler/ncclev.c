/* NCCL profiler v5 source; see ncclev.h. One mutex guards the pool and all
 * events: a few events per collective, so contention is negligible. */
#include "profiler/ncclev.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/types.h"
#include "profiler/overlap.h"

enum { EV_FREE = 0, EV_COLL = 1, EV_KCH = 2 };

typedef struct ev {
  uint8_t type;
  uint8_t stopped; /* coll: stopEvent seen; kch: its stop stamp seen */
  uint8_t emitted;
  uint8_t has_tag;
  uint8_t child_hold; /* coll: a reference kept for channels still to come */
  int refs;           /* coll: itself + live channel events (+ child_hold) */
  struct ev *parent;  /* kch -> coll */
  struct ev *next;    /* free list */
  acl_ncclev_rank_t *rank;
  /* coll */
  acl_call_tag_t tag;
  void *user;
  uint64_t call_ns;
  uint64_t born_ns; /* host time of the Coll's start */
  uint64_t min_start, max_stop;
  int nch, nstopped, nstarted, nended;
  int8_t ran_algo, ran_proto; /* NCCL's spellings parsed (trace records) */
  /* kch */
  uint64_t start;
} ev_t;

typedef struct fent {
  acl_call_tag_t tag;
  uint64_t host_ns;
} fent_t;

struct acl_ncclev_rank {
  void *user;
  int nranks;
  uint64_t head, tail; /* FIFO of decided calls, [head, tail) */
  fent_t fifo[ACL_EV_FIFO];
  /* workloads whose mismatch was logged (log once per workload) */
  uint32_t logged[64]; /* a log line per workload, for the first 64: enough to see a pattern */
  int nlogged;
  acl_kring_t kr; /* its recent kernels: a stale channel stamp overlaps them */
};

struct acl_ncclev {
  pthread_mutex_t mu;
  acl_ev_emit_fn emit;
  void *u;
  ev_t *free;
  /* Set without the lock before every Coll start, from any NCCL thread; a
   * lone flag read under the lock (relaxed: it orders nothing else). */
  atomic_bool hold_children;
  int colls_live; /* Coll events holding a slot */
  acl_ev_coll_fn coll_hook;
  void *coll_u;
  acl_ev_stats_t st;
  ev_t pool[ACL_EV_POOL];
};

acl_ncclev_t *acl_ncclev_create(acl_ev_emit_fn emit, void *u)
{
  acl_ncclev_t *e = calloc(1, sizeof(*e));
  if (!e)
    return NULL;
  if (pthread_mutex_init(&e->mu, NULL) != 0)
    goto fail;
  e->emit = emit;
  e->u = u;
  atomic_init(&e->hold_children, true);
  for (int i = ACL_EV_POOL - 1; i >= 0; i--) {
    e->pool[i].next = e->free;
    e->free = &e->pool[i];
  }
  return e;
fail:
  free(e);
  return NULL;
}

void acl_ncclev_destroy(acl_ncclev_t *e)
{
  if (!e)
    return;
  pthread_mutex_destroy(&e->mu);
  free(e);
}

acl_ncclev_rank_t *acl_ncclev_rank_create(acl_ncclev_t *e, void *user, int nranks)
{
  (void)e;
  acl_ncclev_rank_t *r = calloc(1, sizeof(*r));
  if (!r)
    return NULL;
  r->user = user;
  r->nranks = nranks > 0 ? nranks : 1;
  return r;
}

void acl_ncclev_rank_destroy(acl_ncclev_t *e, acl_ncclev_rank_t *r)
{
  if (!r)
    return;
  if (e) { /* events still referencing the rank forget it */
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < ACL_EV_POOL; i++)
      if (e->pool[i].type != EV_FREE && e->pool[i].rank == r) {
        e->pool[i].rank = NULL;
        e->pool[i].has_tag = 0;
      }
    pthread_mutex_unlock(&e->mu);
  }
  free(r);
}

void acl_ncclev_push(acl_ncclev_t *e, acl_ncclev_rank_t *r, const acl_call_tag_t *tag,
                     uint64_t host_ns)
{
  if (!e || !r || !tag)
    return;
  pthread_mutex_lock(&e->mu);
  if (r->tail - r->head == ACL_EV_FIFO) { /* full: the oldest never matched */
    r->head++;
    e->st.fifo_dropped++;
  }
  fent_t *f = &r->fifo[r->tail++ % ACL_EV_FIFO];
  f->tag = *tag;
  f->host_ns = host_ns;
  pthread_mutex_unlock(&e->mu);
}

int acl_ncclev_dtype_size(const char *d)
{
  static const struct {
    const char *n;
    int sz;
  } t[] = {{"ncclInt8", 1},      {"ncclUint8", 1},  {"ncclChar", 1},     {"ncclInt32", 4},
           {"ncclUint32", 4},    {"ncclInt", 4},    {"ncclInt64", 8},    {"ncclUint64", 8},
           {"ncclFloat16", 2},   {"ncclHalf", 2},   {"ncclFloat32", 4},  {"ncclFloat", 4},
           {"ncclFloat64", 8},   {"ncclDouble", 8}, {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1},
           {"ncclFloat8e5m2", 1}};
  if (!d)
    return 0;
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (strcmp(d, t[i].n) == 0)
      return t[i].sz;
  return 0;
}

static void ev_unref(acl_ncclev_t *e, ev_t *c);

/* NCCL stops a Coll event at launch, before the proxy thread reports its
 * channels, so a Coll holds one extra reference until all its channels have
 * stopped. When the pool runs dry, Colls whose channels never started give
 * that reference back, but only after ACL_EV_ORPHAN_NS: a host runs hundreds
 * of calls ahead of its GPU (2xH200, 1 GiB: ~1 s), and a slot reused while
 * its channels are still to come would hand them to another call. */
static void reclaim_unstarted(acl_ncclev_t *e)
{
  uint64_t now = acl_mono_ns();
  for (int i = 0; i < ACL_EV_POOL; i++) {
    ev_t *c = &e->pool[i];
    if (c->type == EV_COLL && c->child_hold && c->stopped && c->nstarted == 0 &&
        now - c->born_ns > ACL_EV_ORPHAN_NS) {
      c->child_hold = 0;
      ev_unref(e, c);
    }
  }
}

static ev_t *ev_alloc(acl_ncclev_t *e)
{
  ev_t *v = e->free;
  if (!v) {
    reclaim_unstarted(e);
    v = e->free;
  }
  if (!v) {
    e->st.pool_exhausted++;
    return NULL;
  }
  e->free = v->next;
  memset(v, 0, sizeof(*v));
  return v;
}

static void ev_unref(acl_ncclev_t *e, ev_t *c)
{
  if (--c->refs > 0)
    return;
  if (c->type == EV_COLL && c->has_tag && !c->emitted)
    e->st.incomplete++; /* a channel never reported its stop */
  if (c->type == EV_COLL)
    e->colls_live--;
  c->type = EV_FREE;
  c->next = e->free;
  e->free = c;
}

static bool bytes_match(const acl_ncclev_rank_t *r, const fent_t *f, int coll, uint64_t bytes)
{
  if (f->tag.coll != coll)
    return false;
  if (f->tag.nbytes == bytes)
    return true;
  /* the tuner sees AllGather/ReduceScatter's whole buffer, the Coll its
   * per-rank count */
  return (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) &&
         f->tag.nbytes == bytes * (uint64_t)r->nranks;
}

/* A Coll event belongs to the newest decided call of its (collective,
 * bytes): NCCL starts it at launch, after the tuner decided that call and
 * before the rank's next one. Older entries of the same key are calls that
 * carried no events (the plugin turns them off between samples, and another
 * thread may have changed the mask in between): they are dropped, never
 * matched to a later call's event. */
static void take_tag(acl_ncclev_t *e, acl_ncclev_rank_t *r, ev_t *c, int coll, uint64_t bytes)
{
  uint64_t hit = r->tail;
  for (uint64_t i = r->tail; i-- > r->head;) {
    if (bytes_match(r, &r->fifo[i % ACL_EV_FIFO], coll, bytes)) {
      hit = i;
      break;
    }
  }
  if (hit == r->tail)
    return;
  const fent_t *f = &r->fifo[hit % ACL_EV_FIFO];
  c->tag = f->tag;
  c->user = r->user;
  c->call_ns = f->host_ns;
  c->has_tag = 1;
  /* keep, in order, the entries of other keys and those after the hit */
  uint64_t w = r->tail;
  for (uint64_t i = r->tail; i-- > r->head;) {
    const fent_t *g = &r->fifo[i % ACL_EV_FIFO];
    if (i == hit || (i < hit && bytes_match(r, g, coll, bytes))) {
      if (i != hit)
        e->st.unsampled++;
      continue;
    }
    r->fifo[--w % ACL_EV_FIFO] = *g;
  }
  r->head = w;
}

static const char *const ran_kind_names[ACL_RAN_KINDS] = {
    [ACL_RAN_OK] = "ok",           [ACL_RAN_ALGO_PROTO] = "algo/proto",
    [ACL_RAN_CLAMPED] = "clamped", [ACL_RAN_CHANNELS] = "channels",
    [ACL_RAN_UNKNOWN] = "unknown",
};

const char *acl_ran_kind_name(acl_ran_kind_t k)
{
  return (unsigned)k < ACL_RAN_KINDS ? ran_kind_names[k] : "?";
}

acl_ran_kind_t acl_ran_kind(const acl_candidate_t *c, int algo, int proto, int nch)
{
  if (c->algo == ACL_ALGO_NCCL)
    return ACL_RAN_OK;
  if (algo != c->algo || proto != c->proto)
    return ACL_RAN_ALGO_PROTO;
  if (c->nchannels > 0 && nch < c->nchannels)
    return ACL_RAN_CLAMPED;
  if (c->nchannels > 0 && nch > c->nchannels)
    return ACL_RAN_CHANNELS;
  return ACL_RAN_OK;
}

static void check_mismatch(acl_ncclev_t *e, acl_ncclev_rank_t *r, const acl_call_tag_t *t,
                           const ncclProfilerEventDescr_v5_t *d)
{
  const acl_candidate_t *c = &t->cand;
  int nch = d->coll.nChannels;
  acl_ran_kind_t kind =
      acl_ran_kind(c, acl_algo_parse(d->coll.algo), acl_proto_parse(d->coll.proto), nch);
  if (kind == ACL_RAN_OK)
    return;
  e->st.mismatches++;
  if (kind == ACL_RAN_CLAMPED)
    e->st.clamped++;
  uint32_t key = t->widx;
  for (int i = 0; i < r->nlogged; i++)
    if (r->logged[i] == key)
      return;
  if (r->nlogged < (int)(sizeof(r->logged) / sizeof(r->logged[0])))
    r->logged[r->nlogged++] = key;
  char want[48];
  acl_candidate_str(c, want, sizeof(want));
  acl_warn("profiler: NCCL ran %s/%s/%dch for %s of %llu bytes where %s was decided "
           "(mismatch: %s; logged once per workload)",
           d->coll.algo ? d->coll.algo : "?", d->coll.proto ? d->coll.proto : "?", nch,
           acl_coll_name(t->coll), (unsigned long long)t->nbytes, want, acl_ran_kind_name(kind));
}

ncclResult_t acl_ncclev_start(acl_ncclev_t *e, acl_ncclev_rank_t *r, void **eHandle,
                              const ncclProfilerEventDescr_v5_t *d)
{
  if (eHandle)
    *eHandle = NULL;
  if (!e || !eHandle || !d)
    return ncclSuccess;
  if (d->type == ncclProfileColl) {
    acl_ev_coll_fn hook = NULL; /* with its arguments, taken under the lock */
    void *hu = NULL;
    acl_call_tag_t htag;
    void *huser = NULL;
    int hran[3] = {-1, -1, 0};
    int coll = acl_coll_parse(d->coll.func);
    int dsz = acl_ncclev_dtype_size(d->coll.datatype);
    pthread_mutex_lock(&e->mu);
    e->st.colls++;
    /* Colls leave a quarter of the pool to the channels they wait for. */
    ev_t *c = NULL;
    if (e->colls_live < ACL_EV_POOL - ACL_EV_POOL / 4)
      c = ev_alloc(e); /* counts its own exhaustion */
    else
      e->st.pool_exhausted++;
    if (!c)
      goto out;
    e->colls_live++;
    c->type = EV_COLL;
    c->born_ns = acl_mono_ns();
    c->rank = r;
    c->nch = d->coll.nChannels;
    c->ran_algo = (int8_t)(d->coll.algo ? acl_algo_parse(d->coll.algo) : -1);
    c->ran_proto = (int8_t)(d->coll.proto ? acl_proto_parse(d->coll.proto) : -1);
    c->child_hold = atomic_load_explicit(&e->hold_children, memory_order_relaxed) && c->nch > 0;
    c->refs = 1 + c->child_hold;
    c->min_start = UINT64_MAX;
    if (r && coll >= 0 && dsz > 0)
      take_tag(e, r, c, coll, (uint64_t)d->coll.count * (uint64_t)dsz);
    if (c->has_tag && r) { /* has_tag implies r; said for the analyzer */
      e->st.colls_matched++;
      check_mismatch(e, r, &c->tag, d);
      if (e->coll_hook) {
        hook = e->coll_hook;
        hu = e->coll_u;
        htag = c->tag;
        huser = c->user;
        hran[0] = c->ran_algo;
        hran[1] = c->ran_proto;
        hran[2] = c->nch;
      }
    } else {
      e->st.colls_unmatched++; /* not a tuned call (or its tag expired) */
    }
    *eHandle = c;
  out:
    pthread_mutex_unlock(&e->mu);
    /* outside the lock: the hook may hand a fact to the tuner */
    if (hook)
      hook(hu, huser, &htag, hran[2], hran[0], hran[1]);
    return ncclSuccess;
  }
  if (d->type == ncclProfileKernelCh) {
    ev_t *parent = d->parentObj;
    pthread_mutex_lock(&e->mu);
    e->st.kch++;
    /* only children of our own Coll events */
    if (!parent || parent < e->pool || parent >= e->pool + ACL_EV_POOL || parent->type != EV_COLL)
      goto kout;
    ev_t *k = ev_alloc(e);
    if (!k)
      goto kout;
    k->type = EV_KCH;
    k->refs = 1;
    k->parent = parent;
    k->start = d->kernelCh.pTimer;
    parent->refs++;
    parent->nstarted++;
    *eHandle = k;
  kout:
    pthread_mutex_unlock(&e->mu);
  }
  return ncclSuccess; /* other event types: no handle */
}

/* Called with the lock held when a channel stops; may emit (unlocked by the
 * caller afterwards: the sample is copied out). */
static bool channel_stopped(acl_ncclev_t *e, ev_t *k, uint64_t stop, acl_ev_sample_t *out)
{
  ev_t *c = k->parent;
  if (k->stopped)
    return false;
  k->stopped = 1;
  if (k->start < c->min_start)
    c->min_start = k->start;
  if (stop > c->max_stop)
    c->max_stop = stop;
  c->nstopped++;
  if (c->nstopped < c->nch || c->emitted || !c->rank)
    return false;
  /* stop before start, equal stamps or an implausible span: not a sample */
  bool sane = c->max_stop > c->min_start && c->max_stop - c->min_start <= 1000000000000ull;
  /* Every kernel of the rank joins its ring, a call of no workload's too:
   * NCCL hands out the stale stamps of any of them. */
  bool stale = sane && acl_kring_overlaps(&c->rank->kr, c->min_start, c->max_stop);
  if (!c->has_tag)
    return false;
  c->emitted = 1;
  if (!sane) {
    e->st.bad_clock++;
    return false;
  }
  if (stale) {
    e->st.overlapped++;
    return false;
  }
  out->tag = c->tag;
  out->user = c->user;
  out->call_ns = c->call_ns;
  out->start = c->min_start;
  out->end = c->max_stop;
  out->ran_nch = c->nch;
  out->ran_algo = c->ran_algo;
  out->ran_proto = c->ran_proto;
  e->st.samples++;
  return true;
}

ncclResult_t acl_ncclev_state(acl_ncclev_t *e, void *eHandle, int st,
                              const ncclProfilerEventStateArgs_v5_t *args)
{
  ev_t *k = eHandle;
  if (!e || !k || st != ncclProfilerKernelChStop || !args)
    return ncclSuccess;
  acl_ev_sample_t s;
  bool emit = false;
  pthread_mutex_lock(&e->mu);
  if (k->type == EV_KCH)
    emit = channel_stopped(e, k, args->kernelCh.pTimer, &s);
  pthread_mutex_unlock(&e->mu);
  if (emit && e->emit)
    e->emit(e->u, &s);
  return ncclSuccess;
}

ncclResult_t acl_ncclev_stop(acl_ncclev_t *e, void *eHandle)
{
  ev_t *v = eHandle;
  if (!e || !v)
    return ncclSuccess;
  pthread_mutex_lock(&e->mu);
  if (v->type == EV_KCH) {
    ev_t *c = v->parent;
    /* Every channel ended (with or without its stop stamp): the Coll no
     * longer waits for children. v still holds a reference to c here. */
    if (++c->nended >= c->nch && c->child_hold) {
      c->child_hold = 0;
      ev_unref(e, c);
    }
    ev_unref(e, v);
    ev_unref(e, c);
  } else if (v->type == EV_COLL && !v->stopped) {
    v->stopped = 1;
    ev_unref(e, v);
  }
  pthread_mutex_unlock(&e->mu);
  return ncclSuccess;
}

void acl_ncclev_set_coll_hook(acl_ncclev_t *e, acl_ev_coll_fn fn, void *u)
{
  if (!e)
    return;
  pthread_mutex_lock(&e->mu);
  e->coll_hook = fn;
  e->coll_u = u;
  pthread_mutex_unlock(&e->mu);
}

void acl_ncclev_hold_children(acl_ncclev_t *e, bool hold)
{
  if (e)
    atomic_store_explicit(&e->hold_children, hold, memory_order_relaxed);
}

void acl_ncclev_stats(acl_ncclev_t *e, acl_ev_stats_t *st)
{
  memset(st, 0, sizeof(*st));
  if (!e)
    return;
  pthread_mutex_lock(&e->mu);
  *st = e->st;
  pthread_mutex_unlock(&e->mu);
}
