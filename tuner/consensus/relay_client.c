/* Multi-host relay: the follower client (one connection per rank, pushes
 * read on the way). Server: relay.c; wire format: relay_wire.c. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "tuner/consensus/relay.h"

/* ---- client ----------------------------------------------------------------- */

/* Between attempts within AUTOCCL_TIMEOUT_MS: a local network round trip is
 * far shorter, a host's start far longer. */
#define CLIENT_RETRY_MS 20

#define CL_BUF 512 /* unread frames: an answer and the pushes sent before it */

struct acl_relay_client {
  char host[256];
  int port;
  int fd;
  acl_relay_push_fn on_push;
  void *ctx;
  size_t have;
  uint8_t buf[CL_BUF];
};

acl_relay_client_t *acl_relay_client_create(const char *host, int port, acl_relay_push_fn on_push,
                                            void *ctx)
{
  acl_relay_client_t *cl = calloc(1, sizeof(*cl));
  if (!cl)
    return NULL;
  snprintf(cl->host, sizeof(cl->host), "%s", host);
  cl->port = port;
  cl->fd = -1;
  cl->on_push = on_push;
  cl->ctx = ctx;
  return cl;
}

void acl_relay_client_destroy(acl_relay_client_t *cl)
{
  if (!cl)
    return;
  if (cl->fd >= 0)
    close(cl->fd);
  free(cl);
}

static int cl_frames(acl_relay_client_t *cl, acl_relay_resp_t *resp, bool *got);

/* Before a connection is dropped, the pushes already delivered to it are
 * read (a reset or a failed send must not lose a commit the server sent
 * before it died: docs/consensus.md, "Leader loss"); stale answers are
 * skipped. */
static void cl_close(acl_relay_client_t *cl)
{
  for (int n = 0; cl->fd >= 0 && n < 4096; n++) {
    acl_relay_resp_t stale;
    bool got = false;
    if (cl_frames(cl, &stale, &got) != 0)
      break;
    if (got)
      continue; /* an answer came after its caller gave up: keep reading */
    ssize_t r = recv(cl->fd, cl->buf + cl->have, sizeof(cl->buf) - cl->have, MSG_DONTWAIT);
    if (r <= 0)
      break;
    cl->have += (size_t)r;
  }
  if (cl->fd >= 0)
    close(cl->fd);
  cl->fd = -1;
  cl->have = 0;
}

static int cl_connect(acl_relay_client_t *cl, uint64_t deadline, char *why, size_t whylen)
{
  struct addrinfo *ai = acl_relay_resolve(cl->host, cl->port, false);
  if (!ai) {
    snprintf(why, whylen, "host does not resolve");
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0 || acl_relay_nonblock(fd) != 0)
      goto next;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
      break;
    if (errno != EINPROGRESS)
      goto next;
    uint64_t now = acl_mono_ns() / 1000000u;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int left = deadline > now ? (int)(deadline - now) : 0;
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (poll(&p, 1, left) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
        soerr == 0)
      break;
    errno = soerr ? soerr : ETIMEDOUT;
  next:
    snprintf(why, whylen, "%s", strerror(errno));
    if (fd >= 0)
      close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0)
    return -1;
  acl_relay_nodelay(fd);
  cl->fd = fd;
  cl->have = 0;
  return 0;
}

/* Consumes the whole frames in cl->buf: pushes go to on_push, an answer to
 * *resp (*got set). -1: malformed, or an answer nobody asked for. */
static int cl_frames(acl_relay_client_t *cl, acl_relay_resp_t *resp, bool *got)
{
  for (;;) {
    if (cl->have < 4)
      return 0;
    uint32_t flen = (uint32_t)cl->buf[0] | (uint32_t)cl->buf[1] << 8 | (uint32_t)cl->buf[2] << 16 |
                    (uint32_t)cl->buf[3] << 24;
    long used;
    if (flen == ACL_RELAY_PUSH_LEN) {
      acl_relay_push_t p;
      used = acl_relay_decode_push(cl->buf, cl->have, &p);
      if (used > 0 && cl->on_push)
        cl->on_push(cl->ctx, &p);
    } else {
      if (!resp || *got)
        return -1;
      used = acl_relay_decode_resp(cl->buf, cl->have, resp);
      if (used > 0)
        *got = true;
    }
    if (used < 0)
      return -1;
    if (used == 0)
      return 0;
    memmove(cl->buf, cl->buf + used, cl->have - (size_t)used);
    cl->have -= (size_t)used;
  }
}

/* Reads what is there (waiting up to wait_ms for something); 1 read, 0
 * nothing yet, -1 closed or broken. */
static int cl_recv(acl_relay_client_t *cl, int wait_ms, char *why, size_t whylen)
{
  struct pollfd p = {.fd = cl->fd, .events = POLLIN};
  if (poll(&p, 1, wait_ms) <= 0)
    return 0;
  ssize_t r = recv(cl->fd, cl->buf + cl->have, sizeof(cl->buf) - cl->have, 0);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
    snprintf(why, whylen, "%s", r == 0 ? "connection closed" : strerror(errno));
    return -1;
  }
  if (r > 0)
    cl->have += (size_t)r;
  return 1;
}

/* One exchange on a connected socket; -1 drops the connection. */
static int cl_exchange(acl_relay_client_t *cl, const uint8_t *req, size_t n, acl_relay_resp_t *resp,
                       uint64_t deadline, char *why, size_t whylen)
{
  bool got = false;
  if (cl_frames(cl, NULL, &got) != 0) { /* pushes read earlier, never an answer */
    snprintf(why, whylen, "malformed frame");
    return -1;
  }
  if (send(cl->fd, req, n, MSG_NOSIGNAL) != (ssize_t)n) {
    snprintf(why, whylen, "send: %s", strerror(errno));
    return -1;
  }
  for (;;) {
    if (cl_frames(cl, resp, &got) != 0) {
      snprintf(why, whylen, "malformed answer");
      return -1;
    }
    if (got)
      return 0;
    uint64_t now = acl_mono_ns() / 1000000u;
    if (now >= deadline) {
      snprintf(why, whylen, "no answer in time");
      return -1;
    }
    if (cl_recv(cl, (int)(deadline - now), why, whylen) < 0)
      return -1;
  }
}

void acl_relay_client_held(acl_relay_client_t *cl, const acl_relay_held_t *h)
{
  uint8_t out[4 + ACL_RELAY_HELD_LEN];
  size_t n = acl_relay_encode_held(h, out, sizeof(out));
  if (cl && cl->fd >= 0 && send(cl->fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)n)
    cl_close(cl); /* a partial frame would corrupt the stream */
}

int acl_relay_client_poll(acl_relay_client_t *cl, int wait_ms)
{
  if (!cl || cl->fd < 0)
    return -1;
  char why[64];
  bool got = false;
  for (int r = cl_recv(cl, wait_ms, why, sizeof(why)); r != 0;
       r = cl_recv(cl, 0, why, sizeof(why))) {
    if (r < 0 || cl_frames(cl, NULL, &got) != 0) {
      cl_close(cl);
      return -1;
    }
  }
  return 0;
}

int acl_relay_client_call(acl_relay_client_t *cl, const acl_relay_req_t *req,
                          acl_relay_resp_t *resp, int timeout_ms, char *err, size_t errlen)
{
  uint8_t out[4 + ACL_RELAY_REQ_LEN];
  size_t n = acl_relay_encode_req(req, out, sizeof(out));
  uint64_t deadline = acl_mono_ns() / 1000000u + (uint64_t)(timeout_ms > 0 ? timeout_ms : 1);
  char why[128] = "no attempt";
  do {
    if (cl->fd < 0 && cl_connect(cl, deadline, why, sizeof(why)) != 0) {
      acl_relay_nap_ms(CLIENT_RETRY_MS);
      continue;
    }
    if (cl_exchange(cl, out, n, resp, deadline, why, sizeof(why)) != 0) {
      cl_close(cl);
      acl_relay_nap_ms(CLIENT_RETRY_MS);
      continue;
    }
    if (resp->status != ACL_RELAY_NO_COMM)
      return 0;
    snprintf(why, sizeof(why), "%s", acl_relay_status_name(ACL_RELAY_NO_COMM));
    acl_relay_nap_ms(CLIENT_RETRY_MS); /* the leader host may not have created the comm yet */
  } while (acl_mono_ns() / 1000000u < deadline);
  snprintf(err, errlen,
           "no decision from the leader host's relay %s:%d within %d ms "
           "(AUTOCCL_TIMEOUT_MS): %s; is the host with rank 0 alive?",
           cl->host, cl->port, timeout_ms, why);
  return -1;
}
