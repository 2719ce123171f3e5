/* What NCCL 2.28 does around a tuner call, reduced to pure functions so the
 * simulator's NCCL semantics can be unit-tested: the cost table it hands the
 * tuner (an alpha-beta model), its selection rule, the channel clamp, and the
 * byte/element accounting of the collectives. No landscape dependency. */
#ifndef ACL_SIM_NCCL_MODEL_H
#define ACL_SIM_NCCL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

#define ACL_SIM_DTYPE_BYTES 4 /* the simulator moves "float" buffers */

/* Predicted microseconds of (algo, proto) for one call under the alpha-beta
 * model: latency alpha x steps + bytes on the wire / bandwidth beta. Negative
 * when the model has no entry for the pair (COLLNET without a CollNet). */
double acl_sim_ab_cost_us(int coll, uint64_t nbytes, int nranks, int nnodes, int algo, int proto);

/* Fills NCCL's cost table: the alpha-beta prediction for every pair whose bit
 * is set in valid_mask (ACL_AP_BIT), -1 elsewhere. When NCCL's default
 * (def_algo, def_proto) is valid it is made the strict minimum (NCCL's own
 * model is what defines its default, so its table must pick it). */
void acl_sim_cost_table(float table[ACL_NUM_ALGO][ACL_NUM_PROTO], int coll, uint64_t nbytes,
                        int nranks, int nnodes, uint32_t valid_mask, int def_algo, int def_proto);

/* NCCL's selection: the strict minimum over entries >= 0, scanned
 * algorithm-major, so the lowest (algo, proto) index wins ties. Returns false
 * (and -1s) when no entry is usable: NCCL then fails the collective. */
bool acl_sim_select(const float table[ACL_NUM_ALGO][ACL_NUM_PROTO], int *algo, int *proto);

/* The tuner's nChannels as NCCL applies it: <= 0 means NCCL decides (0),
 * otherwise an upper bound clamped to the channels built at init. */
int acl_sim_clamp_channels(int requested, int max_channels);

/* Element count NCCL reports for a call of nbytes (the tuner's nBytes): for
 * AllGather and ReduceScatter nBytes is the whole buffer, count the per-rank
 * part. 0 when nbytes does not split evenly. */
size_t acl_sim_count_from_bytes(int coll, uint64_t nbytes, int nranks, int dtype_bytes);
/* The reverse: tuner nBytes for a per-call element count. */
uint64_t acl_sim_bytes_from_count(int coll, size_t count, int nranks, int dtype_bytes);
/* Rounds a buffer size down to one NCCL can be called with for nranks
 * (a whole number of elements per rank), at least one element per rank. */
uint64_t acl_sim_round_bytes(int coll, uint64_t nbytes, int nranks, int dtype_bytes);

/* NCCL 2.30's own chunk size for (algo, proto) with its default buffers
 * (calcCollChunking before its size cuts, which the simulator leaves out):
 * LL 32 KiB, LL128 576,000 bytes, Simple 512 KiB (Ring: x4 chunk steps). */
size_t acl_sim_nccl_chunk(int algo, int proto);
/* What NCCL runs after the tuner's getChunkSize returned `got` for `own`:
 * clamped to the buffer limit (Ring: its own; the others: 4x, as their own
 * is cut below the limit), then as a scale of own (rounded log2). Returns
 * -1 when the chunk would round to nothing (NCCL would stall). */
int acl_sim_chunk_ran(int algo, int proto, size_t own, size_t got, int8_t *scale);

/* Deterministic 64-bit mixing (splitmix64) for per-call seeds. */
uint64_t acl_sim_mix(uint64_t x);

#endif
