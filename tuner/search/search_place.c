/* Places in the step, for validation (docs/tuner.md, "Validation against
 * NCCL"). A job calls a workload a fixed number of times a step, and a
 * call's time moves with its place in it: a DDP bucket took 0.4 ms at one
 * place of the backward and 2.9 ms at another on one H100. Validation's
 * decision and challenger run at different places, so comparing their
 * means carries the places' spread as noise (a 10 % gain under a 7x spread
 * was never proven) or, where the places fall unevenly, as a bias. Here the
 * decision's samples are kept by call, the period of their places is found
 * (the lag at which a sample best matches the one before it), and each
 * challenger sample is compared with the decision's at the same place of an
 * earlier step: the places' spread cancels. Validation uses that paired
 * estimate where its standard error is well below the unpaired one's (with
 * no place in the step, pairs are the noisier: then nothing changes). */
#include <math.h>
#include <string.h>

#include "tuner/search/search_int.h"

void acl_search_place_reset(acl_search_t *s)
{
  memset(&s->place, 0, sizeof s->place);
}

void acl_search_place_challenger(acl_search_t *s)
{
  acl_search_place_t *p = &s->place;
  p->npend = 0;
  p->pn = 0;
  p->psum = p->psq = 0.0;
}

/* The decision's sample of call tag (index + 1), log(seconds); NAN none. */
static double decision_at(const acl_search_place_t *p, uint32_t tag)
{
  uint32_t i = tag % ACL_SEARCH_PLACE_RING;
  return tag && p->call[i] == tag ? (double)p->lx[i] : NAN;
}

/* The period of the decision's places, 0 while none stands out: the lag
 * (up to ACL_SEARCH_PLACE_MAX_PERIOD) whose pairs differ least, the
 * shortest within 10 % of that (a multiple of the period matches as well),
 * and only where that is below ACL_SEARCH_PLACE_CLEAR of the lags'
 * median difference. */
static uint16_t find_period(const acl_search_place_t *p)
{
  enum { L = ACL_SEARCH_PLACE_MAX_PERIOD };
  double mean[L + 1];
  int ok = 0;
  for (int lag = 1; lag <= L; lag++) {
    double sum = 0.0;
    int n = 0;
    for (uint32_t i = 0; i < ACL_SEARCH_PLACE_RING; i++) {
      uint32_t tag = p->call[i];
      if (!tag || tag <= (uint32_t)lag)
        continue;
      double before = decision_at(p, tag - (uint32_t)lag);
      if (!isnan(before)) {
        sum += fabs((double)p->lx[i] - before);
        n++;
      }
    }
    mean[lag] = n >= ACL_SEARCH_PLACE_MIN_PAIRS ? sum / n : INFINITY;
    ok += n >= ACL_SEARCH_PLACE_MIN_PAIRS;
  }
  if (ok < L / 2)
    return 0;
  double best = INFINITY, sorted[L];
  int m = 0;
  for (int lag = 1; lag <= L; lag++) {
    if (mean[lag] < best)
      best = mean[lag];
    if (isfinite(mean[lag]))
      sorted[m++] = mean[lag];
  }
  for (int i = 1; i < m; i++) /* insertion sort: at most L values */
    for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      double t = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = t;
    }
  double median = sorted[m / 2];
  if (!(best < ACL_SEARCH_PLACE_CLEAR * median))
    return 0;
  for (int lag = 1; lag <= L; lag++)
    if (mean[lag] <= 1.1 * best)
      return (uint16_t)lag;
  return 0;
}

/* A challenger sample against the decision's at its place in the latest of
 * the ACL_SEARCH_PLACE_BACK steps before it that ran the decision. Its
 * difference is clipped at ACL_SEARCH_PLACE_CLIP (a 1000x straggler on
 * either side would otherwise outweigh the rest). */
static bool pair_one(acl_search_place_t *p, uint32_t tag, float lx)
{
  for (uint32_t k = 1; k <= ACL_SEARCH_PLACE_BACK; k++) {
    uint32_t back = k * p->period;
    if (tag <= back)
      break;
    double d = decision_at(p, tag - back);
    if (isnan(d))
      continue;
    double x = fmax(-ACL_SEARCH_PLACE_CLIP, fmin(ACL_SEARCH_PLACE_CLIP, (double)lx - d));
    p->pn++;
    p->psum += x;
    p->psq += x * x;
    return true;
  }
  return false;
}

void acl_search_place_sample(acl_search_t *s, bool challenger, double seconds, uint64_t call)
{
  acl_search_place_t *p = &s->place;
  uint32_t tag = (uint32_t)call;
  if (!tag || !(seconds > 0.0))
    return;
  float lx = (float)log(seconds);
  if (!challenger) {
    uint32_t i = tag % ACL_SEARCH_PLACE_RING;
    p->call[i] = tag;
    p->lx[i] = lx;
    /* the period, looked for every ACL_SEARCH_PLACE_LOOK samples until
     * found (at most ACL_SEARCH_PLACE_MAX_LOOKS times); then the
     * challenger's samples so far are paired */
    if (!p->period && p->looks < ACL_SEARCH_PLACE_MAX_LOOKS && ++p->since >= ACL_SEARCH_PLACE_LOOK) {
      p->since = 0;
      p->looks++;
      p->period = find_period(p);
      /* bounded by the array too: the search lives in the communicator's
       * shared memory, where a scribble must not reach past it */
      for (uint32_t j = 0; p->period && j < p->npend && j < ACL_SEARCH_PLACE_PEND; j++)
        pair_one(p, p->pend_call[j], p->pend_lx[j]);
      if (p->period)
        p->npend = 0;
    }
    return;
  }
  if (p->period)
    pair_one(p, tag, lx);
  else if (p->npend < ACL_SEARCH_PLACE_PEND) {
    p->pend_call[p->npend] = tag;
    p->pend_lx[p->npend++] = lx;
  }
}

bool acl_search_place_estimate(const acl_search_t *s, double unpaired_se, double *gain,
                               double *se)
{
  const acl_search_place_t *p = &s->place;
  if (p->pn < ACL_VAL_MIN)
    return false;
  double m = p->psum / p->pn;
  double var = (p->psq - p->pn * m * m) / (p->pn - 1);
  double pse = sqrt((var > 0.0 ? var : 0.0) / p->pn);
  if (!(pse < ACL_SEARCH_PLACE_SE_SHARE * unpaired_se))
    return false;
  *gain = m;
  *se = pse;
  return true;
}
