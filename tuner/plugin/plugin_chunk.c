/* Tuner v6 (NCCL 2.30) chunk sizes: which getCollInfo decision a
 * getChunkSize call belongs to, and the chunk it gets.
 *
 * NCCL asks getCollInfo for every bin of a group (one call may stand for
 * several collectives of similar size), then sizes each collective's chunks
 * with 1-3 getChunkSize calls (a split schedule asks per part, with that
 * part's bytes and nChannels 1). The ABI passes no call id, so a
 * getChunkSize call takes the newest remembered decision of the same
 * collective type whose (algorithm, protocol) NCCL ran and whose bytes
 * cover the part's. A decision that left NCCL's choice matches any pair and
 * keeps NCCL's chunk, so an older candidate never leaks into later calls.
 * Every rank makes the same calls in the same order with the same
 * decisions (consensus), and NCCL's own chunk size is the same on every
 * rank (its ranks must agree on it), so every rank sets the same chunk. */
#include <stdatomic.h>

#include "tuner/plugin/plugin_int.h"

acl_chunk_pending_t *acl_chunk_note(acl_rank_t *r, int coll, size_t nbytes)
{
  if (r->abi < 6)
    return NULL;
  acl_chunk_pending_t *pe = &r->chunk_pend[r->chunk_head++ % ACL_CHUNK_PENDING];
  *pe = (acl_chunk_pending_t){
      .nbytes = nbytes ? nbytes : 1, .coll = (int8_t)coll, .algo = -1, .proto = -1, .log2 = 0};
  return pe;
}

void acl_chunk_choose(acl_chunk_pending_t *pe, const acl_candidate_t *c)
{
  if (!pe || c->algo == ACL_ALGO_NCCL)
    return;
  pe->algo = c->algo;
  pe->proto = c->proto;
  pe->log2 = acl_chunk_log2_valid(c->chunk_log2) ? (int8_t)c->chunk_log2 : 0;
}

ncclResult_t acl_plugin_get_chunk_size(acl_rank_t *r, int coll, size_t nbytes, int algo, int proto,
                                       int nchannels, size_t *chunk)
{
  (void)nchannels; /* a scale of NCCL's own chunk, whatever the channels */
  if (!r || !chunk || *chunk == 0 || r->abi < 6)
    return ncclSuccess;
  uint32_t n = r->chunk_head < ACL_CHUNK_PENDING ? r->chunk_head : ACL_CHUNK_PENDING;
  for (uint32_t i = 1; i <= n; i++) {
    const acl_chunk_pending_t *pe = &r->chunk_pend[(r->chunk_head - i) % ACL_CHUNK_PENDING];
    if (pe->coll != coll || nbytes > pe->nbytes)
      continue;
    if (pe->algo >= 0 && (pe->algo != algo || pe->proto != proto))
      continue; /* NCCL ran another pair for this one: not its call */
    if (pe->log2 != 0) {
      *chunk = acl_chunk_scaled(*chunk, pe->log2);
      atomic_fetch_add_explicit(&r->chunk_set, 1, memory_order_relaxed);
      return ncclSuccess;
    }
    break;
  }
  atomic_fetch_add_explicit(&r->chunk_kept, 1, memory_order_relaxed);
  return ncclSuccess;
}
