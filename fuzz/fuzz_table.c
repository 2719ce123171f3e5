/* Tuning tables (AUTOCCL_TABLE), both formats (autoccl's and NCCL's CSV),
 * through acl_table_parse. Checks: a rejected table leaves *out untouched
 * and names the line; an accepted one holds only valid rules (collective,
 * ordered size range, algorithm or NCCL's own, protocol, channels 0..64,
 * shapes any or positive), its hash is the rules', and lookup returns the
 * first rule that matches; rendering it in either format and parsing that
 * again gives the same rules (NCCL's CSV: less the NCCL's-own ones, and
 * without chunk sizes, which it cannot carry); parsing
 * never reads past len (the input is not NUL-terminated). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/table.h"
#include "fuzz_common.h"

static acl_table_t out, sentinel, again;

/* NCCL's CSV has no chunk column: through it, a rule keeps all but its chunk. */
static bool same_rule(const acl_table_rule_t *a, const acl_table_rule_t *b, bool keeps_chunk)
{
  acl_candidate_t ca = a->cand;
  if (!keeps_chunk)
    ca.chunk_log2 = 0;
  return a->coll == b->coll && a->min_bytes == b->min_bytes && a->max_bytes == b->max_bytes &&
         a->nnodes == b->nnodes && a->nranks == b->nranks && a->pipe_ops == b->pipe_ops &&
         acl_candidate_eq(&ca, &b->cand);
}

/* Render in fmt, parse back: the same rules (CSV drops NCCL's own). */
static void round_trip(acl_table_format_t fmt)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_table_render(&sb, &out, fmt);
  FZ_CHECK(acl_sb_ok(&sb), "render failed");
  char err[256] = "";
  int rc = acl_table_parse(sb.data ? sb.data : "", sb.len, &again, err, sizeof(err));
  FZ_CHECK(rc == 0, "rendered table rejected (%s): %s\n%s", fmt ? "csv" : "autoccl", err,
           sb.data ? sb.data : "");
  int j = 0;
  for (int i = 0; i < out.nrules; i++) {
    if (fmt == ACL_TABLE_FMT_NCCL_CSV && out.rules[i].cand.algo == ACL_ALGO_NCCL)
      continue;
    FZ_CHECK(j < again.nrules &&
                 same_rule(&out.rules[i], &again.rules[j], fmt == ACL_TABLE_FMT_AUTOCCL),
             "rule %d changed through %s", i, fmt ? "csv" : "autoccl");
    j++;
  }
  FZ_CHECK(j == again.nrules, "extra rules after the round trip");
  if (fmt == ACL_TABLE_FMT_AUTOCCL)
    FZ_CHECK(again.hash == out.hash, "hash changed through the autoccl format");
  acl_sb_free(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 64 * 1024)
    return 0;
  /* An exact-size heap copy: ASan catches any read past len. */
  char *text = malloc(size ? size : 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  memset(&sentinel, 0xA5, sizeof(sentinel));
  memcpy(&out, &sentinel, sizeof(out));
  char err[256] = "";
  int rc = acl_table_parse(text, size, &out, err, sizeof(err));
  if (rc != 0) {
    FZ_CHECK(rc == -1, "rc %d", rc);
    FZ_CHECK(memcmp(&out, &sentinel, sizeof(out)) == 0, "rejected table changed *out");
    FZ_CHECK(strncmp(err, "line ", 5) == 0 || strncmp(err, "JSON: ", 6) == 0,
             "error names neither the line nor the JSON member: %s", err);
    free(text);
    return 0;
  }
  FZ_CHECK(out.nrules >= 0 && out.nrules <= ACL_TABLE_MAX_RULES, "nrules %d", out.nrules);
  for (int i = 0; i < out.nrules; i++) {
    const acl_table_rule_t *r = &out.rules[i];
    FZ_CHECK(r->coll >= -1 && r->coll < ACL_NUM_COLL, "rule %d coll %d", i, r->coll);
    FZ_CHECK(r->min_bytes <= r->max_bytes, "rule %d range", i);
    if (r->cand.algo == ACL_ALGO_NCCL) {
      FZ_CHECK(r->cand.proto == -1 && r->cand.nchannels == 0, "rule %d NCCL's own", i);
    } else {
      FZ_CHECK(r->cand.algo >= 0 && r->cand.algo < ACL_NUM_ALGO, "rule %d algo", i);
      FZ_CHECK(r->cand.proto >= 0 && r->cand.proto < ACL_NUM_PROTO, "rule %d proto", i);
    }
    FZ_CHECK(r->cand.nchannels >= 0 && r->cand.nchannels <= 64, "rule %d channels", i);
    FZ_CHECK(r->nnodes == ACL_TABLE_ANY || r->nnodes >= 1, "rule %d nnodes", i);
    FZ_CHECK(r->nranks == ACL_TABLE_ANY || r->nranks >= 1, "rule %d nranks", i);
    FZ_CHECK(r->pipe_ops == ACL_TABLE_ANY || r->pipe_ops >= 1, "rule %d pipe_ops", i);
    FZ_CHECK(r->line >= 1, "rule %d line", i);
    int coll = r->coll < 0 ? 4 : r->coll;
    const uint64_t probes[2] = {r->min_bytes, r->max_bytes};
    for (int k = 0; k < 2; k++) {
      const acl_table_rule_t *hit = acl_table_lookup(&out, coll, probes[k]);
      FZ_CHECK(hit && hit <= r, "lookup(%d, %" PRIu64 ") missed rule %d", coll, probes[k], i);
      for (const acl_table_rule_t *q = out.rules; q < hit; q++)
        FZ_CHECK(!((q->coll < 0 || q->coll == coll) && probes[k] >= q->min_bytes &&
                   probes[k] <= q->max_bytes),
                 "lookup skipped an earlier matching rule");
    }
  }
  FZ_CHECK(out.format == ACL_TABLE_FMT_AUTOCCL || out.format == ACL_TABLE_FMT_NCCL_CSV, "format %d",
           (int)out.format);
  FZ_CHECK(out.hash == acl_table_hash(&out), "hash is not the rules'");
  round_trip(ACL_TABLE_FMT_AUTOCCL);
  round_trip(ACL_TABLE_FMT_NCCL_CSV);
  /* Sizes: whatever the first token is, a parsed size prints back to itself. */
  char tok[32];
  size_t n = 0;
  while (n < size && n < sizeof(tok) - 1 && data[n] != ' ' && data[n] != '\n')
    n++;
  memcpy(tok, data, n);
  tok[n] = '\0';
  uint64_t v, v2;
  if (acl_parse_size(tok, &v) && v != UINT64_MAX) {
    char back[32];
    snprintf(back, sizeof(back), "%" PRIu64, v);
    FZ_CHECK(acl_parse_size(back, &v2) && v2 == v, "size %s -> %s does not round-trip", tok, back);
  }
  free(text);
  return 0;
}
