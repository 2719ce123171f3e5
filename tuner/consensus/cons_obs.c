/* Rank consensus: samples (fastest local rank per call), snapshots, stats
 * and the test hook. Decisions are in consensus.c. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tuner/consensus/cons_int.h"

/* ---- samples, snapshot, stats --------------------------------------------- */

static void feed_locked(cons_wl_t *w, cons_slot_t *s)
{
  if (!w->disabled) {
    /* the samples' lag: how long before the latest block began the call was */
    uint64_t nb = atomic_load_explicit(&w->nblocks, memory_order_relaxed), call = s->call1 - 1;
    cons_blk_t b;
    uint64_t behind = nb && cons_ring_read(w, nb - 1, &b) && b.start > call ? b.start - call : 0;
    w->dirty = 1;
    acl_search_observe(&w->search,
                       &(acl_search_obs_t){.cand_id = s->cand_id,
                                           .seconds = s->seconds,
                                           .overlap = s->overlap,
                                           .cupti = s->cupti,
                                           .behind = behind > UINT32_MAX ? UINT32_MAX
                                                                         : (uint32_t)behind,
                                           .call = s->call1});
    w->dirty = 0;
    w->samples_fed++;
    if (s->slowest > ACL_CONS_SKEW_RATIO * s->seconds)
      w->samples_skewed++;
  }
  memset(s, 0, sizeof(*s));
}

/* Every local rank reports each sampled call; the sample is the fastest
 * rank's kernel time. A rank's kernel runs from its own arrival to the end
 * of the collective, so the ranks that arrived early measure the wait for
 * the last one (at 10-20 us collectives as large as the collective); the
 * last to arrive measures the collective alone (docs/profiler.md). */
/* Called with the lock held. */
static void sample_locked(cons_hdr_t *h, cons_wl_t *w, const acl_cons_obs_t *o)
{
  uint64_t call_idx = o->call_idx;
  if (call_idx < (uint64_t)w->search.params.warmup_calls)
    return; /* a warm-up call (CUPTI samples every call): GPU warm-up, not the config */
  cons_slot_t *s = &w->slots[call_idx % ACL_CONS_SLOTS];
  if (s->call1 && s->call1 != call_idx + 1) {
    if (s->call1 > call_idx + 1) { /* slot recycled by a newer call: late */
      w->samples_dropped++;
      w->samples_late++;
      return;
    }
    /* A rank never reported the older call (no profiler on that rank, a
     * lost event): fed all the same, or such a communicator would starve. */
    w->samples_partial++;
    feed_locked(w, s);
  }
  if (!s->call1) {
    s->call1 = call_idx + 1;
    s->cand_id = o->cand_id;
    s->seconds = (float)o->seconds;
    s->slowest = (float)o->seconds;
    s->overlap = o->overlap;
    s->cupti = o->cupti != 0;
    s->nrep = 1;
  } else if (s->cand_id != o->cand_id) {
    w->samples_dropped++; /* ranks ran different candidates: never averaged */
    return;
  } else {
    if ((float)o->seconds < s->seconds) {
      s->seconds = (float)o->seconds;
      s->overlap = o->overlap;
      s->cupti = o->cupti != 0;
    }
    if ((float)o->seconds > s->slowest)
      s->slowest = (float)o->seconds;
    s->nrep++;
  }
  if (s->nrep >= h->attached)
    feed_locked(w, s);
}

void acl_cons_observe(acl_cons_t *c, const acl_cons_obs_t *o)
{
  if (!c || !o || o->widx >= (uint32_t)c->set.max_workloads || o->seconds > 1e6)
    return;
  /* channel facts: NCCL's own count and pair (the search keeps the first),
   * or a clamped request (facts about other runs add nothing) */
  bool fact = o->ran_nch > 0 && (o->cand_id == ACL_SEARCH_CAND_NCCL || o->want_nch > o->ran_nch);
  if (!fact && !(o->seconds >= 0.0))
    return;
  if (!cons_leader_here(c))
    return; /* follower hosts: the leader host's samples drive the search */
  if (cons_lock_try(c, c->hdr) != 0)
    return; /* never waits for a stalled holder: counted, and named once */
  cons_hdr_t *h = c->hdr;
  if (o->widx >= atomic_load_explicit(&h->nworkloads, memory_order_relaxed))
    goto out;
  cons_wl_t *w = cons_wl(h, o->widx);
  if (fact) {
    w->dirty = 1;
    acl_search_observe(&w->search, &(acl_search_obs_t){.cand_id = o->cand_id,
                                                       .seconds = -1.0,
                                                       .ran_algo = o->ran_algo,
                                                       .ran_proto = o->ran_proto,
                                                       .ran_nch = o->ran_nch});
    w->dirty = 0;
  }
  if (o->seconds >= 0.0)
    sample_locked(h, w, o);
out:
  cons_unlock(h);
}

/* What a follower host shows for w: the search's own figures. */
acl_relay_fig_t cons_figures_locked(const cons_wl_t *w)
{
  acl_relay_fig_t f = {0};
  if (w->disabled)
    return f;
  acl_search_report_t r;
  acl_search_report(&w->search, &r);
  f.baseline_seconds = r.baseline_seconds > 0 ? (float)r.baseline_seconds : 0.0f;
  f.best_seconds = r.best_seconds > 0 ? (float)r.best_seconds : 0.0f;
  if (r.speedup > 0) {
    f.speedup = (float)r.speedup;
    f.paired = r.speedup_paired && r.speedup_lo > 0;
    f.speedup_lo = f.paired ? (float)r.speedup_lo : 0.0f;
    f.speedup_hi = f.paired ? (float)r.speedup_hi : 0.0f;
  }
  f.source = r.source < ACL_NUM_SOURCES ? r.source : 0;
  return f;
}

/* Workload i's figures (the lock held). */
static void wl_stats_locked(acl_cons_t *c, bool lead, uint32_t i, cons_wl_t *w,
                            acl_cons_wl_stats_t *o)
{
  memset(o, 0, sizeof(*o));
  o->rank = c->rank;
  o->widx = i;
  o->key = w->key;
  o->phase = (acl_phase_t)w->phase;
  uint64_t nb = atomic_load_explicit(&w->nblocks, memory_order_relaxed);
  cons_blk_t b;
  if (nb && cons_ring_read(w, nb - 1, &b))
    o->current = b.cand;
  else
    o->current.algo = ACL_ALGO_NCCL;
  if (w->disabled)
    return;
  /* The leader host's search (also after rank 0 left: the ranks that
   * finalize later still report it); follower hosts hold blocks and the
   * leader's figures. */
  if (!lead && w->nblocks_search == 0) {
    const acl_relay_fig_t *f = &w->lead_fig;
    o->has_baseline = f->baseline_seconds > 0;
    o->baseline_seconds = f->baseline_seconds;
    o->has_best = f->best_seconds > 0;
    o->best_seconds = f->best_seconds;
    o->has_speedup = f->speedup > 0;
    o->speedup = f->speedup;
    o->has_speedup_ci = f->paired && f->speedup_lo > 0;
    o->speedup_lo = f->speedup_lo;
    o->speedup_hi = f->speedup_hi;
    o->source = f->source;
    return;
  }
  acl_search_report_t r;
  acl_search_report(&w->search, &r);
  o->phase = r.phase;
  o->current = r.current;
  o->best = r.best;
  o->baseline = r.baseline;
  o->has_baseline = r.baseline_seconds > 0;
  o->baseline_seconds = r.baseline_seconds;
  o->baseline_kept_seconds = r.baseline_kept_seconds;
  o->has_best = r.best_seconds > 0;
  o->best_seconds = r.best_seconds;
  o->has_speedup = r.speedup > 0;
  o->speedup = r.speedup;
  o->has_speedup_ci = r.speedup_paired && r.speedup_lo > 0;
  o->speedup_lo = r.speedup_lo;
  o->speedup_hi = r.speedup_hi;
  o->has_busbw = r.busbw > 0;
  o->busbw = r.busbw;
  o->has_overlap = r.overlap >= 0;
  o->overlap = r.overlap >= 0 ? r.overlap : 0;
  o->candidates_evaluated = r.candidates_evaluated;
  o->calls_to_converge = r.calls_to_converge;
  o->retunes = r.retunes;
  o->retune_cause = r.retune_cause;
  o->budget_wait_calls = r.budget_wait_calls;
  o->budget_wait_for = r.budget_wait_for;
  o->clock_offset_seconds = r.clock_offset_seconds;
  o->source = r.source;
  o->samples = r.samples;
  o->traj_len = acl_search_trajectory(&w->search, o->traj, ACL_CONS_TRAJ);
}

int acl_cons_snapshot_each(acl_cons_t *c, acl_cons_comm_stats_t *comm,
                           void (*each)(void *user, const acl_cons_wl_stats_t *w), void *user,
                           int max)
{
  if (!c)
    return 0;
  bool lead = cons_leader_here(c);
  if (comm) {
    comm->id = c->comm_id;
    comm->rank = c->rank;
    comm->nranks = c->nranks;
    comm->nnodes = c->nnodes;
    comm->decider = lead;
    comm->wait_seconds = (double)atomic_load_explicit(&c->wait_ns, memory_order_relaxed) * 1e-9;
    comm->blocks_published = atomic_load_explicit(&c->blocks_published, memory_order_relaxed);
    comm->lock_acquisitions = atomic_load_explicit(&c->lock_acq, memory_order_relaxed);
    comm->samples_busy = atomic_load_explicit(&c->samples_busy, memory_order_relaxed);
    comm->workloads_refused = atomic_load_explicit(&c->refused_keys, memory_order_relaxed);
  }
  if (!each || max <= 0)
    return 0;
  if (cons_lock(c, false, ACL_CONS_OBS_LOCK_MS, NULL, 0) != 0)
    return 0;
  cons_hdr_t *h = c->hdr;
  uint32_t n = atomic_load_explicit(&h->nworkloads, memory_order_relaxed);
  if (n > (uint32_t)c->set.max_workloads) /* the header's word bounded by the mapping */
    n = (uint32_t)c->set.max_workloads;
  int k = 0;
  acl_cons_wl_stats_t o; /* one at a time: no array of them on any path */
  for (uint32_t i = 0; i < n && k < max; i++) {
    cons_wl_t *w = cons_wl(h, i);
    if (!atomic_load_explicit(&w->present, memory_order_relaxed))
      continue;
    wl_stats_locked(c, lead, i, w, &o);
    each(user, &o);
    k++;
  }
  cons_unlock(h);
  return k;
}

typedef struct into_array {
  acl_cons_wl_stats_t *ws;
  int n;
} into_array_t;

static void put_into(void *user, const acl_cons_wl_stats_t *w)
{
  into_array_t *a = user;
  a->ws[a->n++] = *w;
}

int acl_cons_snapshot(acl_cons_t *c, acl_cons_comm_stats_t *comm, acl_cons_wl_stats_t *ws, int max)
{
  into_array_t a = {.ws = ws, .n = 0};
  return acl_cons_snapshot_each(c, comm, ws ? put_into : NULL, &a, max);
}

int acl_cons_search_report(acl_cons_t *c, uint32_t widx, acl_search_report_t *out)
{
  if (!c || !out || !cons_leader_here(c) || cons_lock(c, false, ACL_CONS_OBS_LOCK_MS, NULL, 0))
    return -1;
  int rc = -1;
  if (widx < atomic_load_explicit(&c->hdr->nworkloads, memory_order_relaxed)) {
    acl_search_report(&cons_wl(c->hdr, widx)->search, out);
    rc = 0;
  }
  cons_unlock(c->hdr);
  return rc;
}

void acl_cons_stats(acl_cons_t *c, acl_cons_stats_t *st)
{
  memset(st, 0, sizeof(*st));
  if (!c)
    return;
  st->lock_acquisitions = atomic_load(&c->lock_acq);
  st->blocks_published = atomic_load(&c->blocks_published);
  st->relay_calls = atomic_load(&c->relay_calls);
  st->sealed = cons_sealed(c);
  st->samples_busy = atomic_load(&c->samples_busy);
  st->refused_here = atomic_load(&c->refused_keys);
  st->wait_seconds = (double)atomic_load(&c->wait_ns) * 1e-9;
  st->role = cons_leader_here(c) ? CONS_ROLE_DECIDER : CONS_ROLE_FOLLOWER;
  snprintf(st->shm_name, sizeof(st->shm_name), "%s", c->map ? c->map->name : "");
  if (cons_lock(c, false, ACL_CONS_OBS_LOCK_MS, NULL, 0) == 0) {
    st->refused = c->hdr->refused;
    st->recoveries = c->hdr->recoveries;
    st->attached = c->hdr->attached;
    st->nworkloads = atomic_load(&c->hdr->nworkloads);
    for (uint32_t i = 0; i < st->nworkloads && i < (uint32_t)c->set.max_workloads; i++) {
      const cons_wl_t *w = cons_wl(c->hdr, i);
      st->samples_fed += w->samples_fed;
      st->samples_late += w->samples_late;
      st->samples_partial += w->samples_partial;
      st->samples_skewed += w->samples_skewed;
    }
    cons_unlock(c->hdr);
  }
}

void acl_cons_set_endpoint(acl_cons_t *c, int local_rank, int http_port)
{
  if (!c || cons_lock(c, false, ACL_CONS_OBS_LOCK_MS, NULL, 0) != 0)
    return;
  cons_hdr_t *h = c->hdr;
  for (uint32_t i = 0; i < cons_nprocs(h); i++)
    if (h->procs[i].pid == getpid()) {
      h->procs[i].http_port = http_port;
      h->procs[i].local_rank = local_rank;
    }
  cons_unlock(h);
}

int acl_cons_peers(acl_cons_t *c, acl_cons_peer_t *out, int max)
{
  if (!c || cons_lock(c, false, ACL_CONS_OBS_LOCK_MS, NULL, 0) != 0)
    return -1;
  cons_hdr_t *h = c->hdr;
  int k = 0;
  for (uint32_t i = 0; i < cons_nprocs(h) && k < max; i++)
    out[k++] = (acl_cons_peer_t){.pid = h->procs[i].pid,
                                 .local_rank = h->procs[i].local_rank,
                                 .http_port = h->procs[i].http_port};
  cons_unlock(h);
  return k;
}

int acl_cons_test_hold_lock(acl_cons_t *c, uint32_t widx)
{
  if (!c || cons_lock(c, false, c->timeout_ms, NULL, 0) != 0)
    return -1;
  if (widx < (uint32_t)c->set.max_workloads && widx < atomic_load(&c->hdr->nworkloads))
    cons_wl(c->hdr, widx)->dirty = 1;
  return 0; /* lock kept on purpose */
}
