/* Overlap arithmetic, pure: how much of a collective's GPU time other
 * (compute) kernels ran on the same device. Intervals are half-open
 * [start, end) in ns; anything with end <= start is empty and ignored. */
#ifndef ACL_PROFILER_OVERLAP_H
#define ACL_PROFILER_OVERLAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct acl_ival {
  uint64_t start, end;
} acl_ival_t;

/* Sorts and merges iv in place (empty intervals dropped); returns the new
 * count. The result is disjoint and sorted by start. */
size_t acl_prof_ival_merge(acl_ival_t *iv, size_t n);

/* ns of [s, e) covered by merged (output of acl_prof_ival_merge). */
uint64_t acl_prof_ival_covered(const acl_ival_t *merged, size_t n, uint64_t s, uint64_t e);

/* Fraction of [s, e) covered by the union of iv (need not be merged; iv is
 * reordered). 0 for an empty [s, e); -1 when e < s (bad clock). */
double acl_prof_overlap_frac(acl_ival_t *iv, size_t n, uint64_t s, uint64_t e);

/* Exposed communication: ns of the collective [s, e) that no compute kernel
 * covers (iv: compute kernels of any stream, clipped to [s, e); reordered).
 * 0 for an empty or reversed [s, e). */
uint64_t acl_prof_exposed_ns(acl_ival_t *iv, size_t n, uint64_t s, uint64_t e);

/* A workload's exposed time over all its calls, from what was sampled:
 * durations (dur_count samples summing dur_sum s) give the mean collective
 * time, the samples with a known overlap (known_coll s, of which known_exposed
 * s exposed) give the exposed share. false (outputs 0) until both exist. */
typedef struct acl_exposure {
  double collective_seconds, exposed_seconds, share;
} acl_exposure_t;
bool acl_exposure_estimate(uint64_t calls, uint64_t dur_count, double dur_sum, double known_coll,
                           double known_exposed, acl_exposure_t *out);

/* The samples a workload's exposed share is read from, by what ran: NCCL's
 * choice, the search's decision, or a candidate tried while exploring. The
 * tried ones often run slower, so more of them sticks out of the compute
 * they overlap: a whole-run share would say less overlap than the job has;
 * and once a decision runs, NCCL's choice (slower where the decision earns)
 * is no longer what the job runs either. */
enum { ACL_OV_NCCL = 0, ACL_OV_DECIDED = 1, ACL_OV_TRIED = 2, ACL_OV_N = 3 };
/* The collective and exposed seconds to read the share from: the
 * decision's once it has time, else NCCL's choice's, else every sample. */
void acl_exposure_pick(const double coll[ACL_OV_N], const double exposed[ACL_OV_N], double *c,
                       double *e);

/* Monotonic totals for counters: the calls made since the last fold are
 * priced at the current estimate (mean duration x share), so the totals
 * never go down when the share moves. */
typedef struct acl_exposure_acc {
  uint64_t calls;
  double collective_seconds, exposed_seconds;
} acl_exposure_acc_t;
/* false (acc unchanged) while no estimate exists. */
bool acl_exposure_fold(acl_exposure_acc_t *acc, uint64_t calls, uint64_t dur_count, double dur_sum,
                       double known_coll, double known_exposed);

/* The recent kernels of one NCCL rank. A rank's kernels run one after
 * another (NCCL orders a communicator's launches), so a measured kernel that
 * overlaps an earlier one of its rank by more than ACL_KRING_TOL_NS carries
 * a stale timestamp or belongs to another call. On one H200 (NCCL 2.30, two
 * ranks) 10-25 % of a benchmark's samples were such: one kernel's stamps
 * handed to calls 64 apart (NCCL keeps 64 stamps per channel), and starts
 * 63 ms before their ends (docs/profiler.md, "Stale stamps"). */
#define ACL_KRING_CAP 256
#define ACL_KRING_TOL_NS 2000ull /* timestamp granularity, an early-launched successor */
typedef struct acl_kring {
  uint64_t start[ACL_KRING_CAP], end[ACL_KRING_CAP];
  uint64_t n; /* kernels added so far; the ring keeps the last CAP */
} acl_kring_t;
/* Whether [start, end) overlaps a kept kernel; it is kept either way (its
 * end is usually right even when its start is stale). Order-free: samples
 * may arrive in any order. */
bool acl_kring_overlaps(acl_kring_t *r, uint64_t start, uint64_t end);

/* A per-device window of recent compute kernels (a bounded ring) from which
 * the compute kernels overlapping a collective are picked. CUPTI hands a
 * window's records over in one buffer, in completion order, and the
 * collectives are resolved after every compute kernel of that buffer went
 * in: a DDP step on one H200 ran some 600 compute kernels per rank, and a
 * window covers up to three steps. */
#define ACL_CWIN_CAP 4096
typedef struct acl_cwin_rec {
  uint64_t start, end;
  uint32_t name_id; /* interned name (acl_prof_names), UINT32_MAX unknown */
} acl_cwin_rec_t;

typedef struct acl_cwin {
  acl_cwin_rec_t rec[ACL_CWIN_CAP];
  uint64_t head;         /* records pushed so far; the ring keeps the last CAP */
  uint64_t evicted_end;  /* the latest end among kernels the ring dropped */
  uint64_t max_end;      /* the latest end pushed: a collective ending before it is settled */
} acl_cwin_t;

void acl_cwin_push(acl_cwin_t *w, uint64_t start, uint64_t end, uint32_t name_id);

typedef struct acl_overlap_res {
  double frac;       /* 0..1; -1 when the collective's clock is bad or the
                      * window lost kernels that may overlap it */
  bool truncated;    /* a kernel the ring dropped ended after the start */
  uint32_t kernels;  /* compute kernels intersecting the collective */
  uint32_t distinct; /* distinct names among them */
  uint32_t names[8]; /* up to 8 distinct name ids, by covered time */
  uint32_t nnames;
} acl_overlap_res_t;

/* Overlap of the collective [s, e) with the window's kernels. Unknown
 * (frac -1, truncated) where a dropped kernel ended after s: it may have
 * overlapped, and an overlap without it would read low. */
void acl_cwin_overlap(const acl_cwin_t *w, uint64_t s, uint64_t e, acl_overlap_res_t *out);

#endif
