/* The /api/v1/state document and SSE event payloads (docs/api.md, schema
 * version 1). Unknown values render as null; numbers are always finite. */
#include "observe/observe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "observe/observe_int.h"

#define JSTR(sb, field) acl_render_json_str((sb), (field), sizeof(field))

static const acl_snap_comm_t *comm_of(const acl_snapshot_t *s, const acl_snap_workload_t *w)
{
  int n = s->ncomms < 0 ? 0 : (s->ncomms > ACL_SNAP_MAX_COMMS ? ACL_SNAP_MAX_COMMS : s->ncomms);
  return w->comm >= 0 && w->comm < n ? &s->comms[w->comm] : NULL;
}

static void put_opt_num(acl_strbuf_t *sb, bool valid, double v)
{
  if (valid)
    acl_render_json_num(sb, v);
  else
    acl_sb_puts(sb, "null");
}

/* Fraction in 0..1, or null (negative means unknown). */
static void put_ratio(acl_strbuf_t *sb, double v) { put_opt_num(sb, isfinite(v) && v >= 0, v); }

static void put_rank(acl_strbuf_t *sb, const acl_snap_comm_t *c)
{
  if (c && c->rank >= 0)
    acl_sb_printf(sb, "%d", c->rank);
  else
    acl_sb_puts(sb, "null");
}

static void put_comm_id(acl_strbuf_t *sb, uint64_t id)
{
  char hex[24];
  acl_render_json_str(sb, acl_render_comm_hex(id, hex, sizeof(hex)), sizeof(hex));
}

static void put_cand(acl_strbuf_t *sb, bool valid, const acl_candidate_t *c)
{
  if (!valid) {
    acl_sb_puts(sb, "null");
    return;
  }
  acl_sb_puts(sb, "{");
  acl_render_cand_fields(sb, c);
  acl_sb_puts(sb, "}");
}

/* "ALGO/PROTO" of the candidate under test; null while NCCL's own choice runs. */
static void put_subspace(acl_strbuf_t *sb, const acl_candidate_t *c)
{
  if (c->algo == ACL_ALGO_NCCL) {
    acl_sb_puts(sb, "null");
    return;
  }
  char buf[48];
  snprintf(buf, sizeof(buf), "%s/%s", acl_algo_name(c->algo), acl_proto_name(c->proto));
  acl_render_json_str(sb, buf, sizeof(buf));
}

void acl_render_workload_head(acl_strbuf_t *sb, const acl_snapshot_t *s,
                              const acl_snap_workload_t *w)
{
  const acl_snap_comm_t *c = comm_of(s, w);
  acl_sb_puts(sb, "{\"comm\": ");
  put_comm_id(sb, c ? c->id : w->key.comm_id);
  acl_sb_puts(sb, ", \"rank\": ");
  if (w->rank >= 0)
    acl_sb_printf(sb, "%d", w->rank);
  else
    acl_sb_puts(sb, "null");
  acl_sb_puts(sb, ", \"collective\": ");
  acl_render_json_str(sb, acl_coll_name(w->key.coll), 32);
  acl_sb_printf(sb, ", \"bytes\": %" PRIu64, w->key.nbytes);
}

static int clamp_traj(int n) { return n < 0 ? 0 : (n > ACL_SNAP_TRAJ ? ACL_SNAP_TRAJ : n); }

static void put_workload(acl_strbuf_t *sb, const acl_snapshot_t *s, const acl_snap_workload_t *w)
{
  acl_render_workload_head(sb, s, w);
  acl_sb_printf(sb, ", \"pipe_ops\": %d", (int)w->key.num_pipe_ops);
  acl_sb_puts(sb, ",\n     \"state\": ");
  acl_render_json_str(sb, acl_phase_name(w->phase), 32);
  acl_sb_printf(sb, ", \"decided\": %s", acl_phase_decided(w->phase) ? "true" : "false");
  acl_sb_puts(sb, ", \"subspace\": ");
  put_subspace(sb, &w->current);
  acl_sb_puts(sb, ",\n     \"candidate\": ");
  put_cand(sb, true, &w->current);
  acl_sb_puts(sb, ", \"best\": ");
  put_cand(sb, w->has_best, &w->best);
  acl_sb_puts(sb, ", \"baseline\": ");
  put_cand(sb, w->has_baseline, &w->baseline);
  acl_sb_puts(sb, ",\n     \"baseline_seconds\": ");
  put_opt_num(sb, w->has_baseline, w->baseline_seconds);
  acl_sb_puts(sb, ", \"best_seconds\": ");
  put_opt_num(sb, w->has_best, w->best_seconds);
  acl_sb_puts(sb, ", \"speedup\": ");
  put_opt_num(sb, w->has_speedup, w->speedup);
  acl_sb_puts(sb, ", \"speedup_low\": ");
  put_opt_num(sb, w->has_speedup_ci, w->speedup_lo);
  acl_sb_puts(sb, ", \"speedup_high\": ");
  put_opt_num(sb, w->has_speedup_ci, w->speedup_hi);
  acl_sb_puts(sb, ", \"busbw\": ");
  put_opt_num(sb, w->has_busbw, w->busbw);
  acl_sb_puts(sb, ", \"overlap\": ");
  if (w->has_overlap)
    put_ratio(sb, w->overlap);
  else
    acl_sb_puts(sb, "null");
  acl_sb_puts(sb, ",\n     \"collective_seconds\": ");
  put_opt_num(sb, w->has_exposed, w->collective_seconds);
  acl_sb_puts(sb, ", \"exposed_seconds\": ");
  put_opt_num(sb, w->has_exposed, w->exposed_seconds);
  acl_sb_puts(sb, ", \"exposed_share\": ");
  put_opt_num(sb, w->has_exposed, w->exposed_share);
  acl_sb_puts(sb, ",\n     \"time_saved_seconds\": ");
  put_opt_num(sb, w->has_net, w->time_saved_seconds);
  acl_sb_puts(sb, ", \"exploration_cost_seconds\": ");
  put_opt_num(sb, w->has_net, w->exploration_cost_seconds);
  acl_sb_printf(sb, ",\n     \"candidates_evaluated\": %" PRIu32 ", \"calls_to_converge\": ",
                w->candidates_evaluated);
  if (w->calls_to_converge)
    acl_sb_printf(sb, "%" PRIu64, w->calls_to_converge);
  else
    acl_sb_puts(sb, "null");
  acl_sb_printf(sb, ", \"retunes\": %" PRIu32 ", \"calls\": %" PRIu64 ", \"bytes_total\": %" PRIu64,
                w->retunes, w->calls, w->bytes);
  acl_sb_printf(sb, ", \"captured_calls\": %" PRIu64, w->captured_calls);
  acl_sb_printf(sb, ", \"source\": \"%s\"", acl_source_name(w->source));
  acl_sb_puts(sb, ",\n     \"trajectory\": [");
  int n = clamp_traj(w->traj_len);
  for (int i = 0; i < n; i++) {
    const acl_traj_point_t *t = &w->traj[i];
    acl_sb_puts(sb, i ? ",\n       {\"step\": " : "\n       {\"step\": ");
    acl_render_u64(sb, t->step);
    acl_sb_puts(sb, ", ");
    acl_render_cand_fields(sb, &t->cand);
    acl_sb_puts(sb, ", \"busbw\": ");
    if (t->busbw >= 0)
      acl_render_json_float(sb, t->busbw); /* null when NaN/Inf */
    else
      acl_sb_puts(sb, "null");
    acl_sb_puts(sb, ", \"overlap\": ");
    if (t->overlap >= 0)
      acl_render_json_float(sb, t->overlap);
    else
      acl_sb_puts(sb, "null");
    acl_sb_puts(sb, "}");
  }
  acl_sb_puts(sb, n ? "\n     ]}" : "]}");
}

static void put_profiler(acl_strbuf_t *sb, const acl_snap_profiler_t *p)
{
  acl_sb_puts(sb, "{\"source\": ");
  JSTR(sb, p->source);
  acl_sb_printf(sb,
                ", \"cupti_available\": %s, \"cupti_backed_off\": %s,\n"
                "               \"records\": %" PRIu64 ", \"records_dropped\": %" PRIu64
                ", \"samples\": %" PRIu64 ",\n"
                "               \"ambiguous\": %" PRIu64 ", \"mismatches\": %" PRIu64
                ", \"sample_latency_seconds\": ",
                p->cupti_available ? "true" : "false", p->cupti_backed_off ? "true" : "false",
                p->records, p->records_dropped, p->samples, p->ambiguous, p->mismatches);
  put_ratio(sb, p->sample_latency_seconds);
  acl_sb_puts(sb, ",\n               \"cupti_window\": ");
  if (p->cupti_window[0]) {
    JSTR(sb, p->cupti_window);
    acl_sb_printf(sb,
                  ", \"cupti_window_ms\": %" PRIu32 ", \"cupti_period_ms\": %" PRIu32
                  ", \"cupti_windows\": %" PRIu64 ", \"cupti_attached_seconds\": ",
                  p->cupti_on_ms, p->cupti_period_ms, p->cupti_windows);
    put_ratio(sb, p->cupti_on_seconds);
  } else {
    acl_sb_puts(sb, "null");
  }
  acl_sb_puts(sb, "}");
}

static void put_job(acl_strbuf_t *sb, const acl_snapshot_t *s)
{
  acl_snap_job_t j;
  acl_snap_job_totals(s, &j);
  acl_sb_puts(sb, "{\"collective_seconds\": ");
  put_opt_num(sb, j.has_exposed, j.collective_seconds);
  acl_sb_puts(sb, ", \"exposed_seconds\": ");
  put_opt_num(sb, j.has_exposed, j.exposed_seconds);
  acl_sb_puts(sb, ", \"exposed_share\": ");
  put_opt_num(sb, j.has_exposed, j.exposed_share);
  acl_sb_puts(sb, ", \"time_saved_seconds\": ");
  put_opt_num(sb, j.has_net, j.time_saved_seconds);
  /* per rank, as the job report: every rank waits for each collective */
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  acl_sb_printf(sb, ", \"ranks\": %d, \"time_saved_per_rank_seconds\": ", t.ranks);
  put_opt_num(sb, j.has_net && t.ranks > 0, t.ranks > 0 ? j.time_saved_seconds / t.ranks : 0.0);
  acl_sb_puts(sb, "}");
}

static void put_comm(acl_strbuf_t *sb, const acl_snap_comm_t *c)
{
  acl_sb_puts(sb, "{\"id\": ");
  put_comm_id(sb, c->id);
  acl_sb_puts(sb, ", \"name\": ");
  JSTR(sb, c->name);
  acl_sb_puts(sb, ", \"rank\": ");
  put_rank(sb, c);
  acl_sb_printf(sb, ", \"nranks\": %d, \"nnodes\": %d,\n     \"role\": ", c->nranks, c->nnodes);
  JSTR(sb, c->role);
  acl_sb_puts(sb, ", \"consensus_wait_seconds\": ");
  put_ratio(sb, c->consensus_wait_seconds);
  acl_sb_printf(sb, ", \"blocks_published\": %" PRIu64 ",\n     \"lock_acquisitions\": %" PRIu64,
                c->blocks_published, c->lock_acquisitions);
  acl_sb_printf(sb, ", \"samples_busy\": %" PRIu64 ", \"workloads_refused\": %" PRIu64 "}",
                c->samples_busy, c->workloads_refused);
}

void acl_render_state_json(const acl_snapshot_t *s, acl_strbuf_t *out)
{
  acl_sb_printf(out, "{\n  \"version\": %d,\n  \"host\": ", ACL_SNAPSHOT_VERSION);
  JSTR(out, s->hostname);
  acl_sb_printf(out, ", \"pid\": %d, \"local_rank\": %d, \"mode\": ", s->pid, s->local_rank);
  JSTR(out, s->mode);
  acl_sb_puts(out, ",\n  \"uptime_seconds\": ");
  put_ratio(out, s->uptime_seconds);
  acl_sb_puts(out, ",\n  \"profiler\": ");
  put_profiler(out, &s->profiler);
  acl_sb_puts(out, ",\n  \"job\": ");
  put_job(out, s);
  acl_sb_puts(out, ",\n  \"communicators\": [");
  int nc = s->ncomms < 0 ? 0 : (s->ncomms > ACL_SNAP_MAX_COMMS ? ACL_SNAP_MAX_COMMS : s->ncomms);
  for (int i = 0; i < nc; i++) {
    acl_sb_puts(out, i ? ",\n    " : "\n    ");
    put_comm(out, &s->comms[i]);
  }
  acl_sb_puts(out, nc ? "\n  ],\n  \"workloads\": [" : "],\n  \"workloads\": [");
  int nw = s->nworkloads < 0
               ? 0
               : (s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? ACL_SNAP_MAX_WORKLOADS : s->nworkloads);
  for (int i = 0; i < nw; i++) {
    acl_sb_puts(out, i ? ",\n    " : "\n    ");
    put_workload(out, s, &s->workloads[i]);
  }
  acl_sb_printf(out, "%s\n  \"workloads_truncated\": %s\n}\n", nw ? "\n  ]," : "],",
                s->workloads_truncated || s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? "true"
                                                                                 : "false");
}

void acl_render_event_json(const acl_snapshot_t *s, const acl_snap_workload_t *w, acl_strbuf_t *out)
{
  acl_render_workload_head(out, s, w);
  acl_sb_puts(out, ", \"state\": ");
  acl_render_json_str(out, acl_phase_name(w->phase), 32);
  acl_sb_printf(out, ", \"decided\": %s", acl_phase_decided(w->phase) ? "true" : "false");
  acl_sb_puts(out, ", \"step\": ");
  int n = clamp_traj(w->traj_len);
  if (n > 0)
    acl_sb_printf(out, "%" PRIu32, w->traj[n - 1].step);
  else
    acl_sb_puts(out, "null");
  acl_sb_puts(out, ", \"candidate\": ");
  put_cand(out, true, &w->current);
  acl_sb_puts(out, ", \"best\": ");
  put_cand(out, w->has_best, &w->best);
  acl_sb_puts(out, ", \"busbw\": ");
  put_opt_num(out, w->has_busbw, w->busbw);
  acl_sb_puts(out, ", \"overlap\": ");
  if (w->has_overlap)
    put_ratio(out, w->overlap);
  else
    acl_sb_puts(out, "null");
  acl_sb_puts(out, ", \"speedup\": ");
  put_opt_num(out, w->has_speedup, w->speedup);
  acl_sb_puts(out, "}");
}
