/* Attribution of NCCL kernel records to tuned calls, pure logic (no CUPTI):
 * fed with tags (at getCollInfo), external-correlation records and kernel
 * records, it emits one sample per call it can attribute exactly.
 *
 * Scheme (docs/profiler.md): every tag gets a fresh external id
 * ext = (thread slot, seq) that stays pushed on the calling thread until that
 * thread's next tag. NCCL launches the kernels of a group later in
 * ncclGroupEnd on the same thread, so a kernel carries the id of the LAST tag
 * before its launch. External-correlation records (one per launch API call)
 * mark which ids saw a launch; the window of a kernel with id (t, s) is the
 * tags of thread t with seq in (previous marked seq, s]. One tag in the
 * window: the first NCCL kernel launched under it is its kernel. Several
 * tags (a group): split by device (learned per rank from earlier exact
 * matches); a device with more than one tag is ambiguous (NCCL may fuse). */
#ifndef ACL_PROFILER_ATTRIB_H
#define ACL_PROFILER_ATTRIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/overlap.h"
#include "profiler/profiler.h"

#define ACL_ATTR_SLOTS 64      /* threads that may tag */
#define ACL_ATTR_TAGCAP 512    /* pending tags per thread */
#define ACL_ATTR_MARKCAP 256   /* launch marks kept per thread */
#define ACL_ATTR_CORRCAP 16384 /* correlation id -> external id, direct mapped */
#define ACL_ATTR_KQ 1024       /* NCCL kernel records awaiting attribution */
#define ACL_ATTR_DEVS 16
#define ACL_ATTR_NAMES 256
#define ACL_ATTR_NAMELEN 96
#define ACL_ATTR_MAX_WINDOW 64             /* tags in one window beyond which all are ambiguous */
#define ACL_ATTR_TAG_TTL_NS 10000000000ull /* unresolved tags expire after 10 s */
/* The longest an NCCL kernel waits for a compute record that ends after it
 * (a training step's kernels are far shorter; a benchmark without compute
 * pays it once per sample, off NCCL's thread). */
#define ACL_ATTR_HOLD_NS 20000000ull

typedef struct acl_krec {
  uint64_t start, end; /* GPU ns */
  uint32_t device, stream, corr;
  const char *name; /* copied if kept */
} acl_krec_t;

typedef struct acl_attr_sample {
  acl_call_tag_t tag;
  void *user;          /* what acl_attr_tag was given (per-rank state) */
  uint64_t call_ns;    /* host CLOCK_MONOTONIC at the tag */
  uint64_t start, end; /* GPU ns of the kernel */
  uint32_t device;
  acl_overlap_res_t ov;
} acl_attr_sample_t;

typedef struct acl_attr_stats {
  uint64_t tags, records, nccl_records, compute_records, extcorr;
  uint64_t samples, ambiguous, untagged, lost, bad_clock, ring_dropped;
  uint64_t overlapped; /* kernels that overlapped an earlier one of their rank */
  uint64_t ov_truncated; /* samples whose overlap is unknown: compute records lost */
  uint64_t held;         /* NCCL kernels held for a compute record ending after them */
  uint64_t ov_late;      /* samples whose overlap grew by holding (late compute records) */
  uint64_t ov_late_ns;   /* collective ns found overlapped only by those late records */
  uint64_t pending; /* tags not resolved yet */
} acl_attr_stats_t;

typedef struct acl_attr acl_attr_t;

acl_attr_t *acl_attr_create(void);
void acl_attr_destroy(acl_attr_t *a);

/* 0 when the slot is out of range. Thread-safe (all functions are). */
uint64_t acl_attr_tag(acl_attr_t *a, unsigned slot, const acl_call_tag_t *tag, void *user,
                      uint64_t host_ns);
void acl_attr_extcorr(acl_attr_t *a, uint32_t corr, uint64_t ext);
void acl_attr_kernel(acl_attr_t *a, const acl_krec_t *k);
/* Resolves what can be resolved: NCCL records are held at least one round,
 * and until a compute record ending after them arrived on their device or
 * ACL_ATTR_HOLD_NS passed (now_ns; so compute records delivered after them
 * still count for overlap), unless final.
 * Writes up to max samples (max >= ACL_ATTR_MAX_WINDOW to make progress);
 * returns how many. *more (may be NULL) says the out buffer filled before
 * the round ended: call again, the round is not over. */
size_t acl_attr_process(acl_attr_t *a, bool final, uint64_t now_ns, acl_attr_sample_t *out,
                        size_t max, bool *more);
void acl_attr_stats(acl_attr_t *a, acl_attr_stats_t *st);
uint64_t acl_attr_pending(acl_attr_t *a); /* lock-free read */
/* Account records the producer could not store (CUPTI's dropped count). */
void acl_attr_add_dropped(acl_attr_t *a, uint64_t n);
/* The top compute kernels by overlapping occurrences: fills names/counts,
 * returns how many. */
int acl_attr_top_names(acl_attr_t *a, char (*names)[ACL_ATTR_NAMELEN], uint64_t *counts, int max);

bool acl_attr_is_nccl_kernel(const char *name);
static inline uint64_t acl_attr_ext(unsigned slot, uint64_t seq)
{
  return ((uint64_t)(slot + 1) << 48) | (seq & 0xffffffffffffull);
}

#endif
