/* Unit-test driver for tuner/search/search.c alone: blocks from the search,
 * samples back by the one sampling rule (acl_search_sampled), against a time
 * function of the candidate. Tests of what the plugin's path does (budget,
 * benchmarks) use tuner/drive instead, through consensus. */
#ifndef ACL_TESTS_TUNER_DRIVE_H
#define ACL_TESTS_TUNER_DRIVE_H

#include <stdint.h>

#include "tuner/search/search.h"

typedef double (*drive_time_fn)(void *user, const acl_candidate_t *c, uint64_t call);

typedef struct drive_opts {
  double noise;       /* relative sd of multiplicative noise, 0 = none */
  int lag;            /* samples delivered this many calls late */
  double drop;        /* probability a sample never arrives */
  double starve_nccl; /* ... one of NCCL's choice while validating (on top) */
  uint64_t seed;
  uint64_t max_calls;
  int settle;         /* 1: also wait for the background validation's verdict */
  int no_overlap;     /* 1: samples' overlap unknown (NCCL's events), else 0 known */
  double *time_spent; /* when set, accumulates the noise-free time of every call */
  int calls;          /* 1: samples say their call (acl_search_obs_t.call), as the
                       * plugin's do */
} drive_opts_t;

/* Runs until converged (returns the call count) or max_calls (returns 0);
 * with o->settle, until converged with the validation over. Samples come
 * only for the calls acl_search_sample_shift() asks for, as the plugin's
 * profiler-event gating delivers them. */
uint64_t drive(acl_search_t *s, drive_time_fn fn, void *user, const drive_opts_t *o);
/* Cost table with every entry -1 except the listed (algo, proto, cost) triples. */
void table_only(float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int n, const int *algo, const int *proto,
                const float *us);
double drive_noise(uint64_t *rng, double rel);

#endif
