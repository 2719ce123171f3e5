/* Observability of the plugin: builds snapshots of every rank this process
 * holds, serves them on the endpoint and turns changes into SSE events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "observe/observe.h"
#include "profiler/overlap.h"
#include "profiler/profiler.h"
#include "tuner/consensus/consensus.h"
#include "tuner/plugin/plugin_int.h"
#include "web/server.h"

/* One snapshot buffer, reused under its own lock: renders are serialised. */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static acl_snapshot_t *snap;

/* Under acl_proc.lock, after the search filled baseline and best: prices the
 * calls sampled since the last snapshot (core/netvalue.h). */
static void fill_stats(acl_snap_workload_t *w, acl_rank_stats_t *st)
{
  w->calls = atomic_load_explicit(&st->calls, memory_order_relaxed);
  w->bytes = atomic_load_explicit(&st->bytes, memory_order_relaxed);
  w->captured_calls = atomic_load_explicit(&st->captured_calls, memory_order_relaxed);
  if (atomic_load_explicit(&st->last_captured, memory_order_relaxed)) {
    /* the views show what the graph replays, not the search's state */
    w->captured = true;
    w->current = acl_captured_cand(st);
  }
  for (int b = 0; b < ACL_HIST_N; b++)
    w->hist[b] = atomic_load_explicit(&st->hist[b], memory_order_relaxed);
  w->dur_count = atomic_load_explicit(&st->dur_count, memory_order_relaxed);
  w->dur_sum = (double)atomic_load_explicit(&st->dur_ns, memory_order_relaxed) * 1e-9;
  /* Exposed time (profiler/overlap.h): the calls since the last snapshot at
   * the current share of what runs, so the counters never go down. */
  double ovc[ACL_OV_N], ove[ACL_OV_N], kc, ke;
  for (int k = 0; k < ACL_OV_N; k++) {
    ovc[k] = (double)atomic_load_explicit(&st->ov_coll_ns[k], memory_order_relaxed) * 1e-9;
    ove[k] = (double)atomic_load_explicit(&st->ov_exposed_ns[k], memory_order_relaxed) * 1e-9;
  }
  acl_exposure_pick(ovc, ove, &kc, &ke);
  acl_exposure_fold(&st->exposure, w->calls, w->dur_count, w->dur_sum, kc, ke);
  w->has_exposed = st->exposure.collective_seconds > 0.0;
  w->collective_seconds = st->exposure.collective_seconds;
  w->exposed_seconds = st->exposure.exposed_seconds;
  w->exposed_share = w->has_exposed ? w->exposed_seconds / w->collective_seconds : 0.0;
  /* The overlap shown is this process's, as its exposed time says. The
   * search's comes from its candidate's aggregated samples, each the
   * fastest rank's: on one H200 it said 0 for FSDP's AllGather, where this
   * process's samples said 0.46 and torch.profiler 0.45. */
  if (w->has_exposed) {
    w->has_overlap = true;
    w->overlap = 1.0 - w->exposed_share;
  }
  /* Samples before calls: every sampled call read is also counted as made. */
  uint64_t esamp = atomic_load_explicit(&st->explore_sampled, memory_order_acquire);
  double esec = (double)atomic_load_explicit(&st->explore_ns, memory_order_relaxed) * 1e-9;
  uint64_t ecalls = atomic_load_explicit(&st->explore_calls, memory_order_relaxed);
  uint64_t dcalls = atomic_load_explicit(&st->decided_calls, memory_order_relaxed);
  /* The decision's calls are priced at the speedup shown (measured
   * interleaved with NCCL's choice), not at two robust times that may come
   * from different interference regimes. */
  bool paired = w->has_speedup_ci && w->has_baseline && w->speedup > 0;
  double best = paired ? w->baseline_seconds / w->speedup : w->best_seconds;
  acl_nv_fold(&st->nv, ecalls, esamp, esec, dcalls, w->has_baseline, w->baseline_seconds,
              paired || w->has_best, best);
  w->has_net = st->nv.priced;
  w->time_saved_seconds = acl_nv_net(&st->nv);
  w->exploration_cost_seconds = st->nv.cost_seconds;
}

/* The process fields of s (hostname, pid, mode, profiler), no rank yet.
 * acl_proc.lock held. */
void acl_obs_snap_head_locked(acl_snapshot_t *s)
{
  s->version = ACL_SNAPSHOT_VERSION;
  gethostname(s->hostname, sizeof(s->hostname) - 1);
  s->hostname[sizeof(s->hostname) - 1] = '\0';
  s->pid = (int)getpid();
  s->ncomms = 0;
  s->nworkloads = 0;
  s->workloads_truncated = false;
  s->local_rank = acl_proc.cfg.local_rank;
  snprintf(s->mode, sizeof(s->mode), "%s", acl_mode_name(acl_proc.cfg.mode));
  s->uptime_seconds = (double)(acl_mono_ns() - acl_proc.t0_ns) * 1e-9;
  acl_obs_snap_profiler_locked(s);
}

void acl_obs_snap_profiler_locked(acl_snapshot_t *s)
{
  memset(&s->profiler, 0, sizeof(s->profiler));
  if (acl_proc.prof) {
    acl_prof_stats_t ps;
    acl_prof_stats(acl_proc.prof, &ps);
    acl_snap_profiler_fill(&s->profiler, &ps);
  } else {
    snprintf(s->profiler.source, sizeof(s->profiler.source), "none");
  }
}

/* Consensus's figures of one workload into the next snapshot entry. */
typedef struct fill_ctx {
  acl_snap_workload_t *ws;
  int n;
} fill_ctx_t;

static void fill_one(void *user, const acl_cons_wl_stats_t *w)
{
  fill_ctx_t *f = user;
  acl_snap_workload_fill(&f->ws[f->n++], w);
}

/* Appends rank r's communicator and workloads to s. acl_proc.lock held. */
void acl_obs_snap_add_rank_locked(acl_snapshot_t *s, acl_rank_t *r)
{
  if (s->ncomms >= ACL_SNAP_MAX_COMMS)
    return;
  acl_snap_comm_t *c = &s->comms[s->ncomms];
  memset(c, 0, sizeof(*c));
  int room = ACL_SNAP_MAX_WORKLOADS - s->nworkloads;
  acl_snap_workload_t *ws = &s->workloads[s->nworkloads];
  int n = 0;
  if (r->cons) {
    acl_cons_comm_stats_t cc;
    memset(&cc, 0, sizeof(cc));
    fill_ctx_t fc = {.ws = ws, .n = 0};
    n = acl_cons_snapshot_each(r->cons, &cc, fill_one, &fc, room);
    if (n < 0)
      n = 0;
    acl_snap_comm_fill(c, &cc);
  } else {
    snprintf(c->role, sizeof(c->role), "%s",
             acl_proc.cfg.mode == ACL_MODE_ONLINE ? "failed" : acl_mode_name(acl_proc.cfg.mode));
  }
  c->id = r->comm_id;
  if (r->name[0])
    snprintf(c->name, sizeof(c->name), "%s", r->name);
  else
    snprintf(c->name, sizeof(c->name), "%016llx", (unsigned long long)r->comm_id);
  c->rank = r->rank;
  c->nranks = r->nranks;
  c->nnodes = r->nnodes;
  for (int i = 0; i < n; i++) {
    ws[i].comm = s->ncomms;
    ws[i].rank = r->rank;
    if (ws[i].widx < (uint32_t)r->nstats)
      fill_stats(&ws[i], &r->stats[ws[i].widx]);
  }
  if (n == room && room > 0)
    s->workloads_truncated = true;
  s->nworkloads += n;
  s->ncomms++;
}

/* Fills s from every live rank. Takes acl_proc.lock. */
static void snapshot_build(acl_snapshot_t *s)
{
  pthread_mutex_lock(&acl_proc.lock);
  acl_obs_snap_head_locked(s);
  for (acl_rank_t *r = acl_proc.ranks; r; r = r->next)
    if (r->has_tuner)
      acl_obs_snap_add_rank_locked(s, r);
  pthread_mutex_unlock(&acl_proc.lock);
}

static void render_with(void (*render)(const acl_snapshot_t *, acl_strbuf_t *), acl_strbuf_t *out)
{
  pthread_mutex_lock(&snap_lock);
  if (!snap)
    snap = calloc(1, sizeof(*snap));
  if (snap) {
    snapshot_build(snap);
    render(snap, out);
  } else {
    out->failed = true;
  }
  pthread_mutex_unlock(&snap_lock);
}

static void src_metrics(void *user, acl_strbuf_t *out)
{
  (void)user;
  render_with(acl_render_metrics, out);
}

static void src_state(void *user, acl_strbuf_t *out)
{
  (void)user;
  render_with(acl_render_state_json, out);
}

/* GET /api/v1/table: the decisions as a tuning table (plugin_table.c). */
static void src_table(void *user, acl_strbuf_t *out)
{
  (void)user;
  pthread_mutex_lock(&acl_proc.lock);
  acl_table_render_json_locked(out);
  pthread_mutex_unlock(&acl_proc.lock);
}

/* ---- one view per host --------------------------------------------------- */

/* Processes listed in /api/v1/host: the consensus segment records at most
 * this many per communicator (ACL_CONS_MAX_PROCS). */
#define HOST_MAX_PEERS 128

static int peer_cmp(const void *a, const void *b)
{
  const acl_cons_peer_t *x = a, *y = b;
  return x->local_rank != y->local_rank
             ? (x->local_rank > y->local_rank) - (x->local_rank < y->local_rank)
             : (x->pid > y->pid) - (x->pid < y->pid);
}

/* This host's processes: the union, by pid, of every communicator's
 * segment, this process included; sorted by local rank. */
static int host_peers(acl_cons_peer_t *out, int max)
{
  acl_cons_peer_t tmp[HOST_MAX_PEERS];
  pthread_mutex_lock(&acl_proc.lock);
  int n = 0;
  out[n++] = (acl_cons_peer_t){.pid = (int)getpid(),
                               .local_rank = acl_proc.cfg.local_rank,
                               .http_port = acl_proc.web ? acl_web_port(acl_proc.web) : 0};
  for (acl_rank_t *r = acl_proc.ranks; r; r = r->next) {
    int k = r->cons ? acl_cons_peers(r->cons, tmp, HOST_MAX_PEERS) : 0;
    for (int i = 0; i < k; i++) {
      bool seen = false;
      for (int j = 0; j < n && !seen; j++)
        seen = out[j].pid == tmp[i].pid;
      if (!seen && n < max)
        out[n++] = tmp[i];
    }
  }
  pthread_mutex_unlock(&acl_proc.lock);
  qsort(out, (size_t)n, sizeof(*out), peer_cmp);
  return n;
}

/* GET /api/v1/host (docs/api.md). A process whose endpoint is not known
 * (none, or not started yet) has "port": null. */
static void src_host(void *user, acl_strbuf_t *out)
{
  (void)user;
  acl_cons_peer_t *p = calloc(HOST_MAX_PEERS, sizeof(*p));
  if (!p) {
    out->failed = true;
    return;
  }
  int n = host_peers(p, HOST_MAX_PEERS);
  acl_snap_proc_t *procs = calloc(n > 0 ? (size_t)n : 1, sizeof(*procs));
  if (!procs) {
    free(p);
    out->failed = true;
    return;
  }
  for (int i = 0; i < n; i++)
    procs[i] =
        (acl_snap_proc_t){.local_rank = p[i].local_rank, .pid = p[i].pid, .port = p[i].http_port};
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  acl_render_host_json(host, (int)getpid(), acl_proc.cfg.local_rank, procs, n, out);
  free(procs);
  free(p);
}

static bool src_is_peer_port(void *user, int port)
{
  (void)user;
  acl_cons_peer_t *p = calloc(HOST_MAX_PEERS, sizeof(*p));
  bool found = false;
  int n = p ? host_peers(p, HOST_MAX_PEERS) : 0;
  for (int i = 0; i < n && !found; i++)
    found = p[i].http_port == port && p[i].pid != (int)getpid();
  free(p);
  return found;
}

void acl_obs_joined_locked(acl_rank_t *r)
{
  if (r && r->cons)
    acl_cons_set_endpoint(r->cons, acl_proc.cfg.local_rank,
                          acl_proc.web ? acl_web_port(acl_proc.web) : 0);
}

/* What the watcher remembers per workload to notice changes. */
typedef struct seen {
  uint64_t comm_id;
  int rank;
  uint32_t widx;
  acl_phase_t phase;
  bool captured;
  uint32_t last_step;
  int traj_len;
  acl_candidate_t best;
} seen_t;

#define WATCH_PERIOD_US 250000
#define WATCH_SLICE_US 5000 /* a finalize waits at most this long for the watcher */
#define WATCH_MAX_EVENTS 64 /* per period, so a burst can't flood clients */

static seen_t *seen_find(seen_t *tab, int n, const acl_snapshot_t *s, const acl_snap_workload_t *w)
{
  for (int i = 0; i < n; i++)
    if (tab[i].comm_id == s->comms[w->comm].id && tab[i].rank == w->rank && tab[i].widx == w->widx)
      return &tab[i];
  return NULL;
}

static void *watcher_main(void *arg)
{
  (void)arg;
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  seen_t *tab = calloc(ACL_SNAP_MAX_WORKLOADS, sizeof(*tab));
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  int nseen = 0;
  while (s && tab && !atomic_load(&acl_proc.watcher_stop)) {
    /* in slices: the last communicator's finalize joins this thread, and
     * a job that destroys and creates communicators in a loop waits for it */
    for (int t = 0; t < WATCH_PERIOD_US / WATCH_SLICE_US && !atomic_load(&acl_proc.watcher_stop);
         t++)
      usleep(WATCH_SLICE_US);
    if (atomic_load(&acl_proc.watcher_stop))
      break;
    snapshot_build(s);
    int events = 0;
    for (int i = 0; i < s->nworkloads && events < WATCH_MAX_EVENTS; i++) {
      const acl_snap_workload_t *w = &s->workloads[i];
      uint32_t step = w->traj_len ? w->traj[w->traj_len - 1].step : 0;
      seen_t *p = seen_find(tab, nseen, s, w);
      if (!p) {
        if (nseen == ACL_SNAP_MAX_WORKLOADS)
          continue;
        p = &tab[nseen++];
        *p = (seen_t){.comm_id = s->comms[w->comm].id,
                      .rank = w->rank,
                      .widx = w->widx,
                      .phase = ACL_PHASE_COUNT};
      }
      const char *ev = NULL;
      if (p->phase != w->phase || p->captured != w->captured ||
          !acl_candidate_eq(&p->best, &w->best))
        ev = "decision";
      else if (p->traj_len != w->traj_len || p->last_step != step)
        ev = "sample";
      if (!ev)
        continue;
      p->phase = w->phase;
      p->captured = w->captured;
      p->best = w->best;
      p->traj_len = w->traj_len;
      p->last_step = step;
      acl_sb_reset(&sb);
      acl_render_event_json(s, w, &sb);
      pthread_mutex_lock(&acl_proc.lock);
      if (acl_sb_ok(&sb) && acl_proc.web)
        acl_web_publish(acl_proc.web, ev, sb.data);
      pthread_mutex_unlock(&acl_proc.lock);
      events++;
    }
  }
  acl_sb_free(&sb);
  free(tab);
  free(s);
  return NULL;
}

void acl_obs_start_locked(void)
{
  const acl_config_t *cfg = &acl_proc.cfg;
  if (acl_proc.web || acl_proc.web_failed || acl_proc.obs_stopping || cfg->http_port < 0)
    return;
  int port = cfg->http_port == 0 ? 0 : cfg->http_port + cfg->local_rank;
  char err[256] = "";
  /* The scrapes' snapshot (about 1 MB) is made with the endpoint, not at
   * its first scrape: the process's memory settles when it starts, not
   * whenever a client first reads it. No server thread exists yet, so
   * snap_lock is not needed (render_with still makes it if this fails). */
  if (!snap)
    snap = calloc(1, sizeof(*snap));
  acl_web_source_t src = {.user = NULL,
                          .render_metrics = src_metrics,
                          .render_state = src_state,
                          .render_table = src_table,
                          .render_host = src_host,
                          .is_peer_port = src_is_peer_port};
  if (port > 65535) {
    snprintf(err, sizeof(err), "port %d (AUTOCCL_HTTP_PORT + local rank %d) is out of range", port,
             cfg->local_rank);
  } else {
    acl_proc.web = acl_web_start(cfg->http_bind, port, &src, err, sizeof(err));
  }
  if (!acl_proc.web) {
    /* Logged once; the job goes on without an endpoint. */
    acl_proc.web_failed = true;
    acl_warn("HTTP endpoint disabled: %s", err);
    return;
  }
  for (acl_rank_t *r = acl_proc.ranks; r; r = r->next)
    acl_obs_joined_locked(r); /* communicators that joined before it started */
  char hp[96];
  acl_info("endpoint on http://%s/ (metrics at /metrics)",
           acl_fmt_hostport(hp, sizeof(hp), cfg->http_bind, acl_web_port(acl_proc.web)));
  atomic_store(&acl_proc.watcher_stop, false);
  acl_proc.watcher_running = pthread_create(&acl_proc.watcher, NULL, watcher_main, NULL) == 0;
}

/* The server's and the watcher's threads take acl_proc.lock (inside
 * snap_lock) to build snapshots, so they are stopped with the lock dropped:
 * stopping them under it would deadlock with a scrape in flight. */
void acl_obs_stop_locked(void)
{
  if (acl_proc.obs_stopping)
    return;
  acl_web_t *w = acl_proc.web;
  bool watcher = acl_proc.watcher_running;
  acl_proc.web = NULL;
  acl_proc.watcher_running = false;
  acl_proc.web_failed = false;
  acl_proc.obs_stopping = true;
  atomic_store(&acl_proc.watcher_stop, true);
  pthread_mutex_unlock(&acl_proc.lock);
  if (watcher)
    pthread_join(acl_proc.watcher, NULL);
  acl_web_stop(w);
  pthread_mutex_lock(&snap_lock);
  free(snap);
  snap = NULL;
  pthread_mutex_unlock(&snap_lock);
  pthread_mutex_lock(&acl_proc.lock);
  acl_proc.obs_stopping = false;
}
