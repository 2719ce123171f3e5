/* Shared helpers of the consensus tests: parameters, a synthetic landscape
 * for sample durations, shared memory between forked "ranks", children. */
#ifndef ACL_TESTS_CONS_HELPERS_H
#define ACL_TESTS_CONS_HELPERS_H

#include <stdint.h>
#include <sys/types.h>

#include "core/clock.h"
#include "core/config.h"
#include "tuner/consensus/consensus.h"

typedef struct th_rank {
  acl_config_t cfg;
  acl_cons_params_t p;
} th_rank_t;

/* A unique comm id per test run (pid and a counter mixed). */
uint64_t th_comm_id(int salt);
void th_params(th_rank_t *r, uint64_t comm, int rank, int nranks, int nnodes, const char *ns);
/* NCCL-like cost table: every (algo, proto) valid except NVLS/COLLNET ones
 * and, when bad_proto >= 0, that protocol of RING (a per-rank difference). */
void th_cost(float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int bad_proto);
/* Duration in seconds of a candidate for a workload, with noise in [0, 1). */
double th_duration(const acl_candidate_t *c, uint64_t nbytes, double noise);
acl_wkey_t th_key(uint64_t comm, int coll, uint64_t nbytes);
/* Decision packed for comparison: cand id, algo, proto, channels. */
uint64_t th_pack(const acl_decision_t *d);
/* n decisions of key k with th_cost's table; the last in *last. 0, or -1
 * with err (256 bytes). */
int th_decide_n(acl_cons_t *c, const acl_wkey_t *k, int n, acl_decision_t *last, char *err);

void *th_shared(size_t bytes); /* zeroed MAP_SHARED|MAP_ANONYMOUS */
/* Waits for pid; returns its exit status (128+sig when killed), -1 on timeout
 * (then kills it). */
int th_wait(pid_t pid, int timeout_ms);
int th_free_port(const char *host);

/* Simulated profiler: delivers each call's sample after a random delay and
 * with probability keep_pct, so samples arrive late, out of order or never. */
typedef struct th_feed {
  uint64_t sent; /* samples handed to acl_cons_observe */
  struct {
    uint32_t widx;
    uint64_t call;
    uint16_t cand;
    double sec;
    uint32_t due;
  } q[64];
  int n;
  uint32_t tick;
  uint64_t rng;
} th_feed_t;
void th_feed_init(th_feed_t *f, uint64_t seed);
void th_feed_call(th_feed_t *f, acl_cons_t *c, const acl_decision_t *d, uint64_t nbytes,
                  int keep_pct);
uint64_t th_rand(uint64_t *s);

#endif
