/* The HTTP endpoint in-process, over real loopback sockets: routes, status
 * codes, HEAD, 404/405, start errors, SSE delivery, non-blocking publish
 * with a client that never reads, and prompt stop with streams open. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/strbuf.h"
#include "web/server.h"

static void r_metrics(void *u, acl_strbuf_t *out)
{
  (void)u;
  acl_sb_puts(out, "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n");
}
static void r_state(void *u, acl_strbuf_t *out)
{
  (void)u;
  acl_sb_puts(out, "{\"version\": 1}\n");
}
static void r_fail(void *u, acl_strbuf_t *out)
{
  (void)u;
  out->failed = true;
}
static void r_table(void *u, acl_strbuf_t *out)
{
  (void)u;
  acl_sb_puts(out, "{\"version\":1,\"entries\":[]}");
}
static const acl_web_source_t k_src = {NULL, r_metrics, r_state, r_table, NULL, NULL};

static const char *g_src; /* source address of the next dials; NULL: any */

static int dial(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert_geq(fd, 0);
  if (g_src) {
    struct sockaddr_in s = {.sin_family = AF_INET};
    inet_pton(AF_INET, g_src, &s.sin_addr);
    cr_assert_eq(bind(fd, (struct sockaddr *)&s, sizeof(s)), 0, "bind %s: %s", g_src,
                 strerror(errno));
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s", strerror(errno));
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

static void send_all(int fd, const char *s)
{
  size_t n = strlen(s);
  while (n) {
    ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
    cr_assert_gt(k, 0);
    s += k;
    n -= (size_t)k;
  }
}

/* One request with Connection: close; the whole response in buf. */
/* Sends req on a new connection, reads the whole answer into buf. */
static size_t exchange(int port, const char *req, char *buf, size_t len)
{
  int fd = dial(port);
  send_all(fd, req);
  size_t n = 0;
  ssize_t k;
  while (n + 1 < len && (k = recv(fd, buf + n, len - 1 - n, 0)) > 0)
    n += (size_t)k;
  buf[n] = '\0';
  close(fd);
  return n;
}

static size_t http(int port, const char *method, const char *path, char *buf, size_t len)
{
  char req[512];
  snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
           method, path);
  return exchange(port, req, buf, len);
}

/* Reads until needle shows up (or timeout); returns whether it did. */
static bool read_until(int fd, char *buf, size_t len, size_t *n, const char *needle, double timeout)
{
  double end = acl_mono_s() + timeout;
  while (!strstr(buf, needle)) {
    struct pollfd p = {fd, POLLIN, 0};
    int ms = (int)((end - acl_mono_s()) * 1000);
    if (ms <= 0 || poll(&p, 1, ms) <= 0)
      return false;
    ssize_t k = recv(fd, buf + *n, len - 1 - *n, 0);
    if (k <= 0)
      return false;
    *n += (size_t)k;
    buf[*n] = '\0';
  }
  return true;
}

static acl_web_t *start(const acl_web_source_t *src)
{
  char err[256] = "";
  acl_web_t *w = acl_web_start("127.0.0.1", 0, src, err, sizeof(err));
  cr_assert_not_null(w, "start failed: %s", err);
  cr_assert_gt(acl_web_port(w), 0);
  return w;
}

Test(server, routes_and_status_codes)
{
  acl_web_t *w = start(&k_src);
  int port = acl_web_port(w);
  static char b[65536];
  http(port, "GET", "/healthz", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 200", 12) == 0, "%s", b);
  cr_assert(strstr(b, "\r\n\r\nok\n"));
  http(port, "GET", "/metrics?debug=1", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 200", 12) == 0, "%s", b);
  cr_assert(strstr(b, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), "%s", b);
  cr_assert(strstr(b, "\r\n\r\n# HELP x_total X."));
  http(port, "GET", "/api/v1/table", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 200", 12) == 0, "%s", b);
  cr_assert(strstr(b, "Content-Type: application/json\r\n"), "%s", b);
  cr_assert(strstr(b, "\r\n\r\n{\"version\":1,\"entries\":[]}"), "%s", b);
  http(port, "GET", "/api/v1/state", b, sizeof(b));
  cr_assert(strstr(b, "Content-Type: application/json\r\n"));
  cr_assert(strstr(b, "{\"version\": 1}"));
  http(port, "HEAD", "/metrics", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 200", 12) == 0);
  cr_assert(strstr(b, "Content-Length: 51\r\n"), "%s", b);
  cr_assert_null(strstr(b, "x_total"), "HEAD has no body");
  http(port, "GET", "/", b, sizeof(b));
  cr_assert(strstr(b, "Content-Type: text/html; charset=utf-8\r\n"));
  cr_assert(strstr(b, "<canvas id=\"trajectory\""));
  http(port, "GET", "/app.js", b, sizeof(b));
  cr_assert(strstr(b, "EventSource"));
  http(port, "GET", "/nope", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 404", 12) == 0, "%s", b);
  http(port, "GET", "/metrics/", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 404", 12) == 0, "%s", b);
  const char *methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
  for (int i = 0; i < 5; i++) {
    http(port, methods[i], "/metrics", b, sizeof(b));
    cr_assert(strncmp(b, "HTTP/1.1 405", 12) == 0, "%s: %s", methods[i], b);
    cr_assert(strstr(b, "Allow: GET, HEAD\r\n"), "%s", b);
  }
  http(port, "HEAD", "/api/v1/events", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 200", 12) == 0);
  cr_assert(strstr(b, "text/event-stream"));
  acl_web_stop(w);
}

Test(server, render_failure_and_missing_source)
{
  acl_web_source_t src = {NULL, r_fail, NULL, NULL, NULL, NULL};
  acl_web_t *w = start(&src);
  static char b[4096];
  http(acl_web_port(w), "GET", "/metrics", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 500", 12) == 0, "%s", b);
  http(acl_web_port(w), "GET", "/api/v1/state", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 503", 12) == 0, "%s", b);
  http(acl_web_port(w), "GET", "/api/v1/table", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 404", 12) == 0, "no table source: %s", b);
  http(acl_web_port(w), "GET", "/healthz", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 200", 12) == 0, "still serving");
  acl_web_stop(w);
}

Test(server, start_errors_are_reported)
{
  char err[256];
  cr_assert_null(acl_web_start("300.1.2.3", 0, &k_src, err, sizeof(err)));
  cr_assert(strstr(err, "invalid bind address"), "%s", err);
  cr_assert_null(acl_web_start("localhost", 0, &k_src, err, sizeof(err)));
  cr_assert_null(acl_web_start("127.0.0.1", 70000, &k_src, err, sizeof(err)));
  cr_assert(strstr(err, "invalid port"), "%s", err);
  cr_assert_null(acl_web_start("127.0.0.1", 0, NULL, err, sizeof(err)));
  acl_web_t *w = start(&k_src);
  cr_assert_null(acl_web_start("127.0.0.1", acl_web_port(w), &k_src, err, sizeof(err)));
  cr_assert(strstr(err, "in use"), "%s", err);
  acl_web_t *v6 = acl_web_start("::1", 0, &k_src, err, sizeof(err));
  if (v6) /* hosts without IPv6 loopback just report it */
    acl_web_stop(v6);
  acl_web_stop(w);
  acl_web_stop(NULL);
  acl_web_publish(NULL, "sample", "{}");
  cr_assert_eq(acl_web_port(NULL), -1);
}

static int sse_open(int port, char *buf, size_t len, size_t *n)
{
  int fd = dial(port);
  send_all(fd, "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  *n = 0;
  buf[0] = '\0';
  cr_assert(read_until(fd, buf, len, n, ": connected", 3.0), "%s", buf);
  cr_assert(strstr(buf, "Content-Type: text/event-stream"), "%s", buf);
  return fd;
}

Test(server, sse_delivers_events)
{
  acl_web_t *w = start(&k_src);
  static char b[65536];
  size_t n;
  int fd = sse_open(acl_web_port(w), b, sizeof(b), &n);
  acl_web_publish(w, "sample", "{\"step\": 1}");
  cr_assert(read_until(fd, b, sizeof(b), &n, "event: sample\r\ndata: {\"step\": 1}\r\n", 0.5) ||
                read_until(fd, b, sizeof(b), &n, "event: sample\ndata: {\"step\": 1}\n\n", 3.0),
            "%s", b);
  acl_web_publish(w, "bad name\n", "{}"); /* rejected */
  acl_web_publish(w, "decision", "{\"a\":\n1}");
  cr_assert(read_until(fd, b, sizeof(b), &n, "event: decision\ndata: {\"a\":\ndata: 1}\n\n", 3.0),
            "%s", b);
  cr_assert_null(strstr(b, "bad name"));
  /* Other routes keep working while the stream is open. */
  static char h[4096];
  http(acl_web_port(w), "GET", "/healthz", h, sizeof(h));
  cr_assert(strncmp(h, "HTTP/1.1 200", 12) == 0);
  double t0 = acl_mono_s();
  acl_web_stop(w);
  cr_assert_lt(acl_mono_s() - t0, 2.5, "stop took %.2f s with a stream open", acl_mono_s() - t0);
  /* The stream ends: chunked terminator or EOF. */
  char tail[256];
  ssize_t k;
  while ((k = recv(fd, tail, sizeof(tail), 0)) > 0)
    ;
  cr_assert_eq(k, 0, "stream not closed: %s", strerror(errno));
  close(fd);
}

Test(server, heartbeat_arrives, .timeout = 20)
{
  acl_web_t *w = start(&k_src);
  static char b[4096];
  size_t n;
  int fd = sse_open(acl_web_port(w), b, sizeof(b), &n);
  double t0 = acl_mono_s();
  cr_assert(read_until(fd, b, sizeof(b), &n, ": heartbeat\n", 8.0), "%s", b);
  cr_assert_geq(acl_mono_s() - t0, 4.0, "heartbeat came too early");
  close(fd);
  acl_web_stop(w);
}

Test(server, publish_never_blocks_on_a_stalled_client, .timeout = 30)
{
  acl_web_t *w = start(&k_src);
  static char b[4096];
  size_t n;
  int stalled = sse_open(acl_web_port(w), b, sizeof(b), &n);
  int rcv = 4096;
  setsockopt(stalled, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
  char *big = malloc(60000);
  memset(big, 'x', 59998);
  big[0] = '"';
  big[59998] = '"';
  big[59999] = '\0';
  /* A publish that waited for the client would block for good (or for a send
   * timeout per call): bound each call far below any such timeout and the
   * whole loop loosely, so that a loaded or sanitized run still passes. */
  double t0 = acl_mono_s(), worst = 0;
  for (int i = 0; i < 2000; i++) { /* ~120 MB offered to a client that never reads */
    double c0 = acl_mono_s();
    acl_web_publish(w, "sample", big);
    double dc = acl_mono_s() - c0;
    worst = dc > worst ? dc : worst;
  }
  double dt = acl_mono_s() - t0;
  cr_assert_lt(worst, 0.25, "one publish took %.3f s", worst);
  cr_assert_lt(dt, 10.0, "publishing took %.2f s", dt);
  static char h[4096];
  http(acl_web_port(w), "GET", "/healthz", h, sizeof(h));
  cr_assert(strncmp(h, "HTTP/1.1 200", 12) == 0);
  big[100] = '\0';
  acl_web_publish(w, "sample", big); /* too long JSON is dropped */
  t0 = acl_mono_s();
  acl_web_stop(w);
  cr_assert_lt(acl_mono_s() - t0, 3.0, "stop took %.2f s with a stalled stream", acl_mono_s() - t0);
  close(stalled);
  free(big);
}

Test(server, vanished_clients_are_dropped_and_stream_cap_holds, .timeout = 30)
{
  acl_web_t *w = start(&k_src);
  int port = acl_web_port(w);
  static char b[4096];
  size_t n;
  int fds[16];
  /* 4 streams per client address, 16 in all */
  static const char *const srcs[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
  for (int i = 0; i < 16; i++) {
    g_src = srcs[i / 4];
    fds[i] = sse_open(port, b, sizeof(b), &n);
  }
  g_src = "127.0.0.5";
  http(port, "GET", "/api/v1/events", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 503", 12) == 0, "17th stream: %s", b);
  g_src = NULL;
  for (int i = 0; i < 16; i++)
    close(fds[i]); /* vanish without a word */
  /* Publishing/heartbeats find them gone; a new stream is accepted again. */
  bool ok = false;
  for (int t = 0; t < 80 && !ok; t++) {
    acl_web_publish(w, "sample", "{}");
    usleep(100 * 1000);
    int fd = dial(port);
    send_all(fd, "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    n = 0;
    b[0] = '\0';
    ok = read_until(fd, b, sizeof(b), &n, ": connected", 2.0);
    close(fd);
  }
  cr_assert(ok, "dead streams were never dropped: %s", b);
  acl_web_stop(w);
}

Test(server, one_address_holds_a_share_of_the_streams, .timeout = 30)
{
  acl_web_t *w = start(&k_src);
  int port = acl_web_port(w);
  static char b[4096];
  size_t n;
  int fds[4];
  g_src = "127.0.0.1";
  for (int i = 0; i < 4; i++)
    fds[i] = sse_open(port, b, sizeof(b), &n);
  http(port, "GET", "/api/v1/events", b, sizeof(b));
  cr_assert(strncmp(b, "HTTP/1.1 503", 12) == 0, "5th stream of one address: %s", b);
  g_src = "127.0.0.2";
  int other = sse_open(port, b, sizeof(b), &n);
  g_src = NULL;
  close(other);
  for (int i = 0; i < 4; i++)
    close(fds[i]);
  acl_web_stop(w);
}

Test(server, loopback_bind_answers_loopback_host_names_only)
{
  acl_web_t *w = start(&k_src);
  int port = acl_web_port(w);
  static const struct {
    const char *host;
    int code;
  } cases[] = {{"evil.example", 421},     {"evil.example:80", 421}, {"127.0.0.1.nip.io", 421},
               {"192.168.1.1", 421},      {"[::2]", 421},           {"localhost", 200},
               {"localhost.:1", 200},     {"127.0.0.1:9", 200},     {"[::1]:9464", 200},
               {"grafana.localhost", 200}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char req[256], b[4096];
    int fd = dial(port);
    snprintf(req, sizeof(req),
             "GET /api/v1/state HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", cases[i].host);
    send_all(fd, req);
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof(b) && (k = recv(fd, b + n, sizeof(b) - 1 - n, 0)) > 0)
      n += (size_t)k;
    b[n] = '\0';
    close(fd);
    char want[16];
    snprintf(want, sizeof(want), "HTTP/1.1 %d", cases[i].code);
    cr_expect(strncmp(b, want, 12) == 0, "Host: %s: %.40s", cases[i].host, b);
  }
  acl_web_stop(w);
}

static int g_renders;
static void r_count(void *u, acl_strbuf_t *out)
{
  (void)u;
  acl_sb_printf(out, "n %d\n", ++g_renders);
}

Test(server, renders_are_reused_briefly_then_refreshed)
{
  acl_web_source_t src = {NULL, r_count, r_count, NULL, NULL, NULL};
  acl_web_t *w = start(&src);
  static char b[4096];
  g_renders = 0;
  for (int i = 0; i < 20; i++)
    http(acl_web_port(w), "GET", "/metrics", b, sizeof(b));
  cr_assert_leq(g_renders, 3, "%d renders for 20 back-to-back scrapes", g_renders);
  cr_assert(strstr(b, "\r\n\r\nn "));
  int before = g_renders;
  usleep(150 * 1000); /* > ACL_WEB_CACHE_S */
  http(acl_web_port(w), "GET", "/metrics", b, sizeof(b));
  cr_assert_eq(g_renders, before + 1, "stale render served after the cache window");
  char want[32];
  snprintf(want, sizeof(want), "\r\n\r\nn %d\n", g_renders);
  cr_assert(strstr(b, want), "%s", b);
  acl_web_stop(w);
}

/* The host view's cross-origin rule (web/cors.c): a page of this host's
 * other process (its port, by the request's own Host name) may read the
 * state and the host list; nothing else may, and a cached answer never
 * carries one client's Origin to another. */
static bool peer_7001(void *u, int port)
{
  (void)u;
  return port == 7001;
}
static void r_host(void *u, acl_strbuf_t *out)
{
  (void)u;
  acl_sb_puts(out, "{\"version\":1,\"processes\":[]}");
}

static void get_origin(int port, const char *path, const char *host, const char *origin, char *b,
                       size_t len)
{
  char req[512];
  snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\n%s%s%sConnection: close\r\n\r\n", path,
           host, origin ? "Origin: " : "", origin ? origin : "", origin ? "\r\n" : "");
  exchange(port, req, b, len);
}

Test(server, cors_only_for_a_sibling_page)
{
  acl_web_source_t src = {NULL, r_metrics, r_state, r_table, r_host, peer_7001};
  acl_web_t *w = start(&src);
  int port = acl_web_port(w);
  static char b[65536];
  static const struct {
    const char *path, *host, *origin;
    bool allowed;
  } cases[] = {
      {"/api/v1/state", "127.0.0.1:1", "http://127.0.0.1:7001", true},
      {"/api/v1/host", "localhost:1", "http://localhost:7001", true},
      {"/api/v1/state", "127.0.0.1:1", NULL, false},                     /* same origin */
      {"/api/v1/state", "127.0.0.1:1", "http://127.0.0.1:7002", false},  /* no such sibling */
      {"/api/v1/state", "127.0.0.1:1", "http://localhost:7001", false},  /* another name */
      {"/api/v1/state", "127.0.0.1:1", "http://127.0.0.1", false},       /* no port */
      {"/api/v1/state", "127.0.0.1:1", "https://127.0.0.1:7001", false}, /* another scheme */
      {"/api/v1/state", "127.0.0.1:1", "null", false},
      {"/api/v1/state", "127.0.0.1:1", "http://127.0.0.1:7001/x", false},
      {"/metrics", "127.0.0.1:1", "http://127.0.0.1:7001", false},
      {"/api/v1/table", "127.0.0.1:1", "http://127.0.0.1:7001", false},
      {"/api/v1/state", "127.0.0.1:1", "http://127.0.0.1:7001", true}, /* cached apart */
      {"/api/v1/state", "127.0.0.1:1", NULL, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    get_origin(port, cases[i].path, cases[i].host, cases[i].origin, b, sizeof(b));
    cr_expect(strncmp(b, "HTTP/1.1 200", 12) == 0, "%s %s: %.40s", cases[i].path,
              cases[i].origin ? cases[i].origin : "-", b);
    char want[128];
    snprintf(want, sizeof(want), "Access-Control-Allow-Origin: %s\r\n",
             cases[i].origin ? cases[i].origin : "");
    bool has = strstr(b, "Access-Control-Allow-Origin:") != NULL;
    cr_expect_eq(has, cases[i].allowed, "%s Origin %s: ACAO %s", cases[i].path,
                 cases[i].origin ? cases[i].origin : "-", has ? "sent" : "absent");
    if (cases[i].allowed)
      cr_expect(strstr(b, want) && strstr(b, "Vary: Origin\r\n"), "%s", b);
  }
  /* A foreign Host is refused before any Origin is looked at. */
  get_origin(port, "/api/v1/state", "evil.example:1", "http://evil.example:7001", b, sizeof(b));
  cr_expect(strncmp(b, "HTTP/1.1 421", 12) == 0, "%.40s", b);
  /* The page may fetch from its own host name at any port, nothing else. */
  get_origin(port, "/", "localhost:1", NULL, b, sizeof(b));
  cr_expect(strstr(b, "connect-src 'self' http://localhost:*;"), "%.600s", b);
  get_origin(port, "/app.js", "localhost:1", NULL, b, sizeof(b));
  cr_expect(strstr(b, "connect-src 'self';"), "%.600s", b);
  acl_web_stop(w);
}
