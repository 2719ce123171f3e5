/* Producer-side cost of the trace recorder (docs/trace.md): what a sample
 * sink or getCollInfo pays per record, with recording off and on, from 1
 * and 4 threads. The writer thread's own work runs on another core.
 *
 *   build/tests/profiler/bench-trace [RECORDS_PER_THREAD] [PATH]
 *
 * PATH defaults to /tmp/acl-bench-trace-%p.jsonl.gz (removed afterwards). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profiler/trace.h"

static long g_n = 100000;
static double g_gap_ns = 5000; /* between records of one thread: 200k records/s */

static double now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *producer(void *arg)
{
  int rank = (int)(intptr_t)arg;
  acl_prof_sample_t s = {0};
  s.tag.coll = 4;
  s.tag.nbytes = 65536;
  s.tag.cand = (acl_candidate_t){.algo = 1, .proto = 0, .nchannels = 16};
  s.seconds = 1.5e-5;
  s.ran_algo = 1;
  s.ran_proto = 0;
  s.ran_nch = 16;
  double *out = malloc(sizeof(double));
  double spent = 0;
  for (long i = 0; i < g_n; i += 16) {
    double t0 = now_ns();
    for (int k = 0; k < 16; k++) {
      s.tag.call_idx = (uint64_t)(i + k);
      acl_trace_sample(0x1234, rank, 4, &s, s.seconds);
    }
    double t1 = now_ns();
    spent += t1 - t0;
    while (now_ns() < t1 + 16 * g_gap_ns) /* paced like a stream of short collectives */
      ;
  }
  *out = spent / (double)g_n;
  return out;
}

static double run(int threads)
{
  pthread_t th[4];
  double worst = 0;
  for (int i = 0; i < threads; i++)
    pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i);
  for (int i = 0; i < threads; i++) {
    double *v;
    pthread_join(th[i], (void **)&v);
    if (*v > worst)
      worst = *v;
    free(v);
  }
  return worst;
}

int main(int argc, char **argv)
{
  if (argc > 1)
    g_n = atol(argv[1]);
  const char *path = argc > 2 ? argv[2] : "/tmp/acl-bench-trace-%p.jsonl.gz";
  for (int threads = 1; threads <= 4; threads *= 4) {
    double off = run(threads);
    acl_trace_start(&(acl_trace_opts_t){.path = path});
    double on = run(threads);
    acl_trace_stop();
    acl_trace_stats_t st;
    acl_trace_stats(&st);
    printf("%d thread(s): %.1f ns/record off, %.1f ns/record on (200k records/s per thread), "
           "%llu written, %llu dropped (ring full), %.1f MB text\n",
           threads, off, on, (unsigned long long)st.samples, (unsigned long long)st.dropped_ring,
           (double)st.bytes / 1e6);
  }
  if (argc <= 2) {
    char p[128];
    acl_trace_expand(path, (int)getpid(), -1, p, sizeof(p));
    unlink(p);
  }
  return 0;
}
