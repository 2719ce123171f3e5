/* Pure types shared by every module: collectives, candidates, workload keys,
 * samples and tuning phases. No vendor dependency. */
#ifndef ACL_CORE_TYPES_H
#define ACL_CORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACL_NUM_COLL 5  /* Broadcast, Reduce, AllGather, ReduceScatter, AllReduce */
#define ACL_NUM_ALGO 7  /* same indices as NCCL */
#define ACL_NUM_PROTO 3 /* same indices as NCCL */
#define ACL_NUM_AP (ACL_NUM_ALGO * ACL_NUM_PROTO)
#define ACL_AP_BIT(a, p) (1u << ((a)*ACL_NUM_PROTO + (p)))

/* What to run for one call. algo == ACL_ALGO_NCCL means "NCCL's own choice":
 * the cost table and nChannels are left untouched (the baseline). */
#define ACL_ALGO_NCCL (-1)
typedef struct acl_candidate {
  int8_t algo;
  int8_t proto;
  int16_t nchannels; /* 0 = NCCL decides */
  /* Chunk size as NCCL's own for the call times 2^chunk_log2 (tuner v6,
   * NCCL 2.30's getChunkSize); 0 = NCCL decides, always 0 before v6. A
   * scale rather than bytes: NCCL's own chunk size differs by protocol,
   * channel count and size, and a scale means the same on every rank and
   * at every size a table rule covers. */
  int32_t chunk_log2;
} acl_candidate_t;

/* Scales a candidate or table may hold (the search uses part of it). */
#define ACL_CHUNK_LOG2_MIN (-8)
#define ACL_CHUNK_LOG2_MAX 8
/* A smaller chunk is never made below 4 KiB, above every protocol's grain
 * (NCCL 2.30 device.h: LL 16, LL128 1920, Simple 512 bytes), which NCCL
 * rounds down to: a zero chunk would stall the collective. */
#define ACL_CHUNK_FLOOR_BYTES 4096u
/* A larger one never above 1 GiB (NCCL clamps to its buffer far below). */
#define ACL_CHUNK_CEIL_BYTES (1u << 30)
bool acl_chunk_log2_valid(long v);
/* NCCL's chunk size nccl scaled by 2^log2 within the limits above (a
 * chunk NCCL made smaller than the floor is left as it is). */
size_t acl_chunk_scaled(size_t nccl, int log2);
/* "x1/4", "x2", "nccl" (0) into buf; returns buf. */
char *acl_chunk_str(int log2, char *buf, size_t len);
/* Parses what acl_chunk_str writes (and "x1", "1/4", "4"); -1 on error. */
int acl_chunk_parse(const char *s, int *log2);

/* A workload: the calls that are the same call on every rank. Never keyed on
 * regBuff (it can differ between ranks). */
typedef struct acl_wkey {
  uint64_t comm_id;
  uint64_t nbytes;
  int32_t num_pipe_ops;
  uint8_t coll;
  uint8_t pad[3];
} acl_wkey_t;

typedef enum acl_phase {
  ACL_PHASE_WARMUP = 0,       /* samples dropped, NCCL's choice runs */
  ACL_PHASE_BASELINE = 1,     /* NCCL's choice measured */
  ACL_PHASE_EXPLORING = 2,    /* candidates under test */
  ACL_PHASE_CONVERGED = 3,    /* decision applied, validation over (settled) */
  ACL_PHASE_RETUNING = 4,     /* drift detected, measuring again */
  ACL_PHASE_DISABLED = 5,     /* mode off or fallback to NCCL after a failure */
  ACL_PHASE_WAIT_BUDGET = 6,  /* measuring waits for the exploration budget */
  ACL_PHASE_WAIT_SAMPLES = 7, /* measuring waits for late samples */
  ACL_PHASE_VALIDATING = 8,   /* a new decision runs against NCCL's choice */
  ACL_PHASE_REFINING = 9,     /* a challenger runs against the proven decision */
  ACL_PHASE_PAUSED = 10,      /* validating or refining waits for the budget */
  ACL_PHASE_COUNT
} acl_phase_t;

/* Not a state: what the views show in a workload's state's place when its
 * latest call was captured into a CUDA graph (NCCL's profiler said so; the
 * snapshot's flag acl_snap_workload_t.captured). Its replays never reach
 * the tuner and run what the capture got, the proven decision or NCCL's
 * choice, while the search keeps its own state for the calls that still
 * come uncaptured. The one spelling of it in every view. */
#define ACL_CAPTURED_NAME "captured"

/* One point of a workload's search trajectory (what the endpoint charts). */
typedef struct acl_traj_point {
  uint32_t step; /* exploration step, from 0 */
  uint16_t cand_id;
  uint16_t pad;
  acl_candidate_t cand;
  float busbw;   /* bytes/s, robust statistic of the candidate's samples */
  float overlap; /* mean overlap of those samples, 0..1 (<0 unknown) */
} acl_traj_point_t;

const char *acl_coll_name(int coll);   /* "AllReduce" ... or "?" */
const char *acl_coll_short(int coll);  /* "all_reduce" ... (metric labels) */
const char *acl_algo_name(int algo);   /* "RING" ...; "NCCL" for ACL_ALGO_NCCL */
const char *acl_proto_name(int proto); /* "SIMPLE" ... */
/* "warmup", "exploring", "waiting-budget", ...: the one name table of the
 * states. */
const char *acl_phase_name(acl_phase_t ph);
/* A decision is applied (converged, validating, refining, paused). */
bool acl_phase_decided(acl_phase_t ph);
int acl_phase_parse(const char *s); /* a name above -> acl_phase_t; -1 when unknown */
/* Where a workload's decision comes from (snapshot "source"): 0 NCCL's own
 * choice, 1 this run's exploration, 2 a tuning table (warm start). */
#define ACL_NUM_SOURCES 3
const char *acl_source_name(int src); /* "nccl", "explored", "table"; "nccl" otherwise */
/* What set off a workload's latest re-tune (snapshot "retune_cause"): its
 * decision ran slower (drift), the overlap with compute moved (a new
 * interference regime), or a table's decision lost to NCCL's own choice. */
#define ACL_RETUNE_NONE 0
#define ACL_RETUNE_SLOWER 1
#define ACL_RETUNE_OVERLAP 2
#define ACL_RETUNE_TABLE 3
#define ACL_NUM_RETUNE_CAUSES 4
const char *acl_retune_cause_name(int cause); /* "slower", "overlap", "table"; NULL for none */
/* What a workload waiting for its exploration budget waits to pay (snapshot
 * "budget_wait_for"): its communicator's first profiler events (once, the
 * dearest: with NCCL 2.30 they held each process 25-37 ms), its baseline's
 * samples of NCCL's choice, the next candidate's first look, more samples
 * of the best candidate before it becomes the decision, or validation's
 * next block. The wait's length alone did not tell a user which. */
#define ACL_WAIT_FOR_NONE 0
#define ACL_WAIT_FOR_FIRST_EVENTS 1
#define ACL_WAIT_FOR_BASELINE 2
#define ACL_WAIT_FOR_CANDIDATE 3
#define ACL_WAIT_FOR_CONFIRM 4
#define ACL_WAIT_FOR_VALIDATION 5
#define ACL_NUM_WAIT_FOR 6
/* "first-events", "baseline", "candidate", "confirm", "validation"; NULL for none */
const char *acl_wait_for_name(int why);
/* The one spelling of a search that ended on NCCL's own choice after trying
 * candidates, in the job report, autoccl-top and the dashboard (web/assets/
 * app.js writes the same): "NCCL, 29 tried". */
#define ACL_KEPT_NCCL_FMT "NCCL, %lld tried"
const char *acl_kept_nccl_str(long long tried, char *buf, size_t len);
/* Parse NCCL's spellings ("AllReduce", "Ring"/"RING", "Simple"/"SIMPLE");
 * -1 when unknown. Case-insensitive. */
int acl_coll_parse(const char *s);
int acl_algo_parse(const char *s);
int acl_proto_parse(const char *s);

bool acl_candidate_eq(const acl_candidate_t *a, const acl_candidate_t *b);
/* "RING/SIMPLE/16ch", "NCCL default" ... into buf; returns buf. */
char *acl_candidate_str(const acl_candidate_t *c, char *buf, size_t len);

/* nccl-tests' bus-bandwidth factor: AllReduce 2(n-1)/n, AllGather and
 * ReduceScatter (n-1)/n on the whole buffer, Broadcast/Reduce 1. */
double acl_busbw_factor(int coll, int nranks);

#endif
