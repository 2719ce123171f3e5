/* Request routing. Read-only: GET and HEAD on known paths, 405 (with
 * Allow) for other methods there, 404 elsewhere. Query strings are ignored
 * (MHD strips them from url). Static bodies are built once and shared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/log.h"
#include "web/assets.h"
#include "web/web_int.h"

static struct MHD_Response *static_text(const char *body, const char *ctype)
{
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
  if (!r)
    return NULL;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  return r;
}

int acl_web_routes_init(acl_web_t *w)
{
  const char *txt = "text/plain; charset=utf-8";
  w->r_404 = static_text("not found\n", txt);
  w->r_405 = static_text("method not allowed (read-only endpoint: GET, HEAD)\n", txt);
  w->r_421 = static_text("misdirected request: this endpoint is bound to loopback and answers "
                         "only Host names that are loopback (localhost, 127.0.0.1, [::1])\n",
                         txt);
  w->r_503_sse =
      static_text("too many event streams (" ACL_WEB_STR(ACL_WEB_MAX_SSE) " in all, " ACL_WEB_STR(
                      ACL_WEB_MAX_SSE_PER_IP) " per client address)\n",
                  txt);
  w->r_400_host = static_text("bad request: exactly one Host header is required (HTTP/1.1)\n", txt);
  w->r_healthz = static_text("ok\n", txt);
  snprintf(w->csp, sizeof(w->csp), ACL_WEB_CSP_FMT, "", "", "");
  w->r_head_sse = static_text("", "text/event-stream; charset=utf-8");
  /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of response pointers */
  w->r_assets = calloc(acl_web_nassets ? acl_web_nassets : 1, sizeof(*w->r_assets));
  if (!w->r_404 || !w->r_405 || !w->r_421 || !w->r_400_host || !w->r_503_sse || !w->r_healthz ||
      !w->r_head_sse || !w->r_assets)
    return -1;
  MHD_add_response_header(w->r_405, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  MHD_add_response_header(w->r_healthz, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  for (size_t i = 0; i < acl_web_nassets; i++) {
    const acl_web_asset_t *a = &acl_web_assets[i];
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
      return -1;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy", w->csp);
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    w->r_assets[i] = r;
  }
  return 0;
}

void acl_web_routes_free(acl_web_t *w)
{
  struct MHD_Response **rs[] = {&w->r_404,     &w->r_405,     &w->r_421,     &w->r_400_host,
                                &w->r_503_sse, &w->r_healthz, &w->r_head_sse};
  for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
    if (*rs[i])
      MHD_destroy_response(*rs[i]);
    *rs[i] = NULL;
  }
  acl_web_cached_t *cs[] = {&w->c_metrics, &w->c_state,      &w->c_table,
                            &w->c_host,    &w->c_state_cors, &w->c_host_cors};
  for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
    if (cs[i]->resp)
      MHD_destroy_response(cs[i]->resp);
    cs[i]->resp = NULL;
  }
  if (w->r_assets) {
    for (size_t i = 0; i < acl_web_nassets; i++)
      if (w->r_assets[i])
        MHD_destroy_response(w->r_assets[i]);
    free(w->r_assets);
    w->r_assets = NULL;
  }
}

typedef void (*render_fn)(void *user, acl_strbuf_t *out);

/* origin: a sibling's page reading this endpoint (web/cors.c), or NULL.
 * Its answer carries Access-Control-Allow-Origin, so it is cached apart,
 * for one Origin at a time. */
static enum MHD_Result dynamic(acl_web_t *w, struct MHD_Connection *conn, render_fn fn,
                               const char *ctype, acl_web_cached_t *cache, const char *origin)
{
  double now = acl_mono_s();
  if (cache->resp && now - cache->at < ACL_WEB_CACHE_S && now >= cache->at &&
      strcmp(cache->origin, origin ? origin : "") == 0)
    return MHD_queue_response(conn, MHD_HTTP_OK, cache->resp);
  if (!fn) {
    struct MHD_Response *r = MHD_create_response_from_buffer(
        sizeof("no data source\n") - 1, (void *)"no data source\n", MHD_RESPMEM_PERSISTENT);
    if (!r)
      return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_SERVICE_UNAVAILABLE, r);
    MHD_destroy_response(r);
    return ret;
  }
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  fn(w->src.user, &sb);
  size_t len = 0;
  char *body = acl_sb_steal(&sb, &len);
  unsigned status = MHD_HTTP_OK;
  struct MHD_Response *r;
  if (body) {
    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r)
      free(body);
  } else {
    acl_warn("web: out of memory rendering a response");
    status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    r = MHD_create_response_from_buffer(sizeof("out of memory\n") - 1, (void *)"out of memory\n",
                                        MHD_RESPMEM_PERSISTENT);
    ctype = "text/plain; charset=utf-8";
  }
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  if (origin) {
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(r, "Vary", "Origin");
  }
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  if (status == MHD_HTTP_OK) { /* keep our reference for the next requests */
    if (cache->resp)
      MHD_destroy_response(cache->resp);
    cache->resp = r;
    cache->at = now;
    snprintf(cache->origin, sizeof(cache->origin), "%s", origin ? origin : "");
  } else {
    MHD_destroy_response(r);
  }
  return ret;
}

typedef enum { R_NONE, R_METRICS, R_STATE, R_TABLE, R_HOST, R_EVENTS, R_HEALTHZ, R_ASSET } route_t;

static route_t match(const char *url, size_t *asset)
{
  if (!url)
    return R_NONE;
  if (strcmp(url, "/metrics") == 0)
    return R_METRICS;
  if (strcmp(url, "/api/v1/state") == 0)
    return R_STATE;
  if (strcmp(url, "/api/v1/events") == 0)
    return R_EVENTS;
  if (strcmp(url, "/api/v1/table") == 0)
    return R_TABLE;
  if (strcmp(url, "/api/v1/host") == 0)
    return R_HOST;
  if (strcmp(url, "/healthz") == 0)
    return R_HEALTHZ;
  const char *want = strcmp(url, "/") == 0 ? "/index.html" : url;
  for (size_t i = 0; i < acl_web_nassets; i++)
    if (strcmp(want, acl_web_assets[i].path) == 0) {
      *asset = i;
      return R_ASSET;
    }
  return R_NONE;
}

static enum MHD_Result count_host(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
  (void)kind;
  (void)value;
  if (key && strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
    (*(int *)cls)++;
  return MHD_YES;
}

enum MHD_Result acl_web_route(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **req_cls)
{
  (void)upload_data;
  (void)req_cls;
  acl_web_t *w = cls;
  acl_web_guard_request(w, conn);
  /* RFC 9112 3.2: exactly one Host in HTTP/1.1, at most one before. Two
   * would let the check below read one name while a proxy used another. */
  int nhost = 0;
  MHD_get_connection_values(conn, MHD_HEADER_KIND, count_host, &nhost);
  if (nhost > 1 || (nhost == 0 && version && strcmp(version, MHD_HTTP_VERSION_1_0) != 0))
    return MHD_queue_response(conn, MHD_HTTP_BAD_REQUEST, w->r_400_host);
  /* Bound to loopback, only a browser tricked by DNS rebinding sends
   * another name: it must not read the job's state. */
  if (w->loopback &&
      !acl_web_host_ok(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
    return MHD_queue_response(conn, 421, w->r_421);
  size_t asset = 0;
  route_t rt = match(url, &asset);
  if (rt == R_NONE)
    return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, w->r_404);
  bool head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
  if (!head && strcmp(method, MHD_HTTP_METHOD_GET) != 0)
    return MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, w->r_405);
  if (*upload_size) /* a GET with a body: not ours to read */
    *upload_size = 0;
  const char *origin;
  switch (rt) {
  case R_METRICS:
    return dynamic(w, conn, w->src.render_metrics, "text/plain; version=0.0.4; charset=utf-8",
                   &w->c_metrics, NULL);
  case R_STATE:
    origin = acl_web_cors_origin(w, conn);
    return dynamic(w, conn, w->src.render_state, "application/json",
                   origin ? &w->c_state_cors : &w->c_state, origin);
  case R_TABLE:
    if (!w->src.render_table)
      return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, w->r_404);
    return dynamic(w, conn, w->src.render_table, "application/json", &w->c_table, NULL);
  case R_HOST:
    if (!w->src.render_host)
      return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, w->r_404);
    origin = acl_web_cors_origin(w, conn);
    return dynamic(w, conn, w->src.render_host, "application/json",
                   origin ? &w->c_host_cors : &w->c_host, origin);
  case R_EVENTS:
    if (head)
      return MHD_queue_response(conn, MHD_HTTP_OK, w->r_head_sse);
    return acl_web_sse_open(w, conn);
  case R_HEALTHZ:
    return MHD_queue_response(conn, MHD_HTTP_OK, w->r_healthz);
  case R_ASSET:
    if (strcmp(acl_web_assets[asset].path, "/index.html") == 0) {
      struct MHD_Response *page = acl_web_page_response(w, conn, &acl_web_assets[asset]);
      if (!page)
        return MHD_NO;
      enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, page);
      MHD_destroy_response(page);
      return ret;
    }
    return MHD_queue_response(conn, MHD_HTTP_OK, w->r_assets[asset]);
  default:
    return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, w->r_404);
  }
}
