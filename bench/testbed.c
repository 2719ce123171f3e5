/* Several ranks on one GPU (--ranks-per-gpu), CUDA MPS (detected, or started
 * with --mps start) and the environment every JSON record carries. No CUDA
 * here: NCCL's version comes in as a number. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

extern char **environ;

#define MPS_DEFAULT_PIPE_DIR "/tmp/nvidia-mps"
#define MPS_TOOL "nvidia-cuda-mps-control"

static int mps_started; /* this process started the daemon (--mps start) */
static char mps_tmp[ACL_BENCH_PATH_MAX];

int acl_bench_gpus_needed(const acl_bench_cfg_t *c)
{
  int k = c->ranks_per_gpu > 0 ? c->ranks_per_gpu : 1;
  return (c->ngpus + k - 1) / k;
}

int acl_bench_rank_device(const acl_bench_cfg_t *c, int rank)
{
  /* consecutive ranks share a GPU, as NCCL orders a node's local ranks */
  return rank / (c->ranks_per_gpu > 0 ? c->ranks_per_gpu : 1);
}

static const char *mps_pipe_dir(void)
{
  const char *d = getenv("CUDA_MPS_PIPE_DIRECTORY");
  return d && *d ? d : MPS_DEFAULT_PIPE_DIR;
}

/* The control daemon listens on <pipe dir>/control while it runs. A daemon
 * told to quit leaves its socket behind: taken for a running daemon, it had
 * two processes time-slice one GPU (20 s for 11,000 calls of 64 KiB) under
 * a record that said MPS was on. So a socket must also take a connection. */
static enum { MPS_NONE, MPS_LISTENING, MPS_STALE } mps_probe(void)
{
  char p[ACL_BENCH_PATH_MAX + 16];
  struct stat st;
  snprintf(p, sizeof(p), "%s/control", mps_pipe_dir());
  if (stat(p, &st) != 0)
    return MPS_NONE;
  if (S_ISFIFO(st.st_mode))
    return MPS_LISTENING;
  if (!S_ISSOCK(st.st_mode))
    return MPS_NONE;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  size_t n = strlen(p);
  if (n >= sizeof(a.sun_path))
    return MPS_LISTENING; /* cannot tell: trust the socket, as before */
  memcpy(a.sun_path, p, n + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return MPS_LISTENING;
  /* only "nobody listens" says stale; a type mismatch still means a listener */
  int stale = connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno == ECONNREFUSED;
  close(fd);
  return stale ? MPS_STALE : MPS_LISTENING;
}

bool acl_bench_mps_running(void) { return mps_probe() == MPS_LISTENING; }

const char *acl_bench_mps_state(void)
{
  if (mps_started)
    return "started";
  return acl_bench_mps_running() ? "on" : "off";
}

/* Runs the MPS tool with stdin from `input` (NULL: /dev/null); its exit
 * status, or -1 when it could not be run. */
static int run_mps_tool(const char *arg, const char *input)
{
  int in[2];
  if (pipe(in))
    return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t p = fork();
  if (p < 0) {
    close(in[0]);
    close(in[1]);
    return -1;
  }
  if (p == 0) {
    dup2(in[0], 0);
    close(in[0]);
    close(in[1]);
    if (arg)
      execlp(MPS_TOOL, MPS_TOOL, arg, (char *)NULL);
    else
      execlp(MPS_TOOL, MPS_TOOL, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  if (input) {
    ssize_t w = write(in[1], input, strlen(input));
    (void)w;
  }
  close(in[1]);
  int st = 0;
  while (waitpid(p, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int set_mps_dir(const char *var, const char *sub)
{
  const char *v = getenv(var);
  if (v && *v)
    return 0;
  char d[ACL_BENCH_PATH_MAX + 16];
  snprintf(d, sizeof(d), "%s/%s", mps_tmp, sub);
  if (mkdir(d, 0700) && errno != EEXIST)
    return -1;
  return setenv(var, d, 1);
}

int acl_bench_mps_start(void)
{
  if (acl_bench_mps_running())
    return 0; /* someone else's daemon: use it, leave it running */
  /* the daemon and every CUDA process find each other through these two
   * folders; unset ones get a fresh private pair */
  if (!getenv("CUDA_MPS_PIPE_DIRECTORY") || !getenv("CUDA_MPS_LOG_DIRECTORY")) {
    snprintf(mps_tmp, sizeof(mps_tmp), "%s/autoccl-bench-mps.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(mps_tmp) || set_mps_dir("CUDA_MPS_PIPE_DIRECTORY", "pipe") ||
        set_mps_dir("CUDA_MPS_LOG_DIRECTORY", "log")) {
      fprintf(stderr, ACL_BENCH_NAME ": error: --mps start: cannot make MPS folders under %s: %s\n",
              mps_tmp, strerror(errno));
      return ACL_BENCH_EXIT_RUNTIME;
    }
  }
  int rc = run_mps_tool("-d", NULL);
  if (rc == 127 || rc < 0) {
    fprintf(stderr,
            ACL_BENCH_NAME ": error: --mps start: cannot run " MPS_TOOL " (not on PATH?); start "
                           "MPS yourself or drop --mps start\n");
    return ACL_BENCH_EXIT_RUNTIME;
  }
  if (rc != 0) {
    fprintf(stderr, ACL_BENCH_NAME ": error: --mps start: " MPS_TOOL " -d exited with %d (log in %s)\n",
            rc, getenv("CUDA_MPS_LOG_DIRECTORY"));
    return ACL_BENCH_EXIT_RUNTIME;
  }
  for (int i = 0; i < 100 && !acl_bench_mps_running(); i++)
    usleep(50000); /* the daemon forks before it opens its pipe */
  if (!acl_bench_mps_running()) {
    fprintf(stderr, ACL_BENCH_NAME ": error: --mps start: no control pipe in %s after 5 s\n",
            mps_pipe_dir());
    return ACL_BENCH_EXIT_RUNTIME;
  }
  mps_started = 1;
  return 0;
}

void acl_bench_mps_stop(void)
{
  if (!mps_started)
    return;
  mps_started = 0;
  if (run_mps_tool(NULL, "quit\n") != 0)
    fprintf(stderr, ACL_BENCH_NAME ": warning: could not stop the MPS daemon (%s)\n",
            mps_pipe_dir());
}

int acl_bench_testbed_check(const acl_bench_cfg_t *c, int nccl_version)
{
  if (c->ranks_per_gpu <= 1)
    return 0;
  if (nccl_version > 0 && nccl_version < ACL_BENCH_NCCL_MULTI_RANK) {
    char v[32];
    acl_bench_nccl_version_str(nccl_version, v, sizeof(v));
    fprintf(stderr,
            ACL_BENCH_NAME ": error: --ranks-per-gpu %d: NCCL %s runs one rank per GPU (it stops "
                           "with \"Duplicate GPU detected\"); several ranks on one GPU need NCCL "
                           "2.30.3 or later\n",
            c->ranks_per_gpu, v);
    return ACL_BENCH_EXIT_RUNTIME;
  }
  const char *e = getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  if (e && strcmp(e, "1") != 0) {
    fprintf(stderr,
            ACL_BENCH_NAME ": error: --ranks-per-gpu %d needs NCCL_MULTI_RANK_GPU_ENABLE=1, but it "
                           "is '%s'\n",
            c->ranks_per_gpu, e);
    return ACL_BENCH_EXIT_USAGE;
  }
  if (!e)
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1); /* NCCL refuses shared GPUs without it */
  int mps = c->procs && !c->internal_child ? mps_probe() : MPS_LISTENING;
  if (mps != MPS_LISTENING)
    fprintf(stderr,
            ACL_BENCH_NAME ": WARNING: --procs puts %d processes on each GPU and no MPS daemon "
                           "runs (%s in %s): their CUDA contexts time-slice, so the times below "
                           "are context switches, not NCCL. Use --mps start, start "
                           "nvidia-cuda-mps-control -d yourself, or use --single.\n",
            c->ranks_per_gpu,
            mps == MPS_STALE ? "a control socket that no daemon listens on" : "no control pipe",
            mps_pipe_dir());
  return 0;
}

/* The CPUs this process may run on, as a list ("0-3,8"); "" when unknown.
 * Small collectives are bound by the host, and on one H100 the same 64 KiB
 * AllReduce took 18-20 or 25-53 us a call from one process to the next: a
 * record says where its processes could run (taskset narrows it). */
static void cpu_list(char *out, size_t n)
{
  cpu_set_t set;
  CPU_ZERO(&set);
  if (n == 0)
    return;
  out[0] = 0;
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return;
  size_t len = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set))
      continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
      e++;
    int w = e > c ? snprintf(out + len, n - len, "%s%d-%d", len ? "," : "", c, e)
                  : snprintf(out + len, n - len, "%s%d", len ? "," : "", c);
    if (w < 0 || (size_t)w >= n - len) {
      out[0] = 0; /* too long to say: unknown rather than cut */
      return;
    }
    len += (size_t)w;
    c = e;
  }
}

void acl_bench_json_testbed(FILE *f, const acl_bench_cfg_t *c)
{
  char cpus[512];
  cpu_list(cpus, sizeof(cpus));
  fprintf(f, ",\"ranks_per_gpu\":%d,\"gpus\":%d,\"mps\":\"%s\",\"cpus\":", c->ranks_per_gpu,
          acl_bench_gpus_needed(c), acl_bench_mps_state());
  if (cpus[0])
    acl_bench_json_str(f, cpus);
  else
    fputs("null", f);
  fputs(",\"env\":{", f);
  int n = 0;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || (strncmp(*e, "NCCL_", 5) != 0 && strncmp(*e, "AUTOCCL_", 8) != 0))
      continue;
    char name[128];
    size_t l = (size_t)(eq - *e) < sizeof(name) - 1 ? (size_t)(eq - *e) : sizeof(name) - 1;
    memcpy(name, *e, l);
    name[l] = 0;
    fputs(n++ ? "," : "", f);
    acl_bench_json_str(f, name);
    fputc(':', f);
    acl_bench_json_str(f, eq + 1);
  }
  fputc('}', f);
}
