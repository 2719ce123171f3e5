/* The chunk-size axis (tuner v6, NCCL 2.30's getChunkSize): grid points are
 * scales of NCCL's own chunk size for the call, 2^k, so one grid serves every
 * protocol, channel count and size (NCCL's own value differs between them,
 * and getChunkSize hands it to the plugin). Explored after the channel axis
 * inside each subspace's descent; with params.chunk_axis = 0 (every older
 * ABI, AUTOCCL_CHUNK=off) the axis is one point, NCCL's own, and the descent
 * skips it. Part of search_grid.c's level: calls nothing in the search. */
#include "core/abi.h"
#include "tuner/search/search_int.h"

/* k of the points, ascending so that the descent's unimodal walk holds.
 * Down to 1/8: below that NCCL's Simple chunks (128 KiB-512 KiB on H200)
 * are too short to keep the pipeline full. Up to 4x: NCCL clamps larger
 * requests to its buffer anyway (Ring/Simple already runs at the ceiling;
 * Tree/LL128, PAT and NVLS halve theirs at small sizes and can grow). */
static const int8_t chunk_grid[] = {-3, -2, -1, 0, 1, 2};
#define CHUNK_GRID_N ((int)(sizeof chunk_grid / sizeof chunk_grid[0]))
#define CHUNK_GRID_NCCL 3 /* index of k = 0, NCCL's own: where descents start */

int acl_search_chunk_count(const acl_search_t *s)
{
  return s->params.chunk_axis ? CHUNK_GRID_N : 1;
}

int acl_search_chunk_value(const acl_search_t *s, int idx)
{
  if (!s->params.chunk_axis || idx < 0 || idx >= CHUNK_GRID_N)
    return 0;
  return chunk_grid[idx];
}

int acl_search_chunk_start(const acl_search_t *s)
{
  return s->params.chunk_axis ? CHUNK_GRID_NCCL : 0;
}

/* NCCL 2.30 gives Ring its buffer limit as its own chunk size (enqueue.cc,
 * calcCollChunking: chunkSize = stepSize x chunkSteps, no size cut) and
 * clamps larger requests to it: above NCCL's own, Ring runs identically. */
int acl_search_chunk_hi(const acl_search_t *s, int algo)
{
  if (!s->params.chunk_axis)
    return 1;
  return algo == NCCL_ALGO_RING ? CHUNK_GRID_NCCL + 1 : CHUNK_GRID_N;
}

bool acl_search_chunk_worth(const acl_search_t *s, int id)
{
  if (id <= 0 || id >= s->ncands || !s->cands[id].judged)
    return false;
  double best = 0.0;
  for (int i = 0; i < s->ncands; i++)
    if (s->cands[i].judged && s->cands[i].robust_seconds > 0.0 &&
        (best == 0.0 || s->cands[i].robust_seconds < best))
      best = s->cands[i].robust_seconds;
  return best > 0.0 && s->cands[id].robust_seconds <= ACL_SEARCH_CHUNK_NEAR * best;
}

int acl_search_chunk_index(const acl_search_t *s, int log2)
{
  if (!s->params.chunk_axis)
    return 0;
  int best = CHUNK_GRID_NCCL;
  for (int i = 0; i < CHUNK_GRID_N; i++) {
    int d = chunk_grid[i] - log2, db = chunk_grid[best] - log2;
    if ((d < 0 ? -d : d) < (db < 0 ? -db : db))
      best = i;
  }
  return best;
}
