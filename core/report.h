/* The job report: "did autoccl pay for this job?", written at exit
 * (AUTOCCL_REPORT) from the same snapshot that /api/v1/state shows, so the
 * two never disagree: per workload its calls, NCCL's time, the decision and
 * where it came from, the speedup with its interval, the net time saved and
 * what exploration cost; then the totals. JSON (docs/api.md, "Job report")
 * and a text rendering of the same figures. Pure; no I/O. */
#ifndef ACL_CORE_REPORT_H
#define ACL_CORE_REPORT_H

#include <stdint.h>

#include "core/snapshot.h"
#include "core/strbuf.h"

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

#endif
