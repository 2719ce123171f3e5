/* Command line and URL parsing: pure, no printing, no exit (main does that). */
#include "tui/top.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char acl_top_usage[] =
    "Usage: autoccl-top [OPTIONS]\n"
    "Live view of autoccl's online NCCL tuning, from its HTTP API.\n"
    "\n"
    "  -u, --url URL        endpoint to watch (repeatable: several ranks/processes\n"
    "                       are merged by communicator); default " ACL_TOP_DEFAULT_URL "\n"
    "                       \"host:port\" means http://host:port\n"
    "                       Each endpoint's other local ranks (its /api/v1/host)\n"
    "                       are watched too, unless --local-ranks is given\n"
    "  -l, --local-ranks N  each URL is local rank 0 of a host whose N processes\n"
    "                       serve port, port+1, ... (AUTOCCL_HTTP_PORT + local rank):\n"
    "                       watch exactly these; 1..64 (default: ask the endpoint)\n"
    "  -d, --delay SECONDS  refresh interval, 0.1..3600 (default 1)\n"
    "  -b, --batch          print plain text tables instead of the full-screen view\n"
    "  -n, --iterations N   stop after N refreshes\n"
    "      --once           fetch once, print, exit (with --json: one merged JSON)\n"
    "      --json           JSON instead of text (with --once or --batch)\n"
    "      --no-color       no colours (also when NO_COLOR is set)\n"
    "  -h, --help           this help\n"
    "  -V, --version        version\n"
    "\n"
    "Keys: Up/Down or j/k select, s or F6 next sort column, r reverse,\n"
    "      h or ? help, q quit.\n"
    "Exit status: 0 ok, 1 an endpoint was unreachable at start, 2 bad usage.\n";

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t n, const char *fmt, ...)
{
  if (err && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static bool host_char(char c)
{
  return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

int acl_top_normalize_url(const char *in, char *out, size_t outlen, char *err, size_t errlen)
{
  if (!in || !in[0])
    return fail(err, errlen, "empty URL");
  size_t len = strlen(in);
  if (len >= ACL_TOP_URL_MAX - 16)
    return fail(err, errlen, "URL too long (%zu characters)", len);
  for (const char *c = in; *c; c++)
    if ((unsigned char)*c <= ' ' || *c == 0x7f)
      return fail(err, errlen, "URL '%s' contains a space or control character", in);
  const char *p = in;
  bool scheme = false;
  const char *sep = strstr(in, "://");
  if (sep) {
    if ((size_t)(sep - in) != 4 || strncasecmp(in, "http", 4) != 0)
      return fail(err, errlen, "URL '%s': only http:// is supported", in);
    p = sep + 3;
    scheme = true;
  }
  char host[256];
  size_t hl = 0;
  if (*p == '[') { /* IPv6 literal */
    const char *e = strchr(p, ']');
    if (!e || e == p + 1)
      return fail(err, errlen, "URL '%s': bad IPv6 address", in);
    for (const char *c = p + 1; c < e; c++)
      if (!isxdigit((unsigned char)*c) && *c != ':' && *c != '.')
        return fail(err, errlen, "URL '%s': bad IPv6 address", in);
    hl = (size_t)(e - p) + 1;
    if (hl >= sizeof(host))
      return fail(err, errlen, "URL '%s': host too long", in);
    memcpy(host, p, hl);
    p = e + 1;
  } else {
    while (host_char(p[hl]))
      hl++;
    if (hl == 0)
      return fail(err, errlen, "URL '%s': missing host", in);
    if (hl >= sizeof(host))
      return fail(err, errlen, "URL '%s': host too long", in);
    memcpy(host, p, hl);
    p += hl;
  }
  host[hl] = '\0';
  long port = scheme ? 80 : ACL_TOP_DEFAULT_PORT;
  if (*p == ':') {
    p++;
    if (!isdigit((unsigned char)*p))
      return fail(err, errlen, "URL '%s': bad port", in);
    port = 0;
    while (isdigit((unsigned char)*p) && port <= 65535)
      port = port * 10 + (*p++ - '0');
    if (port < 1 || port > 65535 || isdigit((unsigned char)*p))
      return fail(err, errlen, "URL '%s': port must be 1..65535", in);
  }
  if (*p && *p != '/')
    return fail(err, errlen, "URL '%s': unexpected '%c' after the host", in, *p);
  if (strpbrk(p, "?#"))
    return fail(err, errlen, "URL '%s': no query or fragment allowed", in);
  size_t pl = strlen(p);
  while (pl && p[pl - 1] == '/')
    pl--;
  int n = snprintf(out, outlen, "http://%s:%ld%.*s", host, port, (int)pl, p);
  if (n < 0 || (size_t)n >= outlen)
    return fail(err, errlen, "URL '%s' too long", in);
  return 0;
}

/* "--name=value", "--name value", "-x value", "-xvalue". */
static int take_value(int argc, char *const *argv, int *i, const char *arg, const char *longname,
                      char shortname, const char **val)
{
  size_t ll = strlen(longname);
  if (strncmp(arg, longname, ll) == 0 && arg[ll] == '=') {
    *val = arg + ll + 1;
    return 1;
  }
  bool is_short = shortname && arg[0] == '-' && arg[1] == shortname;
  if (strcmp(arg, longname) == 0 || (is_short && arg[2] == '\0')) {
    if (*i + 1 >= argc) {
      *val = NULL;
      return -1;
    }
    *val = argv[++*i];
    return 1;
  }
  if (is_short && arg[2]) {
    *val = arg + 2;
    return 1;
  }
  return 0;
}

int acl_top_url_port(const char *u, long *port, char *err, size_t errlen)
{
  const char *hs = u + strlen("http://");
  const char *colon = *hs == '[' ? strchr(hs, ']') : hs;
  colon = colon ? strchr(colon, ':') : NULL;
  if (!colon)
    return fail(err, errlen, "URL %s: no port", u);
  *port = strtol(colon + 1, NULL, 10);
  return 0;
}

int acl_top_url_with_port(const char *u, long port, char *out, size_t outlen)
{
  const char *hs = u + strlen("http://");
  const char *colon = *hs == '[' ? strchr(hs, ']') : hs;
  colon = colon ? strchr(colon, ':') : NULL;
  if (!colon || port < 1 || port > 65535)
    return -1;
  const char *end = colon + 1;
  while (isdigit((unsigned char)*end))
    end++;
  int n = snprintf(out, outlen, "%.*s:%ld%s", (int)(colon - u), u, port, end);
  return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* --local-ranks N: every URL (normalised: http://host:port[/prefix]) gets
 * the N-1 ports after its own, as the plugin serves a host's processes. */
static int expand_local_ranks(acl_top_opts_t *o, char *err, size_t errlen)
{
  int given = o->nurls;
  if (o->local_ranks <= 1)
    return 0;
  if (given * o->local_ranks > ACL_TOP_MAX_URLS)
    return fail(err, errlen, "%d URLs x %d local ranks is more than %d endpoints", given,
                o->local_ranks, ACL_TOP_MAX_URLS);
  for (int k = 0; k < given; k++) {
    const char *u = o->urls[k];
    long port = 0;
    if (acl_top_url_port(u, &port, NULL, 0) < 0)
      return fail(err, errlen, "URL %s: no port to count local ranks from", u);
    if (port + o->local_ranks - 1 > 65535)
      return fail(err, errlen, "URL %s: ports %ld..%ld go past 65535", u, port,
                  port + o->local_ranks - 1);
    for (int r = 1; r < o->local_ranks; r++) {
      char *dst = o->urls[o->nurls];
      if (acl_top_url_with_port(u, port + r, dst, sizeof(o->urls[0])) < 0)
        return fail(err, errlen, "URL %s too long", u);
      for (int j = 0; j < o->nurls; j++)
        if (strcmp(o->urls[j], dst) == 0)
          return fail(err, errlen, "URL %s given twice (--local-ranks overlaps --url)", dst);
      o->nurls++;
    }
  }
  return 0;
}

int acl_top_parse_args(int argc, char *const *argv, acl_top_opts_t *o, char *err, size_t errlen)
{
  memset(o, 0, sizeof(*o));
  o->delay = 1.0;
  o->iterations = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int r;
    if (!a)
      break;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      o->help = true;
    } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
      o->version = true;
    } else if (strcmp(a, "-b") == 0 || strcmp(a, "--batch") == 0) {
      o->batch = true;
    } else if (strcmp(a, "--once") == 0) {
      o->once = true;
    } else if (strcmp(a, "--json") == 0) {
      o->json = true;
    } else if (strcmp(a, "--no-color") == 0 || strcmp(a, "--no-colour") == 0) {
      o->no_color = true;
    } else if ((r = take_value(argc, argv, &i, a, "--url", 'u', &v))) {
      if (r < 0)
        return fail(err, errlen, "%s needs a URL", a);
      if (o->nurls >= ACL_TOP_MAX_URLS)
        return fail(err, errlen, "too many URLs (at most %d)", ACL_TOP_MAX_URLS);
      char e[160];
      if (acl_top_normalize_url(v, o->urls[o->nurls], sizeof(o->urls[0]), e, sizeof(e)) < 0)
        return fail(err, errlen, "%s", e);
      for (int k = 0; k < o->nurls; k++)
        if (strcmp(o->urls[k], o->urls[o->nurls]) == 0)
          return fail(err, errlen, "URL %s given twice", o->urls[k]);
      o->nurls++;
    } else if ((r = take_value(argc, argv, &i, a, "--local-ranks", 'l', &v))) {
      char *end;
      errno = 0;
      long n = r < 0 ? 0 : strtol(v, &end, 10);
      if (r < 0 || end == v || *end || errno || n < 1 || n > ACL_TOP_MAX_URLS)
        return fail(err, errlen, "%s needs a count of local ranks from 1 to %d", a,
                    ACL_TOP_MAX_URLS);
      o->local_ranks = (int)n;
    } else if ((r = take_value(argc, argv, &i, a, "--delay", 'd', &v))) {
      if (r < 0)
        return fail(err, errlen, "%s needs a number of seconds", a);
      char *end;
      errno = 0;
      double d = strtod(v, &end);
      if (end == v || *end || errno || !isfinite(d) || d < 0.1 || d > 3600)
        return fail(err, errlen, "bad delay '%s': expected seconds between 0.1 and 3600", v);
      o->delay = d;
    } else if ((r = take_value(argc, argv, &i, a, "--iterations", 'n', &v))) {
      if (r < 0)
        return fail(err, errlen, "%s needs a count", a);
      char *end;
      errno = 0;
      long n = strtol(v, &end, 10);
      if (end == v || *end || errno || n < 1 || n > 100000000)
        return fail(err, errlen, "bad iteration count '%s': expected a positive integer", v);
      o->iterations = n;
    } else if (a[0] == '-') {
      return fail(err, errlen, "unknown option '%s'", a); /* main adds the --help hint */
    } else {
      return fail(err, errlen, "unexpected argument '%s' (URLs go after --url)", a);
    }
  }
  if (o->json && !o->once && !o->batch)
    return fail(err, errlen, "--json needs --once or --batch");
  if (o->nurls == 0) {
    snprintf(o->urls[0], sizeof(o->urls[0]), "%s", ACL_TOP_DEFAULT_URL);
    o->nurls = 1;
  }
  if (expand_local_ranks(o, err, errlen) < 0)
    return -1;
  o->nuser = o->nurls;
  return 0;
}
