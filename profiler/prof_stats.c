/* The profiler's counters as the endpoint and the job report show them. */
#include <stdlib.h>
#include <string.h>

#include "profiler/prof_int.h"

static const char *const src_names[] = {"none", "cupti", "nccl", "sim"};

static int dbl_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void acl_prof_stats(const acl_prof_t *p, acl_prof_stats_t *out)
{
  memset(out, 0, sizeof(*out));
  out->sample_latency_seconds = -1.0;
  out->cupti_window = "";
  if (!p) {
    out->source = "none";
    return;
  }
  int src = atomic_load(&p->source);
  if (src == SRC_CUPTI && p->cupti &&
      (acl_cupti_backed_off(p->cupti) || acl_cupti_unavailable(p->cupti)))
    src = SRC_NCCL;
  out->source = src_names[src];
  out->cupti_available = p->cupti_available && !acl_cupti_unavailable(p->cupti);
  out->cupti_backed_off = acl_cupti_backed_off(p->cupti);
  if (src == SRC_CUPTI) {
    acl_cupti_win_t w;
    acl_cupti_window_stats(p->cupti, &w);
    out->cupti_window = acl_duty_state_name(w.state);
    out->cupti_on_ms = w.on_ms;
    out->cupti_period_ms = w.period_ms;
    out->cupti_windows = w.windows;
    out->cupti_on_seconds = w.on_seconds;
  }
  acl_attr_stats_t as;
  acl_ev_stats_t es;
  acl_attr_stats(p->attr, &as);
  acl_ncclev_stats(p->ev, &es);
  out->records = as.records + es.kch;
  out->records_dropped = as.ring_dropped + es.pool_exhausted;
  out->samples = atomic_load(&p->samples);
  out->ambiguous = as.ambiguous;
  out->stale = as.overlapped + es.overlapped;
  out->overlap_unknown = as.ov_truncated;
  out->overlap_late = as.ov_late;
  out->overlap_late_seconds = (double)as.ov_late_ns * 1e-9;
  out->mismatches = es.mismatches;
  uint64_t nl = atomic_load_explicit(&p->nlat, memory_order_relaxed);
  size_t n = nl < LAT_N ? (size_t)nl : LAT_N;
  double tmp[LAT_N];
  for (size_t i = 0; i < n; i++)
    tmp[i] = (double)atomic_load_explicit(&p->lat_ns[i], memory_order_relaxed) * 1e-9;
  if (n > 0) {
    qsort(tmp, n, sizeof(double), dbl_cmp);
    out->sample_latency_seconds = n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
  }
}

void acl_prof_stats_ex(const acl_prof_t *p, acl_prof_stats_ex_t *out)
{
  memset(out, 0, sizeof(*out));
  if (!p)
    return;
  acl_attr_stats_t as;
  acl_ev_stats_t es;
  acl_attr_stats(p->attr, &as);
  acl_ncclev_stats(p->ev, &es);
  out->tags = as.tags;
  out->nccl_records = as.nccl_records;
  out->compute_records = as.compute_records;
  out->untagged = as.untagged;
  out->lost = as.lost + es.fifo_dropped;
  out->bad_clock = as.bad_clock + es.bad_clock;
  out->pending = as.pending;
  out->colls = es.colls;
  out->colls_matched = es.colls_matched;
  out->clamped = es.clamped;
  out->incomplete = es.incomplete;
  out->cupti_buffers = acl_cupti_buffers(p->cupti);
  out->extcorr = as.extcorr;
  out->shared_process = atomic_load(&p->shared_process);
  out->graph_captured = atomic_load(&p->graph_captured);
}

int acl_prof_top_compute(const acl_prof_t *p, char (*names)[96], uint64_t *counts, int max)
{
  return p ? acl_attr_top_names(p->attr, names, counts, max) : 0;
}
