/* HTTP requests against the real endpoint (web/server.c, routes.c, sse.c)
 * over loopback: the input is sent as-is on a fresh connection, the write
 * side is closed, and whatever comes back is read within a bound. The
 * routing is not exposed as a pure function yet (docs/hardening.md), so
 * this drives libmicrohttpd's parser into our routes. Checks: any answer is
 * an HTTP/1.x status line; the server keeps answering /healthz with 200
 * (checked every 32 inputs and at exit), i.e. no request wedges or kills it;
 * ASan/UBSan/LSan watch the server threads. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "fuzz_common.h"
#include "web/server.h"

static acl_web_t *web;
static int port;
static unsigned long runs;

static void render_metrics(void *user, acl_strbuf_t *out)
{
  (void)user;
  acl_sb_puts(out, "# TYPE autoccl_up gauge\nautoccl_up 1\n");
}

static void render_state(void *user, acl_strbuf_t *out)
{
  (void)user;
  acl_sb_puts(out, "{\"version\":1,\"communicators\":[],\"workloads\":[]}");
}

/* A whole response is in: headers plus Content-Length bytes of body, or the
 * headers of an event stream (it never ends). Saves waiting for the server
 * to close a keep-alive connection. */
static bool complete(const char *r, size_t n)
{
  const char *end = strstr(r, "\r\n\r\n");
  if (!end)
    return false;
  size_t hdr = (size_t)(end - r) + 4;
  if (strstr(r, "text/event-stream") && strstr(r, "text/event-stream") < end)
    return true;
  const char *cl = strcasestr(r, "\r\nContent-Length:");
  if (!cl || cl > end)
    return false;
  unsigned long len = strtoul(cl + 17, NULL, 10);
  return n >= hdr + len;
}

/* Sends req, half-closes, reads up to cap bytes until EOF or the deadline.
 * Returns the bytes read, -1 if the connection could not be made. */
/* A connected socket to the endpoint, -1 when none within a second. Each
 * client socket is reset at close (SO_LINGER 0): at tens of thousands of
 * exchanges a minute, TIME_WAIT would use up loopback's ephemeral ports and
 * connect() would fail with EADDRNOTAVAIL, which says nothing of the server. */
static int connect_endpoint(void)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  double deadline = acl_mono_s() + 1.0;
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return -1;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
      return fd;
    close(fd);
    if (acl_mono_s() > deadline)
      return -1;
    poll(NULL, 0, 10);
  }
}

static long exchange(const void *req, size_t len, char *resp, size_t cap, double limit_s)
{
  int fd = connect_endpoint();
  if (fd < 0)
    return -1;
  const char *p = req;
  size_t off = 0;
  while (off < len) {
    ssize_t n = send(fd, p + off, len - off, MSG_NOSIGNAL);
    if (n <= 0)
      break; /* the server may close on a bad request before reading it all */
    off += (size_t)n;
  }
  shutdown(fd, SHUT_WR);
  size_t got = 0;
  double deadline = acl_mono_s() + limit_s;
  while (got < cap - 1) {
    int ms = (int)((deadline - acl_mono_s()) * 1000);
    if (ms <= 0)
      break;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, ms) <= 0)
      break;
    ssize_t n = recv(fd, resp + got, cap - 1 - got, 0);
    if (n <= 0)
      break;
    got += (size_t)n;
    resp[got] = '\0';
    if (complete(resp, got))
      break;
  }
  resp[got] = '\0';
  /* Reset rather than FIN: a half-closed client with an unfinished request
   * (or an event stream) would otherwise hold one of the 32 per-address
   * slots until the server's idle timeout (10 s), starving later inputs. */
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  close(fd);
  return (long)got;
}

static bool odd_port(void *user, int port)
{
  (void)user;
  return port % 2 == 1;
}

static void check_alive(void)
{
  static const char probe[] =
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  char resp[4096];
  long n = exchange(probe, sizeof(probe) - 1, resp, sizeof(resp), 5.0);
  FZ_CHECK(n > 0 && strncmp(resp, "HTTP/1.1 200", 12) == 0,
           "server stopped answering /healthz after %lu inputs (got %ld bytes: %.60s)", runs, n,
           n > 0 ? resp : "");
}

static void stop(void)
{
  check_alive();
  acl_web_stop(web);
  web = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  /* With a host list and siblings, so Origin headers reach the CORS
   * parser (web/cors.c). */
  static const acl_web_source_t src = {.user = NULL,
                                       .render_metrics = render_metrics,
                                       .render_state = render_state,
                                       .render_host = render_state,
                                       .is_peer_port = odd_port};
  char err[256] = "";
  web = acl_web_start("127.0.0.1", 0, &src, err, sizeof(err));
  FZ_CHECK(web, "cannot start the endpoint: %s", err);
  port = acl_web_port(web);
  FZ_CHECK(port > 0, "port %d", port);
  atexit(stop);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 16 * 1024)
    return 0;
  static char resp[64 * 1024];
  /* An event stream never ends by itself: a short bound is enough to see
   * its headers and first event. */
  long n = exchange(data, size, resp, sizeof(resp), 0.05);
  FZ_CHECK(n >= 0, "cannot connect to the endpoint (port %d)", port);
  if (n > 0)
    FZ_CHECK(strncmp(resp, "HTTP/1.", 7) == 0, "answer is not HTTP: %.80s", resp);
  if (++runs % 32 == 0)
    check_alive();
  /* Now and then an event for the open streams. */
  if (runs % 8 == 0)
    acl_web_publish(web, "state", "{\"version\":1}");
  return 0;
}
