/* The replay landscape "h200-traces" (docs/trace.md "Replay"): measured
 * per-iteration times of every rank, per (collective, size, executed
 * config), loaded from autoccl-bench traces under sim/data/traces/<set>/.
 *
 * Rules (the documented interpolation and clamping):
 * - Executed config: what NCCL ran (the traces' "ran", from the probe). A
 *   decision of n channels runs min(n, built channels, what NCCL ran for
 *   that algo/proto with its own channel choice at the nearest size): NCCL
 *   built 24 by default on 2x H200, LL at small sizes ran 16 or 22. Configs
 *   that ran identically share one distribution. A size recorded without
 *   "ran" ran what NCCL runs for its label (landscape_trace_load.c,
 *   resolve_guesses).
 * - Channel counts between recorded ones: linear in n between the two
 *   nearest; below the lowest recorded, that time times the measured H200
 *   sweep's channel ratio when it is a slowdown (never a gain); above the
 *   highest, the highest.
 * - Sizes between recorded ones: log-log interpolation of the median between
 *   the two neighbours; draws come from the nearer size, scaled to it.
 *   Below the smallest: the smallest (latency bound); above the largest:
 *   scaled by bytes (bandwidth bound).
 * - Interference x in 0..1: medians log-linear between isolated (0) and
 *   under-GEMM (1); each draw comes from the GEMM traces with probability x.
 * - A draw is one recorded steady iteration (all ranks of it, so skew and
 *   outliers between ranks stay together), iterations after the first 5.
 * - Set-up (connections; protocols share them, so a protocol switch is free,
 *   as the default runs' first calls at a new protocol show): running n
 *   channels of an algorithm costs, per channel beyond those already
 *   connected for it, conn_ch; the first use of an algorithm other than the
 *   default's costs conn_algo[algo] more. Fitted from each sweep run's first
 *   call beyond its median, minus the default run's same (both pay the
 *   communicator's set-up): conn_ch = median of the excess per extra channel
 *   over runs of the default's algorithm with more channels; conn_algo =
 *   median over that algorithm's runs of the excess less their channels'.
 *   NCCL's own choice for the workload is connected before tuning.
 * - Profiler events: a per-call cost by size (events.tsv of the set). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/landscape_int.h"

/* ---- queries ---------------------------------------------------------------- */

/* Index of the recorded size nearest to bytes (log distance). */
static int nearest_pt(const acl_tr_set_t *s, double bytes)
{
  int best = 0;
  double bd = INFINITY;
  for (int i = 0; i < s->npts; i++) {
    double d = fabs(log(bytes / s->pt[i].bytes));
    if (d < bd) {
      bd = d;
      best = i;
    }
  }
  return best;
}

const acl_tr_set_t *acl_land_tr_set(const acl_land_tr_t *tr, int mcoll, int regime)
{
  if (mcoll < 0 || mcoll >= ACL_LAND_H200_NCOLL)
    return NULL;
  const acl_tr_set_t *s = &tr->set[regime][mcoll];
  if (!s->present || s->npts == 0)
    s = &tr->set[0][mcoll];
  return s->present && s->npts ? s : NULL;
}

bool acl_land_tr_default(const acl_land_tr_t *tr, int mcoll, double bytes, acl_candidate_t *out)
{
  const acl_tr_set_t *s = acl_land_tr_set(tr, mcoll, 0);
  if (!s)
    return false;
  const acl_tr_pt_t *p = &s->pt[nearest_pt(s, bytes)];
  if (p->def < 0)
    return false;
  out->algo = p->cfg[p->def].algo;
  out->proto = p->cfg[p->def].proto;
  out->nchannels = p->cfg[p->def].nch;
  out->chunk_log2 = 0;
  return true;
}

bool acl_land_tr_valid(const acl_land_tr_t *tr, int mcoll, double bytes, int algo, int proto)
{
  const acl_tr_set_t *s = acl_land_tr_set(tr, mcoll, 0);
  if (!s)
    return false;
  const acl_tr_pt_t *p = &s->pt[nearest_pt(s, bytes)];
  for (int k = 0; k < p->ncfg; k++)
    if (p->cfg[k].algo == algo && p->cfg[k].proto == proto && p->cfg[k].n > 0)
      return true;
  return false;
}

int acl_land_tr_exec_nch(const acl_land_tr_t *tr, int mcoll, double bytes, int algo, int proto,
                         int asked, int built)
{
  const acl_tr_set_t *s = acl_land_tr_set(tr, mcoll, 0);
  int own = built;
  if (s && algo >= 0 && proto >= 0) {
    const acl_tr_pt_t *p = &s->pt[nearest_pt(s, bytes)];
    if (p->auto_nch[algo][proto] > 0)
      own = p->auto_nch[algo][proto];
  }
  int n = asked > 0 ? asked : own;
  if (n > built)
    n = built;
  if (n > own)
    n = own; /* NCCL cuts channels further for small messages (LL) */
  return n < 1 ? 1 : n;
}

/* Median time (us) at point p for executed (algo, proto, nch); NAN when the
 * pair was not recorded there. *src gets the config draws come from. */
static double time_at(const acl_land_tr_t *tr, int mcoll, const acl_tr_pt_t *p, int algo, int proto,
                      int nch, const acl_tr_cfg_t **src)
{
  const acl_tr_cfg_t *lo = NULL, *hi = NULL;
  for (int k = 0; k < p->ncfg; k++) {
    const acl_tr_cfg_t *c = &p->cfg[k];
    if (c->algo != algo || c->proto != proto || c->n == 0 || !isfinite(c->median_us))
      continue;
    if (c->nch <= nch && (!lo || c->nch > lo->nch))
      lo = c;
    if (c->nch >= nch && (!hi || c->nch < hi->nch))
      hi = c;
  }
  if (!lo && !hi)
    return NAN;
  if (lo && hi) {
    if (src)
      *src = nch - lo->nch <= hi->nch - nch ? lo : hi;
    if (lo == hi)
      return lo->median_us;
    double w = (double)(nch - lo->nch) / (double)(hi->nch - lo->nch);
    return (1.0 - w) * lo->median_us + w * hi->median_us;
  }
  if (lo) { /* above the highest recorded: flat */
    if (src)
      *src = lo;
    return lo->median_us;
  }
  /* below the lowest recorded: the H200 sweep's channel ratio */
  if (src)
    *src = hi;
  static const int colls[] = {2, 3, 4};
  acl_candidate_t a = {.algo = (int8_t)algo, .proto = (int8_t)proto, .nchannels = (int16_t)nch};
  acl_candidate_t b = a;
  b.nchannels = hi->nch;
  double ta = acl_land_time(tr->h200, colls[mcoll], (uint64_t)p->bytes, 2, &a, 0.0);
  double tb = acl_land_time(tr->h200, colls[mcoll], (uint64_t)p->bytes, 2, &b, 0.0);
  double r = isfinite(ta) && isfinite(tb) && tb > 0 ? ta / tb : 1.0;
  /* never faster than measured: the sweep's small-size ratios are noise
   * (nccl-tests, 20 iterations), and an invented gain would lure the tuner */
  return hi->median_us * (r > 1.0 ? r : 1.0);
}

double acl_land_tr_time_regime(const acl_land_tr_t *tr, int mcoll, int regime, double bytes,
                               int algo, int proto, int nch, const acl_tr_cfg_t **src,
                               double *scale)
{
  const acl_tr_set_t *s = acl_land_tr_set(tr, mcoll, regime);
  if (!s)
    return NAN;
  int n = s->npts;
  const acl_tr_cfg_t *c0 = NULL, *c1 = NULL;
  double t;
  if (bytes <= s->pt[0].bytes || n == 1) {
    t = time_at(tr, mcoll, &s->pt[0], algo, proto, nch, &c0);
    if (n == 1 && bytes > s->pt[0].bytes && isfinite(t))
      t *= bytes / s->pt[0].bytes;
  } else if (bytes >= s->pt[n - 1].bytes) {
    t = time_at(tr, mcoll, &s->pt[n - 1], algo, proto, nch, &c0);
    if (isfinite(t))
      t *= bytes / s->pt[n - 1].bytes;
  } else {
    int i = 0;
    while (i + 1 < n && s->pt[i + 1].bytes < bytes)
      i++;
    double t0 = time_at(tr, mcoll, &s->pt[i], algo, proto, nch, &c0);
    double t1 = time_at(tr, mcoll, &s->pt[i + 1], algo, proto, nch, &c1);
    double w = log(bytes / s->pt[i].bytes) / log(s->pt[i + 1].bytes / s->pt[i].bytes);
    if (isfinite(t0) && isfinite(t1))
      t = exp((1.0 - w) * log(t0) + w * log(t1));
    else
      t = w < 0.5 ? t0 : t1;
    if ((w >= 0.5 && c1) || !c0)
      c0 = c1; /* the nearer recorded size, else whichever exists */
  }
  if (src)
    *src = c0;
  if (scale)
    *scale = c0 && isfinite(t) && c0->median_us > 0 ? t / c0->median_us : NAN;
  return t;
}

double acl_land_tr_connect_us(const acl_land_tr_t *tr, int mcoll, int regime, int algo, int have,
                              int need)
{
  const acl_tr_set_t *s = acl_land_tr_set(tr, mcoll, regime);
  if (!s || algo < 0 || algo >= ACL_NUM_ALGO)
    return 0.0;
  /* as fitted: a first use is measured against the default's channels */
  int base = have > 0 ? have : s->def_nch;
  double us = need > base ? s->conn_ch_us * (need - base) : 0.0;
  if (have <= 0)
    us += s->conn_algo_us[algo];
  return us;
}

double acl_land_tr_event_us(const acl_land_tr_t *tr, int mcoll, double bytes)
{
  const acl_tr_set_t *s = acl_land_tr_set(tr, mcoll, 0);
  if (!s || s->nev == 0)
    return 0.0;
  /* nearest recorded size (log), the largest's value beyond */
  int best = 0;
  double bd = INFINITY;
  for (int i = 0; i < s->nev; i++) {
    double d = fabs(log(bytes / s->ev_bytes[i]));
    if (d < bd) {
      bd = d;
      best = i;
    }
  }
  return s->ev_us[best];
}
