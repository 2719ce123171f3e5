/* autoccl-sim: the parent process. Sets up the shared control block, the
 * simulator feed and the decision logs, forks the rank processes, watches
 * progress (stop, hang, crash), reads the endpoints and reports. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/shm.h"
#include "profiler/simfeed.h"
#include "sim/bench.h"
#include "sim/nccl_model.h"
#include "sim/sim.h"
#include "tuner/search/search.h"

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
  (void)sig;
  interrupted++;
}

static int free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static acl_landscape_t *make_landscape(const char *spec, bool nccl230, char *err, size_t errlen)
{
  if (strcmp(spec, "h200") == 0)
    return acl_land_create_h200(err, errlen);
  if (acl_land_is_trace_spec(spec))
    return acl_land_create_spec_traces(spec, err, errlen);
  uint64_t seed = 1;
  if (strncmp(spec, "synthetic:", 10) == 0)
    seed = strtoull(spec + 10, NULL, 0);
  acl_landscape_t *l = acl_land_create_synth(seed);
  if (!l)
    snprintf(err, errlen, "cannot create the synthetic landscape (out of memory)");
  else if (nccl230) /* chunk size matters there (sim/landscape_chunk.c) */
    acl_land_chunk_enable(l, seed, 1.0);
  return l;
}

static void progress(const acl_sim_opts_t *o, const acl_sim_ctl_t *ctl, double el, bool tty,
                     double *last_line)
{
  uint64_t lo = UINT64_MAX, calls = 0;
  for (int r = 0; r < o->nranks; r++) {
    uint64_t s = ctl->rank[r].steps_done;
    lo = s < lo ? s : lo;
    calls += ctl->rank[r].calls;
  }
  double frac = o->steps ? (double)lo / (double)o->steps : el / o->duration_s;
  char busy[48] = "";
  double level = o->interf.n ? acl_sim_interf_level(&o->interf, lo) : 0.0;
  if (o->interf.n)
    snprintf(busy, sizeof(busy), level > 0 ? "  interference %.2f" : "  no interference", level);
  frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
  if (tty) {
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
      bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    /* \033[K: erase the rest of the line, a longer earlier line's tail
     * ("no interference 0") included */
    fprintf(stderr, "\r[%s] %3.0f%%  step %llu  %llu calls  %.1fs%s\033[K", bar, frac * 100,
            (unsigned long long)lo, (unsigned long long)calls, el, busy);
  } else if (el - *last_line >= 5.0) {
    *last_line = el;
    fprintf(stderr, "autoccl-sim: %.0f%% step %llu, %llu calls, %.1fs%s\n", frac * 100,
            (unsigned long long)lo, (unsigned long long)calls, el, busy);
  }
}

static void kill_all(pid_t *pids, int n)
{
  for (int i = 0; i < n; i++)
    if (pids[i] > 0)
      kill(pids[i], SIGKILL);
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) {
      while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {
      }
      pids[i] = 0;
    }
}

/* The demo's endpoints: P..P+nprocs-1 must be free before anything runs, or
 * a second demo would run its whole duration with nothing to watch. The
 * first port a listener holds (SO_REUSEADDR as the endpoint: a closed
 * connection's TIME_WAIT does not count), or 0. */
static int busy_port(int first, int n)
{
  for (int p = first; p < first + n && p <= 65535; p++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0)
      return 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)p),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool busy = bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno == EADDRINUSE;
    close(fd);
    if (busy)
      return p;
  }
  return 0;
}

/* How long after a read an endpoint's next one is sure to render anew: its
 * 100 ms reuse (docs/api.md), and a margin. */
#define ENDPOINT_REUSE_S 0.15

/* Whether every rank process serves its own endpoint (its pid in the
 * state): a port taken by another process must be neither advertised nor
 * read. Waits up to 5 s for the plugins to start. NULL when all do, else
 * why not, in off (len bytes). */
static const char *check_endpoints(const acl_sim_opts_t *o, const pid_t *pids, int nprocs,
                                   char *off, size_t len)
{
  if (o->port <= 0) {
    snprintf(off, len, "no --port given");
    return off;
  }
  double deadline = acl_mono_s() + 5.0;
  for (int p = 0; p < nprocs; p++) {
    double v;
    while ((v = acl_sim_fetch_wait(o->port + p, 1.0, (int)pids[p])) == -1 &&
           acl_mono_s() < deadline) {
      struct timespec ts = {0, 100 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (v == -2) {
      snprintf(off, len,
               "port %d is served by another process, not rank process %d "
               "(its endpoint could not bind: see its WARN)",
               o->port + p, p);
      return off;
    }
    if (v < 0) {
      snprintf(off, len, "rank process %d serves nothing on port %d", p, o->port + p);
      return off;
    }
  }
  return NULL;
}

/* autoccl-top of this build (<exe dir>/../tui/autoccl-top), relative to the
 * working directory when it lies below it ("build/tui/autoccl-top"), else
 * absolute; plain "autoccl-top" when not found. */
static void top_path(char *out, size_t len)
{
  snprintf(out, len, "autoccl-top");
  char exe[PATH_MAX], cwd[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return;
  *slash = '\0';
  char cand[PATH_MAX + 32];
  snprintf(cand, sizeof(cand), "%s/../tui/autoccl-top", exe);
  char *real = realpath(cand, NULL);
  if (!real)
    return;
  size_t cl = getcwd(cwd, sizeof(cwd)) ? strlen(cwd) : 0;
  if (cl > 1 && strncmp(real, cwd, cl) == 0 && real[cl] == '/')
    snprintf(out, len, "%s", real + cl + 1);
  else
    snprintf(out, len, "%s", real);
  free(real);
}

/* Channels NCCL 2.28.3 builds as it ships on 2x H200 (docs/channels.md). */
#define SIM_STOCK_CHANNELS 24

static void print_head(const acl_sim_opts_t *o, int nprocs, const acl_landscape_t *land)
{
  FILE *f = o->json ? stderr : stdout;
  fprintf(f, "autoccl-sim: %d ranks in %d processes; plugin %s\n", o->nranks, nprocs, o->plugin);
  if (o->demo) {
    fprintf(f,
            "autoccl-sim: demo: the real plugin tunes %d simulated ranks on the %s landscape in\n"
            "  real time; compute interference '%s' (steps; about 8 a second): the\n"
            "  decisions drift under it and re-tune, then re-tune back when it ends.\n",
            o->nranks, o->landscape, o->interf_spec);
    int mc = acl_land_max_channels(land);
    /* the 2x H200 landscape measured with the ceiling raised: its decisions
     * at more channels need that ceiling */
    if (strncmp(acl_land_name(land), "h200x2", 6) == 0 && mc > SIM_STOCK_CHANNELS)
      fprintf(f,
              "  Channels: the landscape builds %d, as NCCL does with the ceiling raised\n"
              "  (NCCL_MIN_NCHANNELS=%d; it ships with %d here): a /%dch decision needs that\n"
              "  setting in a real job (docs/channels.md).\n",
              mc, mc, SIM_STOCK_CHANNELS, mc);
    if (o->duration_s > 0)
      fprintf(f, "  Runs %.0f s; Ctrl-C stops it earlier and prints the report.\n", o->duration_s);
  }
  fflush(f);
}

static void print_where(const acl_sim_opts_t *o, int nprocs, const char *off)
{
  FILE *f = o->json ? stderr : stdout;
  if (o->port < 0)
    return;
  if (off) {
    fprintf(f, "  endpoint off: %s; the report uses the time inside getCollInfo\n", off);
    if (o->port > 0)
      fprintf(f,
              "  nothing to watch: is another autoccl-sim (a demo) running? Stop it, or pass\n"
              "  --port P with P..P+%d free (e.g. --port %d)%s\n",
              nprocs - 1, o->port + 100, o->demo ? "; Ctrl-C stops this run" : "");
    fflush(f);
    return;
  }
  char top[PATH_MAX];
  top_path(top, sizeof(top));
  if (o->demo)
    fprintf(f, "Open a second terminal and watch:\n");
  fprintf(f, "  live tuning:  %s --url http://127.0.0.1:%d", top, o->port);
  if (nprocs > 1 && o->nhosts > 1) /* one URL per host: each names its local ranks */
    fprintf(f, " --url http://127.0.0.1:%d", o->port + nprocs / o->nhosts);
  fprintf(f,
          "\n"
          "  dashboard:    http://127.0.0.1:%d/\n"
          "  Prometheus:   curl -s http://127.0.0.1:%d/metrics\n",
          o->port, o->port);
  if (nprocs > 1)
    fprintf(f, "  (rank processes serve ports %d..%d; each URL shows its host's local ranks)\n",
            o->port, o->port + nprocs - 1);
  if (o->demo)
    fprintf(f, "  Look for: STATE exploring -> converged, SPEEDUP, SAVED (net time saved after\n"
               "  exploration cost); when interference starts, retuning, then converged again;\n"
               "  Ctrl-C prints the job report.\n");
  fflush(f);
}

/* The search's state machine as a Mermaid state diagram, from its
 * transition table (docs/tuner.md holds a copy, checked by a test). */
static void mermaid_id(char *buf, size_t len, acl_phase_t ph)
{
  snprintf(buf, len, "%s", acl_phase_name(ph));
  for (char *p = buf; *p; p++)
    if (*p == '-')
      *p = '_';
}

static int dump_states(void)
{
  char a[32], b[32];
  acl_phase_t from, to;
  const char *ev;
  puts("stateDiagram-v2");
  for (int ph = 0; ph < ACL_PHASE_COUNT; ph++)
    if (strchr(acl_phase_name((acl_phase_t)ph), '-')) {
      mermaid_id(a, sizeof a, (acl_phase_t)ph);
      printf("  state \"%s\" as %s\n", acl_phase_name((acl_phase_t)ph), a);
    }
  printf("  [*] --> %s\n", acl_phase_name(ACL_PHASE_WARMUP));
  for (int i = 0; acl_search_transition(i, &from, &ev, &to) == 0; i++) {
    mermaid_id(a, sizeof a, from);
    mermaid_id(b, sizeof b, to);
    printf("  %s --> %s: %s\n", a, b, ev);
    if (acl_search_phase_waits(to)) /* a wait returns where it came from */
      printf("  %s --> %s: next-block\n", b, a);
  }
  return 0;
}

int main(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--bench") == 0)
      return acl_sim_bench_main(argc, argv);
    if (strcmp(argv[i], "--dump-states") == 0)
      return dump_states();
  }
  acl_sim_opts_t o;
  int code = ACL_SIM_EXIT_USAGE;
  int rc = acl_sim_parse_args(argc, argv, &o, &code);
  if (rc != 0)
    return rc > 0 ? code : ACL_SIM_EXIT_USAGE;

  acl_sim_world_t w;
  memset(&w, 0, sizeof(w));
  w.o = &o;
  w.parent_pid = (int)getpid();
  const char *tmpdir = getenv("TMPDIR");
  tmpdir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  acl_sim_reap_stale(tmpdir); /* what killed runs left */
  int guard_fd = -1;
  char err[512] = "";
  int nprocs = o.nranks / o.ranks_per_proc, status = ACL_SIM_EXIT_FAILED;
  int busy = o.demo && o.port > 0 ? busy_port(o.port, nprocs) : 0;
  if (busy) {
    fprintf(stderr,
            "autoccl-sim: port %d is in use (another autoccl-sim --demo?); the demo serves its\n"
            "  %d rank processes on ports %d..%d. Stop the other run, or pass --port P with\n"
            "  P..P+%d free (e.g. --port %d).\n",
            busy, nprocs, o.port, o.port + nprocs - 1, nprocs - 1, o.port + 100);
    return ACL_SIM_EXIT_USAGE;
  }
  pid_t *pids = calloc((size_t)nprocs, sizeof(*pids));
  char **states = NULL; /* per rank process: its last /api/v1/state */
  int feed_fd = -1;
  acl_simfeed_t *feed = MAP_FAILED;
  acl_sim_step_t *step = NULL;
  w.ctl = MAP_FAILED;
  if (!pids)
    goto out;
  if (!(w.land = make_landscape(o.landscape, o.nccl230, err, sizeof(err)))) {
    fprintf(stderr, "autoccl-sim: landscape %s: %s\n", o.landscape, err);
    status = ACL_SIM_EXIT_USAGE;
    goto out;
  }
  if (!(step = acl_sim_step_create(o.mix, o.nranks, o.ncomms))) {
    fprintf(stderr, "autoccl-sim: out of memory building the workload\n");
    goto out;
  }
  w.step = step;
  if (o.nhosts > 1 && o.coord_port == 0 && (o.coord_port = free_port()) <= 0) {
    fprintf(stderr, "autoccl-sim: no free loopback port for the coordinator\n");
    goto out;
  }
  w.ctl =
      mmap(NULL, sizeof(acl_sim_ctl_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (w.ctl == MAP_FAILED) {
    fprintf(stderr, "autoccl-sim: mmap: %s\n", strerror(errno));
    goto out;
  }
  memset(w.ctl, 0, sizeof(*w.ctl));
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t nonce = acl_sim_mix(((uint64_t)now.tv_sec << 30) ^ (uint64_t)now.tv_nsec ^
                               ((uint64_t)getpid() << 16));
  /* Distinct per run, so concurrent runs never share consensus segments. */
  for (int c = 0; c < o.ncomms; c++)
    w.ctl->comm_ids[c] = acl_sim_mix(nonce + (uint64_t)c) | 1;
  w.ctl->start_clock_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
  atomic_store(&w.ctl->stop_step, o.steps ? o.steps : UINT64_MAX);

  snprintf(w.feed_name, sizeof(w.feed_name), "/autoccl-sim-%d-%08llx", (int)getpid(),
           (unsigned long long)(nonce & 0xffffffffu));
  char why[200] = "";
  if (acl_shm_create(w.feed_name, &feed_fd, why, sizeof(why)) != ACL_SHM_OK) {
    fprintf(stderr, "autoccl-sim: simulator feed %s: %s\n", w.feed_name,
            why[0] ? why : "the name is taken");
    w.feed_name[0] = '\0'; /* not ours to remove */
    goto out;
  }
  if (ftruncate(feed_fd, sizeof(acl_simfeed_t)) != 0 ||
      (feed = mmap(NULL, sizeof(acl_simfeed_t), PROT_READ | PROT_WRITE, MAP_SHARED, feed_fd, 0)) ==
          MAP_FAILED) {
    fprintf(stderr, "autoccl-sim: simulator feed %s: %s\n", w.feed_name, strerror(errno));
    goto out;
  }
  feed->magic = ACL_SIMFEED_MAGIC;
  feed->nranks = (uint32_t)o.nranks;

  /* The pid in the name lets a later run remove it if this one is killed
   * with its guardian. */
  snprintf(w.logdir, sizeof(w.logdir), "%s/autoccl-sim.%d.XXXXXX", tmpdir, (int)getpid());
  if (!mkdtemp(w.logdir)) {
    fprintf(stderr, "autoccl-sim: cannot create a directory for decision logs (%s): %s\n", w.logdir,
            strerror(errno));
    w.logdir[0] = '\0';
    goto out;
  }
  guard_fd = acl_sim_guard_start(&w, o.ncomms);
  if (!o.quiet)
    print_head(&o, nprocs, w.land);

  struct sigaction sa = {0};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  fflush(NULL);
  double t0 = acl_mono_s();
  for (int p = 0; p < nprocs; p++) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "autoccl-sim: fork: %s\n", strerror(errno));
      kill_all(pids, p);
      goto out;
    }
    if (pid == 0) {
      /* The parent stops ranks cleanly on Ctrl-C; ranks die with it. */
      signal(SIGINT, SIG_IGN);
      signal(SIGTERM, SIG_DFL);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != w.parent_pid)
        _exit(ACL_SIM_EXIT_FAILED);
      _exit(acl_sim_proc_main(&w, p));
    }
    pids[p] = pid;
  }

  char ep_off_buf[200];
  const char *ep_off = check_endpoints(&o, pids, nprocs, ep_off_buf, sizeof(ep_off_buf));
  double checked_at = acl_mono_s();
  if (!o.quiet)
    print_where(&o, nprocs, ep_off);

  /* Watch: stop at the deadline, fail on a crash or a hang. */
  bool tty = isatty(2) && !o.quiet, failed = false;
  double last_line = 0, last_move = acl_mono_s();
  uint64_t last_calls = 0;
  for (;;) {
    double el = acl_mono_s() - t0;
    for (int p = 0; p < nprocs && !failed; p++) {
      int st;
      if (pids[p] > 0 && waitpid(pids[p], &st, WNOHANG) == pids[p]) {
        pids[p] = 0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
          int r = p * o.ranks_per_proc;
          snprintf(err, sizeof(err), "rank process %d (ranks %d..%d) %s %d%s%s", p, r,
                   r + o.ranks_per_proc - 1, WIFEXITED(st) ? "exited with" : "was killed by signal",
                   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
                   w.ctl->rank[r].error[0] ? ": " : "", w.ctl->rank[r].error);
          failed = true;
        }
      }
    }
    if (failed)
      break;
    bool stop_now = (o.duration_s > 0 && el >= o.duration_s) || interrupted;
    if (stop_now && !atomic_load(&w.ctl->stopping)) {
      atomic_store(&w.ctl->stopping, 1u);
      uint64_t m = 0;
      for (int r = 0; r < o.nranks; r++) {
        uint64_t s = atomic_load(&w.ctl->rank[r].progress);
        m = s > m ? s : m;
      }
      uint64_t cur = atomic_load(&w.ctl->stop_step);
      atomic_store(&w.ctl->stop_step, m + 1 < cur ? m + 1 : cur);
    }
    if (interrupted > 1) {
      snprintf(err, sizeof(err), "interrupted");
      failed = true;
      break;
    }
    int finished = 0;
    uint64_t calls = 0;
    for (int r = 0; r < o.nranks; r++) {
      finished += atomic_load(&w.ctl->rank[r].state) >= 2;
      calls += w.ctl->rank[r].calls;
    }
    if (finished == o.nranks)
      break;
    if (calls != last_calls) {
      last_calls = calls;
      last_move = acl_mono_s();
    } else if (acl_mono_s() - last_move > o.hang_timeout_s) {
      snprintf(err, sizeof(err),
               "no rank made a call for %.1f s (hang: a consensus deadlock?); %d of %d ranks "
               "had finished",
               o.hang_timeout_s, finished, o.nranks);
      failed = true;
      break;
    }
    if (!o.quiet)
      progress(&o, w.ctl, el, tty, &last_line);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  double wall = acl_mono_s() - t0;
  if (tty)
    fputc('\n', stderr);
  if (failed) {
    kill_all(pids, nprocs);
    fprintf(stderr, "autoccl-sim: %s\n", err);
    for (int r = 0; r < o.nranks; r++)
      if (w.ctl->rank[r].error[0])
        fprintf(stderr, "autoccl-sim: %s\n", w.ctl->rank[r].error);
    goto out;
  }
  /* Read the plugin's own consensus figure while the ranks are still up. */
  double ep_wait = 0;
  /* ... and the state they show last: the job report must say the same. */
  states = calloc((size_t)nprocs, sizeof(*states));
  /* An endpoint answers with one render for 100 ms (docs/api.md): a run
   * shorter than that after the check would read the check's mid-run
   * state back (a captured workload shown converged, 1,192 of its 1,600
   * calls). */
  double fresh_in = checked_at + ENDPOINT_REUSE_S - acl_mono_s();
  if (!ep_off && fresh_in > 0) {
    struct timespec ts = {0, (long)(fresh_in * 1e9)};
    nanosleep(&ts, NULL);
  }
  for (int p = 0; !ep_off && p < nprocs; p++) {
    double v = acl_sim_fetch_state(o.port + p, 2.0, (int)pids[p], states ? &states[p] : NULL);
    if (v < 0)
      ep_off =
          v == -2 ? "another process took a rank's port" : "a rank's endpoint stopped answering";
    else
      ep_wait += v;
  }
  atomic_store(&w.ctl->release, 1u);
  double deadline = acl_mono_s() + 10 + o.hang_timeout_s;
  for (int p = 0; p < nprocs; p++) {
    int st;
    pid_t got = 0;
    while (pids[p] > 0 && (got = waitpid(pids[p], &st, WNOHANG)) == 0 && acl_mono_s() < deadline) {
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (pids[p] > 0 && got == pids[p]) {
      pids[p] = 0;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        int r = p * o.ranks_per_proc;
        fprintf(stderr, "autoccl-sim: rank process %d failed while finalizing (%s %d)%s%s\n", p,
                WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
                w.ctl->rank[r].error[0] ? ": " : "", w.ctl->rank[r].error);
        failed = true;
      }
    } else if (pids[p] > 0) {
      fprintf(stderr, "autoccl-sim: rank process %d did not finish finalize in time\n", p);
      failed = true;
    }
  }
  if (failed) {
    kill_all(pids, nprocs);
    goto out;
  }
  status = acl_sim_report(&w, wall, ep_wait, ep_off, states);
  {
    /* the user's, read through the settings table: ranks got the sim's own */
    acl_config_t user;
    acl_config_defaults(&user);
    acl_config_env_one(&user, "AUTOCCL_REPORT");
    acl_sim_job_copy(&w, user.report_path);
  }
out:
  for (int p = 0; states && p < nprocs; p++)
    free(states[p]);
  free(states);
  if (pids)
    kill_all(pids, nprocs);
  if (feed != MAP_FAILED)
    munmap(feed, sizeof(acl_simfeed_t));
  if (feed_fd >= 0)
    close(feed_fd);
  acl_sim_cleanup(&w, o.ncomms); /* ranks are gone: their segments too */
  if (guard_fd >= 0)
    close(guard_fd);
  if (w.ctl != MAP_FAILED)
    munmap(w.ctl, sizeof(acl_sim_ctl_t));
  acl_sim_step_destroy(step);
  acl_land_destroy(w.land);
  free(pids);
  return status;
}
