/* libcurl client: state fetches and the SSE stream per source. Refresh rule
 * (docs/autoccl-top.md): with the stream up, an event triggers a re-fetch,
 * at most every delay/4 (>= 0.1 s), and without events every 5 delays; with
 * no stream, every delay; while disconnected, every min(delay, 2 s). */
#include "tui/net.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/text.h"

#define MAX_BODY (64u << 20)
#define CONNECT_TIMEOUT_MS 2000L
#define FETCH_TIMEOUT_MS 5000L
#define STREAM_SILENCE_S 15L /* heartbeats come every 5 s */
#define STREAM_REFUSED_RETRY_S 30.0

const char *acl_top_conn_label(const acl_top_src_t *s)
{
  switch (s->conn) {
  case ACL_TOP_CONN_UP:
    return s->stream_ok ? "connected (stream)" : "connected (polling)";
  case ACL_TOP_CONN_DOWN: /* never answered: nothing of it is shown */
    return s->has_model ? "disconnected \xe2\x80\x94 retrying" : "no answer \xe2\x80\x94 retrying";
  default:
    return "connecting";
  }
}

static size_t body_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
  acl_top_src_t *s = ud;
  size_t n = size * nmemb;
  if (s->body.len + n > MAX_BODY)
    return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
  acl_sb_append(&s->body, ptr, n);
  return acl_sb_ok(&s->body) ? n : 0;
}

static void on_event(void *ud, const acl_top_sse_event_t *ev)
{
  acl_top_src_t *s = ud;
  (void)ev; /* any event means the state moved; the fetch gets it all */
  s->events++;
  s->event_pending = true;
}

static size_t stream_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
  acl_top_src_t *s = ud;
  size_t n = size * nmemb;
  if (!s->stream_ok) {
    long code = 0;
    char *ct = NULL;
    curl_easy_getinfo(s->stream, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(s->stream, CURLINFO_CONTENT_TYPE, &ct);
    if (code != 200 || !ct || strncmp(ct, "text/event-stream", 17) != 0) {
      s->stream_refused = true;
      return 0;
    }
    s->stream_ok = true;
  }
  if (acl_top_sse_feed(&s->sse, ptr, n) < 0)
    return 0;
  return n;
}

/* Loopback never goes through a proxy; the user's no_proxy still applies. */
static void noproxy_of(char *out, size_t len)
{
  const char *np = getenv("no_proxy");
  if (!np || !np[0])
    np = getenv("NO_PROXY");
  snprintf(out, len, "localhost,127.0.0.1,::1%s%s", np && np[0] ? "," : "", np && np[0] ? np : "");
}

static void common_opts(acl_top_net_t *net, CURL *h, const char *url, char *errbuf)
{
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOPROXY, net->noproxy);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "autoccl-top/" ACL_TOP_VERSION);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
  errbuf[0] = '\0';
}

static CURL *make_fetch(acl_top_net_t *net, acl_top_src_t *s)
{
  CURL *h = curl_easy_init();
  if (!h)
    return NULL;
  common_opts(net, h, s->state_url, s->fetch_err);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, FETCH_TIMEOUT_MS);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_cb);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(h, CURLOPT_PRIVATE, s);
  acl_sb_reset(&s->body);
  return h;
}

#define HOST_DOC_MAX (1u << 20) /* a host list: 64 processes are ~4 KiB */
#define DISCOVER_TIMEOUT_MS 2000L

static size_t host_body_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
  acl_strbuf_t *b = ud;
  size_t n = size * nmemb;
  if (b->len + n > HOST_DOC_MAX)
    return 0;
  acl_sb_append(b, ptr, n);
  return acl_sb_ok(b) ? n : 0;
}

int acl_top_discover(acl_top_opts_t *o)
{
  int added = 0;
  acl_strbuf_t body;
  acl_sb_init(&body);
  for (int k = 0; k < o->nuser; k++) {
    CURL *h = curl_easy_init();
    if (!h)
      break;
    char url[ACL_TOP_URL_MAX + 32], errbuf[CURL_ERROR_SIZE], err[160];
    snprintf(url, sizeof(url), "%s/api/v1/host", o->urls[k]);
    acl_top_net_t tmp = {0};
    noproxy_of(tmp.noproxy, sizeof(tmp.noproxy));
    common_opts(&tmp, h, url, errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, DISCOVER_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, host_body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    acl_sb_reset(&body);
    long code = 0;
    /* An endpoint without a host list (older, or not the plugin's) is
     * watched alone; the start check reports an unreachable one. */
    if (curl_easy_perform(h) == CURLE_OK &&
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200 &&
        acl_sb_ok(&body) && body.data) {
      int n = acl_top_add_siblings(o, k, body.data, err, sizeof(err));
      if (n > 0)
        added += n;
    }
    curl_easy_cleanup(h);
  }
  acl_sb_free(&body);
  return added;
}

/* Every error message may quote a server or a URL: cleaned for the
 * terminal where it is made. */
__attribute__((format(printf, 2, 3))) static void set_error(acl_top_src_t *s, const char *fmt, ...)
{
  char raw[sizeof(s->error)];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof(raw), fmt, ap);
  va_end(ap);
  acl_text_clean(s->error, sizeof(s->error), raw);
}

/* Turns a finished fetch into a model update or an error message. */
static void finish_fetch(acl_top_src_t *s, CURL *h, CURLcode rc)
{
  long code = 0, oserr = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
  if (rc != CURLE_OK) {
    if (rc == CURLE_WRITE_ERROR && s->body.len + 1 > MAX_BODY / 2)
      set_error(s, "state document larger than %u MiB", MAX_BODY >> 20);
    else if (oserr &&
             (rc == CURLE_COULDNT_CONNECT || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR))
      set_error(s, "%s", strerror((int)oserr));
    else
      set_error(s, "%s", s->fetch_err[0] ? s->fetch_err : curl_easy_strerror(rc));
    s->conn = ACL_TOP_CONN_DOWN;
    return;
  }
  if (code != 200) {
    set_error(s, "HTTP %ld from %.200s", code, s->state_url);
    s->conn = ACL_TOP_CONN_DOWN;
    return;
  }
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[200];
  if (acl_top_parse_state(s->body.data ? s->body.data : "", s->body.len, &m, err, sizeof(err)) <
      0) {
    set_error(s, "bad state document: %s", err);
    s->conn = ACL_TOP_CONN_DOWN;
    return;
  }
  acl_top_model_clear(&s->model);
  s->model = m; /* ownership moves */
  s->has_model = true;
  s->conn = ACL_TOP_CONN_UP;
  s->error[0] = '\0';
  s->updates++;
}

acl_top_net_t *acl_top_net_create(const acl_top_opts_t *o)
{
  acl_top_net_t *n = calloc(1, sizeof(*n));
  if (!n)
    return NULL;
  n->delay = o->delay;
  n->n = o->nurls;
  if (!(n->src = calloc((size_t)o->nurls, sizeof(*n->src))))
    goto fail;
  if (!(n->multi = curl_multi_init()))
    goto fail;
  noproxy_of(n->noproxy, sizeof(n->noproxy));
  for (int i = 0; i < n->n; i++) {
    acl_top_src_t *s = &n->src[i];
    snprintf(s->url, sizeof(s->url), "%s", o->urls[i]);
    snprintf(s->state_url, sizeof(s->state_url), "%s/api/v1/state", s->url);
    snprintf(s->events_url, sizeof(s->events_url), "%s/api/v1/events", s->url);
    acl_top_model_init(&s->model);
    acl_sb_init(&s->body);
    acl_top_sse_init(&s->sse, on_event, s);
    s->fetch_now = true;
  }
  return n;
fail:
  acl_top_net_destroy(n);
  return NULL;
}

static void stop_handle(acl_top_net_t *n, CURL **h)
{
  if (!*h)
    return;
  curl_multi_remove_handle(n->multi, *h);
  curl_easy_cleanup(*h);
  *h = NULL;
}

void acl_top_net_destroy(acl_top_net_t *n)
{
  if (!n)
    return;
  for (int i = 0; n->src && i < n->n; i++) {
    acl_top_src_t *s = &n->src[i];
    stop_handle(n, &s->fetch);
    stop_handle(n, &s->stream);
    acl_top_model_clear(&s->model);
    acl_sb_free(&s->body);
    acl_top_sse_free(&s->sse);
  }
  if (n->multi)
    curl_multi_cleanup(n->multi);
  free(n->src);
  free(n);
}

int acl_top_net_fetch_all(acl_top_net_t *n)
{
  int failed = 0;
  for (int i = 0; i < n->n; i++) {
    acl_top_src_t *s = &n->src[i];
    CURL *h = make_fetch(n, s);
    if (!h) {
      set_error(s, "out of memory");
      s->conn = ACL_TOP_CONN_DOWN;
      failed++;
      continue;
    }
    finish_fetch(s, h, curl_easy_perform(h));
    curl_easy_cleanup(h);
    failed += s->conn != ACL_TOP_CONN_UP;
  }
  return failed;
}

static void start_stream(acl_top_net_t *n, acl_top_src_t *s)
{
  CURL *h = curl_easy_init();
  if (!h)
    return;
  common_opts(n, h, s->events_url, s->stream_err);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, stream_cb);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(h, CURLOPT_PRIVATE, s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, STREAM_SILENCE_S);
  s->stream_ok = false;
  s->stream_refused = false;
  acl_top_sse_reset(&s->sse);
  s->stream = h;
  if (curl_multi_add_handle(n->multi, h) != CURLM_OK) {
    curl_easy_cleanup(h);
    s->stream = NULL;
  }
}

static void schedule(acl_top_net_t *n, acl_top_src_t *s, double now)
{
  if (!s->fetch) {
    double since = now - s->fetch_started, every;
    if (s->conn == ACL_TOP_CONN_DOWN)
      every = n->delay < 2.0 ? n->delay : 2.0;
    else if (s->stream_ok)
      every = s->event_pending ? (n->delay / 4 > 0.1 ? n->delay / 4 : 0.1) : 5 * n->delay;
    else
      every = n->delay;
    if (s->fetch_now || since >= every) {
      s->fetch = make_fetch(n, s);
      if (s->fetch && curl_multi_add_handle(n->multi, s->fetch) != CURLM_OK) {
        curl_easy_cleanup(s->fetch);
        s->fetch = NULL;
      }
      if (s->fetch) {
        s->fetch_started = now;
        s->fetch_now = false;
        s->event_pending = false;
      }
    }
  }
  if (!s->stream && s->conn == ACL_TOP_CONN_UP && now >= s->stream_retry_at)
    start_stream(n, s);
}

bool acl_top_net_step(acl_top_net_t *n, int timeout_ms, int fd)
{
  double now = acl_mono_s();
  bool changed = false;
  for (int i = 0; i < n->n; i++)
    schedule(n, &n->src[i], now);

  struct curl_waitfd extra = {.fd = fd, .events = CURL_WAIT_POLLIN};
  int running = 0;
  curl_multi_perform(n->multi, &running);
  curl_multi_poll(n->multi, fd >= 0 ? &extra : NULL, fd >= 0 ? 1 : 0, timeout_ms, NULL);
  curl_multi_perform(n->multi, &running);

  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(n->multi, &left))) {
    if (msg->msg != CURLMSG_DONE)
      continue;
    CURL *h = msg->easy_handle;
    CURLcode rc = msg->data.result;
    acl_top_src_t *s = NULL;
    curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&s);
    if (!s)
      continue;
    now = acl_mono_s();
    if (h == s->fetch) {
      acl_top_conn_t before = s->conn;
      finish_fetch(s, h, rc);
      stop_handle(n, &s->fetch);
      changed = changed || s->conn == ACL_TOP_CONN_UP || before != s->conn;
    } else if (h == s->stream) {
      bool was_ok = s->stream_ok;
      long code = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
      if (!was_ok && code != 0) /* an HTTP answer, but not a stream (even empty) */
        s->stream_refused = true;
      stop_handle(n, &s->stream);
      s->stream_ok = false;
      double wait = s->sse.retry_ms > 0 ? s->sse.retry_ms / 1000.0 : n->delay;
      s->stream_retry_at = now + (s->stream_refused ? STREAM_REFUSED_RETRY_S : wait);
      if (was_ok) /* the stream ending may mean the server went away: check */
        s->fetch_now = true;
      changed = changed || was_ok;
    }
  }
  return changed;
}
