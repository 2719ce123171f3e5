/* Multi-host relay: the process-wide server (a poll() thread) and the
 * socket helpers; the follower client is in relay_client.c. Wire format: relay_wire.c. See relay.h. */
#include "tuner/consensus/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"

/* ---- sockets ---------------------------------------------------------------- */

void acl_relay_nap_ms(int ms)
{
  struct timespec ts = {0, (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

int acl_relay_nonblock(int fd)
{
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void acl_relay_nodelay(int fd)
{
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

struct addrinfo *acl_relay_resolve(const char *host, int port, bool passive)
{
  char ps[16];
  snprintf(ps, sizeof(ps), "%d", port);
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0};
  struct addrinfo *res = NULL;
  return getaddrinfo(host, ps, &hints, &res) == 0 ? res : NULL;
}

/* ---- server ----------------------------------------------------------------- */

#define SRV_MAX_CONN 1024 /* follower ranks connected at once: a chosen bound (docs/consensus.md) */
#define SRV_BUF 512       /* a connection's partial frames: above a request frame */
#define SRV_BACKLOG 128   /* listen() backlog: follower ranks connecting at once */
#define SRV_POLL_MS 1000  /* a fallback wake-up: stopping and new work go through srv.wake */

typedef struct srv_conn {
  int fd;
  int slot;         /* its host's slot in the comm's commit table, -1 none yet */
  bool broken;      /* a push could not be written whole: closed by the loop */
  uint64_t comm_id; /* of its first answered request (pushes go there) */
  uint64_t seq;     /* that comm's registration (a later one has its own table) */
  size_t len;
  uint8_t buf[SRV_BUF];
} srv_conn_t;

typedef struct srv_comm {
  uint64_t comm_id;
  acl_relay_serve_fn serve;
  void *ctx;
  acl_relay_commit_t *commit;
  uint64_t self_host; /* the leader host: never counted */
  uint64_t seq;       /* registration number */
  struct srv_comm *next;
} srv_comm_t;

static struct {
  pthread_mutex_t mu; /* lifecycle, comm registry (held while serving) */
  int lfd, wake[2];
  bool running;
  pthread_t thr;
  char host[256];
  int port;
  srv_comm_t *comms;
  uint64_t seq; /* registrations so far */
  srv_conn_t *conns;
  int nconns;
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER, .lfd = -1, .wake = {-1, -1}};

static srv_comm_t *srv_comm_find(uint64_t comm_id)
{
  for (srv_comm_t *s = srv.comms; s; s = s->next)
    if (s->comm_id == comm_id)
      return s;
  return NULL;
}

static struct {
  acl_relay_pass_hook_fn fn;
  void *ctx;
} pass_hook; /* tests only: set before the relay thread starts */

/* A commit grew: one pass of pushes to every connection of the comm, before
 * any answer goes out (relay.h). A socket too full to take a whole frame is
 * closed (its peer stopped reading; a partial frame would corrupt it). */
static void srv_push(void *ctx, uint32_t widx, uint64_t commit)
{
  const srv_comm_t *s = ctx;
  acl_relay_push_t p = {.widx = widx, .comm_id = s->comm_id, .commit = commit};
  uint8_t out[4 + ACL_RELAY_PUSH_LEN];
  size_t n = acl_relay_encode_push(&p, out, sizeof(out));
  if (pass_hook.fn)
    pass_hook.fn(pass_hook.ctx, widx, commit, -1);
  for (int i = 0, sent = 0; i < srv.nconns; i++) {
    srv_conn_t *cn = &srv.conns[i];
    if (cn->slot < 0 || cn->comm_id != s->comm_id || cn->seq != s->seq || cn->broken)
      continue;
    if (send(cn->fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)n)
      cn->broken = true;
    else if (pass_hook.fn)
      pass_hook.fn(pass_hook.ctx, widx, commit, ++sent);
  }
  if (pass_hook.fn)
    pass_hook.fn(pass_hook.ctx, widx, commit, INT32_MAX);
}

void acl_relay_test_pass_hook(acl_relay_pass_hook_fn fn, void *ctx)
{
  pass_hook.fn = fn;
  pass_hook.ctx = ctx;
}

/* Records that cn's host holds calls below held on widx (registry lock
 * held): the first frame of a connection joins its host. */
static uint64_t srv_held(srv_comm_t *s, srv_conn_t *cn, uint64_t comm_id, uint64_t host_id,
                         uint32_t widx, uint64_t held)
{
  if (host_id == s->self_host) /* its ranks decide for themselves */
    return acl_relay_commit_held(s->commit, -1, widx, held, NULL, NULL);
  if (cn->slot < 0 && cn->comm_id == 0) {
    cn->comm_id = comm_id;
    cn->seq = s->seq;
    cn->slot = acl_relay_commit_join(s->commit, host_id);
  }
  bool mine = cn->comm_id == comm_id && cn->seq == s->seq;
  return acl_relay_commit_held(s->commit, mine ? cn->slot : -1, widx, held, srv_push, s);
}

/* Answers req on cn; tracks what cn's host says it holds. */
static void srv_handle(srv_conn_t *cn, const acl_relay_req_t *req, acl_relay_resp_t *resp)
{
  memset(resp, 0, sizeof(*resp));
  resp->status = ACL_RELAY_NO_COMM;
  pthread_mutex_lock(&srv.mu);
  srv_comm_t *s = srv_comm_find(req->comm_id);
  if (s) {
    s->serve(s->ctx, req, resp);
    if (resp->status == ACL_RELAY_OK)
      resp->commit = srv_held(s, cn, req->comm_id, req->host_id, resp->widx, req->held_end);
  }
  pthread_mutex_unlock(&srv.mu);
}

static void srv_handle_held(srv_conn_t *cn, const acl_relay_held_t *h)
{
  pthread_mutex_lock(&srv.mu);
  srv_comm_t *s = srv_comm_find(h->comm_id);
  if (s)
    srv_held(s, cn, h->comm_id, h->host_id, h->widx, h->held_end);
  pthread_mutex_unlock(&srv.mu);
}

/* cn is going away: its host may stop being live. */
static void srv_conn_gone(srv_conn_t *cn)
{
  if (cn->slot < 0)
    return;
  pthread_mutex_lock(&srv.mu);
  srv_comm_t *s = srv_comm_find(cn->comm_id);
  if (s && s->seq == cn->seq)
    acl_relay_commit_leave(s->commit, cn->slot, srv_push, s);
  pthread_mutex_unlock(&srv.mu);
  cn->slot = -1;
}

/* false: close the connection */
static bool srv_read(srv_conn_t *cn)
{
  ssize_t r = recv(cn->fd, cn->buf + cn->len, SRV_BUF - cn->len, 0);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
    return false;
  if (r < 0)
    return true;
  cn->len += (size_t)r;
  for (;;) {
    acl_relay_req_t req;
    acl_relay_held_t held;
    /* the frame's length tells a held frame from a request; decided once */
    bool is_held = cn->len >= 4 && cn->buf[0] == ACL_RELAY_HELD_LEN && !cn->buf[1] && !cn->buf[2] &&
                   !cn->buf[3];
    long used = is_held ? acl_relay_decode_held(cn->buf, cn->len, &held)
                        : acl_relay_decode_req(cn->buf, cn->len, &req);
    if (used < 0)
      return false; /* protocol error: drop the peer, change nothing */
    if (used == 0)
      return cn->len < SRV_BUF;
    if (is_held) { /* no answer */
      srv_handle_held(cn, &held);
      memmove(cn->buf, cn->buf + used, cn->len - (size_t)used);
      cn->len -= (size_t)used;
      continue;
    }
    acl_relay_resp_t resp;
    uint8_t out[4 + ACL_RELAY_RESP_LEN];
    srv_handle(cn, &req, &resp);
    size_t n = acl_relay_encode_resp(&resp, out, sizeof(out));
    if (send(cn->fd, out, n, MSG_NOSIGNAL) != (ssize_t)n)
      return false; /* one small answer per request: a full socket is a dead peer */
    memmove(cn->buf, cn->buf + used, cn->len - (size_t)used);
    cn->len -= (size_t)used;
  }
}

static void *srv_main(void *arg)
{
  (void)arg;
  struct pollfd *pf = calloc(SRV_MAX_CONN + 2, sizeof(*pf));
  if (!pf)
    return NULL;
  for (;;) {
    pf[0] = (struct pollfd){.fd = srv.wake[0], .events = POLLIN};
    pf[1] = (struct pollfd){.fd = srv.lfd, .events = POLLIN};
    for (int i = 0; i < srv.nconns; i++)
      pf[2 + i] = (struct pollfd){.fd = srv.conns[i].fd, .events = POLLIN};
    int n = poll(pf, (nfds_t)2 + (nfds_t)srv.nconns, SRV_POLL_MS);
    if (n < 0 && errno != EINTR)
      break;
    if (pf[0].revents)
      break;
    if (pf[1].revents & POLLIN) {
      int fd = accept(srv.lfd, NULL, NULL);
      if (fd >= 0) {
        if (srv.nconns >= SRV_MAX_CONN || acl_relay_nonblock(fd) != 0) {
          close(fd);
        } else {
          acl_relay_nodelay(fd);
          srv.conns[srv.nconns] = (srv_conn_t){.fd = fd, .slot = -1};
          srv.nconns++;
        }
      }
    }
    for (int i = srv.nconns - 1; i >= 0; i--)
      if (pf[2 + i].revents && !srv_read(&srv.conns[i]))
        srv.conns[i].broken = true;
    /* closing may grow commits, whose pushes may break more connections */
    for (bool again = true; again;) {
      again = false;
      for (int i = srv.nconns - 1; i >= 0; i--) {
        if (!srv.conns[i].broken)
          continue;
        again = true;
        srv_conn_t gone = srv.conns[i];
        srv.conns[i] = srv.conns[--srv.nconns];
        close(gone.fd);
        srv_conn_gone(&gone);
      }
    }
  }
  free(pf);
  return NULL;
}

static int srv_listen(const char *host, int port, char *err, size_t errlen)
{
  struct addrinfo *ai = acl_relay_resolve(host, port, true);
  if (!ai) {
    snprintf(err, errlen, "coordinator host \"%s\" does not resolve", host);
    return -1;
  }
  int fd = -1, e = 0;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, SRV_BACKLOG) == 0 &&
        acl_relay_nonblock(fd) == 0)
      break;
    e = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0)
    snprintf(err, errlen, "cannot listen on coordinator %s:%d: %s", host, port,
             strerror(e ? e : EADDRNOTAVAIL));
  return fd;
}

int acl_relay_register(const char *host, int port, uint64_t comm_id, uint64_t self_host,
                       acl_relay_serve_fn serve, void *ctx, char *err, size_t errlen)
{
  int rc = -1;
  srv_comm_t *s = calloc(1, sizeof(*s));
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->comm_id = comm_id;
  s->self_host = self_host;
  s->serve = serve;
  s->ctx = ctx;
  s->commit = acl_relay_commit_create();
  if (!s->commit) {
    free(s);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pthread_mutex_lock(&srv.mu);
  if (srv.running && (strcmp(srv.host, host) != 0 || srv.port != port)) {
    snprintf(err, errlen, "relay already serves %s:%d, cannot also serve %s:%d", srv.host, srv.port,
             host, port);
    goto out;
  }
  for (srv_comm_t *o = srv.comms; o; o = o->next)
    if (o->comm_id == comm_id) {
      snprintf(err, errlen, "comm %016llx already has a rank 0 in this process",
               (unsigned long long)comm_id);
      goto out;
    }
  if (!srv.running) {
    srv.conns = calloc(SRV_MAX_CONN, sizeof(*srv.conns));
    if (!srv.conns) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    srv.nconns = 0;
    if ((srv.lfd = srv_listen(host, port, err, errlen)) < 0)
      goto fail_srv;
    if (pipe2(srv.wake, O_CLOEXEC) != 0) {
      snprintf(err, errlen, "pipe: %s", strerror(errno));
      goto fail_srv;
    }
    if (pthread_create(&srv.thr, NULL, srv_main, NULL) != 0) {
      snprintf(err, errlen, "cannot start the relay thread");
      goto fail_srv;
    }
    snprintf(srv.host, sizeof(srv.host), "%s", host);
    srv.port = port;
    srv.running = true;
    acl_info("consensus relay listening on %s:%d", srv.host, srv.port);
  }
  s->seq = ++srv.seq;
  s->next = srv.comms;
  srv.comms = s;
  s = NULL;
  rc = 0;
  goto out;
fail_srv:
  if (srv.lfd >= 0)
    close(srv.lfd);
  for (int i = 0; i < 2; i++)
    if (srv.wake[i] >= 0)
      close(srv.wake[i]);
  srv.lfd = srv.wake[0] = srv.wake[1] = -1;
  free(srv.conns);
  srv.conns = NULL;
out:
  pthread_mutex_unlock(&srv.mu);
  if (s)
    acl_relay_commit_destroy(s->commit);
  free(s);
  return rc;
}

void acl_relay_unregister(void *ctx)
{
  pthread_mutex_lock(&srv.mu);
  for (srv_comm_t **pp = &srv.comms; *pp; pp = &(*pp)->next)
    if ((*pp)->ctx == ctx) {
      srv_comm_t *s = *pp;
      *pp = s->next; /* its connections' seq now matches nothing */
      acl_relay_commit_destroy(s->commit);
      free(s);
      break;
    }
  bool stop = srv.running && !srv.comms;
  if (stop)
    srv.running = false;
  pthread_mutex_unlock(&srv.mu);
  if (!stop)
    return;
  /* the thread takes srv.mu per request: join outside it */
  ssize_t w = write(srv.wake[1], "x", 1);
  (void)w;
  pthread_join(srv.thr, NULL);
  pthread_mutex_lock(&srv.mu);
  for (int i = 0; i < srv.nconns; i++)
    close(srv.conns[i].fd);
  free(srv.conns);
  srv.conns = NULL;
  srv.nconns = 0;
  close(srv.lfd);
  close(srv.wake[0]);
  close(srv.wake[1]);
  srv.lfd = srv.wake[0] = srv.wake[1] = -1;
  pthread_mutex_unlock(&srv.mu);
}
