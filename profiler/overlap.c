/* Merged-interval intersection; see overlap.h. */
#include "profiler/overlap.h"

#include <stdlib.h>
#include <string.h>

static int ival_cmp(const void *a, const void *b)
{
  const acl_ival_t *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

size_t acl_prof_ival_merge(acl_ival_t *iv, size_t n)
{
  size_t m = 0;
  for (size_t i = 0; i < n; i++) /* drop empty / reversed ones first */
    if (iv[i].end > iv[i].start)
      iv[m++] = iv[i];
  if (m < 2)
    return m;
  qsort(iv, m, sizeof(*iv), ival_cmp);
  size_t out = 0;
  for (size_t i = 1; i < m; i++) {
    if (iv[i].start <= iv[out].end) { /* touching or overlapping */
      if (iv[i].end > iv[out].end)
        iv[out].end = iv[i].end;
    } else {
      iv[++out] = iv[i];
    }
  }
  return out + 1;
}

uint64_t acl_prof_ival_covered(const acl_ival_t *merged, size_t n, uint64_t s, uint64_t e)
{
  uint64_t sum = 0;
  if (e <= s)
    return 0;
  for (size_t i = 0; i < n; i++) {
    if (merged[i].start >= e)
      break;
    uint64_t a = merged[i].start > s ? merged[i].start : s;
    uint64_t b = merged[i].end < e ? merged[i].end : e;
    if (b > a)
      sum += b - a;
  }
  return sum;
}

double acl_prof_overlap_frac(acl_ival_t *iv, size_t n, uint64_t s, uint64_t e)
{
  if (e < s)
    return -1.0;
  if (e == s)
    return 0.0;
  size_t m = acl_prof_ival_merge(iv, n);
  double f = (double)acl_prof_ival_covered(iv, m, s, e) / (double)(e - s);
  return f > 1.0 ? 1.0 : f;
}

uint64_t acl_prof_exposed_ns(acl_ival_t *iv, size_t n, uint64_t s, uint64_t e)
{
  if (e <= s)
    return 0;
  size_t m = acl_prof_ival_merge(iv, n);
  return (e - s) - acl_prof_ival_covered(iv, m, s, e);
}

bool acl_exposure_estimate(uint64_t calls, uint64_t dur_count, double dur_sum, double known_coll,
                           double known_exposed, acl_exposure_t *out)
{
  memset(out, 0, sizeof(*out));
  if (dur_count == 0 || !(dur_sum > 0.0) || !(known_coll > 0.0) || known_exposed < 0.0)
    return false;
  double share = known_exposed / known_coll;
  out->share = share > 1.0 ? 1.0 : share;
  /* Every call was made, only some were timed: scale the mean. */
  uint64_t n = calls > dur_count ? calls : dur_count;
  out->collective_seconds = (double)n * (dur_sum / (double)dur_count);
  out->exposed_seconds = out->collective_seconds * out->share;
  return true;
}

void acl_exposure_pick(const double coll[ACL_OV_N], const double exposed[ACL_OV_N], double *c,
                       double *e)
{
  *c = *e = 0.0;
  for (int k = ACL_OV_DECIDED; k >= ACL_OV_NCCL; k--)
    if (coll[k] > 0.0) {
      *c = coll[k];
      *e = exposed[k];
      return;
    }
  for (int k = 0; k < ACL_OV_N; k++) {
    *c += coll[k];
    *e += exposed[k];
  }
}

bool acl_exposure_fold(acl_exposure_acc_t *acc, uint64_t calls, uint64_t dur_count, double dur_sum,
                       double known_coll, double known_exposed)
{
  acl_exposure_t e;
  if (!acl_exposure_estimate(dur_count, dur_count, dur_sum, known_coll, known_exposed, &e))
    return false;
  if (calls > acc->calls) {
    double add = (double)(calls - acc->calls) * (dur_sum / (double)dur_count);
    acc->collective_seconds += add;
    acc->exposed_seconds += add * e.share;
    acc->calls = calls;
  }
  return true;
}

bool acl_kring_overlaps(acl_kring_t *r, uint64_t start, uint64_t end)
{
  bool hit = false;
  uint64_t n = r->n < ACL_KRING_CAP ? r->n : ACL_KRING_CAP;
  for (uint64_t i = 0; i < n && !hit; i++) {
    uint64_t lo = start > r->start[i] ? start : r->start[i];
    uint64_t hi = end < r->end[i] ? end : r->end[i];
    hit = hi > lo && hi - lo > ACL_KRING_TOL_NS;
  }
  r->start[r->n % ACL_KRING_CAP] = start;
  r->end[r->n % ACL_KRING_CAP] = end;
  r->n++;
  return hit;
}

void acl_cwin_push(acl_cwin_t *w, uint64_t start, uint64_t end, uint32_t name_id)
{
  acl_cwin_rec_t *r = &w->rec[w->head % ACL_CWIN_CAP];
  if (w->head >= ACL_CWIN_CAP && r->end > w->evicted_end)
    w->evicted_end = r->end;
  r->start = start;
  r->end = end;
  r->name_id = name_id;
  w->head++;
  if (end > w->max_end)
    w->max_end = end;
}

void acl_cwin_overlap(const acl_cwin_t *w, uint64_t s, uint64_t e, acl_overlap_res_t *out)
{
  /* Static scratch would not be thread-safe; the window is bounded, so the
   * stack copy is too (CAP * 16 bytes). */
  acl_ival_t iv[ACL_CWIN_CAP];
  uint64_t cov_by_name[8] = {0};
  uint32_t seen[64];
  uint32_t nseen = 0;
  size_t n = 0;
  memset(out, 0, sizeof(*out));
  if (e < s) {
    out->frac = -1.0;
    return;
  }
  if (w->evicted_end > s) {
    out->truncated = true;
    out->frac = -1.0;
    return;
  }
  uint64_t cnt = w->head < ACL_CWIN_CAP ? w->head : ACL_CWIN_CAP;
  for (uint64_t i = 0; i < cnt; i++) {
    const acl_cwin_rec_t *r = &w->rec[i];
    if (r->end <= r->start || r->start >= e || r->end <= s)
      continue;
    iv[n].start = r->start;
    iv[n].end = r->end;
    n++;
    out->kernels++;
    uint64_t a = r->start > s ? r->start : s, b = r->end < e ? r->end : e;
    uint32_t k, j;
    for (j = 0; j < nseen; j++) /* distinct names, exact up to the size of seen[] */
      if (seen[j] == r->name_id)
        break;
    if (j == nseen) {
      out->distinct++;
      if (nseen < sizeof(seen) / sizeof(seen[0]))
        seen[nseen++] = r->name_id;
    }
    for (k = 0; k < out->nnames; k++)
      if (out->names[k] == r->name_id)
        break;
    if (k == out->nnames) {
      if (out->nnames == sizeof(out->names) / sizeof(out->names[0]))
        continue;
      out->names[out->nnames++] = r->name_id;
    }
    cov_by_name[k] += b - a;
  }
  /* Order names by covered time (insertion sort, <= 8 entries). */
  for (uint32_t i = 1; i < out->nnames; i++)
    for (uint32_t j = i; j > 0 && cov_by_name[j] > cov_by_name[j - 1]; j--) {
      uint64_t tc = cov_by_name[j];
      cov_by_name[j] = cov_by_name[j - 1];
      cov_by_name[j - 1] = tc;
      uint32_t tn = out->names[j];
      out->names[j] = out->names[j - 1];
      out->names[j - 1] = tn;
    }
  out->frac = acl_prof_overlap_frac(iv, n, s, e);
}
