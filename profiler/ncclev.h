/* The NCCL profiler v5 sample source: Coll events matched to tuned calls
 * (per-rank FIFO, by collective + bytes, the newest such call), NCCL's executed algo/proto/channels
 * checked against the decision, and KernelCh GPU timestamps turned into
 * durations (max(stop) - min(start) over the Coll's channels, emitted when
 * all nChannels stopped). Event handles come from a preallocated pool; all
 * entry points are thread-safe (NCCL's proxy thread reports KernelCh). */
#ifndef ACL_PROFILER_NCCLEV_H
#define ACL_PROFILER_NCCLEV_H

#include <stdbool.h>
#include <stdint.h>

#include "core/abi.h"
#include "profiler/profiler.h"

#define ACL_EV_POOL 16384 /* Coll + KernelCh events in flight (a Coll and its channels) */
#define ACL_EV_ORPHAN_NS 10000000000ull /* a Coll whose channels never started, reclaimable */
#define ACL_EV_FIFO 1024

typedef struct acl_ev_sample {
  acl_call_tag_t tag;
  void *user;
  uint64_t call_ns;
  uint64_t start, end;        /* GPU globaltimer ns */
  int ran_nch;                /* channels NCCL ran (the Coll event) */
  int8_t ran_algo, ran_proto; /* algo/proto NCCL ran (the Coll event); -1 unknown */
} acl_ev_sample_t;

typedef void (*acl_ev_emit_fn)(void *u, const acl_ev_sample_t *s);

typedef struct acl_ev_stats {
  uint64_t colls, colls_matched, colls_unmatched, kch, samples, incomplete, bad_clock;
  uint64_t overlapped; /* kernels that overlapped an earlier one of their rank: not used */
  uint64_t mismatches, clamped, pool_exhausted, fifo_dropped, lost;
  uint64_t unsampled; /* decided calls whose events never came (mask off) */
} acl_ev_stats_t;

typedef struct acl_ncclev acl_ncclev_t;
typedef struct acl_ncclev_rank acl_ncclev_rank_t;

acl_ncclev_t *acl_ncclev_create(acl_ev_emit_fn emit, void *u);
/* Called (on NCCL's thread, after the source's lock: must not block) when
 * a tagged Coll event arrives, with the rank's user pointer and what NCCL
 * actually ran (algo, proto -1 when unknown). The hook is set once, before
 * any event. */
typedef void (*acl_ev_coll_fn)(void *u, void *rank_user, const acl_call_tag_t *tag, int nchannels,
                               int algo, int proto);
void acl_ncclev_set_coll_hook(acl_ncclev_t *e, acl_ev_coll_fn fn, void *u);
void acl_ncclev_destroy(acl_ncclev_t *e);
acl_ncclev_rank_t *acl_ncclev_rank_create(acl_ncclev_t *e, void *user, int nranks);
void acl_ncclev_rank_destroy(acl_ncclev_t *e, acl_ncclev_rank_t *r);

/* Tuner side: a decided call, to be matched by the next Coll event. */
void acl_ncclev_push(acl_ncclev_t *e, acl_ncclev_rank_t *r, const acl_call_tag_t *tag,
                     uint64_t host_ns);

/* Whether new Coll events wait for KernelCh children (true by default; false
 * when NCCL is not asked for KernelCh events, e.g. CUPTI is the source). */
void acl_ncclev_hold_children(acl_ncclev_t *e, bool hold);
ncclResult_t acl_ncclev_start(acl_ncclev_t *e, acl_ncclev_rank_t *r, void **eHandle,
                              const ncclProfilerEventDescr_v5_t *d);
ncclResult_t acl_ncclev_stop(acl_ncclev_t *e, void *eHandle);
ncclResult_t acl_ncclev_state(acl_ncclev_t *e, void *eHandle, int st,
                              const ncclProfilerEventStateArgs_v5_t *args);
void acl_ncclev_stats(acl_ncclev_t *e, acl_ev_stats_t *st);

/* Bytes of one element of an NCCL datatype name ("ncclFloat32", "ncclBfloat16"...); 0 unknown. */
int acl_ncclev_dtype_size(const char *dtype);

#endif
