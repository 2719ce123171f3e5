/* What keeps one client from taking the endpoint from the others:
 * - a deadline for a request's line and headers (ACL_WEB_HEADER_S), counted
 *   from the accept or from the end of the previous response, enforced by
 *   the SSE ticker: a slow sender's socket is shut down (MHD then closes
 *   it), however often it drips a byte;
 * - our own connection limits, total and per client address, under MHD's
 *   hard one. Over a soft limit, the connections of that address (or of
 *   all) that have waited for their headers longer than
 *   ACL_WEB_EVICT_GRACE_S go, oldest first; at twice the soft limit a
 *   newcomer evicts the oldest waiting one at once, and is refused only
 *   when none waits. Slow senders are the ones left waiting, so a client
 *   that sends its request at once gets in;
 * - a loopback-bound endpoint serves only loopback Host names (DNS
 *   rebinding: a page of another site that resolves to 127.0.0.1).
 * The table is guarded by w->mu; a slot is released in MHD's CLOSED
 * notification, before MHD closes the socket, so a shutdown() under w->mu
 * never reaches a reused descriptor. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "core/log.h"
#include "web/web_int.h"

static void ip_of(const struct sockaddr *sa, acl_web_ip_t *ip)
{
  memset(ip, 0, sizeof(*ip));
  if (!sa)
    return;
  if (sa->sa_family == AF_INET) {
    struct sockaddr_in a;
    memcpy(&a, sa, sizeof(a));
    ip->family = AF_INET;
    memcpy(ip->addr, &a.sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    struct sockaddr_in6 a;
    memcpy(&a, sa, sizeof(a));
    if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
      ip->family = AF_INET;
      memcpy(ip->addr, &a.sin6_addr.s6_addr[12], 4);
    } else {
      ip->family = AF_INET6;
      memcpy(ip->addr, &a.sin6_addr, 16);
    }
  }
}

bool acl_web_ip_eq(const acl_web_ip_t *a, const acl_web_ip_t *b)
{
  return a->family == b->family && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

void acl_web_conn_ip(struct MHD_Connection *conn, acl_web_ip_t *ip)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  ip_of(ci ? ci->client_addr : NULL, ip);
}

static acl_web_conn_t *slot_of(struct MHD_Connection *conn)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

/* Under w->mu. */
static void evict(acl_web_t *w, acl_web_conn_t *c, const char *why)
{
  if (c->evicted)
    return;
  c->evicted = true;
  shutdown(c->fd, SHUT_RDWR);
  w->evictions++;
  acl_debug("web: closed a connection %s", why);
}

/* Under w->mu: the oldest connection waiting for headers since before
 * `before`, of ip if given. */
static acl_web_conn_t *oldest_waiting(acl_web_t *w, const acl_web_ip_t *ip, double before)
{
  acl_web_conn_t *best = NULL;
  for (int i = 0; i < ACL_WEB_MHD_CONN; i++) {
    acl_web_conn_t *c = &w->conns[i];
    if (!c->used || c->evicted || c->waiting_since < 0 || c->waiting_since > before)
      continue;
    if (ip && !acl_web_ip_eq(&c->ip, ip))
      continue;
    if (!best || c->waiting_since < best->waiting_since)
      best = c;
  }
  return best;
}

static int live_conns(const acl_web_t *w, const acl_web_ip_t *ip)
{
  int n = 0;
  for (int i = 0; i < ACL_WEB_MHD_CONN; i++)
    n += w->conns[i].used && !w->conns[i].evicted && (!ip || acl_web_ip_eq(&w->conns[i].ip, ip));
  return n;
}

/* Under w->mu: the soft limits. Over them, connections that have waited
 * for their headers longer than the grace go, oldest first; one that sends
 * its request at once is never cut. */
static void enforce_locked(acl_web_t *w, double now)
{
  double before = now - ACL_WEB_EVICT_GRACE_S;
  for (int i = 0; i < ACL_WEB_MHD_CONN; i++) {
    acl_web_conn_t *c = &w->conns[i];
    if (!c->used || c->evicted)
      continue;
    acl_web_ip_t ip = c->ip;
    for (int n = live_conns(w, &ip); n > ACL_WEB_MAX_PER_IP; n--) {
      acl_web_conn_t *v = oldest_waiting(w, &ip, before);
      if (!v)
        break;
      evict(w, v, "still sending its headers, over the per-address limit");
    }
  }
  for (int n = live_conns(w, NULL); n > ACL_WEB_MAX_CONN; n--) {
    acl_web_conn_t *v = oldest_waiting(w, NULL, before);
    if (!v)
      break;
    evict(w, v, "still sending its headers, over the connection limit");
  }
}

void acl_web_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
  acl_web_t *w = cls;
  if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    acl_web_conn_t *c = *socket_context;
    if (!c)
      return;
    pthread_mutex_lock(&w->mu);
    memset(c, 0, sizeof(*c));
    w->nconns--;
    pthread_mutex_unlock(&w->mu);
    *socket_context = NULL;
    return;
  }
  if (toe != MHD_CONNECTION_NOTIFY_STARTED)
    return;
  const union MHD_ConnectionInfo *fi =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!fi)
    return;
  pthread_mutex_lock(&w->mu);
  acl_web_conn_t *c = NULL;
  for (int i = 0; i < ACL_WEB_MHD_CONN && !c; i++)
    if (!w->conns[i].used)
      c = &w->conns[i];
  if (!c) { /* MHD's own limit is the table's size: cannot happen */
    pthread_mutex_unlock(&w->mu);
    return;
  }
  double now = acl_mono_s();
  c->used = true;
  c->fd = fi->connect_fd;
  c->waiting_since = now;
  acl_web_conn_ip(conn, &c->ip);
  w->nconns++;
  *socket_context = c;
  /* Hard limits (twice the soft ones): the oldest waiting connection makes
   * room, however young; the newcomer is refused only when none waits. */
  if (live_conns(w, &c->ip) > 2 * ACL_WEB_MAX_PER_IP) {
    acl_web_conn_t *v = oldest_waiting(w, &c->ip, now);
    evict(w, v ? v : c,
          v ? "still sending its headers, to make room for its address"
            : "over the per-address limit");
  } else if (live_conns(w, NULL) > ACL_WEB_MHD_CONN - 4) {
    acl_web_conn_t *v = oldest_waiting(w, NULL, now);
    evict(w, v ? v : c, v ? "still sending its headers, to make room" : "over the limit");
  }
  enforce_locked(w, now);
  pthread_mutex_unlock(&w->mu);
}

void acl_web_guard_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                             enum MHD_RequestTerminationCode toe)
{
  (void)req_cls;
  (void)toe;
  acl_web_t *w = cls;
  acl_web_conn_t *c = slot_of(conn);
  if (!c)
    return;
  pthread_mutex_lock(&w->mu);
  c->waiting_since = acl_mono_s(); /* kept alive: the next request's clock */
  pthread_mutex_unlock(&w->mu);
}

void acl_web_guard_request(acl_web_t *w, struct MHD_Connection *conn)
{
  acl_web_conn_t *c = slot_of(conn);
  if (!c)
    return;
  pthread_mutex_lock(&w->mu);
  c->waiting_since = -1;
  pthread_mutex_unlock(&w->mu);
}

void acl_web_guard_tick_locked(acl_web_t *w, double now)
{
  for (int i = 0; i < ACL_WEB_MHD_CONN; i++) {
    acl_web_conn_t *c = &w->conns[i];
    if (c->used && !c->evicted && c->waiting_since >= 0 &&
        now - c->waiting_since > ACL_WEB_HEADER_S)
      evict(w, c, "that sent no complete request within " ACL_WEB_STR(ACL_WEB_HEADER_S) " s");
  }
  enforce_locked(w, now);
}

bool acl_web_is_loopback(const char *addr)
{
  unsigned char a[16];
  if (inet_pton(AF_INET, addr, a) == 1)
    return a[0] == 127;
  if (inet_pton(AF_INET6, addr, a) == 1)
    return memcmp(a, &in6addr_loopback, 16) == 0;
  return false;
}

bool acl_web_host_ok(const char *host)
{
  if (!host)
    return true; /* HTTP/1.0 without Host: no browser sends that */
  char h[80];
  size_t n = strlen(host);
  if (n == 0 || n >= sizeof(h))
    return false;
  memcpy(h, host, n + 1);
  char *end = h + n;
  if (h[0] == '[') { /* [v6]:port */
    char *rb = strchr(h, ']');
    if (!rb || (rb[1] && rb[1] != ':'))
      return false;
    *rb = '\0';
    return acl_web_is_loopback(h + 1);
  }
  char *colon = strchr(h, ':');
  if (colon) {
    if (strchr(colon + 1, ':'))
      return false; /* a bare v6 address without brackets is not a Host */
    end = colon;
    *colon = '\0';
  }
  if (end > h && end[-1] == '.')
    *--end = '\0';
  if (strcasecmp(h, "localhost") == 0)
    return true;
  size_t l = strlen(h);
  if (l > 10 && strcasecmp(h + l - 10, ".localhost") == 0)
    return true; /* RFC 6761: always loopback */
  return acl_web_is_loopback(h);
}
