/* Performance landscapes (sim/landscape.h); model and assumptions are
 * documented in docs/tuner.md.
 *
 * Shared by both kinds:
 * - Sizes between model points: log-log interpolation of the time of the
 *   same candidate at the two neighbouring points.
 * - Ranks: bus bandwidth is taken as constant across rank counts (stated
 *   assumption), so t(n) = t(2) * busbw_factor(coll, n) / busbw_factor(coll, 2).
 * - Interference i in 0..1 (compute running concurrently): every candidate
 *   slows by (1 + i * (interf_base + interf_per_ch * nch / max_channels)):
 *   channels are SMs taken from the GEMMs and slowed by them, so under
 *   interference fewer channels win. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "sim/landscape_int.h"

extern const unsigned char acl_sim_h200_csv[];
extern const unsigned long acl_sim_h200_csv_len;

/* ---- random numbers (deterministic, no global state) ---------------------- */

static uint64_t splitmix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1.0p-53; }
double acl_land_unif(uint64_t *s) { return unif(s); }

static double gauss(uint64_t *s)
{
  double u1 = unif(s), u2 = unif(s);
  if (u1 < 1e-300)
    u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
double acl_land_gauss(uint64_t *s) { return gauss(s); }

double acl_land_noise(uint64_t *rng, double rel)
{
  if (!rng || !(rel > 0.0))
    return 1.0;
  /* Log-normal with mean exactly 1 and relative sd exactly rel. */
  double s2 = log(1.0 + rel * rel);
  return exp(gauss(rng) * sqrt(s2) - 0.5 * s2);
}

/* ---- create / destroy ------------------------------------------------------ */

acl_landscape_t *acl_land_create_h200(char *err, size_t errlen)
{
  char dummy[8];
  if (!err) {
    err = dummy;
    errlen = sizeof dummy;
  }
  acl_landscape_t *l = calloc(1, sizeof *l);
  if (!l) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  l->kind = ACL_LAND_H200;
  snprintf(l->name, sizeof l->name, "h200x2-nccl2.28.3");
  l->max_channels = ACL_LAND_MAX_CH;
  l->interf_base = 0.10;
  l->interf_per_ch = 0.60;
  if (strlen((const char *)acl_sim_h200_csv) != acl_sim_h200_csv_len) {
    snprintf(err, errlen, "embedded H200 data is corrupt");
    goto fail;
  }
  if (acl_land_h200_load(l, (const char *)acl_sim_h200_csv, err, errlen) < 0)
    goto fail;
  return l;
fail:
  free(l);
  return NULL;
}

#ifndef ACL_SIM_TRACE_DIR
#define ACL_SIM_TRACE_DIR "sim/data/traces"
#endif

/* The shipped traces: beside the executable in the build tree (sim/meson.build
 * copies them there), else where `meson install` put them (ACL_SIM_TRACE_DIR,
 * under the install prefix). */
static void shipped_traces(char *out, size_t len)
{
  char exe[1024];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash = NULL;
  if (n > 0) {
    exe[n] = '\0';
    slash = strrchr(exe, '/');
  }
  struct stat st;
  if (slash) {
    *slash = '\0';
    int w = snprintf(out, len, "%.900s/traces", exe);
    if (w > 0 && (size_t)w < len && stat(out, &st) == 0 && S_ISDIR(st.st_mode))
      return;
  }
  snprintf(out, len, "%s", ACL_SIM_TRACE_DIR);
}

/* set: the landscape's name ("h200-traces"), built: the channels NCCL built
 * where the traces were recorded (what asks above it are clamped to). */
static acl_landscape_t *create_traces(const char *dir, const char *launch, const char *set,
                                      int built, char *err, size_t errlen)
{
  char dummy[8];
  if (!err) {
    err = dummy;
    errlen = sizeof dummy;
  }
  acl_landscape_t *l = calloc(1, sizeof *l);
  acl_land_tr_t *tr = calloc(1, sizeof *tr);
  if (!l || !tr || !(tr->h200 = acl_land_create_h200(err, errlen))) {
    if (l && tr)
      snprintf(err, errlen, "out of memory");
    free(l);
    free(tr);
    return NULL;
  }
  l->kind = ACL_LAND_TRACE;
  l->tr = tr;
  l->max_channels = built;
  tr->built_ch = built;
  if (acl_land_tr_load(tr, dir, launch, err, errlen) < 0) {
    acl_land_tr_free(tr);
    free(l);
    return NULL;
  }
  snprintf(l->name, sizeof l->name, "%s%s%s%s", set, strcmp(launch, "procs") ? ":" : "",
           strcmp(launch, "procs") ? launch : "", tr->derived ? " (derived)" : "");
  return l;
}

acl_landscape_t *acl_land_create_traces(const char *dir, const char *launch, char *err,
                                        size_t errlen)
{
  return create_traces(dir, launch, "h200-traces", ACL_TR_BUILT_CH, err, errlen);
}

/* The one-GPU testbed's recorded sets (one GPU, two ranks, NCCL 2.30.7):
 * their spec name and their folder under the shipped traces. */
static const struct {
  const char *spec, *dir;
} one_gpu_sets[] = {{ACL_LAND_1GPU, "h200-1gpu"}, {ACL_LAND_1GPU_H100, "h100-1gpu"}};

/* The one-GPU set spec begins with, or -1. */
static int one_gpu_set(const char *spec)
{
  for (int i = 0; i < (int)(sizeof one_gpu_sets / sizeof one_gpu_sets[0]); i++)
    if (!strncmp(spec, one_gpu_sets[i].spec, strlen(one_gpu_sets[i].spec)))
      return i;
  return -1;
}

bool acl_land_is_1gpu_spec(const char *spec) { return one_gpu_set(spec) >= 0; }

bool acl_land_is_trace_spec(const char *spec)
{
  return !strncmp(spec, "h200-traces", 11) || acl_land_is_1gpu_spec(spec);
}

acl_landscape_t *acl_land_create_spec_traces(const char *spec, char *err, size_t errlen)
{
  int g = one_gpu_set(spec);
  const char *launch = "procs", *set = g >= 0 ? one_gpu_sets[g].spec : "h200-traces";
  const char *rest = spec + strlen(set);
  if (!strcmp(rest, ":single"))
    launch = "single";
  else if (strncmp(spec, set, strlen(set)) != 0 || (*rest && strcmp(rest, ":procs") != 0)) {
    snprintf(err, errlen,
             "'%s': expected h200-traces, " ACL_LAND_1GPU " or " ACL_LAND_1GPU_H100
             ", each optionally with :procs or :single",
             spec);
    return NULL;
  }
  char dir[1100], base[1024];
  if (g >= 0) {
    /* recorded traces only, always shipped */
    shipped_traces(base, sizeof base);
    snprintf(dir, sizeof dir, "%s/%s", base, one_gpu_sets[g].dir);
    return create_traces(dir, launch, set, ACL_TR_1GPU_BUILT_CH, err, errlen);
  }
  acl_config_t cfg;
  acl_config_defaults(&cfg);
  acl_config_env_one(&cfg, "AUTOCCL_SIM_TRACES");
  const char *env = cfg.sim_traces;
  if (*env) {
    snprintf(dir, sizeof dir, "%s", env);
  } else {
    /* recorded traces when shipped, else the ones derived from medians */
    shipped_traces(base, sizeof base);
    snprintf(dir, sizeof dir, "%s/h200x2", base);
    FILE *probe = fopen(dir, "r");
    if (probe)
      fclose(probe);
    else
      snprintf(dir, sizeof dir, "%s/derived", base);
  }
  return acl_land_create_traces(dir, launch, err, errlen);
}

void acl_land_destroy(acl_landscape_t *l)
{
  if (l && l->tr)
    acl_land_tr_free(l->tr);
  free(l);
}

const char *acl_land_name(const acl_landscape_t *l) { return l ? l->name : "?"; }

int acl_land_max_channels(const acl_landscape_t *l) { return l ? l->max_channels : 0; }

/* ---- common evaluation ----------------------------------------------------- */

/* Index of the nearest model point (log size) and the interpolation bracket. */
static int nearest_point(double bytes)
{
  if (bytes <= 1024.0)
    return 0;
  int k = (int)floor(log(bytes / 1024.0) / log(4.0) + 0.5);
  return k < 0 ? 0 : (k > ACL_LAND_H200_NSIZE - 1 ? ACL_LAND_H200_NSIZE - 1 : k);
}

static bool ranks_ok(int coll, int nranks)
{
  return coll >= 0 && coll < ACL_NUM_COLL && nranks > 1;
}

/* Broadcast and Reduce reuse AllGather and ReduceScatter (stated assumption):
 * a ring Broadcast of N bytes moves N over each link, like an AllGather of
 * 2N on 2 ranks, so t_bcast(N) = t_allgather(2N); Reduce likewise. */
static int h200_mcoll(int coll, double *bytes)
{
  switch (coll) {
  case 0:
    *bytes *= 2.0;
    return 0;
  case 1:
    *bytes *= 2.0;
    return 1;
  case 2:
    return 0;
  case 3:
    return 1;
  default:
    return 2;
  }
}

static void default_at(const acl_landscape_t *l, int coll, double bytes, acl_candidate_t *out)
{
  memset(out, 0, sizeof *out);
  if (l->kind == ACL_LAND_TRACE) {
    int mc = h200_mcoll(coll, &bytes);
    if (!acl_land_tr_default(l->tr, mc, bytes, out))
      default_at(l->tr->h200, coll, bytes, out);
    return;
  }
  if (l->kind == ACL_LAND_H200) {
    int mc = h200_mcoll(coll, &bytes);
    const acl_land_h200_pt_t *pt = &l->h[mc][nearest_point(bytes)];
    out->algo = (int8_t)pt->def_algo;
    out->proto = (int8_t)pt->def_proto;
    out->nchannels = (int16_t)pt->def_ch;
  } else {
    const acl_land_syn_pt_t *pt = &l->s[coll][nearest_point(bytes)];
    out->algo = (int8_t)pt->def_algo;
    out->proto = (int8_t)pt->def_proto;
    out->nchannels = (int16_t)pt->def_ch;
  }
}

/* Noise-free time (seconds) at 2 ranks without interference. */
static double base_time(const acl_landscape_t *l, int coll, double bytes, int algo, int proto,
                        int nch)
{
  if (l->kind == ACL_LAND_SYNTH) {
    /* Shape of the nearest anchor keeps every call's surface unimodal. */
    return acl_land_syn_at(l, coll, nearest_point(bytes), bytes, algo, proto, nch) * 1e-6;
  }
  int mc = h200_mcoll(coll, &bytes);
  if (bytes <= l->sizes[0])
    return acl_land_h200_at(l, mc, 0, algo, proto, nch) * 1e-6;
  int top = ACL_LAND_H200_NSIZE - 1;
  if (bytes >= l->sizes[top]) /* bandwidth bound beyond 1 GiB */
    return acl_land_h200_at(l, mc, top, algo, proto, nch) * (bytes / l->sizes[top]) * 1e-6;
  int i = (int)floor(log(bytes / 1024.0) / log(4.0));
  if (i >= top)
    i = top - 1;
  double w = log(bytes / l->sizes[i]) / log(l->sizes[i + 1] / l->sizes[i]);
  double t0 = acl_land_h200_at(l, mc, i, algo, proto, nch);
  double t1 = acl_land_h200_at(l, mc, i + 1, algo, proto, nch);
  if (!isfinite(t0) || !isfinite(t1))
    return INFINITY;
  return exp((1.0 - w) * log(t0) + w * log(t1)) * 1e-6;
}

/* Trace kind: median seconds of what NCCL runs for (algo, proto, asked
 * channels); interference blends the isolated and under-GEMM medians
 * log-linearly. With regime >= 0 only that regime, and *src / *scale say
 * where draws come from. */
static double trace_time(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks, int algo,
                         int proto, int asked, double interference, const acl_tr_cfg_t **src,
                         double *scale, int regime)
{
  double b = (double)nbytes;
  int mc = h200_mcoll(coll, &b);
  int nch = acl_land_tr_exec_nch(l->tr, mc, b, algo, proto, asked, l->max_channels);
  double f = acl_busbw_factor(coll, nranks) / acl_busbw_factor(coll, 2);
  if (regime >= 0)
    return acl_land_tr_time_regime(l->tr, mc, regime, b, algo, proto, nch, src, scale) * f * 1e-6;
  double t0 = acl_land_tr_time_regime(l->tr, mc, 0, b, algo, proto, nch, NULL, NULL);
  if (!isfinite(t0))
    return INFINITY;
  double x = interference < 0 ? 0 : interference > 1 ? 1 : interference;
  double t = t0;
  if (x > 0 && l->tr->set[1][mc].present) {
    double t1 = acl_land_tr_time_regime(l->tr, mc, 1, b, algo, proto, nch, NULL, NULL);
    if (isfinite(t1))
      t = exp((1.0 - x) * log(t0) + x * log(t1));
  }
  return t * f * 1e-6;
}

int acl_land_traces(const acl_landscape_t *l)
{
  return l && l->kind == ACL_LAND_TRACE ? l->tr->files : 0;
}

bool acl_land_trace_covers(const acl_landscape_t *l, int coll, double bytes, bool gemm)
{
  if (!l || l->kind != ACL_LAND_TRACE)
    return true;
  int mc = h200_mcoll(coll, &bytes);
  const acl_tr_set_t *s = &l->tr->set[gemm ? 1 : 0][mc];
  /* a size past the largest recorded, or a regime never recorded, would be
   * replayed from another's data: not a workload of this landscape */
  return s->present && s->npts > 0 && bytes <= s->pt[s->npts - 1].bytes * 1.01;
}

int acl_land_traces_recorded(const acl_landscape_t *l)
{
  return l && l->kind == ACL_LAND_TRACE && !l->tr->derived ? l->tr->files : 0;
}

bool acl_land_is_replay(const acl_landscape_t *l) { return l && l->kind == ACL_LAND_TRACE; }

int acl_land_exec_channels(const acl_landscape_t *l, int coll, uint64_t nbytes, int algo, int proto,
                           int asked)
{
  if (!l)
    return asked;
  if (l->kind == ACL_LAND_TRACE) {
    double b = (double)nbytes;
    int mc = h200_mcoll(coll, &b);
    return acl_land_tr_exec_nch(l->tr, mc, b, algo, proto, asked, l->max_channels);
  }
  if (asked <= 0) {
    acl_candidate_t d;
    default_at(l, coll, (double)nbytes, &d);
    return d.algo == algo && d.proto == proto && d.nchannels > 0 ? d.nchannels : l->max_channels;
  }
  return asked > l->max_channels ? l->max_channels : asked;
}

static void resolve(const acl_landscape_t *l, int coll, uint64_t nbytes, const acl_candidate_t *c,
                    int *algo, int *proto, int *nch)
{
  *algo = c->algo;
  *proto = c->proto;
  *nch = c->nchannels;
  if (*algo == ACL_ALGO_NCCL) {
    acl_candidate_t d;
    default_at(l, coll, (double)nbytes, &d);
    *algo = d.algo;
    *proto = d.proto;
    *nch = c->nchannels > 0 ? c->nchannels : d.nchannels; /* capped (ceiling mode) */
  }
}

double acl_land_draw(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                     const acl_candidate_t *c, double interference, uint64_t seed, double *per_rank)
{
  double t = acl_land_time(l, coll, nbytes, nranks, c, interference);
  if (!l || !c || l->kind != ACL_LAND_TRACE || !isfinite(t)) {
    for (int r = 0; per_rank && r < nranks; r++)
      per_rank[r] = t;
    return t;
  }
  int algo, proto, nch;
  resolve(l, coll, nbytes, c, &algo, &proto, &nch);
  uint64_t s = seed;
  int regime = unif(&s) < interference ? 1 : 0;
  const acl_tr_cfg_t *src = NULL;
  double scale = NAN;
  double tr =
      trace_time(l, coll, nbytes, nranks, algo, proto, nch, interference, &src, &scale, regime);
  if (!src || !src->n || !isfinite(scale) || !isfinite(tr)) {
    for (int r = 0; per_rank && r < nranks; r++)
      per_rank[r] = t;
    return t;
  }
  size_t i = (size_t)(unif(&s) * (double)src->n);
  if (i >= src->n)
    i = src->n - 1;
  double f = acl_busbw_factor(coll, nranks) / acl_busbw_factor(coll, 2);
  double worst = 0;
  for (int r = 0; r < nranks; r++) {
    double v = src->v[i * (size_t)src->nranks + (size_t)(r % src->nranks)] * scale * f * 1e-6;
    if (per_rank)
      per_rank[r] = v;
    if (v > worst)
      worst = v;
  }
  return worst;
}

double acl_land_mean_time(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                          const acl_candidate_t *c, double interference)
{
  double t = acl_land_time(l, coll, nbytes, nranks, c, interference);
  if (!l || !c || l->kind != ACL_LAND_TRACE || !isfinite(t))
    return t;
  int algo, proto, nch;
  resolve(l, coll, nbytes, c, &algo, &proto, &nch);
  /* mean/median of the sources, blended like the medians */
  double m = 0, w = 0;
  for (int regime = 0; regime < 2; regime++) {
    double x = regime ? interference : 1.0 - interference;
    if (x <= 0)
      continue;
    const acl_tr_cfg_t *src = NULL;
    trace_time(l, coll, nbytes, nranks, algo, proto, nch, interference, &src, NULL, regime);
    if (src && src->median_us > 0 && isfinite(src->mean_us)) {
      m += x * src->mean_us / src->median_us;
      w += x;
    }
  }
  return w > 0 ? t * m / w : t;
}

double acl_land_connect_seconds(const acl_landscape_t *l, int coll, uint64_t nbytes,
                                double interference, int algo, int have, int need)
{
  if (!l || l->kind != ACL_LAND_TRACE)
    return 0.0;
  double b = (double)nbytes;
  int mc = h200_mcoll(coll, &b);
  return acl_land_tr_connect_us(l->tr, mc, interference >= 0.5 ? 1 : 0, algo, have, need) * 1e-6;
}

double acl_land_event_seconds(const acl_landscape_t *l, int coll, uint64_t nbytes)
{
  if (!l || l->kind != ACL_LAND_TRACE)
    return 0.0;
  double b = (double)nbytes;
  int mc = h200_mcoll(coll, &b);
  return acl_land_tr_event_us(l->tr, mc, b) * 1e-6;
}

bool acl_land_valid(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks, int algo,
                    int proto)
{
  if (!l || !ranks_ok(coll, nranks) || algo < 0 || algo >= ACL_NUM_ALGO || proto < 0 ||
      proto >= ACL_NUM_PROTO)
    return false;
  if (l->kind == ACL_LAND_TRACE) {
    double b = (double)nbytes;
    int mc = h200_mcoll(coll, &b);
    return acl_land_tr_valid(l->tr, mc, b, algo, proto);
  }
  return isfinite(base_time(l, coll, (double)nbytes, algo, proto, l->max_channels));
}

void acl_land_nccl_default(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                           acl_candidate_t *out)
{
  (void)nranks;
  memset(out, 0, sizeof *out);
  if (!l || coll < 0 || coll >= ACL_NUM_COLL) {
    out->algo = ACL_ALGO_NCCL;
    return;
  }
  default_at(l, coll, (double)nbytes, out);
}

double acl_land_time(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                     const acl_candidate_t *c, double interference)
{
  if (!l || !c || !ranks_ok(coll, nranks))
    return INFINITY;
  acl_candidate_t d;
  default_at(l, coll, (double)nbytes, &d);
  int algo = c->algo, proto = c->proto, nch = c->nchannels, chunk = c->chunk_log2;
  if (algo == ACL_ALGO_NCCL) { /* NCCL's default: same as its explicit pick */
    algo = d.algo;
    proto = d.proto;
    nch = c->nchannels > 0 ? c->nchannels : d.nchannels; /* capped (ceiling mode) */
    chunk = 0;
  }
  if (l->kind == ACL_LAND_TRACE)
    return trace_time(l, coll, nbytes, nranks, algo, proto, nch, interference, NULL, NULL, -1);
  if (nch <= 0)
    nch = d.nchannels;
  if (nch > l->max_channels) /* NCCL clamps to the channels it built */
    nch = l->max_channels;
  double t = base_time(l, coll, (double)nbytes, algo, proto, nch);
  if (!isfinite(t))
    return INFINITY;
  double f2 = acl_busbw_factor(coll, 2), fn = acl_busbw_factor(coll, nranks);
  t *= fn / f2;
  if (l->chunk_on)
    t *= acl_land_chunk_factor(l, coll, (double)nbytes, algo, proto, chunk);
  if (interference > 0.0) {
    if (interference > 1.0)
      interference = 1.0;
    t *= 1.0 + interference * (l->interf_base + l->interf_per_ch * nch / l->max_channels);
  }
  return t;
}

double acl_land_oracle(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                       double interference, acl_candidate_t *best)
{
  double bt = INFINITY;
  acl_candidate_t c = {0}, b = {.algo = ACL_ALGO_NCCL};
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++) {
      if (!acl_land_valid(l, coll, nbytes, nranks, a, p))
        continue;
      for (int n = 1; n <= l->max_channels; n++)
        for (int k = l->chunk_on ? ACL_CHUNK_LOG2_MIN : 0;
             k <= (l->chunk_on ? ACL_CHUNK_LOG2_MAX : 0); k++) {
          c.algo = (int8_t)a;
          c.proto = (int8_t)p;
          c.nchannels = (int16_t)n;
          c.chunk_log2 = k;
          double t = acl_land_time(l, coll, nbytes, nranks, &c, interference);
          if (t < bt) {
            bt = t;
            b = c;
          }
        }
    }
  if (best)
    *best = b;
  return bt;
}

void acl_land_cost_table(const acl_landscape_t *l, int coll, uint64_t nbytes, int nranks,
                         float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  acl_candidate_t d;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      cost[a][p] = -1.0f;
  if (!l || !ranks_ok(coll, nranks))
    return;
  default_at(l, coll, (double)nbytes, &d);
  double tdef = acl_land_time(l, coll, nbytes, nranks, &d, 0.0) * 1e6;
  int k = nearest_point((double)nbytes);
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++) {
      if (!acl_land_valid(l, coll, nbytes, nranks, a, p))
        continue;
      acl_candidate_t c = {.algo = (int8_t)a, .proto = (int8_t)p, .nchannels = d.nchannels};
      double t = acl_land_time(l, coll, nbytes, nranks, &c, 0.0) * 1e6;
      /* NCCL's model error: synthetic draws, or a fixed +-20% pattern. */
      double e = l->kind == ACL_LAND_SYNTH ? l->s[coll][k].pred_err[a][p]
                                           : 1.0 + 0.2 * sin(1.7 * a + 2.9 * p + k);
      double pred = t * e;
      if (a == d.algo && p == d.proto)
        pred = tdef;
      else if (pred <= tdef * 1.02) /* NCCL's pick stays its strict minimum */
        pred = tdef * 1.02;
      cost[a][p] = (float)pred;
    }
}
