/* The candidate grid and table of one search (see tuner/search/search.h):
 * the axes and their grid points, candidates found or added by grid point,
 * which candidate is NCCL's own choice, and the statistics over a
 * candidate's samples. The bottom of the search: it calls nothing else in it;
 * search_conv.c (converging) and search.c (planning, judging) build on it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/search/search_int.h"

/* ---- axes ---------------------------------------------------------------- */

/* Channel grid: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64 (about sqrt(2)
 * apart, so doubling/halving the step in grid units doubles/halves the
 * factor), cut at max_channels, which is always the last point. */
static const int16_t chan_grid[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
#define CHAN_GRID_N ((int)(sizeof chan_grid / sizeof chan_grid[0]))

/* The chunk axis lives in search_chunk.c. */

int acl_search_axis_count(const acl_search_t *s, int axis)
{
  if (axis == ACL_SEARCH_AXIS_CHANNELS) {
    int n = 0;
    while (n < CHAN_GRID_N && chan_grid[n] < s->params.max_channels)
      n++;
    return n + 1; /* max_channels itself closes the grid */
  }
  return acl_search_chunk_count(s);
}

int acl_search_axis_value(const acl_search_t *s, int axis, int idx)
{
  if (axis == ACL_SEARCH_AXIS_CHANNELS) {
    int n = acl_search_axis_count(s, axis);
    return idx >= n - 1 ? s->params.max_channels : chan_grid[idx];
  }
  return acl_search_chunk_value(s, idx);
}

/* Grid index nearest to a channel count. */
static int chan_index(const acl_search_t *s, int want)
{
  int n = acl_search_axis_count(s, ACL_SEARCH_AXIS_CHANNELS), best = 0;
  for (int i = 0; i < n; i++)
    if (abs(acl_search_axis_value(s, ACL_SEARCH_AXIS_CHANNELS, i) - want) <
        abs(acl_search_axis_value(s, ACL_SEARCH_AXIS_CHANNELS, best) - want))
      best = i;
  return best;
}

/* Where a subspace's descent starts on an axis when nothing is known yet:
 * the channel count NCCL ran when known (hint), else half of the ceiling. */
int acl_search_axis_start(const acl_search_t *s, int axis)
{
  if (axis != ACL_SEARCH_AXIS_CHANNELS)
    return acl_search_chunk_start(s);
  return chan_index(s, s->hint_ch > 0 ? s->hint_ch : s->params.max_channels / 2);
}

/* ---- candidates ---------------------------------------------------------- */

bool acl_search_pair_valid(const acl_search_t *s, int a, int p)
{
  return (s->valid_mask & ACL_AP_BIT(a, p)) != 0;
}

int acl_search_find_or_add(acl_search_t *s, int sub, const uint8_t idx[ACL_SEARCH_NUM_AXES])
{
  for (int i = 1; i < s->ncands; i++) {
    const acl_search_cand_t *c = &s->cands[i];
    if (c->sub == sub && memcmp(c->axis_idx, idx, ACL_SEARCH_NUM_AXES) == 0)
      return i;
  }
  if (s->ncands >= ACL_SEARCH_MAX_CANDS)
    return -1;
  int id = s->ncands++;
  acl_search_cand_t *c = &s->cands[id];
  memset(c, 0, sizeof *c);
  c->sub = (uint8_t)sub;
  memcpy(c->axis_idx, idx, ACL_SEARCH_NUM_AXES);
  c->cand.algo = s->subs[sub].algo;
  c->cand.proto = s->subs[sub].proto;
  c->cand.nchannels = (int16_t)acl_search_axis_value(s, ACL_SEARCH_AXIS_CHANNELS, idx[0]);
  c->cand.chunk_log2 = acl_search_axis_value(s, ACL_SEARCH_AXIS_CHUNK, idx[1]);
  return id;
}

bool acl_search_is_nccl(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  /* by what NCCL runs it with: a request it rounds to its own count is its
   * own choice */
  return id == ACL_SEARCH_CAND_NCCL ||
         (s->hint_ch > 0 && c->cand.algo == s->nccl_algo && c->cand.proto == s->nccl_proto &&
          acl_search_runs_channels(s, id) == s->hint_ch && c->cand.chunk_log2 == 0);
}

/* ---- statistics ---------------------------------------------------------- */

static void sort_floats(float *v, int n)
{
  for (int i = 1; i < n; i++) {
    float x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      j--;
    }
    v[j + 1] = x;
  }
}

/* The median of n > 0 values sorted ascending. */
static double sorted_median(const float *v, int n)
{
  return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

/* Mean of the fastest 75% (rounded up): slow outliers never count. */
double acl_search_trimmed_mean(const float *src, int n)
{
  float v[ACL_SEARCH_STAT_MAX];
  if (n <= 0)
    return 0.0;
  if (n > ACL_SEARCH_STAT_MAX)
    n = ACL_SEARCH_STAT_MAX;
  memcpy(v, src, (size_t)n * sizeof v[0]);
  sort_floats(v, n);
  int k = (3 * n + 3) / 4;
  double sum = 0.0;
  for (int i = 0; i < k; i++)
    sum += v[i];
  return sum / k;
}

double acl_search_median(const float *src, int n)
{
  float v[ACL_SEARCH_STAT_MAX]; /* a candidate's ring or the drift window */
  if (n <= 0)
    return 0.0;
  if (n > ACL_SEARCH_STAT_MAX)
    n = ACL_SEARCH_STAT_MAX;
  memcpy(v, src, (size_t)n * sizeof v[0]);
  sort_floats(v, n);
  return sorted_median(v, n);
}

double acl_search_log_sd(const float *a, int na, const float *b, int nb)
{
  float d[2 * ACL_SEARCH_STAT_MAX];
  const float *src[2] = {a, b};
  int cnt[2] = {na < ACL_SEARCH_STAT_MAX ? na : ACL_SEARCH_STAT_MAX,
                nb < ACL_SEARCH_STAT_MAX ? nb : ACL_SEARCH_STAT_MAX};
  int n = 0;
  for (int k = 0; k < 2; k++) {
    double med = acl_search_median(src[k], cnt[k]);
    if (!(med > 0.0))
      continue;
    for (int i = 0; i < cnt[k]; i++)
      if (src[k][i] > 0.0f)
        d[n++] = (float)fabs(log(src[k][i] / med));
  }
  if (n < 3)
    return 0.0;
  sort_floats(d, n);
  return 1.4826 * sorted_median(d, n);
}

double acl_search_mean_overlap(const acl_search_cand_t *c)
{
  double sum = 0.0;
  int n = 0;
  for (int i = 0; i < c->nsamples; i++)
    if (c->overlap[i] >= 0.0f) {
      sum += c->overlap[i];
      n++;
    }
  return n ? sum / n : -1.0;
}

double acl_search_busbw(const acl_search_t *s, double seconds)
{
  if (seconds <= 0.0)
    return 0.0;
  return (double)s->key.nbytes * acl_busbw_factor(s->key.coll, s->params.nranks) / seconds;
}

bool acl_search_usable(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  if (id == ACL_SEARCH_CAND_NCCL)
    return true;
  return c->judged && (s->valid_mask & ACL_AP_BIT(c->cand.algo, c->cand.proto)) != 0;
}

double acl_search_measured_ref(const acl_search_t *s)
{
  const acl_search_cand_t *b = &s->cands[0];
  if (b->judged && b->robust_seconds > 0.0)
    return b->robust_seconds;
  /* A few samples (CUPTI's windows measure every call they cover) beat
   * the cost table, which was 5x low on one H200. */
  if (b->nsamples > 0)
    return acl_search_median(b->seconds, b->nsamples);
  return 0.0;
}

double acl_search_ref_seconds(const acl_search_t *s)
{
  double m = acl_search_measured_ref(s);
  if (m > 0.0)
    return m;
  if (s->ref_kept > 0.0)
    return s->ref_kept;
  if (s->nccl_algo >= 0 && s->cost[s->nccl_algo][s->nccl_proto] > 0.0f)
    return s->cost[s->nccl_algo][s->nccl_proto] * 1e-6 *
           (s->prior_scale > 0.0f ? (double)s->prior_scale : 1.0);
  return 0.0;
}

bool acl_search_on_prior(const acl_search_t *s)
{
  return !s->cands[0].judged && s->cands[0].nsamples == 0;
}

/* Samples of NCCL's choice before its error counts: one may be a first
 * call's setup. */
#define PRIOR_ERROR_MIN_N 3

bool acl_search_prior_error(const acl_search_t *s, double *ratio)
{
  const acl_search_cand_t *b = &s->cands[0];
  if (s->nccl_algo < 0 || !(s->cost[s->nccl_algo][s->nccl_proto] > 0.0f) ||
      (!(b->judged && b->robust_seconds > 0.0) && b->nsamples < PRIOR_ERROR_MIN_N))
    return false;
  double t = acl_search_ref_seconds(s); /* measured now: its verdict or its samples' median */
  if (!(t > 0.0) || !isfinite(t))
    return false;
  *ratio = t / (s->cost[s->nccl_algo][s->nccl_proto] * 1e-6);
  return true;
}

void acl_search_prior_scale(acl_search_t *s, double scale)
{
  if (scale > 0.0 && isfinite(scale))
    s->prior_scale = (float)fmin(fmax(scale, 1.0 / 16.0), 16.0);
}

int acl_search_runs_channels(const acl_search_t *s, int id)
{
  const acl_search_cand_t *c = &s->cands[id];
  if (c->ran_ch > 0)
    return c->ran_ch;
  int b = c->cand.nchannels;
  /* NCCL's rounding is monotone and keeps what it ran: asked a, ran m < a,
   * every request in [m, a] runs m (acl_search_observe_channels). */
  for (int i = 1; c->sub != ACL_SEARCH_NONE && i < s->ncands; i++) {
    const acl_search_cand_t *t = &s->cands[i];
    if (i != id && t->sub == c->sub && t->cand.chunk_log2 == c->cand.chunk_log2 &&
        t->ran_ch > 0 && t->ran_ch < t->cand.nchannels && t->ran_ch <= b &&
        b <= t->cand.nchannels)
      return t->ran_ch;
  }
  return b;
}

/* Best judged candidate (baseline included or not); -1 when none. */
int acl_search_best_judged(const acl_search_t *s, bool include_baseline)
{
  int best = -1;
  for (int i = include_baseline ? 0 : 1; i < s->ncands; i++) {
    const acl_search_cand_t *c = &s->cands[i];
    if (!c->judged || !acl_search_usable(s, i))
      continue;
    if (best < 0 || c->robust_seconds < s->cands[best].robust_seconds)
      best = i;
  }
  return best;
}
