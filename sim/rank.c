/* A rank process: loads the plugin and plays NCCL's part for one or more
 * ranks (per communicator: profiler init, tuner init; per call: cost table,
 * getCollInfo, selection, profiler events; at the end finalize). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/shm.h"
#include "profiler/simfeed.h"
#include "sim/nccl_model.h"
#include "sim/sim.h"

#include "sim/rank_int.h"

static void sleep_s(double s)
{
  if (s <= 0)
    return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void acl_sim_rank_note_error(rank_drv_t *d, const char *fmt, const char *what, int rc)
{
  d->slot->plugin_errors++;
  if (!d->slot->error[0])
    snprintf(d->slot->error, sizeof(d->slot->error), fmt, d->rank, what, rc);
}

/* The enqueue of a call (collTaskAppend): NCCL reads the process's event
 * mask now and stamps it on the task, then emits the API events; the
 * tuner is asked later, at ncclGroupEnd, so what it sets applies from the
 * next enqueue on. `nth` counts the calls of the same communicator already
 * enqueued in this group. */
void acl_sim_rank_enqueue(rank_drv_t *d, const acl_sim_call_t *call, int nth)
{
  const acl_sim_opts_t *o = d->w->o;
  comm_rank_t *cr = &d->comms[call->comm];
  uint64_t k = cr->ncalls + (uint64_t)nth;
  d->api_mask = acl_sim_event_mask();
  d->captured = o->capture_every && k % o->capture_every == o->capture_every - 1;
  if (o->nranks > 1) /* a one-rank collective never reaches collTaskAppend */
    acl_sim_rank_api_events(d, call, d->captured);
}

/* getCollInfo and NCCL's choice: sets d->ran / d->failed_call. */
void acl_sim_rank_decide(rank_drv_t *d, const acl_sim_call_t *call)
{
  const acl_sim_opts_t *o = d->w->o;
  const acl_landscape_t *land = d->w->land;
  comm_rank_t *cr = &d->comms[call->comm];
  acl_candidate_t def;
  acl_land_nccl_default(land, call->coll, call->nbytes, o->nranks, &def);
  d->failed_call = false;
  if (o->nranks == 1) { /* NCCL copies locally (ncclLaunchOneRank): no choice, no error */
    d->ran = def;
    return;
  }
  uint32_t valid = 0;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      if (acl_land_valid(land, call->coll, call->nbytes, o->nranks, a, p))
        valid |= ACL_AP_BIT(a, p);
  float table[ACL_NUM_ALGO][ACL_NUM_PROTO];
  acl_sim_cost_table(table, call->coll, call->nbytes, o->nranks, o->nhosts, valid, def.algo,
                     def.proto);
  int nch = 0, v2_algo = NCCL_ALGO_UNDEF, v2_proto = NCCL_PROTO_UNDEF;
  ncclResult_t rc = ncclSuccess;
  d->failed_call = false;
  d->nccl_left = false;
  if (cr->tinit && o->nranks > 1) { /* NCCL skips the tuner for 1 rank */
    double t0 = acl_mono_s();
    switch (d->pl->tuner_version) {
    case 6:
      rc = d->pl->t6->getCollInfo(cr->tctx, (ncclFunc_t)call->coll, call->nbytes, 1,
                                  (float **)table, ACL_NUM_ALGO, ACL_NUM_PROTO, 0, &nch);
      break;
    case 5:
      rc = d->pl->t5->getCollInfo(cr->tctx, (ncclFunc_t)call->coll, call->nbytes, 1,
                                  (float **)table, ACL_NUM_ALGO, ACL_NUM_PROTO, 0, &nch);
      break;
    case 4:
      rc = d->pl->t4->getCollInfo(cr->tctx, (ncclFunc_t)call->coll, call->nbytes, 1,
                                  (float **)table, ACL_NUM_ALGO, ACL_NUM_PROTO, 0, &nch);
      break;
    case 3:
      rc = d->pl->t3->getCollInfo(cr->tctx, (ncclFunc_t)call->coll, call->nbytes, 1,
                                  (float **)table, ACL_NUM_ALGO, ACL_NUM_PROTO, &nch);
      break;
    default:
      rc = d->pl->t2->getCollInfo(cr->tctx, (ncclFunc_t)call->coll, call->nbytes, 0,
                                  (valid & ACL_AP_BIT(NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE)) != 0, 1,
                                  &v2_algo, &v2_proto, &nch);
      break;
    }
    d->slot->gci_seconds += acl_mono_s() - t0;
  }
  if (rc != ncclSuccess) {
    /* NCCL fails the collective with the plugin's error. */
    acl_sim_rank_note_error(d, "rank %d: tuner %s returned %d", "getCollInfo", rc);
    d->failed_call = true;
    return;
  }
  int a, p;
  if (v2_algo >= 0 && v2_algo < ACL_NUM_ALGO && v2_proto >= 0 && v2_proto < ACL_NUM_PROTO &&
      table[v2_algo][v2_proto] >= 0) {
    a = v2_algo;
    p = v2_proto;
  } else if (!acl_sim_select(table, &a, &p)) {
    acl_sim_rank_note_error(d, "rank %d: %s left no usable algorithm/protocol (%d)", "getCollInfo",
                            0);
    d->failed_call = true;
    return;
  }
  d->nccl_left = a == def.algo && p == def.proto && nch == 0;
  d->ran.algo = (int8_t)a;
  d->ran.proto = (int8_t)p;
  /* Replay: what NCCL ran (built channels, its own cut for LL at small sizes). */
  d->ran.nchannels =
      (int16_t)(acl_land_is_replay(land)
                    ? acl_land_exec_channels(land, call->coll, call->nbytes, a, p, nch)
                    : acl_sim_clamp_channels(nch, acl_land_max_channels(land)));
  d->ran.chunk_log2 = 0;
  if (d->pl->t6 && cr->tinit && o->nranks > 1 && d->pl->t6->getChunkSize) {
    /* NCCL 2.30 sizes the chunks after choosing: its own chunk in, the
     * tuner's out, clamped to the buffer (enqueue.cc calcCollChunking). */
    size_t own = acl_sim_nccl_chunk(a, p), got = own;
    int8_t k = 0;
    rc = d->pl->t6->getChunkSize(
        cr->tctx, (ncclFunc_t)call->coll, call->nbytes, a, p,
        d->ran.nchannels > 0 ? d->ran.nchannels : acl_sim_rank_channels_used(d, call), &got);
    if (rc != ncclSuccess || acl_sim_chunk_ran(a, p, own, got, &k) != 0) {
      acl_sim_rank_note_error(d, "rank %d: tuner %s returned %d (or a chunk that rounds to 0)",
                              "getChunkSize", rc);
      d->failed_call = true;
      return;
    }
    d->ran.chunk_log2 = k;
  }
}

static void log_call(rank_drv_t *d)
{
  acl_sim_logent_t e = {0};
  if (d->failed_call) {
    e.algo = e.proto = -1;
    e.flags = ACL_SIM_LOG_ERROR;
  } else {
    e.algo = d->ran.algo;
    e.proto = d->ran.proto;
    e.nchannels = d->ran.nchannels;
    e.chunk_log2 = (int8_t)d->ran.chunk_log2;
    e.flags = (uint8_t)((d->captured ? ACL_SIM_LOG_CAPTURED : 0u) |
                        (d->nccl_left ? ACL_SIM_LOG_NCCL : 0u));
  }
  if (fwrite(&e, sizeof(e), 1, d->log) != 1 && !d->slot->error[0])
    snprintf(d->slot->error, sizeof(d->slot->error), "rank %d: writing decision log: %s", d->rank,
             strerror(errno));
  atomic_fetch_add(&d->slot->calls, 1);
}

/* Simulated seconds of the call: the slowest rank's noisy draw. Every rank
 * draws all ranks' noise from per-call seeds, so all agree without talking. */

static uint64_t call_seed(const rank_drv_t *d, const acl_sim_call_t *call)
{
  return acl_sim_mix(d->w->o->seed ^ acl_sim_mix(d->w->ctl->comm_ids[call->comm])) ^
         acl_sim_mix(d->comms[call->comm].ncalls);
}

/* The slowest rank's noise factor of the call with seed `base`. */
static double noise_worst(const acl_sim_opts_t *o, uint64_t base)
{
  double worst = 0;
  for (int r = 0; r < o->nranks; r++) {
    uint64_t rng = acl_sim_mix(base + (uint64_t)r);
    double f = o->noise > 0 ? acl_land_noise(&rng, o->noise) : 1.0;
    if (f > worst)
      worst = f;
  }
  return worst;
}

/* The same call as NCCL ships: its own choice on the same draw, no
 * profiler events, no set-up of configs it would not run. */
static double nccl_alone_at(const rank_drv_t *d, const acl_sim_call_t *call, double level)
{
  const acl_sim_opts_t *o = d->w->o;
  const acl_landscape_t *land = d->w->land;
  acl_candidate_t def;
  acl_land_nccl_default(land, call->coll, call->nbytes, o->nranks, &def);
  uint64_t base = call_seed(d, call);
  if (acl_land_is_replay(land))
    return acl_land_draw(land, call->coll, call->nbytes, o->nranks, &def, level, base, NULL);
  return acl_land_time(land, call->coll, call->nbytes, o->nranks, &def, level) *
         noise_worst(o, base);
}

/* How much longer every config of this call runs at its place in the step. */
static double place_factor(const acl_sim_call_t *call)
{
  return call->slow > 1.0f ? (double)call->slow : 1.0;
}

static double nccl_alone_seconds(const rank_drv_t *d, const acl_sim_call_t *call, double level)
{
  return place_factor(call) * nccl_alone_at(d, call, level);
}

static double call_seconds_at(rank_drv_t *d, const acl_sim_call_t *call, double level,
                              double *mine)
{
  const acl_sim_opts_t *o = d->w->o;
  const acl_landscape_t *land = d->w->land;
  uint64_t base = call_seed(d, call);
  if (acl_land_is_replay(land)) {
    /* A recorded iteration: every rank's time, skew and outliers together;
     * plus the first use's set-up and the profiler events' cost. */
    double pr[ACL_SIM_MAX_RANKS];
    comm_rank_t *cr = &d->comms[call->comm];
    double worst = acl_land_draw(land, call->coll, call->nbytes, o->nranks, &d->ran, level, base,
                                 o->nranks <= ACL_SIM_MAX_RANKS ? pr : NULL);
    *mine = o->nranks <= ACL_SIM_MAX_RANKS ? pr[d->rank] : worst;
    double extra = 0;
    int a = d->ran.algo, need = acl_sim_rank_channels_used(d, call);
    if (!cr->connected) { /* the communicator's own set-up: not replayed */
      cr->connected = true;
      cr->conn[a] = (int16_t)need;
    } else if (need > cr->conn[a]) {
      extra +=
          acl_land_connect_seconds(land, call->coll, call->nbytes, level, a, cr->conn[a], need);
      cr->conn[a] = (int16_t)need;
    }
    if (d->api_mask & (ncclProfileColl | ncclProfileKernelCh))
      extra += acl_land_event_seconds(land, call->coll, call->nbytes);
    return worst + extra;
  }
  double t = acl_land_time(land, call->coll, call->nbytes, o->nranks, &d->ran, level);
  double worst = noise_worst(o, base);
  *mine = t * worst;
  return t * worst;
}

static double call_seconds(rank_drv_t *d, const acl_sim_call_t *call, double level, double *mine)
{
  double f = place_factor(call), sec = call_seconds_at(d, call, level, mine);
  *mine *= f;
  return sec * f;
}

int acl_sim_rank_channels_used(rank_drv_t *d, const acl_sim_call_t *call)
{
  if (d->ran.nchannels > 0)
    return d->ran.nchannels;
  acl_candidate_t def;
  acl_land_nccl_default(d->w->land, call->coll, call->nbytes, d->w->o->nranks, &def);
  int n = def.algo == d->ran.algo && def.proto == d->ran.proto && def.nchannels > 0
              ? def.nchannels
              : acl_land_max_channels(d->w->land);
  return n < 1 ? 1 : n > 255 ? 255 : n;
}

/* "Runs" the decided call: advances the GPU clock, emits profiler events,
 * logs the decision. Returns simulated seconds. */
double acl_sim_rank_run(rank_drv_t *d, const acl_sim_call_t *call, double level)
{
  double sec = 0;
  if (!d->failed_call) {
    double mine = 0;
    sec = call_seconds(d, call, level, &mine);
    if (d->w->o->nranks > 1) { /* one rank: NCCL copies, nothing to choose */
      d->slot->ran_seconds += sec;
      d->slot->nccl_alone_seconds += nccl_alone_seconds(d, call, level);
    }
    /* the profiler sees this rank's own kernel time; the clock moves by the
     * slowest rank's (collectives synchronise) */
    uint64_t own_ns = (uint64_t)(mine * 1e9), dur_ns = (uint64_t)(sec * 1e9);
    if (own_ns < 1)
      own_ns = 1;
    if (dur_ns < own_ns)
      dur_ns = own_ns;
    if (!d->captured) /* its kernel runs at the graph's replays, not now */
      acl_sim_rank_prof_events(d, call, d->clock_ns, own_ns);
    d->clock_ns += dur_ns;
  }
  d->comms[call->comm].ncalls++;
  log_call(d);
  return sec;
}

/* Commits this thread's ranks to `step`; false when the run stops before it.
 * Progress is stored before the stop flag is read, and the parent raises the
 * flag before reading progress, so no rank can slip past the agreed stop. */
static bool commit_step(rank_drv_t *ds, int n, uint64_t step)
{
  acl_sim_ctl_t *ctl = ds[0].w->ctl;
  for (int i = 0; i < n; i++)
    atomic_store(&ds[i].slot->progress, step);
  if (atomic_load(&ctl->stopping))
    while (atomic_load(&ctl->stop_step) == UINT64_MAX)
      sleep_s(0.001);
  uint64_t stop = atomic_load(&ctl->stop_step);
  return step < stop;
}

/* Collectives synchronise: a rank cannot get further ahead of the slowest
 * rank than what stays queued on its GPU (and training syncs every step).
 * Waits until every rank has completed call `g - max_lag`. */
static void lag_window(const rank_drv_t *d, uint64_t g)
{
  const acl_sim_opts_t *o = d->w->o;
  if (g < o->max_lag)
    return;
  uint64_t need = g - o->max_lag;
  for (int spins = 0;; spins++) {
    bool ok = true;
    for (int r = 0; r < o->nranks && ok; r++)
      ok = atomic_load(&d->w->ctl->rank[r].calls) >= need;
    if (ok)
      return;
    if (spins < 64)
      sched_yield();
    else
      sleep_s(20e-6);
  }
}

static void jitter(rank_drv_t *d)
{
  double us = d->w->o->host_jitter_us;
  if (us <= 0)
    return;
  d->jitter_rng = acl_sim_mix(d->jitter_rng);
  sleep_s((double)(d->jitter_rng >> 11) * 0x1.0p-53 * us * 1e-6);
}

static void publish_overlap(rank_drv_t *d, double level)
{
  if (!d->feed || d->rank >= ACL_SIMFEED_MAX_RANKS)
    return;
  const acl_sim_opts_t *o = d->w->o;
  if (o->overlap_spread > 0 && o->nranks > 1)
    level *= 1.0 - o->overlap_spread * d->rank / (o->nranks - 1);
  atomic_store(&d->feed->overlap_milli[d->rank], (uint32_t)lround(level * 1000.0));
  atomic_store(&d->feed->compute_kernels[d->rank], level > 0 ? 2u : 0u);
}

/* Drives ranks ds[0..n) from the calling thread (n > 1 only in group mode). */
static void drive(rank_drv_t *ds, int n)
{
  const acl_sim_world_t *w = ds[0].w;
  /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): set for every rank before */
  const acl_sim_opts_t *o = w->o;
  for (int i = 0; i < n; i++)
    atomic_store(&ds[i].slot->state, 1u);
  for (uint64_t step = 0; commit_step(ds, n, step); step++) {
    double level = acl_sim_interf_level(&o->interf, step);
    for (int i = 0; i < n; i++)
      publish_overlap(&ds[i], level);
    if (o->churn_every && step > 0 && step % o->churn_every == 0)
      acl_sim_rank_churn(ds, n, o->group_mode || o->ranks_per_proc == 1);
    for (size_t k = 0; k < w->step->ncalls;) {
      const acl_sim_call_t *grp[ACL_SIM_GROUP_MAX];
      int m = acl_sim_group_at(w->step, k, step, grp);
      lag_window(&ds[0], step * w->step->ncalls + k);
      jitter(&ds[0]);
      double sec = 0;
      if (m == 1) {
        /* NCCL group semantics: every rank's getCollInfo, then the launches. */
        for (int i = 0; i < n; i++) {
          acl_sim_rank_enqueue(&ds[i], grp[0], 0);
          acl_sim_rank_decide(&ds[i], grp[0]);
        }
        for (int i = 0; i < n; i++) {
          double s = acl_sim_rank_run(&ds[i], grp[0], level);
          sec = s > sec ? s : sec;
        }
      } else {
        for (int i = 0; i < n; i++)
          sec = fmax(sec, acl_sim_rank_group(&ds[i], grp, m, level));
      }
      k += (size_t)m;
      if (o->realtime)
        sleep_s(sec * o->slowdown);
    }
    for (int i = 0; i < n; i++) {
      ds[i].clock_ns += (uint64_t)(o->step_compute_s * 1e9);
      ds[i].slot->steps_done = step + 1;
    }
    if (o->realtime)
      sleep_s(o->step_compute_s * o->slowdown);
  }
  for (int i = 0; i < n; i++)
    atomic_store(&ds[i].slot->state, 2u);
}

static void *drive_thread(void *arg)
{
  drive((rank_drv_t *)arg, 1);
  return NULL;
}

static acl_simfeed_t *feed_open(const char *name)
{
  if (!name[0])
    return NULL;
  int fd;
  struct stat st;
  char why[200];
  if (acl_shm_open_own(name, &fd, &st, why, sizeof(why)) != ACL_SHM_OK ||
      (size_t)st.st_size < sizeof(acl_simfeed_t)) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  void *m = mmap(NULL, sizeof(acl_simfeed_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return m == MAP_FAILED ? NULL : m;
}

static void set_env_int(const char *name, long v)
{
  char b[32];
  snprintf(b, sizeof(b), "%ld", v);
  setenv(name, b, 1);
}

int acl_sim_proc_main(const acl_sim_world_t *w, int proc)
{
  const acl_sim_opts_t *o = w->o;
  int rpp = o->ranks_per_proc, first = proc * rpp, n = rpp;
  if (first + n > o->nranks)
    n = o->nranks - first;
  int procs_per_host = (o->nranks / o->nhosts + rpp - 1) / rpp;
  int ranks_per_host = o->nranks / o->nhosts;
  int host = first / ranks_per_host, local = proc - host * procs_per_host;
  acl_sim_plugin_t pl;
  rank_drv_t *ds = calloc((size_t)n, sizeof(*ds));
  pthread_t *th = calloc((size_t)n, sizeof(*th));
  acl_simfeed_t *feed = NULL;
  int status = ACL_SIM_EXIT_FAILED, inited = 0, started = 0;
  char err[512] = "";
  if (!ds || !th) {
    snprintf(err, sizeof(err), "out of memory");
    goto fail_alloc;
  }
  /* What the plugin reads from the environment for this process. */
  set_env_int("AUTOCCL_LOCAL_RANK", local);
  if (o->port >= 0)
    set_env_int("AUTOCCL_HTTP_PORT", o->port + host * procs_per_host);
  if (o->nhosts > 1) {
    set_env_int("AUTOCCL_SHM_SALT", host);
    char coord[64];
    snprintf(coord, sizeof(coord), "127.0.0.1:%d", o->coord_port);
    setenv("AUTOCCL_COORDINATOR", coord, 1);
  }
  setenv("AUTOCCL_SIM_FEED", w->feed_name, 1);
  char report[320];
  acl_sim_report_path(w, proc, true, report, sizeof(report));
  setenv("AUTOCCL_REPORT", report, 1); /* the simulator's report is the plugin's */
  acl_sim_logger_setup(o->verbose, first);
  feed = feed_open(w->feed_name);
  if (acl_sim_plugin_load(o->plugin, o->nccl230 ? 6 : 5, &pl, err, sizeof(err)) != 0)
    goto fail_alloc;
  for (int i = 0; i < n; i++) {
    rank_drv_t *d = &ds[i];
    d->w = w;
    d->pl = &pl;
    d->feed = feed;
    d->rank = first + i;
    d->host = host;
    d->slot = &w->ctl->rank[d->rank];
    d->clock_ns = w->ctl->start_clock_ns;
    d->jitter_rng = acl_sim_mix(o->seed * 31 + (uint64_t)d->rank);
    d->stale_rng = acl_sim_mix(o->seed * 37 + (uint64_t)d->rank + 1);
    inited = i + 1; /* whatever is opened below is released at fail_ranks */
    d->comms = calloc((size_t)o->ncomms, sizeof(*d->comms));
    char path[300];
    snprintf(path, sizeof(path), "%s/rank%d.log", w->logdir, d->rank);
    d->log = fopen(path, "wb");
    if (!d->comms || !d->log) {
      snprintf(err, sizeof(err), "rank %d: cannot open %s: %s", d->rank, path, strerror(errno));
      goto fail_ranks;
    }
    setvbuf(d->log, NULL, _IOFBF, 1 << 16);
  }
  /* Communicator creation, rank by rank on this thread (ncclCommInitAll
   * style): per communicator the profiler init, then the tuner init. */
  for (int c = 0; c < o->ncomms; c++)
    for (int i = 0; i < n; i++)
      if (acl_sim_rank_comm_init(&ds[i], c, err, sizeof(err)) != 0)
        goto fail_comms;
  if (o->group_mode || n == 1) {
    drive(ds, n);
  } else {
    for (; started < n; started++)
      if (pthread_create(&th[started], NULL, drive_thread, &ds[started]) != 0) {
        snprintf(err, sizeof(err), "cannot start a rank thread");
        break;
      }
    for (int i = 0; i < started; i++)
      pthread_join(th[i], NULL);
    if (started < n)
      goto fail_comms;
  }
  for (int i = 0; i < n; i++)
    if (fflush(ds[i].log) != 0) {
      snprintf(err, sizeof(err), "rank %d: writing decision log: %s", ds[i].rank, strerror(errno));
      goto fail_comms;
    }
  /* Keep the plugin (and its endpoint) alive until the parent has read it. */
  while (!atomic_load(&w->ctl->release) && getppid() == w->parent_pid)
    sleep_s(0.002);
  status = ACL_SIM_EXIT_OK;
fail_comms:
  for (int c = o->ncomms - 1; c >= 0; c--)
    for (int i = 0; i < n; i++)
      acl_sim_rank_comm_fini(&ds[i], c);
fail_ranks:
  for (int i = 0; i < inited; i++) {
    if (ds[i].log && fclose(ds[i].log) != 0 && status == ACL_SIM_EXIT_OK) {
      snprintf(err, sizeof(err), "rank %d: closing decision log: %s", ds[i].rank, strerror(errno));
      status = ACL_SIM_EXIT_FAILED;
    }
    free(ds[i].comms);
  }
  acl_sim_plugin_unload(&pl);
fail_alloc:
  if (feed)
    munmap(feed, sizeof(*feed));
  for (int i = 0; i < n; i++) {
    acl_sim_rank_slot_t *s = &w->ctl->rank[first + i];
    if (status != ACL_SIM_EXIT_OK && !s->error[0])
      snprintf(s->error, sizeof(s->error), "%.255s", err);
    atomic_store(&s->state, status == ACL_SIM_EXIT_OK ? 3u : 4u);
  }
  free(th);
  free(ds);
  return status;
}
