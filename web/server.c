/* The endpoint's lifecycle: our own listening socket (so errors name the
 * cause), one MHD polling thread with suspend/resume for SSE, limits on
 * connections, per-IP connections, idle time and per-connection memory. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/text.h"
#include "web/web_int.h"

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
  (void)cls;
  char buf[512];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  size_t n = strlen(buf);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    buf[--n] = '\0';
  acl_debug("web: libmicrohttpd: %s", buf);
}

/* Numeric IPv4 or IPv6 ("::1" or "[::1]"); fills ss. */
static bool parse_bind(const char *s, int port, struct sockaddr_storage *ss, socklen_t *len)
{
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  if (inet_pton(AF_INET, s, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *len = sizeof(*v4);
    return true;
  }
  char buf[INET6_ADDRSTRLEN + 2];
  size_t n = strnlen(s, sizeof(buf));
  if (n >= sizeof(buf))
    return false;
  memcpy(buf, s, n + 1);
  if (n >= 2 && buf[0] == '[' && buf[n - 1] == ']') {
    buf[n - 1] = '\0';
    memmove(buf, buf + 1, n - 1);
  }
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET6, buf, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *len = sizeof(*v6);
    return true;
  }
  return false;
}

static int open_listener(const char *bind_addr, int port, int *bound_port, char *err, size_t errlen)
{
  struct sockaddr_storage ss;
  socklen_t sl;
  if (!parse_bind(bind_addr, port, &ss, &sl)) {
    snprintf(err, errlen, "invalid bind address '%.64s' (a numeric IPv4 or IPv6 address)",
             bind_addr);
    return -1;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ss.ss_family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, ACL_WEB_BACKLOG) != 0) {
    char hp[96];
    snprintf(err, errlen, "cannot listen on %s: %s",
             acl_fmt_hostport(hp, sizeof(hp), bind_addr, port), strerror(errno));
    close(fd);
    return -1;
  }
  struct sockaddr_storage got = {0};
  socklen_t gl = sizeof(got);
  if (getsockname(fd, (struct sockaddr *)&got, &gl) != 0) {
    snprintf(err, errlen, "getsockname: %s", strerror(errno));
    close(fd);
    return -1;
  }
  /* Copy out rather than cast: no aliasing, and the analyzer can follow it. */
  struct sockaddr_in a4;
  struct sockaddr_in6 a6;
  memcpy(&a4, &got, sizeof(a4));
  memcpy(&a6, &got, sizeof(a6));
  *bound_port = ntohs(got.ss_family == AF_INET ? a4.sin_port : a6.sin6_port);
  return fd;
}

acl_web_t *acl_web_start(const char *bind_addr, int port, const acl_web_source_t *src, char *err,
                         size_t errlen)
{
  char dummy[8];
  if (!err || !errlen) {
    err = dummy;
    errlen = sizeof(dummy);
  }
  err[0] = '\0';
  if (!bind_addr || !*bind_addr)
    bind_addr = "127.0.0.1";
  if (port < 0 || port > 65535) {
    snprintf(err, errlen, "invalid port %d (0..65535, 0 = any free port)", port);
    return NULL;
  }
  if (!src) {
    snprintf(err, errlen, "no data source given");
    return NULL;
  }
  acl_web_t *w = calloc(1, sizeof(*w));
  if (!w) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  w->src = *src;
  int fd = -1;
  if (pthread_mutex_init(&w->mu, NULL) != 0) {
    snprintf(err, errlen, "pthread_mutex_init failed");
    goto fail_free;
  }
  int rc = acl_web_sse_init(w);
  if (rc) {
    snprintf(err, errlen, "cannot start the SSE ticker: %s", strerror(rc));
    goto fail_mutex;
  }
  if (acl_web_routes_init(w) != 0) {
    snprintf(err, errlen, "out of memory");
    goto fail_routes;
  }
  w->loopback = acl_web_is_loopback(bind_addr[0] == '[' ? "" : bind_addr) ||
                (strcmp(bind_addr, "[::1]") == 0);
  fd = open_listener(bind_addr, port, &w->port, err, errlen);
  if (fd < 0)
    goto fail_routes;
  unsigned flags =
      MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  w->daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, acl_web_route, w, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, (void *)NULL, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)ACL_WEB_MHD_CONN, MHD_OPTION_NOTIFY_CONNECTION, acl_web_guard_notify, (void *)w,
      MHD_OPTION_NOTIFY_COMPLETED, acl_web_guard_completed, (void *)w,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)ACL_WEB_TIMEOUT_S,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)ACL_WEB_MEM_LIMIT, MHD_OPTION_END);
  if (!w->daemon) {
    char hp[96];
    snprintf(err, errlen, "libmicrohttpd failed to start on %s",
             acl_fmt_hostport(hp, sizeof(hp), bind_addr, w->port));
    goto fail_routes;
  }
  char hp[96];
  acl_fmt_hostport(hp, sizeof(hp), bind_addr, w->port);
  if (w->loopback) {
    acl_info("web: serving on http://%s/", hp);
  } else {
    bool any = strcmp(bind_addr, "0.0.0.0") == 0 || strcmp(bind_addr, "::") == 0 ||
               strcmp(bind_addr, "[::]") == 0;
    acl_warn("web: serving on http://%s/, a non-loopback address: %s can read this job's "
             "state (communicators, workloads, host name, pid) without authentication; bind "
             "127.0.0.1 (AUTOCCL_HTTP_BIND) and reach it through an SSH tunnel instead",
             hp,
             any ? "anyone who can reach any interface of this host"
                 : "anyone who can reach this address");
  }
  return w;

fail_routes:
  if (fd >= 0)
    close(fd);
  acl_web_sse_shutdown(w);
  acl_web_routes_free(w);
  pthread_cond_destroy(&w->cv);
fail_mutex:
  pthread_mutex_destroy(&w->mu);
fail_free:
  free(w);
  return NULL;
}

int acl_web_port(const acl_web_t *w) { return w ? w->port : -1; }

void acl_web_stop(acl_web_t *w)
{
  if (!w)
    return;
  acl_web_sse_shutdown(w);
  MHD_stop_daemon(w->daemon); /* closes the listening socket too */
  acl_web_routes_free(w);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}
