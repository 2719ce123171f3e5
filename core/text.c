#include "core/text.h"

#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"

bool acl_cp_unsafe(uint32_t cp)
{
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t acl_utf8_decode(const char *p, size_t n, uint32_t *cp)
{
  const unsigned char *u = (const unsigned char *)p;
  size_t l = acl_utf8_seq(u, n);
  if (l == 0) {
    *cp = n ? u[0] : 0;
    return 0;
  }
  static const unsigned char lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t c = u[0] & lead_mask[l];
  for (size_t i = 1; i < l; i++)
    c = (c << 6) | (u[i] & 0x3F);
  *cp = c;
  return l;
}

void acl_text_clean(char *out, size_t len, const char *in)
{
  if (!len)
    return;
  size_t o = 0, n = in ? strlen(in) : 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t l = acl_utf8_decode(in + i, n - i, &cp);
    bool bad = l == 0 || acl_cp_unsafe(cp);
    size_t w = bad ? 1 : l;
    if (o + w >= len)
      break;
    if (bad)
      out[o++] = '?';
    else
      memcpy(out + o, in + i, l), o += l;
    i += l ? l : 1;
  }
  out[o] = '\0';
}

size_t acl_text_escape(char *out, size_t len, const char *in)
{
  if (!len)
    return 0;
  size_t o = 0, n = in ? strlen(in) : 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t l = acl_utf8_decode(in + i, n - i, &cp);
    char e[16];
    const char *src = in + i;
    size_t w = l;
    if (l == 0 || (l == 1 && (cp < 0x20 || cp == 0x7F || cp == '\\'))) {
      if (cp == '\n' || cp == '\r' || cp == '\t' || cp == '\\')
        w = (size_t)snprintf(e, sizeof(e), "\\%c",
                             cp == '\n'   ? 'n'
                             : cp == '\r' ? 'r'
                             : cp == '\t' ? 't'
                                          : '\\');
      else
        w = (size_t)snprintf(e, sizeof(e), "\\x%02X", (unsigned)cp & 0xFF);
      src = e;
    } else if (acl_cp_unsafe(cp)) {
      w = (size_t)snprintf(e, sizeof(e), "\\u{%04X}", (unsigned)cp);
      src = e;
    }
    if (o + w >= len)
      break;
    memcpy(out + o, src, w);
    o += w;
    i += l ? l : 1;
  }
  out[o] = '\0';
  return o;
}

const char *acl_fmt_hostport(char *buf, size_t len, const char *host, int port)
{
  bool v6 = host && strchr(host, ':') && host[0] != '[';
  snprintf(buf, len, "%s%s%s:%d", v6 ? "[" : "", host ? host : "", v6 ? "]" : "", port);
  return buf;
}
