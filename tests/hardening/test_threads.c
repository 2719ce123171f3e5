/* getCollInfo from many threads at once, as NCCL may call it, through the
 * real plugin (dlopen, as NCCL does): 8 rank threads on 4 communicators of
 * 2 ranks, 4 workloads each; a feeder thread plays NCCL's proxy thread,
 * sending the profiler events of the collectives the ranks ran; a scraper
 * thread reads /metrics and /api/v1/state from the endpoint the plugin
 * opened (AUTOCCL_HTTP_PORT=0, port taken from the log), also while the
 * communicators finalize. Checked: every call succeeds, both ranks of each
 * communicator run the same (algo, proto, channels) for every call, every
 * scrape before finalize answers 200, no deadlock at finalize. First, the
 * profiler library alone takes NCCL's events from several threads
 * (prof_threads.c). Built in a
 * -Db_sanitize=thread dir by scripts/ci-hardening.sh, TSan reports fail it
 * (TSAN_OPTIONS=halt_on_error=1); elsewhere it is a plain stress test.
 * Not a Criterion executable: Criterion cannot start under TSan ("Could not
 * initialize inheritable arena"), so it checks with CHECK() and exits 1. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../plugin/harness.h"
#include "core/procres.h"
#include "prof_threads.h"

#define NCOMM 4
#define RPC 2 /* ranks per communicator */
#define NRANK (NCOMM * RPC)
#define NWL 4
#define CALLS_DEFAULT 4000
#define QCAP 4096
#define INFLIGHT 8

static acl_h_plugin_t P;
static int ncalls = CALLS_DEFAULT;

/* NCCL's logger is thread-safe; so is ours. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 16];
static size_t log_len;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...)
{
  (void)level;
  (void)flags;
  (void)file;
  (void)line;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&log_mu);
  int n = snprintf(log_buf + log_len, sizeof(log_buf) - log_len, "%s\n", msg);
  if (n > 0 && log_len + (size_t)n < sizeof(log_buf))
    log_len += (size_t)n;
  pthread_mutex_unlock(&log_mu);
}

static int log_port(void)
{
  int port = -1;
  pthread_mutex_lock(&log_mu);
  const char *p = strstr(log_buf, "endpoint on http://");
  if (p && (p = strchr(p + 19, ':')))
    port = atoi(p + 1);
  pthread_mutex_unlock(&log_mu);
  return port;
}

typedef struct done_coll {
  int coll, algo, proto, nch;
  int mask; /* the event mask when the call was enqueued (NCCL stamps it then) */
  size_t nbytes;
} done_coll_t;

typedef struct rank {
  void *pctx, *tctx;
  int mask, comm, idx;
  int *dec; /* per call: algo | proto << 4 | nch << 8 */
  /* Collectives run, for the feeder (NCCL's proxy thread). */
  pthread_mutex_t qmu;
  done_coll_t q[QCAP];
  int qhead, qtail;
} rank_t;

static rank_t R[NRANK];
static atomic_int errors, running_ranks;
static char first_error[256];
static atomic_int scrapes_ok, scrapes_bad;
/* Scrapes go on through finalize (a scrape in flight while the last
 * communicator goes must not deadlock); failures after it started count
 * as the endpoint going away, not as dropped scrapes. */
static atomic_bool fin_started, fin_done;

static void fail(const char *fmt, ...)
{
  if (atomic_fetch_add(&errors, 1) == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(first_error, sizeof(first_error), fmt, ap);
    va_end(ap);
  }
}

static const int colls[NWL] = {ncclFuncAllReduce, ncclFuncAllGather, ncclFuncReduceScatter,
                               ncclFuncAllReduce};
static const size_t sizes[NWL] = {64u << 10, 4u << 20, 1u << 20, 64u << 20};

static atomic_bool go;

static void *rank_main(void *arg)
{
  rank_t *r = arg;
  while (!atomic_load(&go)) /* start together, once the scraper is going */
    sched_yield();
  for (int call = 0; call < ncalls && !atomic_load(&errors); call++) {
    int w = call % NWL;
    float t[7][3];
    acl_h_cost_table(colls[w], sizes[w], RPC, t);
    int nch = 0, a, p;
    int mask = acl_h_enqueue(P.prof, r->pctx, &r->mask, colls[w], sizes[w], RPC);
    ncclResult_t rc = P.v5->getCollInfo(r->tctx, (ncclFunc_t)colls[w], sizes[w], 1,
                                        (float **)(void *)t, 7, 3, 0, &nch);
    if (rc != ncclSuccess) {
      fail("comm %d rank %d call %d: getCollInfo returned %d", r->comm, r->idx, call, rc);
      break;
    }
    if (acl_h_select(t, &a, &p) != 0) {
      fail("comm %d rank %d call %d: no valid cost entry left", r->comm, r->idx, call);
      break;
    }
    r->dec[call] = a | p << 4 | nch << 8;
    /* Like a GPU stream, at most INFLIGHT collectives run ahead of their
     * completion events (otherwise the calls outrun every sample). */
    for (;;) {
      pthread_mutex_lock(&r->qmu);
      int depth = (r->qtail - r->qhead + QCAP) % QCAP;
      pthread_mutex_unlock(&r->qmu);
      if (depth < INFLIGHT)
        break;
      sched_yield();
    }
    pthread_mutex_lock(&r->qmu);
    if ((r->qtail + 1) % QCAP != r->qhead) {
      r->q[r->qtail] = (done_coll_t){colls[w], a, p, nch, mask, sizes[w]};
      r->qtail = (r->qtail + 1) % QCAP;
    }
    pthread_mutex_unlock(&r->qmu);
  }
  atomic_fetch_sub(&running_ranks, 1);
  return NULL;
}

static void feed_one(rank_t *r, const done_coll_t *c, uint64_t *clock)
{
  /* Ring/LL128 fastest; bytes at ~100 GB/s. */
  double us = 5.0 + (double)c->nbytes / 1e5 * (c->algo == NCCL_ALGO_RING ? 1.0 : 1.3) *
                        (c->proto == NCCL_PROTO_LL128 ? 0.9 : 1.0);
  acl_h_report_call(P.prof, r->pctx, c->mask, c->coll, c->nbytes, c->algo, c->proto, c->nch, us,
                    clock);
}

static void *feeder_main(void *arg)
{
  (void)arg;
  uint64_t clock[NRANK] = {0};
  for (;;) {
    int fed = 0;
    for (int i = 0; i < NRANK; i++) {
      rank_t *r = &R[i];
      for (;;) {
        done_coll_t c;
        pthread_mutex_lock(&r->qmu);
        bool have = r->qhead != r->qtail;
        if (have) {
          c = r->q[r->qhead];
          r->qhead = (r->qhead + 1) % QCAP;
        }
        pthread_mutex_unlock(&r->qmu);
        if (!have)
          break;
        feed_one(r, &c, &clock[i]);
        fed++;
      }
    }
    if (!fed && atomic_load(&running_ranks) == 0)
      return NULL;
    if (!fed)
      sched_yield();
  }
}

/* One GET; true on a 200 with a body. */
static bool http_get(int port, const char *path)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char req[256], buf[1 << 14];
  bool ok = false;
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
    goto out;
  int n = snprintf(req, sizeof(req),
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
  if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
    goto out;
  size_t got = 0;
  ssize_t k;
  while (got < sizeof(buf) - 1 && (k = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
    got += (size_t)k;
  buf[got] = '\0';
  const char *body = strstr(buf, "\r\n\r\n");
  ok = strncmp(buf, "HTTP/1.1 200", 12) == 0 && body && body[4];
out:
  close(fd);
  return ok;
}

static void *scraper_main(void *arg)
{
  int port = *(int *)arg;
  for (bool first = true; !atomic_load(&fin_done); first = false) {
    const char *path = atomic_load(&scrapes_ok) % 2 ? "/api/v1/state" : "/metrics";
    bool during_fin = atomic_load(&fin_started);
    if (http_get(port, path))
      atomic_fetch_add(&scrapes_ok, 1);
    else if (!during_fin)
      atomic_fetch_add(&scrapes_bad, 1);
    if (first)
      atomic_store(&go, true);
  }
  return NULL;
}

/* Threads of this process. A sanitizer's own (TSan starts a background
 * thread with the first pthread_create) must be counted before the load and
 * after finalize alike: main starts and joins one thread first. */
static int count_tasks(void)
{
  acl_procres_t r;
  acl_procres_read(&r);
  return r.threads;
}

static void *nothing(void *arg) { return arg; }

int main(void)
{
  pthread_t first;
  if (pthread_create(&first, NULL, nothing, NULL) == 0)
    pthread_join(first, NULL);
  int tasks_at_start = count_tasks();
  printf("ok: profiler alone, %d samples from 4 threads\n", acl_hard_prof_threads());
  const char *calls = getenv("ACL_THREADS_CALLS");
  if (calls && atoi(calls) > 0)
    ncalls = atoi(calls);
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_EXPLORE_BUDGET", "100000", 1); /* races while exploring, not the budget */
  setenv("AUTOCCL_HTTP_PORT", "0", 1);
  setenv("AUTOCCL_LOG", "info", 1);
  acl_h_load(&P);
  CHECK(P.v5, "no ncclTunerPlugin_v5");
  CHECK(P.prof, "no ncclProfiler_v5");
  uint64_t base = 0x5eed000000000000ull ^ ((uint64_t)getpid() << 16);
  for (int i = 0; i < NRANK; i++) {
    rank_t *r = &R[i];
    r->comm = i / RPC;
    r->idx = i % RPC;
    r->dec = calloc((size_t)ncalls, sizeof(int));
    CHECK(r->dec, "out of memory");
    pthread_mutex_init(&r->qmu, NULL);
    uint64_t comm = base + (uint64_t)r->comm;
    CHECK(P.prof->init(&r->pctx, comm, &r->mask, "hardening", 1, RPC, r->idx, logger) ==
              ncclSuccess,
          "profiler init failed: %s", log_buf);
    CHECK(P.v5->init(&r->tctx, comm, RPC, 1, logger, NULL, NULL) == ncclSuccess,
          "tuner init failed: %s", log_buf);
    CHECK(r->tctx, "tuner declined: %s", log_buf);
  }
  int port = log_port();
  atomic_store(&running_ranks, NRANK);
  pthread_t th[NRANK], feeder, scraper;
  for (int i = 0; i < NRANK; i++)
    CHECK(pthread_create(&th[i], NULL, rank_main, &R[i]) == 0, "pthread_create");
  CHECK(pthread_create(&feeder, NULL, feeder_main, NULL) == 0, "pthread_create");
  bool scraping = port > 0 && pthread_create(&scraper, NULL, scraper_main, &port) == 0;
  if (!scraping)
    atomic_store(&go, true); /* asserted below: fails the test */
  for (int i = 0; i < NRANK; i++)
    pthread_join(th[i], NULL);
  pthread_join(feeder, NULL);

  CHECK(atomic_load(&errors) == 0, "%d errors; first: %s", atomic_load(&errors), first_error);
  for (int c = 0; c < NCOMM; c++)
    for (int k = 0; k < ncalls; k++)
      for (int i = 1; i < RPC; i++)
        CHECK(R[c * RPC + i].dec[k] == R[c * RPC].dec[k],
              "comm %d call %d: rank %d runs %#x, rank 0 runs %#x", c, k, i, R[c * RPC + i].dec[k],
              R[c * RPC].dec[k]);
  /* The samples fed back made the tuner move: decisions changed over time. */
  int changes = 0;
  for (int i = 0; i < NRANK; i++)
    for (int k = NWL; k < ncalls; k++)
      changes += R[i].dec[k] != R[i].dec[k - NWL];
  CHECK(changes > NRANK, "decisions never changed: the tuner did not explore\n%s", log_buf);
  CHECK(port > 0, "no endpoint port in the log:\n%s", log_buf);
  CHECK(atomic_load(&scrapes_ok) > 0, "no scrape succeeded");
  CHECK(atomic_load(&scrapes_bad) == 0, "%d of %d scrapes failed", atomic_load(&scrapes_bad),
        atomic_load(&scrapes_ok) + atomic_load(&scrapes_bad));
  atomic_store(&fin_started, true);
  for (int i = 0; i < NRANK; i++) {
    CHECK(P.v5->finalize(R[i].tctx) == ncclSuccess, "tuner finalize");
    CHECK(P.prof->finalize(R[i].pctx) == ncclSuccess, "profiler finalize");
    pthread_mutex_destroy(&R[i].qmu);
    free(R[i].dec);
  }
  atomic_store(&fin_done, true);
  if (scraping)
    pthread_join(scraper, NULL);
  /* Finalize of the last communicator leaves no thread of the plugin's
   * behind (endpoint, trace writer, CUPTI feeder). */
  int tasks = count_tasks();
  CHECK(tasks == tasks_at_start, "%d threads alive after the last finalize (%d before the load)",
        tasks, tasks_at_start);
  printf("ok: %d calls x %d ranks on %d communicators, %d decision changes, %d scrapes\n", ncalls,
         NRANK, NCOMM, changes, atomic_load(&scrapes_ok));
  acl_h_unload(&P);
  return 0;
}
