/* Snapshots for the renderer tests (test_render.c, test_render_json.c): a
 * process with communicators and workloads added one by one, and its
 * renderings. */
#ifndef ACL_TESTS_WEB_RENDER_HELPERS_H
#define ACL_TESTS_WEB_RENDER_HELPERS_H

#include <stdint.h>

#include "observe/observe.h"

acl_snapshot_t *snap_new(void);
acl_snap_comm_t *add_comm(acl_snapshot_t *s, uint64_t id, const char *name, int rank);
/* An exploring workload of comm (its id and rank), RING/SIMPLE 16 channels. */
acl_snap_workload_t *add_wl(acl_snapshot_t *s, int comm, int coll, uint64_t bytes);
char *metrics_of(const acl_snapshot_t *s); /* the caller frees */
char *state_of(const acl_snapshot_t *s);

#endif
