/* The profiler's own state, shared by profiler.c (sources, routing) and
 * prof_stats.c (its counters as the endpoint shows them). Private to
 * profiler/. */
#ifndef ACL_PROF_INT_H
#define ACL_PROF_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "profiler/attrib.h"
#include "profiler/gate.h"
#include "profiler/hostcost.h"
#include "profiler/ncclev.h"
#include "profiler/prof_cupti.h"
#include "profiler/profiler.h"
#include "profiler/simfeed.h"

enum { SRC_NONE = 0, SRC_CUPTI = ACL_PROF_SOURCE_CUPTI, SRC_NCCL = 2, SRC_SIM = 3 };

#define LAT_N 512
#define ACL_PROF_MAX_COMMS 64 /* beyond: not tracked (a shared process is seen by then) */
#define OWN_N 64

typedef struct prank {
  acl_prof_t *p;
  void *rank_ctx;
  uint64_t comm_id;
  int rank, nranks;
  acl_ncclev_rank_t *evr;
  /* CollApi events (acl_prof_captured): written on the enqueuing thread,
   * read by getCollInfo, which NCCL runs after ncclGroupEnd. */
  atomic_bool captured;
  atomic_ulong captured_events;
  /* NCCL reported an enqueue (CollApi) for this rank: the gate knows which
   * calls carry events. Until then (a direct user of this API) every
   * decided call is taken to carry them, as NCCL alone decides. */
  atomic_bool enq_seen;
  /* The enqueue's names parsed (NCCL passes the same literals every call;
   * a communicator's collectives come from one thread at a time). */
  const char *func_s, *type_s;
  int func_v, type_v;
  /* What NCCL's own choice last ran per workload (its Coll events; CUPTI
   * samples carry none): widx:32 | channels:16 | algo:8 | proto:8, by
   * widx % OWN_N, written by the NCCL-event source's Coll hook. */
  _Atomic uint64_t own[OWN_N];
  acl_hostcost_t host; /* NCCL's host time per call (hostcost.h) */
} prank_t;

struct acl_prof {
  acl_config_t cfg;
  acl_prof_sink_fn sink;
  void *user;
  atomic_int source;
  bool cupti_available;
  acl_attr_t *attr;
  acl_cupti_t *cupti;
  acl_ncclev_t *ev;
  acl_gate_t *gate; /* which calls carry NCCL's events (gate.h) */
  /* sim feed: mapped once, read per sample without the mutex (feed_get) */
  pthread_mutex_t feed_mu; /* only while it is not mapped yet */
  const acl_simfeed_t *_Atomic feed;
  _Atomic uint64_t feed_retry_ns;
  /* communicators with a rank attached in this process (rank_attach): a
   * second rank of one makes it a shared process */
  pthread_mutex_t comms_mu;
  uint64_t comm_ids[ACL_PROF_MAX_COMMS];
  uint16_t comm_ranks[ACL_PROF_MAX_COMMS];
  atomic_bool shared_process;
  /* a collective of this process was captured into a CUDA graph */
  atomic_bool graph_captured;
  /* counters */
  atomic_ulong samples;
  /* call-to-sample latencies (ns), a ring written without a lock by
   * whichever thread delivers: a sample never waits on NCCL's thread */
  _Atomic uint64_t lat_ns[LAT_N];
  atomic_ulong nlat;
};

#endif
