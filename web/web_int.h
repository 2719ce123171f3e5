/* Internals of the HTTP endpoint shared by server.c, sse.c and routes.c. */
#ifndef ACL_WEB_INT_H
#define ACL_WEB_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "web/server.h"

#define ACL_WEB_MAX_CONN 64       /* all connections, SSE included */
#define ACL_WEB_MAX_PER_IP 32     /* everything local shares 127.0.0.1 */
#define ACL_WEB_MAX_SSE 16        /* event streams; the rest get 503 */
#define ACL_WEB_TIMEOUT_S 10      /* idle connections; SSE has heartbeats */
#define ACL_WEB_MEM_LIMIT (32 * 1024) /* per connection: bounds URL + headers */
#define ACL_WEB_SSE_QUEUE 64      /* events queued per client before dropping */
#define ACL_WEB_HEARTBEAT_S 5
#define ACL_WEB_EVENT_MAX (64 * 1024) /* one event's JSON */
/* A rendered /metrics or /api/v1/state is reused this long: however hard
 * clients poll, the job's process renders at most 1/ACL_WEB_CACHE_S times
 * a second per route (Prometheus scrapes every >= 1 s; the dashboard
 * throttles to 2/s). */
#define ACL_WEB_CACHE_S 0.1

typedef struct acl_web_cached {
  struct MHD_Response *resp; /* refcounted by MHD; NULL = none */
  double at;
} acl_web_cached_t;

typedef struct acl_sse_msg {
  int refs; /* < 0: static, never freed */
  size_t len;
  char data[];
} acl_sse_msg_t;

typedef struct acl_sse_client acl_sse_client_t;

struct acl_web {
  struct MHD_Daemon *daemon;
  acl_web_source_t src;
  int port;
  pthread_mutex_t mu; /* guards everything below */
  pthread_cond_t cv;  /* ticker wake-up, client exits */
  acl_sse_client_t *clients;
  int nclients;
  bool stopping;
  bool ticker_started;
  pthread_t ticker;
  uint64_t events_published, events_dropped;
  struct MHD_Response *r_404, *r_405, *r_503_sse, *r_healthz, *r_head_sse;
  struct MHD_Response **r_assets; /* one per acl_web_assets entry */
  acl_web_cached_t c_metrics, c_state; /* MHD thread only */
};

/* sse.c */
int acl_web_sse_init(acl_web_t *w);   /* ticker thread; 0 or errno */
/* Queues an SSE response for conn; MHD_NO when it could not. */
enum MHD_Result acl_web_sse_open(acl_web_t *w, struct MHD_Connection *conn);
/* Ends every stream, waits (bounded) for them to leave, joins the ticker. */
void acl_web_sse_shutdown(acl_web_t *w);

/* routes.c */
enum MHD_Result acl_web_route(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version,
                              const char *upload_data, size_t *upload_size, void **req_cls);
int acl_web_routes_init(acl_web_t *w); /* shared static responses; 0 ok */
void acl_web_routes_free(acl_web_t *w);

#endif
