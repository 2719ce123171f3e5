#include "core/text.h"
#include "observe/observe_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void acl_render_u64(acl_strbuf_t *sb, uint64_t v)
{
  char buf[24];
  char *p = buf + sizeof(buf);
  do {
    *--p = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  acl_sb_append(sb, p, (size_t)(buf + sizeof(buf) - p));
}

/* Shortest of %.15g / %.17g that reads back as the same double; integers
 * (counts, sizes, most bandwidths) skip printf's slow float path. */
static void put_double(acl_strbuf_t *sb, double v)
{
  if (v == floor(v) && fabs(v) < 9007199254740992.0 && !(v == 0 && signbit(v))) {
    if (v < 0) {
      acl_sb_append(sb, "-", 1);
      v = -v;
    }
    acl_render_u64(sb, (uint64_t)v);
    return;
  }
  char buf[40];
  snprintf(buf, sizeof(buf), "%.15g", v);
  if (strtod(buf, NULL) != v)
    snprintf(buf, sizeof(buf), "%.17g", v);
  acl_sb_puts(sb, buf);
}

void acl_render_key(acl_strbuf_t *sb, const char *sep, acl_field_t f)
{
  const acl_field_info_t *fi = &acl_fields[f];
  if (sep[0] == ',' && sep[1] == ' ' && !sep[2]) { /* the common case, in one append */
    acl_sb_append(sb, fi->json_next, fi->json_next_len);
    return;
  }
  if (sep[0])
    acl_sb_puts(sb, sep);
  acl_sb_append(sb, fi->json, fi->json_len);
}

void acl_render_json_str(acl_strbuf_t *sb, const char *s, size_t maxlen)
{
  acl_sb_json_strn(sb, s ? s : "", s ? strnlen(s, maxlen) : 0);
}

void acl_render_json_num(acl_strbuf_t *sb, double v)
{
  if (!isfinite(v)) {
    acl_sb_puts(sb, "null");
    return;
  }
  put_double(sb, v);
}

void acl_render_json_float(acl_strbuf_t *sb, float v)
{
  if (!isfinite(v)) {
    acl_sb_puts(sb, "null");
    return;
  }
  double d = v;
  if (d == floor(d) && fabs(d) < 9007199254740992.0) {
    put_double(sb, d); /* integral: no printf */
    return;
  }
  char buf[32];
  snprintf(buf, sizeof(buf), "%.7g", d); /* a float carries ~7 digits */
  acl_sb_puts(sb, buf);
}

static void prom_escape(acl_strbuf_t *sb, unsigned c)
{
  if (c == '\\')
    acl_sb_append(sb, "\\\\", 2);
  else if (c == '"')
    acl_sb_append(sb, "\\\"", 2);
  else if (c == '\n')
    acl_sb_append(sb, "\\n", 2);
  else
    acl_sb_append(sb, "?", 1); /* other controls and DEL */
}

void acl_render_prom_label(acl_strbuf_t *sb, const char *s, size_t maxlen)
{
  /* Label values reach terminals (curl, promtool, logs): C1 controls (a
   * CSI) and bidi overrides go the way of C0 controls. */
  size_t n = s ? strnlen(s, maxlen) : 0, done = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    size_t l = (unsigned char)s[i] < 0x80 ? 1 : acl_utf8_decode(s + i, n - i, &cp);
    if (l > 1 && acl_cp_unsafe(cp)) {
      acl_sb_escape(sb, s + done, i - done, prom_escape);
      acl_sb_append(sb, "?", 1);
      done = i + l;
    }
    i += l ? l : 1;
  }
  acl_sb_escape(sb, s + done, n - done, prom_escape);
}

void acl_render_prom_float(acl_strbuf_t *sb, double v)
{
  if (isnan(v))
    acl_sb_puts(sb, "NaN");
  else if (isinf(v))
    acl_sb_puts(sb, v > 0 ? "+Inf" : "-Inf");
  else
    put_double(sb, v);
}

char *acl_render_comm_hex(uint64_t id, char *buf, size_t len)
{
  snprintf(buf, len, "0x%016" PRIx64, id);
  return buf;
}

void acl_render_cand_fields(acl_strbuf_t *sb, const acl_candidate_t *c)
{
  acl_render_key(sb, "", ACL_F_ALGO);
  acl_render_json_str(sb, acl_algo_name(c->algo), 32);
  acl_render_key(sb, ", ", ACL_F_PROTO);
  if (c->algo == ACL_ALGO_NCCL)
    acl_sb_puts(sb, "null");
  else
    acl_render_json_str(sb, acl_proto_name(c->proto), 32);
  acl_render_key(sb, ", ", ACL_F_CHANNELS);
  acl_render_u64(sb, c->nchannels < 0 ? 0 : (uint64_t)c->nchannels);
  /* Chunk size as a scale of NCCL's own, 0 = NCCL's (tuner v6, NCCL 2.30). */
  acl_render_key(sb, ", ", ACL_F_CHUNK_LOG2);
  acl_sb_printf(sb, "%d", (int)c->chunk_log2);
}

void acl_render_retune_cause(acl_strbuf_t *sb, int cause)
{
  const char *n = acl_retune_cause_name(cause);
  if (n)
    acl_sb_printf(sb, "\"%s\"", n);
  else
    acl_sb_puts(sb, "null");
}

void acl_render_wait_and_clock(acl_strbuf_t *sb, const acl_snap_workload_t *w)
{
  acl_render_key(sb, ", ", ACL_F_BUDGET_WAIT_CALLS);
  if (w->budget_wait_calls)
    acl_render_u64(sb, w->budget_wait_calls);
  else
    acl_sb_puts(sb, "null");
  acl_render_key(sb, ", ", ACL_F_BUDGET_WAIT_FOR);
  const char *why = w->budget_wait_calls ? acl_wait_for_name(w->budget_wait_for) : NULL;
  if (why)
    acl_sb_printf(sb, "\"%s\"", why);
  else
    acl_sb_puts(sb, "null");
  acl_render_key(sb, ", ", ACL_F_CLOCK_OFFSET_US);
  if (w->clock_offset_seconds > 0.0)
    acl_sb_printf(sb, "%.3f", w->clock_offset_seconds * 1e6);
  else
    acl_sb_puts(sb, "null");
}
