/* autoccl-bench --trace: one "autoccl-bench-trace" file per run (docs/trace.md):
 * a header naming the configuration (NCCL variables, launch model, GEMM),
 * then per size every rank's per-iteration times from the first call, the
 * host time of the size and what NCCL ran (from the probe plugin). */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef ACL_HAVE_ZLIB
#include <zlib.h>
#endif

#include "bench/bench.h"

typedef struct out {
  FILE *f;
#ifdef ACL_HAVE_ZLIB
  gzFile gz;
#endif
  int err;
} out_t;

static void outf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(out_t *o, const char *fmt, ...)
{
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof(buf))
    n = (int)sizeof(buf) - 1;
#ifdef ACL_HAVE_ZLIB
  if (o->gz) {
    if (gzwrite(o->gz, buf, (unsigned)n) != n)
      o->err = 1;
    return;
  }
#endif
  if (fwrite(buf, 1, (size_t)n, o->f) != (size_t)n)
    o->err = 1;
}

static void out_num(out_t *o, double v)
{
  if (v == v && v > -1e300 && v < 1e300)
    outf(o, "%.6g", v);
  else
    outf(o, "null");
}

static const char *const env_names[] = {
    "NCCL_ALGO",         "NCCL_PROTO",           "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
    "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "AUTOCCL_MODE",       "NCCL_NVLS_ENABLE"};

int acl_bench_trace_write(const char *path, const acl_bench_cfg_t *c, int nranks, int nsizes, int T,
                          const acl_bench_trace_size_t *sz, const double *times_us,
                          int nccl_version)
{
  out_t o = {0};
  size_t l = strlen(path);
#ifdef ACL_HAVE_ZLIB
  if (l > 3 && !strcmp(path + l - 3, ".gz"))
    o.gz = gzopen(path, "wb6");
  if (!o.gz)
#endif
    o.f = fopen(path, "w");
  (void)l;
  if (!o.f
#ifdef ACL_HAVE_ZLIB
      && !o.gz
#endif
  ) {
    fprintf(stderr, ACL_BENCH_NAME ": warning: --trace: cannot create %s; no trace of this run\n",
            path);
    return -1;
  }
  char host[128] = "";
  gethostname(host, sizeof(host) - 1);
  outf(&o, "{\"format\":\"autoccl-bench-trace\",\"version\":1,\"bench\":\"" ACL_BENCH_VERSION
           "\",\"label\":");
  char lab[96];
  snprintf(lab, sizeof(lab), "\"%s\"", c->label); /* labels are config names: no quotes */
  outf(&o,
       "%s,\"host\":\"%s\",\"coll\":\"%s\",\"dtype\":\"%s\",\"nranks\":%d,\"launch\":\"%s\","
       "\"gemm\":",
       lab, host, acl_bench_coll_name(c->coll), acl_bench_dtype_name(c->dt), nranks,
       c->procs ? "procs" : "single");
  if (c->gemm)
    outf(&o, "{\"duty\":%.3g,\"n\":%d}", c->gemm_duty, c->gemm_n);
  else
    outf(&o, "null");
  outf(&o, ",\"warmup\":%d,\"iters\":%d,\"fake\":%s,\"nccl_version\":%d,\"env\":{", c->warmup,
       c->iters, c->fake ? "true" : "false", nccl_version);
  int first = 1;
  for (size_t i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++) {
    const char *v = getenv(env_names[i]);
    if (!v)
      continue;
    char b[ACL_BENCH_PATH_MAX];
    snprintf(b, sizeof(b), "%s", v);
    if (strchr(b, '/'))
      snprintf(b, sizeof(b), "%s", basename(b)); /* plugin paths: the name */
    outf(&o, "%s\"%s\":\"%s\"", first ? "" : ",", env_names[i], b);
    first = 0;
  }
  outf(&o, "}}\n");
  for (int s = 0; s < nsizes; s++) {
    outf(&o, "{\"t\":\"size\",\"bytes\":%zu,\"count\":%zu,\"status\":%d,\"wall_s\":", sz[s].bytes,
         sz[s].count, sz[s].status);
    out_num(&o, sz[s].wall_s);
    outf(&o, ",\"gemm_tflops\":");
    out_num(&o, sz[s].gemm_tflops >= 0 ? sz[s].gemm_tflops : NAN);
    outf(&o, ",\"ran\":%s,\"times_us\":[", sz[s].ran[0] ? sz[s].ran : "null");
    for (int r = 0; r < nranks; r++) {
      outf(&o, "%s[", r ? "," : "");
      const double *t = times_us + ((size_t)r * (size_t)nsizes + (size_t)s) * (size_t)T;
      for (int i = 0; i < T; i++) {
        outf(&o, i ? "," : "");
        out_num(&o, t[i]);
      }
      outf(&o, "]");
    }
    outf(&o, "]}\n");
  }
  outf(&o, "{\"t\":\"end\"}\n");
  int err = o.err;
#ifdef ACL_HAVE_ZLIB
  if (o.gz && gzclose(o.gz) != Z_OK)
    err = 1;
#endif
  if (o.f && fclose(o.f) != 0)
    err = 1;
  if (err)
    fprintf(stderr, ACL_BENCH_NAME ": warning: --trace: writing %s failed\n", path);
  return err ? -1 : 0;
}

int acl_bench_mkdirs(const char *path)
{
  char p[ACL_BENCH_PATH_MAX];
  snprintf(p, sizeof(p), "%s", path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
      return -1;
    *s = '/';
  }
  return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int acl_bench_probe_path(char *buf, size_t len)
{
  char exe[ACL_BENCH_PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return -1;
  exe[n] = 0;
  snprintf(buf, len, "%s/libautoccl-bench-probe.so", dirname(exe));
  return access(buf, R_OK) == 0 ? 0 : -1;
}

void acl_bench_probe_ran(const char *probe_file, const acl_bench_cfg_t *c, size_t bytes, int nranks,
                         char *out, size_t len)
{
  snprintf(out, len, "null");
  FILE *f = probe_file ? fopen(probe_file, "r") : NULL;
  if (!f)
    return;
  size_t count = bytes / acl_bench_dtype_size(c->dt);
  char line[512];
  size_t o = 0;
  int seen[ACL_BENCH_MAX_RANKS] = {0};
  while (fgets(line, sizeof(line), f)) {
    int rank, nch;
    size_t cnt;
    char func[64], dt[64], algo[64], proto[64];
    if (sscanf(line, "%d %63s %zu %63s %63s %63s %d", &rank, func, &cnt, dt, algo, proto, &nch) !=
        7)
      continue;
    if (rank < 0 || rank >= ACL_BENCH_MAX_RANKS || seen[rank])
      continue;
    /* AllGather / ReduceScatter report the per-rank count */
    if (cnt != count && cnt * (size_t)nranks != count)
      continue;
    seen[rank] = 1;
    int n =
        snprintf(out + o, len - o, "%s{\"rank\":%d,\"algo\":\"%s\",\"proto\":\"%s\",\"nch\":%d}",
                 o ? "," : "[", rank, algo, proto, nch);
    if (n < 0 || (size_t)n >= len - o - 2)
      break;
    o += (size_t)n;
  }
  fclose(f);
  if (o)
    snprintf(out + o, len - o, "]");
}
