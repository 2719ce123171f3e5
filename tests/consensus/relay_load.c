/* The multi-host relay under load: H simulated hosts (one process each, R
 * ranks driven in turn by one thread, each host its own segment) against
 * one leader over loopback TCP. Measures follower decision latency and the
 * leader's CPU and memory; optionally kills and restarts a follower host,
 * and kills the leader, then checks that every call ran the same candidate
 * on every rank (a rank whose decide fails runs NCCL's choice, as the
 * plugin does). Exit 0 only when no call diverged and the run did what was
 * asked; the one exception is the window docs/consensus.md states (item 1):
 * the leader dying inside a push pass, which the relay's test hook shows,
 * may split the follower hosts on that pass's calls and no others.
 * --cut-pass kills the leader inside a pass on purpose. A benchmark
 * (docs/benchmarks-consensus.md); CI runs short ones.
 *
 * relay_load [--hosts H] [--ranks R] [--seconds S] [--kill-follower-at T]
 *            [--restart-after T] [--kill-leader-at T] [--timeout-ms MS]
 *            [--cut-pass] */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "helpers.h"
#include "tuner/consensus/relay.h"

#define MAX_HOSTS 128
#define MAX_RANKS 16         /* per host */
#define NWL 3                /* workloads cycled through */
#define MAX_CALLS (1u << 21) /* per workload: the comparison table */
#define LAG 64               /* calls a host may run ahead of the slowest (collectives) */
#define NBUCKET 256          /* latency histogram: 8 buckets per power of two of ns */
#define FALLBACK 0xffull     /* algo byte of NCCL's choice */
#define PASS_WL 64           /* workload indices whose push passes are followed */

typedef struct shm {
  _Atomic int ready;
  _Atomic int go;
  _Atomic int stop;
  _Atomic uint64_t progress[MAX_HOSTS]; /* next call; UINT64_MAX/2: out of the lag */
  _Atomic uint64_t divergent, compared, errors, calls_done;
  _Atomic uint64_t divergent_dead;          /* calls that diverged once the leader was dead */
  _Atomic uint64_t first_err_ns[MAX_HOSTS]; /* first failing decide after the leader died */
  _Atomic uint64_t leader_dead_ns;
  _Atomic uint64_t hist[NBUCKET];   /* follower decide latency */
  _Atomic uint64_t hist_x[NBUCKET]; /* the same, calls of exploring blocks only */
  _Atomic uint64_t hist_max_ns;
  _Atomic uint64_t dead_max_ns; /* longest decide after the leader died */
  _Atomic uint64_t errors_live; /* failed decides while the leader ran */
  _Atomic uint64_t restarted_calls, restarted_errors;
  /* the leader's push passes (the relay's test hook, in the leader host) */
  _Atomic int pass_in;        /* inside a pass: some pushes may be unsent */
  _Atomic uint32_t pass_widx; /* that pass: widx's commit from..to */
  _Atomic uint64_t pass_from, pass_to;
  _Atomic uint64_t last_commit[PASS_WL];
  _Atomic int cut_arm, cut_ready; /* --cut-pass: stop the relay inside a pass */
  _Atomic uint32_t wl_widx[NWL];  /* widx + 1 of each workload, 0 unknown */
  /* two follower hosts' ranks ran different candidates: how often, calls lo..hi-1 */
  _Atomic uint64_t div_n[NWL], div_lo[NWL], div_hi[NWL];
  char err[MAX_HOSTS][200];
  _Atomic uint64_t ref[NWL][MAX_CALLS];  /* candidate + 1 of each call, 0 = unset */
  _Atomic uint64_t fref[NWL][MAX_CALLS]; /* the same, follower hosts' ranks only */
} shm_t;

typedef struct opts {
  int hosts, ranks;
  double seconds, kill_follower_at, restart_after, kill_leader_at;
  int timeout_ms;
  bool cut_pass;
} opts_t;

static const uint64_t wl_bytes[NWL] = {1u << 20, 65536, 1u << 24};
static const int wl_coll[NWL] = {4, 2, 3};

static int bucket_of(uint64_t ns)
{
  if (ns < 1)
    ns = 1;
  int b = (int)(log2((double)ns) * 8.0);
  return b < 0 ? 0 : b >= NBUCKET ? NBUCKET - 1 : b;
}

static double bucket_upper_us(int b) { return pow(2.0, (double)(b + 1) / 8.0) * 1e-3; }

static uint64_t cand_of(const acl_decision_t *d, int rc)
{
  if (rc != 0 || d->cand.algo < 0)
    return FALLBACK << 40;
  return (uint64_t)(uint8_t)d->cand.algo << 40 | (uint64_t)(uint8_t)d->cand.proto << 32 |
         (uint64_t)(uint16_t)d->cand.nchannels;
}

static void atomic_min_u64(_Atomic uint64_t *a, uint64_t v)
{
  uint64_t m = atomic_load_explicit(a, memory_order_relaxed);
  while (v < m && !atomic_compare_exchange_weak(a, &m, v))
    ;
}

static void atomic_max_u64(_Atomic uint64_t *a, uint64_t v)
{
  uint64_t m = atomic_load_explicit(a, memory_order_relaxed);
  while (v > m && !atomic_compare_exchange_weak(a, &m, v))
    ;
}

/* The relay thread's push passes (leader host). Before the pass it says
 * which calls the pass commits; after it, that the pass ended. */
static void on_pass(void *ctx, uint32_t widx, uint64_t commit, int sent)
{
  shm_t *sh = ctx;
  if (widx >= PASS_WL)
    return;
  if (sent < 0) {
    atomic_store(&sh->pass_widx, widx);
    atomic_store(&sh->pass_from, atomic_load(&sh->last_commit[widx]));
    atomic_store(&sh->pass_to, commit);
    atomic_store(&sh->pass_in, 1);
  } else if (sent == INT32_MAX) {
    atomic_store(&sh->last_commit[widx], commit);
    atomic_store(&sh->pass_in, 0);
  } else if (atomic_load(&sh->cut_arm)) { /* one push out, the rest never: wait for the kill */
    atomic_store(&sh->cut_ready, 1);
    for (;;)
      pause();
  }
}

/* One host: R ranks of the communicator, in turn, until told to stop. */
static int host_main(const opts_t *o, shm_t *sh, int host, uint64_t comm, int port, bool restarted)
{
  th_rank_t tr[MAX_RANKS];
  acl_cons_t *cs[MAX_RANKS];
  char ns[16], *myerr = sh->err[host];
  snprintf(ns, sizeof(ns), "h%d", host);
  if (host == 0)
    acl_relay_test_pass_hook(on_pass, sh);
  int nranks = o->hosts * o->ranks;
  for (int j = 0; j < o->ranks; j++) {
    th_params(&tr[j], comm, host * o->ranks + j, nranks, o->hosts, ns);
    snprintf(tr[j].cfg.coordinator, sizeof(tr[j].cfg.coordinator), "127.0.0.1:%d", port);
    tr[j].cfg.timeout_ms = o->timeout_ms;
    cs[j] = acl_cons_create(&tr[j].p, myerr, 200);
    if (!cs[j])
      return 3;
  }
  if (!restarted) {
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go))
      usleep(1000);
  }
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  bool follower = host != 0;
  uint64_t rng = 0x5eed + (uint64_t)host;
  for (uint64_t i = 0; !atomic_load_explicit(&sh->stop, memory_order_relaxed); i++) {
    for (;;) { /* a collective cannot run far ahead of the slowest host */
      uint64_t lo = UINT64_MAX;
      for (int h = 0; h < o->hosts; h++) {
        uint64_t v = atomic_load_explicit(&sh->progress[h], memory_order_relaxed);
        lo = v < lo ? v : lo;
      }
      /* a restarted host catches up (its early calls are long gone: too
       * old), then keeps pace; the others never wait for it */
      if (i <= lo + LAG || atomic_load_explicit(&sh->stop, memory_order_relaxed))
        break;
      usleep(50);
    }
    int w = (int)(i % NWL);
    uint64_t call = i / NWL;
    acl_wkey_t key = th_key(comm, wl_coll[w], wl_bytes[w]);
    for (int j = 0; j < o->ranks; j++) {
      acl_decision_t d;
      char err[256];
      uint64_t t0 = acl_mono_ns();
      int rc = acl_cons_decide(cs[j], &key, cost, &d, err, sizeof(err));
      uint64_t dt = acl_mono_ns() - t0;
      uint64_t v = cand_of(&d, rc) + 1;
      if (rc == 0 && d.widx != ACL_CONS_WIDX_NONE && /* once: every host writes here */
          !atomic_load_explicit(&sh->wl_widx[w], memory_order_relaxed))
        atomic_store_explicit(&sh->wl_widx[w], d.widx + 1, memory_order_relaxed);
      if (restarted) { /* a new instance: not part of the job's calls */
        atomic_fetch_add_explicit(&sh->restarted_calls, 1, memory_order_relaxed);
        if (rc != 0)
          atomic_fetch_add_explicit(&sh->restarted_errors, 1, memory_order_relaxed);
        continue;
      }
      bool dead = atomic_load_explicit(&sh->leader_dead_ns, memory_order_relaxed) != 0;
      if (dead) {
        uint64_t m = atomic_load_explicit(&sh->dead_max_ns, memory_order_relaxed);
        while (dt > m && !atomic_compare_exchange_weak(&sh->dead_max_ns, &m, dt))
          ;
      }
      if (rc != 0) {
        atomic_fetch_add_explicit(&sh->errors, 1, memory_order_relaxed);
        uint64_t z = 0;
        if (dead) {
          atomic_compare_exchange_strong(&sh->first_err_ns[host], &z, acl_mono_ns());
        } else {
          atomic_fetch_add_explicit(&sh->errors_live, 1, memory_order_relaxed);
          if (!myerr[0])
            snprintf(myerr, 200, "call %llu: %.180s", (unsigned long long)call, err);
        }
      }
      if (follower) {
        atomic_fetch_add_explicit(&sh->hist[bucket_of(dt)], 1, memory_order_relaxed);
        if (rc == 0 && d.phase == ACL_PHASE_EXPLORING)
          atomic_fetch_add_explicit(&sh->hist_x[bucket_of(dt)], 1, memory_order_relaxed);
        uint64_t m = atomic_load_explicit(&sh->hist_max_ns, memory_order_relaxed);
        while (dt > m && !atomic_compare_exchange_weak(&sh->hist_max_ns, &m, dt))
          ;
      } else if (rc == 0 && d.widx != ACL_CONS_WIDX_NONE) { /* the leader host's samples */
        acl_cons_observe(
            cs[j], &(acl_cons_obs_t){.widx = d.widx,
                                     .call_idx = d.call_idx,
                                     .cand_id = d.cand_id,
                                     .seconds = th_duration(&d.cand, key.nbytes,
                                                            (double)(th_rand(&rng) % 1000) / 1e3),
                                     .overlap = 0.0f,
                                     .ran_algo = -1,
                                     .ran_proto = -1});
      }
      if (call < MAX_CALLS) {
        uint64_t z = 0;
        if (!atomic_compare_exchange_strong(&sh->ref[w][call], &z, v) && z != v)
          atomic_fetch_add_explicit(dead ? &sh->divergent_dead : &sh->divergent, 1,
                                    memory_order_relaxed);
        atomic_fetch_add_explicit(&sh->compared, 1, memory_order_relaxed);
        z = 0; /* the survivors of a leader's death must agree among themselves */
        if (follower && !atomic_compare_exchange_strong(&sh->fref[w][call], &z, v) && z != v) {
          atomic_fetch_add_explicit(&sh->div_n[w], 1, memory_order_relaxed);
          atomic_min_u64(&sh->div_lo[w], call);
          atomic_max_u64(&sh->div_hi[w], call + 1);
        }
      }
    }
    if (!restarted) {
      atomic_store_explicit(&sh->progress[host], i, memory_order_relaxed);
      atomic_fetch_add_explicit(&sh->calls_done, (uint64_t)o->ranks, memory_order_relaxed);
    }
    if (i / NWL >= MAX_CALLS - 1)
      break;
  }
  for (int j = 0; j < o->ranks; j++)
    acl_cons_destroy(cs[j]);
  return 0;
}

/* utime + stime (s) and resident KiB of pid, less the harness's own
 * comparison table (mapped at skip): the plugin's memory, not the test's. */
static void proc_usage(pid_t pid, const void *skip, double *cpu_s, long *rss_kib)
{
  char path[64], buf[2048];
  *cpu_s = 0;
  *rss_kib = 0;
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f) {
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
      *cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
  }
  snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
  f = fopen(path, "r");
  bool skipping = false;
  unsigned long lo, hi;
  long kib;
  while (f && fgets(buf, sizeof(buf), f)) {
    if (sscanf(buf, "%lx-%lx ", &lo, &hi) == 2 && strchr(buf, '-') < strchr(buf, ' '))
      skipping = lo == (unsigned long)(uintptr_t)skip;
    else if (!skipping && sscanf(buf, "Rss: %ld", &kib) == 1)
      *rss_kib += kib;
  }
  if (f)
    fclose(f);
}

static double arg_d(int argc, char **argv, const char *name, double def)
{
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name))
      return atof(argv[i + 1]);
  return def;
}

static double pct_of(const _Atomic uint64_t *hist, double q)
{
  uint64_t total = 0, acc = 0;
  for (int b = 0; b < NBUCKET; b++)
    total += hist[b];
  for (int b = 0; b < NBUCKET; b++) {
    acc += hist[b];
    if (total && (double)acc >= q * (double)total)
      return bucket_upper_us(b);
  }
  return NAN;
}

static double pct(const shm_t *sh, double q) { return pct_of(sh->hist, q); }

static uint64_t hist_total(const _Atomic uint64_t *hist)
{
  uint64_t t = 0;
  for (int b = 0; b < NBUCKET; b++)
    t += hist[b];
  return t;
}

int main(int argc, char **argv)
{
  opts_t o = {.hosts = (int)arg_d(argc, argv, "--hosts", 64),
              .ranks = (int)arg_d(argc, argv, "--ranks", 8),
              .seconds = arg_d(argc, argv, "--seconds", 300),
              .kill_follower_at = arg_d(argc, argv, "--kill-follower-at", -1),
              .restart_after = arg_d(argc, argv, "--restart-after", 5),
              .kill_leader_at = arg_d(argc, argv, "--kill-leader-at", -1),
              .timeout_ms = (int)arg_d(argc, argv, "--timeout-ms", 2000)};
  for (int i = 1; i < argc; i++)
    o.cut_pass |= !strcmp(argv[i], "--cut-pass");
  if (o.hosts < 2 || o.hosts > MAX_HOSTS || o.ranks < 1 || o.ranks > MAX_RANKS ||
      !(o.seconds > 0)) {
    fprintf(stderr, "relay_load: --hosts 2..%d, --ranks 1..%d, --seconds > 0\n", MAX_HOSTS,
            MAX_RANKS);
    return 2;
  }
  shm_t *sh = th_shared(sizeof(shm_t));
  if (!sh) {
    perror("relay_load: mmap");
    return 2;
  }
  for (int w = 0; w < NWL; w++)
    sh->div_lo[w] = UINT64_MAX;
  uint64_t comm = th_comm_id(7000 + o.hosts);
  int port = th_free_port("127.0.0.1");
  pid_t pid[MAX_HOSTS];
  for (int h = 0; h < o.hosts; h++) {
    pid[h] = fork();
    if (pid[h] == 0)
      _exit(host_main(&o, sh, h, comm, port, false));
  }
  double t_ready = acl_mono_s() + 60;
  while (atomic_load(&sh->ready) < o.hosts && acl_mono_s() < t_ready)
    usleep(10000);
  if (atomic_load(&sh->ready) < o.hosts) {
    fprintf(stderr, "relay_load: only %d of %d hosts started\n", atomic_load(&sh->ready), o.hosts);
    for (int h = 0; h < o.hosts; h++)
      if (sh->err[h][0])
        fprintf(stderr, "relay_load: host %d: %s\n", h, sh->err[h]);
    atomic_store(&sh->stop, 1);
    atomic_store(&sh->go, 1);
    for (int h = 0; h < o.hosts; h++)
      kill(pid[h], SIGKILL), th_wait(pid[h], 5000);
    return 1;
  }
  atomic_store(&sh->go, 1);
  double t0 = acl_mono_s(), cpu0, cpu_w = 0, cpu_end = 0;
  long rss0 = 0, rss_min = 0, rss_max = 0, rss_end = 0;
  proc_usage(pid[0], sh, &cpu0, &rss0); /* RSS at the start; CPU counts from the warm-up */
  int victim = o.hosts - 1;
  pid_t again = -1;
  bool killed_f = false, killed_l = false;
  double warm = o.seconds > 20 ? 10 : o.seconds / 4, t_warm_cpu = -1;
  uint64_t calls_at_kill = 0;
  while (acl_mono_s() - t0 < o.seconds) {
    usleep(100000);
    double t = acl_mono_s() - t0;
    if (!killed_l) {
      double c;
      long r;
      proc_usage(pid[0], sh, &c, &r);
      if (t >= warm) {
        if (t_warm_cpu < 0) {
          t_warm_cpu = t;
          cpu_w = c;
          rss_min = rss_max = r;
        }
        rss_min = r < rss_min ? r : rss_min;
        rss_max = r > rss_max ? r : rss_max;
        cpu_end = c;
        rss_end = r;
      }
      static double next_note = 0;
      if (t >= next_note) {
        fprintf(stderr, "relay_load: %.0f s: leader RSS %ld KiB, %llu rank-calls\n", t, r,
                (unsigned long long)atomic_load(&sh->calls_done));
        next_note += o.seconds >= 60 ? 30 : 2;
      }
    }
    if (o.kill_follower_at >= 0 && !killed_f && t >= o.kill_follower_at) {
      killed_f = true;
      kill(pid[victim], SIGKILL);
      th_wait(pid[victim], 5000);
      atomic_store(&sh->progress[victim], UINT64_MAX / 2);
      fprintf(stderr, "relay_load: follower host %d killed at %.1f s\n", victim, t);
    }
    if (killed_f && again < 0 && t >= o.kill_follower_at + o.restart_after) {
      again = fork();
      if (again == 0)
        _exit(host_main(&o, sh, victim, comm, port, true));
      fprintf(stderr, "relay_load: follower host %d restarted at %.1f s\n", victim, t);
    }
    if (o.kill_leader_at >= 0 && !killed_l && t >= o.kill_leader_at) {
      killed_l = true;
      if (o.cut_pass) { /* the relay thread stops after its next pass's first push */
        atomic_store(&sh->cut_arm, 1);
        double t_cut = acl_mono_s() + 5;
        while (!atomic_load(&sh->cut_ready) && acl_mono_s() < t_cut)
          usleep(200);
      }
      calls_at_kill = atomic_load(&sh->calls_done);
      atomic_store(&sh->leader_dead_ns, acl_mono_ns());
      kill(pid[0], SIGKILL);
      th_wait(pid[0], 5000);
      char seg[128]; /* the dead leader host's segment: nobody is left there to remove it */
      snprintf(seg, sizeof(seg), "/autoccl-%u-%016llx-h0", (unsigned)getuid(),
               (unsigned long long)comm);
      shm_unlink(seg);
      atomic_store(&sh->progress[0], UINT64_MAX / 2);
      fprintf(stderr, "relay_load: leader host killed at %.1f s\n", t);
    }
  }
  double wall = acl_mono_s() - t0;
  atomic_store(&sh->stop, 1);
  int bad_exit = 0;
  for (int h = 0; h < o.hosts; h++) {
    if ((h == victim && killed_f) || (h == 0 && killed_l))
      continue;
    int st = th_wait(pid[h], o.timeout_ms + 20000);
    if (st != 0) {
      bad_exit++;
      fprintf(stderr, "relay_load: host %d exit %d: %s\n", h, st, sh->err[h]);
    }
  }
  if (again > 0 && th_wait(again, o.timeout_ms + 20000) != 0)
    fprintf(stderr, "relay_load: the restarted host did not exit cleanly\n");

  /* fallback latency after the leader died: per follower host still up */
  double fb_max = 0;
  int fb_hosts = 0;
  uint64_t dead = atomic_load(&sh->leader_dead_ns);
  for (int h = 1; h < o.hosts && dead; h++) {
    uint64_t e = atomic_load(&sh->first_err_ns[h]);
    if (!e || (h == victim && killed_f))
      continue;
    fb_hosts++;
    double s = (double)(e - dead) * 1e-9;
    fb_max = s > fb_max ? s : fb_max;
  }
  for (int h = 0, shown = 0; h < o.hosts && shown < 3; h++)
    if (sh->err[h][0] && ++shown)
      fprintf(stderr, "relay_load: host %d, first error while the leader ran: %s\n", h, sh->err[h]);
  /* follower hosts split only on the calls of a pass the leader died in */
  bool mid_pass = killed_l && atomic_load(&sh->pass_in);
  uint32_t cut_widx = atomic_load(&sh->pass_widx);
  uint64_t cut_from = atomic_load(&sh->pass_from), cut_to = atomic_load(&sh->pass_to);
  uint64_t in_cut = 0, outside_cut = 0;
  for (int w = 0; w < NWL; w++) {
    if (!sh->div_n[w])
      continue;
    bool in = mid_pass && atomic_load(&sh->wl_widx[w]) == cut_widx + 1 &&
              sh->div_lo[w] >= cut_from && sh->div_hi[w] <= cut_to;
    *(in ? &in_cut : &outside_cut) += sh->div_n[w]; /* their sum: divergent_between_followers */
    fprintf(stderr, "relay_load: follower hosts split on workload %d, calls %llu..%llu (%s)\n", w,
            (unsigned long long)sh->div_lo[w], (unsigned long long)sh->div_hi[w] - 1,
            in ? "all in the pass the leader died in" : "outside any cut pass");
  }
  if (mid_pass)
    fprintf(stderr,
            "relay_load: the leader died inside the push pass of widx %u, calls %llu..%llu\n",
            cut_widx, (unsigned long long)cut_from, (unsigned long long)cut_to);
  if (o.cut_pass && !mid_pass)
    fprintf(stderr, "relay_load: --cut-pass: no push pass started within 5 s of the kill\n");
  double cpu_span = t_warm_cpu >= 0 ? (killed_l ? o.kill_leader_at : wall) - t_warm_cpu : 0;
  printf("{\"hosts\":%d,\"ranks_per_host\":%d,\"seconds\":%.1f,\"calls\":%llu,"
         "\"compared\":%llu,\"divergent\":%llu,\"divergent_after_leader_death\":%llu,"
         "\"divergent_between_followers\":%llu,"
         "\"errors\":%llu,"
         "\"follower_p50_us\":%.2f,\"follower_p99_us\":%.2f,\"follower_p999_us\":%.2f,"
         "\"follower_max_us\":%.1f,\"exploring_calls\":%llu,\"exploring_p50_us\":%.2f,"
         "\"exploring_p99_us\":%.2f,\"exploring_p999_us\":%.2f,\"leader_cpu_pct\":%.1f,\"leader_"
         "rss_kib_start\":%ld,"
         "\"leader_rss_kib_min\":%ld,\"leader_rss_kib_max\":%ld,\"leader_rss_kib_end\":%ld,"
         "\"follower_killed\":%s,\"restarted_calls\":%llu,\"restarted_errors\":%llu,"
         "\"leader_killed\":%s,\"calls_before_leader_kill\":%llu,"
         "\"fallback_hosts\":%d,\"fallback_max_s\":%.3f,\"dead_max_decide_s\":%.3f,"
         "\"errors_while_leader_ran\":%llu,\"bad_exits\":%d,\"leader_died_mid_pass\":%s,"
         "\"divergent_in_cut_pass\":%llu,\"divergent_outside_cut_pass\":%llu}\n",
         o.hosts, o.ranks, wall, (unsigned long long)atomic_load(&sh->calls_done),
         (unsigned long long)sh->compared, (unsigned long long)sh->divergent,
         (unsigned long long)sh->divergent_dead, (unsigned long long)(in_cut + outside_cut),
         (unsigned long long)sh->errors, pct(sh, 0.5), pct(sh, 0.99), pct(sh, 0.999),
         (double)sh->hist_max_ns * 1e-3, (unsigned long long)hist_total(sh->hist_x),
         pct_of(sh->hist_x, 0.5), pct_of(sh->hist_x, 0.99), pct_of(sh->hist_x, 0.999),
         cpu_span > 0 ? 100.0 * (cpu_end - cpu_w) / cpu_span : 0.0, rss0, rss_min, rss_max, rss_end,
         killed_f ? "true" : "false", (unsigned long long)sh->restarted_calls,
         (unsigned long long)sh->restarted_errors, killed_l ? "true" : "false",
         (unsigned long long)calls_at_kill, fb_hosts, fb_max, (double)sh->dead_max_ns * 1e-9,
         (unsigned long long)sh->errors_live, bad_exit, mid_pass ? "true" : "false",
         (unsigned long long)in_cut, (unsigned long long)outside_cut);
  /* While the leader runs, no call diverges. With the leader gone, every
   * follower host that needs it falls back, no call waits beyond the timeout
   * (plus 1 s of scheduling on a loaded machine), and the follower hosts
   * never disagree (the commit horizon, docs/consensus.md) but on the calls
   * of a push pass the leader died inside (which no message among the
   * leader's followers closes yet). Calls the dead leader host's own ranks
   * ran past the commit are reported (divergent_after_leader_death counts
   * them with the rest). */
  bool ok = sh->divergent == 0 && outside_cut == 0 && bad_exit == 0 && (!o.cut_pass || mid_pass) &&
            sh->compared > 0 &&
            (!killed_l ||
             (fb_hosts > 0 && (double)sh->dead_max_ns * 1e-9 <= o.timeout_ms / 1000.0 + 1.0));
  return ok ? 0 : 1;
}
