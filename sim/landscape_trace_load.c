/* Loading the replay landscape's traces (see landscape_trace.c for the
 * rules): autoccl-bench traces (docs/trace.md) under <set>/<regime>-<launch>-
 * <coll>/, read line by line (gzip with zlib, plain .jsonl without), sorted
 * into executed configs per size, and the set-up costs fitted. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ACL_HAVE_ZLIB
#include <zlib.h>
#endif

#include "sim/landscape_int.h"

#define SKIP_ITERS 5

static int mcoll_of_name(const char *s, size_t n)
{
  if (n == 10 && !strncmp(s, "all_gather", n))
    return 0;
  if (n == 14 && !strncmp(s, "reduce_scatter", n))
    return 1;
  if (n == 10 && !strncmp(s, "all_reduce", n))
    return 2;
  return -1;
}

/* ---- tiny readers for our own one-line JSON objects ---------------------- */

static const char *after_key(const char *line, const char *key)
{
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(line, k);
  return p ? p + strlen(k) : NULL;
}

/* The string value of key into out; false when absent or not a string. */
static bool str_of(const char *line, const char *key, char *out, size_t len)
{
  const char *p = after_key(line, key);
  if (!p || *p != '"')
    return false;
  p++;
  size_t n = 0;
  while (*p && *p != '"' && n + 1 < len)
    out[n++] = *p++;
  out[n] = '\0';
  return *p == '"';
}

static bool num_of(const char *line, const char *key, double *v)
{
  const char *p = after_key(line, key);
  if (!p || (*p != '-' && (*p < '0' || *p > '9')))
    return false;
  *v = strtod(p, NULL);
  return true;
}

/* ---- building ------------------------------------------------------------ */

/* The channels NCCL built, which a config of unknown count ran with. */
static int built_channels(const acl_land_tr_t *tr)
{
  return tr->built_ch > 0 ? tr->built_ch : ACL_TR_BUILT_CH;
}

static acl_tr_pt_t *point_of(acl_tr_set_t *s, double bytes)
{
  for (int i = 0; i < s->npts; i++)
    if (s->pt[i].bytes == bytes)
      return &s->pt[i];
  if (s->npts >= ACL_TR_NSZ)
    return NULL;
  acl_tr_pt_t *p = &s->pt[s->npts++];
  memset(p, 0, sizeof *p);
  p->bytes = bytes;
  p->def = -1;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int q = 0; q < ACL_NUM_PROTO; q++)
      p->auto_nch[a][q] = 0;
  return p;
}

static acl_tr_cfg_t *cfg_of(acl_tr_pt_t *p, int algo, int proto, int nch, bool guess)
{
  for (int i = 0; i < p->ncfg; i++)
    if (p->cfg[i].algo == algo && p->cfg[i].proto == proto && p->cfg[i].nch == nch &&
        p->cfg[i].guess == guess)
      return &p->cfg[i];
  if (p->ncfg >= ACL_TR_NCFG)
    return NULL;
  acl_tr_cfg_t *c = &p->cfg[p->ncfg++];
  memset(c, 0, sizeof *c);
  c->algo = (int8_t)algo;
  c->proto = (int8_t)proto;
  c->nch = (int16_t)nch;
  c->guess = guess;
  return c;
}

/* times_us: [[rank 0 ...],[rank 1 ...]] -> t[r * cap + i]; returns T. */
static int parse_times(const char *line, float *t, int cap, int *nranks)
{
  const char *p = after_key(line, "times_us");
  if (!p || *p != '[')
    return -1;
  p++;
  int r = 0, T = -1;
  while (*p == '[' && r < ACL_TR_MAXR) {
    p++;
    int i = 0;
    while (*p && *p != ']') {
      char *end;
      double v;
      if (!strncmp(p, "null", 4)) {
        v = NAN;
        end = (char *)p + 4;
      } else {
        v = strtod(p, &end);
        if (end == p)
          return -1;
      }
      if (i < cap)
        t[r * cap + i] = (float)v;
      i++;
      p = end;
      if (*p == ',')
        p++;
    }
    if (*p != ']')
      return -1;
    p++;
    if (T < 0 || i < T)
      T = i;
    r++;
    if (*p == ',')
      p++;
  }
  *nranks = r;
  return T > cap ? cap : T;
}

static int cmp_f(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static double median_of(float *v, size_t n)
{
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof *v, cmp_f);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct file_info {
  int mcoll, regime;
  bool is_default, asked_auto;
  int asked_nch;
  int label_algo, label_proto;
} file_info_t;

#define LINE_MAX_BYTES (1 << 22)

/* gzip with zlib; plain text (".jsonl") without it. */
#ifdef ACL_HAVE_ZLIB
typedef gzFile rd_t;
static rd_t rd_open(const char *p) { return gzopen(p, "rb"); }
static char *rd_gets(rd_t f, char *b, int n) { return gzgets(f, b, n); }
static void rd_close(rd_t f) { gzclose(f); }
#else
typedef FILE *rd_t;
static rd_t rd_open(const char *p)
{
  size_t l = strlen(p);
  return l > 3 && !strcmp(p + l - 3, ".gz") ? NULL : fopen(p, "r");
}
static char *rd_gets(rd_t f, char *b, int n) { return fgets(b, n, f); }
static void rd_close(rd_t f) { fclose(f); }
#endif

/* Loads one trace file into l->tr. 0 ok (or skipped), -1 error. */
static int load_file(acl_land_tr_t *tr, const char *path, const char *launch, char *err,
                     size_t errlen)
{
  rd_t f = rd_open(path);
  if (!f) {
    snprintf(err, errlen, "%s: cannot open%s", path,
#ifdef ACL_HAVE_ZLIB
             ""
#else
             " (built without zlib: only plain .jsonl traces are read)"
#endif
    );
    return -1;
  }
  char *line = malloc(LINE_MAX_BYTES);
  int cap = 4096;
  float *t = malloc(sizeof(float) * ACL_TR_MAXR * (size_t)cap);
  float *mx = malloc(sizeof(float) * (size_t)cap);
  int rc = -1;
  file_info_t fi = {.mcoll = -1};
  double first_excess_first_size = NAN;
  int first_algo = -1, first_nch = 0;
  bool first_size = true;
  if (!line || !t || !mx || !rd_gets(f, line, LINE_MAX_BYTES)) {
    snprintf(err, errlen, "%s: empty or unreadable", path);
    goto out;
  }
  char s[96];
  if (!str_of(line, "format", s, sizeof s) || strcmp(s, "autoccl-bench-trace") != 0) {
    rc = 0; /* not a bench trace (e.g. a plugin trace): not ours to replay */
    goto out;
  }
  double ver = 0;
  if (!num_of(line, "version", &ver) || ver != 1) {
    snprintf(err, errlen, "%s: trace version %g, this simulator reads 1", path, ver);
    goto out;
  }
  if (!str_of(line, "launch", s, sizeof s) || strcmp(s, launch) != 0) {
    rc = 0;
    goto out;
  }
  if (!str_of(line, "coll", s, sizeof s) || (fi.mcoll = mcoll_of_name(s, strlen(s))) < 0) {
    rc = 0; /* broadcast/reduce traces: not replayed */
    goto out;
  }
  const char *g = after_key(line, "gemm");
  fi.regime = g && *g == '{' ? 1 : 0;
  if (!str_of(line, "label", s, sizeof s)) {
    snprintf(err, errlen, "%s: header has no label", path);
    goto out;
  }
  if (!strcmp(s, "autoccl") || !strcmp(s, "table")) {
    rc = 0; /* the tuner's own runs mix configs: not a landscape */
    goto out;
  }
  fi.is_default = !strcmp(s, "default");
  fi.label_algo = fi.label_proto = -1;
  if (!fi.is_default) {
    char a[32] = "", p[32] = "", ch[32] = "";
    if (sscanf(s, "%31[^/]/%31[^/]/%31s", a, p, ch) != 3) {
      snprintf(err, errlen, "%s: label '%s' is neither default nor ALGO/PROTO/CH", path, s);
      goto out;
    }
    fi.label_algo = acl_algo_parse(a);
    fi.label_proto = acl_proto_parse(p);
    fi.asked_auto = !strcmp(ch, "auto");
    fi.asked_nch = fi.asked_auto ? 0 : atoi(ch);
  } else {
    fi.asked_auto = true;
  }
  if (after_key(line, "derived"))
    tr->derived = true;
  acl_tr_set_t *set = &tr->set[fi.regime][fi.mcoll];
  set->present = true;
  while (rd_gets(f, line, LINE_MAX_BYTES)) {
    if (!strstr(line, "\"t\":\"size\""))
      continue;
    double bytes = 0, status = 1;
    if (!num_of(line, "bytes", &bytes) || !num_of(line, "status", &status) || status != 0)
      continue;
    int nr = 0;
    int T = parse_times(line, t, cap, &nr);
    if (T <= SKIP_ITERS || nr < 1) {
      if (T < 0) {
        snprintf(err, errlen, "%s: bad times_us at %.0f bytes", path, bytes);
        goto out;
      }
      continue;
    }
    /* What NCCL ran: the probe's rank 0; else the label's, resolved with
     * the set (resolve_guesses; channels: asked, or NCCL's own). */
    int algo = fi.label_algo, proto = fi.label_proto, nch = fi.asked_nch;
    bool guess = true;
    const char *rp = after_key(line, "ran");
    if (rp && *rp == '[') {
      char a[32], p[32];
      double n = 0;
      if (str_of(rp, "algo", a, sizeof a) && str_of(rp, "proto", p, sizeof p) &&
          num_of(rp, "nch", &n)) {
        algo = acl_algo_parse(a);
        proto = acl_proto_parse(p);
        nch = (int)n;
        guess = false;
        if (algo < 0 || proto < 0)
          continue; /* a config this build does not know */
      }
    }
    if (guess && !fi.is_default && (algo < 0 || proto < 0))
      continue; /* a label this build does not know */
    int built = built_channels(tr);
    if (!guess && nch <= 0)
      nch = built;
    acl_tr_pt_t *pt = point_of(set, bytes);
    acl_tr_cfg_t *c = pt ? cfg_of(pt, algo, proto, nch, guess) : NULL;
    if (!c)
      continue;
    if (!guess && fi.asked_auto)
      pt->auto_nch[algo][proto] = (int16_t)nch;
    if (!guess && fi.is_default)
      pt->def = (int)(c - pt->cfg);
    /* slowest rank per iteration; steady iterations into the pool */
    for (int i = 0; i < T; i++) {
      float m = 0;
      for (int r = 0; r < nr; r++)
        if (t[r * cap + i] > m)
          m = t[r * cap + i];
      mx[i] = m;
    }
    size_t add = (size_t)(T - SKIP_ITERS);
    size_t need = (c->n + add) * (size_t)nr;
    if (c->nranks && c->nranks != nr) {
      snprintf(err, errlen, "%s: %d ranks where earlier traces had %d", path, nr, c->nranks);
      goto out;
    }
    c->nranks = nr;
    float *v = realloc(c->v, sizeof(float) * need);
    if (!v) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    c->v = v;
    for (int i = SKIP_ITERS; i < T; i++)
      for (int r = 0; r < nr; r++)
        c->v[(c->n + (size_t)(i - SKIP_ITERS)) * (size_t)nr + (size_t)r] = t[r * cap + i];
    c->n += add;
    if (first_size && algo >= 0) { /* the run's first call: set-up of its config */
      float *tmp = malloc(sizeof(float) * (size_t)T);
      if (tmp) {
        memcpy(tmp, mx + SKIP_ITERS, sizeof(float) * add);
        first_excess_first_size = mx[0] - median_of(tmp, add);
        free(tmp);
      }
      first_algo = algo;
      first_nch = nch > 0 ? nch : built;
      first_size = false;
    }
  }
  if (isfinite(first_excess_first_size)) {
    if (fi.is_default) {
      set->has_def = true;
      set->def_first_excess_us = first_excess_first_size;
      set->def_algo = first_algo;
      set->def_nch = first_nch;
    } else if (set->nexcess < ACL_TR_MAXEXCESS) {
      set->excess_algo[set->nexcess] = (int8_t)first_algo;
      set->excess_nch[set->nexcess] = (int16_t)first_nch;
      set->excess_us[set->nexcess++] = first_excess_first_size;
    }
  }
  tr->files++;
  rc = 0;
out:
  free(line);
  free(t);
  free(mx);
  rd_close(f);
  return rc;
}

static int cmp_pt(const void *a, const void *b)
{
  double x = ((const acl_tr_pt_t *)a)->bytes, y = ((const acl_tr_pt_t *)b)->bytes;
  return (x > y) - (x < y);
}

/* The point nearest to point i (log size, i itself first) where `has`
 * holds; -1 when none does. */
static int nearest_with(const acl_tr_set_t *s, int i, bool (*has)(const acl_tr_pt_t *, int, int),
                        int a, int q)
{
  int best = -1;
  double bd = INFINITY;
  for (int j = 0; j < s->npts; j++) {
    double d = fabs(log(s->pt[j].bytes / s->pt[i].bytes));
    if (has(&s->pt[j], a, q) && d < bd) {
      bd = d;
      best = j;
    }
  }
  return best;
}

static bool has_def(const acl_tr_pt_t *p, int a, int q)
{
  (void)a, (void)q;
  return p->def >= 0;
}

static bool has_own(const acl_tr_pt_t *p, int a, int q) { return p->auto_nch[a][q] > 0; }

/* Records without "ran" (the probe saw no event at that size; AllGather's
 * first size on one GPU) ran what NCCL runs for their label, by the rules
 * of the executed configs: a default run NCCL's default at the nearest size
 * that recorded it, channels NCCL's own count there for the algorithm and
 * protocol, or the count asked when lower. So runs that differ only in
 * channels NCCL cut away pool into one distribution, as recorded ones do,
 * instead of each run's noise passing for a config's. With nothing to go
 * by, the label as asked (built channels for its own count). */
static void resolve_guesses(acl_tr_set_t *s, int built)
{
  for (int i = 0; i < s->npts; i++) {
    acl_tr_pt_t *p = &s->pt[i];
    int own_at[ACL_NUM_ALGO][ACL_NUM_PROTO] = {{0}};
    int was_def[ACL_TR_NCFG] = {0};
    for (int k = 0; k < p->ncfg; k++) {
      acl_tr_cfg_t *c = &p->cfg[k];
      if (!c->guess)
        continue;
      int a = c->algo, q = c->proto;
      if (a < 0) { /* a default run: the default's config at the nearest size */
        int j = nearest_with(s, i, has_def, 0, 0);
        if (j < 0 || s->pt[j].cfg[s->pt[j].def].guess) {
          c->n = 0; /* unknown config: left out, as before the probe */
          continue;
        }
        a = s->pt[j].cfg[s->pt[j].def].algo;
        q = s->pt[j].cfg[s->pt[j].def].proto;
        was_def[k] = 1;
      }
      int j = nearest_with(s, i, has_own, a, q);
      int own = j >= 0 ? s->pt[j].auto_nch[a][q] : 0;
      int n = c->nch > 0 && (own == 0 || c->nch < own) ? c->nch : own > 0 ? own : built;
      if (own > 0 && p->auto_nch[a][q] == 0)
        own_at[a][q] = own;
      c->algo = (int8_t)a;
      c->proto = (int8_t)q;
      c->nch = (int16_t)n;
    }
    /* pool each resolved record into the recorded config it ran as */
    for (int k = 0; k < p->ncfg; k++) {
      acl_tr_cfg_t *c = &p->cfg[k];
      if (!c->guess || c->n == 0)
        continue;
      c->guess = false;
      for (int m = 0; m < p->ncfg; m++) {
        acl_tr_cfg_t *d = &p->cfg[m];
        if (m == k || d->guess || d->n == 0 || d->algo != c->algo || d->proto != c->proto ||
            d->nch != c->nch || d->nranks != c->nranks)
          continue;
        float *v = realloc(d->v, sizeof(float) * (d->n + c->n) * (size_t)d->nranks);
        if (!v)
          break;
        memcpy(v + d->n * (size_t)d->nranks, c->v, sizeof(float) * c->n * (size_t)c->nranks);
        d->v = v;
        d->n += c->n;
        c->n = 0;
        if (was_def[k] && p->def < 0)
          p->def = m;
        break;
      }
      if (c->n > 0 && was_def[k] && p->def < 0)
        p->def = k;
    }
    /* drop the emptied, keeping the default's index */
    int w = 0;
    for (int k = 0; k < p->ncfg; k++) {
      if (p->cfg[k].n == 0 && (p->cfg[k].guess || p->cfg[k].v)) {
        free(p->cfg[k].v);
        if (p->def == k)
          p->def = -1;
        continue;
      }
      if (p->def == k)
        p->def = w;
      p->cfg[w++] = p->cfg[k];
    }
    p->ncfg = w;
    for (int a = 0; a < ACL_NUM_ALGO; a++)
      for (int q = 0; q < ACL_NUM_PROTO; q++)
        if (own_at[a][q] > 0)
          p->auto_nch[a][q] = (int16_t)own_at[a][q];
  }
}

static void finish_set(acl_tr_set_t *s, int built)
{
  qsort(s->pt, (size_t)s->npts, sizeof s->pt[0], cmp_pt);
  resolve_guesses(s, built);
  for (int i = 0; i < s->npts; i++)
    for (int k = 0; k < s->pt[i].ncfg; k++) {
      acl_tr_cfg_t *c = &s->pt[i].cfg[k];
      float *m = malloc(sizeof(float) * (c->n ? c->n : 1));
      if (!m)
        continue;
      double sum = 0;
      for (size_t j = 0; j < c->n; j++) {
        float w = 0;
        for (int r = 0; r < c->nranks; r++)
          if (c->v[j * (size_t)c->nranks + (size_t)r] > w)
            w = c->v[j * (size_t)c->nranks + (size_t)r];
        m[j] = w;
        sum += w;
      }
      c->mean_us = c->n ? sum / (double)c->n : NAN;
      c->median_us = median_of(m, c->n);
      free(m);
    }
  /* set-up: fit the connection costs (see the header) */
  s->conn_ch_us = 0;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    s->conn_algo_us[a] = 0;
  if (!s->has_def || s->nexcess == 0)
    return;
  float v[ACL_TR_MAXEXCESS];
  size_t n = 0;
  for (int i = 0; i < s->nexcess; i++)
    if (s->excess_algo[i] == s->def_algo && s->excess_nch[i] > s->def_nch)
      v[n++] =
          (float)((s->excess_us[i] - s->def_first_excess_us) / (s->excess_nch[i] - s->def_nch));
  double ch = n ? median_of(v, n) : 0.0;
  s->conn_ch_us = ch > 0 ? ch : 0;
  for (int a = 0; a < ACL_NUM_ALGO; a++) {
    if (a == s->def_algo)
      continue;
    n = 0;
    for (int i = 0; i < s->nexcess; i++)
      if (s->excess_algo[i] == a)
        v[n++] = (float)(s->excess_us[i] - s->def_first_excess_us -
                         s->conn_ch_us *
                             (s->excess_nch[i] > s->def_nch ? s->excess_nch[i] - s->def_nch : 0));
    double x = n ? median_of(v, n) : 0.0;
    s->conn_algo_us[a] = x > 0 ? x : 0;
  }
}

static void load_events(acl_land_tr_t *tr, const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  char line[256], coll[32];
  double b, us;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || sscanf(line, "%31s %lf %lf", coll, &b, &us) != 3)
      continue;
    int mc = mcoll_of_name(coll, strlen(coll));
    if (mc < 0)
      continue;
    for (int r = 0; r < 2; r++) {
      acl_tr_set_t *s = &tr->set[r][mc];
      if (s->nev < ACL_TR_NEV) {
        s->ev_bytes[s->nev] = b;
        s->ev_us[s->nev++] = us;
      }
    }
  }
  fclose(f);
}

static bool is_trace_name(const char *n)
{
  size_t l = strlen(n);
  return !strstr(n, "-plugin-") &&
         ((l > 9 && !strcmp(n + l - 9, ".jsonl.gz")) || (l > 6 && !strcmp(n + l - 6, ".jsonl")));
}

int acl_land_tr_load(acl_land_tr_t *tr, const char *dir, const char *launch, char *err,
                     size_t errlen)
{
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, errlen, "cannot open the trace folder %s (set AUTOCCL_SIM_TRACES)", dir);
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  char path[1024], ev[1024];
  while (rc == 0 && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    DIR *sub = opendir(path);
    if (!sub)
      continue;
    struct dirent *f;
    while (rc == 0 && (f = readdir(sub))) {
      if (!is_trace_name(f->d_name))
        continue;
      char fp[2048];
      snprintf(fp, sizeof fp, "%s/%s", path, f->d_name);
      rc = load_file(tr, fp, launch, err, errlen);
    }
    closedir(sub);
  }
  closedir(d);
  if (rc)
    return rc;
  snprintf(ev, sizeof ev, "%s/events.tsv", dir);
  load_events(tr, ev);
  bool any = false;
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < ACL_LAND_H200_NCOLL; c++)
      if (tr->set[r][c].present) {
        finish_set(&tr->set[r][c], built_channels(tr));
        any = any || r == 0;
      }
  if (!any || tr->files == 0) {
    snprintf(err, errlen,
             "no isolated --%s bench traces of all_reduce/all_gather/reduce_scatter "
             "in %s",
             launch, dir);
    return -1;
  }
  return 0;
}

void acl_land_tr_free(acl_land_tr_t *tr)
{
  if (!tr)
    return;
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < ACL_LAND_H200_NCOLL; c++)
      for (int i = 0; i < tr->set[r][c].npts; i++)
        for (int k = 0; k < tr->set[r][c].pt[i].ncfg; k++)
          free(tr->set[r][c].pt[i].cfg[k].v);
  acl_land_destroy(tr->h200);
  free(tr);
}
