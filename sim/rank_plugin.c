/* A rank's calls into the plugin outside the per-call decision: the
 * communicator's tuner and profiler init/finalize, and the profiler events
 * NCCL emits for a call that ran (see sim/rank.c). */
#include <stdio.h>
#include <string.h>

#include "sim/rank_int.h"

static int sim_event_mask;

int acl_sim_event_mask(void) { return __atomic_load_n(&sim_event_mask, __ATOMIC_RELAXED); }

static void fill_constants(ncclTunerConstants_v5_t *k)
{
  /* Plausible NCCL 2.28 values (µs, GB/s); the plugin may read them. */
  memset(k, 0, sizeof(*k));
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      k->baseLatencies[a][p] = p == NCCL_PROTO_LL ? 6.6 : p == NCCL_PROTO_LL128 ? 14.0 : 8.4;
      k->hwLatencies[0][a][p] = p == NCCL_PROTO_LL ? 0.6 : p == NCCL_PROTO_LL128 ? 1.25 : 4.0;
      k->hwLatencies[1][a][p] = p == NCCL_PROTO_LL ? 1.0 : p == NCCL_PROTO_LL128 ? 1.9 : 4.0;
      k->hwLatencies[2][a][p] = p == NCCL_PROTO_LL ? 5.0 : p == NCCL_PROTO_LL128 ? 8.4 : 14.0;
    }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) {
      k->llMaxBws[i][j] = 39.0;
      k->perChMaxRingLL128Bws[i][j] = 20.0;
      k->perChMaxTreeLL128Bws[i][j] = 20.0;
      k->perChMaxTreeBws[i][j] = 24.0;
      k->perChMaxNVLSTreeBws[i][j] = 24.0;
    }
}

int acl_sim_rank_comm_init(rank_drv_t *d, int c, char *err, size_t errlen)
{
  const acl_sim_opts_t *o = d->w->o;
  comm_rank_t *cr = &d->comms[c];
  uint64_t id = acl_sim_comm_id(d->w->ctl, c, cr->gen);
  char name[64];
  int first = -1;
  for (size_t i = 0; i < d->w->step->ncalls; i++)
    if (d->w->step->calls[i].comm == c) {
      first = d->w->step->calls[i].group;
      break;
    }
  snprintf(name, sizeof(name), "%s-%d", first >= 0 ? acl_sim_group_name(first) : "idle", c);
  if (d->pl->prof || d->pl->prof6) {
    /* v6 (NCCL 2.30) has v5's init, stopEvent, recordEventState, finalize;
     * every communicator gets the process's one mask (whatever it holds). */
    ncclResult_t rc = (d->pl->prof6 ? d->pl->prof6->init : d->pl->prof->init)(
        &cr->pctx, id, &sim_event_mask, name, o->nhosts, o->nranks, d->rank, acl_sim_logger);
    if (rc != ncclSuccess) {
      /* NCCL disables the profiler for this communicator and goes on. */
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "init", rc);
      cr->pctx = NULL;
    } else {
      cr->pinit = true;
    }
  }
  if (d->pl->tuner_version) {
    ncclResult_t rc;
    size_t nr = (size_t)o->nranks, nn = (size_t)o->nhosts;
    if (d->pl->tuner_version >= 5) {
      ncclNvlDomainInfo_v5_t nvl = {o->nhosts, o->nranks / o->nhosts,
                                    (o->nranks + o->nhosts - 1) / o->nhosts};
      ncclTunerConstants_v5_t k;
      fill_constants(&k);
      rc = (d->pl->t6 ? d->pl->t6->init : d->pl->t5->init)(&cr->tctx, id, nr, nn, acl_sim_logger,
                                                           &nvl, &k);
    } else if (d->pl->tuner_version == 4) {
      rc = d->pl->t4->init(nr, nn, acl_sim_logger, &cr->tctx);
    } else if (d->pl->tuner_version == 3) {
      rc = d->pl->t3->init(nr, nn, acl_sim_logger, &cr->tctx);
    } else {
      rc = d->pl->t2->init(nr, nn, acl_sim_logger, &cr->tctx);
    }
    if (rc != ncclSuccess) {
      /* NCCL fails communicator creation: the job cannot go on. */
      acl_sim_rank_note_error(d, "rank %d: tuner %s returned %d", "init", rc);
      snprintf(err, errlen, "rank %d: tuner init of communicator %d returned %d", d->rank, c,
               (int)rc);
      return -1;
    }
    cr->tinit = true;
  }
  return 0;
}

void acl_sim_rank_comm_fini(rank_drv_t *d, int c)
{
  comm_rank_t *cr = &d->comms[c];
  if (cr->tinit) {
    ncclResult_t rc;
    switch (d->pl->tuner_version) {
    case 6:
      rc = d->pl->t6->finalize(cr->tctx);
      break;
    case 5:
      rc = d->pl->t5->finalize(cr->tctx);
      break;
    case 4:
      rc = d->pl->t4->destroy(cr->tctx);
      break;
    case 3:
      rc = d->pl->t3->destroy(cr->tctx);
      break;
    default:
      rc = d->pl->t2->destroy(cr->tctx);
      break;
    }
    if (rc != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: tuner %s returned %d", "finalize", rc);
    cr->tinit = false;
  }
  if (cr->pinit) {
    ncclResult_t rc = (d->pl->prof6 ? d->pl->prof6->finalize : d->pl->prof->finalize)(cr->pctx);
    if (rc != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "finalize", rc);
    cr->pinit = false;
  }
}

/* The spellings NCCL puts in profiler descriptors (ncclAlgoStr/ncclProtoStr),
 * not autoccl's upper-case names. */
static const char *const nccl_algo_str[ACL_NUM_ALGO] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
static const char *const nccl_proto_str[ACL_NUM_PROTO] = {"LL", "LL128", "Simple"};

/* Profiler v6 (NCCL 2.30) or v5: v6's descriptor holds v5's members at v5's
 * offsets (core/abi.h), so NCCL 2.30 hands the same bytes in a v6 one. */
static ncclResult_t prof_start(rank_drv_t *d, void *ctx, void **h, ncclProfilerEventDescr_v5_t *e)
{
  if (!d->pl->prof6)
    return d->pl->prof->startEvent(ctx, h, e);
  ncclProfilerEventDescr_v6_t e6;
  memcpy(&e6, e, sizeof e6);
  return d->pl->prof6->startEvent(ctx, h, &e6);
}

static ncclResult_t (*prof_stop(rank_drv_t *d))(void *)
{
  return d->pl->prof6 ? d->pl->prof6->stopEvent : d->pl->prof->stopEvent;
}

void acl_sim_rank_api_events(rank_drv_t *d, const acl_sim_call_t *call, bool captured)
{
  comm_rank_t *cr = &d->comms[call->comm];
  if (!cr->pinit)
    return;
  /* NCCL 2.28 src/plugin/profiler.cc: the masks that start each event */
  const int group_mask = ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi |
                         ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl |
                         ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |
                         ncclProfileKernelCh | ncclProfileNetPlugin;
  const int coll_mask = ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp |
                        ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin;
  void *gh = NULL, *ch = NULL;
  ncclResult_t rc;
  if (d->api_mask & group_mask) {
    ncclProfilerEventDescr_v5_t g;
    memset(&g, 0, sizeof(g));
    g.type = ncclProfileGroupApi;
    g.rank = d->rank;
    g.groupApi.graphCaptured = captured;
    if ((rc = prof_start(d, cr->pctx, &gh, &g)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "startEvent(GroupApi)", rc);
  }
  if (d->api_mask & coll_mask) {
    ncclProfilerEventDescr_v5_t e;
    memset(&e, 0, sizeof(e));
    e.type = ncclProfileCollApi;
    e.parentObj = gh;
    e.rank = d->rank;
    e.collApi.func = acl_coll_name(call->coll);
    e.collApi.count =
        acl_sim_count_from_bytes(call->coll, call->nbytes, d->w->o->nranks, ACL_SIM_DTYPE_BYTES);
    e.collApi.datatype = "ncclFloat32";
    e.collApi.graphCaptured = captured;
    if ((rc = prof_start(d, cr->pctx, &ch, &e)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "startEvent(CollApi)", rc);
    if (ch && (rc = prof_stop(d)(ch)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "stopEvent(CollApi)", rc);
  }
  if (gh && (rc = prof_stop(d)(gh)) != ncclSuccess)
    acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "stopEvent(GroupApi)", rc);
}

void acl_sim_rank_prof_events(rank_drv_t *d, const acl_sim_call_t *call, uint64_t start_ns,
                              uint64_t dur_ns)
{
  comm_rank_t *cr = &d->comms[call->comm];
  if (!cr->pinit)
    return;
  int nch = acl_sim_rank_channels_used(d, call);
  uint64_t seq = cr->seq[call->coll]++;
  void *coll_h = NULL;
  ncclResult_t rc;
  if (d->api_mask & ncclProfileColl) {
    ncclProfilerEventDescr_v5_t e;
    memset(&e, 0, sizeof(e));
    e.type = ncclProfileColl;
    e.rank = d->rank;
    e.coll.seqNumber = seq;
    e.coll.func = acl_coll_name(call->coll);
    e.coll.count =
        acl_sim_count_from_bytes(call->coll, call->nbytes, d->w->o->nranks, ACL_SIM_DTYPE_BYTES);
    e.coll.datatype = "ncclFloat32"; /* ncclDatatypeToString spelling */
    e.coll.nChannels = (uint8_t)nch;
    e.coll.nWarps = 16;
    e.coll.algo = nccl_algo_str[d->ran.algo];
    e.coll.proto = nccl_proto_str[d->ran.proto];
    if ((rc = prof_start(d, cr->pctx, &coll_h, &e)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "startEvent(Coll)", rc);
    /* NCCL stops the Coll event at launch, before the proxy reports the
     * kernel's channels; the plugin must keep the handle for its children. */
    if (coll_h && (rc = prof_stop(d)(coll_h)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "stopEvent(Coll)", rc);
  }
  if (!(d->api_mask & ncclProfileKernelCh))
    return;
  /* --stale-stamps: NCCL reads each channel's stamps from a ring of 64; on
   * one H200 it handed out old ones for hundreds of calls at a time. */
  uint64_t slot = cr->nkch++ % 64, rs = cr->ring_start[slot], rd = cr->ring_dur[slot];
  cr->ring_start[slot] = start_ns;
  cr->ring_dur[slot] = dur_ns;
  bool repeat = false, early = false;
  if (cr->stale_left == 0 && d->w->o->stale_stamps > 0) {
    d->stale_rng = acl_sim_mix(d->stale_rng);
    if ((double)(d->stale_rng >> 11) * 0x1.0p-53 < d->w->o->stale_stamps / 256.0) {
      cr->stale_left = 256;
      cr->stale_runs++;
    }
  }
  if (cr->stale_left > 0) {
    cr->stale_left--;
    repeat = cr->stale_runs % 2 == 1 && rd > 0;
    early = !repeat && start_ns > 63000000ull;
  }
  if (repeat) {
    start_ns = rs;
    dur_ns = rd;
  }
  uint64_t skew = dur_ns / 8;
  for (int ch = 0; ch < nch; ch++) {
    /* Channel 0 spans the whole call; the others start a little later and
     * stop a little earlier, as real channels do. */
    uint64_t s = start_ns + (ch ? (uint64_t)(ch % 4) * skew / 4 : 0);
    uint64_t t = start_ns + dur_ns - (ch ? (uint64_t)(ch % 3) * skew / 3 : 0);
    if (early && ch == nch - 1)
      s = start_ns - 63000000ull;
    ncclProfilerEventDescr_v5_t e;
    memset(&e, 0, sizeof(e));
    e.type = ncclProfileKernelCh;
    e.parentObj = coll_h;
    e.rank = d->rank;
    e.kernelCh.channelId = (uint8_t)ch;
    e.kernelCh.pTimer = s;
    void *h = NULL;
    if ((rc = prof_start(d, cr->pctx, &h, &e)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "startEvent(KernelCh)", rc);
    if (!h)
      continue;
    ncclProfilerEventStateArgs_v5_t a;
    memset(&a, 0, sizeof(a));
    a.kernelCh.pTimer = t;
    if ((rc = (d->pl->prof6 ? d->pl->prof6->recordEventState : d->pl->prof->recordEventState)(
             h, ncclProfilerKernelChStop, &a)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d",
                              "recordEventState(KernelChStop)", rc);
    if ((rc = prof_stop(d)(h)) != ncclSuccess)
      acl_sim_rank_note_error(d, "rank %d: profiler %s returned %d", "stopEvent(KernelCh)", rc);
  }
}
