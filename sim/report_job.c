/* The plugin's job report in the simulator's report: every rank process
 * writes one (AUTOCCL_REPORT = <logdir>/report-<proc>.json); the text of
 * process 0 is printed as is, and the job's totals are the per-rank means
 * over every process's "totals" (each rank waits for every collective, so
 * a rank's saving is the job's wall-time saving). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "sim/sim.h"

void acl_sim_report_path(const acl_sim_world_t *w, int proc, bool tmpl, char *buf, size_t len)
{
  /* %r (the local rank) in the template: without it the plugin would add
   * ".<local rank>" to the name on local ranks other than 0. */
  const acl_sim_opts_t *o = w->o;
  int rpp = o->ranks_per_proc > 0 ? o->ranks_per_proc : 1;
  int ranks_per_host = o->nranks / (o->nhosts > 0 ? o->nhosts : 1);
  int procs_per_host = (ranks_per_host + rpp - 1) / rpp;
  int local = proc - (proc * rpp / ranks_per_host) * procs_per_host;
  if (tmpl)
    snprintf(buf, len, "%s/report-%d.%%r.json", w->logdir, proc);
  else
    snprintf(buf, len, "%s/report-%d.%d.json", w->logdir, proc, local);
}

static int nprocs_of(const acl_sim_world_t *w)
{
  int rpp = w->o->ranks_per_proc > 0 ? w->o->ranks_per_proc : 1;
  return (w->o->nranks + rpp - 1) / rpp;
}

/* A JSON document on one line: the plugin escapes newlines inside strings,
 * so the raw ones are whitespace (the simulator's JSON is one line). */
static void put_one_line(acl_strbuf_t *sb, char *js)
{
  for (char *c = js; *c; c++)
    if (*c == '\n' || *c == '\r')
      *c = ' ';
  acl_sb_puts(sb, js);
}

/* The whole file, NUL-terminated (malloc'ed), or NULL. */
static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 14, len = 0;
  char *b = malloc(cap + 1);
  while (b) {
    size_t k = fread(b + len, 1, cap - len, f);
    len += k;
    if (len < cap)
      break;
    char *nb = cap < (256u << 20) ? realloc(b, cap * 2 + 1) : NULL;
    if (!nb) {
      free(b);
      b = NULL;
      break;
    }
    b = nb;
    cap *= 2;
  }
  fclose(f);
  if (b)
    b[len] = '\0';
  return b;
}

/* The first number after "key": in json (the report puts its totals
 * first); false when absent. */
static bool first_num(const char *json, const char *key, double *v)
{
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = strstr(json, pat);
  if (!p)
    return false;
  p += strlen(pat);
  char *e;
  *v = strtod(p, &e);
  return e != p && isfinite(*v);
}

typedef struct job_totals {
  int reports, ranks;
  double nccl, saved, cost;
} job_totals_t;

static void job_sum(const acl_sim_world_t *w, job_totals_t *t)
{
  memset(t, 0, sizeof(*t));
  for (int p = 0; p < nprocs_of(w); p++) {
    char path[320];
    acl_sim_report_path(w, p, false, path, sizeof(path));
    char *js = slurp(path);
    double r, ns, sv, c;
    if (js && first_num(js, "ranks", &r) && first_num(js, "nccl_seconds", &ns) &&
        first_num(js, "net_saved_seconds", &sv) && first_num(js, "exploration_cost_seconds", &c)) {
      t->reports++;
      t->ranks += (int)r;
      t->nccl += ns;
      t->saved += sv;
      t->cost += c;
    }
    free(js);
  }
}

bool acl_sim_job_text(const acl_sim_world_t *w, FILE *out)
{
  char path[330];
  acl_sim_report_path(w, 0, false, path, sizeof(path) - 4);
  snprintf(path + strlen(path), sizeof(path) - strlen(path), ".txt");
  char *tx = slurp(path);
  if (!tx)
    return false;
  fputs(tx, out);
  free(tx);
  job_totals_t t;
  job_sum(w, &t);
  if (t.ranks > 0) {
    double k = (double)t.ranks;
    fprintf(out,
            "job (%d ranks, %d of %d reports): per rank, net saved %+.3f s of %.3f s NCCL time "
            "(%+.2f %%), exploration cost %.4f s\n",
            t.ranks, t.reports, nprocs_of(w), t.saved / k, t.nccl / k,
            t.nccl > 0 ? 100.0 * t.saved / t.nccl : 0.0, t.cost / k);
  }
  return true;
}

void acl_sim_job_json(const acl_sim_world_t *w, char *const *states, acl_strbuf_t *sb)
{
  job_totals_t t;
  job_sum(w, &t);
  double k = t.ranks > 0 ? (double)t.ranks : NAN;
  acl_sb_printf(sb, ",\"job_totals\":{\"ranks\":%d,\"reports\":%d", t.ranks, t.reports);
  if (t.ranks > 0)
    acl_sb_printf(sb,
                  ",\"net_saved_per_rank_seconds\":%.9g,\"nccl_per_rank_seconds\":%.9g,"
                  "\"exploration_cost_per_rank_seconds\":%.9g}",
                  t.saved / k, t.nccl / k, t.cost / k);
  else
    acl_sb_puts(sb, ",\"net_saved_per_rank_seconds\":null,\"nccl_per_rank_seconds\":null,"
                    "\"exploration_cost_per_rank_seconds\":null}");
  /* Verbatim: each is one JSON document the plugin wrote or served. */
  acl_sb_puts(sb, ",\"job_reports\":[");
  for (int p = 0; p < nprocs_of(w); p++) {
    char path[320];
    acl_sim_report_path(w, p, false, path, sizeof(path));
    char *js = slurp(path);
    acl_sb_puts(sb, p ? "," : "");
    if (js && js[0] == '{')
      put_one_line(sb, js);
    else
      acl_sb_puts(sb, "null");
    free(js);
  }
  acl_sb_puts(sb, "],\"final_states\":[");
  for (int p = 0; p < nprocs_of(w); p++) {
    acl_sb_puts(sb, p ? "," : "");
    if (states && states[p] && states[p][0] == '{')
      put_one_line(sb, states[p]);
    else
      acl_sb_puts(sb, "null");
  }
  acl_sb_puts(sb, "]");
}

/* Copies the whole file src to dst; false on failure. */
static bool copy_file(const char *src, const char *dst)
{
  char *b = slurp(src);
  if (!b)
    return false;
  FILE *f = fopen(dst, "wb");
  bool ok = f && fputs(b, f) >= 0;
  if (f && fclose(f) != 0)
    ok = false;
  free(b);
  return ok;
}

void acl_sim_job_copy(const acl_sim_world_t *w, const char *tmpl)
{
  if (!tmpl || !tmpl[0])
    return;
  for (int p = 0; p < nprocs_of(w); p++) {
    char src[340], dst[600];
    size_t o = 0;
    for (const char *c = tmpl; *c && o + 24 < sizeof(dst); c++) {
      if (c[0] == '%' && (c[1] == 'r' || c[1] == 'p')) {
        o += (size_t)snprintf(dst + o, sizeof(dst) - o, "%d", p);
        c++;
      } else {
        dst[o++] = *c;
      }
    }
    dst[o] = '\0';
    if (!strstr(tmpl, "%r") && !strstr(tmpl, "%p") && p > 0)
      snprintf(dst + o, sizeof(dst) - o, ".%d", p);
    acl_sim_report_path(w, p, false, src, sizeof(src) - 4);
    bool ok = copy_file(src, dst);
    snprintf(src + strlen(src), sizeof(src) - strlen(src), ".txt");
    if (ok && strlen(dst) + 4 < sizeof(dst)) {
      snprintf(dst + strlen(dst), sizeof(dst) - strlen(dst), ".txt");
      ok = copy_file(src, dst);
    }
    if (!ok)
      fprintf(stderr,
              "autoccl-sim: AUTOCCL_REPORT: cannot copy the report of rank process %d to %s\n", p,
              dst);
  }
}
