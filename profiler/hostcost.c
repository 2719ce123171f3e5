/* NCCL's host time per call (hostcost.h). */
#include "profiler/hostcost.h"

#include <stddef.h>

/* An entry: (widx:28 | count:4) << 32 | ns:32. */
#define KEY(w) ((uint64_t)((w)&0xfffffffu) << 4)
#define KEY_MASK 0xfffffff0ull
#define COUNT_MAX 15u
/* A group longer than this is no call's host time (a set-up, a stop that
 * never came): not noted. */
#define GROUP_MAX_NS 50000000ull

static unsigned slot(uint32_t widx)
{
  return (widx * 0x9E3779B1u) >> 25; /* 7 bits: ACL_HOSTCOST_N */
}

_Static_assert(ACL_HOSTCOST_N == 128, "slot() keeps 7 bits");

void acl_hostcost_note(acl_hostcost_t *h, uint32_t widx, uint64_t ns)
{
  if (!h || ns == 0 || ns > GROUP_MAX_NS)
    return;
  _Atomic uint64_t *e = &h->e[slot(widx)];
  uint64_t v = atomic_load_explicit(e, memory_order_relaxed), key = KEY(widx);
  uint64_t best = v & 0xffffffffu;
  unsigned n = (unsigned)(v >> 32) & COUNT_MAX;
  if ((v >> 32 & KEY_MASK) != key || n == 0) {
    best = ns; /* a new workload (or one that took this slot over) */
    n = 0;
  } else if (ns < best) {
    best = ns;
  }
  if (n < COUNT_MAX)
    n++;
  atomic_store_explicit(e, (key | n) << 32 | (best & 0xffffffffu), memory_order_relaxed);
}

uint64_t acl_hostcost_ns(const acl_hostcost_t *h, uint32_t widx)
{
  if (!h)
    return 0;
  uint64_t v = atomic_load_explicit(&h->e[slot(widx)], memory_order_relaxed);
  if ((v >> 32 & KEY_MASK) != KEY(widx) || ((v >> 32) & COUNT_MAX) < 2)
    return 0;
  return v & 0xffffffffu;
}

/* NCCL runs one group at a time per thread (its GroupApi state is
 * thread-local too); a group of more calls than this is not noted. */
#define GROUP_CALLS 16
/* Marks a group handle, whichever thread's it is, so that no other event
 * code ever takes one for its own (NCCL stops it on the starting thread). */
#define GROUP_MAGIC 0x6163c1a7b0c5a11eull
typedef struct group {
  uint64_t magic;
  bool open;
  int n;
  uint64_t t0;
  struct {
    acl_hostcost_t *h;
    uint32_t widx;
  } c[GROUP_CALLS];
} group_t;

static _Thread_local group_t tls_group;

void *acl_hostcost_group_start(uint64_t now_ns)
{
  group_t *g = &tls_group;
  g->magic = GROUP_MAGIC;
  g->open = true;
  g->n = 0;
  g->t0 = now_ns;
  return g;
}

bool acl_hostcost_is_group(const void *handle)
{
  return handle &&
         (handle == (const void *)&tls_group || ((const group_t *)handle)->magic == GROUP_MAGIC);
}

void acl_hostcost_group_call(acl_hostcost_t *h, uint32_t widx)
{
  group_t *g = &tls_group;
  if (!g->open)
    return;
  if (g->n >= GROUP_CALLS) {
    g->open = false; /* too many to split fairly: none noted */
    return;
  }
  g->c[g->n].h = h;
  g->c[g->n].widx = widx;
  g->n++;
}

void acl_hostcost_group_stop(void *handle, uint64_t now_ns)
{
  group_t *g = handle;
  if (g != &tls_group || !g->open)
    return; /* another thread's group: not ours to end */
  g->open = false;
  if (g->n == 0 || now_ns <= g->t0)
    return;
  uint64_t per = (now_ns - g->t0) / (uint64_t)g->n;
  for (int i = 0; i < g->n; i++)
    acl_hostcost_note(g->c[i].h, g->c[i].widx, per);
}
