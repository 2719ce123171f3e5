/* Several sources (ranks/processes) -> one table, grouped by communicator;
 * totals for the header; sorting with unknown values always last. */
#include "tui/top.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void acl_top_comm_label(const char *id, const char *name, char *out, size_t len)
{
  if (name && name[0] && strcmp(name, id ? id : "") != 0) {
    snprintf(out, len, "%s", name);
    return;
  }
  if (!id || !id[0]) {
    snprintf(out, len, "-");
    return;
  }
  /* "0x" + 8 hex digits tells communicators apart in practice. */
  snprintf(out, len, "%.10s", id);
}

static int find_comm(const acl_top_view_t *v, const char *id)
{
  for (int i = 0; i < v->ncomms; i++)
    if (strcmp(v->comms[i].id, id) == 0)
      return i;
  return -1;
}

void acl_top_view_free(acl_top_view_t *v)
{
  if (!v)
    return;
  free(v->rows);
  free(v->comms);
  memset(v, 0, sizeof(*v));
  v->weighted_speedup = NAN;
  v->consensus_wait_seconds = NAN;
}

double acl_top_weighted_speedup(const acl_top_row_t *rows, int n)
{
  double num = 0, den = 0;
  for (int i = 0; i < n; i++) {
    const acl_top_workload_t *w = rows[i].w;
    if (!isfinite(w->speedup) || !isfinite(w->baseline_seconds) || w->calls <= 0 ||
        w->baseline_seconds <= 0)
      continue;
    double wt = (double)w->calls * w->baseline_seconds;
    num += wt * w->speedup;
    den += wt;
  }
  return den > 0 ? num / den : NAN;
}

static int add_profiler(acl_top_view_t *v, const char *src)
{
  if (!src[0])
    return 0;
  /* Exact token match in the '+'-joined list. */
  size_t n = strlen(src);
  for (const char *p = v->profiler; (p = strstr(p, src)); p += n)
    if ((p == v->profiler || p[-1] == '+') && (p[n] == '\0' || p[n] == '+'))
      return 0;
  size_t used = strlen(v->profiler);
  snprintf(v->profiler + used, sizeof(v->profiler) - used, "%s%s", used ? "+" : "", src);
  return 0;
}

static int merged_order(const void *a, const void *b);

int acl_top_view_build(acl_top_view_t *v, const acl_top_model_t *const *models, int n)
{
  memset(v, 0, sizeof(*v));
  v->weighted_speedup = NAN;
  v->consensus_wait_seconds = NAN;
  v->time_saved_seconds = NAN;
  v->collective_seconds = v->exposed_seconds = NAN;
  int nc = 0, nw = 0;
  for (int s = 0; s < n; s++)
    if (models[s]) {
      nc += models[s]->ncomms;
      nw += models[s]->nworkloads;
    }
  if (nc && !(v->comms = calloc((size_t)nc, sizeof(*v->comms))))
    goto fail;
  if (nw && !(v->rows = calloc((size_t)nw, sizeof(*v->rows))))
    goto fail;

  for (int s = 0; s < n; s++) {
    const acl_top_model_t *m = models[s];
    if (!m)
      continue;
    add_profiler(v, m->profiler.source);
    for (int i = 0; i < m->ncomms; i++) {
      const acl_top_comm_t *c = &m->comms[i];
      int k = find_comm(v, c->id);
      if (k < 0) {
        k = v->ncomms++;
        acl_top_mcomm_t *mc = &v->comms[k];
        snprintf(mc->id, sizeof(mc->id), "%s", c->id);
        mc->nranks = -1;
        mc->consensus_wait_seconds = NAN;
      }
      acl_top_mcomm_t *mc = &v->comms[k];
      mc->sources++;
      if (c->name[0] && strcmp(c->name, c->id) != 0 && !mc->label[0])
        snprintf(mc->label, sizeof(mc->label), "%s", c->name);
      if (c->nranks > 0)
        mc->nranks = c->nranks;
      if (isfinite(c->consensus_wait_seconds))
        mc->consensus_wait_seconds = isfinite(mc->consensus_wait_seconds)
                                         ? mc->consensus_wait_seconds + c->consensus_wait_seconds
                                         : c->consensus_wait_seconds;
    }
  }
  for (int k = 0; k < v->ncomms; k++) {
    acl_top_mcomm_t *mc = &v->comms[k];
    char name[64];
    snprintf(name, sizeof(name), "%s", mc->label);
    acl_top_comm_label(mc->id, name, mc->label, sizeof(mc->label));
    if (isfinite(mc->consensus_wait_seconds))
      v->consensus_wait_seconds = isfinite(v->consensus_wait_seconds)
                                      ? v->consensus_wait_seconds + mc->consensus_wait_seconds
                                      : mc->consensus_wait_seconds;
  }
  for (int s = 0; s < n; s++) {
    const acl_top_model_t *m = models[s];
    if (!m)
      continue;
    for (int i = 0; i < m->nworkloads; i++) {
      acl_top_row_t *r = &v->rows[v->nrows++];
      r->source = s;
      r->w = &m->workloads[i];
      int k = find_comm(v, r->w->comm);
      if (k >= 0)
        snprintf(r->comm_label, sizeof(r->comm_label), "%s", v->comms[k].label);
      else
        acl_top_comm_label(r->w->comm, NULL, r->comm_label, sizeof(r->comm_label));
      v->total++;
      if (strcmp(r->w->state, "converged") == 0) /* not still validating or refining */
        v->converged++;
      bool seen = false; /* ranks as the job report counts them: per source */
      for (int k = 0; k < v->nrows - 1 && !seen; k++)
        seen = v->rows[k].source == s && v->rows[k].w->rank == r->w->rank;
      v->ranks += !seen;
      if (isfinite(r->w->time_saved_seconds))
        v->time_saved_seconds = (isfinite(v->time_saved_seconds) ? v->time_saved_seconds : 0.0) +
                                r->w->time_saved_seconds;
      if (isfinite(r->w->exposed_seconds) && isfinite(r->w->collective_seconds)) {
        v->exposed_seconds =
            (isfinite(v->exposed_seconds) ? v->exposed_seconds : 0.0) + r->w->exposed_seconds;
        v->collective_seconds = (isfinite(v->collective_seconds) ? v->collective_seconds : 0.0) +
                                r->w->collective_seconds;
      }
    }
  }
  if (!v->profiler[0])
    snprintf(v->profiler, sizeof(v->profiler), "-");
  v->weighted_speedup = acl_top_weighted_speedup(v->rows, v->nrows);
  if (v->nrows > 1)
    qsort(v->rows, (size_t)v->nrows, sizeof(*v->rows), merged_order);
  return 0;
fail:
  acl_top_view_free(v);
  return -1;
}

/* ---- sorting ---- */
static int cmp_str(const char *a, const char *b) { return strcmp(a, b); }
static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int merged_order(const void *pa, const void *pb)
{
  const acl_top_row_t *a = pa, *b = pb;
  int c;
  if ((c = cmp_str(a->comm_label, b->comm_label)) || (c = cmp_str(a->w->comm, b->w->comm)) ||
      (c = cmp_str(a->w->collective, b->w->collective)) ||
      (c = cmp_i64(a->w->bytes, b->w->bytes)) || (c = cmp_i64(a->w->rank, b->w->rank)) ||
      (c = cmp_i64(a->source, b->source)) || (c = cmp_i64(a->w->pipe_ops, b->w->pipe_ops)))
    return c;
  uintptr_t ua = (uintptr_t)a->w, ub = (uintptr_t)b->w;
  return ua < ub ? -1 : ua > ub;
}

/* Sorting by state follows a workload's life, not the enum's numbering. */
static int state_rank(const char *s)
{
  /* ACL_PHASE_COUNT stands for ACL_CAPTURED_NAME, between converged and
   * disabled */
  static const int order[] = {ACL_PHASE_WARMUP,     ACL_PHASE_BASELINE,     ACL_PHASE_WAIT_BUDGET,
                              ACL_PHASE_EXPLORING,  ACL_PHASE_WAIT_SAMPLES, ACL_PHASE_RETUNING,
                              ACL_PHASE_VALIDATING, ACL_PHASE_PAUSED,       ACL_PHASE_REFINING,
                              ACL_PHASE_CONVERGED,  ACL_PHASE_COUNT,        ACL_PHASE_DISABLED};
  enum { NRANKED = (int)(sizeof order / sizeof order[0]) };
  _Static_assert(NRANKED == ACL_PHASE_COUNT + 1, "every state ranked, and captured");
  int ph = strcmp(s, ACL_CAPTURED_NAME) == 0 ? ACL_PHASE_COUNT : acl_phase_parse(s);
  for (int i = 0; i < NRANKED; i++)
    if (ph >= 0 && order[i] == ph)
      return i;
  return s[0] ? NRANKED : -1; /* unknown spelling after known ones; empty = unknown */
}

typedef struct sortctx {
  acl_top_col_t col;
  bool desc;
} sortctx_t;

/* Unknown sorts after known: *out = 1 when only a is unknown, -1 when only
 * b is, 0 when both are. Returns whether either is unknown. */
static int unknowns(bool ua, bool ub, int *out)
{
  if (ua || ub) {
    *out = ua && ub ? 0 : ua ? 1 : -1;
    return 1;
  }
  return 0;
}

static int by_col(const void *pa, const void *pb, void *arg)
{
  const sortctx_t *ctx = arg;
  const acl_top_row_t *a = pa, *b = pb;
  const acl_top_workload_t *x = a->w, *y = b->w;
  int c = 0, u;
  char ba[64], bb[64];
  switch (ctx->col) {
  case ACL_TOP_COL_COMM:
    c = cmp_str(a->comm_label, b->comm_label);
    break;
  case ACL_TOP_COL_RANK:
    if (unknowns(x->rank < 0, y->rank < 0, &u))
      goto unknown;
    c = cmp_i64(x->rank, y->rank);
    break;
  case ACL_TOP_COL_COLL:
    if (unknowns(!x->collective[0], !y->collective[0], &u))
      goto unknown;
    c = cmp_str(x->collective, y->collective);
    break;
  case ACL_TOP_COL_SIZE:
    if (unknowns(x->bytes < 0, y->bytes < 0, &u))
      goto unknown;
    c = cmp_i64(x->bytes, y->bytes);
    break;
  case ACL_TOP_COL_STATE: {
    int ra = state_rank(x->state), rb = state_rank(y->state);
    if (unknowns(ra < 0, rb < 0, &u))
      goto unknown;
    c = ra != rb ? cmp_i64(ra, rb) : cmp_str(x->state, y->state);
    break;
  }
  case ACL_TOP_COL_SUBSPACE:
    if (unknowns(!x->subspace[0], !y->subspace[0], &u))
      goto unknown;
    c = cmp_str(x->subspace, y->subspace);
    break;
  case ACL_TOP_COL_CAND:
  case ACL_TOP_COL_BEST: {
    const acl_top_cand_t *ca = ctx->col == ACL_TOP_COL_CAND ? &x->candidate : &x->best;
    const acl_top_cand_t *cb = ctx->col == ACL_TOP_COL_CAND ? &y->candidate : &y->best;
    if (unknowns(!ca->known, !cb->known, &u))
      goto unknown;
    c = cmp_str(acl_top_fmt_cand(ca, ba, sizeof(ba)), acl_top_fmt_cand(cb, bb, sizeof(bb)));
    if (!c)
      c = cmp_i64(ca->channels, cb->channels);
    break;
  }
  case ACL_TOP_COL_SPEEDUP:
  case ACL_TOP_COL_SAVED:
  case ACL_TOP_COL_OVERLAP:
  case ACL_TOP_COL_BUSBW: {
    double da = ctx->col == ACL_TOP_COL_SPEEDUP   ? x->speedup
                : ctx->col == ACL_TOP_COL_SAVED   ? x->time_saved_seconds
                : ctx->col == ACL_TOP_COL_OVERLAP ? x->overlap
                                                  : x->busbw;
    double db = ctx->col == ACL_TOP_COL_SPEEDUP   ? y->speedup
                : ctx->col == ACL_TOP_COL_SAVED   ? y->time_saved_seconds
                : ctx->col == ACL_TOP_COL_OVERLAP ? y->overlap
                                                  : y->busbw;
    if (unknowns(!isfinite(da), !isfinite(db), &u))
      goto unknown;
    c = da < db ? -1 : da > db;
    break;
  }
  case ACL_TOP_COL_CALLS:
    if (unknowns(x->calls < 0, y->calls < 0, &u))
      goto unknown;
    c = cmp_i64(x->calls, y->calls);
    break;
  case ACL_TOP_COL_SOURCE:
    if (unknowns(!x->source[0], !y->source[0], &u))
      goto unknown;
    c = cmp_str(x->source, y->source);
    break;
  default:
    break;
  }
  if (c)
    return ctx->desc ? -c : c;
  return merged_order(pa, pb);
unknown:
  return u ? u : merged_order(pa, pb);
}

void acl_top_view_sort(acl_top_view_t *v, acl_top_col_t col, bool reverse)
{
  if ((unsigned)col >= ACL_TOP_COL_COUNT || v->nrows < 2)
    return;
  sortctx_t ctx = {col, acl_top_col_desc_default(col) != reverse};
  qsort_r(v->rows, (size_t)v->nrows, sizeof(*v->rows), by_col, &ctx);
}
