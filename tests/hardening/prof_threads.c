/* The profiler's sample path from several NCCL threads at once, without the
 * plugin: 4 threads each report the Coll and KernelCh events of their own
 * rank (NCCL starts a Coll on the enqueuing thread, so ranks on different
 * threads do this concurrently), and the simulator's feed appears while
 * they sample (it may start after the plugin). Each rank maps it at the
 * profiler's next retry, a second in, and sees its overlap in every sample
 * from then on. Under TSan a race on this path fails the test. */
#include "prof_threads.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../plugin/harness.h"
#include "core/clock.h"
#include "profiler/profiler.h"
#include "profiler/simfeed.h"

#define NTH 4
#define WITH_FEED 100 /* samples each rank takes once the feed is mapped */

typedef struct {
  acl_prof_t *p;
  int rank;
  int samples, unknown_before, known, unknown_after;
  float overlap;
} feed_th_t;

static atomic_int threads_sampled;

/* Called on the thread that stopped the rank's last channel: its own. */
static void sink(void *u, const acl_prof_sample_t *s)
{
  (void)u;
  feed_th_t *t = s->tag.rank_ctx;
  t->samples++;
  if (s->overlap < 0.0f) {
    if (t->known)
      t->unknown_after++;
    else
      t->unknown_before++;
  } else {
    t->known++;
    t->overlap = s->overlap;
  }
}

static void one_call(acl_prof_t *p, void *r, feed_th_t *t, uint64_t call)
{
  acl_call_tag_t tag;
  memset(&tag, 0, sizeof(tag));
  tag.rank_ctx = t;
  tag.coll = ncclFuncAllReduce;
  tag.nbytes = 4096;
  tag.call_idx = call;
  tag.cand.algo = ACL_ALGO_NCCL;
  acl_prof_on_call(p, r, &tag, 0, false);
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 1;
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  void *c = NULL, *k = NULL;
  acl_prof_nccl_start(p, r, &c, &d);
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileKernelCh;
  d.parentObj = c;
  d.kernelCh.pTimer = 1000;
  acl_prof_nccl_start(p, r, &k, &d);
  ncclProfilerEventStateArgs_v5_t a = {.kernelCh = {.pTimer = 3000}};
  acl_prof_nccl_state(p, k, ncclProfilerKernelChStop, &a);
  acl_prof_nccl_stop(p, k);
  acl_prof_nccl_stop(p, c);
}

static void *rank_main(void *arg)
{
  feed_th_t *t = arg;
  void *r = acl_prof_rank_attach(t->p, t, 10 + (uint64_t)t->rank, t->rank, NTH);
  uint64_t call = 0, end = acl_mono_ns() + 10000000000ull;
  while (t->known < WITH_FEED && acl_mono_ns() < end) {
    one_call(t->p, r, t, call);
    if (++call == 1)
      atomic_fetch_add(&threads_sampled, 1);
  }
  acl_prof_rank_detach(t->p, r);
  return NULL;
}

int acl_hard_prof_threads(void)
{
  char name[64], tmp[80], path[96], tmp_path[96];
  snprintf(name, sizeof(name), "/acl-hard-feed-%d", (int)getpid());
  snprintf(tmp, sizeof(tmp), "%s-tmp", name);
  snprintf(path, sizeof(path), "/dev/shm%s", name);
  snprintf(tmp_path, sizeof(tmp_path), "/dev/shm%s", tmp);
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  snprintf(cfg.sim_feed, sizeof(cfg.sim_feed), "%s", name);
  acl_prof_t *p = acl_prof_create(&cfg, sink, NULL);
  CHECK(p, "no profiler");
  feed_th_t th[NTH];
  pthread_t tid[NTH];
  atomic_store(&threads_sampled, 0);
  for (int i = 0; i < NTH; i++) {
    th[i] = (feed_th_t){.p = p, .rank = i};
    CHECK(pthread_create(&tid[i], NULL, rank_main, &th[i]) == 0, "pthread_create");
  }
  while (atomic_load(&threads_sampled) < NTH)
    sched_yield();
  /* Written in full under another name, then renamed: it appears whole. */
  int fd = shm_open(tmp, O_CREAT | O_RDWR | O_EXCL, 0600);
  CHECK(fd >= 0, "shm_open %s", tmp);
  CHECK(ftruncate(fd, sizeof(acl_simfeed_t)) == 0, "ftruncate");
  acl_simfeed_t *f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  CHECK(f != MAP_FAILED, "mmap");
  f->magic = ACL_SIMFEED_MAGIC;
  f->nranks = NTH;
  for (int i = 0; i < NTH; i++)
    atomic_store(&f->overlap_milli[i], 100u * (unsigned)(i + 1));
  CHECK(rename(tmp_path, path) == 0, "rename %s", tmp_path);
  for (int i = 0; i < NTH; i++)
    pthread_join(tid[i], NULL);
  int samples = 0;
  for (int i = 0; i < NTH; i++) {
    feed_th_t *t = &th[i];
    CHECK(t->unknown_before >= 1, "rank %d took no sample before the feed", i);
    CHECK(t->known == WITH_FEED, "rank %d: %d samples with the feed's overlap", i, t->known);
    CHECK(t->unknown_after == 0, "rank %d lost the feed in %d samples", i, t->unknown_after);
    CHECK(t->overlap > 0.1f * (float)(i + 1) - 1e-6f && t->overlap < 0.1f * (float)(i + 1) + 1e-6f,
          "rank %d: overlap %g, not its own", i, t->overlap);
    samples += t->samples;
  }
  acl_prof_destroy(p);
  munmap(f, sizeof(*f));
  shm_unlink(name);
  return samples;
}
