/* Internals of the HTTP endpoint shared by server.c, sse.c and routes.c. */
#ifndef ACL_WEB_INT_H
#define ACL_WEB_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "web/assets.h"
#include "web/server.h"

#define ACL_WEB_MAX_CONN 64                     /* all connections, SSE included (web/guard.c) */
#define ACL_WEB_MHD_CONN (2 * ACL_WEB_MAX_CONN) /* MHD's hard limit: room to evict */
#define ACL_WEB_MAX_PER_IP 16                   /* per client address: leaves room for 3 others */
#define ACL_WEB_MAX_SSE 16                      /* event streams; the rest get 503 */
#define ACL_WEB_MAX_SSE_PER_IP 4                /* event streams per client address */
#define ACL_WEB_EVICT_GRACE_S 0.5               /* a new connection's time to send its request */
#define ACL_WEB_HEADER_S 5   /* a request's line and headers arrive within this */
#define ACL_WEB_TIMEOUT_S 10 /* idle connections; SSE has heartbeats */
/* At stop, event streams get this long to see their end before MHD stops:
 * the endpoint's share of the 2 s finalize bound (docs/api.md). */
#define ACL_WEB_STOP_S 0.5
#define ACL_WEB_STR_(x) #x
#define ACL_WEB_STR(x) ACL_WEB_STR_(x)
#define ACL_WEB_MEM_LIMIT (32 * 1024) /* per connection: bounds URL + headers */
#define ACL_WEB_SSE_QUEUE 64          /* events queued per client before dropping */
#define ACL_WEB_HEARTBEAT_S 5
#define ACL_WEB_EVENT_MAX (64 * 1024) /* one event's JSON */
#define ACL_WEB_SSE_BLOCK 4096        /* bytes MHD asks the event stream for at a time: a page */
#define ACL_WEB_BACKLOG 128           /* listen() backlog: above ACL_WEB_MHD_CONN, refused beyond */
/* A rendered /metrics or /api/v1/state is reused this long: however hard
 * clients poll, the job's process renders at most 1/ACL_WEB_CACHE_S times
 * a second per route (Prometheus scrapes every >= 1 s; the dashboard
 * throttles to 2/s). */
#define ACL_WEB_CACHE_S 0.1
/* An Origin or Host name the host view accepts: "http://" + a 63-character
 * name + ":65535" fits (longer names get no cross-origin answer). */
#define ACL_WEB_ORIGIN_MAX 80
/* The pages' Content-Security-Policy; %s%s%s adds the page's own host at
 * any port to connect-src (the siblings of one host, web/cors.c). */
#define ACL_WEB_CSP_FMT                                                                            \
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "                \
  "connect-src 'self'%s%s%s; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
#define ACL_WEB_CSP_MAX 512

typedef struct acl_web_cached {
  struct MHD_Response *resp; /* refcounted by MHD; NULL = none */
  double at;
  char origin[ACL_WEB_ORIGIN_MAX]; /* the Origin it answers ("": same-origin only) */
} acl_web_cached_t;

typedef struct acl_sse_msg {
  int refs; /* < 0: static, never freed */
  size_t len;
  char data[];
} acl_sse_msg_t;

typedef struct acl_sse_client acl_sse_client_t;

typedef struct acl_web_ip {
  int family; /* 0: unknown */
  unsigned char addr[16];
} acl_web_ip_t;

/* One accepted connection (web/guard.c). */
typedef struct acl_web_conn {
  bool used, evicted;
  int fd;
  acl_web_ip_t ip;
  double waiting_since; /* awaiting a request's headers since; < 0: serving one */
} acl_web_conn_t;

struct acl_web {
  struct MHD_Daemon *daemon;
  acl_web_source_t src;
  int port;
  bool loopback;      /* bound to a loopback address: Host names checked */
  pthread_mutex_t mu; /* guards everything below */
  pthread_cond_t cv;  /* ticker wake-up, client exits */
  acl_sse_client_t *clients;
  int nclients;
  bool stopping;
  bool ticker_started;
  pthread_t ticker;
  uint64_t events_published, events_dropped, evictions;
  acl_web_conn_t conns[ACL_WEB_MHD_CONN];
  int nconns;
  struct MHD_Response *r_404, *r_405, *r_421, *r_400_host, *r_503_sse, *r_healthz, *r_head_sse;
  struct MHD_Response **r_assets; /* one per acl_web_assets entry */
  /* MHD thread only; *_cors: the last answer to a sibling's page */
  acl_web_cached_t c_metrics, c_state, c_table, c_host, c_state_cors, c_host_cors;
  char csp[ACL_WEB_CSP_MAX]; /* of the assets but the page */
};

/* sse.c */
int acl_web_sse_init(acl_web_t *w); /* ticker thread; 0 or errno */
/* Queues an SSE response for conn; MHD_NO when it could not. */
enum MHD_Result acl_web_sse_open(acl_web_t *w, struct MHD_Connection *conn);
/* Ends every stream, waits (bounded) for them to leave, joins the ticker. */
void acl_web_sse_shutdown(acl_web_t *w);

/* guard.c */
void acl_web_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe);
void acl_web_guard_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                             enum MHD_RequestTerminationCode toe);
void acl_web_guard_request(acl_web_t *w, struct MHD_Connection *conn); /* headers are in */
void acl_web_guard_tick_locked(acl_web_t *w, double now);              /* under w->mu */
void acl_web_conn_ip(struct MHD_Connection *conn, acl_web_ip_t *ip);
bool acl_web_ip_eq(const acl_web_ip_t *a, const acl_web_ip_t *b);
bool acl_web_is_loopback(const char *addr); /* numeric 127/8 or ::1 */
bool acl_web_host_ok(const char *host);     /* a loopback name or address, port optional */

/* cors.c */
/* The request's Origin when it may read this endpoint cross-origin (a
 * process of this host at another port), else NULL. */
const char *acl_web_cors_origin(acl_web_t *w, struct MHD_Connection *conn);
/* The dashboard page with a CSP for this request's host name. NULL: ENOMEM. */
struct MHD_Response *acl_web_page_response(acl_web_t *w, struct MHD_Connection *conn,
                                           const acl_web_asset_t *a);

/* routes.c */
enum MHD_Result acl_web_route(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **req_cls);
int acl_web_routes_init(acl_web_t *w); /* shared static responses; 0 ok */
void acl_web_routes_free(acl_web_t *w);

#endif
