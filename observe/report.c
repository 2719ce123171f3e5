/* The job report (observe/observe.h). */
#include "observe/observe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "observe/observe_int.h"

/* sep, then the key of row ID of observe/fields.def */
#define KEY(sb, sep, ID) acl_render_key((sb), (sep), ACL_F_##ID)

static int clamp_n(int n, int max) { return n < 0 ? 0 : (n > max ? max : n); }

const acl_candidate_t *acl_report_decision(const acl_snap_workload_t *w)
{
  if (w->captured)
    return &w->current; /* what the capture got */
  switch (w->phase) {
  case ACL_PHASE_EXPLORING:
  case ACL_PHASE_RETUNING:
    return NULL;
  case ACL_PHASE_WAIT_BUDGET:
  case ACL_PHASE_WAIT_SAMPLES:
    /* a wait between two steps of the search: the speedup shown is its best
     * candidate so far, so no decision either (NCCL's choice beside a
     * speedup that is not 1 read as a contradiction) */
    return w->has_speedup ? NULL : &w->current;
  default:
    return &w->current;
  }
}

double acl_report_nccl_seconds(const acl_snap_workload_t *w)
{
  double b = w->has_baseline ? w->baseline_seconds : w->baseline_kept_seconds;
  return isfinite(b) && b > 0 ? (double)w->calls * b : -1.0;
}

void acl_report_totals(const acl_snapshot_t *s, acl_report_totals_t *t)
{
  memset(t, 0, sizeof(*t));
  int nw = clamp_n(s->nworkloads, ACL_SNAP_MAX_WORKLOADS);
  /* distinct rank numbers: ranks of one process are few, a small set will do */
  int seen[64], nseen = 0;
  for (int i = 0; i < nw; i++) {
    const acl_snap_workload_t *w = &s->workloads[i];
    t->workloads++;
    /* not still validating or refining, nor shown captured */
    t->converged += !w->captured && w->phase == ACL_PHASE_CONVERGED;
    t->calls += w->calls;
    double ns = acl_report_nccl_seconds(w);
    if (ns > 0)
      t->nccl_seconds += ns;
    if (w->has_net) {
      t->net_saved_seconds += w->time_saved_seconds;
      t->exploration_cost_seconds += w->exploration_cost_seconds;
      if (ns > 0) {
        t->priced_nccl_seconds += ns;
        t->priced_saved_seconds += w->time_saved_seconds;
      }
    }
    bool known = false;
    for (int k = 0; k < nseen; k++)
      known = known || seen[k] == w->rank;
    if (!known && nseen < (int)(sizeof(seen) / sizeof(seen[0])))
      seen[nseen++] = w->rank;
  }
  t->ranks = nseen;
  t->per_rank_seconds = nseen ? t->net_saved_seconds / nseen : 0.0;
}

static void put_num(acl_strbuf_t *sb, bool valid, double v)
{
  if (valid)
    acl_render_json_num(sb, v);
  else
    acl_sb_puts(sb, "null");
}

static void put_totals(acl_strbuf_t *sb, const acl_report_totals_t *t)
{
  KEY(sb, "{", RANKS);
  acl_sb_printf(sb, "%d", t->ranks);
  KEY(sb, ", ", TOT_WORKLOADS);
  acl_sb_printf(sb, "%d", t->workloads);
  KEY(sb, ", ", CONVERGED);
  acl_sb_printf(sb, "%d", t->converged);
  KEY(sb, ", ", CALLS);
  acl_render_u64(sb, t->calls);
  KEY(sb, ",\n    ", TOT_NCCL_SECONDS);
  acl_render_json_num(sb, t->nccl_seconds);
  KEY(sb, ", ", TOT_NET_SAVED_SECONDS);
  acl_render_json_num(sb, t->net_saved_seconds);
  KEY(sb, ", ", TOT_EXPLORATION_COST_SECONDS);
  acl_render_json_num(sb, t->exploration_cost_seconds);
  KEY(sb, ", ", NET_SAVED_PER_RANK_SECONDS);
  acl_render_json_num(sb, t->per_rank_seconds);
  acl_sb_puts(sb, "}");
}

static void put_workload(acl_strbuf_t *sb, const acl_snapshot_t *s, const acl_snap_workload_t *w)
{
  int nc = clamp_n(s->ncomms, ACL_SNAP_MAX_COMMS);
  const acl_snap_comm_t *c = w->comm >= 0 && w->comm < nc ? &s->comms[w->comm] : NULL;
  acl_render_workload_head(sb, s, w);
  KEY(sb, ", ", RW_COMM_NAME);
  acl_render_json_str(sb, c ? c->name : "", c ? sizeof(c->name) : 1);
  KEY(sb, ",\n     ", STATE);
  acl_render_json_str(sb, acl_snap_state_name(w), 32);
  KEY(sb, ", ", CALLS);
  acl_render_u64(sb, w->calls);
  KEY(sb, ", ", RW_NCCL_SECONDS);
  double ns = acl_report_nccl_seconds(w);
  put_num(sb, ns >= 0, ns);
  KEY(sb, ", ", RW_DECISION);
  const acl_candidate_t *d = acl_report_decision(w);
  if (d) {
    acl_sb_puts(sb, "{");
    acl_render_cand_fields(sb, d);
    acl_sb_puts(sb, "}");
  } else {
    acl_sb_puts(sb, "null");
  }
  KEY(sb, ", ", SOURCE);
  acl_sb_printf(sb, "\"%s\"", acl_source_name(w->source));
  KEY(sb, ",\n     ", SPEEDUP);
  put_num(sb, w->has_speedup, w->speedup);
  KEY(sb, ", ", SPEEDUP_LOW);
  put_num(sb, w->has_speedup_ci, w->speedup_lo);
  KEY(sb, ", ", SPEEDUP_HIGH);
  put_num(sb, w->has_speedup_ci, w->speedup_hi);
  KEY(sb, ", ", RW_NET_SAVED_SECONDS);
  put_num(sb, w->has_net, w->time_saved_seconds);
  KEY(sb, ", ", EXPLORATION_COST_SECONDS);
  put_num(sb, w->has_net, w->exploration_cost_seconds);
  acl_render_wait_and_clock(sb, w);
  KEY(sb, ", ", RETUNES);
  acl_render_u64(sb, w->retunes);
  KEY(sb, ", ", RETUNE_CAUSE);
  acl_render_retune_cause(sb, w->retune_cause);
  acl_sb_puts(sb, "}");
}

void acl_report_json(const acl_snapshot_t *s, acl_strbuf_t *out)
{
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  KEY(out, "{\n  ", VERSION);
  acl_sb_printf(out, "%d", ACL_REPORT_VERSION);
  KEY(out, ", ", KIND);
  acl_sb_puts(out, "\"autoccl-job-report\"");
  KEY(out, ",\n  ", HOST);
  acl_render_json_str(out, s->hostname, sizeof(s->hostname));
  KEY(out, ", ", PID);
  acl_sb_printf(out, "%d", s->pid);
  KEY(out, ", ", LOCAL_RANK);
  acl_sb_printf(out, "%d", s->local_rank);
  KEY(out, ", ", MODE);
  acl_render_json_str(out, s->mode, sizeof(s->mode));
  KEY(out, ", ", UPTIME_SECONDS);
  acl_render_json_num(out, s->uptime_seconds);
  KEY(out, ",\n  ", TOTALS);
  put_totals(out, &t);
  KEY(out, ",\n  ", PROFILER);
  acl_render_profiler_json(&s->profiler, out);
  KEY(out, ",\n  ", WORKLOADS);
  acl_sb_puts(out, "[");
  int nw = clamp_n(s->nworkloads, ACL_SNAP_MAX_WORKLOADS);
  for (int i = 0; i < nw; i++) {
    acl_sb_puts(out, i ? ",\n    " : "\n    ");
    put_workload(out, s, &s->workloads[i]);
  }
  KEY(out, nw ? "\n  ],\n  " : "],\n  ", WORKLOADS_TRUNCATED);
  acl_sb_puts(out, s->workloads_truncated ? "true\n}\n" : "false\n}\n");
}

/* "1.5 MiB", "416.0 MiB", "64 KiB": the size as the live views print it. */
static void fmt_bytes(uint64_t b, char *buf, size_t len)
{
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0 || v >= 1000.0 || v == floor(v))
    snprintf(buf, len, "%.0f %s", v, unit[u]);
  else
    snprintf(buf, len, "%.1f %s", v, unit[u]);
}

/* Seconds with a sign in s or ms: "+1.234 s", "-56.7 ms", "0.037 ms". The
 * unit is picked after rounding, so 0.9999 s is "1.000 s", not "1000.0 ms". */
static void fmt_secs(double v, bool sign, char *buf, size_t len)
{
  const char *sg = sign && v > 0 ? "+" : "";
  double a = fabs(v);
  if (a >= 0.99995 || a == 0.0) /* from here "%.1f ms" would say 1000.0 */
    snprintf(buf, len, "%s%.3f s", sg, v);
  else if (a >= 1e-3)
    snprintf(buf, len, "%s%.1f ms", sg, v * 1e3);
  else
    snprintf(buf, len, "%s%.3f ms", sg, v * 1e3);
}

void acl_report_totals_line(const acl_report_totals_t *t, acl_strbuf_t *out)
{
  char saved[32], nccl[32], cost[32], per[32];
  fmt_secs(t->net_saved_seconds, true, saved, sizeof(saved));
  fmt_secs(t->nccl_seconds, false, nccl, sizeof(nccl));
  fmt_secs(t->exploration_cost_seconds, false, cost, sizeof(cost));
  fmt_secs(t->per_rank_seconds, true, per, sizeof(per));
  acl_sb_printf(out, "net saved %s of %s NCCL time", saved, nccl);
  if (t->priced_nccl_seconds > 0) {
    bool all = t->priced_nccl_seconds == t->nccl_seconds &&
               t->priced_saved_seconds == t->net_saved_seconds;
    acl_sb_printf(out, " (%+.2f %%%s)", 100.0 * t->priced_saved_seconds / t->priced_nccl_seconds,
                  all ? "" : " where both are known");
  }
  acl_sb_printf(out, ", exploration cost %s; %d rank%s, %s per rank; %d/%d workloads converged",
                cost, t->ranks, t->ranks == 1 ? "" : "s", per, t->converged, t->workloads);
}

/* One row of the text report, its cells formatted. */
typedef struct text_row {
  char comm[17], rank[16], size[24], dec[64], sp[48], ns[24], saved[24], cost[24];
  const char *coll, *state, *source;
} text_row_t;

static void text_row(const acl_snapshot_t *s, const acl_snap_workload_t *w, text_row_t *r)
{
  int nc = clamp_n(s->ncomms, ACL_SNAP_MAX_COMMS);
  const acl_snap_comm_t *c = w->comm >= 0 && w->comm < nc ? &s->comms[w->comm] : NULL;
  snprintf(r->comm, sizeof(r->comm), "%.16s", c ? c->name : "?");
  fmt_bytes(w->key.nbytes, r->size, sizeof(r->size));
  const acl_candidate_t *d = acl_report_decision(w);
  if (d && d->algo == ACL_ALGO_NCCL && acl_snap_decided(w) && w->candidates_evaluated > 0)
    acl_kept_nccl_str((long long)w->candidates_evaluated, r->dec, sizeof(r->dec));
  else if (d && d->algo == ACL_ALGO_NCCL)
    snprintf(r->dec, sizeof(r->dec), "NCCL");
  else if (d)
    acl_candidate_str(d, r->dec, sizeof(r->dec));
  else
    snprintf(r->dec, sizeof(r->dec), "-");
  if (w->has_speedup && w->has_speedup_ci)
    snprintf(r->sp, sizeof(r->sp), "%.3fx (%.3f-%.3f)", w->speedup, w->speedup_lo, w->speedup_hi);
  else if (w->has_speedup)
    snprintf(r->sp, sizeof(r->sp), "%.3fx", w->speedup);
  else
    snprintf(r->sp, sizeof(r->sp), "-");
  double nsec = acl_report_nccl_seconds(w);
  if (nsec >= 0)
    fmt_secs(nsec, false, r->ns, sizeof(r->ns));
  else
    snprintf(r->ns, sizeof(r->ns), "-");
  if (w->has_net) {
    fmt_secs(w->time_saved_seconds, true, r->saved, sizeof(r->saved));
    fmt_secs(w->exploration_cost_seconds, false, r->cost, sizeof(r->cost));
  } else {
    snprintf(r->saved, sizeof(r->saved), "-");
    snprintf(r->cost, sizeof(r->cost), "-");
  }
  if (w->rank >= 0)
    snprintf(r->rank, sizeof(r->rank), "%d", w->rank);
  else
    snprintf(r->rank, sizeof(r->rank), "?");
  r->coll = acl_coll_name(w->key.coll);
  r->state = acl_snap_state_name(w);
  r->source = acl_source_name(w->source);
}

/* Column widths: the header's or the widest value's (a fixed width let
 * "waiting-samples" push the rest of its row out of line). */
enum { COL_COMM, COL_RANK, COL_COLL, COL_SIZE, COL_STATE, COL_DEC, COL_SRC, COL_SP, COL_NS,
       COL_SAVED, COL_COST, COL_CALLS, NCOLS };

static void widen(int *w, const char *v)
{
  int n = (int)strlen(v);
  if (n > *w)
    *w = n;
}

void acl_report_text(const acl_snapshot_t *s, acl_strbuf_t *out)
{
  static const char *const head[NCOLS] = {
      "COMM",     "RANK",   "COLLECTIVE",         "SIZE",      "STATE",     "DECISION",
      "SOURCE",   "SPEEDUP (interval)", "NCCL TIME", "NET SAVED", "EXPLORE", "CALLS"};
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  acl_sb_printf(out, "autoccl job report: host %.*s pid %d local rank %d, mode %.*s, %.1f s\n",
                (int)sizeof(s->hostname), s->hostname, s->pid, s->local_rank, (int)sizeof(s->mode),
                s->mode, s->uptime_seconds);
  int nw = clamp_n(s->nworkloads, ACL_SNAP_MAX_WORKLOADS);
  int wd[NCOLS];
  for (int k = 0; k < NCOLS; k++)
    wd[k] = (int)strlen(head[k]);
  for (int i = 0; i < nw; i++) {
    text_row_t r;
    char calls[24];
    text_row(s, &s->workloads[i], &r);
    snprintf(calls, sizeof(calls), "%" PRIu64, s->workloads[i].calls);
    const char *v[NCOLS] = {r.comm, r.rank, r.coll,  r.size, r.state, r.dec,
                            r.source, r.sp, r.ns,    r.saved, r.cost, calls};
    for (int k = 0; k < NCOLS; k++)
      widen(&wd[k], v[k]);
  }
  acl_sb_printf(out, "%-*s %*s %-*s %*s  %-*s %-*s %-*s %-*s %*s %*s %*s %*s\n", wd[0], head[0],
                wd[1], head[1], wd[2], head[2], wd[3], head[3], wd[4], head[4], wd[5], head[5],
                wd[6], head[6], wd[7], head[7], wd[8], head[8], wd[9], head[9], wd[10], head[10],
                wd[11], head[11]);
  for (int i = 0; i < nw; i++) {
    text_row_t r;
    text_row(s, &s->workloads[i], &r);
    acl_sb_printf(out, "%-*s %*s %-*s %*s  %-*s %-*s %-*s %-*s %*s %*s %*s %*" PRIu64 "\n", wd[0],
                  r.comm, wd[1], r.rank, wd[2], r.coll, wd[3], r.size, wd[4], r.state, wd[5], r.dec,
                  wd[6], r.source, wd[7], r.sp, wd[8], r.ns, wd[9], r.saved, wd[10], r.cost, wd[11],
                  s->workloads[i].calls);
  }
  acl_sb_puts(out, "total: ");
  acl_report_totals_line(&t, out);
  acl_sb_puts(out, "\n");
  /* where the samples came from, and what was lost on the way: a workload
   * that kept waiting for samples is explained here */
  const acl_snap_profiler_t *p = &s->profiler;
  acl_sb_printf(out,
                "profiler: source %.*s, %" PRIu64 " samples, %" PRIu64
                " kernels not used (stale timestamps), %" PRIu64 " records dropped, %" PRIu64
                " calls where NCCL ran other than decided",
                (int)sizeof(p->source), p->source, p->samples, p->stale, p->records_dropped,
                p->mismatches);
  if (p->sample_latency_seconds >= 0)
    acl_sb_printf(out, ", samples %.3f s after their call (median)", p->sample_latency_seconds);
  acl_sb_puts(out, "\n");
  /* why a workload never measured: the budget it waits for, in calls, and
   * what that budget is to pay */
  static const char *const what[ACL_NUM_WAIT_FOR] = {
      [ACL_WAIT_FOR_FIRST_EVENTS] = "the first profiler events, paid once",
      [ACL_WAIT_FOR_BASELINE] = "its first samples of NCCL's choice",
      [ACL_WAIT_FOR_CANDIDATE] = "its next candidate's first samples",
      [ACL_WAIT_FOR_CONFIRM] = "more samples of its best candidate",
      [ACL_WAIT_FOR_VALIDATION] = "validation's next block",
  };
  for (int i = 0; i < nw; i++) {
    const acl_snap_workload_t *w = &s->workloads[i];
    if (!w->budget_wait_calls)
      continue;
    char size[24];
    fmt_bytes(w->key.nbytes, size, sizeof(size));
    int why = w->budget_wait_for;
    acl_sb_printf(out,
                  "waiting-budget: %s %s needs about %" PRIu64 " more calls before its next "
                  "measurement is paid for",
                  acl_coll_name(w->key.coll), size, w->budget_wait_calls);
    if (why > 0 && why < ACL_NUM_WAIT_FOR)
      acl_sb_printf(out, ": %s", what[why]);
    acl_sb_puts(out, " (exploring may cost a share of the workload's time, "
                     "AUTOCCL_EXPLORE_BUDGET; before its first measurement this counts what the "
                     "communicator's other workloads can lend)\n");
  }
}
