/* Snapshots for the renderer tests (render_helpers.h). */
#include "tests/web/render_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

acl_snapshot_t *snap_new(void)
{
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  cr_assert_not_null(s);
  s->version = ACL_SNAPSHOT_VERSION;
  strcpy(s->hostname, "node-1");
  s->pid = 42;
  strcpy(s->mode, "online");
  s->uptime_seconds = 3.5;
  strcpy(s->profiler.source, "nccl");
  s->profiler.records = 120;
  s->profiler.sample_latency_seconds = -1;
  return s;
}

acl_snap_comm_t *add_comm(acl_snapshot_t *s, uint64_t id, const char *name, int rank)
{
  acl_snap_comm_t *c = &s->comms[s->ncomms++];
  c->id = id;
  snprintf(c->name, sizeof(c->name), "%s", name);
  c->rank = rank;
  c->nranks = 4;
  c->nnodes = 1;
  strcpy(c->role, "decider");
  c->consensus_wait_seconds = 0.5;
  c->blocks_published = 7;
  return c;
}

acl_snap_workload_t *add_wl(acl_snapshot_t *s, int comm, int coll, uint64_t bytes)
{
  acl_snap_workload_t *w = &s->workloads[s->nworkloads++];
  w->comm = comm;
  w->rank = s->comms[comm].rank;
  w->key.comm_id = s->comms[comm].id;
  w->key.coll = (uint8_t)coll;
  w->key.nbytes = bytes;
  w->key.num_pipe_ops = 1;
  w->phase = ACL_PHASE_EXPLORING;
  w->current = (acl_candidate_t){.algo = 1, .proto = 2, .nchannels = 16};
  return w;
}

char *metrics_of(const acl_snapshot_t *s)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_render_metrics(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  return acl_sb_steal(&sb, NULL);
}

char *state_of(const acl_snapshot_t *s)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_render_state_json(s, &sb);
  cr_assert(acl_sb_ok(&sb));
  return acl_sb_steal(&sb, NULL);
}
