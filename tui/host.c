/* One view per host: the siblings an endpoint lists in /api/v1/host, and
 * fitting the per-source connection lines to the screen. Pure: no I/O. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "observe/observe.h"
#include "tui/top.h"

int acl_top_add_siblings(acl_top_opts_t *o, int k, const char *body, char *err, size_t errlen)
{
  json_error_t je;
  json_t *doc = json_loads(body ? body : "", 0, &je);
  json_t *procs = json_is_object(doc) ? json_object_get(doc, ACL_KEY(PROCESSES)) : NULL;
  if (!json_is_array(procs)) {
    snprintf(err, errlen, "not a host document (no \"processes\" list)");
    json_decref(doc);
    return -1;
  }
  int added = 0;
  size_t i;
  json_t *p;
  json_array_foreach(procs, i, p)
  {
    json_t *port = json_is_object(p) ? json_object_get(p, ACL_KEY(PORT)) : NULL;
    if (!json_is_integer(port)) /* null: that process has no endpoint */
      continue;
    json_int_t v = json_integer_value(port);
    char url[ACL_TOP_URL_MAX];
    if (v < 1 || v > 65535 || acl_top_url_with_port(o->urls[k], (long)v, url, sizeof(url)) < 0)
      continue;
    bool seen = false;
    for (int j = 0; j < o->nurls && !seen; j++)
      seen = strcmp(o->urls[j], url) == 0;
    if (seen)
      continue;
    if (o->nurls >= ACL_TOP_MAX_URLS)
      break;
    snprintf(o->urls[o->nurls++], sizeof(o->urls[0]), "%s", url);
    added++;
  }
  json_decref(doc);
  return added;
}

/* Columns of a UTF-8 string: one per character (the lines hold ASCII and
 * the em dash). */
static int cols(const char *s, size_t n)
{
  int c = 0;
  for (size_t i = 0; i < n; i++)
    c += ((unsigned char)s[i] & 0xC0) != 0x80;
  return c;
}

/* The longest prefix of s (whole characters) that spans at most w columns. */
static size_t prefix_cols(const char *s, int w)
{
  size_t i = 0;
  int c = 0;
  while (s[i]) {
    size_t k = 1;
    while (s[i + k] && ((unsigned char)s[i + k] & 0xC0) == 0x80)
      k++;
    if (c + 1 > w)
      break;
    c++;
    i += k;
  }
  return i;
}

void acl_top_fit_fields(char *out, size_t outlen, const char *const *fields, int nf, int width,
                        bool utf8)
{
  const char *ell = utf8 ? "\xe2\x80\xa6" : "...";
  int ellw = utf8 ? 1 : 3;
  size_t o = 0;
  int used = 0;
  if (!outlen)
    return;
  out[0] = '\0';
  for (int i = 0; i < nf; i++) {
    const char *f = fields[i];
    if (!f || !f[0])
      continue;
    int sep = o ? 2 : 0;
    int fw = cols(f, strlen(f));
    if (used + sep + fw <= width) {
      o += (size_t)snprintf(out + o, outlen - o, "%s%s", sep ? "  " : "", f);
      if (o >= outlen)
        o = outlen - 1;
      used += sep + fw;
      continue;
    }
    /* The first field that does not fit: cut at a word (the URL, first,
     * anywhere) and marked; the rest are dropped. */
    int room = width - used - sep - ellw;
    size_t cut = room > 0 ? prefix_cols(f, room) : 0;
    if (o > 0)
      while (cut > 0 && f[cut] != ' ')
        cut--;
    while (cut > 0 && f[cut - 1] == ' ')
      cut--;
    if (cut > 0)
      snprintf(out + o, outlen - o, "%s%.*s%s", sep ? "  " : "", (int)cut, f, ell);
    else if (used + 1 + ellw <= width)
      snprintf(out + o, outlen - o, " %s", ell);
    break;
  }
}
