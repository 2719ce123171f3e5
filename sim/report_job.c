/* The plugin's job report in the simulator's report: every rank process
 * writes one (AUTOCCL_REPORT = <logdir>/report-<proc>.json); the text of
 * process 0 is printed as is, and the job's totals are the per-rank means
 * over every process's "totals" (each rank waits for every collective, so
 * a rank's saving is the job's wall-time saving). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safefile.h"
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
                  "\"exploration_cost_per_rank_seconds\":%.9g",
                  t.saved / k, t.nccl / k, t.cost / k);
  else
    acl_sb_puts(sb, ",\"net_saved_per_rank_seconds\":null,\"nccl_per_rank_seconds\":null,"
                    "\"exploration_cost_per_rank_seconds\":null");
  /* What the job really saved: the simulator knows both times of every
   * call (acl_sim_rank_slot_t.ran_seconds), so the plugin's account above
   * can be checked against it. */
  double alone = 0.0, ran = 0.0;
  for (int r = 0; r < w->o->nranks; r++) {
    alone += w->ctl->rank[r].nccl_alone_seconds;
    ran += w->ctl->rank[r].ran_seconds;
  }
  if (w->o->nranks > 1)
    acl_sb_printf(sb, ",\"true_saved_per_rank_seconds\":%.9g}", (alone - ran) / w->o->nranks);
  else
    acl_sb_puts(sb, ",\"true_saved_per_rank_seconds\":null}");
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

/* The string value of "key": in json (the report's header), at most len-1
 * bytes, '/' and escapes replaced by '_' (it becomes part of a path). */
static bool first_str(const char *json, const char *key, char *out, size_t len)
{
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *p = strstr(json, pat);
  if (!p || len == 0)
    return false;
  p += strlen(pat);
  while (*p == ' ')
    p++;
  if (*p++ != '"')
    return false;
  size_t o = 0;
  for (; *p && *p != '"' && o + 1 < len; p++)
    out[o++] = (*p == '/' || *p == '\\' || (unsigned char)*p < 0x20) ? '_' : *p;
  out[o] = '\0';
  return *p == '"' && o > 0;
}

/* The user's name for the report js of process proc: the plugin's meaning
 * of the template (%p the pid, %r the local rank, %h the host name; neither
 * %p nor %r: ".<local rank>" appended on local ranks other than 0), read
 * from the report itself. A simulated host k > 0 of several is
 * "<host>.<k>": they all run on this machine. false when it does not fit. */
static bool dest_name(const acl_sim_world_t *w, int proc, const char *tmpl, const char *js,
                      char *dst, size_t len)
{
  double pid, local;
  char host[80];
  if (!first_num(js, "pid", &pid) || !first_num(js, "local_rank", &local) ||
      !first_str(js, "host", host, sizeof(host) - 8))
    return false;
  int rpp = w->o->ranks_per_proc > 0 ? w->o->ranks_per_proc : 1;
  int ranks_per_host = w->o->nranks / (w->o->nhosts > 0 ? w->o->nhosts : 1);
  int sim_host = proc * rpp / ranks_per_host;
  if (w->o->nhosts > 1 && sim_host > 0)
    snprintf(host + strlen(host), sizeof(host) - strlen(host), ".%d", sim_host);
  size_t o = 0;
  bool per_proc = false;
  for (const char *c = tmpl; *c; c++) {
    int n;
    if (c[0] == '%' && (c[1] == 'p' || c[1] == 'r')) {
      n = snprintf(dst + o, len - o, "%d", (int)(c[1] == 'p' ? pid : local));
      per_proc = true;
      c++;
    } else if (c[0] == '%' && c[1] == 'h') {
      n = snprintf(dst + o, len - o, "%s", host);
      c++;
    } else {
      n = snprintf(dst + o, len - o, "%c", *c);
    }
    if (n < 0 || (size_t)n >= len - o)
      return false;
    o += (size_t)n;
  }
  if (!per_proc && (int)local != 0) {
    int n = snprintf(dst + o, len - o, ".%d", (int)local);
    if (n < 0 || (size_t)n >= len - o)
      return false;
  }
  return true;
}

/* Writes text to dst as the plugin writes its report: never through a
 * planted link, FIFO or device (core/safefile.h). */
static bool write_copy(const char *dst, const char *text, int proc)
{
  char err[640];
  if (acl_sfile_write_atomic(dst, text, strlen(text), 0644, err, sizeof(err)) == 0)
    return true;
  fprintf(stderr, "autoccl-sim: AUTOCCL_REPORT: rank process %d's report not copied: %s\n", proc,
          err);
  return false;
}

void acl_sim_job_copy(const acl_sim_world_t *w, const char *tmpl)
{
  if (!tmpl || !tmpl[0])
    return;
  int n = nprocs_of(w);
  char(*dst)[600] = calloc((size_t)n, sizeof(*dst));
  if (!dst) {
    fprintf(stderr, "autoccl-sim: AUTOCCL_REPORT: out of memory; no report copied\n");
    return;
  }
  for (int p = 0; p < n; p++) {
    char src[340];
    acl_sim_report_path(w, p, false, src, sizeof(src) - 4);
    char *js = slurp(src);
    snprintf(src + strlen(src), sizeof(src) - strlen(src), ".txt");
    char *tx = slurp(src);
    if (!js || !tx || !dest_name(w, p, tmpl, js, dst[p], sizeof(dst[p]) - 4)) {
      fprintf(stderr, "autoccl-sim: AUTOCCL_REPORT: %s\n",
              !js || !tx ? "a rank process wrote no report; not copied"
                         : "the path is too long once expanded (or the report lacks its header); "
                           "not copied");
      dst[p][0] = '\0';
      goto next;
    }
    for (int q = 0; q < p; q++)
      if (strcmp(dst[q], dst[p]) == 0) {
        fprintf(stderr,
                "autoccl-sim: AUTOCCL_REPORT: rank processes %d and %d would both write %s; "
                "rank process %d's report not copied (put %%p or %%r in the name)\n",
                q, p, dst[p], p);
        goto next;
      }
    if (write_copy(dst[p], js, p)) {
      char txt[604];
      snprintf(txt, sizeof(txt), "%s.txt", dst[p]);
      write_copy(txt, tx, p);
    }
  next:
    free(js);
    free(tx);
  }
  free(dst);
}
