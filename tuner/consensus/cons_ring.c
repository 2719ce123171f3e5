/* Rank consensus: the ring of published blocks, written under the segment
 * lock and read without it as a seqlock (docs/consensus.md). */
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
