/* Communicator churn through the real plugin, played like a job that
 * creates and destroys communicators in a loop (torch new_group,
 * ncclCommSplit): 1,000 cycles of a two-rank communicator (profiler init,
 * tuner init, calls of four workloads with their profiler events, finalize)
 * beside a communicator that lives throughout (a job's world communicator),
 * with the endpoint on (AUTOCCL_HTTP_PORT=0) and a table export on every
 * finalize. After the cycles the process must be back where it was after
 * the first few: the same /dev/shm entries (the consensus segments), file
 * descriptors and threads, and a resident size within 1 MiB; after the last
 * communicator, no segment and no thread of the plugin is left. The
 * decisions kept from communicators gone stay bounded, with one warning. Not a
 * Criterion test: Criterion's own threads and pipes would blur the counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/procres.h"
#include "harness.h"
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define ACL_HAVE_VALGRIND_H 1
#endif
#endif

static bool under_leak_checker(void)
{
#ifdef __SANITIZE_ADDRESS__
  return true;
#elif defined(ACL_HAVE_VALGRIND_H)
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

#define CYCLES_DEFAULT 1000
#define WARM_CYCLES 20    /* the first cycles load the plugin's lazily made parts */
#define CALLS 40          /* per workload and cycle */
#define RSS_SLACK_KB 1024 /* the target: flat within 1 MiB */

static acl_h_plugin_t P;

typedef struct counts {
  int shm, fds, threads;
  long rss;
} counts_t;

static char salt[32]; /* AUTOCCL_SHM_SALT: this process's segments only */

static counts_t sample(void)
{
  acl_procres_t r;
  acl_procres_read(&r);
  counts_t c = {acl_dir_count("/dev/shm", salt), r.fds, r.threads, r.rss_kb};
  return c;
}

typedef struct rank {
  void *pctx, *tctx;
  int mask;
} rank_t;

typedef struct comm {
  rank_t r[2];
} comm_t;

static void comm_init(comm_t *c, uint64_t id, int k)
{
  memset(c, 0, sizeof(*c));
  for (int i = 0; i < 2; i++) {
    CHECK(P.prof->init(&c->r[i].pctx, id, &c->r[i].mask, "churn", 1, 2, i, acl_h_logger) ==
              ncclSuccess,
          "cycle %d: profiler init", k);
    CHECK(P.v5->init(&c->r[i].tctx, id, 2, 1, acl_h_logger, NULL, NULL) == ncclSuccess,
          "cycle %d: tuner init", k);
  }
}

static void comm_finalize(comm_t *c, int k)
{
  for (int i = 0; i < 2; i++) {
    CHECK(P.v5->finalize(c->r[i].tctx) == ncclSuccess, "cycle %d: tuner finalize", k);
    CHECK(P.prof->finalize(c->r[i].pctx) == ncclSuccess, "cycle %d: profiler finalize", k);
  }
}

/* Calls of four workloads on both ranks of c, driven by this thread as one
 * process of a single-process job does. Returns the calls whose ranks
 * disagreed. */
static int calls(comm_t *c, int k)
{
  rank_t *r = c->r;
  static const size_t sizes[4] = {64u << 10, 1u << 20, 16u << 20, 256u << 20};
  uint64_t clock[2] = {0};
  int disagree = 0;
  for (int c = 0; c < 4 * CALLS; c++) {
    int w = c % 4, coll = w % 2 ? ncclFuncAllGather : ncclFuncAllReduce, got[2][3];
    for (int i = 0; i < 2; i++) {
      float t[7][3];
      acl_h_cost_table(coll, sizes[w], 2, t);
      int nch = 0, mask = acl_h_enqueue(P.prof, r[i].pctx, &r[i].mask, coll, sizes[w], 2);
      CHECK(P.v5->getCollInfo(r[i].tctx, (ncclFunc_t)coll, sizes[w], 1, (float **)(void *)t, 7, 3,
                              0, &nch) == ncclSuccess,
            "cycle %d call %d", k, c);
      acl_h_select(t, &got[i][0], &got[i][1]);
      got[i][2] = nch;
      acl_h_report_call(P.prof, r[i].pctx, mask, coll, sizes[w], got[i][0], got[i][1], nch,
                        20.0 + (double)(sizes[w] >> 14), &clock[i]);
    }
    disagree += memcmp(got[0], got[1], sizeof(got[0])) != 0;
  }
  return disagree;
}

/* One communicator's life beside the long-lived one (a job's world
 * communicator lives as long as the job). */
static int cycle(comm_t *world, int k)
{
  comm_t c;
  comm_init(&c, 0xc0ffee0000000000ull ^ ((uint64_t)getpid() << 20) ^ (uint64_t)k, k);
  int disagree = calls(&c, k) + calls(world, k);
  comm_finalize(&c, k);
  /* the harness keeps a bounded log: checked and emptied every cycle; no
   * warning or error (both reach NCCL's logger at its WARN level, "[2/") */
  CHECK(acl_h_log_count("[2/") == 0, "cycle %d: the plugin warned:\n%s", k, acl_h_log_text());
  acl_h_log_clear();
  return disagree;
}

int main(void)
{
  int cycles = getenv("ACL_CHURN_CYCLES") ? atoi(getenv("ACL_CHURN_CYCLES")) : CYCLES_DEFAULT;
  char out[64];
  snprintf(out, sizeof(out), "/tmp/acl-churn-%d.json", (int)getpid());
  snprintf(salt, sizeof(salt), "churn%d", (int)getpid());
  setenv("AUTOCCL_SHM_SALT", salt, 1);
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_HTTP_PORT", "0", 1);
  setenv("AUTOCCL_TABLE_OUT", out, 1);
  acl_h_load(&P);
  comm_t world;
  comm_init(&world, 0x3011dull ^ ((uint64_t)getpid() << 32), -1);
  int disagree = 0;
  for (int k = 0; k < WARM_CYCLES; k++)
    disagree += cycle(&world, k);
  counts_t a = sample();
  for (int k = WARM_CYCLES; k < cycles; k++)
    disagree += cycle(&world, k);
  counts_t b = sample();
  comm_finalize(&world, -1);
  /* the endpoint's own threads end shortly after it is stopped */
  counts_t z = sample();
  for (int i = 0; i < 200 && z.threads > 1; i++) {
    usleep(10000);
    z = sample();
  }
  printf("churn: %d communicator cycles; after %d / after %d: /dev/shm segments %d / %d, fds "
         "%d / %d, threads %d / %d, RSS %ld / %ld KiB; calls on which the ranks disagreed: %d\n",
         cycles, WARM_CYCLES, cycles, a.shm, b.shm, a.fds, b.fds, a.threads, b.threads, a.rss,
         b.rss, disagree);
  CHECK(disagree == 0, "ranks disagreed on %d calls", disagree);
  CHECK(b.shm == a.shm, "shared-memory segments leaked");
  CHECK(b.fds == a.fds, "file descriptors leaked");
  CHECK(b.threads == a.threads, "threads leaked");
  /* Under ASan (its quarantine holds freed memory, up to 256 MiB) or
   * valgrind (its own allocator) RSS says nothing about leaks; those two
   * check for leaks themselves at exit. */
  if (!under_leak_checker())
    CHECK(a.rss > 0 && b.rss - a.rss <= RSS_SLACK_KB, "RSS grew by %ld KiB", b.rss - a.rss);
  else
    printf("churn: RSS bound not checked under a leak checker (ASan or valgrind)\n");
  /* The decisions kept from communicators gone are bounded (a table's
   * 1,024 rules): 5 communicators of 250 distinct workloads each. */
  CHECK(acl_h_log_count("decisions not kept") == 0, "%s", acl_h_log_text());
  comm_t keep[5];
  for (int k = 0; k < 5; k++) {
    comm_init(&keep[k], 0x4ee9ull ^ ((uint64_t)getpid() << 24) ^ (uint64_t)k, k);
    for (int w = 0; w < 250; w++)
      for (int i = 0; i < 2; i++) {
        float t[7][3];
        size_t nbytes = (size_t)(k * 250 + w + 1) << 12;
        acl_h_cost_table(ncclFuncAllReduce, nbytes, 2, t);
        int nch = 0;
        CHECK(P.v5->getCollInfo(keep[k].r[i].tctx, ncclFuncAllReduce, nbytes, 1,
                                (float **)(void *)t, 7, 3, 0, &nch) == ncclSuccess,
              "keep");
      }
  }
  for (int k = 0; k < 5; k++)
    comm_finalize(&keep[k], k);
  CHECK(acl_h_log_count("decisions not kept") == 1, "one warning when the bound is hit:\n%s",
        acl_h_log_text());
  CHECK(z.shm == 0 && z.threads == 1, "after the last communicator: %d segments, %d threads", z.shm,
        z.threads);
  unlink(out);
  acl_h_unload(&P);
  return 0;
}
