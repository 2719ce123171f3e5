/* Server-Sent Events on /api/v1/events. Each client has a bounded queue of
 * shared, refcounted messages. The MHD thread drains it from the content
 * reader callback and suspends the connection when it is empty; publishers
 * and the heartbeat ticker resume it. Publishers never block on a client:
 * a full queue loses its oldest event. MHD calls (resume) are made outside
 * our mutex, and only for connections we suspended, which MHD cannot close
 * while suspended — so a resumed connection is always alive. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "web/web_int.h"

struct acl_sse_client {
  acl_sse_client_t *next, *prev;
  acl_web_t *w;
  struct MHD_Connection *conn;
  acl_web_ip_t ip;
  acl_sse_msg_t *q[ACL_WEB_SSE_QUEUE];
  unsigned qhead, qlen;
  acl_sse_msg_t *cur; /* being written */
  size_t cur_off;
  bool suspended; /* by us; only we resume */
  bool ended;     /* returned end-of-stream */
  bool heartbeat_due;
  double last_write;
};

#define STATIC_MSG(name, text)                                                                     \
  static struct {                                                                                  \
    int refs;                                                                                      \
    size_t len;                                                                                    \
    char data[sizeof(text)];                                                                       \
  } name = {-1, sizeof(text) - 1, text} /* NOLINT(bugprone-macro-parentheses): a declarator */
STATIC_MSG(k_hello, "retry: 2000\n: connected\n\n");
STATIC_MSG(k_heartbeat, ": heartbeat\n\n");

static void msg_release(acl_sse_msg_t *m)
{
  if (m && m->refs > 0 && --m->refs == 0)
    free(m); /* NOLINT(clang-analyzer-unix.Malloc): static messages have refs < 0 */
}

static acl_sse_msg_t *pop(acl_sse_client_t *c)
{
  if (!c->qlen)
    return NULL;
  acl_sse_msg_t *m = c->q[c->qhead];
  c->qhead = (c->qhead + 1) % ACL_WEB_SSE_QUEUE;
  c->qlen--;
  return m;
}

/* Under w->mu. false when the queue was full and the oldest was dropped. */
static bool push(acl_sse_client_t *c, acl_sse_msg_t *m)
{
  bool ok = true;
  if (c->qlen == ACL_WEB_SSE_QUEUE) {
    msg_release(pop(c));
    ok = false;
  }
  c->q[(c->qhead + c->qlen) % ACL_WEB_SSE_QUEUE] = m;
  c->qlen++;
  if (m->refs >= 0)
    m->refs++;
  return ok;
}

/* Under w->mu: mark c to be resumed by the caller once the lock is dropped. */
static bool take_resume(acl_sse_client_t *c)
{
  if (!c->suspended)
    return false;
  c->suspended = false;
  return true;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
  (void)pos;
  acl_sse_client_t *c = cls;
  acl_web_t *w = c->w;
  pthread_mutex_lock(&w->mu);
  if (w->stopping || c->ended) {
    c->ended = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return MHD_CONTENT_READER_END_OF_STREAM;
  }
  size_t n = 0;
  while (n < max) {
    if (!c->cur) {
      c->cur = pop(c);
      c->cur_off = 0;
      if (!c->cur && c->heartbeat_due) {
        c->cur = (acl_sse_msg_t *)&k_heartbeat;
        c->heartbeat_due = false;
      }
      if (!c->cur)
        break;
    }
    size_t k = c->cur->len - c->cur_off;
    if (k > max - n)
      k = max - n;
    memcpy(buf + n, c->cur->data + c->cur_off, k);
    n += k;
    c->cur_off += k;
    if (c->cur_off == c->cur->len) {
      msg_release(c->cur);
      c->cur = NULL;
    }
  }
  if (n > 0) {
    c->last_write = acl_mono_s();
  } else {
    /* Nothing to send: park the connection until publish or the ticker. */
    c->suspended = true;
    MHD_suspend_connection(c->conn);
  }
  pthread_mutex_unlock(&w->mu);
  return (ssize_t)n;
}

static void sse_free(void *cls)
{
  acl_sse_client_t *c = cls;
  acl_web_t *w = c->w;
  pthread_mutex_lock(&w->mu);
  if (c->prev)
    c->prev->next = c->next;
  else
    w->clients = c->next;
  if (c->next)
    c->next->prev = c->prev;
  w->nclients--;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  msg_release(c->cur);
  for (acl_sse_msg_t *m; (m = pop(c));)
    msg_release(m);
  free(c);
}

enum MHD_Result acl_web_sse_open(acl_web_t *w, struct MHD_Connection *conn)
{
  acl_web_ip_t ip;
  acl_web_conn_ip(conn, &ip);
  pthread_mutex_lock(&w->mu);
  int same = 0;
  for (acl_sse_client_t *o = w->clients; o; o = o->next)
    same += acl_web_ip_eq(&o->ip, &ip);
  bool full = w->nclients >= ACL_WEB_MAX_SSE || same >= ACL_WEB_MAX_SSE_PER_IP || w->stopping;
  pthread_mutex_unlock(&w->mu);
  if (full)
    return MHD_queue_response(conn, MHD_HTTP_SERVICE_UNAVAILABLE, w->r_503_sse);

  acl_sse_client_t *c = calloc(1, sizeof(*c));
  if (!c)
    return MHD_NO;
  c->w = w;
  c->conn = conn;
  c->ip = ip;
  c->last_write = acl_mono_s();
  push(c, (acl_sse_msg_t *)&k_hello);
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, ACL_WEB_SSE_BLOCK, sse_read, c, sse_free);
  if (!r) {
    free(c);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(r, "X-Accel-Buffering", "no");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  pthread_mutex_lock(&w->mu);
  c->next = w->clients;
  if (w->clients)
    w->clients->prev = c;
  w->clients = c;
  w->nclients++;
  pthread_mutex_unlock(&w->mu);
  /* From here the response owns c: sse_free runs when it is destroyed. */
  enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

static bool valid_event_name(const char *e)
{
  size_t n = 0;
  for (; e[n]; n++) {
    char ch = e[n];
    if (n >= 32 || !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
      return false;
  }
  return n > 0;
}

/* "event: E\ndata: ...\n\n"; every line break of json starts a new data line. */
static acl_sse_msg_t *format_msg(const char *event, const char *json, size_t jl)
{
  size_t lines = 1;
  for (size_t i = 0; i < jl; i++)
    lines += json[i] == '\n';
  size_t cap = 8 + strlen(event) + 1 + lines * 7 + jl + 2;
  acl_sse_msg_t *m = malloc(sizeof(*m) + cap);
  if (!m)
    return NULL;
  char *p = m->data;
  p += sprintf(p, "event: %s\ndata: ", event);
  for (size_t i = 0; i < jl; i++) {
    if (json[i] == '\r')
      continue;
    if (json[i] == '\n') {
      memcpy(p, "\ndata: ", 7);
      p += 7;
    } else {
      *p++ = json[i];
    }
  }
  *p++ = '\n';
  *p++ = '\n';
  m->len = (size_t)(p - m->data);
  m->refs = 0;
  return m;
}

void acl_web_publish(acl_web_t *w, const char *event, const char *json)
{
  if (!w || !event || !json)
    return;
  if (!valid_event_name(event)) {
    acl_warn("web: SSE event name rejected (1-32 of [A-Za-z0-9_.-])");
    return;
  }
  size_t jl = strnlen(json, ACL_WEB_EVENT_MAX + 1);
  if (jl > ACL_WEB_EVENT_MAX) {
    acl_warn("web: SSE event '%s' dropped: data over %d bytes", event, ACL_WEB_EVENT_MAX);
    return;
  }
  struct MHD_Connection *resume[ACL_WEB_MAX_SSE];
  int nresume = 0;
  pthread_mutex_lock(&w->mu);
  if (w->stopping || !w->clients) {
    pthread_mutex_unlock(&w->mu);
    return;
  }
  acl_sse_msg_t *m = format_msg(event, json, jl);
  if (!m) {
    w->events_dropped++;
    pthread_mutex_unlock(&w->mu);
    return;
  }
  w->events_published++;
  for (acl_sse_client_t *c = w->clients; c; c = c->next) {
    if (c->ended)
      continue;
    if (!push(c, m))
      w->events_dropped++;
    if (take_resume(c) && nresume < ACL_WEB_MAX_SSE)
      resume[nresume++] = c->conn;
  }
  if (m->refs == 0)
    free(m);
  pthread_mutex_unlock(&w->mu);
  for (int i = 0; i < nresume; i++)
    MHD_resume_connection(resume[i]);
}

/* Heartbeats: every stream that wrote nothing for ACL_WEB_HEARTBEAT_S gets a
 * comment line, which also finds clients that vanished (the write fails). */
static void *ticker_main(void *arg)
{
  acl_web_t *w = arg;
  struct MHD_Connection *resume[ACL_WEB_MAX_SSE];
  pthread_mutex_lock(&w->mu);
  while (!w->stopping) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 250 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    if (w->stopping)
      break;
    double now = acl_mono_s();
    acl_web_guard_tick_locked(w, now);
    int nresume = 0;
    for (acl_sse_client_t *c = w->clients; c; c = c->next) {
      if (c->ended || c->heartbeat_due || now - c->last_write < ACL_WEB_HEARTBEAT_S)
        continue;
      c->heartbeat_due = true;
      if (take_resume(c) && nresume < ACL_WEB_MAX_SSE)
        resume[nresume++] = c->conn;
    }
    if (nresume) {
      pthread_mutex_unlock(&w->mu);
      for (int i = 0; i < nresume; i++)
        MHD_resume_connection(resume[i]);
      pthread_mutex_lock(&w->mu);
    }
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

int acl_web_sse_init(acl_web_t *w)
{
  pthread_condattr_t ca;
  int rc = pthread_condattr_init(&ca);
  if (rc)
    return rc;
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  rc = pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc)
    return rc;
  rc = pthread_create(&w->ticker, NULL, ticker_main, w);
  if (rc) {
    pthread_cond_destroy(&w->cv);
    return rc;
  }
  w->ticker_started = true;
  return 0;
}

void acl_web_sse_shutdown(acl_web_t *w)
{
  struct MHD_Connection *resume[ACL_WEB_MAX_SSE];
  int nresume = 0;
  pthread_mutex_lock(&w->mu);
  w->stopping = true;
  pthread_cond_broadcast(&w->cv);
  for (acl_sse_client_t *c = w->clients; c; c = c->next)
    if (take_resume(c) && nresume < ACL_WEB_MAX_SSE)
      resume[nresume++] = c->conn;
  pthread_mutex_unlock(&w->mu);
  if (w->ticker_started) {
    pthread_join(w->ticker, NULL);
    w->ticker_started = false;
  }
  for (int i = 0; i < nresume; i++)
    MHD_resume_connection(resume[i]);
  /* MHD must not be stopped with suspended connections: wait until every
   * stream has seen the end (its callback ran) or left, ACL_WEB_STOP_S at
   * most. */
  double deadline = acl_mono_s() + ACL_WEB_STOP_S;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    bool pending = false;
    for (acl_sse_client_t *c = w->clients; c; c = c->next)
      if (!c->ended)
        pending = true;
    if (!pending || acl_mono_s() > deadline)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 20 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
}
