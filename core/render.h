/* Rendering a snapshot: the /api/v1/state JSON document, the Prometheus text
 * exposition (format 0.0.4) and the SSE event payloads. Schema and metric
 * list: docs/api.md. Pure functions of the snapshot. */
#ifndef ACL_CORE_RENDER_H
#define ACL_CORE_RENDER_H

#include "core/snapshot.h"
#include "core/strbuf.h"

void acl_render_state_json(const acl_snapshot_t *s, acl_strbuf_t *out);
void acl_render_metrics(const acl_snapshot_t *s, acl_strbuf_t *out);
/* One-line JSON for an SSE "sample" or "decision" event about workload w. */
void acl_render_event_json(const acl_snapshot_t *s, const acl_snap_workload_t *w,
                           acl_strbuf_t *out);

#endif
