/* One view per host: a page served by one local rank reads its siblings'
 * state on the same host. The siblings answer such cross-origin reads
 * (CORS) only for an Origin that names the request's own host at the port
 * of a process of this host (acl_web_source_t.is_peer_port), never "*";
 * the Host guard in routes.c still runs first. The page's CSP lets it
 * connect to its own host name only. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "web/web_int.h"

/* The host part of a Host header or of an Origin's authority ("name",
 * "1.2.3.4" or "[v6]"), without the port; false when malformed or when it
 * holds a character a CSP source or a header could not carry. */
static bool split_host(const char *hp, size_t n, char *name, size_t nlen, int *port)
{
  size_t hl;
  if (n == 0)
    return false;
  if (hp[0] == '[') {
    const char *rb = memchr(hp, ']', n);
    if (!rb)
      return false;
    hl = (size_t)(rb - hp) + 1;
    for (size_t i = 1; i + 1 < hl; i++)
      if (!isxdigit((unsigned char)hp[i]) && hp[i] != ':' && hp[i] != '.')
        return false;
  } else {
    hl = 0;
    while (hl < n && hp[hl] != ':') {
      if (!isalnum((unsigned char)hp[hl]) && hp[hl] != '.' && hp[hl] != '-')
        return false;
      hl++;
    }
  }
  if (hl == 0 || hl >= nlen)
    return false;
  memcpy(name, hp, hl);
  name[hl] = '\0';
  *port = 0;
  if (hl == n)
    return true;
  if (hp[hl] != ':' || hl + 1 == n || n - hl - 1 > 5)
    return false;
  long p = 0;
  for (size_t i = hl + 1; i < n; i++) {
    if (!isdigit((unsigned char)hp[i]))
      return false;
    p = p * 10 + (hp[i] - '0');
  }
  if (p < 1 || p > 65535)
    return false;
  *port = (int)p;
  return true;
}

const char *acl_web_cors_origin(acl_web_t *w, struct MHD_Connection *conn)
{
  const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
  const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  if (!origin || !host || !w->src.is_peer_port || strncmp(origin, "http://", 7) != 0)
    return NULL;
  char oname[ACL_WEB_ORIGIN_MAX], hname[ACL_WEB_ORIGIN_MAX];
  int oport = 0, hport = 0;
  const char *auth = origin + 7;
  if (strlen(origin) >= ACL_WEB_ORIGIN_MAX ||
      !split_host(auth, strlen(auth), oname, sizeof(oname), &oport) ||
      !split_host(host, strlen(host), hname, sizeof(hname), &hport))
    return NULL;
  /* Same host name as the request (the Host guard vetted it), another
   * port: a process of this host, or nothing. */
  if (oport == 0 || strcasecmp(oname, hname) != 0 || !w->src.is_peer_port(w->src.user, oport))
    return NULL;
  return origin;
}

struct MHD_Response *acl_web_page_response(acl_web_t *w, struct MHD_Connection *conn,
                                           const acl_web_asset_t *a)
{
  (void)w;
  struct MHD_Response *r =
      MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
  if (!r)
    return NULL;
  const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  char name[ACL_WEB_ORIGIN_MAX], csp[ACL_WEB_CSP_MAX];
  int port = 0;
  /* The sibling endpoints are this host name at other ports. */
  if (host && split_host(host, strlen(host), name, sizeof(name), &port))
    snprintf(csp, sizeof(csp), ACL_WEB_CSP_FMT, " http://", name, ":*");
  else
    snprintf(csp, sizeof(csp), ACL_WEB_CSP_FMT, "", "", "");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Content-Security-Policy", csp);
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  return r;
}
