/* Trace recorder; see trace.h and docs/trace.md. */
#include "profiler/trace.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef ACL_HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/safefile.h"

#include "profiler/trace_int.h"

/* Bounded lock-free MPSC ring (Vyukov): a slot is free for position pos
 * when its seq == pos, full (readable) when seq == pos + 1. */
typedef struct slot {
  _Atomic uint64_t seq;
  rec_t rec;
} slot_t;

typedef struct tfile {
  int rank;
  bool full, failed;
  uint64_t bytes, dropped;
  FILE *f;
#ifdef ACL_HAVE_ZLIB
  gzFile gz;
#endif
  char path[512];
} tfile_t;

/* Decision de-duplication: (comm, rank, widx) -> last (cand_id, phase). */
#define DEDUP_N 8192
typedef struct dedup {
  _Atomic uint64_t key; /* 0 empty */
  _Atomic uint32_t val; /* cand_id << 8 | phase, +1 (0 = none yet) */
} dedup_t;

typedef struct tracer {
  slot_t *ring;
  _Atomic uint64_t tail; /* producers */
  uint64_t head;         /* the writer only */
  atomic_bool stop;
  atomic_bool done;     /* the writer closed its files and ends */
  _Atomic int inflight; /* producers inside push() */
  pthread_t thr;
  char tmpl[512];
  uint64_t max_bytes;
  unsigned flush_ms;
  char mode[32], profiler[32];
  uint64_t t0_ns;
  tfile_t files[ACL_TRACE_MAX_FILES];
  int nfiles;
  _Atomic uint64_t samples, decisions, dropped_ring, dropped_max, bytes;
  _Atomic int errors;
  dedup_t dedup[DEDUP_N];
} tracer_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* start/stop */
static int g_refs;
static _Atomic(tracer_t *) g_tr;
static acl_trace_stats_t g_last; /* stats of the last closed recorder */
static tracer_t *g_retired;      /* the last closed recorder (see stop) */

int acl_trace_expand(const char *tmpl, int pid, int rank, char *out, size_t len)
{
  size_t o = 0;
  if (!tmpl || !out || len == 0)
    return -1;
  for (const char *p = tmpl; *p; p++) {
    char tmp[24];
    const char *ins = NULL;
    if (p[0] == '%' && p[1] == 'p') {
      snprintf(tmp, sizeof(tmp), "%d", pid);
      ins = tmp;
    } else if (p[0] == '%' && p[1] == 'r') {
      if (rank < 0)
        snprintf(tmp, sizeof(tmp), "x");
      else
        snprintf(tmp, sizeof(tmp), "%d", rank);
      ins = tmp;
    } else if (p[0] == '%' && p[1] == '%') {
      ins = "%";
    }
    if (ins) {
      size_t n = strlen(ins);
      if (o + n >= len)
        return -1;
      memcpy(out + o, ins, n);
      o += n;
      p++;
      continue;
    }
    if (o + 1 >= len)
      return -1;
    out[o++] = *p;
  }
  out[o] = '\0';
  return 0;
}

/* ---- writer side ---- */

static bool ends_with(const char *s, const char *suf)
{
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

static int raw_write(tfile_t *f, const char *buf, size_t n)
{
#ifdef ACL_HAVE_ZLIB
  if (f->gz)
    return gzwrite(f->gz, buf, (unsigned)n) == (int)n ? 0 : -1;
#endif
  return fwrite(buf, 1, n, f->f) == n ? 0 : -1;
}

/* A trace is a file the plugin writes: never through a planted link, FIFO
 * or device (core/safefile.h). -1 with one warning. */
static int open_safe(tfile_t *f)
{
  char err[320];
  int fd = acl_sfile_open_stream(f->path, 0644, err, sizeof(err));
  if (fd < 0)
    acl_warn("AUTOCCL_TRACE: %s; not recording it", err);
  return fd;
}

static tfile_t *file_for(tracer_t *t, int rank)
{
  bool per_rank = strstr(t->tmpl, "%r") != NULL;
  int key = per_rank ? rank : -2;
  for (int i = 0; i < t->nfiles; i++)
    if (t->files[i].rank == key)
      return &t->files[i];
  if (t->nfiles >= ACL_TRACE_MAX_FILES)
    return NULL;
  tfile_t *f = &t->files[t->nfiles++];
  memset(f, 0, sizeof(*f));
  f->rank = key;
  if (acl_trace_expand(t->tmpl, (int)getpid(), per_rank ? rank : -1, f->path, sizeof(f->path)) !=
      0) {
    acl_warn("AUTOCCL_TRACE=%s: the expanded path is too long; not recording", t->tmpl);
    f->failed = true;
    return f;
  }
#ifdef ACL_HAVE_ZLIB
  if (ends_with(f->path, ".gz")) {
    int fd = open_safe(f);
    if (fd >= 0 && !(f->gz = gzdopen(fd, "wb1"))) {
      acl_warn("AUTOCCL_TRACE: cannot compress to %s; not recording it", f->path);
      close(fd);
    }
    f->failed = !f->gz;
    goto header;
  }
#else
  if (ends_with(f->path, ".gz"))
    acl_warn("AUTOCCL_TRACE=%s: built without zlib, writing plain text to a .gz name", f->path);
#endif
  int fd = open_safe(f);
  if (fd >= 0 && !(f->f = fdopen(fd, "w"))) {
    acl_warn("AUTOCCL_TRACE: %s: %s; not recording it", f->path, strerror(errno));
    close(fd);
  }
  if (!f->f) {
    f->failed = true;
    return f;
  }
#ifdef ACL_HAVE_ZLIB
header:
#endif
  if (f->failed)
    return f;
  char host[128] = "";
  gethostname(host, sizeof(host) - 1);
  char line[768];
  int n = snprintf(line, sizeof(line),
                   "{\"format\":\"%s\",\"version\":%d,\"autoccl\":\"%s\",\"pid\":%d,\"rank\":%d,"
                   "\"host\":\"%s\",\"mode\":\"%s\",\"profiler\":\"%s\",\"clock\":\"monotonic_ns\","
                   "\"t0_ns\":%llu,\"max_bytes\":%llu}\n",
                   ACL_TRACE_FORMAT, ACL_TRACE_VERSION, ACL_VERSION, (int)getpid(),
                   per_rank ? rank : -1, host, t->mode, t->profiler, (unsigned long long)t->t0_ns,
                   (unsigned long long)t->max_bytes);
  if (n > 0 && (size_t)n < sizeof(line) && raw_write(f, line, (size_t)n) == 0)
    f->bytes += (uint64_t)n;
  return f;
}

static void write_rec(tracer_t *t, const rec_t *r)
{
  tfile_t *f = file_for(t, r->rank);
  if (!f || f->failed) {
    atomic_fetch_add(&t->dropped_max, 1);
    return;
  }
  char line[1024];
  int n = acl_trace_fmt_rec(r, line, sizeof(line));
  if (n <= 0 || (size_t)n >= sizeof(line))
    return;
  if (f->full || f->bytes + (uint64_t)n > t->max_bytes) {
    f->full = true;
    f->dropped++;
    atomic_fetch_add(&t->dropped_max, 1);
    return;
  }
  if (raw_write(f, line, (size_t)n) != 0) {
    if (atomic_fetch_add(&t->errors, 1) == 0)
      acl_warn("AUTOCCL_TRACE: writing %s failed: %s; that file stops here", f->path,
               strerror(errno));
    f->failed = true;
    return;
  }
  f->bytes += (uint64_t)n;
  atomic_fetch_add(&t->bytes, (uint64_t)n);
}

/* Copies out up to max records; returns how many. The writer only. */
static size_t drain(tracer_t *t, rec_t *out, size_t max)
{
  size_t n = 0;
  while (n < max) {
    slot_t *sl = &t->ring[t->head % ACL_TRACE_RING];
    if (atomic_load_explicit(&sl->seq, memory_order_acquire) != t->head + 1)
      break; /* empty, or a producer is still copying into it */
    out[n++] = sl->rec;
    atomic_store_explicit(&sl->seq, t->head + ACL_TRACE_RING, memory_order_release);
    t->head++;
  }
  return n;
}

static void close_files(tracer_t *t);

static void *writer(void *arg)
{
  tracer_t *t = arg;
  enum { BATCH = 256 };
  rec_t *buf = malloc(sizeof(rec_t) * BATCH);
  if (!strstr(t->tmpl, "%r"))
    file_for(t, -1); /* one file: it exists (with its header) from the start */
  for (;;) {
    bool stop = atomic_load(&t->stop);
    if (stop) /* producers that saw stop == false are done */
      while (atomic_load(&t->inflight) > 0)
        sched_yield();
    size_t n, total = 0;
    while (buf && (n = drain(t, buf, BATCH)) > 0) {
      for (size_t i = 0; i < n; i++)
        write_rec(t, &buf[i]);
      total += n;
    }
    if (stop)
      break;
    if (total < ACL_TRACE_RING / 4) /* else at once: it is filling fast */
      nanosleep(&(struct timespec){.tv_nsec = (long)t->flush_ms * 1000000L}, NULL);
  }
  free(buf);
  close_files(t);
  atomic_store(&t->done, true);
  return NULL;
}

static void close_files(tracer_t *t)
{
  for (int i = 0; i < t->nfiles; i++) {
    tfile_t *f = &t->files[i];
    if (!f->failed) {
      char line[256];
      int n = snprintf(line, sizeof(line),
                       "{\"t\":\"end\",\"bytes\":%llu,\"full\":%s,\"dropped_max\":%llu,"
                       "\"dropped_ring\":%llu}\n",
                       (unsigned long long)f->bytes, f->full ? "true" : "false",
                       (unsigned long long)f->dropped,
                       (unsigned long long)atomic_load(&t->dropped_ring));
      if (n > 0 && (size_t)n < sizeof(line))
        raw_write(f, line, (size_t)n);
    }
#ifdef ACL_HAVE_ZLIB
    if (f->gz)
      gzclose(f->gz);
#endif
    if (f->f)
      fclose(f->f);
  }
}

static void stats_of(tracer_t *t, acl_trace_stats_t *o)
{
  o->samples = atomic_load(&t->samples);
  o->decisions = atomic_load(&t->decisions);
  o->dropped_ring = atomic_load(&t->dropped_ring);
  o->dropped_max = atomic_load(&t->dropped_max);
  o->bytes = atomic_load(&t->bytes);
  o->files = t->nfiles;
  o->errors = atomic_load(&t->errors);
}

void acl_trace_start(const acl_trace_opts_t *in)
{
  acl_trace_opts_t o = in ? *in : (acl_trace_opts_t){0};
  const acl_trace_opts_t *opts = &o;
  /* What the caller left out comes from the environment, through the one
   * settings table (core/settings.def): same parser, same messages. */
  acl_config_t env;
  acl_config_defaults(&env);
  if (!o.path) {
    acl_config_env_one(&env, "AUTOCCL_TRACE");
    o.path = env.trace_path;
  }
  if (!o.max_bytes && o.path && *o.path) {
    acl_config_env_one(&env, "AUTOCCL_TRACE_MAX");
    o.max_bytes = env.trace_max;
  }
  pthread_mutex_lock(&g_mu);
  if (g_refs++ > 0 || !opts->path || !*opts->path)
    goto out;
  tracer_t *t = calloc(1, sizeof(*t));
  if (!t || !(t->ring = malloc(sizeof(slot_t) * ACL_TRACE_RING))) {
    acl_warn("AUTOCCL_TRACE: out of memory; not recording");
    goto fail;
  }
  snprintf(t->tmpl, sizeof(t->tmpl), "%s", opts->path);
  t->max_bytes = opts->max_bytes ? opts->max_bytes : ACL_TRACE_MAX_DEFAULT;
  t->flush_ms = opts->flush_ms ? opts->flush_ms : ACL_TRACE_FLUSH_MS;
  snprintf(t->mode, sizeof(t->mode), "%s", opts->mode ? opts->mode : "");
  snprintf(t->profiler, sizeof(t->profiler), "%s", opts->profiler ? opts->profiler : "");
  t->t0_ns = acl_mono_ns();
  for (uint64_t i = 0; i < ACL_TRACE_RING; i++)
    atomic_init(&t->ring[i].seq, i);
  if (pthread_create(&t->thr, NULL, writer, t) != 0) {
    acl_warn("AUTOCCL_TRACE: cannot start the writer thread; not recording");
    goto fail;
  }
  acl_info("recording a trace to %s (at most %llu bytes per file)", t->tmpl,
           (unsigned long long)t->max_bytes);
  atomic_store(&g_tr, t);
  goto out;
fail:
  if (t)
    free(t->ring);
  free(t);
out:
  pthread_mutex_unlock(&g_mu);
}

void acl_trace_stop(void)
{
  pthread_mutex_lock(&g_mu);
  if (g_refs == 0 || --g_refs > 0) {
    pthread_mutex_unlock(&g_mu);
    return;
  }
  tracer_t *t = atomic_exchange(&g_tr, NULL);
  pthread_mutex_unlock(&g_mu);
  if (!t)
    return;
  /* The writer waits for producers already inside push(), drains, closes
   * its files and ends; a write stuck in the kernel (a hung file system)
   * must not hold finalize, so the wait is bounded. */
  atomic_store(&t->stop, true);
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_nsec += (long)ACL_TRACE_STOP_MS * 1000000L;
  dl.tv_sec += dl.tv_nsec / 1000000000L;
  dl.tv_nsec %= 1000000000L;
  if (pthread_timedjoin_np(t->thr, NULL, &dl) != 0) {
    acl_warn("AUTOCCL_TRACE: the writer did not finish within %d ms (a write is stuck); "
             "finalize goes on without it and its files may be incomplete",
             ACL_TRACE_STOP_MS);
    pthread_detach(t->thr);
    stats_of(t, &g_last);
    return; /* t stays with the writer: it still reads the ring */
  }
  stats_of(t, &g_last);
  free(t->ring);
  t->ring = NULL;
  /* The struct is kept until the next stop: a producer between its load of
   * g_tr and its look at t->stop still reads it. */
  pthread_mutex_lock(&g_mu);
  free(g_retired);
  g_retired = t;
  pthread_mutex_unlock(&g_mu);
}

/* The plugin unloaded (dlclose) or the process ends: the retired recorder
 * kept for late producers goes with the library, or LeakSanitizer counts it
 * as leaked once the library's globals are unmapped. */
__attribute__((destructor)) static void trace_unload(void)
{
  free(g_retired);
  g_retired = NULL;
}

bool acl_trace_on(void) { return atomic_load_explicit(&g_tr, memory_order_relaxed) != NULL; }

static void push(tracer_t *t, const rec_t *r, _Atomic uint64_t *counter)
{
  atomic_fetch_add(&t->inflight, 1);
  if (atomic_load(&t->stop))
    goto out;
  uint64_t pos = atomic_load_explicit(&t->tail, memory_order_relaxed);
  slot_t *sl;
  for (;;) {
    sl = &t->ring[pos % ACL_TRACE_RING];
    int64_t dif = (int64_t)(atomic_load_explicit(&sl->seq, memory_order_acquire) - pos);
    if (dif == 0 && atomic_compare_exchange_weak_explicit(
                        &t->tail, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed))
      break;
    if (dif < 0) { /* full: the writer is behind */
      atomic_fetch_add_explicit(&t->dropped_ring, 1, memory_order_relaxed);
      goto out;
    }
    if (dif > 0)
      pos = atomic_load_explicit(&t->tail, memory_order_relaxed);
  }
  sl->rec = *r;
  atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
  atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
out:
  atomic_fetch_sub(&t->inflight, 1);
}

void acl_trace_sample(uint64_t comm_id, int rank, int nranks, const acl_prof_sample_t *s,
                      double used_seconds)
{
  tracer_t *t = atomic_load_explicit(&g_tr, memory_order_acquire);
  if (!t || !s)
    return;
  rec_t r = {
      .type = REC_SAMPLE,
      .coll = s->tag.coll,
      .source = s->source,
      .rank = rank,
      .nranks = nranks,
      .pipe_ops = s->tag.pipe_ops,
      .widx = s->tag.widx,
      .cand_id = s->tag.cand_id,
      .kernels = s->compute_kernels,
      .cand = s->tag.cand,
      .ran_algo = s->ran_algo,
      .ran_proto = s->ran_proto,
      .ran_nch = (int16_t)s->ran_nch,
      .overlap = s->overlap,
      .comm = comm_id,
      .nbytes = s->tag.nbytes,
      .call_idx = s->tag.call_idx,
      .call_ns = s->call_ns,
      .gpu_start = s->gpu_start,
      .gpu_stop = s->gpu_stop,
      .emit_ns = acl_mono_ns(),
      .seconds = s->seconds,
      .used = used_seconds,
      .host = s->host_seconds,
  };
  push(t, &r, &t->samples);
}

static uint64_t mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* True when (cand_id, phase) changed for this (comm, rank, workload). */
static bool decision_changed(tracer_t *t, const acl_trace_dec_t *d)
{
  uint64_t key = mix(d->comm_id ^ mix(((uint64_t)(uint32_t)d->rank << 32) | d->widx)) | 1;
  uint32_t val = (((uint32_t)d->cand_id << 8) | d->phase) + 1;
  for (unsigned i = 0; i < DEDUP_N; i++) {
    dedup_t *e = &t->dedup[(key + i) % DEDUP_N];
    uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    if (k == 0) {
      uint64_t zero = 0;
      if (!atomic_compare_exchange_strong(&e->key, &zero, key) && zero != key)
        continue; /* taken by another key meanwhile */
      k = key;
    }
    if (k != key)
      continue;
    return atomic_exchange_explicit(&e->val, val, memory_order_relaxed) != val;
  }
  return true; /* table full: write them all */
}

void acl_trace_decision(const acl_trace_dec_t *d)
{
  tracer_t *t = atomic_load_explicit(&g_tr, memory_order_acquire);
  if (!t || !d || !decision_changed(t, d))
    return;
  rec_t r = {
      .type = REC_DECISION,
      .coll = d->coll,
      .phase = d->phase,
      .rank = d->rank,
      .nranks = d->nranks,
      .pipe_ops = d->pipe_ops,
      .widx = d->widx,
      .cand_id = d->cand_id,
      .cand = d->cand,
      .ran_algo = -1,
      .ran_proto = -1,
      .comm = d->comm_id,
      .nbytes = d->nbytes,
      .call_idx = d->call_idx,
      .emit_ns = acl_mono_ns(),
      .seconds = -1.0,
      .used = -1.0,
  };
  push(t, &r, &t->decisions);
}

void acl_trace_stats(acl_trace_stats_t *out)
{
  if (!out)
    return;
  pthread_mutex_lock(&g_mu);
  tracer_t *t = atomic_load(&g_tr);
  if (t)
    stats_of(t, out);
  else
    *out = g_last;
  pthread_mutex_unlock(&g_mu);
}
