/* --compare / --sweep: run every mode (and sweep config) in a fresh set of
 * processes — this executable re-executed with --internal-child — with a
 * clean NCCL environment, interleaving repetitions so machine drift cancels,
 * then print per-mode tables, the oracle and the ratios. No CUDA here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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

#include "bench.h"

extern char **environ;

#define JOB_MAX_ENV (BENCH_MAX_MODE_ENV + 8)

struct job {
  char name[64];
  int sweep; /* 0: a --compare mode; 1: a sweep config */
  char mode[16];
  char algo[32], proto[16];
  int nch;
  char *env[JOB_MAX_ENV];
  int nenv;
  int keep_autoccl;
  int skip;
  int runs;      /* repetitions run */
  int reps_max;  /* repetitions planned */
  double *t, *incl, *gemm; /* [rep][size] */
  int *st;
  long long *wrong;
  int child_failures;
  char err[320];
  double gemm_iso, gemm_run;
  int gemm_n;
};

static volatile sig_atomic_t g_child_pgid;

static void on_signal(int sig) {
  if (g_child_pgid > 0) kill(-(pid_t)g_child_pgid, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int self_exe(char *buf, size_t len) {
  ssize_t n = readlink("/proc/self/exe", buf, len - 1);
  if (n <= 0) return -1;
  buf[n] = 0;
  return 0;
}

int default_plugin_path(char *buf, size_t len) {
  char exe[BENCH_PATH_MAX], d1[BENCH_PATH_MAX], d2[BENCH_PATH_MAX];
  if (self_exe(exe, sizeof(exe))) return -1;
  snprintf(d1, sizeof(d1), "%s", exe);
  char *dir = dirname(d1); /* build/bench */
  snprintf(d2, sizeof(d2), "%s", dir);
  char *parent = dirname(d2); /* build */
  /* build/libnccl-tuner-autoccl.so, build/tuner/..., then beside the exe */
  char alt[BENCH_PATH_MAX + 64];
  snprintf(alt, sizeof(alt), "%s/tuner/libnccl-tuner-autoccl.so", parent);
  if (access(alt, R_OK) == 0) {
    str_copy(buf, len, alt);
  }
  snprintf(alt, sizeof(alt), "%s/libnccl-tuner-autoccl.so", dir);
  if (access(alt, R_OK) == 0) str_copy(buf, len, alt);
  snprintf(alt, sizeof(alt), "%s/libnccl-tuner-autoccl.so", parent);
  if (access(alt, R_OK) == 0) str_copy(buf, len, alt);
  if (access(buf, R_OK) == 0) return 0;
  str_copy(buf, len, alt);
  return 1; /* buf holds the preferred (missing) path */
}

/* variables that change NCCL's choices: removed from every child's
 * environment, then set per mode / sweep config */
static const char *const strip_vars[] = {
    "NCCL_TUNER_PLUGIN",   "NCCL_PROFILER_PLUGIN",   "NCCL_ALGO",          "NCCL_PROTO",
    "NCCL_MIN_NCHANNELS",  "NCCL_MAX_NCHANNELS",     "NCCL_MIN_CTAS",      "NCCL_MAX_CTAS",
    "NCCL_NTHREADS",       "NCCL_BUFFSIZE",          "NCCL_TUNER_CONFIG_FILE", "NCCL_LL_THRESHOLD",
    "NCCL_LL128_THRESHOLD", "NCCL_TREE_THRESHOLD",   "NCCL_NCHANNELS_PER_NET_PEER",
};

static int stripped(const char *kv, int keep_autoccl) {
  if (!keep_autoccl && strncmp(kv, "AUTOCCL_", 8) == 0) return 1;
  for (size_t i = 0; i < sizeof(strip_vars) / sizeof(strip_vars[0]); i++) {
    size_t l = strlen(strip_vars[i]);
    if (strncmp(kv, strip_vars[i], l) == 0 && kv[l] == '=') return 1;
  }
  return 0;
}

/* same name as one of the job's own assignments? */
static int overridden(const char *kv, const struct job *j) {
  const char *eq = strchr(kv, '=');
  size_t l = eq ? (size_t)(eq - kv) : strlen(kv);
  for (int i = 0; i < j->nenv; i++)
    if (strncmp(j->env[i], kv, l) == 0 && j->env[i][l] == '=') return 1;
  return 0;
}

static char **build_env(const struct job *j) {
  size_t n = 0;
  for (char **e = environ; *e; e++) n++;
  char **out = calloc(n + (size_t)j->nenv + 1, sizeof(char *));
  if (!out) return NULL;
  size_t k = 0;
  for (char **e = environ; *e; e++)
    if (!stripped(*e, j->keep_autoccl) && !overridden(*e, j)) out[k++] = *e;
  for (int i = 0; i < j->nenv; i++) out[k++] = j->env[i];
  out[k] = NULL;
  return out;
}

static int job_setenv(struct job *j, const char *fmt, const char *a, const char *b) {
  if (j->nenv >= JOB_MAX_ENV) return -1;
  char buf[BENCH_PATH_MAX + 128];
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
  if (!j->env[j->nenv]) return -1;
  j->nenv++;
  return 0;
}

static int job_alloc(struct job *j, int reps, int nsizes) {
  size_t n = (size_t)reps * (size_t)nsizes;
  j->reps_max = reps;
  j->t = calloc(n, sizeof(double));
  j->incl = calloc(n, sizeof(double));
  j->gemm = calloc(n, sizeof(double));
  j->st = calloc(n, sizeof(int));
  j->wrong = calloc(n, sizeof(long long));
  return (j->t && j->incl && j->gemm && j->st && j->wrong) ? 0 : -1;
}

static void job_free(struct job *j) {
  for (int i = 0; i < j->nenv; i++) free(j->env[i]);
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

static void out_append(struct child_out *o, const char *p, size_t n) {
  if (o->len + n + 1 > o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 8192;
    while (cap < o->len + n + 1) cap *= 2;
    char *t = realloc(o->text, cap);
    if (!t) return;
    o->text = t;
    o->cap = cap;
  }
  memcpy(o->text + o->len, p, n);
  o->len += n;
  o->text[o->len] = 0;
}

/* returns the wait status, or -1 if the child could not be started; *timed_out set on timeout */
static int run_child(const char *exe, char **argv, char **envp, double timeout, struct child_out *o, int *timed_out) {
  int pfd[2];
  *timed_out = 0;
  if (pipe(pfd)) return -1;
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
    fprintf(stderr, BENCH_NAME ": cannot execute %s: %s\n", exe, strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  g_child_pgid = pid;
  close(pfd[1]);
  double deadline = timeout > 0 ? wall_s() + timeout : 0;
  char buf[65536];
  for (;;) {
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    int r = poll(&p, 1, 200);
    if (r < 0 && errno != EINTR) break;
    if (r > 0) {
      ssize_t n = read(pfd[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out_append(o, buf, (size_t)n);
    }
    if (deadline > 0 && wall_s() > deadline) {
      *timed_out = 1;
      kill(-pid, SIGKILL);
      break;
    }
  }
  close(pfd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (*timed_out) kill(-pid, SIGKILL);
  g_child_pgid = 0;
  return st;
}

/* parse #ACB lines into rep `rep` of job j; forward other lines to stderr */
static int parse_child(struct job *j, int rep, int nsizes, const size_t *sizes, const char *text) {
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
      if (sscanf(line + 10, "%d %zu %zu %d %lf %lf %lf %lld %lf", &i, &bytes, &count, &st, &t, &incl, &mn, &wrong,
                 &gemm) == 9 &&
          i >= 0 && i < nsizes) {
        if (bytes != sizes[i]) return -2;
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
        if (iso > 0) j->gemm_iso = iso;
        if (run > 0) j->gemm_run = run;
      }
    } else if (strncmp(line, "#ACB-ERR ", 9) == 0) {
      str_copy(j->err, sizeof(j->err), line + 9);
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
  char store[64][128];
};

static void av_add(struct argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void av_add(struct argv_buf *a, const char *fmt, ...) {
  if (a->n >= 62) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->store[a->n], sizeof(a->store[0]), fmt, ap);
  va_end(ap);
  a->v[a->n] = a->store[a->n];
  a->n++;
  a->v[a->n] = NULL;
}

static void child_argv(const struct bench_cfg *c, const struct job *j, const char *exe, struct argv_buf *a) {
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
  av_add(a, "%s", dtype_name(c->dt));
  av_add(a, "-o");
  av_add(a, "%s", op_name(c->op));
  av_add(a, "-C");
  av_add(a, "%s", coll_name(c->coll));
  av_add(a, "-g");
  av_add(a, "%d", c->ngpus);
  av_add(a, "-r");
  av_add(a, "%d", c->root);
  av_add(a, c->procs ? "--procs" : "--single");
  if (c->inplace) av_add(a, "--inplace");
  if (c->gemm) {
    av_add(a, "--interference");
    av_add(a, "gemm:%.17g", c->gemm_duty);
    av_add(a, "--gemm-size");
    av_add(a, "%d", c->gemm_n);
  }
  if (c->fake) av_add(a, "--fake");
  av_add(a, "--label");
  av_add(a, "%s", j->name);
}

/* --- aggregation -------------------------------------------------------- */

static double job_time(const struct job *j, int s, int nsizes) {
  double v[1024];
  int n = 0;
  for (int r = 0; r < j->runs && n < 1024; r++) {
    size_t k = (size_t)r * (size_t)nsizes + (size_t)s;
    if (!j->st[k] && isfinite(j->t[k])) v[n++] = j->t[k];
  }
  return n ? median_of(v, n) : NAN;
}

static double job_incl(const struct job *j, int s, int nsizes) {
  double sum = 0;
  int n = 0;
  for (int r = 0; r < j->runs; r++) {
    size_t k = (size_t)r * (size_t)nsizes + (size_t)s;
    if (!j->st[k] && isfinite(j->incl[k])) {
      sum += j->incl[k];
      n++;
    }
  }
  return n ? sum / n : NAN;
}

static double job_gemm(const struct job *j, int s, int nsizes) {
  double sum = 0;
  int n = 0;
  for (int r = 0; r < j->runs; r++) {
    size_t k = (size_t)r * (size_t)nsizes + (size_t)s;
    if (!j->st[k] && j->gemm[k] >= 0) {
      sum += j->gemm[k];
      n++;
    }
  }
  return n ? sum / n : NAN;
}

static long long job_wrong(const struct job *j, int nsizes) {
  long long w = 0;
  for (int r = 0; r < j->runs; r++)
    for (int s = 0; s < nsizes; s++) w += j->wrong[(size_t)r * (size_t)nsizes + (size_t)s];
  return w;
}

static int job_all_failed(const struct job *j, int rep, int nsizes) {
  for (int s = 0; s < nsizes; s++)
    if (!j->st[(size_t)rep * (size_t)nsizes + (size_t)s]) return 0;
  return 1;
}

static double bw(size_t bytes, double us) { return us > 0 ? (double)bytes / 1e3 / us : NAN; }

static void ratio_cell(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, " %14.3f", v);
  else fprintf(f, " %14s", "-");
}

/* --- main --------------------------------------------------------------- */

int compare_main(const struct bench_cfg *c0) {
  struct bench_cfg cfg = *c0;
  struct bench_cfg *c = &cfg;
  char exe[BENCH_PATH_MAX];
  if (self_exe(exe, sizeof(exe))) {
    fprintf(stderr, BENCH_NAME ": error: cannot find my own executable (/proc/self/exe)\n");
    return BENCH_EXIT_RUNTIME;
  }
  int need_plugin = 0;
  for (int m = 0; m < c->nmodes; m++)
    if (strcmp(c->modes[m], "default") != 0) need_plugin = 1;
  char plugin_abs[BENCH_PATH_MAX] = "";
  if (need_plugin) {
    if (!c->plugin[0]) {
      if (default_plugin_path(c->plugin, sizeof(c->plugin)) != 0 && !c->fake) {
        fprintf(stderr,
                BENCH_NAME ": error: the autoccl plugin is not at %s (nor beside the executable); build it or pass "
                           "--plugin PATH\n",
                c->plugin);
        return BENCH_EXIT_USAGE;
      }
    }
    if (!realpath(c->plugin, plugin_abs)) {
      if (!c->fake) {
        fprintf(stderr, BENCH_NAME ": error: --plugin %s: %s\n", c->plugin, strerror(errno));
        return BENCH_EXIT_USAGE;
      }
      str_copy(plugin_abs, sizeof(plugin_abs), c->plugin);
    }
  }
  char table_abs[BENCH_PATH_MAX] = "";
  if (c->table[0] && !realpath(c->table, table_abs)) {
    fprintf(stderr, BENCH_NAME ": error: --table %s: %s\n", c->table, strerror(errno));
    return BENCH_EXIT_USAGE;
  }

  size_t sizes[BENCH_MAX_SIZES];
  int nsizes = bench_sizes(c, c->ngpus, sizes, BENCH_MAX_SIZES);
  size_t es = dtype_size(c->dt);

  /* jobs: modes first, then sweep configs */
  int maxjobs = c->nmodes + 1024;
  struct job *jobs = calloc((size_t)maxjobs, sizeof(struct job));
  if (!jobs) return BENCH_EXIT_RUNTIME;
  int nj = 0, rc = BENCH_EXIT_OK;
  for (int m = 0; m < c->nmodes; m++) {
    struct job *j = &jobs[nj++];
    snprintf(j->name, sizeof(j->name), "%s", c->modes[m]);
    snprintf(j->mode, sizeof(j->mode), "%s", c->modes[m]);
    if (strcmp(j->mode, "default") != 0) {
      j->keep_autoccl = 1;
      job_setenv(j, "NCCL_TUNER_PLUGIN=%s%s", plugin_abs, "");
      job_setenv(j, "NCCL_PROFILER_PLUGIN=%s%s", plugin_abs, "");
      if (!strcmp(j->mode, "table")) {
        job_setenv(j, "AUTOCCL_MODE=%s%s", "static", "");
        job_setenv(j, "AUTOCCL_TABLE=%s%s", table_abs, "");
      }
    }
    for (int e = 0; e < c->nmode_env; e++)
      if (!strcmp(c->mode_env[e].mode, "*") || !strcmp(c->mode_env[e].mode, j->mode))
        job_setenv(j, "%s%s", c->mode_env[e].assign, "");
    if (job_alloc(j, c->reps, nsizes)) goto oom;
  }
  const char *nvls_env = getenv("NCCL_NVLS_ENABLE");
  int nvls_off = nvls_env && strcmp(nvls_env, "0") == 0;
  char skipped_algos[256] = "";
  if (c->sweep) {
    char algos[256], protos[128], chans[256];
    str_copy(algos, sizeof(algos), c->sweep_algos);
    char *sa = NULL;
    for (char *a = strtok_r(algos, ",", &sa); a; a = strtok_r(NULL, ",", &sa)) {
      if (nvls_off && (!strcasecmp(a, "NVLS") || !strcasecmp(a, "NVLSTree"))) {
        size_t l = strlen(skipped_algos);
        snprintf(skipped_algos + l, sizeof(skipped_algos) - l, "%s%s", l ? "," : "", a);
        continue;
      }
      str_copy(protos, sizeof(protos), c->sweep_protos);
      char *sp = NULL;
      for (char *p = strtok_r(protos, ",", &sp); p; p = strtok_r(NULL, ",", &sp)) {
        str_copy(chans, sizeof(chans), c->sweep_channels);
        char *sc = NULL;
        for (char *ch = strtok_r(chans, ",", &sc); ch; ch = strtok_r(NULL, ",", &sc)) {
          if (nj >= maxjobs) break;
          struct job *j = &jobs[nj++];
          j->sweep = 1;
          snprintf(j->mode, sizeof(j->mode), "sweep");
          snprintf(j->algo, sizeof(j->algo), "%s", a);
          snprintf(j->proto, sizeof(j->proto), "%s", p);
          j->nch = atoi(ch);
          if (j->nch > 0) snprintf(j->name, sizeof(j->name), "%s/%s/%d", a, p, j->nch);
          else snprintf(j->name, sizeof(j->name), "%s/%s/auto", a, p);
          job_setenv(j, "NCCL_ALGO=%s%s", a, "");
          job_setenv(j, "NCCL_PROTO=%s%s", p, "");
          if (j->nch > 0) {
            job_setenv(j, "NCCL_MIN_NCHANNELS=%s%s", ch, "");
            job_setenv(j, "NCCL_MAX_NCHANNELS=%s%s", ch, "");
          }
          for (int e = 0; e < c->nmode_env; e++)
            if (!strcmp(c->mode_env[e].mode, "*")) job_setenv(j, "%s%s", c->mode_env[e].assign, "");
          if (job_alloc(j, c->sweep_reps, nsizes)) goto oom;
        }
      }
    }
  }

  /* header */
  printf("# " BENCH_NAME " " BENCH_VERSION " compare: %s %s %s, %d rank%s (%s), %s, sizes %zu..%zu x%g\n",
         coll_name(c->coll), dtype_name(c->dt), op_name(c->op), c->ngpus, c->ngpus == 1 ? "" : "s",
         c->procs ? "one process per GPU" : "one process, all GPUs", c->inplace ? "in-place" : "out-of-place",
         c->minbytes, c->maxbytes, c->factor);
  printf("# reps %d (interleaved, order rotated), warm-up %d + timed %d iterations per size and run, check %d\n",
         c->reps, c->warmup, c->iters, c->check);
  if (c->gemm)
    printf("# interference: cuBLAS bf16 GEMM %dx%dx%d on another stream of every GPU, duty %.2f\n", c->gemm_n,
           c->gemm_n, c->gemm_n, c->gemm_duty);
  for (int m = 0; m < c->nmodes; m++) {
    printf("# mode %-8s:", jobs[m].name);
    if (!jobs[m].nenv) printf(" NCCL defaults (no plugin, no NCCL_ALGO/PROTO/channel variables)");
    for (int e = 0; e < jobs[m].nenv; e++) printf(" %s", jobs[m].env[e]);
    printf("\n");
  }
  if (c->sweep) {
    printf("# sweep: %d configs of NCCL_ALGO {%s} x NCCL_PROTO {%s} x channels {%s} (0 = NCCL decides), warm-up %d, "
           "reps %d\n",
           nj - c->nmodes, c->sweep_algos, c->sweep_protos, c->sweep_channels, c->sweep_warmup, c->sweep_reps);
    if (skipped_algos[0]) printf("# sweep: %s skipped because NCCL_NVLS_ENABLE=0\n", skipped_algos);
  }
  fflush(stdout);

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  int total_runs = 0, done_runs = 0;
  for (int i = 0; i < nj; i++) total_runs += jobs[i].reps_max;
  double t_start = wall_s();
  int maxreps = c->reps > c->sweep_reps ? c->reps : c->sweep_reps;
  for (int rep = 0; rep < maxreps; rep++) {
    for (int q = 0; q < nj; q++) {
      /* modes rotate each repetition (A B C, B C A, ...) so drift cancels */
      int idx = q < c->nmodes ? (q + rep) % c->nmodes : q;
      struct job *j = &jobs[idx];
      if (rep >= j->reps_max) continue;
      if (j->skip) {
        done_runs++;
        j->runs = rep + 1;
        for (int s = 0; s < nsizes; s++) j->st[(size_t)rep * (size_t)nsizes + (size_t)s] = 1;
        continue;
      }
      progress(c, "rep %d/%d  %-22s run %d/%d  %.0f s", rep + 1, maxreps, j->name, done_runs + 1, total_runs,
               wall_s() - t_start);
      struct argv_buf av;
      child_argv(c, j, exe, &av);
      char **envp = build_env(j);
      if (!envp) goto oom;
      struct child_out out = {0};
      int timed_out = 0;
      int st = run_child(exe, av.v, envp, c->child_timeout, &out, &timed_out);
      free(envp);
      for (int s = 0; s < nsizes; s++) j->st[(size_t)rep * (size_t)nsizes + (size_t)s] = 1;
      int seen = parse_child(j, rep, nsizes, sizes, out.text ? out.text : "");
      free(out.text);
      j->runs = rep + 1;
      done_runs++;
      if (seen == -2) {
        progress_done(c);
        fprintf(stderr, BENCH_NAME ": error: %s: the child's sizes differ from mine\n", j->name);
        rc = BENCH_EXIT_RUNTIME;
        goto out;
      }
      int child_rc = (st >= 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
      if (timed_out) snprintf(j->err, sizeof(j->err), "timed out after %.0f s (--child-timeout)", c->child_timeout);
      else if (st >= 0 && WIFSIGNALED(st) && !j->err[0])
        snprintf(j->err, sizeof(j->err), "killed by signal %d", WTERMSIG(st));
      int this_failed = timed_out || child_rc < 0 || (child_rc != 0 && child_rc != BENCH_EXIT_WRONG);
      if (this_failed) j->child_failures++;
      if (!j->sweep && this_failed) {
        progress_done(c);
        fprintf(stderr, BENCH_NAME ": error: mode %s, repetition %d failed: %s\n", j->name, rep + 1,
                j->err[0] ? j->err : "no result");
        rc = BENCH_EXIT_RUNTIME;
      }
      /* a (algo, proto) that fails everywhere with NCCL's channels is unsupported:
       * skip its other channel counts */
      if (j->sweep && rep == 0 && job_all_failed(j, rep, nsizes)) {
        for (int k = 0; k < nj; k++)
          if (jobs[k].sweep && k != idx && !strcmp(jobs[k].algo, j->algo) && !strcmp(jobs[k].proto, j->proto) &&
              jobs[k].runs == 0)
            jobs[k].skip = 1;
      }
    }
  }
  progress_done(c);

  /* per-mode tables */
  {
    int nmodes = c->nmodes;
    double bf = bus_factor(c->coll, c->ngpus);
    for (int m = 0; m < nmodes; m++) {
      struct job *j = &jobs[m];
      printf("#\n# mode %s: time = median over reps of each run's median of the last %d iterations; "
             "time_incl = mean over all %d iterations from the first call%s\n",
             j->name, c->iters, c->iters + c->warmup, strcmp(j->mode, "default") ? " (includes the tuning period)" : "");
      printf("# %12s %12s %8s %10s %8s %8s %10s %10s%s\n", "size", "count", "type", "time", "algbw", "busbw",
             "time_incl", "busbw_incl", c->gemm ? "    gemm" : "");
      printf("# %12s %12s %8s %10s %8s %8s %10s %10s%s\n", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "(us)",
             "(GB/s)", c->gemm ? " TFLOP/s" : "");
      for (int s = 0; s < nsizes; s++) {
        double t = job_time(j, s, nsizes), ti = job_incl(j, s, nsizes);
        if (!isfinite(t)) {
          printf("  %12zu %12zu %8s %10s %8s %8s %10s %10s\n", sizes[s], sizes[s] / es, dtype_name(c->dt), "failed",
                 "-", "-", "-", "-");
          continue;
        }
        printf("  %12zu %12zu %8s %10.2f %8.2f %8.2f %10.2f %10.2f", sizes[s], sizes[s] / es, dtype_name(c->dt), t,
               bw(sizes[s], t), bw(sizes[s], t) * bf, ti, bw(sizes[s], ti) * bf);
        if (c->gemm) printf(" %8.1f", job_gemm(j, s, nsizes));
        printf("\n");
      }
      if (c->gemm && j->gemm_iso > 0)
        printf("# mode %s: GEMM %.1f TFLOP/s alone, %.1f TFLOP/s during the last run\n", j->name, j->gemm_iso,
               j->gemm_run);
      if (c->check) printf("# mode %s: wrong values %lld\n", j->name, job_wrong(j, nsizes));
    }
    /* oracle */
    double oracle[BENCH_MAX_SIZES];
    int oracle_job[BENCH_MAX_SIZES];
    for (int s = 0; s < nsizes; s++) {
      oracle[s] = NAN;
      oracle_job[s] = -1;
      for (int k = nmodes; k < nj; k++) {
        double t = job_time(&jobs[k], s, nsizes);
        if (isfinite(t) && (!isfinite(oracle[s]) || t < oracle[s])) {
          oracle[s] = t;
          oracle_job[s] = k;
        }
      }
    }
    if (c->sweep) {
      int supported = 0;
      for (int k = nmodes; k < nj; k++)
        for (int s = 0; s < nsizes; s++)
          if (isfinite(job_time(&jobs[k], s, nsizes))) {
            supported++;
            break;
          }
      printf("#\n# oracle: fastest of %d supported sweep configs (of %d) per size (algo/proto/channels)\n", supported,
             nj - nmodes);
      printf("# %12s %12s %8s %10s %8s %8s  %s\n", "size", "count", "type", "time", "algbw", "busbw", "config");
      printf("# %12s %12s %8s %10s %8s %8s\n", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)");
      for (int s = 0; s < nsizes; s++) {
        if (oracle_job[s] < 0) {
          printf("  %12zu %12zu %8s %10s %8s %8s  %s\n", sizes[s], sizes[s] / es, dtype_name(c->dt), "-", "-", "-",
                 "none");
          continue;
        }
        printf("  %12zu %12zu %8s %10.2f %8.2f %8.2f  %s\n", sizes[s], sizes[s] / es, dtype_name(c->dt), oracle[s],
               bw(sizes[s], oracle[s]), bw(sizes[s], oracle[s]) * bf, jobs[oracle_job[s]].name);
      }
    }
    /* ratios */
    int def = -1;
    for (int m = 0; m < nmodes; m++)
      if (!strcmp(jobs[m].mode, "default")) def = m;
    int ncols = 0;
    if (def >= 0 || c->sweep) {
      printf("#\n# ratios of bandwidth (= inverse ratio of time): X/default > 1 means X is faster than NCCL's "
             "default; X/oracle is the fraction of the oracle's bandwidth reached\n");
      printf("# %12s", "size");
      for (int m = 0; m < nmodes; m++) {
        if (def >= 0 && m != def) {
          char h[64];
          snprintf(h, sizeof(h), "%s/default", jobs[m].name);
          printf(" %14s", h);
          snprintf(h, sizeof(h), "(incl.tuning)");
          printf(" %14s", h);
          ncols += 2;
        }
        if (c->sweep) {
          char h[64];
          snprintf(h, sizeof(h), "%s/oracle", jobs[m].name);
          printf(" %14s", h);
          ncols++;
        }
      }
      printf("\n");
      for (int s = 0; s < nsizes && ncols; s++) {
        printf("  %12zu", sizes[s]);
        for (int m = 0; m < nmodes; m++) {
          double t = job_time(&jobs[m], s, nsizes), ti = job_incl(&jobs[m], s, nsizes);
          if (def >= 0 && m != def) {
            ratio_cell(stdout, job_time(&jobs[def], s, nsizes) / t);
            ratio_cell(stdout, job_incl(&jobs[def], s, nsizes) / ti);
          }
          if (c->sweep) ratio_cell(stdout, oracle[s] / t);
        }
        printf("\n");
      }
    }
    long long wrong_total = 0;
    int failures = 0;
    for (int m = 0; m < nmodes; m++) {
      wrong_total += job_wrong(&jobs[m], nsizes);
      failures += jobs[m].child_failures;
    }
    printf("# %d runs in %.1f s; mode runs failed: %d; wrong values: %s\n", done_runs, wall_s() - t_start, failures,
           c->check ? (wrong_total ? "FOUND" : "0") : "not checked");
    if (wrong_total && rc == BENCH_EXIT_OK) rc = BENCH_EXIT_WRONG;
    if (failures && rc == BENCH_EXIT_OK) rc = BENCH_EXIT_RUNTIME;

    if (c->json) {
      FILE *f = stdout;
      fprintf(f, "{\"bench\":\"" BENCH_NAME "\",\"version\":\"" BENCH_VERSION "\",\"kind\":\"compare\",\"coll\":\"%s\","
                 "\"dtype\":\"%s\",\"op\":\"%s\",\"root\":%d,\"nranks\":%d,\"launch\":\"%s\",\"inplace\":%s,"
                 "\"reps\":%d,\"warmup\":%d,\"warmup_s\":%.17g,\"iters\":%d,\"check\":%d,\"bus_factor\":",
              coll_name(c->coll), dtype_name(c->dt), op_name(c->op), c->root, c->ngpus, c->procs ? "procs" : "single",
              c->inplace ? "true" : "false", c->reps, c->warmup, c->warmup_s, c->iters, c->check);
      json_num(f, bf);
      fprintf(f, ",\"interference\":");
      if (c->gemm) {
        fprintf(f, "{\"kind\":\"gemm\",\"duty\":");
        json_num(f, c->gemm_duty);
        fprintf(f, ",\"n\":%d}", c->gemm_n);
      } else {
        fputs("null", f);
      }
      fprintf(f, ",\"sizes\":[");
      for (int s = 0; s < nsizes; s++) fprintf(f, "%s%zu", s ? "," : "", sizes[s]);
      fprintf(f, "],\"modes\":{");
      for (int m = 0; m < nmodes; m++) {
        struct job *j = &jobs[m];
        fprintf(f, "%s", m ? "," : "");
        json_str(f, j->name);
        fprintf(f, ":{\"env\":[");
        for (int e = 0; e < j->nenv; e++) {
          if (e) fputc(',', f);
          json_str(f, j->env[e]);
        }
        fprintf(f, "],\"runs\":%d,\"failed_runs\":%d,\"wrong\":%lld,\"gemm_iso_tflops\":", j->runs, j->child_failures,
                job_wrong(j, nsizes));
        json_num(f, j->gemm_iso > 0 ? j->gemm_iso : NAN);
        fprintf(f, ",\"error\":");
        if (j->err[0]) json_str(f, j->err);
        else fputs("null", f);
        fprintf(f, ",\"results\":[");
        for (int s = 0; s < nsizes; s++) {
          double t = job_time(j, s, nsizes), ti = job_incl(j, s, nsizes);
          fprintf(f, "%s{\"size\":%zu,\"count\":%zu,\"time_us\":", s ? "," : "", sizes[s], sizes[s] / es);
          json_num(f, t);
          fprintf(f, ",\"algbw_gbs\":");
          json_num(f, bw(sizes[s], t));
          fprintf(f, ",\"busbw_gbs\":");
          json_num(f, bw(sizes[s], t) * bf);
          fprintf(f, ",\"time_incl_us\":");
          json_num(f, ti);
          fprintf(f, ",\"busbw_incl_gbs\":");
          json_num(f, bw(sizes[s], ti) * bf);
          fprintf(f, ",\"gemm_tflops\":");
          json_num(f, job_gemm(j, s, nsizes));
          fprintf(f, ",\"reps_time_us\":[");
          for (int r = 0; r < j->runs; r++) {
            if (r) fputc(',', f);
            json_num(f, j->t[(size_t)r * (size_t)nsizes + (size_t)s]);
          }
          fprintf(f, "],\"reps_time_incl_us\":[");
          for (int r = 0; r < j->runs; r++) {
            if (r) fputc(',', f);
            json_num(f, j->incl[(size_t)r * (size_t)nsizes + (size_t)s]);
          }
          fprintf(f, "]}");
        }
        fprintf(f, "]}");
      }
      fprintf(f, "},\"oracle\":");
      if (c->sweep) {
        fputc('[', f);
        for (int s = 0; s < nsizes; s++) {
          fprintf(f, "%s{\"size\":%zu,\"time_us\":", s ? "," : "", sizes[s]);
          json_num(f, oracle[s]);
          fprintf(f, ",\"busbw_gbs\":");
          json_num(f, bw(sizes[s], oracle[s]) * bf);
          fprintf(f, ",\"config\":");
          if (oracle_job[s] >= 0) json_str(f, jobs[oracle_job[s]].name);
          else fputs("null", f);
          fputc('}', f);
        }
        fprintf(f, "],\"sweep\":[");
        for (int k = nmodes; k < nj; k++) {
          fprintf(f, "%s{\"config\":", k > nmodes ? "," : "");
          json_str(f, jobs[k].name);
          fprintf(f, ",\"skipped\":%s,\"time_us\":[", jobs[k].skip ? "true" : "false");
          for (int s = 0; s < nsizes; s++) {
            if (s) fputc(',', f);
            json_num(f, job_time(&jobs[k], s, nsizes));
          }
          fprintf(f, "]}");
        }
        fputc(']', f);
      } else {
        fprintf(f, "null,\"sweep\":null");
      }
      fprintf(f, ",\"ratios\":[");
      for (int s = 0; s < nsizes; s++) {
        fprintf(f, "%s{\"size\":%zu", s ? "," : "", sizes[s]);
        for (int m = 0; m < nmodes; m++) {
          double t = job_time(&jobs[m], s, nsizes), ti = job_incl(&jobs[m], s, nsizes);
          if (def >= 0 && m != def) {
            fprintf(f, ",\"%s/default\":", jobs[m].name);
            json_num(f, job_time(&jobs[def], s, nsizes) / t);
            fprintf(f, ",\"%s/default_incl\":", jobs[m].name);
            json_num(f, job_incl(&jobs[def], s, nsizes) / ti);
          }
          if (c->sweep) {
            fprintf(f, ",\"%s/oracle\":", jobs[m].name);
            json_num(f, oracle[s] / t);
          }
        }
        fputc('}', f);
      }
      fprintf(f, "],\"wrong\":%lld,\"failed_runs\":%d,\"elapsed_s\":", wrong_total, failures);
      json_num(f, wall_s() - t_start);
      fprintf(f, ",\"exit\":%d}\n", rc);
    }
  }
out:
  fflush(stdout);
  for (int i = 0; i < nj; i++) job_free(&jobs[i]);
  free(jobs);
  return rc;
oom:
  fprintf(stderr, BENCH_NAME ": error: out of memory\n");
  for (int i = 0; i < nj; i++) job_free(&jobs[i]);
  free(jobs);
  return BENCH_EXIT_RUNTIME;
}
