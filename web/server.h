/* The embedded HTTP endpoint (libmicrohttpd): /metrics, /api/v1/state,
 * /api/v1/table, /api/v1/host, /api/v1/events (SSE), /healthz and the
 * dashboard at /. Read-only.
 * A failure to start is reported to the caller and never harms the job. */
#ifndef ACL_WEB_SERVER_H
#define ACL_WEB_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"

typedef struct acl_web acl_web_t;

/* Where the server gets its content: rendered on demand from the caller's
 * current snapshot (called from the server thread). */
typedef struct acl_web_source {
  void *user;
  void (*render_metrics)(void *user, acl_strbuf_t *out);
  void (*render_state)(void *user, acl_strbuf_t *out);
  /* GET /api/v1/table: the tuning table of the decisions (JSON); NULL = 404 */
  void (*render_table)(void *user, acl_strbuf_t *out);
  /* GET /api/v1/host: this host's processes and their endpoints (JSON);
   * NULL = 404 */
  void (*render_host)(void *user, acl_strbuf_t *out);
  /* Whether port is the endpoint of another process of this host: a page
   * it served may read /api/v1/state and /api/v1/host here (CORS). NULL:
   * none may. */
  bool (*is_peer_port)(void *user, int port);
} acl_web_source_t;

/* port 0 = any free port (see acl_web_port). NULL with a message in err. */
acl_web_t *acl_web_start(const char *bind_addr, int port, const acl_web_source_t *src, char *err,
                         size_t errlen);
int acl_web_port(const acl_web_t *w);
/* Queue one SSE event (event name, one-line JSON data) for every client.
 * Never blocks; slow clients lose events, vanished ones are dropped. */
void acl_web_publish(acl_web_t *w, const char *event, const char *json);
void acl_web_stop(acl_web_t *w); /* closes SSE clients too; NULL ok */

#endif
