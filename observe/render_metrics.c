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

/* Writes "# HELP" and "# TYPE" once, before the family's first sample. */
static void head(mctx_t *m, const char *name, const char *type, const char *help)
{
  if (m->family == name)
    return;
  m->family = name;
  acl_sb_printf(m->out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
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
  static const struct {
    const char *name, *help;
  } fam[] = {
      {"autoccl_total_time_saved_seconds",
       "Net seconds the decisions saved, summed over this process's ranks, after exploration."},
      {"autoccl_total_exploration_cost_seconds",
       "Seconds exploration cost (never negative), summed over this process's ranks."},
      {"autoccl_total_nccl_seconds",
       "Seconds the calls take with NCCL's own choice (calls x its measured time), summed."},
      {"autoccl_total_ranks", "Ranks this process serves (divide the sums by it: per rank)."},
      {"autoccl_total_time_saved_per_rank_seconds",
       "Net seconds saved per rank (the job's wall time: every rank waits for each collective), "
       "as the job report's per-rank figure."},
  };
  double v[] = {t.net_saved_seconds, t.exploration_cost_seconds, t.nccl_seconds, t.ranks,
                t.per_rank_seconds};
  for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
    head(m, fam[i].name, "gauge", fam[i].help);
    sample_f(m, fam[i].name, l.data, v[i]);
  }
  acl_sb_free(&l);
}

static void render_process(mctx_t *m)
{
  const acl_snapshot_t *s = m->s;
  const acl_snap_profiler_t *p = &s->profiler;
  head(m, "autoccl_build_info", "gauge", "autoccl build; always 1, the version is a label.");
  acl_sb_puts(m->out, "autoccl_build_info{version=\"");
  acl_render_prom_label(m->out, ACL_VERSION, 64);
  acl_sb_puts(m->out, "\"} 1\n");
  if (isfinite(s->uptime_seconds) && s->uptime_seconds >= 0) {
    head(m, "autoccl_uptime_seconds", "gauge", "Seconds since the plugin started in this process.");
    sample_plain(m, "autoccl_uptime_seconds", s->uptime_seconds);
  }
  head(m, "autoccl_workloads", "gauge",
       "Workloads (comm, collective, bytes) shown in this exposition.");
  sample_plain(m, "autoccl_workloads", m->nw);
  head(m, "autoccl_workloads_truncated", "gauge",
       "1 when more workloads existed than the exposition holds ("
       "512"
       ").");
  sample_plain(m, "autoccl_workloads_truncated",
               s->workloads_truncated || s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? 1 : 0);

  if (strnlen(p->source, sizeof(p->source)) > 0) {
    head(m, "autoccl_profiler_source", "gauge",
         "Sample source in use; always 1, the source is a label.");
    acl_sb_puts(m->out, "autoccl_profiler_source{source=\"");
    acl_render_prom_label(m->out, p->source, sizeof(p->source));
    acl_sb_puts(m->out, "\"} 1\n");
  }
  head(m, "autoccl_profiler_cupti_available", "gauge", "1 when libcupti could be loaded.");
  sample_plain(m, "autoccl_profiler_cupti_available", p->cupti_available);
  head(m, "autoccl_profiler_cupti_backed_off", "gauge",
       "1 when another CUPTI subscriber holds CUPTI and autoccl backed off.");
  sample_plain(m, "autoccl_profiler_cupti_backed_off", p->cupti_backed_off);
  if (p->cupti_window[0]) {
    head(m, "autoccl_profiler_cupti_windows_total", "counter",
         "CUPTI windows opened (AUTOCCL_CUPTI_WINDOW; 1 when always attached).");
    sample_plain(m, "autoccl_profiler_cupti_windows_total", (double)p->cupti_windows);
    head(m, "autoccl_profiler_cupti_attached_seconds_total", "counter",
         "Time CUPTI was attached in closed windows.");
    sample_plain(m, "autoccl_profiler_cupti_attached_seconds_total", p->cupti_on_seconds);
  }
  acl_snap_job_t j;
  acl_snap_job_totals(s, &j);
  if (j.has_exposed) {
    head(m, "autoccl_job_collective_seconds_total", "counter",
         "Collective time of every workload in this process.");
    sample_plain(m, "autoccl_job_collective_seconds_total", j.collective_seconds);
    head(m, "autoccl_job_exposed_seconds_total", "counter",
         "Collective time not overlapped by compute, every workload in this process: the most "
         "that tuning the collectives could give back.");
    sample_plain(m, "autoccl_job_exposed_seconds_total", j.exposed_seconds);
  }
  if (j.has_net) {
    head(m, "autoccl_job_time_saved_seconds", "gauge",
         "Net time the tuner saved, every workload in this process (compare with "
         "autoccl_job_exposed_seconds_total).");
    sample_plain(m, "autoccl_job_time_saved_seconds", j.time_saved_seconds);
  }
  static const struct {
    const char *name, *help;
    size_t off;
  } ctr[] = {
      {"autoccl_profiler_records_total", "Kernel records processed.",
       offsetof(acl_snap_profiler_t, records)},
      {"autoccl_profiler_records_dropped_total", "Kernel records dropped (buffers full).",
       offsetof(acl_snap_profiler_t, records_dropped)},
      {"autoccl_profiler_samples_total", "Samples delivered to the tuner.",
       offsetof(acl_snap_profiler_t, samples)},
      {"autoccl_profiler_ambiguous_total", "Calls not used as samples (fused launches).",
       offsetof(acl_snap_profiler_t, ambiguous)},
      {"autoccl_profiler_mismatches_total", "Calls where NCCL ran something else than decided.",
       offsetof(acl_snap_profiler_t, mismatches)},
  };
  for (size_t i = 0; i < sizeof(ctr) / sizeof(ctr[0]); i++) {
    uint64_t v;
    memcpy(&v, (const char *)p + ctr[i].off, sizeof(v));
    head(m, ctr[i].name, "counter", ctr[i].help);
    acl_sb_printf(m->out, "%s %" PRIu64 "\n", ctr[i].name, v);
  }
  if (isfinite(p->sample_latency_seconds) && p->sample_latency_seconds >= 0) {
    head(m, "autoccl_profiler_sample_latency_seconds", "gauge",
         "Median delay from a call to its sample reaching the tuner.");
    sample_plain(m, "autoccl_profiler_sample_latency_seconds", p->sample_latency_seconds);
  }
}

static void render_comms(mctx_t *m)
{
  const acl_snapshot_t *s = m->s;
  for (int i = 0; i < m->nc; i++) {
    const acl_snap_comm_t *c = &s->comms[i];
    char hex[24];
    head(m, "autoccl_communicator_info", "gauge",
         "Communicators seen; always 1, id and consensus role are labels.");
    acl_sb_printf(m->out, "autoccl_communicator_info{%s,comm_id=\"%s\",role=\"",
                  lbl(m, m->comm_lbl[i]), acl_render_comm_hex(c->id, hex, sizeof(hex)));
    acl_render_prom_label(m->out, c->role, sizeof(c->role));
    acl_sb_puts(m->out, "\"} 1\n");
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, "autoccl_communicator_ranks", "gauge", "Ranks in the communicator.");
    sample_f(m, "autoccl_communicator_ranks", lbl(m, m->comm_lbl[i]), s->comms[i].nranks);
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, "autoccl_communicator_nodes", "gauge", "Nodes (hosts) spanned by the communicator.");
    sample_f(m, "autoccl_communicator_nodes", lbl(m, m->comm_lbl[i]), s->comms[i].nnodes);
  }
  for (int i = 0; i < m->nc; i++) {
    double v = s->comms[i].consensus_wait_seconds;
    if (!isfinite(v) || v < 0)
      continue;
    head(m, "autoccl_consensus_wait_seconds_total", "counter",
         "Seconds this process waited for the consensus lock or relayed decisions.");
    sample_f(m, "autoccl_consensus_wait_seconds_total", lbl(m, m->comm_lbl[i]), v);
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, "autoccl_consensus_blocks_published_total", "counter",
         "Decision blocks published by this process.");
    sample_u64(m, "autoccl_consensus_blocks_published_total", lbl(m, m->comm_lbl[i]),
               s->comms[i].blocks_published);
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, "autoccl_consensus_lock_acquisitions_total", "counter",
         "Times this process took the shared consensus lock.");
    sample_u64(m, "autoccl_consensus_lock_acquisitions_total", lbl(m, m->comm_lbl[i]),
               s->comms[i].lock_acquisitions);
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, "autoccl_consensus_samples_busy_total", "counter",
         "Samples dropped because another process held the consensus lock (never waited for).");
    sample_u64(m, "autoccl_consensus_samples_busy_total", lbl(m, m->comm_lbl[i]),
               s->comms[i].samples_busy);
  }
  for (int i = 0; i < m->nc; i++) {
    head(m, "autoccl_consensus_workloads_refused_total", "counter",
         "Workloads left on NCCL's choice because the workload table was full.");
    sample_u64(m, "autoccl_consensus_workloads_refused_total", lbl(m, m->comm_lbl[i]),
               s->comms[i].workloads_refused);
  }
}

static void render_histograms(mctx_t *m)
{
  static const char *name = "autoccl_collective_duration_seconds";
  for (int i = 0; i < m->nw; i++) {
    if (m->skip[i])
      continue;
    const acl_snap_workload_t *w = &m->s->workloads[i];
    const char *l = lbl(m, m->wl_lbl[i]);
    head(m, name, "histogram", "Duration of collective calls (slowest rank when aggregated).");
    uint64_t cum = 0;
    for (int b = 0; b < ACL_HIST_N; b++) {
      cum += w->hist[b];
      series(m, "autoccl_collective_duration_seconds_bucket", l, ",le=\"");
      acl_sb_puts(m->out, m->le[b]);
      acl_sb_append(m->out, "\"} ", 3);
      acl_render_u64(m->out, cum);
      acl_sb_append(m->out, "\n", 1);
    }
    /* +Inf must equal _count and be >= every bucket, even on odd input. */
    uint64_t count = w->dur_count > cum ? w->dur_count : cum;
    series(m, "autoccl_collective_duration_seconds_bucket", l, ",le=\"+Inf\"} ");
    acl_render_u64(m->out, count);
    acl_sb_append(m->out, "\n", 1);
    sample_f(m, "autoccl_collective_duration_seconds_sum", l, w->dur_sum);
    sample_u64(m, "autoccl_collective_duration_seconds_count", l, count);
  }
}

typedef enum { F_U64, F_DBL } ftype_t;
typedef struct wfam {
  const char *name, *type, *help;
  ftype_t ft;
  size_t off;      /* value */
  ptrdiff_t valid; /* offset of a bool that must be true, -1 = always */
  bool nonzero;    /* omit when 0 (0 means "not yet") */
} wfam_t;

#define WOFF(f) offsetof(acl_snap_workload_t, f)
static const wfam_t k_wfams[] = {
    {"autoccl_collective_calls_total", "counter", "Calls of this workload in this process.", F_U64,
     WOFF(calls), -1, false},
    {"autoccl_collective_bytes_total", "counter", "Bytes of those calls (the NCCL buffer size).",
     F_U64, WOFF(bytes), -1, false},
    {"autoccl_collective_bus_bandwidth_bytes_per_second", "gauge",
     "Latest robust bus bandwidth (nccl-tests definition).", F_DBL, WOFF(busbw), WOFF(has_busbw),
     false},
    {"autoccl_tuner_speedup_ratio", "gauge",
     "NCCL's time divided by the decision's, measured interleaved once converged.", F_DBL,
     WOFF(speedup), WOFF(has_speedup), false},
    {"autoccl_tuner_baseline_duration_seconds", "gauge",
     "Measured duration under NCCL's own choice.", F_DBL, WOFF(baseline_seconds),
     WOFF(has_baseline), false},
    {"autoccl_tuner_best_duration_seconds", "gauge",
     "Measured duration of the best candidate so far.", F_DBL, WOFF(best_seconds), WOFF(has_best),
     false},
    {"autoccl_compute_overlap_ratio", "gauge",
     "Fraction of the collective's time overlapped by compute kernels (0..1).", F_DBL,
     WOFF(overlap), WOFF(has_overlap), false},
    {"autoccl_workload_collective_seconds_total", "counter",
     "Collective time of this workload's calls (calls x mean sampled duration).", F_DBL,
     WOFF(collective_seconds), WOFF(has_exposed), false},
    {"autoccl_workload_exposed_seconds_total", "counter",
     "Collective time not overlapped by compute kernels (exposed communication), from the "
     "share measured in CUPTI windows.",
     F_DBL, WOFF(exposed_seconds), WOFF(has_exposed), false},
    {"autoccl_workload_time_saved_seconds", "gauge",
     "Net time the decision saved against the measured NCCL baseline, minus the exploration cost "
     "(negative until the tuner pays for itself).",
     F_DBL, WOFF(time_saved_seconds), WOFF(has_net), false},
    {"autoccl_workload_exploration_cost_seconds", "gauge",
     "Time exploration and validation calls took beyond the measured NCCL baseline.", F_DBL,
     WOFF(exploration_cost_seconds), WOFF(has_net), false},
    {"autoccl_tuner_candidates_evaluated_total", "counter", "Candidates measured by the search.",
     F_U64, WOFF(candidates_evaluated), -1, false},
    {"autoccl_tuner_retunes_total", "counter", "Times drift restarted the search.", F_U64,
     WOFF(retunes), -1, false},
    {"autoccl_tuner_calls_to_converge", "gauge", "Calls the search took to converge.", F_U64,
     WOFF(calls_to_converge), -1, true},
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
    if (f->ft == F_U64) {
      uint64_t v = field_u64(w, f);
      if (f->nonzero && v == 0)
        continue;
      head(m, f->name, f->type, f->help);
      sample_u64(m, f->name, l, v);
    } else {
      double v;
      memcpy(&v, (const char *)w + f->off, sizeof(v));
      if (!isfinite(v) || (f->off == WOFF(overlap) && v < 0))
        continue;
      head(m, f->name, f->type, f->help);
      sample_f(m, f->name, l, v);
    }
  }
}

static void render_states(mctx_t *m)
{
  for (int i = 0; i < m->nw; i++) {
    if (m->skip[i])
      continue;
    const acl_snap_workload_t *w = &m->s->workloads[i];
    head(m, "autoccl_tuner_state", "gauge",
         "Tuning state of the workload, one-hot over the state label.");
    for (int ph = 0; ph < ACL_PHASE_COUNT; ph++) {
      series(m, "autoccl_tuner_state", lbl(m, m->wl_lbl[i]), ",state=\"");
      acl_sb_puts(m->out, acl_phase_name((acl_phase_t)ph));
      acl_sb_puts(m->out, (int)w->phase == ph ? "\"} 1\n" : "\"} 0\n");
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
    head(m, "autoccl_tuner_decision_source", "gauge",
         "Where the workload's decision comes from, one-hot over the source label "
         "(nccl: NCCL's own choice, explored: this run's search, table: AUTOCCL_TABLE).");
    for (int src = 0; src < ACL_NUM_SOURCES; src++) {
      series(m, "autoccl_tuner_decision_source", lbl(m, m->wl_lbl[i]), ",source=\"");
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
