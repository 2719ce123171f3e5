/* Incremental text/event-stream parser following the WHATWG rules: lines end
 * in CRLF, LF or CR (a CRLF may be split across chunks), ':' starts a
 * comment, "field: value" loses one leading space, a blank line dispatches.
 * Memory is bounded: an over-long line is dropped and counted. */
#include "tui/top.h"

#include <stdlib.h>
#include <string.h>

#define SSE_MAX_DATA (16u << 20) /* an event's data beyond this is dropped */

void acl_top_sse_init(acl_top_sse_t *p, acl_top_sse_cb cb, void *ud)
{
  memset(p, 0, sizeof(*p));
  p->cb = cb;
  p->ud = ud;
  p->retry_ms = -1;
  acl_sb_init(&p->line);
  acl_sb_init(&p->data);
}

void acl_top_sse_reset(acl_top_sse_t *p)
{
  acl_sb_reset(&p->line);
  acl_sb_reset(&p->data);
  p->type[0] = '\0';
  p->have_data = false;
  p->last_cr = false;
  p->started = false;
  p->bom = 0;
  p->overflow = false;
}

void acl_top_sse_free(acl_top_sse_t *p)
{
  if (!p)
    return;
  acl_sb_free(&p->line);
  acl_sb_free(&p->data);
}

static void dispatch(acl_top_sse_t *p)
{
  if (p->have_data && p->cb) {
    acl_top_sse_event_t ev = {
        .type = p->type[0] ? p->type : "message",
        .data = p->data.data ? p->data.data : "",
        .data_len = p->data.len,
        .id = p->id,
    };
    p->events++;
    p->cb(p->ud, &ev);
  }
  acl_sb_reset(&p->data);
  p->type[0] = '\0';
  p->have_data = false;
}

static void copy_field(char *dst, size_t cap, const char *v, size_t n)
{
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, v, n);
  dst[n] = '\0';
}

static void process_line(acl_top_sse_t *p, const char *s, size_t n)
{
  if (n == 0) {
    dispatch(p);
    return;
  }
  if (s[0] == ':') {
    p->comments++;
    return;
  }
  const char *colon = memchr(s, ':', n);
  size_t flen = colon ? (size_t)(colon - s) : n;
  const char *v = colon ? colon + 1 : s + n;
  size_t vlen = colon ? n - flen - 1 : 0;
  if (vlen && v[0] == ' ') {
    v++;
    vlen--;
  }
  if (flen == 4 && memcmp(s, "data", 4) == 0) {
    if (p->data.len + vlen + 1 > SSE_MAX_DATA) {
      p->dropped_lines++;
      return;
    }
    if (p->have_data)
      acl_sb_append(&p->data, "\n", 1);
    acl_sb_append(&p->data, v, vlen);
    if (!p->data.data) /* empty first value: make data a valid "" */
      acl_sb_append(&p->data, "", 0);
    p->have_data = true;
  } else if (flen == 5 && memcmp(s, "event", 5) == 0) {
    copy_field(p->type, sizeof(p->type), v, vlen);
  } else if (flen == 2 && memcmp(s, "id", 2) == 0) {
    if (!memchr(v, '\0', vlen))
      copy_field(p->id, sizeof(p->id), v, vlen);
  } else if (flen == 5 && memcmp(s, "retry", 5) == 0) {
    long ms = 0;
    size_t i = 0;
    for (; i < vlen && v[i] >= '0' && v[i] <= '9' && ms < 100000000; i++)
      ms = ms * 10 + (v[i] - '0');
    if (vlen && i == vlen)
      p->retry_ms = ms;
  } /* other fields are ignored, per the standard */
}

int acl_top_sse_feed(acl_top_sse_t *p, const char *data, size_t len)
{
  size_t i = 0;
  /* A UTF-8 BOM may open the stream, split across reads however TCP
   * delivers it. A partial match followed by anything else is dropped: no
   * valid field name starts with those bytes. */
  static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
  while (!p->started && i < len) {
    if ((unsigned char)data[i] == bom[p->bom]) {
      i++;
      if (++p->bom == 3)
        p->started = true;
    } else {
      p->started = true;
    }
  }
  while (i < len) {
    char ch = data[i];
    if (p->last_cr) {
      p->last_cr = false;
      if (ch == '\n') { /* second half of a CRLF */
        i++;
        continue;
      }
    }
    /* Copy the run of ordinary bytes up to the next line end in one go. */
    size_t j = i;
    while (j < len && data[j] != '\n' && data[j] != '\r')
      j++;
    if (j > i && !p->overflow) {
      if (p->line.len + (j - i) > ACL_TOP_SSE_MAX_LINE) {
        p->overflow = true;
        acl_sb_reset(&p->line);
      } else {
        acl_sb_append(&p->line, data + i, j - i);
      }
    }
    if (j == len)
      break;
    if (p->overflow) {
      p->dropped_lines++;
      p->overflow = false;
    } else {
      process_line(p, p->line.data ? p->line.data : "", p->line.len);
    }
    acl_sb_reset(&p->line);
    p->last_cr = data[j] == '\r';
    i = j + 1;
  }
  if (!acl_sb_ok(&p->line) || !acl_sb_ok(&p->data)) {
    acl_sb_free(&p->line);
    acl_sb_free(&p->data);
    acl_top_sse_reset(p);
    return -1;
  }
  return 0;
}
