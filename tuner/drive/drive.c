/* One workload played through rank consensus (drive.h). */
#include "tuner/drive/drive.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRIVE_QUEUE 64 /* samples in flight beyond the fixed lag's (late by up to max_lag calls) */

typedef struct pend {
  int rank;
  uint64_t due; /* delivered once the driver reaches this call */
  uint64_t call;
  uint32_t widx;
  uint16_t cand_id;
  acl_candidate_t cand;
  double seconds;
  float overlap;
  bool cupti; /* a window's sample: CUPTI's clock */
  acl_drive_ran_t ran;
} pend_t;

struct acl_drive {
  acl_cons_t *cons[ACL_DRIVE_MAX_RANKS];
  int nranks;
  acl_wkey_t key;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  acl_config_t cfg;
  int max_lag, lag_calls;
  uint32_t lag_from;
  double skew;
  bool per_call;
  uint32_t window_calls, window_period, window_phase;
  int window_lag_calls;
  double window_clock_s;
  uint64_t rng;
  uint64_t next;      /* the next call index */
  uint64_t block_num; /* the block the last step ran in, +1 (0: none yet) */
  bool events_left;   /* the mask the last call left: the next call carries events */
  uint32_t widx;
  pend_t *q;
  int nq, qcap;
  /* per rank: samples due but still in the profiler's buffer (buffer > 0) */
  int buffer;
  pend_t *held[ACL_DRIVE_MAX_RANKS];
  int nheld[ACL_DRIVE_MAX_RANKS];
  int fill[ACL_DRIVE_MAX_RANKS]; /* the buffer's level: starts at the rank's phase */
};

static uint64_t mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static double unif(uint64_t *s)
{
  *s = mix(*s + 0x9e3779b97f4a7c15ull);
  return (double)(*s >> 11) * 0x1.0p-53;
}

acl_drive_t *acl_drive_create(const acl_drive_params_t *p, char *err, size_t errlen)
{
  static atomic_uint serial;
  if (!p || p->nranks < 1 || p->nranks > ACL_DRIVE_MAX_RANKS || p->buffer < 0 ||
      p->buffer > ACL_DRIVE_MAX_BUFFER || p->lag_calls < 0 || p->lag_calls > ACL_DRIVE_MAX_BUFFER ||
      p->window_lag_calls < 0 || p->window_lag_calls > ACL_DRIVE_MAX_BUFFER ||
      (p->window_calls > 0 &&
       (p->window_period <= p->window_calls || p->window_phase >= p->window_period)) ||
      !(p->window_clock_s >= 0.0 && p->window_clock_s < 1.0)) {
    snprintf(err, errlen,
             "drive: bad parameters (ranks 1..%d, buffer and lags 0..%d, a window shorter "
             "than its period and its phase within it, its clock 0..1 s)",
             ACL_DRIVE_MAX_RANKS, ACL_DRIVE_MAX_BUFFER);
    return NULL;
  }
  acl_drive_t *d = calloc(1, sizeof(*d));
  if (!d) {
    snprintf(err, errlen, "drive: out of memory");
    return NULL;
  }
  if (p->cfg)
    d->cfg = *p->cfg;
  else
    acl_config_defaults(&d->cfg);
  d->cfg.mode = ACL_MODE_ONLINE;
  d->cfg.max_workloads = 1; /* one workload: a small segment */
  d->nranks = p->nranks;
  d->max_lag = p->max_lag;
  d->lag_calls = p->lag_calls;
  d->lag_from = p->lag_from;
  d->skew = p->skew;
  d->per_call = p->per_call;
  d->window_calls = p->window_calls;
  d->window_period = p->window_period;
  d->window_phase = p->window_phase;
  d->window_lag_calls = p->window_lag_calls;
  d->window_clock_s = p->window_clock_s;
  d->rng = mix(p->seed ^ 0x5eedull);
  d->events_left = true; /* NCCL's mask starts full: the first call carries events */
  /* every call of a block may be sampled: a fixed lag keeps that many in flight per rank */
  d->qcap = DRIVE_QUEUE + p->nranks * (p->lag_calls > 0 ? p->lag_calls : 0);
  d->q = malloc(sizeof(pend_t) * (size_t)d->qcap);
  if (!d->q) {
    snprintf(err, errlen, "drive: out of memory");
    goto fail;
  }
  d->buffer = p->buffer;
  for (int r = 0; d->buffer > 0 && r < d->nranks; r++) {
    d->held[r] = malloc(sizeof(pend_t) * (size_t)d->buffer);
    if (!d->held[r]) {
      snprintf(err, errlen, "drive: out of memory");
      goto fail;
    }
    d->fill[r] = r * d->buffer / d->nranks; /* each process's own phase, spread evenly */
  }
  memcpy(d->cost, p->cost, sizeof(d->cost));
  /* A segment of its own per driver: the name is salted with the pid and a
   * serial, so parallel tests and successive runs never share one. */
  unsigned n = atomic_fetch_add(&serial, 1);
  char ns[32];
  snprintf(ns, sizeof ns, "drv%d.%u", (int)getpid(), n);
  uint64_t comm = mix((uint64_t)getpid() << 32 ^ n) | 1;
  d->key = (acl_wkey_t){
      .comm_id = comm, .nbytes = p->nbytes, .num_pipe_ops = 1, .coll = (uint8_t)p->coll};
  for (int r = 0; r < d->nranks; r++) {
    acl_cons_params_t cp = {.comm_id = comm,
                            .nranks = d->nranks,
                            .nnodes = 1,
                            .rank = r,
                            .cfg = &d->cfg,
                            .shm_ns = ns,
                            .chunk_axis = p->chunk_axis};
    d->cons[r] = acl_cons_create(&cp, err, errlen);
    if (!d->cons[r])
      goto fail;
  }
  d->widx = ACL_CONS_WIDX_NONE;
  return d;
fail:
  acl_drive_destroy(d);
  return NULL;
}

void acl_drive_destroy(acl_drive_t *d)
{
  if (!d)
    return;
  for (int r = 0; r < d->nranks; r++) {
    acl_cons_destroy(d->cons[r]);
    free(d->held[r]);
  }
  free(d->q);
  free(d);
}

/* The one place the driver hands a sample to consensus: what the plugin's
 * sample sink does with a profiler sample (tuner/plugin/plugin.c). */
static void submit(acl_drive_t *d, const pend_t *s)
{
  bool own = s->cand.algo == ACL_ALGO_NCCL;
  acl_cons_observe(d->cons[s->rank], &(acl_cons_obs_t){.widx = s->widx,
                                                       .call_idx = s->call,
                                                       .cand_id = s->cand_id,
                                                       .want_nch = own ? 0 : s->cand.nchannels,
                                                       .seconds = s->seconds,
                                                       .overlap = s->overlap,
                                                       .ran_algo = s->ran.algo,
                                                       .ran_proto = s->ran.proto,
                                                       .ran_nch = s->ran.nchannels,
                                                       .cupti = s->cupti});
}

/* A due sample reaches consensus, or its rank's buffer, which goes in
 * whole once full. */
static void due(acl_drive_t *d, const pend_t *s)
{
  if (d->buffer <= 0) {
    submit(d, s);
    return;
  }
  int r = s->rank;
  d->held[r][d->nheld[r]++] = *s;
  if (++d->fill[r] < d->buffer && d->nheld[r] < d->buffer)
    return;
  for (int i = 0; i < d->nheld[r]; i++)
    submit(d, &d->held[r][i]);
  d->nheld[r] = 0;
  d->fill[r] = 0;
}

/* Delivers what is due by call k, in the order measured (as a profiler). */
static void deliver(acl_drive_t *d, uint64_t k)
{
  int w = 0;
  for (int i = 0; i < d->nq; i++) {
    if (d->q[i].due <= k)
      due(d, &d->q[i]);
    else
      d->q[w++] = d->q[i];
  }
  d->nq = w;
}

/* Calls from k on that no CUPTI window covers (0: k is in one). */
static uint64_t calls_to_window(const acl_drive_t *d, uint64_t k)
{
  if (d->window_calls == 0)
    return UINT64_MAX;
  uint64_t at = (k + d->window_phase) % d->window_period;
  return at < d->window_calls ? 0 : d->window_period - at;
}

int acl_drive_next(acl_drive_t *d, uint64_t max_calls, acl_drive_step_t *out, char *err,
                   size_t errlen)
{
  if (!d || !out || max_calls == 0 || d->nranks < 1 || d->nranks > ACL_DRIVE_MAX_RANKS) {
    snprintf(err, errlen, "drive: bad arguments");
    return -1;
  }
  uint64_t k = d->next;
  deliver(d, k);
  acl_decision_t dec[ACL_DRIVE_MAX_RANKS] = {0};
  for (int r = 0; r < d->nranks; r++) {
    if (acl_cons_decide(d->cons[r], &d->key, d->cost, &dec[r], err, errlen) != 0)
      return -1;
    if (dec[r].call_idx != k || dec[r].cand_id != dec[0].cand_id ||
        dec[r].sample_shift != dec[0].sample_shift) {
      snprintf(err, errlen, "drive: rank %d decided call %llu differently from rank 0", r,
               (unsigned long long)dec[r].call_idx);
      return -1;
    }
  }
  out->d = dec[0];
  out->call = k;
  /* a window samples whatever the mask; the warm-up's samples are dropped
   * by the search anyway (as the plugin's CUPTI ones are) */
  out->events = d->events_left || calls_to_window(d, k) == 0;
  d->widx = dec[0].widx;
  /* The plugin's gate: the decision of call k sets the mask call k+1
   * carries, by the sampling rule of k's block (one workload here, so its
   * own successor). Within a block that rule stays, so the calls up to the
   * next sampled one carry none and need no step of their own. */
  uint8_t shift = dec[0].sample_shift;
  uint64_t n = 1;
  if (!d->per_call) {
    uint64_t upto = acl_search_next_sampled(shift, k); /* first call after k with events */
    uint64_t want = upto - k - 1, gap = calls_to_window(d, k + 1);
    if (want > gap)
      want = gap; /* the window's calls are sampled: each its own step */
    if (want > max_calls - 1)
      want = max_calls - 1;
    if (want > 0) {
      n += acl_cons_skip(d->cons[0], &d->key, want);
      for (int r = 1; r < d->nranks; r++)
        if (acl_cons_skip(d->cons[r], &d->key, n - 1) != n - 1) {
          snprintf(err, errlen, "drive: rank %d's block ends elsewhere than rank 0's", r);
          return -1;
        }
    }
  }
  d->events_left = acl_search_sampled(shift, k + n);
  out->n = (uint32_t)n;
  d->next = k + n;
  return 0;
}

void acl_drive_sample(acl_drive_t *d, const acl_drive_step_t *st, double seconds, float overlap,
                      const acl_drive_ran_t *ran)
{
  if (!d || !st || !st->events || st->d.widx == ACL_CONS_WIDX_NONE)
    return;
  int last = (int)(unif(&d->rng) * d->nranks); /* the rank that arrived last */
  /* The collective ends on every rank at once: each rank's profiler sees it
   * the same number of calls later (the GPU's lag behind the host). */
  bool in_window = d->window_calls > 0 && calls_to_window(d, st->call) == 0;
  bool windowed = d->window_lag_calls > 0 && in_window;
  bool cupti = in_window && d->window_clock_s > 0.0;
  if (cupti)
    seconds += d->window_clock_s;
  uint64_t lag = windowed                      ? (uint64_t)d->window_lag_calls
                 : st->call < (uint64_t)d->lag_from ? 0
                                                    : (uint64_t)d->lag_calls;
  if (!windowed && d->max_lag > 0)
    lag += (uint64_t)(unif(&d->rng) * d->max_lag);
  /* NCCL's Coll event says what its own choice runs when the call is
   * enqueued, long before the GPU gets to it: a fact at once (the
   * profiler's coll hook, profiler/profiler.c) */
  if (ran && ran->nchannels > 0 && st->d.cand.algo == ACL_ALGO_NCCL)
    for (int r = 0; r < d->nranks; r++)
      submit(d, &(pend_t){.rank = r,
                          .call = st->call,
                          .widx = st->d.widx,
                          .cand_id = st->d.cand_id,
                          .cand = st->d.cand,
                          .seconds = -1.0,
                          .overlap = -1.0f,
                          .ran = *ran});
  for (int r = 0; r < d->nranks; r++) {
    if (d->nq == d->qcap) /* a full profiler queue drains */
      deliver(d, UINT64_MAX);
    double t = r == last ? seconds : seconds * (1.0 + d->skew * unif(&d->rng));
    d->q[d->nq++] = (pend_t){.rank = r,
                             .due = st->call + lag,
                             .call = st->call,
                             .widx = st->d.widx,
                             .cand_id = st->d.cand_id,
                             .cand = st->d.cand,
                             .seconds = t,
                             .overlap = overlap,
                             .cupti = cupti,
                             .ran = ran ? *ran : (acl_drive_ran_t){-1, -1, 0}};
  }
  if (lag == 0 && d->max_lag <= 0)
    deliver(d, st->call);
}

int acl_drive_report(acl_drive_t *d, acl_search_report_t *r)
{
  if (!d || d->widx == ACL_CONS_WIDX_NONE)
    return -1;
  return acl_cons_search_report(d->cons[0], d->widx, r);
}

void acl_drive_stats(acl_drive_t *d, acl_cons_stats_t *st)
{
  if (d)
    acl_cons_stats(d->cons[0], st);
}
