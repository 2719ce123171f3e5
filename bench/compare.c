/* --compare / --sweep: run every mode (and sweep config) in a fresh set of
 * processes — this executable re-executed with --internal-child — with a
 * clean NCCL environment, interleaving repetitions so machine drift cancels;
 * compare_report.c then prints per-mode tables, the oracle and the ratios.
 * No CUDA here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/compare_int.h"
#include "core/clock.h"

extern char **environ;

static volatile sig_atomic_t g_child_pgid;

static void on_signal(int sig)
{
  if (g_child_pgid > 0)
    kill(-(pid_t)g_child_pgid, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

static int self_exe(char *buf, size_t len)
{
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  return 0;
}

int acl_bench_default_plugin_path(char *buf, size_t len)
{
  char exe[ACL_BENCH_PATH_MAX], d1[ACL_BENCH_PATH_MAX], d2[ACL_BENCH_PATH_MAX];
  if (self_exe(exe, sizeof(exe)))
    return -1;
  snprintf(d1, sizeof(d1), "%s", exe);
  char *dir = dirname(d1); /* build/bench */
  snprintf(d2, sizeof(d2), "%s", dir);
  char *parent = dirname(d2); /* build */
  /* build/libnccl-tuner-autoccl.so, build/tuner/..., then beside the exe */
  char alt[ACL_BENCH_PATH_MAX + 64];
  snprintf(alt, sizeof(alt), "%s/tuner/libnccl-tuner-autoccl.so", parent);
  if (access(alt, R_OK) == 0) {
    acl_bench_str_copy(buf, len, alt);
  }
  snprintf(alt, sizeof(alt), "%s/libnccl-tuner-autoccl.so", dir);
  if (access(alt, R_OK) == 0)
    acl_bench_str_copy(buf, len, alt);
  snprintf(alt, sizeof(alt), "%s/libnccl-tuner-autoccl.so", parent);
  if (access(alt, R_OK) == 0)
    acl_bench_str_copy(buf, len, alt);
  if (access(buf, R_OK) == 0)
    return 0;
  acl_bench_str_copy(buf, len, alt);
  return 1; /* buf holds the preferred (missing) path */
}

/* variables that change NCCL's choices: removed from every child's
 * environment, then set per mode / sweep config */
static const char *const strip_vars[] = {
    "NCCL_TUNER_PLUGIN",    "NCCL_PROFILER_PLUGIN",   "NCCL_ALGO",
    "NCCL_PROTO",           "NCCL_MIN_NCHANNELS",     "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_CTAS",        "NCCL_MAX_CTAS",          "NCCL_NTHREADS",
    "NCCL_BUFFSIZE",        "NCCL_TUNER_CONFIG_FILE", "NCCL_LL_THRESHOLD",
    "NCCL_LL128_THRESHOLD", "NCCL_TREE_THRESHOLD",    "NCCL_NCHANNELS_PER_NET_PEER",
};

static int stripped(const char *kv, int keep_autoccl)
{
  if (!keep_autoccl && strncmp(kv, "AUTOCCL_", 8) == 0)
    return 1;
  for (size_t i = 0; i < sizeof(strip_vars) / sizeof(strip_vars[0]); i++) {
    size_t l = strlen(strip_vars[i]);
    if (strncmp(kv, strip_vars[i], l) == 0 && kv[l] == '=')
      return 1;
  }
  return 0;
}

/* same name as one of the job's own assignments? */
static int overridden(const char *kv, const acl_bench_job_t *j)
{
  const char *eq = strchr(kv, '=');
  size_t l = eq ? (size_t)(eq - kv) : strlen(kv);
  for (int i = 0; i < j->nenv; i++)
    if (strncmp(j->env[i], kv, l) == 0 && j->env[i][l] == '=')
      return 1;
  return 0;
}

static char **build_env(const acl_bench_job_t *j)
{
  size_t n = 0;
  for (char **e = environ; *e; e++)
    n++;
  char **out = calloc(n + (size_t)j->nenv + 1, sizeof(char *));
  if (!out)
    return NULL;
  size_t k = 0;
  for (char **e = environ; *e; e++)
    if (!stripped(*e, j->keep_autoccl) && !overridden(*e, j))
      out[k++] = *e;
  for (int i = 0; i < j->nenv; i++)
    out[k++] = j->env[i];
  out[k] = NULL;
  return out;
}

int acl_bench_job_setenv(acl_bench_job_t *j, const char *fmt, const char *a, const char *b)
{
  if (j->nenv >= ACL_BENCH_JOB_MAX_ENV)
    return -1;
  char buf[ACL_BENCH_PATH_MAX + 128];
  snprintf(buf, sizeof(buf), fmt, a, b);
  /* replace an earlier assignment of the same variable */
  const char *eq = strchr(buf, '=');
  size_t l = eq ? (size_t)(eq - buf) : strlen(buf);
  for (int i = 0; i < j->nenv; i++)
    if (strncmp(j->env[i], buf, l) == 0 && j->env[i][l] == '=') {
      free(j->env[i]);
      j->env[i] = strdup(buf);
      return j->env[i] ? 0 : -1;
    }
  j->env[j->nenv] = strdup(buf);
  if (!j->env[j->nenv])
    return -1;
  j->nenv++;
  return 0;
}

int acl_bench_job_alloc(acl_bench_job_t *j, int reps, int nsizes)
{
  size_t n = (size_t)reps * (size_t)nsizes;
  j->reps_max = reps;
  j->t = calloc(n, sizeof(double));
  j->incl = calloc(n, sizeof(double));
  j->gemm = calloc(n, sizeof(double));
  j->st = calloc(n, sizeof(int));
  j->wrong = calloc(n, sizeof(long long));
  return (j->t && j->incl && j->gemm && j->st && j->wrong) ? 0 : -1;
}

static void job_free(acl_bench_job_t *j)
{
  for (int i = 0; i < j->nenv; i++)
    free(j->env[i]);
  free(j->t);
  free(j->incl);
  free(j->gemm);
  free(j->st);
  free(j->wrong);
}

/* --- child process ------------------------------------------------------ */

struct child_out {
  char *text;
  size_t len, cap;
};

static void out_append(struct child_out *o, const char *p, size_t n)
{
  if (o->len + n + 1 > o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 8192;
    while (cap < o->len + n + 1)
      cap *= 2;
    char *t = realloc(o->text, cap);
    if (!t)
      return;
    o->text = t;
    o->cap = cap;
  }
  memcpy(o->text + o->len, p, n);
  o->len += n;
  o->text[o->len] = 0;
}

/* returns the wait status, or -1 if the child could not be started; *timed_out set on timeout */
static int run_child(const char *exe, char **argv, char **envp, double timeout, struct child_out *o,
                     int *timed_out)
{
  int pfd[2];
  *timed_out = 0;
  if (pipe(pfd))
    return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(pfd[1], STDOUT_FILENO);
    close(pfd[0]);
    close(pfd[1]);
    execve(exe, argv, envp);
    fprintf(stderr, ACL_BENCH_NAME ": cannot execute %s: %s\n", exe, strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  g_child_pgid = pid;
  close(pfd[1]);
  double deadline = timeout > 0 ? acl_mono_s() + timeout : 0;
  char buf[65536];
  for (;;) {
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    int r = poll(&p, 1, 200);
    if (r < 0 && errno != EINTR)
      break;
    if (r > 0) {
      ssize_t n = read(pfd[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      out_append(o, buf, (size_t)n);
    }
    if (deadline > 0 && acl_mono_s() > deadline) {
      *timed_out = 1;
      kill(-pid, SIGKILL);
      break;
    }
  }
  close(pfd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (*timed_out)
    kill(-pid, SIGKILL);
  g_child_pgid = 0;
  return st;
}

/* parse #ACB lines into rep `rep` of job j; forward other lines to stderr */
static int parse_child(acl_bench_job_t *j, int rep, int nsizes, const size_t *sizes,
                       const char *text)
{
  int seen = 0;
  const char *p = text;
  while (p && *p) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    char line[1024];
    snprintf(line, sizeof(line), "%.*s", (int)(l < sizeof(line) - 1 ? l : sizeof(line) - 1), p);
    if (strncmp(line, "#ACB-SIZE ", 10) == 0) {
      int i, st;
      size_t bytes, count;
      double t, incl, mn, gemm;
      long long wrong;
      if (sscanf(line + 10, "%d %zu %zu %d %lf %lf %lf %lld %lf", &i, &bytes, &count, &st, &t,
                 &incl, &mn, &wrong, &gemm) == 9 &&
          i >= 0 && i < nsizes) {
        if (bytes != sizes[i])
          return -2;
        size_t k = (size_t)rep * (size_t)nsizes + (size_t)i;
        j->t[k] = st ? NAN : t;
        j->incl[k] = st ? NAN : incl;
        j->gemm[k] = gemm;
        j->st[k] = st;
        j->wrong[k] = wrong;
        seen++;
      }
    } else if (strncmp(line, "#ACB-RUN ", 9) == 0) {
      int rc, ver;
      double iso, run, duty;
      if (sscanf(line + 9, "%d %lf %lf %lf %d", &rc, &iso, &run, &duty, &ver) == 5) {
        if (ver > 0)
          j->nccl_version = ver;
        if (iso > 0)
          j->gemm_iso = iso;
        if (run > 0)
          j->gemm_run = run;
      }
    } else if (strncmp(line, "#ACB-ERR ", 9) == 0) {
      acl_bench_str_copy(j->err, sizeof(j->err), line + 9);
    } else if (l > 0) {
      fprintf(stderr, "%s\n", line);
    }
    p = nl ? nl + 1 : NULL;
  }
  return seen;
}

/* --- argv of a child ---------------------------------------------------- */

struct argv_buf {
  char *v[64];
  int n;
  char store[64][ACL_BENCH_PATH_MAX / 8];
};

static void av_add(struct argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void av_add(struct argv_buf *a, const char *fmt, ...)
{
  if (a->n >= 62)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->store[a->n], sizeof(a->store[0]), fmt, ap);
  va_end(ap);
  a->v[a->n] = a->store[a->n];
  a->n++;
  a->v[a->n] = NULL;
}

static void child_argv(const acl_bench_cfg_t *c, const acl_bench_job_t *j, const char *exe, int rep,
                       struct argv_buf *a)
{
  a->n = 0;
  av_add(a, "%s", exe);
  av_add(a, "--internal-child");
  av_add(a, "-b");
  av_add(a, "%zu", c->minbytes);
  av_add(a, "-e");
  av_add(a, "%zu", c->maxbytes);
  av_add(a, "-f");
  av_add(a, "%.17g", c->factor);
  av_add(a, "-n");
  av_add(a, "%d", c->iters);
  av_add(a, "-w");
  av_add(a, "%d", j->sweep ? c->sweep_warmup : c->warmup);
  if (c->warmup_s > 0 && !j->sweep) {
    av_add(a, "--warmup-time");
    av_add(a, "%.17g", c->warmup_s);
  }
  av_add(a, "-c");
  av_add(a, "%d", c->check);
  av_add(a, "-d");
  av_add(a, "%s", acl_bench_dtype_name(c->dt));
  av_add(a, "-o");
  av_add(a, "%s", acl_bench_op_name(c->op));
  av_add(a, "-C");
  av_add(a, "%s", acl_bench_coll_name(c->coll));
  av_add(a, "-g");
  av_add(a, "%d", c->ngpus);
  av_add(a, "-r");
  av_add(a, "%d", c->root);
  av_add(a, c->procs ? "--procs" : "--single");
  av_add(a, "--ranks-per-gpu");
  av_add(a, "%d", c->ranks_per_gpu);
  if (c->fake_nccl_version) {
    av_add(a, "--fake-nccl-version");
    av_add(a, "%d", c->fake_nccl_version);
  }
  if (c->inplace)
    av_add(a, "--inplace");
  if (c->gemm) {
    av_add(a, "--interference");
    av_add(a, "gemm:%.17g", c->gemm_duty);
    av_add(a, "--gemm-size");
    av_add(a, "%d", c->gemm_n);
  }
  if (c->fake)
    av_add(a, "--fake");
  av_add(a, "--label");
  av_add(a, "%s", j->name);
  if (c->trace_dir[0]) {
    char nm[64];
    size_t k = 0;
    for (const char *p = j->name; *p && k + 1 < sizeof(nm); p++) /* Ring/LL/32 -> ring-ll-32 */
      nm[k++] = *p == '/' ? '-' : (char)tolower((unsigned char)*p);
    nm[k] = 0;
    av_add(a, "--trace-file");
    av_add(a, "%s/%s-rep%d.jsonl.gz", c->trace_dir, nm, rep);
  }
}

/* --- aggregation -------------------------------------------------------- */

static int job_all_failed(const acl_bench_job_t *j, int rep, int nsizes)
{
  for (int s = 0; s < nsizes; s++)
    if (!j->st[(size_t)rep * (size_t)nsizes + (size_t)s])
      return 0;
  return 1;
}

/* --- main --------------------------------------------------------------- */

static void print_header(const acl_bench_compare_t *x)
{
  const acl_bench_cfg_t *c = &x->cfg;
  const acl_bench_job_t *jobs = x->jobs;
  printf("# " ACL_BENCH_NAME " " ACL_BENCH_VERSION
         " compare: %s %s %s, %d rank%s (%s), %s, sizes %zu..%zu x%g\n",
         acl_bench_coll_name(c->coll), acl_bench_dtype_name(c->dt), acl_bench_op_name(c->op),
         c->ngpus, c->ngpus == 1 ? "" : "s",
         c->procs ? "one process per GPU" : "one process, all GPUs",
         c->inplace ? "in-place" : "out-of-place", c->minbytes, c->maxbytes, c->factor);
  printf("# reps %d (interleaved, order rotated), warm-up %d + timed %d iterations per size and "
         "run, check %d\n",
         c->reps, c->warmup, c->iters, c->check);
  if (c->gemm)
    printf("# interference: cuBLAS bf16 GEMM %dx%dx%d on another stream of every GPU, duty %.2f\n",
           c->gemm_n, c->gemm_n, c->gemm_n, c->gemm_duty);
  for (int m = 0; m < c->nmodes; m++) {
    printf("# mode %-8s:", jobs[m].name);
    if (!jobs[m].nenv)
      printf(" NCCL defaults (no plugin, no NCCL_ALGO/PROTO/channel variables)");
    for (int e = 0; e < jobs[m].nenv; e++)
      printf(" %s", jobs[m].env[e]);
    printf("\n");
  }
  if (c->advise)
    printf("# advise: %d runs per repetition, each one start-up variable set against NCCL's "
           "defaults (mode default)\n",
           x->nj - c->nmodes);
  if (c->sweep) {
    printf("# sweep: %d configs of NCCL_ALGO {%s} x NCCL_PROTO {%s} x channels {%s} (0 = NCCL "
           "decides), warm-up %d, "
           "reps %d\n",
           x->nj - c->nmodes, c->sweep_algos, c->sweep_protos, c->sweep_channels, c->sweep_warmup,
           c->sweep_reps);
    if (x->skipped_algos[0])
      printf("# sweep: %s skipped because NCCL_NVLS_ENABLE=0\n", x->skipped_algos);
  }
  if (c->trace_dir[0])
    printf("# trace: every run's per-iteration times in %s/<config>-rep<R>.jsonl.gz "
           "(docs/trace.md)\n",
           c->trace_dir);
  fflush(stdout);
}

/* Runs repetition rep of job idx as a child process and files its results.
 * Returns rc (ACL_BENCH_EXIT_RUNTIME once a mode's run failed), -1 out of memory,
 * or -2 when the child's sizes are not ours (stop: nothing to compare). */
static int run_job(acl_bench_compare_t *x, int idx, int rep, int maxreps, int total_runs, int rc)
{
  const acl_bench_cfg_t *c = &x->cfg;
  acl_bench_job_t *j = &x->jobs[idx];
  int nsizes = x->nsizes;
  acl_bench_progress(c, "rep %d/%d  %-22s run %d/%d  %.0f s", rep + 1, maxreps, j->name,
                     x->done_runs + 1, total_runs, acl_mono_s() - x->t_start);
  struct argv_buf av;
  child_argv(c, j, x->exe, rep, &av);
  char **envp = build_env(j);
  if (!envp)
    return -1;
  struct child_out out = {0};
  int timed_out = 0;
  int st = run_child(x->exe, av.v, envp, c->child_timeout, &out, &timed_out);
  free(envp);
  for (int s = 0; s < nsizes; s++)
    j->st[(size_t)rep * (size_t)nsizes + (size_t)s] = 1;
  int seen = parse_child(j, rep, nsizes, x->sizes, out.text ? out.text : "");
  free(out.text);
  j->runs = rep + 1;
  x->done_runs++;
  if (seen == -2) {
    acl_bench_progress_done(c);
    fprintf(stderr, ACL_BENCH_NAME ": error: %s: the child's sizes differ from mine\n", j->name);
    return -2;
  }
  int child_rc = (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
  if (timed_out)
    snprintf(j->err, sizeof(j->err), "timed out after %.0f s (--child-timeout)", c->child_timeout);
  else if (st >= 0 && WIFSIGNALED(st) && !j->err[0])
    snprintf(j->err, sizeof(j->err), "killed by signal %d", WTERMSIG(st));
  int this_failed =
      timed_out || child_rc < 0 || (child_rc != 0 && child_rc != ACL_BENCH_EXIT_WRONG);
  if (this_failed)
    j->child_failures++;
  if (!j->sweep && this_failed) {
    acl_bench_progress_done(c);
    fprintf(stderr, ACL_BENCH_NAME ": error: mode %s, repetition %d failed: %s\n", j->name, rep + 1,
            j->err[0] ? j->err : "no result");
    rc = ACL_BENCH_EXIT_RUNTIME;
  }
  /* a (algo, proto) that fails everywhere with NCCL's channels is unsupported:
   * skip its other channel counts */
  if (j->sweep == 1 && rep == 0 && job_all_failed(j, rep, nsizes)) {
    for (int k = 0; k < x->nj; k++)
      if (x->jobs[k].sweep == 1 && k != idx && !strcmp(x->jobs[k].algo, j->algo) &&
          !strcmp(x->jobs[k].proto, j->proto) && x->jobs[k].runs == 0)
        x->jobs[k].skip = 1;
  }
  return rc;
}

/* Every repetition of every job, interleaved; the modes rotate each
 * repetition (A B C, B C A, ...) so drift cancels. Returns as run_job. */
static int run_all(acl_bench_compare_t *x)
{
  const acl_bench_cfg_t *c = &x->cfg;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  int total_runs = 0, rc = ACL_BENCH_EXIT_OK;
  for (int i = 0; i < x->nj; i++)
    total_runs += x->jobs[i].reps_max;
  x->t_start = acl_mono_s();
  int maxreps = c->reps > c->sweep_reps ? c->reps : c->sweep_reps;
  for (int rep = 0; rep < maxreps; rep++) {
    for (int q = 0; q < x->nj; q++) {
      int idx = q < c->nmodes ? (q + rep) % c->nmodes : q;
      acl_bench_job_t *j = &x->jobs[idx];
      if (rep >= j->reps_max)
        continue;
      if (j->skip) {
        x->done_runs++;
        j->runs = rep + 1;
        for (int s = 0; s < x->nsizes; s++)
          j->st[(size_t)rep * (size_t)x->nsizes + (size_t)s] = 1;
        continue;
      }
      rc = run_job(x, idx, rep, maxreps, total_runs, rc);
      if (rc < 0)
        return rc;
    }
  }
  acl_bench_progress_done(c);
  return rc;
}

int acl_bench_compare_main(const acl_bench_cfg_t *c0)
{
  acl_bench_compare_t *x = calloc(1, sizeof(*x));
  if (!x)
    return ACL_BENCH_EXIT_RUNTIME;
  x->cfg = *c0;
  const acl_bench_cfg_t *c = &x->cfg;
  int rc = ACL_BENCH_EXIT_OK;
  if (self_exe(x->exe, sizeof(x->exe))) {
    fprintf(stderr, ACL_BENCH_NAME ": error: cannot find my own executable (/proc/self/exe)\n");
    rc = ACL_BENCH_EXIT_RUNTIME;
    goto out;
  }
  if ((rc = acl_bench_resolve_paths(x)) != 0)
    goto out;
  x->nsizes = acl_bench_sizes(c, c->ngpus, x->sizes, ACL_BENCH_MAX_SIZES);
  x->es = acl_bench_dtype_size(c->dt);
  x->maxjobs = c->nmodes + 1024;
  x->jobs = calloc((size_t)x->maxjobs, sizeof(acl_bench_job_t));
  if (!x->jobs) {
    rc = ACL_BENCH_EXIT_RUNTIME;
    goto out;
  }
  if (acl_bench_add_mode_jobs(x) || (c->sweep && acl_bench_add_sweep_jobs(x)) ||
      (c->advise && acl_bench_add_advise_jobs(x)))
    goto oom;
  if (c->trace_dir[0] && acl_bench_mkdirs(c->trace_dir) != 0) {
    fprintf(stderr, ACL_BENCH_NAME ": error: --trace %s: cannot create it: %s\n", c->trace_dir,
            strerror(errno));
    rc = ACL_BENCH_EXIT_USAGE;
    goto out;
  }
  print_header(x);
  rc = run_all(x);
  if (rc == -1)
    goto oom;
  if (rc == -2)
    rc = ACL_BENCH_EXIT_RUNTIME; /* nothing to compare: no tables */
  else if (c->advise)
    rc = acl_bench_advise_report(x, rc);
  else
    rc = acl_bench_compare_report(x, rc);
  fflush(stdout);
  goto out;
oom:
  fprintf(stderr, ACL_BENCH_NAME ": error: out of memory\n");
  rc = ACL_BENCH_EXIT_RUNTIME;
out:
  for (int i = 0; i < x->nj; i++)
    job_free(&x->jobs[i]);
  free(x->jobs);
  free(x);
  return rc;
}
