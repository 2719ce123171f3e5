/* Rank consensus: the ring of published blocks, written under the segment
 * lock and read without it as a seqlock (docs/consensus.md), and the seal
 * that freezes every ring when the segment's header proves corrupt. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "tuner/consensus/cons_int.h"

/* ---- published blocks ---------------------------------------------------- */

static void blk_unpack(uint64_t num, uint64_t start, uint64_t info, uint64_t res, uint64_t safe,
                       cons_blk_t *b)
{
  b->safe_id = (uint16_t)safe;
  b->safe.algo = (int8_t)(uint8_t)(safe >> 16);
  b->safe.proto = (int8_t)(uint8_t)(safe >> 24);
  b->safe.nchannels = (int16_t)(uint16_t)(safe >> 32);
  b->safe.chunk_log2 = (int8_t)(uint8_t)(safe >> 48);
  b->num = num;
  b->start = start;
  b->len = (uint32_t)info;
  b->cand_id = (uint16_t)(info >> 32);
  b->cand.algo = (int8_t)(uint8_t)(info >> 48);
  b->cand.proto = (int8_t)(uint8_t)(info >> 56);
  b->cand.nchannels = (int16_t)(uint16_t)res;
  b->cand.chunk_log2 = (int32_t)(uint32_t)(res >> 16);
  b->phase = (uint8_t)(res >> 48);
  b->sample_shift = (uint8_t)(res >> 56);
}

/* Seqlock read of block number j: false when it is not (any more) there. */
bool cons_ring_read(cons_wl_t *w, uint64_t j, cons_blk_t *b)
{
  cons_block_t *s = &w->ring[j % ACL_CONS_RING];
  uint64_t t1 = atomic_load_explicit(&s->tag, memory_order_acquire);
  if (t1 != j + 1)
    return false;
  uint64_t start = atomic_load_explicit(&s->start, memory_order_relaxed);
  uint64_t info = atomic_load_explicit(&s->info, memory_order_relaxed);
  uint64_t res = atomic_load_explicit(&s->res, memory_order_relaxed);
  uint64_t safe = atomic_load_explicit(&s->safe, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->tag, memory_order_relaxed) != t1)
    return false;
  blk_unpack(j, start, info, res, safe, b);
  return true;
}

void cons_ring_publish(cons_wl_t *w, const cons_blk_t *b)
{
  cons_block_t *s = &w->ring[b->num % ACL_CONS_RING];
  uint64_t info = (uint64_t)b->len | (uint64_t)b->cand_id << 32 |
                  (uint64_t)(uint8_t)b->cand.algo << 48 | (uint64_t)(uint8_t)b->cand.proto << 56;
  uint64_t res = (uint64_t)(uint16_t)b->cand.nchannels |
                 (uint64_t)(uint32_t)b->cand.chunk_log2 << 16 | (uint64_t)b->phase << 48 |
                 (uint64_t)b->sample_shift << 56;
  uint64_t safe = (uint64_t)b->safe_id | (uint64_t)(uint8_t)b->safe.algo << 16 |
                  (uint64_t)(uint8_t)b->safe.proto << 24 |
                  (uint64_t)(uint16_t)b->safe.nchannels << 32 |
                  (uint64_t)(uint8_t)(int8_t)b->safe.chunk_log2 << 48;
  atomic_store_explicit(&s->tag, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&s->start, b->start, memory_order_relaxed);
  atomic_store_explicit(&s->info, info, memory_order_relaxed);
  atomic_store_explicit(&s->res, res, memory_order_relaxed);
  atomic_store_explicit(&s->safe, safe, memory_order_relaxed);
  atomic_store_explicit(&s->tag, b->num + 1, memory_order_release);
  w->next_call = b->start + b->len;
  w->phase = b->phase;
  atomic_store_explicit(&w->nblocks, b->num + 1, memory_order_release);
}

int cons_ring_find(cons_wl_t *w, uint64_t call, uint64_t *hint, cons_blk_t *out)
{
  for (int tries = 0; tries < 4 * ACL_CONS_RING + 8; tries++) {
    uint64_t n = atomic_load_explicit(&w->nblocks, memory_order_acquire);
    if (n == 0)
      return 1;
    uint64_t lower = n > ACL_CONS_RING ? n - ACL_CONS_RING : 0;
    uint64_t j = *hint;
    if (j >= n)
      j = n - 1;
    if (j < lower)
      j = lower;
    cons_blk_t b;
    if (!cons_ring_read(w, j, &b)) {
      *hint = j + 1; /* overwritten meanwhile: it was old, look newer */
      continue;
    }
    if (call < b.start) {
      if (j == lower)
        return -2;
      *hint = j - 1;
    } else if (call - b.start >= b.len) {
      if (j + 1 >= n)
        return 1;
      *hint = j + 1;
    } else {
      *hint = j;
      *out = b;
      return 0;
    }
  }
  return -2;
}

/* First call not covered by this host's blocks (lock-free). */
uint64_t cons_ring_end(cons_wl_t *w)
{
  for (int tries = 0; tries < 16; tries++) {
    uint64_t n = atomic_load_explicit(&w->nblocks, memory_order_acquire);
    cons_blk_t b;
    if (n == 0)
      return 0;
    if (cons_ring_read(w, n - 1, &b))
      return b.start + b.len;
  }
  return 0;
}

void cons_ring_put(cons_wl_t *w, const cons_blk_t *blk)
{
  uint64_t n = atomic_load_explicit(&w->nblocks, memory_order_relaxed);
  if (blk->num != n)
    return; /* already there (another local rank fetched it), or not next */
  w->dirty = 1;
  cons_ring_publish(w, blk);
  w->dirty = 0;
}

/* ---- a corrupt header: checked, then sealed --------------------------------- */

/* The workloads of a leader host are created one after another: nworkloads
 * is right when the slot below it is in use and its own slot is not. */
int cons_hdr_check(const acl_cons_t *c, uint32_t *nwl, char *err, size_t errlen)
{
  cons_hdr_t *h = c->hdr;
  uint32_t max = (uint32_t)c->set.max_workloads;
  uint32_t n = atomic_load_explicit(&h->nworkloads, memory_order_acquire);
  const char *bad = NULL;
  if (atomic_load_explicit(&h->magic, memory_order_relaxed) != ACL_CONS_MAGIC ||
      h->layout != ACL_CONS_LAYOUT || h->hdr_size != sizeof(cons_hdr_t) ||
      h->wl_size != cons_wl_size())
    bad = "magic or layout";
  else if (!c->map || h->total_size != c->map->size || h->comm_id != c->comm_id)
    bad = "size or communicator";
  else if (cons_settings_diff(&c->set, &h->set, NULL, 0) != 0)
    bad = "settings"; /* field by field: padding and float bits are no settings */
  else if (n > max ||
           (cons_leader_here((acl_cons_t *)c) &&
            ((n > 0 && !atomic_load_explicit(&cons_wl(h, n - 1)->present, memory_order_acquire)) ||
             (n < max && atomic_load_explicit(&cons_wl(h, n)->present, memory_order_acquire)))))
    bad = "workload count";
  else if (h->nprocs > ACL_CONS_MAX_PROCS || h->attached > (uint32_t)c->nranks + 64u)
    bad = "process table";
  if (!bad) {
    *nwl = n;
    return 0;
  }
  snprintf(err, errlen,
           "consensus segment %s of comm %016llx has a corrupt header (%s); not used for new "
           "decisions",
           c->map ? c->map->name : "?", (unsigned long long)c->comm_id, bad);
  return -1;
}

bool cons_sealed(const acl_cons_t *c)
{
  if (atomic_load_explicit(&c->broken, memory_order_relaxed))
    return true;
  /* cons_seal seals every slot, slot 0 first: its bit is the segment's */
  return c->hdr && c->set.max_workloads > 0 &&
         (atomic_load_explicit(&cons_wl(c->hdr, 0)->seal, memory_order_acquire) &
          CONS_COMMIT_SEALED);
}

void cons_seal(acl_cons_t *c, const char *why)
{
  if (!c->hdr)
    return;
  for (uint32_t i = 0; i < (uint32_t)c->set.max_workloads; i++)
    atomic_fetch_or_explicit(&cons_wl(c->hdr, i)->seal, CONS_COMMIT_SEALED, memory_order_acq_rel);
  if (atomic_exchange_explicit(&c->broken, 1, memory_order_acq_rel) == 0)
    acl_warn("consensus: %s; rank %d runs the blocks already published and NCCL's choice after "
             "them, as every rank of comm %016llx does",
             why, c->rank, (unsigned long long)c->comm_id);
}
