/* Output without curses: the -b text table and the --json merged document. */
#include "tui/top.h"

#include "observe/observe.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef ACL_TOP_VERSION
#define ACL_TOP_VERSION "dev"
#endif

static void print_summary(FILE *f, const acl_top_view_t *v)
{
  char sp[32], cw[32], ns[32], nt[32], ex[32];
  fprintf(f,
          "workloads converged %d/%d  speedup %s (time-weighted)  net saved %s per rank "
          "(total %s, %d rank%s)  exposed %s  consensus wait %s  profiler %s\n",
          v->converged, v->total, acl_top_fmt_ratio(v->weighted_speedup, sp, sizeof(sp)),
          acl_top_fmt_signed_seconds(v->ranks > 0 ? v->time_saved_seconds / v->ranks : NAN, ns,
                                     sizeof(ns)),
          acl_top_fmt_signed_seconds(v->time_saved_seconds, nt, sizeof(nt)), v->ranks,
          v->ranks == 1 ? "" : "s",
          acl_top_fmt_seconds(v->exposed_seconds, ex, sizeof(ex)),
          acl_top_fmt_seconds(v->consensus_wait_seconds, cw, sizeof(cw)), v->profiler);
}

void acl_top_print_batch(FILE *f, const acl_top_view_t *v, const acl_top_source_status_t *st,
                         int nsrc, int iteration)
{
  fprintf(f, "autoccl-top %s  iteration %d\n", ACL_TOP_VERSION, iteration);
  print_summary(f, v);
  for (int s = 0; s < nsrc; s++)
    fprintf(f, "source %s  %s%s%s\n", st[s].url, st[s].status, st[s].error ? ": " : "",
            st[s].error ? st[s].error : "");
  /* Columns as wide as their widest cell, so the table is easy to parse. */
  int wd[ACL_TOP_COL_COUNT];
  char cell[96];
  for (int c = 0; c < ACL_TOP_COL_COUNT; c++)
    wd[c] = (int)strlen(acl_top_col_name((acl_top_col_t)c));
  for (int r = 0; r < v->nrows; r++)
    for (int c = 0; c < ACL_TOP_COL_COUNT; c++) {
      int l = (int)strlen(acl_top_cell(&v->rows[r], (acl_top_col_t)c, cell, sizeof(cell)));
      if (l > wd[c])
        wd[c] = l;
    }
  for (int c = 0; c < ACL_TOP_COL_COUNT; c++)
    fprintf(f, "%-*s%s", c + 1 < ACL_TOP_COL_COUNT ? wd[c] : 0, acl_top_col_name((acl_top_col_t)c),
            c + 1 < ACL_TOP_COL_COUNT ? "  " : "\n");
  for (int r = 0; r < v->nrows; r++)
    for (int c = 0; c < ACL_TOP_COL_COUNT; c++)
      fprintf(f, "%-*s%s", c + 1 < ACL_TOP_COL_COUNT ? wd[c] : 0,
              acl_top_cell(&v->rows[r], (acl_top_col_t)c, cell, sizeof(cell)),
              c + 1 < ACL_TOP_COL_COUNT ? "  " : "\n");
  fprintf(f, "\n");
  fflush(f);
}

static json_t *num_or_null(double d) { return isfinite(d) ? json_real(d) : json_null(); }

static int set_new(json_t *o, const char *k, json_t *v)
{
  return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *source_obj(const acl_top_model_t *m, const acl_top_source_status_t *st)
{
  json_t *o = json_object();
  if (!o)
    return NULL;
  int bad = set_new(o, "url", json_string(st->url));
  bad |= set_new(o, "status", json_string(st->status ? st->status : "-"));
  bad |= set_new(o, "error", st->error ? json_string(st->error) : json_null());
  json_t *root = m ? (json_t *)m->json : NULL;
  static const acl_field_t keep[] = {
      ACL_F_HOST,           ACL_F_PID,      ACL_F_LOCAL_RANK,    ACL_F_MODE,
      ACL_F_UPTIME_SECONDS, ACL_F_PROFILER, ACL_F_COMMUNICATORS, ACL_F_WORKLOADS_TRUNCATED};
  for (size_t i = 0; root && i < sizeof(keep) / sizeof(keep[0]); i++) {
    const char *k = acl_fields[keep[i]].key;
    json_t *v = json_object_get(root, k);
    if (v)
      bad |= json_object_set(o, k, v);
  }
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

char *acl_top_json_merged(const acl_top_view_t *v, const acl_top_model_t *const *models,
                          const acl_top_source_status_t *st, int nsrc)
{
  char *out = NULL;
  json_t *doc = json_object(), *srcs = json_array(), *comms = json_array(), *wls = json_array();
  json_t *sum = json_object();
  if (!doc || !srcs || !comms || !wls || !sum)
    goto done;
  int bad = set_new(doc, "version", json_integer(ACL_TOP_SCHEMA_VERSION)) ? 1 : 0;
  for (int s = 0; s < nsrc; s++)
    bad |= json_array_append_new(srcs, source_obj(models[s], &st[s]));
  for (int k = 0; k < v->ncomms; k++) {
    const acl_top_mcomm_t *c = &v->comms[k];
    json_t *o = json_object();
    if (!o)
      goto done;
    bad |= set_new(o, "id", json_string(c->id));
    bad |= set_new(o, "label", json_string(c->label));
    bad |= set_new(o, "nranks", c->nranks >= 0 ? json_integer(c->nranks) : json_null());
    bad |= set_new(o, "sources", json_integer(c->sources));
    bad |= set_new(o, "consensus_wait_seconds", num_or_null(c->consensus_wait_seconds));
    bad |= json_array_append_new(comms, o);
  }
  bad |= set_new(sum, "converged", json_integer(v->converged));
  bad |= set_new(sum, "total", json_integer(v->total));
  bad |= set_new(sum, "weighted_speedup", num_or_null(v->weighted_speedup));
  bad |= set_new(sum, "weighted_speedup_weight", json_string("calls * baseline_seconds"));
  bad |= set_new(sum, "time_saved_seconds", num_or_null(v->time_saved_seconds));
  bad |= set_new(sum, "ranks", json_integer(v->ranks));
  bad |= set_new(sum, "time_saved_per_rank_seconds",
                 num_or_null(v->ranks > 0 ? v->time_saved_seconds / v->ranks : NAN));
  bad |= set_new(sum, "exposed_seconds", num_or_null(v->exposed_seconds));
  bad |= set_new(sum, "collective_seconds", num_or_null(v->collective_seconds));
  bad |= set_new(sum, "consensus_wait_seconds", num_or_null(v->consensus_wait_seconds));
  bad |= set_new(sum, "profiler", json_string(v->profiler));
  for (int r = 0; r < v->nrows; r++) {
    const acl_top_row_t *row = &v->rows[r];
    const acl_top_model_t *m = models[row->source];
    json_t *arr = json_object_get((json_t *)m->json, ACL_KEY(WORKLOADS));
    json_t *orig = json_array_get(arr, (size_t)(row->w - m->workloads));
    json_t *o = orig ? json_deep_copy(orig) : json_object();
    if (!o)
      goto done;
    bad |= set_new(o, "source", json_string(st[row->source].url));
    bad |= set_new(o, "comm_name", json_string(row->comm_label));
    bad |= json_array_append_new(wls, o);
  }
  bad |= json_object_set(doc, "sources", srcs);
  bad |= json_object_set(doc, "communicators", comms);
  bad |= json_object_set(doc, "summary", sum);
  bad |= json_object_set(doc, "workloads", wls);
  /* ASCII only: the servers' own strings copied above may hold C1 controls
   * or bidi overrides, which a terminal must not receive raw. */
  if (!bad)
    out = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(10));
done:
  json_decref(srcs);
  json_decref(comms);
  json_decref(wls);
  json_decref(sum);
  json_decref(doc);
  return out;
}
