/* The jobs of one --compare / --sweep / --advise invocation: one per mode
 * (default, ceiling, autoccl, table) with its plugin and environment, one
 * per sweep config, one per --advise variable value. bench/compare.c runs
 * them. No CUDA here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/compare_int.h"

/* The plugin (modes other than default) and the table as absolute paths:
 * the children run elsewhere. 0, or the exit code after a message. */
int acl_bench_resolve_paths(acl_bench_compare_t *x)
{
  acl_bench_cfg_t *c = &x->cfg;
  int need_plugin = 0;
  for (int m = 0; m < c->nmodes; m++)
    if (strcmp(c->modes[m], "default") != 0 && strcmp(c->modes[m], "ceiling") != 0)
      need_plugin = 1;
  if (need_plugin) {
    if (!c->plugin[0]) {
      if (acl_bench_default_plugin_path(c->plugin, sizeof(c->plugin)) != 0 && !c->fake) {
        fprintf(stderr,
                ACL_BENCH_NAME ": error: the autoccl plugin is not at %s (nor beside the "
                               "executable); build it or pass "
                               "--plugin PATH\n",
                c->plugin);
        return ACL_BENCH_EXIT_USAGE;
      }
    }
    if (!realpath(c->plugin, x->plugin_abs)) {
      if (!c->fake) {
        fprintf(stderr, ACL_BENCH_NAME ": error: --plugin %s: %s\n", c->plugin, strerror(errno));
        return ACL_BENCH_EXIT_USAGE;
      }
      acl_bench_str_copy(x->plugin_abs, sizeof(x->plugin_abs), c->plugin);
    }
  }
  if (c->table[0] && !realpath(c->table, x->table_abs)) {
    fprintf(stderr, ACL_BENCH_NAME ": error: --table %s: %s\n", c->table, strerror(errno));
    return ACL_BENCH_EXIT_USAGE;
  }
  return 0;
}

/* One job per --compare mode, with its plugin, table and --mode-env
 * variables. 0, or -1 out of memory. */
int acl_bench_add_mode_jobs(acl_bench_compare_t *x)
{
  const acl_bench_cfg_t *c = &x->cfg;
  for (int m = 0; m < c->nmodes; m++) {
    acl_bench_job_t *j = &x->jobs[x->nj++];
    snprintf(j->name, sizeof(j->name), "%s", c->modes[m]);
    snprintf(j->mode, sizeof(j->mode), "%s", c->modes[m]);
    /* NCCL with the ceiling alone (no plugin), and autoccl with it when
     * --ceiling is given (docs/channels.md) */
    int ceil = !strcmp(j->mode, "ceiling") ? (c->ceiling ? c->ceiling : ACL_BENCH_CEILING_DEFAULT)
                                           : (!strcmp(j->mode, "autoccl") ? c->ceiling : 0);
    if (ceil > 0) {
      char v[16];
      snprintf(v, sizeof(v), "%d", ceil);
      acl_bench_job_setenv(j, "NCCL_MIN_NCHANNELS=%s%s", v, "");
      acl_bench_job_setenv(j, "NCCL_MAX_NCHANNELS=%s%s", v, "");
      if (!strcmp(j->mode, "autoccl")) {
        snprintf(v, sizeof(v), "%d", c->stock_channels);
        acl_bench_job_setenv(j, "AUTOCCL_STOCK_CHANNELS=%s%s", v, "");
      }
    }
    if (strcmp(j->mode, "default") != 0 && strcmp(j->mode, "ceiling") != 0) {
      j->keep_autoccl = 1;
      acl_bench_job_setenv(j, "NCCL_TUNER_PLUGIN=%s%s", x->plugin_abs, "");
      acl_bench_job_setenv(j, "NCCL_PROFILER_PLUGIN=%s%s", x->plugin_abs, "");
      if (!strcmp(j->mode, "table")) {
        acl_bench_job_setenv(j, "AUTOCCL_MODE=%s%s", "static", "");
        acl_bench_job_setenv(j, "AUTOCCL_TABLE=%s%s", x->table_abs, "");
      }
    }
    for (int e = 0; e < c->nmode_env; e++)
      if (!strcmp(c->mode_env[e].mode, "*") || !strcmp(c->mode_env[e].mode, j->mode))
        acl_bench_job_setenv(j, "%s%s", c->mode_env[e].assign, "");
    if (acl_bench_job_alloc(j, c->reps, x->nsizes))
      return -1;
  }
  return 0;
}

/* One job per (algo, proto, channels) of --sweep; NVLS algorithms are left
 * out (and listed) when NCCL_NVLS_ENABLE=0. 0, or -1 out of memory. */
int acl_bench_add_sweep_jobs(acl_bench_compare_t *x)
{
  const acl_bench_cfg_t *c = &x->cfg;
  const char *nvls_env = getenv("NCCL_NVLS_ENABLE");
  int nvls_off = nvls_env && strcmp(nvls_env, "0") == 0;
  char algos[256], protos[128], chans[256];
  acl_bench_str_copy(algos, sizeof(algos), c->sweep_algos);
  char *sa = NULL;
  for (char *a = strtok_r(algos, ",", &sa); a; a = strtok_r(NULL, ",", &sa)) {
    if (nvls_off && (!strcasecmp(a, "NVLS") || !strcasecmp(a, "NVLSTree"))) {
      size_t l = strlen(x->skipped_algos);
      snprintf(x->skipped_algos + l, sizeof(x->skipped_algos) - l, "%s%s", l ? "," : "", a);
      continue;
    }
    acl_bench_str_copy(protos, sizeof(protos), c->sweep_protos);
    char *sp = NULL;
    for (char *p = strtok_r(protos, ",", &sp); p; p = strtok_r(NULL, ",", &sp)) {
      acl_bench_str_copy(chans, sizeof(chans), c->sweep_channels);
      char *sc = NULL;
      for (char *ch = strtok_r(chans, ",", &sc); ch; ch = strtok_r(NULL, ",", &sc)) {
        if (x->nj >= x->maxjobs)
          break;
        acl_bench_job_t *j = &x->jobs[x->nj++];
        j->sweep = 1;
        snprintf(j->mode, sizeof(j->mode), "sweep");
        snprintf(j->algo, sizeof(j->algo), "%s", a);
        snprintf(j->proto, sizeof(j->proto), "%s", p);
        j->nch = atoi(ch);
        if (j->nch > 0)
          snprintf(j->name, sizeof(j->name), "%s/%s/%d", a, p, j->nch);
        else
          snprintf(j->name, sizeof(j->name), "%s/%s/auto", a, p);
        acl_bench_job_setenv(j, "NCCL_ALGO=%s%s", a, "");
        acl_bench_job_setenv(j, "NCCL_PROTO=%s%s", p, "");
        if (j->nch > 0) {
          acl_bench_job_setenv(j, "NCCL_MIN_NCHANNELS=%s%s", ch, "");
          acl_bench_job_setenv(j, "NCCL_MAX_NCHANNELS=%s%s", ch, "");
        }
        for (int e = 0; e < c->nmode_env; e++)
          if (!strcmp(c->mode_env[e].mode, "*"))
            acl_bench_job_setenv(j, "%s%s", c->mode_env[e].assign, "");
        if (acl_bench_job_alloc(j, c->sweep_reps, x->nsizes))
          return -1;
      }
    }
  }
  return 0;
}

/* --advise: one job per value of each start-up variable a tuner plugin
 * cannot change per call (NCCL reads them once, at communicator init), the
 * others left at NCCL's defaults. 0, or -1 out of memory. */
int acl_bench_add_advise_jobs(acl_bench_compare_t *x)
{
  static const struct {
    const char *var, *value;
  } k_vals[] = {
      {"NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS", "8"},
      {"NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS", "16"},
      {"NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS", "24"},
      {"NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS", "32"},
      {"NCCL_NTHREADS", "128"},
      {"NCCL_NTHREADS", "256"},
      {"NCCL_NTHREADS", "512"},
      {"NCCL_BUFFSIZE", "1048576"},
      {"NCCL_BUFFSIZE", "2097152"},
      {"NCCL_BUFFSIZE", "8388608"},
      {"NCCL_BUFFSIZE", "16777216"},
  };
  const acl_bench_cfg_t *c = &x->cfg;
  for (size_t i = 0; i < sizeof(k_vals) / sizeof(k_vals[0]) && x->nj < x->maxjobs; i++) {
    acl_bench_job_t *j = &x->jobs[x->nj++];
    j->sweep = 2;
    snprintf(j->mode, sizeof(j->mode), "advise");
    snprintf(j->var, sizeof(j->var), "%s", k_vals[i].var);
    snprintf(j->value, sizeof(j->value), "%s", k_vals[i].value);
    if (strchr(k_vals[i].var, '/')) {
      snprintf(j->name, sizeof(j->name), "NCCL_MIN/MAX_NCHANNELS=%s", k_vals[i].value);
      acl_bench_job_setenv(j, "NCCL_MIN_NCHANNELS=%s%s", k_vals[i].value, "");
      acl_bench_job_setenv(j, "NCCL_MAX_NCHANNELS=%s%s", k_vals[i].value, "");
    } else {
      snprintf(j->name, sizeof(j->name), "%s=%s", k_vals[i].var, k_vals[i].value);
      acl_bench_job_setenv(j, "%s=%s", k_vals[i].var, k_vals[i].value);
    }
    for (int e = 0; e < c->nmode_env; e++)
      if (!strcmp(c->mode_env[e].mode, "*"))
        acl_bench_job_setenv(j, "%s%s", c->mode_env[e].assign, "");
    if (acl_bench_job_alloc(j, c->reps, x->nsizes))
      return -1;
  }
  return 0;
}
