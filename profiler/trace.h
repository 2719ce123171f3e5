/* The trace recorder (AUTOCCL_TRACE): every sample as the tuner receives it
 * and every decision it changes, written as versioned JSON lines
 * (docs/trace.md) by a writer thread, off the hot path.
 *
 * Producers (getCollInfo threads, NCCL's proxy thread, the CUPTI flush
 * thread) copy a fixed-size record into a ring under a short lock and return;
 * a full ring drops the record and counts it. The writer drains the ring
 * every few ms, formats and writes (gzip when the path ends in ".gz" and
 * zlib was found at build time), and stops writing a file once it holds
 * AUTOCCL_TRACE_MAX bytes of text. One process-wide recorder: the plugin
 * starts it with its first communicator and stops it with its last. */
#ifndef ACL_PROFILER_TRACE_H
#define ACL_PROFILER_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "profiler/profiler.h"

#define ACL_TRACE_FORMAT "autoccl-trace"
#define ACL_TRACE_VERSION 1
#define ACL_TRACE_MAX_DEFAULT ACL_CONFIG_TRACE_MAX_DEFAULT /* bytes of text per file */
#define ACL_TRACE_RING 16384                               /* records */
#define ACL_TRACE_MAX_FILES 64                             /* distinct files (%r: ranks) */
/* How long finalize waits for the writer to drain and close: a share of
 * the finalize bound (docs/trace.md, 2 s in all). */
#define ACL_TRACE_STOP_MS 500
#define ACL_TRACE_FLUSH_MS                                                                         \
  20 /* writer period: the ring (ACL_TRACE_RING records) holds 20 ms
                               * of up to 800,000 samples/s, and it drains at once when a
                               * quarter full */

typedef struct acl_trace_opts {
  const char *path;   /* template: %p pid, %r rank (-1: "x"), %% '%'; NULL: AUTOCCL_TRACE */
  uint64_t max_bytes; /* per file; 0: AUTOCCL_TRACE_MAX, else ACL_TRACE_MAX_DEFAULT */
  unsigned flush_ms;  /* writer period; 0 = ACL_TRACE_FLUSH_MS */
  const char *mode, *profiler; /* written in the header (may be NULL) */
} acl_trace_opts_t;

typedef struct acl_trace_stats {
  uint64_t samples, decisions; /* records accepted into the ring */
  uint64_t dropped_ring;       /* ring full */
  uint64_t dropped_max;        /* written past AUTOCCL_TRACE_MAX: not written */
  uint64_t bytes;              /* text written, all files */
  int files, errors;
} acl_trace_stats_t;

/* Process-wide recorder, reference-counted (opts may be NULL); with no
 * path (opts nor AUTOCCL_TRACE) it records nothing. stop
 * drops a reference; the last one drains the ring, writes each file's end
 * line and closes them. Both take a short lock; never call from a sink. */
void acl_trace_start(const acl_trace_opts_t *opts);
void acl_trace_stop(void);
bool acl_trace_on(void); /* one relaxed load */

/* A sample as the tuner receives it; used_seconds is the duration handed to
 * the search (the sample's own seconds unless the plugin substitutes).
 * Cheap, never blocks on I/O, safe from any thread. */
void acl_trace_sample(uint64_t comm_id, int rank, int nranks, const acl_prof_sample_t *s,
                      double used_seconds);

/* A decision of getCollInfo: written when (cand_id, phase) of the rank's
 * workload differs from the last one written for it (first call included). */
typedef struct acl_trace_dec {
  uint64_t comm_id, nbytes, call_idx;
  int rank, nranks, pipe_ops;
  uint32_t widx;
  uint16_t cand_id;
  uint8_t coll, phase;
  acl_candidate_t cand;
} acl_trace_dec_t;
void acl_trace_decision(const acl_trace_dec_t *d);

void acl_trace_stats(acl_trace_stats_t *out);

/* "%p" -> pid, "%r" -> rank ("x" when < 0), "%%" -> "%". 0, or -1 when
 * the result does not fit. Pure (tests). */
int acl_trace_expand(const char *tmpl, int pid, int rank, char *out, size_t len);

#endif
