#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void acl_sb_init(acl_strbuf_t *sb) { memset(sb, 0, sizeof(*sb)); }

void acl_sb_free(acl_strbuf_t *sb)
{
  if (!sb)
    return;
  free(sb->data);
  memset(sb, 0, sizeof(*sb));
}

void acl_sb_reset(acl_strbuf_t *sb)
{
  sb->len = 0;
  sb->failed = false;
  if (sb->data)
    sb->data[0] = '\0';
}

bool acl_sb_ok(const acl_strbuf_t *sb) { return !sb->failed; }

static bool reserve(acl_strbuf_t *sb, size_t extra)
{
  if (sb->failed)
    return false;
  if (sb->data && sb->len + extra + 1 <= sb->cap)
    return true;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1)
    cap *= 2;
  char *p = realloc(sb->data, cap);
  if (!p) {
    sb->failed = true;
    return false;
  }
  sb->data = p;
  sb->cap = cap;
  return true;
}

void acl_sb_append(acl_strbuf_t *sb, const char *s, size_t n)
{
  if (!reserve(sb, n))
    return;
  if (n)
    memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

void acl_sb_puts(acl_strbuf_t *sb, const char *s) { acl_sb_append(sb, s, strlen(s)); }

void acl_sb_printf(acl_strbuf_t *sb, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0) {
    sb->failed = true;
    return;
  }
  if ((size_t)n < sizeof(small)) {
    acl_sb_append(sb, small, (size_t)n);
    return;
  }
  if (!reserve(sb, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

size_t acl_utf8_seq(const unsigned char *p, size_t n)
{
  if (n == 0)
    return 0;
  unsigned c = p[0];
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned cp, min;
  if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

static const char k_replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

void acl_sb_escape(acl_strbuf_t *sb, const char *s, size_t n, acl_sb_escape_fn esc)
{
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t run = i; /* plain printable ASCII goes in one append */
    while (run < n && p[run] >= 0x20 && p[run] < 0x7F && p[run] != '"' && p[run] != '\\')
      run++;
    if (run > i) {
      acl_sb_append(sb, (const char *)p + i, run - i);
      i = run;
      continue;
    }
    if (p[i] >= 0x80) {
      size_t l = acl_utf8_seq(p + i, n - i);
      if (l == 0) {
        acl_sb_append(sb, k_replacement, 3);
        i++;
      } else {
        acl_sb_append(sb, (const char *)p + i, l);
        i += l;
      }
      continue;
    }
    esc(sb, p[i]);
    i++;
  }
}

static void json_escape(acl_strbuf_t *sb, unsigned c)
{
  switch (c) {
  case '"':
    acl_sb_append(sb, "\\\"", 2);
    break;
  case '\\':
    acl_sb_append(sb, "\\\\", 2);
    break;
  case '\n':
    acl_sb_append(sb, "\\n", 2);
    break;
  case '\r':
    acl_sb_append(sb, "\\r", 2);
    break;
  case '\t':
    acl_sb_append(sb, "\\t", 2);
    break;
  default:
    acl_sb_printf(sb, "\\u%04x", c); /* other controls and DEL */
  }
}

void acl_sb_json_strn(acl_strbuf_t *sb, const char *s, size_t n)
{
  acl_sb_append(sb, "\"", 1);
  acl_sb_escape(sb, s, n, json_escape);
  acl_sb_append(sb, "\"", 1);
}

void acl_sb_json_str(acl_strbuf_t *sb, const char *s)
{
  acl_sb_json_strn(sb, s ? s : "", s ? strlen(s) : 0);
}

char *acl_sb_steal(acl_strbuf_t *sb, size_t *len)
{
  if (!sb->data)
    acl_sb_append(sb, "", 0);
  char *p = sb->failed ? NULL : sb->data;
  if (len)
    *len = p ? sb->len : 0;
  if (!p)
    free(sb->data);
  memset(sb, 0, sizeof(*sb));
  return p;
}
