/* Chunk size on a landscape (NCCL 2.30, tuner v6): how a call's time
 * changes when its chunk size is NCCL's own x 2^k. Off by default, so
 * every landscape times calls exactly as before; acl_land_chunk_enable
 * draws a model from its own seed without touching the landscape's other
 * draws.
 *
 *   t(k) = t(0 without the model) x (1 + w x c x (k' - peak)^2)
 *   k'   = min(k, 0) for Ring: NCCL's own Ring chunk is already its buffer
 *          limit, so larger requests run clamped (enqueue.cc, 2.30);
 *          Tree, PAT, NVLS and CollNet halve theirs at small sizes and can
 *          grow
 *   peak in [-3, 2] (Ring: [-3, 0]) per (collective, size anchor, pair),
 *   c    in [0.02, 0.08] x amplitude, w = 0.2 + 0.8 x bytes/(bytes + 4 MiB)
 *          (pipelining matters more once the call is bandwidth bound).
 * Unimodal in k; NCCL's own point (k = 0) is off the optimum by |peak|:
 * with amplitude 1 up to ~1.7x at 1 GiB, with amplitude 0 chunk size
 * changes nothing ("chunk-insensitive"). No chunk data was measured: the
 * shape is an assumption to test the search, not a model of H200. */
#include <math.h>

#include "sim/landscape_int.h"

#define CHUNK_W_BYTES (4.0 * 1024 * 1024) /* where w is halfway to its top */

void acl_land_chunk_enable(acl_landscape_t *l, uint64_t seed, double amplitude)
{
  if (!l)
    return;
  uint64_t rng = seed ^ 0xc4a11c5eedull;
  l->chunk_on = true;
  for (int c = 0; c < ACL_NUM_COLL; c++)
    for (int i = 0; i < ACL_LAND_SYN_NANCH; i++)
      for (int a = 0; a < ACL_NUM_ALGO; a++)
        for (int p = 0; p < ACL_NUM_PROTO; p++) {
          double top = a == 1 ? 0.0 : 2.0; /* Ring: clamped at NCCL's own */
          l->chunk_peak[c][i][a][p] = (float)(-3.0 + (top + 3.0) * acl_land_unif(&rng));
          l->chunk_curv[c][i][a][p] = (float)(amplitude * (0.02 + 0.06 * acl_land_unif(&rng)));
        }
}

bool acl_land_chunk_on(const acl_landscape_t *l) { return l && l->chunk_on; }

double acl_land_chunk_factor(const acl_landscape_t *l, int coll, double bytes, int algo, int proto,
                             int log2)
{
  if (!l || !l->chunk_on || coll < 0 || coll >= ACL_NUM_COLL || algo < 0 || algo >= ACL_NUM_ALGO ||
      proto < 0 || proto >= ACL_NUM_PROTO)
    return 1.0;
  int i = bytes <= 1024.0 ? 0 : (int)floor(log(bytes / 1024.0) / log(4.0) + 0.5);
  if (i > ACL_LAND_SYN_NANCH - 1)
    i = ACL_LAND_SYN_NANCH - 1;
  double k = algo == 1 && log2 > 0 ? 0.0 : (double)log2;
  double x = k - l->chunk_peak[coll][i][algo][proto];
  double w = 0.2 + 0.8 * bytes / (bytes + CHUNK_W_BYTES);
  return 1.0 + w * l->chunk_curv[coll][i][algo][proto] * x * x;
}
