/* Tuning tables out (see core/table.h): the rules a run's decisions give
 * (the size rule), the versioned JSON document, the two text formats
 * acl_table_parse reads back, and the atomic write. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/safefile.h"
#include "core/table.h"

/* Shape first, then size: the order the size rule walks. */
static int entry_cmp(const void *x, const void *y)
{
  const acl_table_entry_t *a = *(const acl_table_entry_t *const *)x;
  const acl_table_entry_t *b = *(const acl_table_entry_t *const *)y;
#define CMP(f)                                                                                     \
  if (a->f != b->f)                                                                                \
    return a->f < b->f ? -1 : 1;
  CMP(coll)
  CMP(nnodes)
  CMP(nranks)
  CMP(pipe_ops)
  CMP(nbytes)
#undef CMP
  return 0;
}

static bool same_shape(const acl_table_entry_t *a, const acl_table_entry_t *b)
{
  return a->coll == b->coll && a->nnodes == b->nnodes && a->nranks == b->nranks &&
         a->pipe_ops == b->pipe_ops;
}

/* floor(sqrt(a*b)) without overflow, a < b. */
static uint64_t geo_mid(uint64_t a, uint64_t b)
{
  long double g = sqrtl((long double)a * (long double)b);
  uint64_t m = g >= (long double)UINT64_MAX ? UINT64_MAX : (uint64_t)g;
  if (m < a)
    m = a;
  if (m >= b)
    m = b - 1;
  return m;
}

int acl_table_from_entries(const acl_table_entry_t *e, int n, acl_table_t *out)
{
  memset(out, 0, sizeof(*out));
  /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
  const acl_table_entry_t **v = n > 0 ? calloc((size_t)n, sizeof(*v)) : NULL;
  int m = 0;
  for (int i = 0; v && i < n; i++)
    if (e[i].converged && e[i].coll >= 0 && e[i].coll < ACL_NUM_COLL)
      v[m++] = &e[i];
  if (m > 1)
    qsort(v, (size_t)m, sizeof(*v), entry_cmp); /* NOLINT(bugprone-sizeof-expression) */
  for (int i = 0; i < m && out->nrules < ACL_TABLE_MAX_RULES; i++) {
    const acl_table_entry_t *x = v[i];
    if (i > 0 && same_shape(v[i - 1], x) && v[i - 1]->nbytes == x->nbytes)
      continue; /* one size, one rule: the first (ranks agree on it anyway) */
    bool has_prev = i > 0 && same_shape(v[i - 1], x);
    bool has_next = i + 1 < m && same_shape(v[i + 1], x);
    acl_table_rule_t *r = &out->rules[out->nrules++];
    r->coll = x->coll;
    r->nnodes = x->nnodes > 0 ? x->nnodes : ACL_TABLE_ANY;
    r->nranks = x->nranks > 0 ? x->nranks : ACL_TABLE_ANY;
    r->pipe_ops = x->pipe_ops > 0 ? x->pipe_ops : ACL_TABLE_ANY;
    r->min_bytes = has_prev ? geo_mid(v[i - 1]->nbytes, x->nbytes) + 1 : x->nbytes / 2;
    r->max_bytes = has_next ? geo_mid(x->nbytes, v[i + 1]->nbytes)
                            : (x->nbytes > UINT64_MAX / 2 ? UINT64_MAX : 2 * x->nbytes);
    r->cand = x->cand;
    if (r->cand.algo == ACL_ALGO_NCCL) {
      r->cand.proto = -1;
      r->cand.nchannels = 0;
      r->cand.chunk_log2 = 0;
    }
  }
  free(v);
  out->hash = acl_table_hash(out);
  return out->nrules;
}

static void any_field(acl_strbuf_t *sb, int32_t v, const char *any)
{
  if (v == ACL_TABLE_ANY)
    acl_sb_puts(sb, any);
  else
    acl_sb_printf(sb, "%d", (int)v);
}

static void size_field(acl_strbuf_t *sb, uint64_t v)
{
  if (v == UINT64_MAX)
    acl_sb_puts(sb, "max");
  else
    acl_sb_printf(sb, "%llu", (unsigned long long)v);
}

/* NCCL's example plugin spells names in lower case ("allreduce", "ring"). */
static void lower(acl_strbuf_t *sb, const char *s)
{
  for (; *s; s++) {
    char c = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
    acl_sb_append(sb, &c, 1);
  }
}

void acl_table_render(acl_strbuf_t *sb, const acl_table_t *t, acl_table_format_t fmt)
{
  bool csv = fmt == ACL_TABLE_FMT_NCCL_CSV;
  if (csv)
    acl_sb_puts(sb, "# coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks,"
                    "numPipeOps,regBuff (autoccl; NCCL's own choices left out)\n");
  else
    acl_sb_puts(sb, "# autoccl tuning table: collective min_bytes max_bytes algo proto "
                    "channels nnodes nranks pipe_ops\n");
  /* Where it was measured, in a comment both readers skip but autoccl's
   * parser reads back (acl_table_meta_check). */
  if (t->nccl_version[0] || t->gpu[0])
    acl_sb_printf(sb, "# " ACL_TABLE_META_TAG " nccl_version=%s; gpu=%s\n",
                  t->nccl_version[0] ? t->nccl_version : "-", t->gpu[0] ? t->gpu : "-");
  for (int i = 0; i < t->nrules; i++) {
    const acl_table_rule_t *r = &t->rules[i];
    bool nccl = r->cand.algo == ACL_ALGO_NCCL;
    if (csv && nccl)
      continue;
    const char *sep = csv ? "," : " ";
    if (csv)
      lower(sb, r->coll < 0 ? "-1" : acl_coll_name(r->coll));
    else
      acl_sb_puts(sb, r->coll < 0 ? "*" : acl_coll_short(r->coll));
    acl_sb_puts(sb, sep);
    size_field(sb, r->min_bytes);
    acl_sb_puts(sb, sep);
    size_field(sb, r->max_bytes);
    acl_sb_puts(sb, sep);
    if (nccl) {
      acl_sb_puts(sb, "NCCL - 0");
    } else if (csv) {
      /* NCCL's example plugin spells names in lower case */
      lower(sb, acl_algo_name(r->cand.algo));
      acl_sb_puts(sb, ",");
      lower(sb, acl_proto_name(r->cand.proto));
      acl_sb_printf(sb, ",%d", r->cand.nchannels > 0 ? r->cand.nchannels : -1);
    } else {
      acl_sb_printf(sb, "%s %s %d", acl_algo_name(r->cand.algo), acl_proto_name(r->cand.proto),
                    r->cand.nchannels);
      if (r->cand.chunk_log2 != 0) { /* NCCL's CSV has no chunk column */
        char k[16];
        acl_sb_printf(sb, ":%s", acl_chunk_str(r->cand.chunk_log2, k, sizeof k));
      }
    }
    acl_sb_puts(sb, sep);
    any_field(sb, r->nnodes, csv ? "-1" : "*");
    acl_sb_puts(sb, sep);
    any_field(sb, r->nranks, csv ? "-1" : "*");
    acl_sb_puts(sb, sep);
    any_field(sb, r->pipe_ops, csv ? "-1" : "*");
    if (csv)
      acl_sb_puts(sb, ",-1");
    acl_sb_puts(sb, "\n");
  }
}

static void json_cand(acl_strbuf_t *sb, const acl_candidate_t *c)
{
  if (c->algo == ACL_ALGO_NCCL) {
    acl_sb_puts(sb, "\"algo\":\"NCCL\",\"proto\":null,\"channels\":null");
    return;
  }
  acl_sb_printf(sb, "\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":", acl_algo_name(c->algo),
                acl_proto_name(c->proto));
  if (c->nchannels > 0)
    acl_sb_printf(sb, "%d", c->nchannels);
  else
    acl_sb_puts(sb, "null");
  if (c->chunk_log2 != 0) {
    char k[16];
    acl_sb_printf(sb, ",\"chunk\":\"%s\"", acl_chunk_str(c->chunk_log2, k, sizeof k));
  }
}

static void json_num_or_null(acl_strbuf_t *sb, double v, bool valid, const char *fmt)
{
  if (valid && isfinite(v))
    acl_sb_printf(sb, fmt, v);
  else
    acl_sb_puts(sb, "null");
}

void acl_table_render_json(acl_strbuf_t *sb, const acl_table_meta_t *m, const acl_table_entry_t *e,
                           int n)
{
  acl_sb_printf(sb, "{\"version\":%d,\"nccl_version\":", ACL_TABLE_VERSION);
  if (m && m->nccl_version)
    acl_sb_json_str(sb, m->nccl_version);
  else
    acl_sb_puts(sb, "null");
  acl_sb_puts(sb, ",\"gpu\":");
  if (m && m->gpu)
    acl_sb_json_str(sb, m->gpu);
  else
    acl_sb_puts(sb, "null");
  acl_sb_puts(sb, ",\"host\":");
  if (m && m->host)
    acl_sb_json_str(sb, m->host);
  else
    acl_sb_puts(sb, "null");
  acl_sb_puts(sb, ",\"generated_unix\":");
  json_num_or_null(sb, m ? m->generated_unix : 0.0, m && m->generated_unix > 0.0, "%.3f");
  acl_sb_puts(sb, ",\"entries\":[");
  for (int i = 0; i < n; i++) {
    const acl_table_entry_t *x = &e[i];
    acl_sb_printf(sb,
                  "%s{\"collective\":\"%s\",\"nbytes\":%llu,\"num_pipe_ops\":%d,"
                  "\"nranks\":%d,\"nnodes\":%d,",
                  i ? "," : "", acl_coll_short(x->coll), (unsigned long long)x->nbytes,
                  (int)x->pipe_ops, (int)x->nranks, (int)x->nnodes);
    json_cand(sb, &x->cand);
    acl_sb_printf(sb, ",\"converged\":%s,\"source\":", x->converged ? "true" : "false");
    acl_sb_json_str(sb, x->source ? x->source : "nccl");
    acl_sb_puts(sb, ",\"speedup\":");
    json_num_or_null(sb, x->speedup, x->speedup > 0.0, "%.4f");
    acl_sb_printf(sb, ",\"samples\":%llu,\"measured_unix\":", (unsigned long long)x->samples);
    json_num_or_null(sb, x->measured_unix, x->measured_unix > 0.0, "%.3f");
    acl_sb_puts(sb, "}");
  }
  acl_sb_puts(sb, "],\"rules\":[");
  acl_table_t *t = calloc(1, sizeof(*t));
  if (t) {
    acl_table_from_entries(e, n, t);
    for (int i = 0; i < t->nrules; i++) {
      const acl_table_rule_t *r = &t->rules[i];
      acl_sb_printf(sb,
                    "%s{\"collective\":\"%s\",\"min_bytes\":%llu,\"max_bytes\":%llu,"
                    "\"num_pipe_ops\":%d,\"nranks\":%d,\"nnodes\":%d,",
                    i ? "," : "", acl_coll_short(r->coll), (unsigned long long)r->min_bytes,
                    (unsigned long long)r->max_bytes, (int)r->pipe_ops, (int)r->nranks,
                    (int)r->nnodes);
      json_cand(sb, &r->cand);
      acl_sb_puts(sb, "}");
    }
    acl_sb_printf(sb, "],\"hash\":\"%016llx\"}", (unsigned long long)t->hash);
    free(t);
  } else {
    acl_sb_puts(sb, "],\"hash\":null}");
  }
}

int acl_table_format_for_path(const char *path)
{
  size_t n = path ? strlen(path) : 0;
  if (n >= 4 && strcasecmp(path + n - 4, ".csv") == 0)
    return ACL_TABLE_FMT_NCCL_CSV;
  if (n >= 5 && strcasecmp(path + n - 5, ".json") == 0)
    return -1;
  return ACL_TABLE_FMT_AUTOCCL;
}

int acl_table_write_atomic(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
  return acl_sfile_write_atomic(path, text, len, 0644, err, errlen);
}
