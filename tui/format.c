/* Human-readable cells. Unknown values render as "-", never as 0. */
#include "tui/top.h"

#include "core/types.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const char *dash(char *buf, size_t len)
{
  snprintf(buf, len, "-");
  return buf;
}

const char *acl_top_fmt_bytes(int64_t b, char *buf, size_t len)
{
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (b < 0)
    return dash(buf, len);
  double v = (double)b;
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    u++;
  }
  if (u == 0 || v == floor(v))
    snprintf(buf, len, "%.0f %s", v, units[u]);
  else
    snprintf(buf, len, "%.1f %s", v, units[u]);
  return buf;
}

const char *acl_top_fmt_bw(double bps, char *buf, size_t len)
{
  if (!isfinite(bps) || bps < 0)
    return dash(buf, len);
  /* Decimal units, as nccl-tests reports GB/s. */
  if (bps >= 1e9)
    snprintf(buf, len, "%.1f GB/s", bps / 1e9);
  else if (bps >= 1e6)
    snprintf(buf, len, "%.1f MB/s", bps / 1e6);
  else if (bps >= 1e3)
    snprintf(buf, len, "%.1f kB/s", bps / 1e3);
  else
    snprintf(buf, len, "%.0f B/s", bps);
  return buf;
}

const char *acl_top_fmt_cand(const acl_top_cand_t *c, char *buf, size_t len)
{
  if (!c || !c->known || !c->algo[0])
    return dash(buf, len);
  if (strcmp(c->algo, "NCCL") == 0 && c->channels <= 0) {
    snprintf(buf, len, "NCCL");
    return buf;
  }
  char ch[48] = "", k[16];
  if (c->channels > 0)
    snprintf(ch, sizeof(ch), "/%dch", c->channels);
  if (c->chunk_log2 != 0) /* tuner v6: chunk size as a scale of NCCL's own */
    snprintf(ch + strlen(ch), sizeof(ch) - strlen(ch), " %s",
             acl_chunk_str(c->chunk_log2, k, sizeof k));
  snprintf(buf, len, "%s%s%s%s", c->algo, c->proto[0] ? "/" : "", c->proto, ch);
  return buf;
}

const char *acl_top_fmt_ratio(double x, char *buf, size_t len)
{
  if (!isfinite(x))
    return dash(buf, len);
  snprintf(buf, len, "%.2fx", x);
  return buf;
}

const char *acl_top_fmt_pct(double x, char *buf, size_t len)
{
  if (!isfinite(x))
    return dash(buf, len);
  snprintf(buf, len, "%.0f%%", x * 100.0);
  return buf;
}

const char *acl_top_fmt_seconds(double s, char *buf, size_t len)
{
  if (!isfinite(s))
    return dash(buf, len);
  double a = fabs(s);
  if (a == 0)
    snprintf(buf, len, "0 s");
  else if (a < 1e-6)
    snprintf(buf, len, "%.0f ns", s * 1e9);
  else if (a < 1e-3)
    snprintf(buf, len, "%.1f us", s * 1e6);
  else if (a < 1.0)
    snprintf(buf, len, "%.1f ms", s * 1e3);
  else
    snprintf(buf, len, "%.2f s", s);
  return buf;
}

const char *acl_top_fmt_signed_seconds(double s, char *buf, size_t len)
{
  if (!isfinite(s))
    return dash(buf, len);
  char mag[32];
  acl_top_fmt_seconds(fabs(s), mag, sizeof(mag));
  snprintf(buf, len, "%s%s", s < 0 ? "-" : s > 0 ? "+" : "", mag);
  return buf;
}

const char *acl_top_fmt_int(int64_t v, char *buf, size_t len)
{
  if (v < 0)
    return dash(buf, len);
  snprintf(buf, len, "%" PRId64, v);
  return buf;
}

const char *acl_top_fmt_wait(const acl_top_workload_t *w, char *buf, size_t len)
{
  if (w->budget_wait_calls <= 0) {
    if (len)
      buf[0] = '\0';
    return buf;
  }
  snprintf(buf, len, "waits ~%" PRId64 " calls%s%s", w->budget_wait_calls,
           w->budget_wait_for[0] ? " for " : "", w->budget_wait_for);
  return buf;
}

bool acl_top_state_decided(const char *s)
{
  int ph = acl_phase_parse(s);
  return ph >= 0 && acl_phase_decided((acl_phase_t)ph);
}

const char *acl_top_state_label(const char *s)
{
  /* The plugin's own names (acl_phase_name), as the dashboard, the JSON
   * and the job report spell them: one name per state everywhere. */
  if (!s || !s[0])
    return "-";
  /* the STATE column is 10 wide: the two longest names are shortened */
  if (strcmp(s, "waiting-budget") == 0)
    return "wait-budg";
  if (strcmp(s, "waiting-samples") == 0)
    return "wait-smpl";
  return s;
}

static const char *const col_names[ACL_TOP_COL_COUNT] = {
    "COMM", "RANK",    "COLLECTIVE", "SIZE",    "STATE", "SUBSPACE", "CANDIDATE",
    "BEST", "SPEEDUP", "SAVED",      "OVERLAP", "BUSBW", "CALLS",    "SOURCE"};

const char *acl_top_col_name(acl_top_col_t c)
{
  return (unsigned)c < ACL_TOP_COL_COUNT ? col_names[c] : "?";
}

bool acl_top_col_desc_default(acl_top_col_t c)
{
  return c == ACL_TOP_COL_SIZE || c == ACL_TOP_COL_SPEEDUP || c == ACL_TOP_COL_SAVED ||
         c == ACL_TOP_COL_OVERLAP || c == ACL_TOP_COL_BUSBW || c == ACL_TOP_COL_CALLS;
}

const char *acl_top_cell(const acl_top_row_t *r, acl_top_col_t c, char *buf, size_t len)
{
  const acl_top_workload_t *w = r->w;
  switch (c) {
  case ACL_TOP_COL_COMM:
    snprintf(buf, len, "%s", r->comm_label);
    return buf;
  case ACL_TOP_COL_RANK:
    return acl_top_fmt_int(w->rank, buf, len);
  case ACL_TOP_COL_COLL:
    snprintf(buf, len, "%s", w->collective[0] ? w->collective : "-");
    return buf;
  case ACL_TOP_COL_SIZE:
    return acl_top_fmt_bytes(w->bytes, buf, len);
  case ACL_TOP_COL_STATE:
    snprintf(buf, len, "%s", acl_top_state_label(w->state));
    return buf;
  case ACL_TOP_COL_SUBSPACE:
    snprintf(buf, len, "%s", w->subspace[0] ? w->subspace : "-");
    return buf;
  case ACL_TOP_COL_CAND:
    return acl_top_fmt_cand(&w->candidate, buf, len);
  case ACL_TOP_COL_BEST:
    /* NCCL's choice kept after a search: say how much was tried. */
    if (w->best.known && !strcmp(w->best.algo, "NCCL") && acl_top_state_decided(w->state) &&
        w->candidates_evaluated > 0) {
      return acl_kept_nccl_str((long long)w->candidates_evaluated, buf, len);
    }
    return acl_top_fmt_cand(&w->best, buf, len);
  case ACL_TOP_COL_SPEEDUP:
    return acl_top_fmt_ratio(w->speedup, buf, len);
  case ACL_TOP_COL_SAVED:
    return acl_top_fmt_signed_seconds(w->time_saved_seconds, buf, len);
  case ACL_TOP_COL_OVERLAP:
    return acl_top_fmt_pct(w->overlap, buf, len);
  case ACL_TOP_COL_BUSBW:
    return acl_top_fmt_bw(w->busbw, buf, len);
  case ACL_TOP_COL_CALLS:
    return acl_top_fmt_int(w->calls, buf, len);
  case ACL_TOP_COL_SOURCE:
    snprintf(buf, len, "%s", w->source[0] ? w->source : "-");
    return buf;
  default:
    return dash(buf, len);
  }
}
