/* A consensus run: forked processes, each driving one or more ranks of one or
 * more communicators, recording every decision into shared memory; the
 * parent compares all ranks call by call. */
#ifndef ACL_TESTS_CONS_RUN_H
#define ACL_TESTS_CONS_RUN_H

#include <stdint.h>

#define RUN_MAX_RANKS 16
#define RUN_MAX_COMMS 16

typedef struct run_spec {
  int nprocs;
  int ranks_per_proc;  /* ranks driven by one thread, round-robin "groups" */
  int ncomms;          /* communicators, each with nprocs*ranks_per_proc ranks */
  uint64_t calls;      /* calls per rank per communicator */
  int keep_pct;        /* samples delivered */
  int delay_per_mille; /* calls followed by a random host delay (<= 300 us) */
  int bad_proto_rank;  /* this rank's cost table lacks RING/<bad_proto>; -1 none */
  int bad_proto;
  int nnodes;        /* > 1: ranks split in hosts by process, relay on loopback */
  int lag;           /* max calls a process runs ahead of the slowest (collectives) */
  int permute;       /* shuffle rank order inside each group */
  int max_workloads; /* 0: default */
  int nwl;           /* distinct workloads cycled through (default 3) */
} run_spec_t;

typedef struct run_result {
  int child_fail; /* children that exited non-zero */
  uint64_t disagreements;
  uint64_t distinct;   /* distinct decisions seen */
  uint64_t non_nccl;   /* decisions that were not NCCL's default */
  uint64_t bad_choice; /* decisions of RING/bad_proto (must be 0 with a bad rank) */
  uint64_t recorded;
  char first_error[256];
  double seconds;
  uint64_t samples_sent, samples_busy; /* samples dropped: the lock was held */
} run_result_t;

int run_consensus(const run_spec_t *s, run_result_t *r);

#endif
