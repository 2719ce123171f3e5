/* Tuning tables out of the plugin: every rank's decisions as table entries,
 * kept when a communicator goes (acl_proc.out), served at /api/v1/table and
 * written to AUTOCCL_TABLE_OUT (atomically) whenever a rank detaches. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/table.h"
#include "tuner/consensus/consensus.h"
#include "tuner/plugin/plugin_int.h"

static double now_unix(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool same_key(const acl_table_entry_t *a, const acl_table_entry_t *b)
{
  return a->coll == b->coll && a->nbytes == b->nbytes && a->nnodes == b->nnodes &&
         a->nranks == b->nranks && a->pipe_ops == b->pipe_ops;
}

/* Decisions kept from communicators gone: one per (collective, size,
 * shape), whatever the communicator, so a job that creates and destroys
 * communicators of the same shape keeps the same entries; more distinct
 * workloads than a table can hold rules are not kept (warned once). */
#define ACL_TABLE_KEEP_MAX ACL_TABLE_MAX_RULES

/* Adds or replaces (a later look at the same workload knows more); false
 * when the entry is new and *n has reached max. */
static bool put(acl_table_entry_t **v, int *n, int *cap, const acl_table_entry_t *e, int max)
{
  for (int i = 0; i < *n; i++)
    if (same_key(&(*v)[i], e)) {
      (*v)[i] = *e;
      return true;
    }
  if (*n >= max)
    return false;
  if (*n == *cap) {
    int nc = *cap ? 2 * *cap : 64;
    acl_table_entry_t *nv = realloc(*v, (size_t)nc * sizeof(*nv));
    if (!nv)
      return true; /* out of memory: not a bound to report */
    *v = nv;
    *cap = nc;
  }
  (*v)[(*n)++] = *e;
  return true;
}

/* Rank r's workloads as entries (lock held). */
static int rank_entries(acl_rank_t *r, acl_table_entry_t **v, int *n, int *cap, int max)
{
  int dropped = 0;
  if (!r->cons)
    return 0;
  int nw = acl_proc.cfg.max_workloads;
  acl_cons_wl_stats_t *ws = calloc((size_t)nw, sizeof(*ws));
  acl_cons_comm_stats_t comm;
  if (!ws)
    return 0;
  memset(&comm, 0, sizeof(comm));
  int k = acl_cons_snapshot(r->cons, &comm, ws, nw);
  if (!comm.decider)
    k = 0; /* a follower host holds blocks, not the search: the leader host exports */
  double t = now_unix();
  for (int i = 0; i < k; i++) {
    const acl_cons_wl_stats_t *w = &ws[i];
    bool conv = acl_phase_decided(w->phase);
    acl_table_entry_t e = {.coll = w->key.coll,
                           .nbytes = w->key.nbytes,
                           .nnodes = r->nnodes,
                           .nranks = r->nranks,
                           .pipe_ops = w->key.num_pipe_ops,
                           .cand = conv ? w->current : w->best,
                           .converged = conv,
                           .source = acl_search_source_name(w->source),
                           .speedup = w->has_speedup ? w->speedup : 0.0,
                           .samples = w->samples,
                           .measured_unix = t};
    if (!conv && !w->has_best)
      e.cand = (acl_candidate_t){.algo = ACL_ALGO_NCCL, .proto = -1};
    dropped += !put(v, n, cap, &e, max);
  }
  free(ws);
  return dropped;
}

/* Kept entries plus every live rank's; the caller frees *out. */
static int all_entries_locked(acl_table_entry_t **out)
{
  acl_table_entry_t *v = NULL;
  int n = 0, cap = 0;
  for (int i = 0; i < acl_proc.nout; i++)
    put(&v, &n, &cap, &acl_proc.out[i], INT32_MAX);
  for (acl_rank_t *r = acl_proc.ranks; r; r = r->next)
    rank_entries(r, &v, &n, &cap, INT32_MAX);
  *out = v;
  return n;
}

/* The NCCL of this process, when its ncclGetVersion is visible (a libnccl
 * loaded globally); "" when not: the tuner ABI does not tell. */
static void nccl_version(char *out, size_t len)
{
  out[0] = '\0';
  typedef int (*get_version_t)(int *);
  get_version_t fn;
  void *sym = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  memcpy(&fn, &sym, sizeof(fn));
  int v = 0;
  if (fn && fn(&v) == 0 && v > 0)
    snprintf(out, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

/* The first GPU's model from the NVIDIA driver ("NVIDIA H200"); "" when
 * the driver's proc files are absent. */
static void gpu_model(char *out, size_t len)
{
  out[0] = '\0';
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  if (!d)
    return;
  struct dirent *e;
  while (!out[0] && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[320], line[256];
    snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f)) {
      if (strncmp(line, "Model:", 6) == 0) {
        char *m = line + 6;
        while (*m == ' ' || *m == '\t')
          m++;
        m[strcspn(m, "\r\n")] = '\0';
        snprintf(out, len, "%.100s", m);
        break;
      }
    }
    if (f)
      fclose(f);
  }
  closedir(d);
}

bool acl_table_meta_refused_locked(char *err, size_t errlen)
{
  char ver[32], gpu[128];
  nccl_version(ver, sizeof(ver));
  gpu_model(gpu, sizeof(gpu));
  return acl_proc.table && acl_table_meta_check(acl_proc.table, ver, gpu, err, errlen) != 0;
}

static void render_locked(acl_strbuf_t *sb, int fmt)
{
  acl_table_entry_t *v = NULL;
  int n = all_entries_locked(&v);
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  char ver[32], gpu[128];
  nccl_version(ver, sizeof(ver));
  gpu_model(gpu, sizeof(gpu));
  if (fmt < 0) {
    acl_table_meta_t m = {.nccl_version = ver[0] ? ver : NULL,
                          .gpu = gpu[0] ? gpu : NULL,
                          .host = host,
                          .generated_unix = now_unix()};
    acl_table_render_json(sb, &m, v, n);
  } else {
    acl_table_t *t = calloc(1, sizeof(*t));
    if (t) {
      acl_table_from_entries(v, n, t);
      snprintf(t->nccl_version, sizeof(t->nccl_version), "%s", ver);
      snprintf(t->gpu, sizeof(t->gpu), "%s", gpu);
      acl_table_render(sb, t, (acl_table_format_t)fmt);
      free(t);
    } else {
      sb->failed = true;
    }
  }
  free(v);
}

void acl_table_render_json_locked(acl_strbuf_t *sb) { render_locked(sb, -1); }

void acl_table_keep_locked(acl_rank_t *r)
{
  if (acl_proc.cfg.mode != ACL_MODE_ONLINE)
    return;
  int cap = acl_proc.nout_cap;
  int dropped = rank_entries(r, &acl_proc.out, &acl_proc.nout, &cap, ACL_TABLE_KEEP_MAX);
  acl_proc.nout_cap = cap;
  if (dropped > 0 && !acl_proc.out_full_warned) {
    acl_proc.out_full_warned = true;
    acl_warn("comm %016llx: %d decisions not kept after finalize: the decisions of "
             "communicators gone already cover %d distinct workloads (the most a table "
             "holds); AUTOCCL_TABLE_OUT and /api/v1/table leave them out (warned once)",
             (unsigned long long)r->comm_id, dropped, ACL_TABLE_KEEP_MAX);
  }
}

void acl_table_write_out_locked(void)
{
  const char *path = acl_proc.cfg.table_out;
  if (!path[0] || acl_proc.cfg.mode != ACL_MODE_ONLINE)
    return;
  acl_table_entry_t *v = NULL;
  int n = all_entries_locked(&v);
  free(v);
  if (n == 0)
    return; /* nothing decided here (a follower host): never overwrite a table with none */
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  render_locked(&sb, acl_table_format_for_path(path));
  char err[320];
  if (!acl_sb_ok(&sb))
    acl_warn("AUTOCCL_TABLE_OUT=%s: out of memory; no table written", path);
  else if (acl_table_write_atomic(path, sb.data ? sb.data : "", sb.len, err, sizeof(err)) != 0)
    acl_warn("AUTOCCL_TABLE_OUT: cannot write the tuning table: %s", err);
  else
    acl_debug("tuning table written to %s", path);
  acl_sb_free(&sb);
}
