/* Performance landscapes: how long a collective takes under a candidate.
 * The measured H200 landscape (sim/data/, embedded in the binary) is
 * interpolated between measured sizes; synthetic landscapes are random
 * unimodal surfaces. Noise is added by the caller (acl_land_noise). */
#ifndef ACL_SIM_LANDSCAPE_H
#define ACL_SIM_LANDSCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

typedef struct acl_landscape acl_landscape_t;

/* The measured 2x H200 NVLink data (NCCL 2.28.3). NULL + err on failure. */
acl_landscape_t *acl_land_create_h200(char *err, size_t errlen);
/* A random unimodal surface from seed (deterministic). */
acl_landscape_t *acl_land_create_synth(uint64_t seed);
void acl_land_destroy(acl_landscape_t *l); /* NULL ok */
const char *acl_land_name(const acl_landscape_t *l);

/* Whether NCCL would offer (algo, proto) for this call (cost table >= 0). */
bool acl_land_valid(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks, int algo,
                    int proto);
/* Channels NCCL builds at init (the clamp for nChannels). */
int acl_land_max_channels(const acl_landscape_t *l);
/* Noise-free seconds for one call. c->algo == ACL_ALGO_NCCL means NCCL's
 * default; c->nchannels == 0 means NCCL's default channel count.
 * interference in 0..1: compute running concurrently (changes the winner). */
double acl_land_time(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                     const acl_candidate_t *c, double interference);
/* What NCCL picks by default for this call (algo, proto and channels). */
void acl_land_nccl_default(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                           acl_candidate_t *out);
/* Best candidate the tuner could choose, and its time. */
double acl_land_oracle(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                       double interference, acl_candidate_t *best);
/* NCCL's cost table for this call as a plugin would receive it: predicted
 * microseconds for valid (algo, proto) pairs (NCCL's model: close to the
 * landscape, with a deterministic model error), -1 for the others; the
 * default's pair is the strict minimum, so NCCL's pick matches
 * acl_land_nccl_default. */
void acl_land_cost_table(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                         float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);
/* Multiplicative noise factor (mean 1, relative sd `rel`), from *rng state. */
double acl_land_noise(uint64_t *rng, double rel);

#endif
