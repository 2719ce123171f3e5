/* autoccl-top's HTTP side (libcurl): one source per URL, each with a state
 * fetch and, when the server offers it, the SSE stream that triggers
 * re-fetches. Single-threaded: the caller drives it with acl_top_net_step. */
#ifndef ACL_TUI_NET_H
#define ACL_TUI_NET_H

#include <curl/curl.h>

#include "tui/top.h"

typedef enum acl_top_conn {
  ACL_TOP_CONN_CONNECTING = 0,
  ACL_TOP_CONN_UP,   /* last state fetch worked */
  ACL_TOP_CONN_DOWN, /* last state fetch failed: retrying */
} acl_top_conn_t;

typedef struct acl_top_src {
  char url[ACL_TOP_URL_MAX];
  char state_url[ACL_TOP_URL_MAX + 32];
  char events_url[ACL_TOP_URL_MAX + 32];
  acl_top_model_t model;
  bool has_model; /* model holds a good snapshot (maybe stale if DOWN) */
  acl_top_conn_t conn;
  char error[256];       /* why the last fetch failed */
  unsigned long updates; /* successful fetches */

  CURL *fetch; /* state fetch, NULL when idle */
  acl_strbuf_t body;
  char fetch_err[CURL_ERROR_SIZE];
  double fetch_started;

  CURL *stream; /* SSE, NULL when not connected */
  acl_top_sse_t sse;
  char stream_err[CURL_ERROR_SIZE];
  bool stream_ok;      /* 200 text/event-stream seen on the current stream */
  bool stream_refused; /* the server answered something else */
  double stream_retry_at;
  bool event_pending, fetch_now;
  unsigned long events;
} acl_top_src_t;

typedef struct acl_top_net {
  CURLM *multi;
  int n;
  acl_top_src_t *src;
  double delay;
  char noproxy[512];
} acl_top_net_t;

/* Adds the siblings that each of o's first nuser URLs lists in its
 * /api/v1/host (blocking, 2 s per URL at most). Returns how many. */
int acl_top_discover(acl_top_opts_t *o);
/* curl_global_init is the caller's. NULL on ENOMEM. */
acl_top_net_t *acl_top_net_create(const acl_top_opts_t *o);
void acl_top_net_destroy(acl_top_net_t *n);
/* Blocking fetch of every source (batch mode, and the check at start).
 * Returns how many failed; each failure is in src[i].error. */
int acl_top_net_fetch_all(acl_top_net_t *n);
/* Starts what is due, waits up to timeout_ms (returning early when fd,
 * if >= 0, becomes readable), handles completions. Returns true when a
 * source's model or connection status changed. */
bool acl_top_net_step(acl_top_net_t *n, int timeout_ms, int fd);
/* "connected (stream)", "connected (polling)", "disconnected — retrying"
 * (rows kept) or "no answer — retrying" (never answered). */
const char *acl_top_conn_label(const acl_top_src_t *s);

#endif
