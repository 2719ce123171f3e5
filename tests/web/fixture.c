/* acl-web-fixture: the real endpoint serving a synthetic but realistic
 * snapshot (several communicators and workloads in every state, search
 * trajectories, some values unknown). Prints "PORT <n>", publishes SSE
 * events every --interval-ms while advancing an exploring workload, and
 * stops cleanly on SIGTERM or SIGINT. Used by the tests and the benchmark. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "observe/observe.h"
#include "web/server.h"

typedef struct fixture {
  pthread_mutex_t mu;
  acl_snapshot_t *snap;
  uint64_t rng;
  double t0;
} fixture_t;

static double urand(fixture_t *f)
{
  f->rng ^= f->rng << 13;
  f->rng ^= f->rng >> 7;
  f->rng ^= f->rng << 17;
  return (double)(f->rng >> 11) / 9007199254740992.0;
}

/* Synthetic landscape: busbw of a candidate, unimodal in channels. */
static double model_busbw(const acl_candidate_t *c, uint64_t nbytes)
{
  double peak = 1.6e11 * (double)nbytes / ((double)nbytes + 2e6);
  if (c->algo == ACL_ALGO_NCCL)
    return peak * 0.85;
  double sub = (c->algo == 1 ? 1.0 : 0.9) * (c->proto == 2 ? 1.0 : c->proto == 1 ? 0.93 : 0.6);
  double ch = c->nchannels > 0 ? c->nchannels : 16;
  double shape = exp(-pow(log(ch / 24.0), 2) / 0.8);
  return peak * sub * (0.6 + 0.4 * shape);
}

static void add_samples(fixture_t *f, acl_snap_workload_t *w, int n, double busbw)
{
  double factor = acl_busbw_factor(w->key.coll, 8);
  for (int i = 0; i < n; i++) {
    double secs = (double)w->key.nbytes * factor / busbw * (1.0 + 0.1 * urand(f)) + 5e-6;
    int b = acl_hist_bucket(secs);
    if (b < ACL_HIST_N) /* beyond the last bound: only in dur_count (+Inf) */
      w->hist[b]++;
    w->dur_count++;
    w->dur_sum += secs;
    w->calls++;
    w->bytes += w->key.nbytes;
  }
}

static void traj_push(fixture_t *f, acl_snap_workload_t *w, const acl_candidate_t *c)
{
  uint32_t step = w->traj_len ? w->traj[w->traj_len - 1].step + 1 : 0;
  if (w->traj_len == ACL_SNAP_TRAJ) {
    memmove(&w->traj[0], &w->traj[1], sizeof(w->traj[0]) * (ACL_SNAP_TRAJ - 1));
    w->traj_len--;
  }
  acl_traj_point_t *t = &w->traj[w->traj_len++];
  memset(t, 0, sizeof(*t));
  t->step = step;
  t->cand_id = (uint16_t)step;
  t->cand = *c;
  t->busbw = (float)(model_busbw(c, w->key.nbytes) * (0.97 + 0.06 * urand(f)));
  t->overlap = (float)(0.05 + 0.3 * urand(f));
  w->current = *c;
  w->busbw = t->busbw;
  w->has_busbw = true;
  w->overlap = t->overlap;
  w->has_overlap = true;
  w->candidates_evaluated++;
  double secs = (double)w->key.nbytes * acl_busbw_factor(w->key.coll, 8) / t->busbw;
  if (!w->has_best || secs < w->best_seconds) {
    w->best = *c;
    w->best_seconds = secs;
    w->has_best = true;
  }
  if (w->has_baseline) {
    w->speedup = w->baseline_seconds / w->best_seconds;
    w->has_speedup = true;
  }
  add_samples(f, w, 5, t->busbw);
}

/* Net value as the plugin computes it (core/netvalue.h): each trajectory
 * point after the baseline stands for 5 exploration calls at its busbw, and
 * `decided` calls ran the best. */
static void price(acl_snap_workload_t *w, uint64_t decided)
{
  acl_netvalue_t nv = {0};
  uint64_t n = 0;
  double sec = 0.0;
  for (int i = 1; i < w->traj_len; i++) {
    n += 5;
    sec += 5.0 * (double)w->key.nbytes * acl_busbw_factor(w->key.coll, 8) / w->traj[i].busbw;
  }
  acl_nv_fold(&nv, n, n, sec, decided, w->has_baseline, w->baseline_seconds, w->has_best,
              w->best_seconds);
  w->has_net = nv.priced;
  w->time_saved_seconds = acl_nv_net(&nv);
  w->exploration_cost_seconds = nv.cost_seconds;
  /* Exposed time as the plugin estimates it: the calls at the best time,
   * the share the overlap leaves (unknown when the overlap is). */
  w->has_exposed = w->has_overlap && w->has_best;
  w->collective_seconds = w->has_exposed ? (double)(n + decided) * w->best_seconds : 0.0;
  w->exposed_share = w->has_exposed ? 1.0 - w->overlap : 0.0;
  w->exposed_seconds = w->collective_seconds * w->exposed_share;
}

/* Next candidate of a toy coordinate descent: channels 8..32 over the subspaces. */
static acl_candidate_t next_cand(const acl_snap_workload_t *w)
{
  static const int8_t aps[][2] = {{1, 2}, {1, 1}, {0, 2}, {0, 1}, {1, 0}};
  uint32_t k = w->traj_len ? w->traj[w->traj_len - 1].step + 1 : 0;
  acl_candidate_t c = {.algo = aps[(k / 5) % 5][0],
                       .proto = aps[(k / 5) % 5][1],
                       .nchannels = (int16_t)(8 + 6 * (k % 5))};
  return c;
}

static acl_snap_workload_t *add_wl(acl_snapshot_t *s, int comm, int coll, uint64_t nbytes,
                                   acl_phase_t ph)
{
  acl_snap_workload_t *w = &s->workloads[s->nworkloads++];
  memset(w, 0, sizeof(*w));
  w->comm = comm;
  w->rank = comm >= 0 && comm < s->ncomms ? s->comms[comm].rank : -1;
  w->key.comm_id = comm >= 0 && comm < s->ncomms ? s->comms[comm].id : 0xdeadbeefULL;
  w->key.coll = (uint8_t)coll;
  w->key.nbytes = nbytes;
  w->key.num_pipe_ops = 1;
  w->phase = ph;
  w->current.algo = ACL_ALGO_NCCL;
  return w;
}

static void set_baseline(fixture_t *f, acl_snap_workload_t *w)
{
  acl_candidate_t nccl = {.algo = ACL_ALGO_NCCL};
  w->baseline = nccl;
  w->has_baseline = true;
  double bw = model_busbw(&nccl, w->key.nbytes);
  w->baseline_seconds = (double)w->key.nbytes * acl_busbw_factor(w->key.coll, 8) / bw;
  traj_push(f, w, &nccl);
  w->candidates_evaluated = 0;
}

static void build(fixture_t *f, int extra)
{
  acl_snapshot_t *s = f->snap;
  s->version = ACL_SNAPSHOT_VERSION;
  snprintf(s->hostname, sizeof(s->hostname), "fixture-node");
  s->pid = 4242;
  s->local_rank = 0;
  snprintf(s->mode, sizeof(s->mode), "online");
  snprintf(s->profiler.source, sizeof(s->profiler.source), "cupti");
  s->profiler.cupti_available = true;
  s->profiler.sample_latency_seconds = -1; /* unknown */
  static const struct {
    uint64_t id;
    const char *name, *role;
    int rank, nranks, nnodes;
  } comms[] = {
      {0x1a2b3c4d5e6f7081ULL, "dp", "decider", 0, 8, 1},
      {0x0badc0ffee000002ULL, "tp", "decider", 1, 2, 1},
      {0x00000000cafe0003ULL, "pp \"stage\\0\"", "follower", 3, 4, 2},
      {0x7777000011112222ULL, "", "off", -1, 2, 1}, /* no profiler ABI: rank unknown */
  };
  s->ncomms = 4;
  for (int i = 0; i < 4; i++) {
    acl_snap_comm_t *c = &s->comms[i];
    c->id = comms[i].id;
    snprintf(c->name, sizeof(c->name), "%s",
             comms[i].name[0] ? comms[i].name : "0x7777000011112222");
    snprintf(c->role, sizeof(c->role), "%s", comms[i].role);
    c->rank = comms[i].rank;
    c->nranks = comms[i].nranks;
    c->nnodes = comms[i].nnodes;
    c->consensus_wait_seconds = i == 3 ? -1 : 0.0012 * (i + 1);
    c->blocks_published = 37u * (unsigned)(i + 1);
    c->lock_acquisitions = 40u * (unsigned)(i + 1);
  }
  acl_snap_workload_t *w;
  w = add_wl(s, 0, 4, 32u << 20, ACL_PHASE_EXPLORING); /* the one that moves */
  set_baseline(f, w);
  for (int i = 0; i < 17; i++) {
    acl_candidate_t c = next_cand(w);
    traj_push(f, w, &c);
  }
  w = add_wl(s, 0, 2, 4u << 20, ACL_PHASE_CONVERGED);
  set_baseline(f, w);
  for (int i = 0; i < 12; i++) {
    acl_candidate_t c = next_cand(w);
    traj_push(f, w, &c);
  }
  w->current = w->best;
  w->calls_to_converge = 85;
  price(w, 4000);
  w = add_wl(s, 0, 3, 64u << 10, ACL_PHASE_WARMUP); /* nothing known yet */
  w->calls = 3;
  w->bytes = 3u * (64u << 10);
  w = add_wl(s, 1, 4, 1u << 30, ACL_PHASE_RETUNING);
  set_baseline(f, w);
  for (int i = 0; i < 9; i++) {
    acl_candidate_t c = next_cand(w);
    traj_push(f, w, &c);
  }
  w->retunes = 1;
  price(w, 2000);
  w = add_wl(s, 1, 0, 8u << 20, ACL_PHASE_BASELINE);
  add_samples(f, w, 4, 1.2e11);
  w = add_wl(s, 2, 1, 2u << 20, ACL_PHASE_DISABLED);
  add_samples(f, w, 10, 0.9e11);
  w = add_wl(s, 3, 4, 256u << 10, ACL_PHASE_EXPLORING);
  set_baseline(f, w);
  for (int i = 0; i < 6; i++) {
    acl_candidate_t c = next_cand(w);
    traj_push(f, w, &c);
  }
  w->has_overlap = false; /* overlap unknown (no CUPTI on that comm) */
  /* once a step, waiting for its communicator's first profiler events */
  w = add_wl(s, 0, 2, 250u << 20, ACL_PHASE_WAIT_BUDGET);
  w->calls = 183;
  w->bytes = 183u * (250ull << 20);
  w->budget_wait_calls = 975;
  w->budget_wait_for = ACL_WAIT_FOR_FIRST_EVENTS;
  for (int i = 0; i < extra && s->nworkloads < ACL_SNAP_MAX_WORKLOADS; i++) {
    w = add_wl(s, i % 3, 4, (uint64_t)(1 + i) << 12, ACL_PHASE_CONVERGED);
    set_baseline(f, w);
    acl_candidate_t c = next_cand(w);
    traj_push(f, w, &c);
    price(w, 100);
  }
  price(&s->workloads[0], 0);
  s->profiler.records = 1000;
  s->profiler.samples = 990;
}

static void tick(fixture_t *f, acl_web_t *web, unsigned n)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  pthread_mutex_lock(&f->mu);
  acl_snapshot_t *s = f->snap;
  acl_snap_workload_t *w = &s->workloads[0];
  acl_candidate_t c = next_cand(w);
  traj_push(f, w, &c);
  price(w, 0);
  s->profiler.records += 12;
  s->profiler.samples += 5;
  s->comms[0].blocks_published++;
  s->comms[0].consensus_wait_seconds += 1e-5;
  s->uptime_seconds = acl_mono_s() - f->t0;
  acl_render_event_json(s, w, &sb);
  pthread_mutex_unlock(&f->mu);
  if (acl_sb_ok(&sb))
    acl_web_publish(web, n % 4 == 3 ? "decision" : "sample", sb.data);
  acl_sb_free(&sb);
}

static void render_metrics(void *user, acl_strbuf_t *out)
{
  fixture_t *f = user;
  pthread_mutex_lock(&f->mu);
  f->snap->uptime_seconds = acl_mono_s() - f->t0;
  acl_render_metrics(f->snap, out);
  pthread_mutex_unlock(&f->mu);
}

static void render_state(void *user, acl_strbuf_t *out)
{
  fixture_t *f = user;
  pthread_mutex_lock(&f->mu);
  f->snap->uptime_seconds = acl_mono_s() - f->t0;
  acl_render_state_json(f->snap, out);
  pthread_mutex_unlock(&f->mu);
}

static int usage(const char *msg)
{
  fprintf(stderr,
          "acl-web-fixture: %s\n"
          "usage: acl-web-fixture [--bind ADDR] [--port N] [--interval-ms N] [--workloads N]\n",
          msg);
  return 2;
}

int main(int argc, char **argv)
{
  const char *bind = "127.0.0.1";
  long port = 0, interval = 250, extra = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--bind") == 0 && v)
      bind = v;
    else if (strcmp(a, "--port") == 0 && v && acl_parse_int(v, 0, 65535, &port))
      ;
    else if (strcmp(a, "--interval-ms") == 0 && v && acl_parse_int(v, 0, 60000, &interval))
      ;
    else if (strcmp(a, "--workloads") == 0 && v &&
             acl_parse_int(v, 0, ACL_SNAP_MAX_WORKLOADS, &extra))
      ;
    else
      return usage(v ? "bad argument or value" : "missing value");
    i++;
  }
  acl_log_set_prefix("acl-web-fixture");
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by the server threads */

  int rc = 1;
  fixture_t f = {.rng = 0x9e3779b97f4a7c15ULL, .t0 = acl_mono_s()};
  pthread_mutex_init(&f.mu, NULL);
  f.snap = calloc(1, sizeof(*f.snap));
  if (!f.snap) {
    fprintf(stderr, "acl-web-fixture: out of memory\n");
    goto out;
  }
  build(&f, (int)extra);
  acl_web_source_t src = {
      .user = &f, .render_metrics = render_metrics, .render_state = render_state};
  char err[256];
  acl_web_t *web = acl_web_start(bind, (int)port, &src, err, sizeof(err));
  if (!web) {
    fprintf(stderr, "acl-web-fixture: %s\n", err);
    goto out;
  }
  printf("PORT %d\n", acl_web_port(web));
  fflush(stdout);
  unsigned n = 0;
  for (;;) {
    struct timespec to = {interval / 1000, (interval % 1000) * 1000000L};
    if (interval == 0)
      to.tv_sec = 3600;
    int sig = sigtimedwait(&set, NULL, &to);
    if (sig == SIGTERM || sig == SIGINT)
      break;
    if (sig < 0 && errno == EAGAIN && interval > 0)
      tick(&f, web, n++);
  }
  acl_web_stop(web);
  rc = 0;
out:
  free(f.snap);
  pthread_mutex_destroy(&f.mu);
  return rc;
}
