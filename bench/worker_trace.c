/* --trace of one run (docs/trace.md): where the trace goes, the probe
 * plugin that learns what NCCL ran (or the autoccl plugin's own trace
 * beside it), and the file written from the shared results. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/worker_int.h"
#include "core/setting_names.h"

/* --trace: where this run's trace goes, and the plugins that tell what NCCL
 * ran (set before NCCL loads them). Returns the trace path or NULL. */
const char *acl_bench_trace_setup(const acl_bench_cfg_t *c, char *path, size_t len, char *probe,
                                  size_t plen)
{
  if (c->trace_file[0])
    snprintf(path, len, "%s", c->trace_file);
  else if (c->trace_dir[0])
    snprintf(path, len, "%s/run.jsonl.gz", c->trace_dir);
  else
    return NULL;
  if (c->trace_dir[0] && !c->trace_file[0])
    acl_bench_mkdirs(c->trace_dir);
  snprintf(probe, plen, "%s.probe", path);
  unlink(probe);
  setenv(ACL_ENV(AUTOCCL_BENCH_PROBE), probe, 1);
  char so[ACL_BENCH_PATH_MAX];
  const char *tp = getenv("NCCL_TUNER_PLUGIN"), *pp = getenv("NCCL_PROFILER_PLUGIN");
  if (!tp && !pp && !c->fake && !getenv(ACL_ENV(AUTOCCL_BENCH_NO_PROBE)) &&
      acl_bench_probe_path(so, sizeof(so)) == 0) {
    setenv("NCCL_TUNER_PLUGIN", so, 1);
    setenv("NCCL_PROFILER_PLUGIN", so, 1);
  } else if (tp && !getenv(ACL_ENV(AUTOCCL_TRACE))) {
    /* the autoccl plugin records what it sees beside this trace */
    char at[ACL_BENCH_PATH_MAX + 32];
    size_t l = strlen(path);
    size_t cut = l > 9 && !strcmp(path + l - 9, ".jsonl.gz") ? l - 9 : l;
    snprintf(at, sizeof(at), "%.*s-plugin-r%%r.jsonl.gz", (int)cut, path);
    setenv(ACL_ENV(AUTOCCL_TRACE), at, 1);
  }
  return path;
}

void acl_bench_trace_finish(const acl_bench_cfg_t *c, struct shared *sh, const char *path,
                            const char *probe)
{
  int n = sh->nranks, ns = sh->nsizes;
  acl_bench_trace_size_t *sz = calloc((size_t)ns, sizeof(*sz));
  if (!sz)
    return;
  for (int s = 0; s < ns; s++) {
    sz[s].bytes = sh->sizes[s];
    sz[s].count = sh->sizes[s] / acl_bench_dtype_size(c->dt);
    for (int r = 0; r < n; r++)
      if (sh->status[r][s])
        sz[s].status = sh->status[r][s];
    sz[s].wall_s = sh->wall_s[0][s];
    sz[s].gemm_tflops = c->gemm ? sh->gemm_tf[0][s] : -1.0;
    acl_bench_probe_ran(probe, c, sh->sizes[s], n, sz[s].ran, sizeof(sz[s].ran));
  }
  acl_bench_trace_write(path, c, n, ns, sh->T, sz, sh->times, sh->nccl_version);
  unlink(probe);
  free(sz);
}
