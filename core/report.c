/* The job report (core/report.h). */
#include "core/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/render_util.h"

static int clamp_n(int n, int max) { return n < 0 ? 0 : (n > max ? max : n); }

const acl_candidate_t *acl_report_decision(const acl_snap_workload_t *w)
{
  switch (w->phase) {
  case ACL_PHASE_EXPLORING:
  case ACL_PHASE_RETUNING:
    return NULL;
  default:
    return &w->current;
  }
}

double acl_report_nccl_seconds(const acl_snap_workload_t *w)
{
  return w->has_baseline && isfinite(w->baseline_seconds) && w->baseline_seconds > 0
             ? (double)w->calls * w->baseline_seconds
             : -1.0;
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
    t->converged += acl_phase_decided(w->phase);
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
  acl_sb_printf(sb, "{\"ranks\": %d, \"workloads\": %d, \"converged\": %d, \"calls\": %" PRIu64,
                t->ranks, t->workloads, t->converged, t->calls);
  acl_sb_puts(sb, ",\n    \"nccl_seconds\": ");
  acl_render_json_num(sb, t->nccl_seconds);
  acl_sb_puts(sb, ", \"net_saved_seconds\": ");
  acl_render_json_num(sb, t->net_saved_seconds);
  acl_sb_puts(sb, ", \"exploration_cost_seconds\": ");
  acl_render_json_num(sb, t->exploration_cost_seconds);
  acl_sb_puts(sb, ", \"net_saved_per_rank_seconds\": ");
  acl_render_json_num(sb, t->per_rank_seconds);
  acl_sb_puts(sb, "}");
}

static void put_workload(acl_strbuf_t *sb, const acl_snapshot_t *s, const acl_snap_workload_t *w)
{
  int nc = clamp_n(s->ncomms, ACL_SNAP_MAX_COMMS);
  const acl_snap_comm_t *c = w->comm >= 0 && w->comm < nc ? &s->comms[w->comm] : NULL;
  acl_render_workload_head(sb, s, w);
  acl_sb_puts(sb, ", \"comm_name\": ");
  acl_render_json_str(sb, c ? c->name : "", c ? sizeof(c->name) : 1);
  acl_sb_puts(sb, ",\n     \"state\": ");
  acl_render_json_str(sb, acl_phase_name(w->phase), 32);
  acl_sb_printf(sb, ", \"calls\": %" PRIu64 ", \"nccl_seconds\": ", w->calls);
  double ns = acl_report_nccl_seconds(w);
  put_num(sb, ns >= 0, ns);
  acl_sb_puts(sb, ", \"decision\": ");
  const acl_candidate_t *d = acl_report_decision(w);
  if (d) {
    acl_sb_puts(sb, "{");
    acl_render_cand_fields(sb, d);
    acl_sb_puts(sb, "}");
  } else {
    acl_sb_puts(sb, "null");
  }
  acl_sb_printf(sb, ", \"source\": \"%s\",\n     \"speedup\": ", acl_source_name(w->source));
  put_num(sb, w->has_speedup, w->speedup);
  acl_sb_puts(sb, ", \"speedup_low\": ");
  put_num(sb, w->has_speedup_ci, w->speedup_lo);
  acl_sb_puts(sb, ", \"speedup_high\": ");
  put_num(sb, w->has_speedup_ci, w->speedup_hi);
  acl_sb_puts(sb, ", \"net_saved_seconds\": ");
  put_num(sb, w->has_net, w->time_saved_seconds);
  acl_sb_puts(sb, ", \"exploration_cost_seconds\": ");
  put_num(sb, w->has_net, w->exploration_cost_seconds);
  acl_sb_puts(sb, "}");
}

void acl_report_json(const acl_snapshot_t *s, acl_strbuf_t *out)
{
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  acl_sb_printf(out, "{\n  \"version\": %d, \"kind\": \"autoccl-job-report\",\n  \"host\": ",
                ACL_REPORT_VERSION);
  acl_render_json_str(out, s->hostname, sizeof(s->hostname));
  acl_sb_printf(out, ", \"pid\": %d, \"local_rank\": %d, \"mode\": ", s->pid, s->local_rank);
  acl_render_json_str(out, s->mode, sizeof(s->mode));
  acl_sb_puts(out, ", \"uptime_seconds\": ");
  acl_render_json_num(out, s->uptime_seconds);
  acl_sb_puts(out, ",\n  \"totals\": ");
  put_totals(out, &t);
  acl_sb_puts(out, ",\n  \"workloads\": [");
  int nw = clamp_n(s->nworkloads, ACL_SNAP_MAX_WORKLOADS);
  for (int i = 0; i < nw; i++) {
    acl_sb_puts(out, i ? ",\n    " : "\n    ");
    put_workload(out, s, &s->workloads[i]);
  }
  acl_sb_printf(out, "%s\n  \"workloads_truncated\": %s\n}\n", nw ? "\n  ]," : "],",
                s->workloads_truncated ? "true" : "false");
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

void acl_report_text(const acl_snapshot_t *s, acl_strbuf_t *out)
{
  acl_report_totals_t t;
  acl_report_totals(s, &t);
  acl_sb_printf(out, "autoccl job report: host %.*s pid %d local rank %d, mode %.*s, %.1f s\n",
                (int)sizeof(s->hostname), s->hostname, s->pid, s->local_rank, (int)sizeof(s->mode),
                s->mode, s->uptime_seconds);
  acl_sb_printf(out, "%-16s %4s %-13s %9s  %-9s %-17s %-8s %-19s %10s %10s %10s %9s\n", "COMM",
                "RANK", "COLLECTIVE", "SIZE", "STATE", "DECISION", "SOURCE", "SPEEDUP (interval)",
                "NCCL TIME", "NET SAVED", "EXPLORE", "CALLS");
  int nw = clamp_n(s->nworkloads, ACL_SNAP_MAX_WORKLOADS);
  int nc = clamp_n(s->ncomms, ACL_SNAP_MAX_COMMS);
  for (int i = 0; i < nw; i++) {
    const acl_snap_workload_t *w = &s->workloads[i];
    const acl_snap_comm_t *c = w->comm >= 0 && w->comm < nc ? &s->comms[w->comm] : NULL;
    char size[24], dec[48], sp[48], ns[24], saved[24], cost[24];
    fmt_bytes(w->key.nbytes, size, sizeof(size));
    const acl_candidate_t *d = acl_report_decision(w);
    if (d && d->algo == ACL_ALGO_NCCL)
      snprintf(dec, sizeof(dec), "NCCL");
    else if (d)
      acl_candidate_str(d, dec, sizeof(dec));
    else
      snprintf(dec, sizeof(dec), "-");
    if (w->has_speedup && w->has_speedup_ci)
      snprintf(sp, sizeof(sp), "%.3fx (%.3f-%.3f)", w->speedup, w->speedup_lo, w->speedup_hi);
    else if (w->has_speedup)
      snprintf(sp, sizeof(sp), "%.3fx", w->speedup);
    else
      snprintf(sp, sizeof(sp), "-");
    double nsec = acl_report_nccl_seconds(w);
    if (nsec >= 0)
      fmt_secs(nsec, false, ns, sizeof(ns));
    else
      snprintf(ns, sizeof(ns), "-");
    if (w->has_net) {
      fmt_secs(w->time_saved_seconds, true, saved, sizeof(saved));
      fmt_secs(w->exploration_cost_seconds, false, cost, sizeof(cost));
    } else {
      snprintf(saved, sizeof(saved), "-");
      snprintf(cost, sizeof(cost), "-");
    }
    char rank[16];
    if (w->rank >= 0)
      snprintf(rank, sizeof(rank), "%d", w->rank);
    else
      snprintf(rank, sizeof(rank), "?");
    acl_sb_printf(
        out, "%-16.16s %4s %-13s %9s  %-9s %-17s %-8s %-19s %10s %10s %10s %9" PRIu64 "\n",
        c ? c->name : "?", rank, acl_coll_name(w->key.coll), size, acl_phase_name(w->phase), dec,
        acl_source_name(w->source), sp, ns, saved, cost, w->calls);
  }
  acl_sb_puts(out, "total: ");
  acl_report_totals_line(&t, out);
  acl_sb_puts(out, "\n");
}
