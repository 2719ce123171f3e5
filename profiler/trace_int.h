/* Private to the trace recorder (profiler/trace.c, profiler/trace_fmt.c):
 * the record a producer copies into the ring and the writer formats. */
#ifndef ACL_PROFILER_TRACE_INT_H
#define ACL_PROFILER_TRACE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/trace.h"

enum { REC_SAMPLE = 1, REC_DECISION = 2 };

typedef struct rec {
  uint8_t type, coll, source, phase;
  int32_t rank, nranks, pipe_ops;
  uint32_t widx;
  uint16_t cand_id, kernels;
  acl_candidate_t cand;
  int8_t ran_algo, ran_proto;
  int16_t ran_nch;
  float overlap;
  uint64_t comm, nbytes, call_idx, call_ns, gpu_start, gpu_stop, emit_ns;
  double seconds, used, host; /* host: 0 unknown */
} rec_t;

/* One JSON line for r into b (snprintf's contract: the length it wanted). */
int acl_trace_fmt_rec(const rec_t *r, char *b, size_t n);

#endif
