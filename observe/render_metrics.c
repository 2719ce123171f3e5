/* Prometheus text exposition format 0.0.4 of a snapshot (metric list:
 * docs/api.md). Every family is written whole (HELP, TYPE, then all its
 * samples), only when it has samples; unknown values are omitted. Label
 * cardinality is bounded by ACL_SNAP_MAX_WORKLOADS and ACL_SNAP_MAX_COMMS. */
#include "observe/observe.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe/observe_int.h"

#ifndef ACL_VERSION
#define ACL_VERSION "unknown"
#endif

typedef struct mctx {
  const acl_snapshot_t *s;
  acl_strbuf_t *out;
  int nc, nw;
  acl_strbuf_t labels;                      /* escaped label sets, NUL-separated */
  size_t comm_lbl[ACL_SNAP_MAX_COMMS];      /* offsets: comm="..",rank=".." */
  size_t comm_only_len[ACL_SNAP_MAX_COMMS]; /* length of the comm=".." part */
  size_t wl_lbl[ACL_SNAP_MAX_WORKLOADS];    /* offsets: full workload labels */
  bool skip[ACL_SNAP_MAX_WORKLOADS];        /* duplicate label set: not rendered */
  const char *family;                       /* header written for this family */
  char le[ACL_HIST_N][24];                  /* bucket bounds, formatted once */
} mctx_t;

static const char *lbl(const mctx_t *m, size_t off) { return m->labels.data + off; }

/* The family of row ID of observe/fields.def. */
#define MET(ID) (acl_fields[ACL_F_##ID].metric)

/* Writes "# HELP" and "# TYPE" of field f's family once, before its first
 * sample. */
static void head(mctx_t *m, acl_field_t f)
{
  const acl_field_info_t *fi = &acl_fields[f];
  if (m->family == fi->metric)
    return;
  m->family = fi->metric;
  const char *type = acl_metric_type_name(fi->type);
  acl_sb_printf(m->out, "# HELP %s %s\n# TYPE %s %s\n", fi->metric, fi->help, fi->metric, type);
}

/* name{labels}<suffix> — appends only: this is the hot path of a scrape. */
static void series(mctx_t *m, const char *name, const char *labels, const char *suffix)
{
  acl_sb_puts(m->out, name);
  acl_sb_append(m->out, "{", 1);
  acl_sb_puts(m->out, labels);
  acl_sb_puts(m->out, suffix);
}

static void sample_u64(mctx_t *m, const char *name, const char *labels, uint64_t v)
{
  series(m, name, labels, "} ");
  acl_render_u64(m->out, v);
  acl_sb_append(m->out, "\n", 1);
}

static void sample_f(mctx_t *m, const char *name, const char *labels, double v)
{
  series(m, name, labels, "} ");
  acl_render_prom_float(m->out, v);
  acl_sb_append(m->out, "\n", 1);
}

static void sample_plain(mctx_t *m, const char *name, double v)
{
  acl_sb_printf(m->out, "%s ", name);
  acl_render_prom_float(m->out, v);
  acl_sb_puts(m->out, "\n");
}

static void put_rank_label(acl_strbuf_t *sb, int rank)
{
  if (rank >= 0)
    acl_sb_printf(sb, ",rank=\"%d\"", rank);
  else
    acl_sb_puts(sb, ",rank=\"unknown\"");
}

/* Comm label: the name when unique and non-empty, else name/hex id. */
static void build_comm_labels(mctx_t *m)
{
  const acl_snapshot_t *s = m->s;
  for (int i = 0; i < m->nc; i++) {
    const acl_snap_comm_t *c = &s->comms[i];
    size_t nlen = strnlen(c->name, sizeof(c->name));
    bool unique = nlen > 0;
    for (int j = 0; unique && j < m->nc; j++)
      if (j != i && s->comms[j].id != c->id && strnlen(s->comms[j].name, sizeof(c->name)) == nlen &&
          memcmp(s->comms[j].name, c->name, nlen) == 0)
        unique = false;
    char hex[24];
    acl_render_comm_hex(c->id, hex, sizeof(hex));
    m->comm_lbl[i] = m->labels.len;
    acl_sb_puts(&m->labels, "comm=\"");
    if (nlen) {
      acl_render_prom_label(&m->labels, c->name, sizeof(c->name));
      if (!unique)
        acl_sb_puts(&m->labels, "/");
    }
    if (!unique)
      acl_sb_puts(&m->labels, hex);
    acl_sb_puts(&m->labels, "\"");
    m->comm_only_len[i] = m->labels.len - m->comm_lbl[i];
    put_rank_label(&m->labels, c->rank);
    acl_sb_append(&m->labels, "", 1); /* keep the NUL as a separator */
  }
}

static int cmp_wl(const void *a, const void *b, void *user)
{
  const mctx_t *m = user;
  int ia = *(const int *)a, ib = *(const int *)b;
  int r = strcmp(lbl(m, m->wl_lbl[ia]), lbl(m, m->wl_lbl[ib]));
  return r ? r : ia - ib;
}

static void build_workload_labels(mctx_t *m)
{
  const acl_snapshot_t *s = m->s;
  for (int i = 0; i < m->nw; i++) {
    const acl_snap_workload_t *w = &s->workloads[i];
    m->wl_lbl[i] = m->labels.len;
    if (w->comm >= 0 && w->comm < m->nc) {
      /* Copy first: appending from the buffer itself could realloc it. */
      char tmp[512];
      snprintf(tmp, sizeof(tmp), "%.*s", (int)m->comm_only_len[w->comm],
               lbl(m, m->comm_lbl[w->comm]));
      acl_sb_puts(&m->labels, tmp);
    } else {
      char hex[24];
      acl_sb_printf(&m->labels, "comm=\"%s\"",
                    acl_render_comm_hex(w->key.comm_id, hex, sizeof(hex)));
    }
    put_rank_label(&m->labels, w->rank);
    acl_sb_printf(&m->labels, ",collective=\"%s\",bytes=\"%" PRIu64 "\",pipe_ops=\"%d\"",
                  acl_coll_short(w->key.coll), w->key.nbytes, (int)w->key.num_pipe_ops);
    acl_sb_append(&m->labels, "", 1);
  }
  if (!acl_sb_ok(&m->labels) || m->nw < 2)
    return;
  /* Two workloads with one label set would be a duplicate series: keep the
   * first only. Sorting finds them in n log n. */
  int idx[ACL_SNAP_MAX_WORKLOADS];
  for (int i = 0; i < m->nw; i++)
    idx[i] = i;
  qsort_r(idx, (size_t)m->nw, sizeof(int), cmp_wl, m);
  for (int i = 1; i < m->nw; i++)
    if (strcmp(lbl(m, m->wl_lbl[idx[i]]), lbl(m, m->wl_lbl[idx[i - 1]])) == 0)
      m->skip[idx[i]] = true;
}

/* Totals first: what a user scrapes for ("did it pay?"). Per process, with
 * the host as a label, so that sum by (host) gives the host and sum() over
 * the job's targets the job (docs/api.md). */
static void render_totals(mctx_t *m)
{
  acl_report_totals_t t;
  acl_report_totals(m->s, &t);
  acl_strbuf_t l;
  acl_sb_init(&l);
  acl_sb_puts(&l, "host=\"");
  acl_render_prom_label(&l, m->s->hostname, sizeof(m->s->hostname));
  acl_sb_puts(&l, "\"");
  if (!acl_sb_ok(&l)) {
    m->out->failed = true;
    acl_sb_free(&l);
    return;
  }
  static const acl_field_t fam[] = {ACL_F_TOT_NET_SAVED_SECONDS, ACL_F_TOT_EXPLORATION_COST_SECONDS,
                                    ACL_F_TOT_NCCL_SECONDS, ACL_F_RANKS,
                                    ACL_F_NET_SAVED_PER_RANK_SECONDS};
  double v[] = {t.net_saved_seconds, t.exploration_cost_seconds, t.nccl_seconds, t.ranks,
                t.per_rank_seconds};
  for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
    head(m, fam[i]);
    sample_f(m, acl_fields[fam[i]].metric, l.data, v[i]);
  }
  acl_sb_free(&l);
}

static void render_process(mctx_t *m)
{
  const acl_snapshot_t *s = m->s;
  const acl_snap_profiler_t *p = &s->profiler;
  head(m, ACL_F_BUILD_INFO);
  acl_sb_puts(m->out, MET(BUILD_INFO));
  acl_sb_puts(m->out, "{version=\"");
  acl_render_prom_label(m->out, ACL_VERSION, 64);
  acl_sb_puts(m->out, "\"} 1\n");
  if (isfinite(s->uptime_seconds) && s->uptime_seconds >= 0) {
    head(m, ACL_F_UPTIME_SECONDS);
    sample_plain(m, MET(UPTIME_SECONDS), s->uptime_seconds);
  }
  head(m, ACL_F_WORKLOADS);
  sample_plain(m, MET(WORKLOADS), m->nw);
  head(m, ACL_F_WORKLOADS_TRUNCATED);
  sample_plain(m, MET(WORKLOADS_TRUNCATED),
               s->workloads_truncated || s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? 1 : 0);

  if (strnlen(p->source, sizeof(p->source)) > 0) {
    head(m, ACL_F_PROF_SOURCE);
    acl_sb_puts(m->out, MET(PROF_SOURCE));
    acl_sb_puts(m->out, "{source=\"");
    acl_render_prom_label(m->out, p->source, sizeof(p->source));
    acl_sb_puts(m->out, "\"} 1\n");
  }
  head(m, ACL_F_PROF_CUPTI_AVAILABLE);
  sample_plain(m, MET(PROF_CUPTI_AVAILABLE), p->cupti_available);
  head(m, ACL_F_PROF_CUPTI_BACKED_OFF);
  sample_plain(m, MET(PROF_CUPTI_BACKED_OFF), p->cupti_backed_off);
  if (p->cupti_window[0]) {
    head(m, ACL_F_PROF_CUPTI_WINDOWS);
    sample_plain(m, MET(PROF_CUPTI_WINDOWS), (double)p->cupti_windows);
    head(m, ACL_F_PROF_CUPTI_ATTACHED_SECONDS);
    sample_plain(m, MET(PROF_CUPTI_ATTACHED_SECONDS), p->cupti_on_seconds);
  }
  acl_snap_job_t j;
  acl_snap_job_totals(s, &j);
  if (j.has_exposed) {
    head(m, ACL_F_JOB_COLLECTIVE_SECONDS);
    sample_plain(m, MET(JOB_COLLECTIVE_SECONDS), j.collective_seconds);
    head(m, ACL_F_JOB_EXPOSED_SECONDS);
    sample_plain(m, MET(JOB_EXPOSED_SECONDS), j.exposed_seconds);
  }
  if (j.has_net) {
    head(m, ACL_F_JOB_TIME_SAVED_SECONDS);
    sample_plain(m, MET(JOB_TIME_SAVED_SECONDS), j.time_saved_seconds);
  }
  static const struct {
    acl_field_t f;
    size_t off;
  } ctr[] = {
      {ACL_F_PROF_RECORDS, offsetof(acl_snap_profiler_t, records)},
      {ACL_F_PROF_RECORDS_DROPPED, offsetof(acl_snap_profiler_t, records_dropped)},
      {ACL_F_PROF_SAMPLES, offsetof(acl_snap_profiler_t, samples)},
      {ACL_F_PROF_AMBIGUOUS, offsetof(acl_snap_profiler_t, ambiguous)},
      {ACL_F_PROF_STALE, offsetof(acl_snap_profiler_t, stale)},
      {ACL_F_PROF_OVERLAP_UNKNOWN, offsetof(acl_snap_profiler_t, overlap_unknown)},
      {ACL_F_PROF_OVERLAP_LATE, offsetof(acl_snap_profiler_t, overlap_late)},
      {ACL_F_PROF_MISMATCHES, offsetof(acl_snap_profiler_t, mismatches)},
  };
  for (size_t i = 0; i < sizeof(ctr) / sizeof(ctr[0]); i++) {
    uint64_t v;
    memcpy(&v, (const char *)p + ctr[i].off, sizeof(v));
    head(m, ctr[i].f);
    acl_sb_printf(m->out, "%s %" PRIu64 "\n", acl_fields[ctr[i].f].metric, v);
  }
  head(m, ACL_F_PROF_OVERLAP_LATE_SECONDS);
  sample_plain(m, MET(PROF_OVERLAP_LATE_SECONDS), p->overlap_late_seconds);
  if (isfinite(p->sample_latency_seconds) && p->sample_latency_seconds >= 0) {
    head(m, ACL_F_PROF_SAMPLE_LATENCY_SECONDS);
    sample_plain(m, MET(PROF_SAMPLE_LATENCY_SECONDS), p->sample_latency_seconds);
  }
}

static void render_comms(mctx_t *m)
{
  const acl_snapshot_t *s = m->s;
  for (int i = 0; i < m->nc; i++) {
    const acl_snap_comm_t *c = &s->comms[i];
    char hex[24];
    head(m, ACL_F_COMM_ROLE);
    acl_sb_printf(m->out, "%s{%s,comm_id=\"%s\",role=\"", MET(COMM_ROLE), lbl(m, m->comm_lbl[i]),
                  acl_render_comm_hex(c->id, hex, sizeof(hex)));
    acl_render_prom_label(m->out, c->role, sizeof(c->role));
    acl_sb_puts(m->out, "\"} 1\n");
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, ACL_F_COMM_NRANKS);
    sample_f(m, MET(COMM_NRANKS), lbl(m, m->comm_lbl[i]), s->comms[i].nranks);
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, ACL_F_COMM_NNODES);
    sample_f(m, MET(COMM_NNODES), lbl(m, m->comm_lbl[i]), s->comms[i].nnodes);
  }
  for (int i = 0; i < m->nc; i++) {
    double v = s->comms[i].consensus_wait_seconds;
    if (!isfinite(v) || v < 0)
      continue;
    head(m, ACL_F_COMM_CONSENSUS_WAIT_SECONDS);
    sample_f(m, MET(COMM_CONSENSUS_WAIT_SECONDS), lbl(m, m->comm_lbl[i]), v);
  }
  static const struct {
    acl_field_t f;
    size_t off;
  } ctr[] = {
      {ACL_F_COMM_BLOCKS_PUBLISHED, offsetof(acl_snap_comm_t, blocks_published)},
      {ACL_F_COMM_LOCK_ACQUISITIONS, offsetof(acl_snap_comm_t, lock_acquisitions)},
      {ACL_F_COMM_SAMPLES_BUSY, offsetof(acl_snap_comm_t, samples_busy)},
      {ACL_F_COMM_WORKLOADS_REFUSED, offsetof(acl_snap_comm_t, workloads_refused)},
  };
  for (size_t k = 0; k < sizeof(ctr) / sizeof(ctr[0]); k++)
    for (int i = 0; i < m->nc; i++) {
      uint64_t v;
      memcpy(&v, (const char *)&s->comms[i] + ctr[k].off, sizeof(v));
      head(m, ctr[k].f);
      sample_u64(m, acl_fields[ctr[k].f].metric, lbl(m, m->comm_lbl[i]), v);
    }
}

static void render_histograms(mctx_t *m)
{
  /* name_bucket, name_sum, name_count */
  char bucket[96], sum[96], count_name[96];
  snprintf(bucket, sizeof(bucket), "%s_bucket", MET(DURATION));
  snprintf(sum, sizeof(sum), "%s_sum", MET(DURATION));
  snprintf(count_name, sizeof(count_name), "%s_count", MET(DURATION));
  for (int i = 0; i < m->nw; i++) {
    if (m->skip[i])
      continue;
    const acl_snap_workload_t *w = &m->s->workloads[i];
    const char *l = lbl(m, m->wl_lbl[i]);
    head(m, ACL_F_DURATION);
    uint64_t cum = 0;
    for (int b = 0; b < ACL_HIST_N; b++) {
      cum += w->hist[b];
      series(m, bucket, l, ",le=\"");
      acl_sb_puts(m->out, m->le[b]);
      acl_sb_append(m->out, "\"} ", 3);
      acl_render_u64(m->out, cum);
      acl_sb_append(m->out, "\n", 1);
    }
    /* +Inf must equal _count and be >= every bucket, even on odd input. */
    uint64_t count = w->dur_count > cum ? w->dur_count : cum;
    series(m, bucket, l, ",le=\"+Inf\"} ");
    acl_render_u64(m->out, count);
    acl_sb_append(m->out, "\n", 1);
    sample_f(m, sum, l, w->dur_sum);
    sample_u64(m, count_name, l, count);
  }
}

typedef enum { F_U64, F_DBL } ftype_t;
typedef struct wfam {
  acl_field_t f; /* the family (observe/fields.def) */
  ftype_t ft;
  size_t off;      /* value */
  ptrdiff_t valid; /* offset of a bool that must be true, -1 = always */
  bool nonzero;    /* omit when 0 (0 means "not yet") */
} wfam_t;

#define WOFF(f) offsetof(acl_snap_workload_t, f)
static const wfam_t k_wfams[] = {
    {ACL_F_CALLS, F_U64, WOFF(calls), -1, false},
    {ACL_F_BYTES_TOTAL, F_U64, WOFF(bytes), -1, false},
    {ACL_F_BUSBW, F_DBL, WOFF(busbw), WOFF(has_busbw), false},
    {ACL_F_SPEEDUP, F_DBL, WOFF(speedup), WOFF(has_speedup), false},
    {ACL_F_BASELINE_SECONDS, F_DBL, WOFF(baseline_seconds), WOFF(has_baseline), false},
    {ACL_F_BEST_SECONDS, F_DBL, WOFF(best_seconds), WOFF(has_best), false},
    {ACL_F_OVERLAP, F_DBL, WOFF(overlap), WOFF(has_overlap), false},
    {ACL_F_WL_COLLECTIVE_SECONDS, F_DBL, WOFF(collective_seconds), WOFF(has_exposed), false},
    {ACL_F_WL_EXPOSED_SECONDS, F_DBL, WOFF(exposed_seconds), WOFF(has_exposed), false},
    {ACL_F_WL_TIME_SAVED_SECONDS, F_DBL, WOFF(time_saved_seconds), WOFF(has_net), false},
    {ACL_F_EXPLORATION_COST_SECONDS, F_DBL, WOFF(exploration_cost_seconds), WOFF(has_net), false},
    {ACL_F_CANDIDATES_EVALUATED, F_U64, WOFF(candidates_evaluated), -1, false},
    {ACL_F_RETUNES, F_U64, WOFF(retunes), -1, false},
    {ACL_F_CALLS_TO_CONVERGE, F_U64, WOFF(calls_to_converge), -1, true},
};

static uint64_t field_u64(const acl_snap_workload_t *w, const wfam_t *f)
{
  const char *p = (const char *)w + f->off;
  if (f->off == WOFF(candidates_evaluated) || f->off == WOFF(retunes)) {
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
  }
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

static void render_workload_family(mctx_t *m, const wfam_t *f)
{
  for (int i = 0; i < m->nw; i++) {
    const acl_snap_workload_t *w = &m->s->workloads[i];
    if (m->skip[i])
      continue;
    if (f->valid >= 0 && !*(const bool *)((const char *)w + f->valid))
      continue;
    const char *l = lbl(m, m->wl_lbl[i]);
    const char *name = acl_fields[f->f].metric;
    if (f->ft == F_U64) {
      uint64_t v = field_u64(w, f);
      if (f->nonzero && v == 0)
        continue;
      head(m, f->f);
      sample_u64(m, name, l, v);
    } else {
      double v;
      memcpy(&v, (const char *)w + f->off, sizeof(v));
      if (!isfinite(v) || (f->off == WOFF(overlap) && v < 0))
        continue;
      head(m, f->f);
      sample_f(m, name, l, v);
    }
  }
}

static void render_states(mctx_t *m)
{
  for (int i = 0; i < m->nw; i++) {
    if (m->skip[i])
      continue;
    const acl_snap_workload_t *w = &m->s->workloads[i];
    head(m, ACL_F_STATE);
    /* the states, then what the views show while captured */
    for (int ph = 0; ph <= ACL_PHASE_COUNT; ph++) {
      bool shown = ph == ACL_PHASE_COUNT ? w->captured : !w->captured && (int)w->phase == ph;
      series(m, MET(STATE), lbl(m, m->wl_lbl[i]), ",state=\"");
      acl_sb_puts(m->out,
                  ph == ACL_PHASE_COUNT ? ACL_CAPTURED_NAME : acl_phase_name((acl_phase_t)ph));
      acl_sb_puts(m->out, shown ? "\"} 1\n" : "\"} 0\n");
    }
  }
}

/* Where each decision came from: NCCL's own, explored, or a table. */
static void render_sources(mctx_t *m)
{
  for (int i = 0; i < m->nw; i++) {
    if (m->skip[i])
      continue;
    const acl_snap_workload_t *w = &m->s->workloads[i];
    head(m, ACL_F_SOURCE);
    for (int src = 0; src < ACL_NUM_SOURCES; src++) {
      series(m, MET(SOURCE), lbl(m, m->wl_lbl[i]), ",source=\"");
      acl_sb_puts(m->out, acl_source_name(src));
      acl_sb_puts(m->out, w->source == src ? "\"} 1\n" : "\"} 0\n");
    }
  }
}

void acl_render_metrics(const acl_snapshot_t *s, acl_strbuf_t *out)
{
  mctx_t *m = calloc(1, sizeof(*m));
  if (!m) {
    out->failed = true;
    return;
  }
  m->s = s;
  m->out = out;
  m->nc = s->ncomms < 0 ? 0 : (s->ncomms > ACL_SNAP_MAX_COMMS ? ACL_SNAP_MAX_COMMS : s->ncomms);
  m->nw = s->nworkloads < 0
              ? 0
              : (s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? ACL_SNAP_MAX_WORKLOADS : s->nworkloads);
  acl_sb_init(&m->labels);
  for (int b = 0; b < ACL_HIST_N; b++)
    snprintf(m->le[b], sizeof(m->le[b]), "%.15g", acl_hist_bound(b));
  build_comm_labels(m);
  build_workload_labels(m);
  if (!acl_sb_ok(&m->labels)) {
    out->failed = true;
    goto done;
  }
  render_totals(m);
  render_process(m);
  render_comms(m);
  render_histograms(m);
  for (size_t f = 0; f < sizeof(k_wfams) / sizeof(k_wfams[0]); f++)
    render_workload_family(m, &k_wfams[f]);
  render_states(m);
  render_sources(m);
done:
  acl_sb_free(&m->labels);
  free(m);
}
