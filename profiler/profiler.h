/* Sample sources: turn each tuned collective call into a measured sample
 * (duration, overlap with compute) tagged with what it ran.
 *
 * Sources: CUPTI activity records (dlopen'ed libcupti; attribution through
 * external correlation pushed at getCollInfo), NCCL profiler v5 events
 * (KernelCh GPU timestamps; the fallback), and a simulated source that reads
 * overlap from autoccl-sim's feed. One process-wide profiler object. */
#ifndef ACL_PROFILER_PROFILER_H
#define ACL_PROFILER_PROFILER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/abi.h"
#include "core/config.h"
#include "core/types.h"

/* Identifies one call of one rank: handed to the profiler when the tuner
 * decides it, handed back with its sample. */
typedef struct acl_call_tag {
  void *rank_ctx;    /* opaque: the plugin's per-rank context */
  uint64_t call_idx; /* index of this call within its workload */
  uint32_t widx;     /* workload index within the communicator */
  uint16_t cand_id;  /* search candidate it ran */
  uint8_t coll;
  uint8_t pipe_ops; /* numPipeOps, saturated at 255 (trace records) */
  uint8_t phase;    /* acl_phase_t the call was decided in */
  uint64_t nbytes;
  acl_candidate_t cand; /* what it should have run (for mismatch checks) */
} acl_call_tag_t;

typedef struct acl_prof_sample {
  acl_call_tag_t tag;
  /* GPU time of the collective on this rank; < 0: no time, a fact only
   * (NCCL's own choice's Coll event, handed on when it is enqueued: what it
   * runs, in ran_*) */
  double seconds;
  /* NCCL's host time for a call of this workload on this rank, the
   * shortest seen (enqueue to kernel launch, profiler/hostcost.h); 0 unknown */
  double host_seconds;
  float overlap;            /* 0..1, <0 unknown */
  uint16_t compute_kernels; /* distinct non-NCCL kernels overlapping */
  /* channels NCCL ran (its Coll event), 0 unknown; for a CUPTI sample of
   * NCCL's own choice, what the workload's latest such Coll event said */
  int ran_nch;
  /* For the trace recorder (docs/trace.md). */
  uint64_t call_ns;             /* CLOCK_MONOTONIC ns at getCollInfo; 0 unknown */
  uint64_t gpu_start, gpu_stop; /* the source's stamps, ns (GPU globaltimer, CUPTI) */
  int8_t ran_algo, ran_proto;   /* what NCCL ran (its Coll event); -1 unknown */
  uint8_t source;               /* ACL_PROF_SOURCE_*: 1 cupti, 2 nccl events, 3 sim */
} acl_prof_sample_t;
/* acl_prof_sample_t.source: CUPTI's kernel records (in its windows). Their
 * durations run longer than NCCL's KernelCh stamps by a near-constant
 * 1.7-2.9 us (one H100, Ring, 64 KiB-4 MiB): the search brings them onto
 * one clock (tuner/search, acl_search_obs_t.cupti). */
#define ACL_PROF_SOURCE_CUPTI 1

/* What NCCL ran against what was decided (docs/profiler.md): the kinds the
 * profiler counts and logs, and a trace record's "status". */
typedef enum acl_ran_kind {
  ACL_RAN_OK,         /* as decided, or NCCL's own choice (nothing to compare) */
  ACL_RAN_ALGO_PROTO, /* another algorithm or protocol (or one not recognised) */
  ACL_RAN_CLAMPED,    /* fewer channels than asked */
  ACL_RAN_CHANNELS,   /* more channels than asked */
  ACL_RAN_UNKNOWN,    /* what ran is not known (trace records only) */
  ACL_RAN_KINDS
} acl_ran_kind_t;
/* algo/proto: -1 unknown, nch: channels NCCL ran. Never ACL_RAN_UNKNOWN. */
acl_ran_kind_t acl_ran_kind(const acl_candidate_t *want, int algo, int proto, int nch);
const char *acl_ran_kind_name(acl_ran_kind_t k); /* "?" out of range */

/* Called from whichever thread produced the sample; must be cheap. */
typedef void (*acl_prof_sink_fn)(void *user, const acl_prof_sample_t *s);

typedef struct acl_prof acl_prof_t;

/* Never fails hard: with no usable source it returns a profiler whose
 * source is "none" and which drops tags. */
acl_prof_t *acl_prof_create(const acl_config_t *cfg, acl_prof_sink_fn sink, void *user);
void acl_prof_destroy(acl_prof_t *p); /* flushes; accepts NULL */

/* Per-rank registration (rank_ctx is the plugin's object for one rank of one
 * communicator); returns an opaque per-rank profiler state. */
void *acl_prof_rank_attach(acl_prof_t *p, void *rank_ctx, uint64_t comm_id, int rank, int nranks);
void acl_prof_rank_detach(acl_prof_t *p, void *prof_rank);

/* Tuner side, on the calling thread, right after every decision (captured:
 * the call is being captured into a CUDA graph). The decision's block
 * samples 1 call in 2^sample_shift (ACL_GATE_SAMPLE_NEVER: none): the profiler turns NCCL's
 * events on for the calls that rule picks, as well as NCCL lets it
 * (profiler/gate.h), and measures the call when it carries them. */
#define ACL_GATE_SAMPLE_NEVER 15
void acl_prof_on_call(acl_prof_t *p, void *prof_rank, const acl_call_tag_t *tag,
                      uint8_t sample_shift, bool captured);

/* NCCL's event mask, from a communicator's profiler init: one int for the
 * process, which the profiler keeps from then on. online: the calls need
 * their CUDA-graph capture bit (ACL_PROF_CAPTURE_MASK). Returns what it
 * wrote there. */
int acl_prof_mask_init(acl_prof_t *p, int *mask, bool online);
/* Its communicator's profiler finalize: the mask is no longer written. */
void acl_prof_mask_release(acl_prof_t *p, int *mask);

/* The events a sampled call needs from NCCL now (profiler v5 events; the
 * plugin forwards them). */
int acl_prof_nccl_mask(const acl_prof_t *p);

/* CUDA-graph capture (README, CUDA graphs). NCCL >= 2.28 (profiler v5)
 * reports graphCaptured on a CollApi event, which collTaskAppend
 * (enqueue.cc) starts on the calling thread when the collective is
 * enqueued, before its group reaches the tuner's getCollInfo
 * (ncclPrepareTasks, at ncclGroupEnd, possibly on another thread); NCCL
 * requires every stream of one communicator within a group to be captured
 * by the same graph, or none. NCCL reads the event mask again for every
 * call (ncclProfilerStartGroupApiEvent), so the mask the plugin leaves
 * must always hold this bit. It costs one startEvent call per collective
 * (its handle is NULL, so no stop follows), and turns on no other event. */
#define ACL_PROF_CAPTURE_MASK ncclProfileCollApi
/* Whether the latest collective enqueued on this rank's communicator was
 * being captured: what its coming getCollInfo calls are. False when the
 * profiler ABI is not loaded (tuner only) or never said. */
bool acl_prof_captured(const void *prof_rank);
/* CollApi events that said captured, on this rank. */
uint64_t acl_prof_captured_events(const void *prof_rank);
ncclResult_t acl_prof_nccl_start(acl_prof_t *p, void *prof_rank, void **eHandle,
                                 ncclProfilerEventDescr_v5_t *d);
ncclResult_t acl_prof_nccl_stop(acl_prof_t *p, void *eHandle);
ncclResult_t acl_prof_nccl_state(acl_prof_t *p, void *eHandle, ncclProfilerEventState_v5_t st,
                                 ncclProfilerEventStateArgs_v5_t *args);

/* Push pending CUPTI records now (tests, finalize). */
void acl_prof_flush(acl_prof_t *p);
/* The profiler's counters: plain figures, which observe/ turns into the
 * snapshot's profiler block. Names are static strings, never NULL. */
typedef struct acl_prof_stats {
  const char *source; /* "cupti", "nccl", "sim", "none" */
  bool cupti_available;
  bool cupti_backed_off; /* another CUPTI subscriber holds it */
  uint64_t records;      /* kernel records processed */
  uint64_t records_dropped;
  uint64_t samples;              /* samples delivered to the tuner */
  uint64_t ambiguous;            /* calls not used (fused launches) */
  uint64_t stale;                /* kernels not used: overlapped an earlier one of their rank */
  uint64_t overlap_unknown;      /* CUPTI samples whose overlap is unknown (compute records lost) */
  uint64_t overlap_late;         /* CUPTI samples whose overlap came from compute records that
                                  * arrived after their own */
  double overlap_late_seconds;   /* collective time those late records showed overlapped */
  uint64_t mismatches;           /* NCCL ran something else than decided */
  double sample_latency_seconds; /* median call->sample delay, <0 unknown */
  /* CUPTI windows: "closed" | "lead" | "open" | "always"; "" when CUPTI is
   * not the source (then the rest is 0). */
  const char *cupti_window;
  uint32_t cupti_on_ms, cupti_period_ms;
  uint64_t cupti_windows;  /* windows opened */
  double cupti_on_seconds; /* time attached, closed windows */
} acl_prof_stats_t;
/* p may be NULL: source "none", latency unknown. */
void acl_prof_stats(const acl_prof_t *p, acl_prof_stats_t *out);

/* ---- Extensions (compatible additions; docs/profiler.md) ---- */
typedef struct acl_prof_opts {
  const char *cupti_lib;     /* dlopen exactly this libcupti (tests); NULL = search */
  unsigned flush_us;         /* CUPTI flush period while calls wait; 0 = 2000 us */
  unsigned on_ms, period_ms; /* window rule instead of AUTOCCL_CUPTI_WINDOW (period_ms > 0) */
  bool keep_attached;        /* close windows by disabling kinds only (GPU check) */
  /* The sampling rule (profiler/gate.h): whether call `call` of a workload
   * whose block samples 1 call in 2^shift carries NCCL's events. NULL:
   * NCCL's events stay off (CUPTI windows still sample every call). */
  bool (*rule)(uint8_t shift, uint64_t call);
} acl_prof_opts_t;
acl_prof_t *acl_prof_create_ex(const acl_config_t *cfg, acl_prof_sink_fn sink, void *user,
                               const acl_prof_opts_t *opts);

/* CUPTI (AUTOCCL_PROFILER=auto, the default) is attached in windows
 * (AUTOCCL_CUPTI_WINDOW, profiler/duty.h) and detached between them; while a
 * window is open CUPTI samples the tagged calls with their overlap, between
 * windows KernelCh events supply durations (acl_prof_nccl_mask follows). */
/* Whether CUPTI is the sample source (its duty cycle is the plugin's). */
bool acl_prof_is_cupti(const acl_prof_t *p);

typedef struct acl_prof_stats_ex {
  uint64_t tags, nccl_records, compute_records, untagged, lost, bad_clock, pending;
  uint64_t colls, colls_matched, clamped, incomplete, cupti_buffers, extcorr;
  /* this process drives two or more ranks of one communicator: no CUPTI
   * windows (acl_cupti_retire) */
  bool shared_process;
  /* a collective was captured into a CUDA graph: no CUPTI windows from then
   * on (acl_cupti_retire) */
  bool graph_captured;
} acl_prof_stats_ex_t;
void acl_prof_stats_ex(const acl_prof_t *p, acl_prof_stats_ex_t *out);

/* Compute kernels seen overlapping collectives, most frequent first (for the
 * endpoint); returns how many were written. */
int acl_prof_top_compute(const acl_prof_t *p, char (*names)[96], uint64_t *counts, int max);

#endif
