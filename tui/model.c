/* /api/v1/state (schema 1) -> acl_top_model_t. Strict about types (a wrong
 * type is an error naming the field), lenient about absence (missing = null)
 * and about fields it does not know (ignored: newer servers may add some). */
#include "tui/top.h"

#include "core/text.h"
#include "core/types.h"
#include "observe/observe.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct pctx {
  char *err;
  size_t errlen;
  char path[96]; /* "workloads[3]" prefix of the current object */
} pctx_t;

__attribute__((format(printf, 2, 3))) static int fail(pctx_t *c, const char *fmt, ...)
{
  if (c->err && c->errlen) {
    va_list ap;
    va_start(ap, fmt);
    char raw[512];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* jansson quotes the offending input ("near '...'"): server bytes */
    acl_text_clean(c->err, c->errlen, raw);
  }
  return -1;
}

static const char *pfx(const pctx_t *c) { return c->path[0] ? c->path : "state"; }

/* Server strings end up on a terminal: C0 and C1 controls (escape
 * sequences, U+009B is a CSI), bidi overrides and invalid UTF-8 become '?';
 * a long string is cut before a character, never inside one (the --json
 * encoder refuses a broken one). Other UTF-8 is left for the view. */
static void copy_clean(char *out, size_t len, const char *in) { acl_text_clean(out, len, in); }

/* Each getter: absent or null leaves the "unknown" default; wrong type fails. */
static int get_str(pctx_t *c, json_t *o, const char *k, char *out, size_t len)
{
  json_t *v = json_object_get(o, k);
  out[0] = '\0';
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return fail(c, "%s.%s: expected a string or null", pfx(c), k);
  copy_clean(out, len, json_string_value(v));
  return 0;
}

static int get_dbl(pctx_t *c, json_t *o, const char *k, double *out)
{
  json_t *v = json_object_get(o, k);
  *out = NAN;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_number(v))
    return fail(c, "%s.%s: expected a number or null", pfx(c), k);
  double d = json_number_value(v);
  if (!isfinite(d))
    return fail(c, "%s.%s: not a finite number", pfx(c), k);
  *out = d;
  return 0;
}

/* Integers: JSON reals with an integral value are accepted (some encoders
 * write 4.0); negative counters are rejected. */
static int get_i64(pctx_t *c, json_t *o, const char *k, int64_t *out, int64_t lo)
{
  json_t *v = json_object_get(o, k);
  *out = -1;
  if (!v || json_is_null(v))
    return 0;
  int64_t x;
  if (json_is_integer(v)) {
    x = (int64_t)json_integer_value(v);
  } else if (json_is_real(v)) {
    double d = json_real_value(v);
    if (!(d >= -9.2e18 && d <= 9.2e18) || d != floor(d))
      return fail(c, "%s.%s: expected an integer or null", pfx(c), k);
    x = (int64_t)d;
  } else {
    return fail(c, "%s.%s: expected an integer or null", pfx(c), k);
  }
  if (x < lo)
    return fail(c, "%s.%s: %lld is out of range", pfx(c), k, (long long)x);
  *out = x;
  return 0;
}

static int get_int(pctx_t *c, json_t *o, const char *k, int *out, int lo)
{
  int64_t x;
  if (get_i64(c, o, k, &x, lo) < 0)
    return -1;
  if (x > 1000000000)
    return fail(c, "%s.%s: %lld is out of range", pfx(c), k, (long long)x);
  *out = (int)x; /* -1 when unknown */
  return 0;
}

static int get_bool(pctx_t *c, json_t *o, const char *k, int *out)
{
  json_t *v = json_object_get(o, k);
  *out = -1;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_boolean(v))
    return fail(c, "%s.%s: expected true, false or null", pfx(c), k);
  *out = json_is_true(v) ? 1 : 0;
  return 0;
}

static int get_cand(pctx_t *c, json_t *o, const char *k, acl_top_cand_t *out)
{
  memset(out, 0, sizeof(*out));
  out->channels = -1;
  json_t *v = k ? json_object_get(o, k) : o;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_object(v))
    return fail(c, "%s.%s: expected an object or null", pfx(c), k ? k : "candidate");
  out->known = true;
  if (get_str(c, v, ACL_KEY(ALGO), out->algo, sizeof(out->algo)) < 0 ||
      get_str(c, v, ACL_KEY(PROTO), out->proto, sizeof(out->proto)) < 0 ||
      get_int(c, v, ACL_KEY(CHANNELS), &out->channels, 0) < 0)
    return -1;
  json_t *k2 = json_object_get(v, ACL_KEY(CHUNK_LOG2)); /* absent before NCCL 2.30 support */
  if (k2 && !json_is_null(k2)) {
    if (!json_is_integer(k2) || json_integer_value(k2) < ACL_CHUNK_LOG2_MIN ||
        json_integer_value(k2) > ACL_CHUNK_LOG2_MAX)
      return fail(c, "%s.%s.chunk_log2: expected an integer from %d to %d", pfx(c),
                  k ? k : "candidate", ACL_CHUNK_LOG2_MIN, ACL_CHUNK_LOG2_MAX);
    out->chunk_log2 = (int)json_integer_value(k2);
  }
  return 0;
}

static int parse_traj(pctx_t *c, json_t *arr, acl_top_workload_t *w)
{
  w->traj_len = 0;
  if (!arr || json_is_null(arr))
    return 0;
  if (!json_is_array(arr))
    return fail(c, "%s.trajectory: expected an array or null", pfx(c));
  size_t n = json_array_size(arr);
  size_t first = n > ACL_TOP_MAX_TRAJ ? n - ACL_TOP_MAX_TRAJ : 0; /* keep newest */
  char saved[sizeof(c->path)];
  memcpy(saved, c->path, sizeof(saved));
  for (size_t i = first; i < n; i++) {
    json_t *p = json_array_get(arr, i);
    snprintf(c->path, sizeof(c->path), "%.60s.trajectory[%zu]", saved, i);
    if (!json_is_object(p))
      return fail(c, "%s: expected an object", c->path);
    acl_top_traj_t *t = &w->traj[w->traj_len];
    if (get_i64(c, p, ACL_KEY(STEP), &t->step, 0) < 0 || get_cand(c, p, NULL, &t->cand) < 0 ||
        get_dbl(c, p, ACL_KEY(BUSBW), &t->busbw) < 0 ||
        get_dbl(c, p, ACL_KEY(OVERLAP), &t->overlap) < 0)
      return -1;
    w->traj_len++;
  }
  memcpy(c->path, saved, sizeof(saved));
  return 0;
}

static int parse_workload(pctx_t *c, json_t *o, acl_top_workload_t *w)
{
  memset(w, 0, sizeof(*w));
  if (!json_is_object(o))
    return fail(c, "%s: expected an object", c->path);
  json_t *comm = json_object_get(o, ACL_KEY(WL_COMM));
  if (!json_is_string(comm))
    return fail(c, "%s.comm: expected a string", c->path);
  copy_clean(w->comm, sizeof(w->comm), json_string_value(comm));
  if (get_int(c, o, ACL_KEY(RANK), &w->rank, -1) < 0 ||
      get_str(c, o, ACL_KEY(COLLECTIVE), w->collective, sizeof(w->collective)) < 0 ||
      get_i64(c, o, ACL_KEY(BYTES), &w->bytes, 0) < 0 ||
      get_int(c, o, ACL_KEY(PIPE_OPS), &w->pipe_ops, 0) < 0 ||
      get_str(c, o, ACL_KEY(STATE), w->state, sizeof(w->state)) < 0 ||
      get_str(c, o, ACL_KEY(SUBSPACE), w->subspace, sizeof(w->subspace)) < 0 ||
      get_str(c, o, ACL_KEY(SOURCE), w->source, sizeof(w->source)) < 0 ||
      get_cand(c, o, ACL_KEY(CANDIDATE), &w->candidate) < 0 ||
      get_cand(c, o, ACL_KEY(BEST), &w->best) < 0 ||
      get_cand(c, o, ACL_KEY(BASELINE), &w->baseline) < 0 ||
      get_dbl(c, o, ACL_KEY(BASELINE_SECONDS), &w->baseline_seconds) < 0 ||
      get_dbl(c, o, ACL_KEY(BEST_SECONDS), &w->best_seconds) < 0 ||
      get_dbl(c, o, ACL_KEY(SPEEDUP), &w->speedup) < 0 ||
      get_dbl(c, o, ACL_KEY(BUSBW), &w->busbw) < 0 ||
      get_dbl(c, o, ACL_KEY(OVERLAP), &w->overlap) < 0 ||
      get_dbl(c, o, ACL_KEY(WL_TIME_SAVED_SECONDS), &w->time_saved_seconds) < 0 ||
      get_dbl(c, o, ACL_KEY(EXPLORATION_COST_SECONDS), &w->exploration_cost_seconds) < 0 ||
      get_dbl(c, o, ACL_KEY(WL_COLLECTIVE_SECONDS), &w->collective_seconds) < 0 ||
      get_dbl(c, o, ACL_KEY(WL_EXPOSED_SECONDS), &w->exposed_seconds) < 0 ||
      get_i64(c, o, ACL_KEY(CANDIDATES_EVALUATED), &w->candidates_evaluated, 0) < 0 ||
      get_i64(c, o, ACL_KEY(CALLS_TO_CONVERGE), &w->calls_to_converge, 0) < 0 ||
      get_i64(c, o, ACL_KEY(RETUNES), &w->retunes, 0) < 0 ||
      get_i64(c, o, ACL_KEY(BUDGET_WAIT_CALLS), &w->budget_wait_calls, 0) < 0 ||
      get_str(c, o, ACL_KEY(BUDGET_WAIT_FOR), w->budget_wait_for, sizeof(w->budget_wait_for)) < 0 ||
      get_i64(c, o, ACL_KEY(CALLS), &w->calls, 0) < 0 ||
      get_i64(c, o, ACL_KEY(BYTES_TOTAL), &w->bytes_total, 0) < 0)
    return -1;
  return parse_traj(c, json_object_get(o, ACL_KEY(TRAJECTORY)), w);
}

static int parse_comm(pctx_t *c, json_t *o, acl_top_comm_t *m)
{
  memset(m, 0, sizeof(*m));
  if (!json_is_object(o))
    return fail(c, "%s: expected an object", c->path);
  json_t *id = json_object_get(o, ACL_KEY(COMM_ID));
  if (!json_is_string(id))
    return fail(c, "%s.id: expected a string", c->path);
  copy_clean(m->id, sizeof(m->id), json_string_value(id));
  if (get_str(c, o, ACL_KEY(COMM_NAME), m->name, sizeof(m->name)) < 0 ||
      get_int(c, o, ACL_KEY(RANK), &m->rank, -1) < 0 ||
      get_int(c, o, ACL_KEY(COMM_NRANKS), &m->nranks, 0) < 0 ||
      get_int(c, o, ACL_KEY(COMM_NNODES), &m->nnodes, 0) < 0 ||
      get_str(c, o, ACL_KEY(COMM_ROLE), m->role, sizeof(m->role)) < 0 ||
      get_dbl(c, o, ACL_KEY(COMM_CONSENSUS_WAIT_SECONDS), &m->consensus_wait_seconds) < 0 ||
      get_i64(c, o, ACL_KEY(COMM_BLOCKS_PUBLISHED), &m->blocks_published, 0) < 0 ||
      get_i64(c, o, ACL_KEY(COMM_LOCK_ACQUISITIONS), &m->lock_acquisitions, 0) < 0)
    return -1;
  return 0;
}

static int parse_profiler(pctx_t *c, json_t *o, acl_top_profiler_t *p)
{
  memset(p, 0, sizeof(*p));
  p->cupti_available = p->cupti_backed_off = -1;
  p->records = p->records_dropped = p->samples = p->ambiguous = p->mismatches = -1;
  p->sample_latency_seconds = NAN;
  if (!o || json_is_null(o))
    return 0;
  if (!json_is_object(o))
    return fail(c, "state.profiler: expected an object or null");
  snprintf(c->path, sizeof(c->path), "profiler");
  if (get_str(c, o, ACL_KEY(PROF_SOURCE), p->source, sizeof(p->source)) < 0 ||
      get_bool(c, o, ACL_KEY(PROF_CUPTI_AVAILABLE), &p->cupti_available) < 0 ||
      get_bool(c, o, ACL_KEY(PROF_CUPTI_BACKED_OFF), &p->cupti_backed_off) < 0 ||
      get_i64(c, o, ACL_KEY(PROF_RECORDS), &p->records, 0) < 0 ||
      get_i64(c, o, ACL_KEY(PROF_RECORDS_DROPPED), &p->records_dropped, 0) < 0 ||
      get_i64(c, o, ACL_KEY(PROF_SAMPLES), &p->samples, 0) < 0 ||
      get_i64(c, o, ACL_KEY(PROF_AMBIGUOUS), &p->ambiguous, 0) < 0 ||
      get_i64(c, o, ACL_KEY(PROF_MISMATCHES), &p->mismatches, 0) < 0 ||
      get_dbl(c, o, ACL_KEY(PROF_SAMPLE_LATENCY_SECONDS), &p->sample_latency_seconds) < 0)
    return -1;
  c->path[0] = '\0';
  return 0;
}

void acl_top_model_init(acl_top_model_t *m)
{
  memset(m, 0, sizeof(*m));
  m->pid = -1;
  m->local_rank = -1;
  m->uptime_seconds = NAN;
}

void acl_top_model_clear(acl_top_model_t *m)
{
  if (!m)
    return;
  free(m->comms);
  free(m->workloads);
  json_decref((json_t *)m->json);
  acl_top_model_init(m);
}

static int parse_root(pctx_t *c, json_t *root, acl_top_model_t *m)
{
  if (!json_is_object(root))
    return fail(c, "state: expected a JSON object");
  json_t *ver = json_object_get(root, ACL_KEY(VERSION));
  if (!json_is_integer(ver))
    return fail(c, "state.version: missing or not an integer");
  if (json_integer_value(ver) != ACL_TOP_SCHEMA_VERSION)
    return fail(c, "unsupported schema version %lld (autoccl-top reads version %d)",
                (long long)json_integer_value(ver), ACL_TOP_SCHEMA_VERSION);
  m->version = ACL_TOP_SCHEMA_VERSION;
  int64_t pid;
  if (get_str(c, root, ACL_KEY(HOST), m->host, sizeof(m->host)) < 0 ||
      get_i64(c, root, ACL_KEY(PID), &pid, 0) < 0 ||
      get_int(c, root, ACL_KEY(LOCAL_RANK), &m->local_rank, -1) < 0 ||
      get_str(c, root, ACL_KEY(MODE), m->mode, sizeof(m->mode)) < 0 ||
      get_dbl(c, root, ACL_KEY(UPTIME_SECONDS), &m->uptime_seconds) < 0)
    return -1;
  m->pid = pid;
  if (parse_profiler(c, json_object_get(root, ACL_KEY(PROFILER)), &m->profiler) < 0)
    return -1;
  json_t *tr = json_object_get(root, ACL_KEY(WORKLOADS_TRUNCATED));
  if (tr && !json_is_null(tr) && !json_is_boolean(tr))
    return fail(c, "state.workloads_truncated: expected true, false or null");
  m->truncated = json_is_true(tr);

  json_t *comms = json_object_get(root, ACL_KEY(COMMUNICATORS));
  if (comms && !json_is_null(comms) && !json_is_array(comms))
    return fail(c, "state.communicators: expected an array");
  size_t nc = json_is_array(comms) ? json_array_size(comms) : 0;
  if (nc > ACL_TOP_MAX_COMMS)
    return fail(c, "state.communicators: %zu entries, more than %d", nc, ACL_TOP_MAX_COMMS);
  json_t *wls = json_object_get(root, ACL_KEY(WORKLOADS));
  if (!json_is_array(wls))
    return fail(c, "state.workloads: missing or not an array");
  size_t nw = json_array_size(wls);
  if (nw > ACL_TOP_MAX_WORKLOADS)
    return fail(c, "state.workloads: %zu entries, more than %d", nw, ACL_TOP_MAX_WORKLOADS);

  if (nc && !(m->comms = calloc(nc, sizeof(*m->comms))))
    return fail(c, "out of memory");
  if (nw && !(m->workloads = calloc(nw, sizeof(*m->workloads))))
    return fail(c, "out of memory");
  for (size_t i = 0; i < nc; i++) {
    snprintf(c->path, sizeof(c->path), "communicators[%zu]", i);
    if (parse_comm(c, json_array_get(comms, i), &m->comms[i]) < 0)
      return -1;
    m->ncomms++;
  }
  for (size_t i = 0; i < nw; i++) {
    snprintf(c->path, sizeof(c->path), "workloads[%zu]", i);
    if (parse_workload(c, json_array_get(wls, i), &m->workloads[i]) < 0)
      return -1;
    m->nworkloads++;
  }
  return 0;
}

int acl_top_parse_state(const char *json, size_t len, acl_top_model_t *out, char *err,
                        size_t errlen)
{
  pctx_t c = {.err = err, .errlen = errlen};
  acl_top_model_clear(out);
  if (err && errlen)
    err[0] = '\0';
  if (!json) {
    fail(&c, "no document");
    return -1;
  }
  json_error_t je;
  /* DISABLE_EOF_CHECK off: trailing garbage is an error, as it should be. */
  json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    fail(&c, "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
    return -1;
  }
  if (parse_root(&c, root, out) < 0) {
    json_decref(root);
    acl_top_model_clear(out);
    return -1;
  }
  out->json = root;
  return 0;
}
