/* The /api/v1/state document and SSE event payloads (docs/api.md, schema
 * version 1). Unknown values render as null; numbers are always finite. */
#include "observe/observe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "observe/observe_int.h"

#define JSTR(sb, field) acl_render_json_str((sb), (field), sizeof(field))
/* sep, then the key of row ID of observe/fields.def */
#define KEY(sb, sep, ID) acl_render_key((sb), (sep), ACL_F_##ID)

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
  KEY(sb, "{", WL_COMM);
  put_comm_id(sb, c ? c->id : w->key.comm_id);
  KEY(sb, ", ", RANK);
  if (w->rank >= 0)
    acl_sb_printf(sb, "%d", w->rank);
  else
    acl_sb_puts(sb, "null");
  KEY(sb, ", ", COLLECTIVE);
  acl_render_json_str(sb, acl_coll_name(w->key.coll), 32);
  KEY(sb, ", ", BYTES);
  acl_render_u64(sb, w->key.nbytes);
}

static int clamp_traj(int n) { return n < 0 ? 0 : (n > ACL_SNAP_TRAJ ? ACL_SNAP_TRAJ : n); }

static void put_workload(acl_strbuf_t *sb, const acl_snapshot_t *s, const acl_snap_workload_t *w)
{
  acl_render_workload_head(sb, s, w);
  KEY(sb, ", ", PIPE_OPS);
  acl_sb_printf(sb, "%d", (int)w->key.num_pipe_ops);
  KEY(sb, ",\n     ", STATE);
  acl_render_json_str(sb, acl_snap_state_name(w), 32);
  KEY(sb, ", ", DECIDED);
  acl_sb_puts(sb, acl_snap_decided(w) ? "true" : "false");
  KEY(sb, ", ", SUBSPACE);
  put_subspace(sb, &w->current);
  KEY(sb, ",\n     ", CANDIDATE);
  put_cand(sb, true, &w->current);
  KEY(sb, ", ", BEST);
  put_cand(sb, w->has_best, &w->best);
  KEY(sb, ", ", BASELINE);
  put_cand(sb, w->has_baseline, &w->baseline);
  KEY(sb, ",\n     ", BASELINE_SECONDS);
  put_opt_num(sb, w->has_baseline, w->baseline_seconds);
  KEY(sb, ", ", BEST_SECONDS);
  put_opt_num(sb, w->has_best, w->best_seconds);
  KEY(sb, ", ", SPEEDUP);
  put_opt_num(sb, w->has_speedup, w->speedup);
  KEY(sb, ", ", SPEEDUP_LOW);
  put_opt_num(sb, w->has_speedup_ci, w->speedup_lo);
  KEY(sb, ", ", SPEEDUP_HIGH);
  put_opt_num(sb, w->has_speedup_ci, w->speedup_hi);
  KEY(sb, ", ", BUSBW);
  put_opt_num(sb, w->has_busbw, w->busbw);
  KEY(sb, ", ", OVERLAP);
  if (w->has_overlap)
    put_ratio(sb, w->overlap);
  else
    acl_sb_puts(sb, "null");
  KEY(sb, ",\n     ", WL_COLLECTIVE_SECONDS);
  put_opt_num(sb, w->has_exposed, w->collective_seconds);
  KEY(sb, ", ", WL_EXPOSED_SECONDS);
  put_opt_num(sb, w->has_exposed, w->exposed_seconds);
  KEY(sb, ", ", EXPOSED_SHARE);
  put_opt_num(sb, w->has_exposed, w->exposed_share);
  KEY(sb, ",\n     ", WL_TIME_SAVED_SECONDS);
  put_opt_num(sb, w->has_net, w->time_saved_seconds);
  KEY(sb, ", ", EXPLORATION_COST_SECONDS);
  put_opt_num(sb, w->has_net, w->exploration_cost_seconds);
  KEY(sb, ",\n     ", CANDIDATES_EVALUATED);
  acl_render_u64(sb, w->candidates_evaluated);
  KEY(sb, ", ", CALLS_TO_CONVERGE);
  if (w->calls_to_converge)
    acl_render_u64(sb, w->calls_to_converge);
  else
    acl_sb_puts(sb, "null");
  KEY(sb, ", ", RETUNES);
  acl_render_u64(sb, w->retunes);
  KEY(sb, ", ", RETUNE_CAUSE);
  acl_render_retune_cause(sb, w->retune_cause);
  acl_render_wait_and_clock(sb, w);
  KEY(sb, ", ", CALLS);
  acl_render_u64(sb, w->calls);
  KEY(sb, ", ", BYTES_TOTAL);
  acl_render_u64(sb, w->bytes);
  KEY(sb, ", ", CAPTURED_CALLS);
  acl_render_u64(sb, w->captured_calls);
  KEY(sb, ", ", SOURCE);
  acl_sb_printf(sb, "\"%s\"", acl_source_name(w->source));
  KEY(sb, ",\n     ", TRAJECTORY);
  acl_sb_puts(sb, "[");
  int n = clamp_traj(w->traj_len);
  for (int i = 0; i < n; i++) {
    const acl_traj_point_t *t = &w->traj[i];
    KEY(sb, i ? ",\n       {" : "\n       {", STEP);
    acl_render_u64(sb, t->step);
    acl_sb_puts(sb, ", ");
    acl_render_cand_fields(sb, &t->cand);
    KEY(sb, ", ", BUSBW);
    if (t->busbw >= 0)
      acl_render_json_float(sb, t->busbw); /* null when NaN/Inf */
    else
      acl_sb_puts(sb, "null");
    KEY(sb, ", ", OVERLAP);
    if (t->overlap >= 0)
      acl_render_json_float(sb, t->overlap);
    else
      acl_sb_puts(sb, "null");
    acl_sb_puts(sb, "}");
  }
  acl_sb_puts(sb, n ? "\n     ]}" : "]}");
}

void acl_render_profiler_json(const acl_snap_profiler_t *p, acl_strbuf_t *sb)
{
  static const char *const nl = ",\n               "; /* the object's own indent */
  KEY(sb, "{", PROF_SOURCE);
  JSTR(sb, p->source);
  KEY(sb, ", ", PROF_CUPTI_AVAILABLE);
  acl_sb_puts(sb, p->cupti_available ? "true" : "false");
  KEY(sb, ", ", PROF_CUPTI_BACKED_OFF);
  acl_sb_puts(sb, p->cupti_backed_off ? "true" : "false");
  KEY(sb, nl, PROF_RECORDS);
  acl_render_u64(sb, p->records);
  KEY(sb, ", ", PROF_RECORDS_DROPPED);
  acl_render_u64(sb, p->records_dropped);
  KEY(sb, ", ", PROF_SAMPLES);
  acl_render_u64(sb, p->samples);
  KEY(sb, nl, PROF_AMBIGUOUS);
  acl_render_u64(sb, p->ambiguous);
  KEY(sb, ", ", PROF_STALE);
  acl_render_u64(sb, p->stale);
  KEY(sb, ", ", PROF_OVERLAP_UNKNOWN);
  acl_render_u64(sb, p->overlap_unknown);
  KEY(sb, ", ", PROF_OVERLAP_LATE);
  acl_render_u64(sb, p->overlap_late);
  KEY(sb, ", ", PROF_OVERLAP_LATE_SECONDS);
  put_ratio(sb, p->overlap_late_seconds);
  KEY(sb, ", ", PROF_MISMATCHES);
  acl_render_u64(sb, p->mismatches);
  KEY(sb, ", ", PROF_SAMPLE_LATENCY_SECONDS);
  put_ratio(sb, p->sample_latency_seconds);
  KEY(sb, nl, PROF_CUPTI_WINDOW);
  if (p->cupti_window[0]) {
    JSTR(sb, p->cupti_window);
    KEY(sb, ", ", PROF_CUPTI_WINDOW_MS);
    acl_render_u64(sb, p->cupti_on_ms);
    KEY(sb, ", ", PROF_CUPTI_PERIOD_MS);
    acl_render_u64(sb, p->cupti_period_ms);
    KEY(sb, ", ", PROF_CUPTI_WINDOWS);
    acl_render_u64(sb, p->cupti_windows);
    KEY(sb, ", ", PROF_CUPTI_ATTACHED_SECONDS);
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
  KEY(sb, "{", JOB_COLLECTIVE_SECONDS);
  put_opt_num(sb, j.has_exposed, j.collective_seconds);
  KEY(sb, ", ", JOB_EXPOSED_SECONDS);
  put_opt_num(sb, j.has_exposed, j.exposed_seconds);
  KEY(sb, ", ", EXPOSED_SHARE);
  put_opt_num(sb, j.has_exposed, j.exposed_share);
  KEY(sb, ", ", JOB_TIME_SAVED_SECONDS);
  put_opt_num(sb, j.has_net, j.time_saved_seconds);
  /* per rank, as the job report: every rank waits for each collective */
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  KEY(sb, ", ", RANKS);
  acl_sb_printf(sb, "%d", t.ranks);
  KEY(sb, ", ", TIME_SAVED_PER_RANK_SECONDS);
  put_opt_num(sb, j.has_net && t.ranks > 0, t.ranks > 0 ? j.time_saved_seconds / t.ranks : 0.0);
  acl_sb_puts(sb, "}");
}

static void put_comm(acl_strbuf_t *sb, const acl_snap_comm_t *c)
{
  KEY(sb, "{", COMM_ID);
  put_comm_id(sb, c->id);
  KEY(sb, ", ", COMM_NAME);
  JSTR(sb, c->name);
  KEY(sb, ", ", RANK);
  put_rank(sb, c);
  KEY(sb, ", ", COMM_NRANKS);
  acl_sb_printf(sb, "%d", c->nranks);
  KEY(sb, ", ", COMM_NNODES);
  acl_sb_printf(sb, "%d", c->nnodes);
  KEY(sb, ",\n     ", COMM_ROLE);
  JSTR(sb, c->role);
  KEY(sb, ", ", COMM_CONSENSUS_WAIT_SECONDS);
  put_ratio(sb, c->consensus_wait_seconds);
  KEY(sb, ", ", COMM_BLOCKS_PUBLISHED);
  acl_render_u64(sb, c->blocks_published);
  KEY(sb, ",\n     ", COMM_LOCK_ACQUISITIONS);
  acl_render_u64(sb, c->lock_acquisitions);
  KEY(sb, ", ", COMM_SAMPLES_BUSY);
  acl_render_u64(sb, c->samples_busy);
  KEY(sb, ", ", COMM_WORKLOADS_REFUSED);
  acl_render_u64(sb, c->workloads_refused);
  acl_sb_puts(sb, "}");
}

void acl_render_state_json(const acl_snapshot_t *s, acl_strbuf_t *out)
{
  KEY(out, "{\n  ", VERSION);
  acl_sb_printf(out, "%d", ACL_SNAPSHOT_VERSION);
  KEY(out, ",\n  ", HOST);
  JSTR(out, s->hostname);
  KEY(out, ", ", PID);
  acl_sb_printf(out, "%d", s->pid);
  KEY(out, ", ", LOCAL_RANK);
  acl_sb_printf(out, "%d", s->local_rank);
  KEY(out, ", ", MODE);
  JSTR(out, s->mode);
  KEY(out, ",\n  ", UPTIME_SECONDS);
  put_ratio(out, s->uptime_seconds);
  KEY(out, ",\n  ", PROFILER);
  acl_render_profiler_json(&s->profiler, out);
  KEY(out, ",\n  ", JOB);
  put_job(out, s);
  KEY(out, ",\n  ", COMMUNICATORS);
  acl_sb_puts(out, "[");
  int nc = s->ncomms < 0 ? 0 : (s->ncomms > ACL_SNAP_MAX_COMMS ? ACL_SNAP_MAX_COMMS : s->ncomms);
  for (int i = 0; i < nc; i++) {
    acl_sb_puts(out, i ? ",\n    " : "\n    ");
    put_comm(out, &s->comms[i]);
  }
  KEY(out, nc ? "\n  ],\n  " : "],\n  ", WORKLOADS);
  acl_sb_puts(out, "[");
  int nw = s->nworkloads < 0
               ? 0
               : (s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? ACL_SNAP_MAX_WORKLOADS : s->nworkloads);
  for (int i = 0; i < nw; i++) {
    acl_sb_puts(out, i ? ",\n    " : "\n    ");
    put_workload(out, s, &s->workloads[i]);
  }
  KEY(out, nw ? "\n  ],\n  " : "],\n  ", WORKLOADS_TRUNCATED);
  acl_sb_puts(out, s->workloads_truncated || s->nworkloads > ACL_SNAP_MAX_WORKLOADS ? "true\n}\n"
                                                                                    : "false\n}\n");
}

void acl_render_event_json(const acl_snapshot_t *s, const acl_snap_workload_t *w, acl_strbuf_t *out)
{
  acl_render_workload_head(out, s, w);
  KEY(out, ", ", STATE);
  acl_render_json_str(out, acl_snap_state_name(w), 32);
  KEY(out, ", ", DECIDED);
  acl_sb_puts(out, acl_snap_decided(w) ? "true" : "false");
  KEY(out, ", ", STEP);
  int n = clamp_traj(w->traj_len);
  if (n > 0)
    acl_render_u64(out, w->traj[n - 1].step);
  else
    acl_sb_puts(out, "null");
  KEY(out, ", ", CANDIDATE);
  put_cand(out, true, &w->current);
  KEY(out, ", ", BEST);
  put_cand(out, w->has_best, &w->best);
  KEY(out, ", ", BUSBW);
  put_opt_num(out, w->has_busbw, w->busbw);
  KEY(out, ", ", OVERLAP);
  if (w->has_overlap)
    put_ratio(out, w->overlap);
  else
    acl_sb_puts(out, "null");
  KEY(out, ", ", SPEEDUP);
  put_opt_num(out, w->has_speedup, w->speedup);
  acl_sb_puts(out, "}");
}

/* The compact spelling of /api/v1/host: sep, then "key": without a space. */
static void ckey(acl_strbuf_t *sb, const char *sep, acl_field_t f)
{
  acl_sb_puts(sb, sep);
  acl_sb_json_str(sb, acl_fields[f].key);
  acl_sb_append(sb, ":", 1);
}

void acl_render_host_json(const char *host, int pid, int local_rank, const acl_snap_proc_t *procs,
                          int n, acl_strbuf_t *out)
{
  ckey(out, "{", ACL_F_VERSION);
  acl_sb_puts(out, "1");
  ckey(out, ",", ACL_F_HOST);
  acl_sb_json_str(out, host ? host : "");
  ckey(out, ",", ACL_F_PID);
  acl_sb_printf(out, "%d", pid);
  ckey(out, ",", ACL_F_LOCAL_RANK);
  acl_sb_printf(out, "%d", local_rank);
  ckey(out, ",", ACL_F_PROCESSES);
  acl_sb_puts(out, "[");
  for (int i = 0; i < n; i++) {
    ckey(out, i ? ",{" : "{", ACL_F_LOCAL_RANK);
    acl_sb_printf(out, "%d", procs[i].local_rank);
    ckey(out, ",", ACL_F_PID);
    acl_sb_printf(out, "%d", procs[i].pid);
    ckey(out, ",", ACL_F_PORT);
    if (procs[i].port > 0)
      acl_sb_printf(out, "%d}", procs[i].port);
    else
      acl_sb_puts(out, "null}");
  }
  acl_sb_puts(out, "]}\n");
}
