#include "harness.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ACL_HARNESS_NO_CRITERION
#define cr_assert_not_null(p, ...)                                                                 \
  do {                                                                                             \
    if (!(p)) {                                                                                    \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)
#else
#include <criterion/criterion.h>
#endif

void acl_h_load(acl_h_plugin_t *p) { acl_h_load_max(p, 6); }

void acl_h_load_max(acl_h_plugin_t *p, int max_version)
{
  memset(p, 0, sizeof(*p));
  const char *path = getenv("ACL_PLUGIN");
  cr_assert_not_null(path, "ACL_PLUGIN must name the built plugin");
  p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(p->handle, "dlopen: %s", dlerror());
  /* NCCL's order: the newest ABI it knows first. */
  if (max_version >= 6) {
    p->v6 = dlsym(p->handle, "ncclTunerPlugin_v6");
    p->prof6 = dlsym(p->handle, "ncclProfiler_v6");
  }
  if (max_version >= 5) {
    p->v5 = dlsym(p->handle, "ncclTunerPlugin_v5");
    p->prof = dlsym(p->handle, "ncclProfiler_v5");
  }
  if (max_version >= 4)
    p->v4 = dlsym(p->handle, "ncclTunerPlugin_v4");
  if (max_version >= 3)
    p->v3 = dlsym(p->handle, "ncclTunerPlugin_v3");
  p->v2 = dlsym(p->handle, "ncclTunerPlugin_v2");
  p->version = p->v6 ? 6 : p->v5 ? 5 : p->v4 ? 4 : p->v3 ? 3 : p->v2 ? 2 : 0;
  p->prof_version = p->prof6 ? 6 : p->prof ? 5 : 0;
}

void acl_h_unload(acl_h_plugin_t *p)
{
  if (p->handle)
    dlclose(p->handle);
  memset(p, 0, sizeof(*p));
}

static void alpha_beta(float *out, double alpha_us, double bw_gbs, size_t nbytes, double factor)
{
  *out = (float)(alpha_us + factor * (double)nbytes / (bw_gbs * 1e3));
}

void acl_h_cost_table(int coll, size_t nbytes, int nranks, float t[7][3])
{
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++)
      t[a][p] = -1.0f;
  double n = nranks, f = coll == ncclFuncAllReduce ? 2.0 * (n - 1) / n
                         : (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter)
                             ? (n - 1) / n
                             : 1.0;
  /* Per-protocol latency (us) and bandwidth (GB/s): LL is fast to start and
   * slow to stream, Simple the reverse. */
  static const double lat[3] = {4.0, 6.5, 11.0}, bw[3] = {40.0, 150.0, 260.0};
  for (int p = 0; p < 3; p++)
    alpha_beta(&t[NCCL_ALGO_RING][p], lat[p] * (n - 1), bw[p], nbytes, f);
  if (coll == ncclFuncAllReduce) {
    for (int p = 0; p < 3; p++)
      alpha_beta(&t[NCCL_ALGO_TREE][p], lat[p] * 2.0, bw[p] * 0.8, nbytes, f);
    alpha_beta(&t[NCCL_ALGO_NVLS][2], 9.0, 330.0, nbytes, f); /* Simple only */
  }
  if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) {
    alpha_beta(&t[NCCL_ALGO_NVLS][2], 9.0, 300.0, nbytes, f);
    alpha_beta(&t[NCCL_ALGO_PAT][2], 7.0, 180.0, nbytes, f);
  }
}

int acl_h_select(float t[7][3], int *algo, int *proto)
{
  float best = -1.0f;
  *algo = *proto = -1;
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++)
      if (t[a][p] >= 0.0f && (best < 0.0f || t[a][p] < best)) {
        best = t[a][p];
        *algo = a;
        *proto = p;
      }
  return *algo < 0 ? -1 : 0;
}

void acl_h_report_call(const ncclProfiler_v5_t *prof, void *pctx, int mask, int coll, size_t nbytes,
                       int algo, int proto, int nch, double us, uint64_t *clock)
{
  static const char *const colls[5] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                       "AllReduce"};
  static const char *const algos[7] = {
      "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  static const char *const protos[3] = {"LL", "LL128", "SIMPLE"};
  if (!(mask & ncclProfileColl) || coll < 0 || coll > 4 || algo < 0 || algo > 6 || proto < 0 ||
      proto > 2)
    return;
  ncclProfilerEventDescr_v5_t d = {.type = ncclProfileColl};
  d.coll.func = colls[coll];
  d.coll.count = nbytes / 4;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = (uint8_t)(nch > 0 ? nch : 8);
  d.coll.algo = algos[algo];
  d.coll.proto = protos[proto];
  void *coll_h = NULL;
  prof->startEvent(pctx, &coll_h, &d);
  prof->stopEvent(coll_h); /* NCCL stops the Coll at launch, before its channels report */
  uint64_t span = (uint64_t)(us * 1000.0);
  for (int c = 0; c < d.coll.nChannels && (mask & ncclProfileKernelCh); c++) {
    ncclProfilerEventDescr_v5_t k = {.type = ncclProfileKernelCh, .parentObj = coll_h};
    k.kernelCh.channelId = (uint8_t)c;
    k.kernelCh.pTimer = *clock;
    void *kh = NULL;
    prof->startEvent(pctx, &kh, &k);
    ncclProfilerEventStateArgs_v5_t st = {.kernelCh.pTimer = *clock + span};
    prof->recordEventState(kh, ncclProfilerKernelChStop, &st);
    prof->stopEvent(kh);
  }
  *clock += span + 1000;
}

/* group_open NULL: the GroupApi event is stopped at once; else it is left
 * open there (NULL when none started) for acl_h_group_end. */
static void api_events(const ncclProfiler_v5_t *prof, void *pctx, int mask, int coll, size_t count,
                       int captured, void **group_open);

void acl_h_api_events(const ncclProfiler_v5_t *prof, void *pctx, int mask, int coll, size_t nbytes,
                      int captured)
{
  api_events(prof, pctx, mask, coll, nbytes / 4, captured, NULL);
}

/* NCCL reads the process's mask at the enqueue and stamps it on the call;
 * its CollApi event counts AllGather's send and ReduceScatter's receive
 * elements, the tuner the whole buffer. group_open as api_events's. */
static int enqueue(const ncclProfiler_v5_t *prof, void *pctx, const int *mask, int coll,
                   size_t nbytes, int nranks, void **group_open)
{
  int m = __atomic_load_n(mask, __ATOMIC_RELAXED);
  bool per_rank = coll == ncclFuncAllGather || coll == ncclFuncReduceScatter;
  api_events(prof, pctx, m, coll, nbytes / 4 / (per_rank && nranks > 0 ? (size_t)nranks : 1), 0,
             group_open);
  return m;
}

int acl_h_enqueue(const ncclProfiler_v5_t *prof, void *pctx, const int *mask, int coll,
                  size_t nbytes, int nranks)
{
  return enqueue(prof, pctx, mask, coll, nbytes, nranks, NULL);
}

int acl_h_enqueue_open(const ncclProfiler_v5_t *prof, void *pctx, const int *mask, int coll,
                       size_t nbytes, int nranks, void **group)
{
  *group = NULL;
  return enqueue(prof, pctx, mask, coll, nbytes, nranks, group);
}

void acl_h_group_end(const ncclProfiler_v5_t *prof, void *group)
{
  if (!group)
    return;
  prof->recordEventState(group, (ncclProfilerEventState_v5_t)24 /* GroupEndApiStart */, NULL);
  prof->stopEvent(group);
}

static void api_events(const ncclProfiler_v5_t *prof, void *pctx, int mask, int coll, size_t count,
                       int captured, void **group_open)
{
  static const char *const colls[5] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                       "AllReduce"};
  /* NCCL 2.28 src/plugin/profiler.cc */
  int group_mask = ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi |
                   ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl | ncclProfileP2p |
                   ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh |
                   ncclProfileNetPlugin;
  int coll_mask = ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep |
                  ncclProfileKernelCh | ncclProfileNetPlugin;
  void *gh = NULL, *ch = NULL;
  if (mask & group_mask) {
    ncclProfilerEventDescr_v5_t g = {.type = ncclProfileGroupApi};
    g.groupApi.graphCaptured = captured != 0;
    prof->startEvent(pctx, &gh, &g);
    if (gh)
      prof->recordEventState(gh, (ncclProfilerEventState_v5_t)23 /* GroupStartApiStop */, NULL);
  }
  if (mask & coll_mask) {
    ncclProfilerEventDescr_v5_t d = {.type = ncclProfileCollApi, .parentObj = gh};
    d.collApi.func = colls[coll >= 0 && coll < 5 ? coll : 4];
    d.collApi.count = count;
    d.collApi.datatype = "ncclFloat32";
    d.collApi.graphCaptured = captured != 0;
    prof->startEvent(pctx, &ch, &d);
    if (ch)
      prof->stopEvent(ch);
  }
  if (group_open)
    *group_open = gh;
  else if (gh)
    prof->stopEvent(gh);
}

static char log_buf[1 << 16];
static size_t log_len;

void acl_h_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                  const char *fmt, ...)
{
  (void)file;
  (void)line;
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  int n = snprintf(log_buf + log_len, sizeof(log_buf) - log_len, "[%d/%lx] %s\n", (int)level, flags,
                   msg);
  if (n > 0 && log_len + (size_t)n < sizeof(log_buf))
    log_len += (size_t)n;
}

int acl_h_log_count(const char *needle)
{
  int n = 0;
  for (const char *p = log_buf; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

const char *acl_h_log_text(void) { return log_buf; }

void acl_h_log_clear(void)
{
  log_len = 0;
  log_buf[0] = '\0';
}
