/* Event gating at the enqueue; see gate.h. One small table per process
 * (NCCL's mask is one per process), under one spin lock that only the
 * threads enqueueing collectives take: never contended in a job that
 * enqueues from one thread. */
#include "profiler/gate.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/abi.h"

#define GATE_SLOTS 1024 /* (rank, collective, bytes) keys of the process; a power of 2 */
#define GATE_NONE 0xffffu
#define GATE_MASKS 8 /* distinct mask addresses (NCCL gives one; tests one per rank) */

typedef struct gent {
  const void *who; /* NULL: free */
  uint64_t bytes;
  int64_t base;      /* call index of enqueue j is j + base (known after a decision) */
  uint64_t enq, dec; /* enqueues and decisions seen */
  uint64_t pend;     /* carries-events bits of enqueues not yet decided, oldest lowest */
  uint8_t npend;
  uint8_t shift; /* the latest decision's sampling shift */
  int8_t coll;
  uint16_t succ;  /* the key enqueued right after this one last time */
  uint16_t succ2; /* the last key that followed this one unpredicted while it wanted events */
} gent_t;

struct acl_gate {
  atomic_flag mu;        /* a spin lock: held for a few ns, never across a call out */
  int *mask[GATE_MASKS]; /* NCCL's, process-wide: the same address from every init */
  int refs[GATE_MASKS];  /* communicators that gave it and are still there */
  int nmask;
  int keep;      /* bits always left on (CUDA-graph capture) */
  int now;       /* what the gate last stored there */
  uint16_t last; /* the key enqueued last */
  int full;      /* the mask a sampled call needs (as the last enqueue said) */
  acl_gate_rule_fn rule;
  acl_gate_stats_t st;
  gent_t e[GATE_SLOTS];
  gent_t old[GATE_SLOTS]; /* acl_gate_forget's copy: nothing allocated per finalize */
};

acl_gate_t *acl_gate_create(acl_gate_rule_fn rule)
{
  acl_gate_t *g = calloc(1, sizeof(*g));
  if (!g)
    return NULL;
  atomic_flag_clear(&g->mu);
  g->last = GATE_NONE;
  g->rule = rule;
  return g;
}

void acl_gate_destroy(acl_gate_t *g)
{
  if (!g)
    return;
  free(g);
}

static void gate_lock(acl_gate_t *g)
{
  while (atomic_flag_test_and_set_explicit(&g->mu, memory_order_acquire))
    sched_yield(); /* another enqueueing thread, inside for a few ns */
}

static void gate_unlock(acl_gate_t *g) { atomic_flag_clear_explicit(&g->mu, memory_order_release); }

static uint32_t key_hash(const void *who, int coll, uint64_t bytes)
{
  uint64_t x = (uint64_t)(uintptr_t)who ^ (bytes * 0x9e3779b97f4a7c15ull) ^ (uint64_t)coll << 56;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (uint32_t)x & (GATE_SLOTS - 1);
}

/* The key's slot, created when `make`; GATE_NONE when absent or full. */
static uint16_t find(acl_gate_t *g, const void *who, int coll, uint64_t bytes, bool make)
{
  uint32_t h = key_hash(who, coll, bytes);
  for (uint32_t i = 0; i < GATE_SLOTS; i++) {
    uint32_t k = (h + i) & (GATE_SLOTS - 1);
    gent_t *e = &g->e[k];
    if (!e->who) {
      if (!make)
        return GATE_NONE;
      memset(e, 0, sizeof(*e));
      e->who = who;
      e->coll = (int8_t)coll;
      e->bytes = bytes;
      e->shift = ACL_GATE_NEVER;
      e->succ = e->succ2 = GATE_NONE;
      return (uint16_t)k;
    }
    if (e->who == who && e->coll == coll && e->bytes == bytes)
      return (uint16_t)k;
  }
  return GATE_NONE;
}

static void store_mask(acl_gate_t *g, int m)
{
  g->now = m;
  for (int i = 0; i < g->nmask; i++)
    if (__atomic_load_n(g->mask[i], __ATOMIC_RELAXED) != m)
      __atomic_store_n(g->mask[i], m, __ATOMIC_RELAXED);
}

int acl_gate_set_mask(acl_gate_t *g, int *mask, int keep)
{
  if (!g)
    return mask ? *mask : 0;
  gate_lock(g);
  int i = 0;
  while (i < g->nmask && g->mask[i] != mask)
    i++;
  if (mask && i < g->nmask) {
    g->refs[i]++;
  } else if (mask && g->nmask < GATE_MASKS) {
    g->mask[g->nmask] = mask;
    g->refs[g->nmask++] = 1;
  } else if (mask) {
    /* more addresses than NCCL ever gives: this one is left as set */
    *mask = g->now | keep;
  }
  g->keep |= keep;
  /* a communicator created later sees the same int: what the gate set stays */
  store_mask(g, g->now | g->keep);
  int m = g->now;
  gate_unlock(g);
  return m;
}

void acl_gate_release_mask(acl_gate_t *g, int *mask)
{
  if (!g || !mask)
    return;
  gate_lock(g);
  for (int i = 0; i < g->nmask; i++) {
    if (g->mask[i] != mask || --g->refs[i] > 0)
      continue;
    g->nmask--;
    g->mask[i] = g->mask[g->nmask];
    g->refs[i] = g->refs[g->nmask];
    break;
  }
  gate_unlock(g);
}

void acl_gate_forget(acl_gate_t *g, const void *who)
{
  if (!g || !who)
    return;
  gate_lock(g);
  /* Rebuilt without who's keys (open addressing keeps no tombstones);
   * successors are relearnt within a step. */
  memcpy(g->old, g->e, sizeof(g->e));
  memset(g->e, 0, sizeof(g->e));
  for (int i = 0; i < GATE_SLOTS; i++) {
    if (!g->old[i].who || g->old[i].who == who)
      continue;
    uint16_t k = find(g, g->old[i].who, g->old[i].coll, g->old[i].bytes, true);
    if (k != GATE_NONE) {
      g->e[k] = g->old[i];
      g->e[k].succ = g->e[k].succ2 = GATE_NONE;
    }
  }
  g->last = GATE_NONE;
  gate_unlock(g);
}

/* The key expected to be enqueued after key k: what followed it last time,
 * itself until something did. */
static const gent_t *predicted(const acl_gate_t *g, uint16_t k)
{
  const gent_t *e = &g->e[k];
  return e->succ != GATE_NONE && g->e[e->succ].who ? &g->e[e->succ] : e;
}

static bool wants(const acl_gate_t *g, const gent_t *n)
{
  return g->rule && n->shift < ACL_GATE_NEVER &&
         g->rule(n->shift, (uint64_t)((int64_t)n->enq + n->base));
}

/* Whether the enqueue after key k should carry events: the predicted key
 * wants its next call sampled, or the second guess does. A key after a run
 * of equal calls (64 KiB, 64 KiB, then the next step's 1 GiB AllGather) is
 * never the predicted one; without the second guess, it never got a sample
 * while the run before it waited for the budget. */
static bool next_wants(const acl_gate_t *g, uint16_t k)
{
  const gent_t *e = &g->e[k];
  if (wants(g, predicted(g, k)))
    return true;
  return e->succ2 != GATE_NONE && g->e[e->succ2].who && wants(g, &g->e[e->succ2]);
}

bool acl_gate_enqueued(acl_gate_t *g, const void *who, int coll, uint64_t bytes, int full)
{
  if (!g)
    return false;
  gate_lock(g);
  g->st.enqueued++;
  /* NCCL stamped what the gate left there (it is the mask's only writer) */
  bool carries = (g->now & (ncclProfileColl | ncclProfileKernelCh)) != 0;
  g->st.carried += carries;
  uint16_t k = find(g, who, coll, bytes, true);
  bool want = false;
  if (k != GATE_NONE) {
    gent_t *e = &g->e[k];
    if (e->npend == 64) { /* never decided (aggregated by NCCL): keep the newest */
      e->pend >>= 1;
      e->npend--;
    }
    e->pend |= (uint64_t)carries << e->npend;
    e->npend++;
    bool wanted = wants(g, e); /* before enq counts this one: this call's rule */
    e->enq++;
    if (g->last != GATE_NONE) {
      if (!carries && wanted && g->e[g->last].succ != k)
        g->e[g->last].succ2 = k;
      g->e[g->last].succ = k;
    }
    g->last = k;
    want = next_wants(g, k);
  }
  g->full = full;
  store_mask(g, (want ? full : 0) | g->keep);
  gate_unlock(g);
  return carries;
}

bool acl_gate_decided(acl_gate_t *g, const void *who, int coll, uint64_t bytes, uint64_t call_idx,
                      uint8_t shift)
{
  if (!g)
    return false;
  gate_lock(g);
  g->st.decided++;
  bool carries = false;
  uint16_t k = find(g, who, coll, bytes, false);
  if (k != GATE_NONE && g->e[k].npend > 0) {
    gent_t *e = &g->e[k];
    carries = e->pend & 1u;
    e->pend >>= 1;
    e->npend--;
    e->base = (int64_t)call_idx - (int64_t)e->dec;
    e->dec++;
    e->shift = shift;
    /* The next enqueue is stamped with what is there now: its rule may have
     * just changed (a new block), so the mask follows the newest one. */
    if (g->last != GATE_NONE)
      store_mask(g, (next_wants(g, g->last) ? g->full : 0) | g->keep);
  } else {
    g->st.unseen++;
  }
  gate_unlock(g);
  return carries;
}

void acl_gate_stats(acl_gate_t *g, acl_gate_stats_t *out)
{
  memset(out, 0, sizeof(*out));
  if (!g)
    return;
  gate_lock(g);
  *out = g->st;
  gate_unlock(g);
}
