/* Attribution engine; the scheme is described in attrib.h and
 * docs/profiler.md. One mutex guards everything: the producers (tagging
 * threads, the CUPTI buffer callback) hold it for a few hundred ns. */
#include "profiler/attrib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_FREE = 0, TAG_PENDING = 1, TAG_DONE = 2 };

typedef struct ptag {
  uint64_t seq;
  uint64_t host_ns;
  void *user;
  acl_call_tag_t tag;
  uint8_t state;
} ptag_t;

typedef struct slot {
  uint64_t seq; /* last seq handed out (seq starts at 1) */
  uint64_t nmarks;
  uint64_t marks[ACL_ATTR_MARKCAP];
  ptag_t tags[ACL_ATTR_TAGCAP];
} slot_t;

typedef struct kq {
  uint64_t start, end;
  uint32_t device, corr;
  uint64_t round;
  uint64_t held_ns; /* when it was first held for later compute records */
  double early;     /* its overlap then (what resolving at once gave) */
  bool held;
} kq_t;

typedef struct corr_ent {
  uint32_t corr;
  uint32_t valid;
  uint64_t ext;
} corr_ent_t;

typedef struct name_ent {
  char s[ACL_ATTR_NAMELEN];
  uint64_t hits; /* samples it overlapped */
  uint8_t used;
} name_ent_t;

/* Per rank: its device (UINT32_MAX until an exact match says) and its
 * recent kernels (a kernel overlapping one of them is not its call's). */
typedef struct rdev {
  void *rank_ctx;
  uint32_t device;
  acl_kring_t kr;
} rdev_t;

struct acl_attr {
  pthread_mutex_t mu;
  uint64_t round;
  uint64_t last_expire_ns;
  int nslots; /* highest slot used + 1 */
  slot_t slots[ACL_ATTR_SLOTS];
  corr_ent_t corr[ACL_ATTR_CORRCAP];
  kq_t kq[ACL_ATTR_KQ];
  size_t nkq;
  acl_cwin_t cwin[ACL_ATTR_DEVS];
  name_ent_t names[ACL_ATTR_NAMES];
  rdev_t rdev[256];
  int nrdev;
  acl_attr_stats_t st;
  _Atomic uint64_t pending;
};

bool acl_attr_is_nccl_kernel(const char *name)
{
  /* CUPTI reports C++ kernels mangled: _Z<len>ncclDevKernel_...(args) */
  if (name && name[0] == '_' && name[1] == 'Z') {
    name += 2;
    while (*name >= '0' && *name <= '9')
      name++;
  }
  return name &&
         (strncmp(name, "ncclDevKernel_", 14) == 0 ||
          strncmp(name, "ncclSymkDevKernel_", 18) == 0 || strncmp(name, "ncclKernel_", 11) == 0);
}

acl_attr_t *acl_attr_create(void)
{
  acl_attr_t *a = calloc(1, sizeof(*a));
  if (!a)
    return NULL;
  if (pthread_mutex_init(&a->mu, NULL) != 0) {
    free(a);
    return NULL;
  }
  return a;
}

void acl_attr_destroy(acl_attr_t *a)
{
  if (!a)
    return;
  pthread_mutex_destroy(&a->mu);
  free(a);
}

uint64_t acl_attr_tag(acl_attr_t *a, unsigned slot, const acl_call_tag_t *tag, void *user,
                      uint64_t host_ns)
{
  if (!a || slot >= ACL_ATTR_SLOTS || !tag)
    return 0;
  pthread_mutex_lock(&a->mu);
  slot_t *s = &a->slots[slot];
  uint64_t seq = ++s->seq;
  ptag_t *p = &s->tags[seq % ACL_ATTR_TAGCAP];
  if (p->state == TAG_PENDING) { /* ring wrapped over an unresolved tag */
    a->st.lost++;
    atomic_fetch_sub(&a->pending, 1);
  }
  p->seq = seq;
  p->host_ns = host_ns;
  p->user = user;
  p->tag = *tag;
  p->state = TAG_PENDING;
  if ((int)slot >= a->nslots)
    a->nslots = (int)slot + 1;
  a->st.tags++;
  atomic_fetch_add(&a->pending, 1);
  pthread_mutex_unlock(&a->mu);
  return acl_attr_ext(slot, seq);
}

void acl_attr_extcorr(acl_attr_t *a, uint32_t corr, uint64_t ext)
{
  unsigned slot = (unsigned)(ext >> 48);
  if (!a || slot == 0 || slot > ACL_ATTR_SLOTS)
    return; /* not one of ours */
  uint64_t seq = ext & 0xffffffffffffull;
  pthread_mutex_lock(&a->mu);
  a->st.extcorr++;
  corr_ent_t *c = &a->corr[corr % ACL_ATTR_CORRCAP];
  c->corr = corr;
  c->ext = ext;
  c->valid = 1;
  slot_t *s = &a->slots[slot - 1];
  /* A launch happened while seq was pushed: the window ending at seq closes. */
  if (s->nmarks == 0 || s->marks[(s->nmarks - 1) % ACL_ATTR_MARKCAP] != seq)
    s->marks[s->nmarks++ % ACL_ATTR_MARKCAP] = seq;
  pthread_mutex_unlock(&a->mu);
}

static uint32_t intern_locked(acl_attr_t *a, const char *name)
{
  if (!name || !*name)
    return UINT32_MAX;
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *c = name; *c; c++)
    h = (h ^ (uint8_t)*c) * 16777619u;
  for (uint32_t i = 0; i < ACL_ATTR_NAMES; i++) {
    uint32_t k = (h + i) % ACL_ATTR_NAMES;
    name_ent_t *e = &a->names[k];
    if (!e->used) {
      e->used = 1;
      strncpy(e->s, name, ACL_ATTR_NAMELEN - 1);
      return k;
    }
    if (strncmp(e->s, name, ACL_ATTR_NAMELEN - 1) == 0)
      return k;
  }
  return UINT32_MAX; /* table full: overlap still counts, the name is unknown */
}

void acl_attr_kernel(acl_attr_t *a, const acl_krec_t *k)
{
  if (!a || !k)
    return;
  pthread_mutex_lock(&a->mu);
  a->st.records++;
  if (acl_attr_is_nccl_kernel(k->name)) {
    a->st.nccl_records++;
    if (a->nkq == ACL_ATTR_KQ) {
      a->st.ring_dropped++;
    } else {
      kq_t *q = &a->kq[a->nkq++];
      q->start = k->start;
      q->end = k->end;
      q->device = k->device;
      q->corr = k->corr;
      q->round = a->round;
      q->held = false;
    }
  } else {
    a->st.compute_records++;
    if (k->device < ACL_ATTR_DEVS)
      acl_cwin_push(&a->cwin[k->device], k->start, k->end, intern_locked(a, k->name));
  }
  pthread_mutex_unlock(&a->mu);
}

static bool ext_of(const acl_attr_t *a, uint32_t corr, uint64_t *ext)
{
  const corr_ent_t *c = &a->corr[corr % ACL_ATTR_CORRCAP];
  if (!c->valid || c->corr != corr)
    return false;
  *ext = c->ext;
  return true;
}

/* The rank's entry, added when new; NULL when the table is full. */
static rdev_t *rdev_get(acl_attr_t *a, void *rank_ctx)
{
  for (int i = 0; i < a->nrdev; i++)
    if (a->rdev[i].rank_ctx == rank_ctx)
      return &a->rdev[i];
  if (a->nrdev == (int)(sizeof(a->rdev) / sizeof(a->rdev[0])))
    return NULL;
  rdev_t *r = &a->rdev[a->nrdev++];
  memset(r, 0, sizeof(*r));
  r->rank_ctx = rank_ctx;
  r->device = UINT32_MAX;
  return r;
}

static int rdev_find(const acl_attr_t *a, void *rank_ctx)
{
  for (int i = 0; i < a->nrdev; i++)
    if (a->rdev[i].rank_ctx == rank_ctx)
      return a->rdev[i].device == UINT32_MAX ? -1 : (int)a->rdev[i].device;
  return -1;
}

static void rdev_learn(acl_attr_t *a, void *rank_ctx, uint32_t dev)
{
  rdev_t *r = rdev_get(a, rank_ctx);
  if (r)
    r->device = dev;
}

static bool rank_overlaps(acl_attr_t *a, void *rank_ctx, uint64_t start, uint64_t end)
{
  rdev_t *r = rdev_get(a, rank_ctx);
  return r && acl_kring_overlaps(&r->kr, start, end);
}

static void tag_done(acl_attr_t *a, ptag_t *t)
{
  if (t->state == TAG_PENDING)
    atomic_fetch_sub(&a->pending, 1);
  t->state = TAG_DONE;
}

/* Builds the sample of tag t served by kernel k; false for a bad clock. */
static bool make_sample(acl_attr_t *a, ptag_t *t, const kq_t *k, acl_attr_sample_t *out)
{
  /* end < start, equal stamps, or an implausible (> 1000 s, e.g. a wrapped
   * or garbage stamp) duration: not a measurement. */
  if (k->end <= k->start || k->end - k->start > 1000000000000ull) {
    a->st.bad_clock++;
    return false;
  }
  if (rank_overlaps(a, t->tag.rank_ctx, k->start, k->end)) {
    a->st.overlapped++;
    return false;
  }
  memset(out, 0, sizeof(*out));
  out->tag = t->tag;
  out->user = t->user;
  out->call_ns = t->host_ns;
  out->start = k->start;
  out->end = k->end;
  out->device = k->device;
  if (k->device < ACL_ATTR_DEVS) {
    acl_cwin_overlap(&a->cwin[k->device], k->start, k->end, &out->ov);
    if (out->ov.truncated)
      a->st.ov_truncated++;
    if (k->held && k->early >= 0.0 && out->ov.frac > k->early + 1e-9) {
      a->st.ov_late++;
      a->st.ov_late_ns += (uint64_t)((out->ov.frac - k->early) * (double)(k->end - k->start));
    }
    for (uint32_t i = 0; i < out->ov.nnames; i++)
      if (out->ov.names[i] < ACL_ATTR_NAMES)
        a->names[out->ov.names[i]].hits++;
  } else {
    out->ov.frac = -1.0;
  }
  a->st.samples++;
  return true;
}

static int kq_corr_cmp(const void *x, const void *y)
{
  const kq_t *a = x, *b = y;
  return a->corr < b->corr ? -1 : a->corr > b->corr;
}

/* Resolves the window of external id ext with its kernels ks (sorted by
 * correlation id, i.e. launch order). Returns samples written. */
static size_t resolve_window(acl_attr_t *a, uint64_t ext, kq_t *ks, size_t nk,
                             acl_attr_sample_t *out)
{
  unsigned sl = (unsigned)(ext >> 48) - 1;
  uint64_t seq = ext & 0xffffffffffffull;
  slot_t *s = &a->slots[sl];
  ptag_t *hi = &s->tags[seq % ACL_ATTR_TAGCAP];
  if (hi->seq != seq || hi->state != TAG_PENDING) {
    a->st.untagged += nk; /* extra launches under a resolved id, or expired */
    return 0;
  }
  /* Previous launch-marked id of this thread bounds the window. */
  uint64_t lo = 0;
  uint64_t nm = s->nmarks < ACL_ATTR_MARKCAP ? s->nmarks : ACL_ATTR_MARKCAP;
  for (uint64_t i = 0; i < nm; i++) {
    uint64_t m = s->marks[(s->nmarks - 1 - i) % ACL_ATTR_MARKCAP];
    if (m < seq && m > lo)
      lo = m;
  }
  if (seq - lo > ACL_ATTR_TAGCAP)
    lo = seq - ACL_ATTR_TAGCAP;
  ptag_t *w[ACL_ATTR_MAX_WINDOW];
  size_t nw = 0;
  bool too_many = false;
  for (uint64_t q = lo + 1; q <= seq; q++) {
    ptag_t *t = &s->tags[q % ACL_ATTR_TAGCAP];
    if (t->seq != q || t->state != TAG_PENDING)
      continue;
    if (nw == ACL_ATTR_MAX_WINDOW) {
      too_many = true;
      a->st.ambiguous++;
      tag_done(a, t);
      continue;
    }
    w[nw++] = t;
  }
  if (too_many) {
    for (size_t i = 0; i < nw; i++) {
      a->st.ambiguous++;
      tag_done(a, w[i]);
    }
    a->st.untagged += nk;
    return 0;
  }
  if (nw == 1) {
    size_t n1 = make_sample(a, w[0], &ks[0], &out[0]) ? 1 : 0;
    rdev_learn(a, w[0]->tag.rank_ctx, ks[0].device);
    tag_done(a, w[0]);
    a->st.untagged += nk - 1;
    return n1;
  }
  if (nw == 0) {
    a->st.untagged += nk;
    return 0;
  }
  /* A group: the distinct devices its kernels ran on; each tag claims its
   * rank's device (learned from earlier exact matches). One tag of unknown
   * device may take the single device nobody claimed. A device claimed by
   * more than one tag is ambiguous (NCCL may have fused them); so is every
   * tag while an unknown one remains (it could be on any device). */
  uint32_t ddev[ACL_ATTR_MAX_WINDOW];
  size_t dk[ACL_ATTR_MAX_WINDOW], nd = 0;
  for (size_t j = 0; j < nk; j++) {
    size_t m;
    for (m = 0; m < nd; m++)
      if (ddev[m] == ks[j].device)
        break;
    if (m == nd && nd < ACL_ATTR_MAX_WINDOW) {
      ddev[nd] = ks[j].device;
      dk[nd++] = j; /* first kernel (launch order) on that device */
    }
  }
  int claim[ACL_ATTR_MAX_WINDOW]; /* device index per tag, -1 none */
  size_t claims[ACL_ATTR_MAX_WINDOW] = {0};
  size_t unknown = 0, unknown_i = 0;
  for (size_t i = 0; i < nw; i++) {
    int d = rdev_find(a, w[i]->tag.rank_ctx);
    claim[i] = -1;
    if (d < 0) {
      unknown++;
      unknown_i = i;
      continue;
    }
    for (size_t m = 0; m < nd; m++)
      if ((int)ddev[m] == d) {
        claim[i] = (int)m;
        claims[m]++;
      }
  }
  if (unknown == 1) {
    size_t free_m = nd, nfree = 0;
    bool multi = false;
    for (size_t m = 0; m < nd; m++) {
      if (claims[m] == 0) {
        nfree++;
        free_m = m;
      }
      multi |= claims[m] > 1;
    }
    if (nfree == 1 && !multi) {
      claim[unknown_i] = (int)free_m;
      claims[free_m]++;
      rdev_learn(a, w[unknown_i]->tag.rank_ctx, ddev[free_m]);
      unknown = 0;
    }
  }
  size_t n = 0;
  for (size_t i = 0; i < nw; i++) {
    if (unknown == 0 && claim[i] >= 0 && claims[claim[i]] == 1) {
      if (make_sample(a, w[i], &ks[dk[claim[i]]], &out[n]))
        n++;
    } else {
      a->st.ambiguous++;
    }
    tag_done(a, w[i]);
  }
  return n;
}

/* Whether kernel k's overlap can be read: a compute kernel that ended after
 * it has been recorded on its device (CUPTI writes a record when the kernel
 * ends, so one still running across k's end comes later: resolving at once
 * read that tail as exposed), or it has waited ACL_ATTR_HOLD_NS (no compute
 * follows, or one runs that long). */
static bool settled(acl_attr_t *a, kq_t *k, uint64_t now_ns)
{
  if (k->device >= ACL_ATTR_DEVS || a->cwin[k->device].max_end >= k->end)
    return true;
  if (!k->held) {
    acl_overlap_res_t ov;
    acl_cwin_overlap(&a->cwin[k->device], k->start, k->end, &ov);
    k->held = true;
    k->held_ns = now_ns;
    k->early = ov.frac;
    a->st.held++;
  }
  return now_ns >= k->held_ns + ACL_ATTR_HOLD_NS;
}

static void expire_locked(acl_attr_t *a, uint64_t now_ns)
{
  if (now_ns < a->last_expire_ns + 1000000000ull)
    return;
  a->last_expire_ns = now_ns;
  for (int s = 0; s < a->nslots; s++)
    for (int i = 0; i < ACL_ATTR_TAGCAP; i++) {
      ptag_t *t = &a->slots[s].tags[i];
      if (t->state == TAG_PENDING && now_ns > t->host_ns + ACL_ATTR_TAG_TTL_NS) {
        a->st.lost++;
        atomic_fetch_sub(&a->pending, 1);
        t->state = TAG_FREE;
      }
    }
}

size_t acl_attr_process(acl_attr_t *a, bool final, uint64_t now_ns, acl_attr_sample_t *out,
                        size_t max, bool *more)
{
  bool full = false;
  if (more)
    *more = false;
  if (!a || max < ACL_ATTR_MAX_WINDOW)
    return 0;
  pthread_mutex_lock(&a->mu);
  size_t n = 0;
  uint64_t cur = a->round;
  kq_t ks[ACL_ATTR_MAX_WINDOW];
  for (size_t i = 0; i < a->nkq;) {
    kq_t *k = &a->kq[i];
    if (!final && k->round >= cur) {
      i++;
      continue;
    }
    if (!final && !settled(a, k, now_ns)) {
      i++;
      continue;
    }
    uint64_t ext;
    if (!ext_of(a, k->corr, &ext) || (ext >> 48) == 0 || (ext >> 48) > ACL_ATTR_SLOTS) {
      a->st.untagged++; /* NCCL launch outside any tag (untuned call, p2p) */
      a->kq[i] = a->kq[--a->nkq];
      continue;
    }
    if (max - n < ACL_ATTR_MAX_WINDOW) {
      full = true; /* caller drains and calls again, same round */
      break;
    }
    /* Gather every queued kernel of this window. */
    size_t nk = 0;
    for (size_t j = i; j < a->nkq;) {
      uint64_t e2;
      if (ext_of(a, a->kq[j].corr, &e2) && e2 == ext && nk < ACL_ATTR_MAX_WINDOW) {
        ks[nk++] = a->kq[j];
        a->kq[j] = a->kq[--a->nkq];
      } else {
        j++;
      }
    }
    qsort(ks, nk, sizeof(ks[0]), kq_corr_cmp);
    n += resolve_window(a, ext, ks, nk, out + n);
  }
  if (full) {
    if (more)
      *more = true;
    pthread_mutex_unlock(&a->mu);
    return n;
  }
  if (final)
    a->nkq = 0;
  a->round++;
  expire_locked(a, now_ns);
  pthread_mutex_unlock(&a->mu);
  return n;
}

void acl_attr_stats(acl_attr_t *a, acl_attr_stats_t *st)
{
  memset(st, 0, sizeof(*st));
  if (!a)
    return;
  pthread_mutex_lock(&a->mu);
  *st = a->st;
  st->pending = atomic_load(&a->pending);
  pthread_mutex_unlock(&a->mu);
}

uint64_t acl_attr_pending(acl_attr_t *a) { return a ? atomic_load(&a->pending) : 0; }

void acl_attr_add_dropped(acl_attr_t *a, uint64_t n)
{
  if (!a || !n)
    return;
  pthread_mutex_lock(&a->mu);
  a->st.ring_dropped += n;
  pthread_mutex_unlock(&a->mu);
}

int acl_attr_top_names(acl_attr_t *a, char (*names)[ACL_ATTR_NAMELEN], uint64_t *counts, int max)
{
  if (!a || max <= 0)
    return 0;
  int n = 0;
  pthread_mutex_lock(&a->mu);
  for (int i = 0; i < ACL_ATTR_NAMES; i++) {
    const name_ent_t *e = &a->names[i];
    if (!e->used || e->hits == 0)
      continue;
    int pos = n < max ? n : max; /* insertion into a top-max list */
    while (pos > 0 && counts[pos - 1] < e->hits)
      pos--;
    if (pos >= max)
      continue;
    int last = n < max ? n : max - 1;
    for (int j = last; j > pos; j--) {
      counts[j] = counts[j - 1];
      memcpy(names[j], names[j - 1], ACL_ATTR_NAMELEN);
    }
    counts[pos] = e->hits;
    memcpy(names[pos], e->s, ACL_ATTR_NAMELEN);
    if (n < max)
      n++;
  }
  pthread_mutex_unlock(&a->mu);
  return n;
}
