/* Reading the JSON document a run exports (AUTOCCL_TABLE_OUT=*.json,
 * GET /api/v1/table) back as a tuning table, so that the file a job writes
 * is the file its restart reads. Only "rules" decide; "entries" are what
 * they were derived from. The document's nccl_version and gpu become the
 * table's metadata (acl_table_meta_check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/table.h"

#ifdef ACL_HAVE_JANSSON
#include <jansson.h>

/* An integer member, or any (-1) when absent or null. */
static int get_any(json_t *o, const char *k, long max, int32_t *out, char *why, size_t whylen)
{
  json_t *v = json_object_get(o, k);
  if (!v || json_is_null(v)) {
    *out = ACL_TABLE_ANY;
    return 0;
  }
  json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
  if (!json_is_integer(v) || x == 0 || x < -1 || x > max) {
    snprintf(why, whylen, "%s must be a positive count or -1 (any)", k);
    return -1;
  }
  *out = (int32_t)x;
  return 0;
}

static int get_size(json_t *o, const char *k, uint64_t *out, char *why, size_t whylen)
{
  json_t *v = json_object_get(o, k);
  if (json_is_integer(v) && json_integer_value(v) >= 0) {
    *out = (uint64_t)json_integer_value(v);
    return 0;
  }
  if (json_is_string(v) && acl_parse_size(json_string_value(v), out))
    return 0;
  /* 2^64-1 ("max") does not fit jansson's integers: written as a real. */
  if (json_is_real(v) && json_real_value(v) >= 1.8e19) {
    *out = UINT64_MAX;
    return 0;
  }
  snprintf(why, whylen, "%s must be a byte count", k);
  return -1;
}

static int json_rule(json_t *o, acl_table_rule_t *r, char *why, size_t whylen)
{
  memset(r, 0, sizeof(*r));
  if (!json_is_object(o)) {
    snprintf(why, whylen, "not an object");
    return -1;
  }
  const char *coll = json_string_value(json_object_get(o, "collective"));
  bool any = coll && strcmp(coll, "*") == 0;
  r->coll = any ? -1 : coll ? acl_coll_parse(coll) : -1;
  if (!coll || (r->coll < 0 && !any)) {
    snprintf(why, whylen, "collective: unknown '%.32s'", coll ? coll : "(missing)");
    return -1;
  }
  if (get_size(o, "min_bytes", &r->min_bytes, why, whylen) ||
      get_size(o, "max_bytes", &r->max_bytes, why, whylen))
    return -1;
  if (r->min_bytes > r->max_bytes) {
    snprintf(why, whylen, "max_bytes is smaller than min_bytes");
    return -1;
  }
  if (get_any(o, "nnodes", 1 << 20, &r->nnodes, why, whylen) ||
      get_any(o, "nranks", 1 << 24, &r->nranks, why, whylen) ||
      get_any(o, "num_pipe_ops", 1 << 20, &r->pipe_ops, why, whylen))
    return -1;
  const char *algo = json_string_value(json_object_get(o, "algo"));
  if (!algo) {
    snprintf(why, whylen, "algo missing");
    return -1;
  }
  if (strcmp(algo, "NCCL") == 0) {
    r->cand = (acl_candidate_t){.algo = ACL_ALGO_NCCL, .proto = -1};
    return 0;
  }
  int a = acl_algo_parse(algo);
  const char *proto = json_string_value(json_object_get(o, "proto"));
  int p = proto ? acl_proto_parse(proto) : -1;
  json_t *ch = json_object_get(o, "channels");
  json_int_t nch = json_is_integer(ch) ? json_integer_value(ch) : 0;
  if (a < 0 || p < 0) {
    snprintf(why, whylen, "unknown algorithm/protocol '%.32s'/'%.32s'", algo,
             proto ? proto : "(missing)");
    return -1;
  }
  if ((ch && !json_is_null(ch) && !json_is_integer(ch)) || nch < 0 || nch > 64) {
    snprintf(why, whylen, "channels must be null (NCCL decides) or 1 to 64");
    return -1;
  }
  r->cand = (acl_candidate_t){.algo = (int8_t)a, .proto = (int8_t)p, .nchannels = (int16_t)nch};
  return 0;
}

static void meta_str(json_t *doc, const char *k, char *out, size_t len)
{
  const char *s = json_string_value(json_object_get(doc, k));
  snprintf(out, len, "%s", s ? s : "");
}

int acl_table_parse_json(const char *text, size_t len, acl_table_t *t, char *err, size_t errlen)
{
  json_error_t je;
  json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  int rc = -1;
  if (!doc) {
    snprintf(err, errlen, "line %d: not valid JSON: %s", je.line, je.text);
    return -1;
  }
  json_t *ver = json_object_get(doc, "version");
  json_t *rules = json_object_get(doc, "rules");
  if (!json_is_integer(ver) || json_integer_value(ver) != ACL_TABLE_VERSION) {
    snprintf(err, errlen, "JSON: \"version\" must be %d (the document AUTOCCL_TABLE_OUT writes)",
             ACL_TABLE_VERSION);
    goto out;
  }
  if (!json_is_array(rules)) {
    snprintf(err, errlen, "JSON: no \"rules\" array");
    goto out;
  }
  if (json_array_size(rules) > ACL_TABLE_MAX_RULES) {
    snprintf(err, errlen, "JSON: more than %d rules", ACL_TABLE_MAX_RULES);
    goto out;
  }
  for (size_t i = 0; i < json_array_size(rules); i++) {
    char why[200];
    if (json_rule(json_array_get(rules, i), &t->rules[t->nrules], why, sizeof(why)) != 0) {
      snprintf(err, errlen, "JSON: rules[%zu]: %s", i, why);
      goto out;
    }
    t->rules[t->nrules].line = (int)i + 1; /* its place in "rules", 1-based */
    t->nrules++;
  }
  meta_str(doc, "nccl_version", t->nccl_version, sizeof(t->nccl_version));
  meta_str(doc, "gpu", t->gpu, sizeof(t->gpu));
  t->format = ACL_TABLE_FMT_JSON;
  rc = 0;
out:
  json_decref(doc);
  return rc;
}
#else
int acl_table_parse_json(const char *text, size_t len, acl_table_t *t, char *err, size_t errlen)
{
  (void)text, (void)len, (void)t;
  snprintf(err, errlen,
           "JSON: this autoccl was built without jansson; export the table to .txt or .csv");
  return -1;
}
#endif

/* Recorded and current values differ when both are known. */
static bool differs(const char *recorded, const char *here)
{
  return recorded && recorded[0] && here && here[0] && strcmp(recorded, here) != 0;
}

int acl_table_meta_check(const acl_table_t *t, const char *nccl_version, const char *gpu, char *err,
                         size_t errlen)
{
  if (differs(t->nccl_version, nccl_version))
    snprintf(err, errlen, "recorded with NCCL %s, this process runs NCCL %s", t->nccl_version,
             nccl_version);
  else if (differs(t->gpu, gpu))
    snprintf(err, errlen, "recorded on %s, this process runs on %s", t->gpu, gpu);
  else
    return 0;
  return -1;
}
