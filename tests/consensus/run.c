#include "run.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "helpers.h"

typedef struct run_shm {
  _Atomic int ready, done;
  _Atomic uint64_t progress[RUN_MAX_RANKS];
  _Atomic uint64_t samples_sent, samples_busy;
  char err[RUN_MAX_RANKS][256];
  uint64_t rec[]; /* [comm][rank][call] */
} run_shm_t;

static const uint64_t wl_bytes[] = {1u << 20, 4096, 1u << 24, 65536, 256u << 20};
static const int wl_coll[] = {4, 4, 2, 3, 4};

static bool barrier(_Atomic int *ctr, int n)
{
  atomic_fetch_add(ctr, 1);
  double end = acl_mono_s() + 30.0;
  while (atomic_load(ctr) < n) {
    if (acl_mono_s() > end)
      return false;
    usleep(500);
  }
  return true;
}

static int child(const run_spec_t *s, run_shm_t *sh, int proc, uint64_t comm0, int port)
{
  int nranks = s->nprocs * s->ranks_per_proc;
  int nwl = s->nwl > 0 ? s->nwl : 3;
  th_rank_t *tr = calloc((size_t)(s->ncomms * s->ranks_per_proc), sizeof(*tr));
  acl_cons_t **cs = calloc((size_t)(s->ncomms * s->ranks_per_proc), sizeof(*cs));
  th_feed_t *feeds = calloc((size_t)(s->ncomms * s->ranks_per_proc), sizeof(*feeds));
  char ns[16] = "";
  int host = s->nnodes > 1 ? proc * s->nnodes / s->nprocs : 0;
  snprintf(ns, sizeof(ns), "h%d", host);
  char *myerr = sh->err[proc];
  for (int m = 0; m < s->ncomms; m++)
    for (int j = 0; j < s->ranks_per_proc; j++) {
      int idx = m * s->ranks_per_proc + j;
      int rank = proc * s->ranks_per_proc + j;
      th_params(&tr[idx], comm0 + (uint64_t)m * 0x1000, rank, nranks, s->nnodes > 1 ? s->nnodes : 1,
                ns);
      if (s->max_workloads)
        tr[idx].cfg.max_workloads = s->max_workloads;
      if (s->nnodes > 1) {
        snprintf(tr[idx].cfg.coordinator, sizeof(tr[idx].cfg.coordinator), "127.0.0.2:%d", port);
        tr[idx].cfg.timeout_ms = 10000;
      }
      cs[idx] = acl_cons_create(&tr[idx].p, myerr, 256);
      if (!cs[idx])
        return 3;
      th_feed_init(&feeds[idx], 0x1234u + (uint64_t)rank * 977 + (uint64_t)m);
    }
  if (!barrier(&sh->ready, s->nprocs)) {
    snprintf(myerr, 256, "start barrier timed out");
    return 4;
  }
  float cost_ok[ACL_NUM_ALGO][ACL_NUM_PROTO], cost_bad[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost_ok, -1);
  th_cost(cost_bad, s->bad_proto);
  uint64_t rng = 0xabcdefu + (uint64_t)proc * 31337;
  int order[RUN_MAX_RANKS];
  for (uint64_t i = 0; i < s->calls; i++) {
    if (s->lag > 0) {
      double end = acl_mono_s() + 20.0;
      for (;;) {
        uint64_t lo = UINT64_MAX;
        for (int p = 0; p < s->nprocs; p++) {
          uint64_t v = atomic_load_explicit(&sh->progress[p], memory_order_relaxed);
          lo = v < lo ? v : lo;
        }
        if (i <= lo + (uint64_t)s->lag)
          break;
        if (acl_mono_s() > end) {
          snprintf(myerr, 256, "lag wait timed out at call %llu", (unsigned long long)i);
          return 5;
        }
        sched_yield();
      }
    }
    int w = (int)(i % (uint64_t)nwl);
    for (int m = 0; m < s->ncomms; m++) {
      uint64_t comm = comm0 + (uint64_t)m * 0x1000;
      acl_wkey_t key = th_key(comm, wl_coll[w % 5], wl_bytes[w % 5] + (uint64_t)(w / 5) * 8);
      for (int j = 0; j < s->ranks_per_proc; j++)
        order[j] = j;
      if (s->permute)
        for (int j = s->ranks_per_proc - 1; j > 0; j--) {
          int q = (int)(th_rand(&rng) % (uint64_t)(j + 1)), t = order[j];
          order[j] = order[q];
          order[q] = t;
        }
      for (int jj = 0; jj < s->ranks_per_proc; jj++) {
        int j = order[jj];
        int idx = m * s->ranks_per_proc + j;
        int rank = proc * s->ranks_per_proc + j;
        acl_decision_t d;
        char err[256];
        const float(*cost)[ACL_NUM_PROTO] = rank == s->bad_proto_rank ? cost_bad : cost_ok;
        if (acl_cons_decide(cs[idx], &key, cost, &d, err, sizeof(err)) != 0) {
          snprintf(myerr, 256, "rank %d call %llu: %.200s", rank, (unsigned long long)i, err);
          return 6;
        }
        if (d.call_idx != i / (uint64_t)nwl) {
          snprintf(myerr, 256, "rank %d: call index %llu, expected %llu", rank,
                   (unsigned long long)d.call_idx, (unsigned long long)(i / (uint64_t)nwl));
          return 7;
        }
        sh->rec[((uint64_t)m * (uint64_t)nranks + (uint64_t)rank) * s->calls + i] = th_pack(&d);
        th_feed_call(&feeds[idx], cs[idx], &d, key.nbytes, s->keep_pct);
      }
    }
    atomic_store_explicit(&sh->progress[proc], i, memory_order_relaxed);
    if (s->delay_per_mille && (int)(th_rand(&rng) % 1000) < s->delay_per_mille)
      usleep((useconds_t)(th_rand(&rng) % 300));
  }
  atomic_store(&sh->progress[proc], UINT64_MAX / 2);
  barrier(&sh->done, s->nprocs); /* rank 0 serves followers until everyone is done */
  for (int i = 0; i < s->ncomms * s->ranks_per_proc; i++) {
    acl_cons_stats_t st;
    acl_cons_stats(cs[i], &st);
    atomic_fetch_add(&sh->samples_busy, st.samples_busy);
    atomic_fetch_add(&sh->samples_sent, feeds[i].sent);
    acl_cons_destroy(cs[i]);
  }
  return 0;
}

int run_consensus(const run_spec_t *s, run_result_t *r)
{
  memset(r, 0, sizeof(*r));
  int nranks = s->nprocs * s->ranks_per_proc;
  if (nranks > RUN_MAX_RANKS || s->nprocs > RUN_MAX_RANKS || s->ncomms > RUN_MAX_COMMS)
    return -1;
  size_t recn = (size_t)s->ncomms * (size_t)nranks * s->calls;
  size_t bytes = sizeof(run_shm_t) + recn * sizeof(uint64_t);
  run_shm_t *sh = th_shared(bytes);
  if (!sh)
    return -1;
  memset(sh->rec, 0xff, recn * sizeof(uint64_t));
  uint64_t comm0 = th_comm_id(s->nprocs * 100 + s->ranks_per_proc);
  int port = s->nnodes > 1 ? th_free_port("127.0.0.2") : 0;
  pid_t pids[RUN_MAX_RANKS];
  double t0 = acl_mono_s();
  for (int p = 0; p < s->nprocs; p++) {
    pids[p] = fork();
    if (pids[p] == 0)
      _exit(child(s, sh, p, comm0, port));
  }
  for (int p = 0; p < s->nprocs; p++) {
    int st = th_wait(pids[p], 50000);
    if (st != 0) {
      r->child_fail++;
      if (!r->first_error[0])
        snprintf(r->first_error, sizeof(r->first_error), "proc %d status %d: %s", p, st,
                 sh->err[p]);
    }
  }
  r->seconds = acl_mono_s() - t0;
  r->samples_sent = atomic_load(&sh->samples_sent);
  r->samples_busy = atomic_load(&sh->samples_busy);
  /* compare every call across ranks */
  uint64_t seen[512];
  int nseen = 0;
  for (int m = 0; m < s->ncomms; m++)
    for (uint64_t i = 0; i < s->calls; i++) {
      uint64_t ref = sh->rec[((uint64_t)m * (uint64_t)nranks) * s->calls + i];
      for (int g = 0; g < nranks; g++) {
        uint64_t v = sh->rec[((uint64_t)m * (uint64_t)nranks + (uint64_t)g) * s->calls + i];
        if (v == UINT64_MAX)
          continue;
        r->recorded++;
        if (v != ref)
          r->disagreements++;
        int8_t algo = (int8_t)(v >> 40), proto = (int8_t)(v >> 32);
        if (algo != -1)
          r->non_nccl++;
        if (s->bad_proto_rank >= 0 && algo == 1 && proto == s->bad_proto)
          r->bad_choice++;
        uint64_t dv = v >> 16;
        int k = 0;
        while (k < nseen && seen[k] != dv)
          k++;
        if (k == nseen && nseen < 512)
          seen[nseen++] = dv;
      }
    }
  r->distinct = (uint64_t)nseen;
  if (getenv("RUN_DUMP")) {
    uint64_t prev = 0;
    for (uint64_t i = 0; i < s->calls; i += 3) {
      uint64_t v = sh->rec[i];
      if (v != prev)
        fprintf(stderr, "call %llu: %llx\n", (unsigned long long)(i / 3), (unsigned long long)v);
      prev = v;
    }
  }
  munmap(sh, bytes);
  return 0;
}
