/* Loading the plugin the way NCCL 2.28 does, and NCCL's logger. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim/sim.h"

/* NCCL's version call, exported from the simulator as a host process's
 * libnccl exports it, so the plugin finds the version it runs under
 * (tables record it). 2.28.3: the NCCL whose ABIs and cost model the
 * simulator plays. */
#define ACL_SIM_NCCL_VERSION 22803
__attribute__((visibility("default"))) int ncclGetVersion(int *version);
int ncclGetVersion(int *version)
{
  if (!version)
    return 4; /* ncclInvalidArgument */
  *version = ACL_SIM_NCCL_VERSION;
  return 0;
}

int acl_sim_plugin_load(const char *path, acl_sim_plugin_t *p, char *err, size_t errlen)
{
  memset(p, 0, sizeof(*p));
  p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    const char *e = dlerror();
    snprintf(err, errlen, "cannot load plugin %s: %s", path, e ? e : "unknown error");
    return -1;
  }
  /* NCCL's order: the newest tuner version first. */
  if ((p->t5 = dlsym(p->dl, "ncclTunerPlugin_v5")))
    p->tuner_version = 5;
  else if ((p->t4 = dlsym(p->dl, "ncclTunerPlugin_v4")))
    p->tuner_version = 4;
  else if ((p->t3 = dlsym(p->dl, "ncclTunerPlugin_v3")))
    p->tuner_version = 3;
  else if ((p->t2 = dlsym(p->dl, "ncclTunerPlugin_v2")))
    p->tuner_version = 2;
  p->prof = dlsym(p->dl, "ncclProfiler_v5");
  if (!p->tuner_version && !p->prof) {
    snprintf(err, errlen, "%s exports neither ncclTunerPlugin_v5..v2 nor ncclProfiler_v5", path);
    dlclose(p->dl);
    p->dl = NULL;
    return -1;
  }
  return 0;
}

void acl_sim_plugin_unload(acl_sim_plugin_t *p)
{
  if (p && p->dl)
    dlclose(p->dl);
  if (p)
    memset(p, 0, sizeof(*p));
}

static bool log_verbose;
static int log_rank;
static char log_host[64] = "sim";

void acl_sim_logger_setup(bool verbose, int first_rank)
{
  log_verbose = verbose;
  log_rank = first_rank;
  if (gethostname(log_host, sizeof(log_host)) != 0)
    snprintf(log_host, sizeof(log_host), "sim");
  log_host[sizeof(log_host) - 1] = '\0';
}

void acl_sim_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                    const char *fmt, ...)
{
  (void)flags;
  if (level != NCCL_LOG_WARN && level != NCCL_LOG_ABORT && !(log_verbose && level == NCCL_LOG_INFO))
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt ? fmt : "", ap);
  va_end(ap);
  /* One fprintf per line so lines of concurrent ranks do not interleave. */
  if (level == NCCL_LOG_INFO)
    fprintf(stderr, "%s:%d:%ld [%d] NCCL INFO %s\n", log_host, (int)getpid(),
            (long)syscall(SYS_gettid), log_rank, msg);
  else
    fprintf(stderr, "%s:%d:%ld [%d] %s:%d NCCL WARN %s\n", log_host, (int)getpid(),
            (long)syscall(SYS_gettid), log_rank, file ? file : "?", line, msg);
}
