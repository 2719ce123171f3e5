/* Observability: what a process shows about itself, and every rendering of
 * it. A snapshot (the process's observable state at one instant) is filled
 * by the plugin, or a test, from the plain statistics that consensus and the
 * profiler return, and rendered as /api/v1/state, /metrics, the SSE events
 * and the job report (docs/api.md). The module's one public header; its
 * internals are in observe_int.h. Pure functions of the snapshot, no I/O. */
#ifndef ACL_OBSERVE_OBSERVE_H
#define ACL_OBSERVE_OBSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "core/types.h"

/* ---- The field table --------------------------------------------------- */

/* Every JSON key and Prometheus family, one row each in observe/fields.def:
 * ACL_KEY(STATE) is "state", acl_fields[ACL_F_BUSBW].metric the family of
 * the same figure. The code that writes or reads the documents spells no
 * key or family anywhere else (the tests do, on purpose: they pin the
 * schema users read). */
typedef enum acl_metric_type {
  ACL_MT_NONE = 0,
  ACL_MT_GAUGE,
  ACL_MT_COUNTER,
  ACL_MT_HISTOGRAM,
} acl_metric_type_t;
typedef enum acl_field {
#define ACL_FIELD(ID, OBJ, KEY, METRIC, TYPE, HELP) ACL_F_##ID,
#include "observe/fields.def"
#undef ACL_FIELD
  ACL_F_COUNT
} acl_field_t;
typedef struct acl_field_info {
  const char *key;    /* JSON key, "" when none */
  const char *metric; /* Prometheus family, "" when none */
  acl_metric_type_t type;
  const char *help;
  /* "key": and , "key": as the documents write them (one append per key) */
  const char *json, *json_next;
  unsigned json_len, json_next_len;
} acl_field_info_t;
extern const acl_field_info_t acl_fields[ACL_F_COUNT];
#define ACL_KEY(ID) (acl_fields[ACL_F_##ID].key)
/* "gauge", "counter", "histogram"; "" for ACL_MT_NONE. */
const char *acl_metric_type_name(acl_metric_type_t t);

/* ---- Snapshot ---------------------------------------------------------- */

/* A process's observable state at one instant: what /api/v1/state, /metrics,
 * the dashboard and autoccl-top show. Filled by the plugin (or a test) and
 * rendered by the functions below. Plain data; validity flags keep missing
 * values absent rather than zero. */

#define ACL_SNAPSHOT_VERSION 1
#define ACL_SNAP_MAX_COMMS 64
#define ACL_SNAP_MAX_WORKLOADS 512 /* bounds metric label cardinality */
#define ACL_SNAP_TRAJ 64
/* Duration histogram upper bounds in seconds: 1e-6 * 4^i, i = 0..ACL_HIST_N-1,
 * then +Inf (1 us .. ~268 s). */
#define ACL_HIST_N 15

typedef struct acl_snap_comm {
  uint64_t id;
  char name[64]; /* NCCL commName, or hex id when unknown */
  int rank;      /* -1 when unknown (no profiler ABI) */
  int nranks;
  int nnodes;
  char role[16];                 /* "decider" (leader host), "follower", "off" */
  double consensus_wait_seconds; /* lock + relay waits, this process */
  uint64_t blocks_published;
  uint64_t lock_acquisitions;
  uint64_t samples_busy;      /* samples dropped: the consensus lock was held */
  uint64_t workloads_refused; /* workloads the full table left on NCCL's choice */
} acl_snap_comm_t;

typedef struct acl_snap_workload {
  int comm;      /* index into comms */
  int rank;      /* rank of this process in that communicator, -1 unknown */
  uint32_t widx; /* workload index within the communicator */
  acl_wkey_t key;
  acl_phase_t phase;       /* the search's state */
  bool captured;           /* the latest call was captured into a CUDA graph:
                            * current is what the capture got, and the views
                            * show ACL_CAPTURED_NAME for the state */
  acl_candidate_t current; /* under test / applied now */
  acl_candidate_t best;
  acl_candidate_t baseline; /* NCCL's own choice (as the cost table predicts) */
  bool has_best, has_baseline;
  double baseline_seconds; /* measured, robust; valid when has_baseline */
  /* without a baseline, while a re-tune measures it again: the one before
   * (0: none); the job report's NCCL time, priced nowhere */
  double baseline_kept_seconds;
  double best_seconds;     /* valid when has_best */
  double speedup;          /* NCCL's time / the decision's; valid when has_speedup */
  bool has_speedup;
  /* speedup's interval, valid when has_speedup_ci: the decision and NCCL's
   * choice measured interleaved (docs/tuner.md), or exactly 1 for NCCL's own */
  double speedup_lo, speedup_hi;
  bool has_speedup_ci;
  double busbw; /* bytes/s, latest robust; valid when has_busbw */
  bool has_busbw;
  double overlap; /* 0..1; valid when has_overlap */
  bool has_overlap;
  /* Exposed communication (profiler/overlap.h acl_exposure): collective time
   * not overlapped by compute, estimated over all this process's calls from
   * the share measured on the calls with a known overlap. Valid when
   * has_exposed. */
  double collective_seconds; /* calls x mean sampled duration */
  double exposed_seconds;
  double exposed_share; /* 0..1 */
  bool has_exposed;
  /* Net value (acl_nv_fold below), valid when has_net: seconds the decision
   * saved against the NCCL baseline minus what exploration cost (can be < 0),
   * and that exploration cost. */
  double time_saved_seconds;
  double exploration_cost_seconds;
  bool has_net;
  uint32_t candidates_evaluated;
  uint64_t calls_to_converge; /* 0 = not converged */
  uint32_t retunes;
  int retune_cause;           /* ACL_RETUNE_* of the latest re-tune (0: none) */
  uint64_t budget_wait_calls; /* waiting for the exploration budget: about how many
                               * more calls until its next measurement is paid for
                               * (the leader host's search), 0 = not waiting */
  int budget_wait_for;        /* ACL_WAIT_FOR_*: what that wait pays for */
  double clock_offset_seconds; /* CUPTI's durations minus NCCL's KernelCh stamps,
                                * taken off CUPTI's samples (the leader host's
                                * search), 0 = none */
  uint64_t calls;            /* this process's calls of this workload */
  uint64_t captured_calls;   /* of which captured into a CUDA graph */
  uint64_t bytes;            /* nbytes summed over those calls */
  uint64_t hist[ACL_HIST_N]; /* per-bucket counts (not cumulative) */
  uint64_t dur_count;        /* samples in the histogram (>= sum of hist) */
  double dur_sum;            /* seconds */
  int source;                /* decision from: 0 NCCL's own, 1 explored, 2 table
                              * (acl_search_source_name) */
  uint64_t samples;          /* samples the search used (leader host), 0 unknown */
  int traj_len;
  acl_traj_point_t traj[ACL_SNAP_TRAJ]; /* oldest first */
} acl_snap_workload_t;

typedef struct acl_snap_profiler {
  char source[16]; /* "cupti", "nccl", "sim", "none" */
  bool cupti_available;
  bool cupti_backed_off; /* another CUPTI subscriber holds it */
  uint64_t records;      /* kernel records processed */
  uint64_t records_dropped;
  uint64_t samples;              /* samples delivered to the tuner */
  uint64_t ambiguous;            /* calls not used (fused launches) */
  uint64_t stale;                /* kernels not used: stale timestamps */
  uint64_t overlap_unknown;      /* CUPTI samples without an overlap: compute records lost */
  uint64_t overlap_late;         /* CUPTI samples whose overlap needed later compute records */
  double overlap_late_seconds;   /* collective time only those later records showed overlapped */
  uint64_t mismatches;           /* NCCL ran something else than decided */
  double sample_latency_seconds; /* median call->sample delay, <0 unknown */
  /* CUPTI windows (source "cupti"): state "closed" | "lead" | "open" |
   * "always" (AUTOCCL_PROFILER=cupti); empty when CUPTI is not the source. */
  char cupti_window[8];
  uint32_t cupti_on_ms, cupti_period_ms;
  uint64_t cupti_windows;  /* windows opened */
  double cupti_on_seconds; /* time attached, closed windows */
} acl_snap_profiler_t;

typedef struct acl_snapshot {
  int version; /* ACL_SNAPSHOT_VERSION */
  char hostname[64];
  int pid;
  int local_rank;
  char mode[8]; /* online | static | off */
  double uptime_seconds;
  acl_snap_profiler_t profiler;
  int ncomms;
  acl_snap_comm_t comms[ACL_SNAP_MAX_COMMS];
  int nworkloads;
  bool workloads_truncated; /* more existed than ACL_SNAP_MAX_WORKLOADS */
  acl_snap_workload_t workloads[ACL_SNAP_MAX_WORKLOADS];
} acl_snapshot_t;

/* The job's exposed communication, summed over this process's workloads,
 * and the tuner's net time saved beside it: the exposed time is the most
 * that any collective tuning could ever give back. */
typedef struct acl_snap_job {
  double collective_seconds, exposed_seconds, exposed_share; /* share: 0..1 */
  bool has_exposed;
  double time_saved_seconds; /* sum of the workloads' net value */
  bool has_net;
} acl_snap_job_t;
void acl_snap_job_totals(const acl_snapshot_t *s, acl_snap_job_t *out);

/* The state the views show for w: its search state's name, or
 * ACL_CAPTURED_NAME while w is captured. */
const char *acl_snap_state_name(const acl_snap_workload_t *w);
/* The views' "decided": a decision is applied and w is not shown captured
 * (a captured call runs what the capture got, not the search's state). */
bool acl_snap_decided(const acl_snap_workload_t *w);

/* The snapshot's entries from the plain statistics that the profiler
 * (profiler/profiler.h) and consensus (tuner/consensus/consensus.h) return;
 * each fill clears o first. The caller adds what only it knows (a workload's
 * comm index and call counters, a communicator's name). */
struct acl_prof_stats;
struct acl_cons_comm_stats;
struct acl_cons_wl_stats;
void acl_snap_profiler_fill(acl_snap_profiler_t *o, const struct acl_prof_stats *p);
void acl_snap_comm_fill(acl_snap_comm_t *o, const struct acl_cons_comm_stats *c);
void acl_snap_workload_fill(acl_snap_workload_t *o, const struct acl_cons_wl_stats *w);

/* Histogram bucket index for a duration (ACL_HIST_N = beyond the last bound). */
int acl_hist_bucket(double seconds);
double acl_hist_bound(int i);

/* ---- Rendering ---------------------------------------------------------- */

/* Rendering a snapshot: the /api/v1/state JSON document, the Prometheus text
 * exposition (format 0.0.4) and the SSE event payloads. Schema and metric
 * list: docs/api.md. Pure functions of the snapshot. */

void acl_render_state_json(const acl_snapshot_t *s, acl_strbuf_t *out);
void acl_render_metrics(const acl_snapshot_t *s, acl_strbuf_t *out);
/* The "profiler" object of /api/v1/state (the job report has it too). */
void acl_render_profiler_json(const acl_snap_profiler_t *p, acl_strbuf_t *out);
/* One-line JSON for an SSE "sample" or "decision" event about workload w. */
void acl_render_event_json(const acl_snapshot_t *s, const acl_snap_workload_t *w,
                           acl_strbuf_t *out);

/* /api/v1/host: this host's processes, each with its endpoint's port. */
typedef struct acl_snap_proc {
  int local_rank, pid;
  int port; /* <= 0: no endpoint known ("port": null) */
} acl_snap_proc_t;
void acl_render_host_json(const char *host, int pid, int local_rank, const acl_snap_proc_t *procs,
                          int n, acl_strbuf_t *out);

/* ---- Job report --------------------------------------------------------- */

/* The job report: "did autoccl pay for this job?", written at exit
 * (AUTOCCL_REPORT) from the same snapshot that /api/v1/state shows, so the
 * two never disagree: per workload its calls, NCCL's time, the decision and
 * where it came from, the speedup with its interval, the net time saved and
 * what exploration cost; then the totals. JSON (docs/api.md, "Job report")
 * and a text rendering of the same figures. Pure; no I/O. */

#define ACL_REPORT_VERSION 1

typedef struct acl_report_totals {
  int ranks;                /* distinct rank numbers (see acl_report_totals) */
  int workloads, converged; /* converged: on a decision (NCCL's own included) */
  uint64_t calls;
  double nccl_seconds;             /* sum of calls x NCCL's measured time */
  double net_saved_seconds;        /* sum of the workloads' net saving */
  double exploration_cost_seconds; /* >= 0 */
  double per_rank_seconds;         /* net saved / ranks: the job's wall time (every
                               * rank waits for each collective) */
  /* The same two sums over only the workloads that have both (a workload
   * re-tuning has a net saving but no NCCL time until its new baseline): the
   * share saved is priced_saved / priced_nccl, never one set over another. */
  double priced_nccl_seconds, priced_saved_seconds;
} acl_report_totals_t;

/* Totals over every workload of s. Ranks are counted per process: the
 * distinct rank numbers of the workloads (a process holding one rank of
 * several communicators is one rank). */
void acl_report_totals(const acl_snapshot_t *s, acl_report_totals_t *t);
/* The decision a workload runs: its candidate once converged (or NCCL's own
 * choice in warm-up, baseline or disabled); NULL while it is searching. */
const acl_candidate_t *acl_report_decision(const acl_snap_workload_t *w);
/* calls x NCCL's measured time; < 0 unknown (no baseline measured). */
double acl_report_nccl_seconds(const acl_snap_workload_t *w);
void acl_report_json(const acl_snapshot_t *s, acl_strbuf_t *out);
void acl_report_text(const acl_snapshot_t *s, acl_strbuf_t *out);
/* One line: "net saved +1.234 s of 56.7 s NCCL time (2.2 %), exploration
 * cost 0.12 s, 4 ranks" (no newline). */
void acl_report_totals_line(const acl_report_totals_t *t, acl_strbuf_t *out);

/* ---- Net value ---------------------------------------------------------- */

/* Net value of tuning: does the tuner pay for itself?
 *
 * Per workload, two running figures against the measured NCCL baseline b
 * (the search's robust duration of NCCL's own choice):
 *   exploration cost = sum over the calls that ran a candidate while
 *                      exploring or re-tuning (validation included) of
 *                      (d - b), d their measured durations: what trying
 *                      candidates cost. Only some calls carry profiler
 *                      events (the search samples 1 in 2^k), so the sampled
 *                      ones are priced, per fold, at their mean and scaled
 *                      to the calls made. A fold whose candidates ran
 *                      faster than b adds its gain to the saving instead:
 *                      the cost is never negative;
 *   gross saving     = calls that ran the converged decision x (b - best),
 *                      best the decision's duration as its speedup states
 *                      (b / speedup, so it agrees with the speedup shown
 *                      beside it), plus the gains of exploration above;
 *   net saved        = gross saving - exploration cost (negative while the
 *                      tuner has not earned back its exploration).
 * Calls that ran NCCL's own choice (warm-up, baseline, a kept NCCL choice,
 * unsampled refills) count zero: they are the baseline.
 *
 * The plugin keeps monotonic per-class totals (calls made, sampled calls and
 * their summed seconds) and folds what is new since the last fold at the
 * baseline and best known at that moment: a baseline re-measured by a
 * re-tune prices only later calls. Pure arithmetic, no locking: the caller
 * serialises folds. */

typedef enum acl_nv_class {
  ACL_NV_FREE = 0,    /* NCCL's own choice ran (warm-up, baseline): counts zero */
  ACL_NV_EXPLORE = 1, /* exploring, re-tuning, the baseline's look-ahead */
  ACL_NV_DECIDED = 2, /* the converged decision ran */
} acl_nv_class_t;

/* Which total a call made in phase ph belongs to; nccl_choice: it ran
 * NCCL's own choice (candidate algo ACL_ALGO_NCCL). */
acl_nv_class_t acl_nv_class(acl_phase_t ph, bool nccl_choice);

typedef struct acl_netvalue {
  /* Totals already priced (monotonic copies of the plugin's counters). */
  uint64_t seen_explore_calls, seen_explore_sampled, seen_decided_calls;
  double seen_explore_seconds;
  /* Priced so far. */
  double cost_seconds;  /* exploration cost, seconds, >= 0 */
  double saved_seconds; /* gross saving of the decision, seconds */
  bool priced;          /* at least one fold had a baseline */
} acl_netvalue_t;

/* Prices the calls added to the totals since the last fold: explore_calls
 * exploration calls made, of which explore_sampled were measured, taking
 * explore_seconds in all; decided_calls calls of the decision made. The new
 * exploration calls are priced at the mean of the new sampled ones; new
 * exploration calls without a new sample wait for one. Without a baseline
 * (has_baseline false or b not > 0) nothing is priced and the calls wait for
 * the next fold. Without a best (or best not > 0) decided calls count zero.
 * Totals that went backwards (a reset) are taken as new. */
void acl_nv_fold(acl_netvalue_t *nv, uint64_t explore_calls, uint64_t explore_sampled,
                 double explore_seconds, uint64_t decided_calls, bool has_baseline,
                 double baseline_seconds, bool has_best, double best_seconds);

/* saved - cost; 0 before anything was priced. */
double acl_nv_net(const acl_netvalue_t *nv);

#endif
