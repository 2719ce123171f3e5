/* Synthetic landscapes (acl_land_create_synth): random but deterministic
 * per seed; model in docs/tuner.md. Evaluation is shared with the other
 * kinds in sim/landscape.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/landscape_int.h"

/* ---- synthetic ------------------------------------------------------------- */

static double anchor_bytes(int k) { return 1024.0 * pow(4.0, k); }

/* Fraction of a call's time that is bandwidth (not latency) bound: channels
 * matter only there. */
static double bw_fraction(const acl_landscape_t *l, int coll, double bytes)
{
  double bw_t = bytes / (l->busbw_gbs[coll] * 1e3); /* us; busbw in GB/s */
  return bw_t / (bw_t + l->lat_us[coll]);
}

static void syn_valid_pairs(uint64_t *rng, int coll, bool v[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  memset(v, 0, sizeof(bool) * ACL_NUM_AP);
  for (int p = 0; p < ACL_NUM_PROTO; p++)
    v[1][p] = true; /* Ring everywhere */
  if (coll == 4) {
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      v[0][p] = true;                   /* Tree */
    v[4][2] = acl_land_unif(rng) < 0.5; /* NVLS (Simple only) on NVSwitch systems */
  } else if (coll == 2 || coll == 3) {
    v[4][2] = acl_land_unif(rng) < 0.3;
    v[6][2] = acl_land_unif(rng) < 0.2; /* PAT */
  }
  /* Some pairs disabled (NCCL_PROTO/NCCL_ALGO, registered buffers ...). */
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      if (v[a][p] && !(a == 1 && p == 2) && acl_land_unif(rng) < 0.1)
        v[a][p] = false;
}

/* NCCL's default channel count: a size heuristic, not an optimum. */
static int syn_default_ch(const acl_landscape_t *l, double bytes)
{
  int nc = 2;
  while (nc < l->max_channels * 3 / 4 && bytes > 65536.0 * nc)
    nc *= 2;
  return nc > l->max_channels * 3 / 4 ? l->max_channels * 3 / 4 : nc;
}

static void syn_anchor(acl_landscape_t *l, uint64_t *rng, int coll, int k)
{
  acl_land_syn_pt_t *pt = &l->s[coll][k];
  bool v[ACL_NUM_ALGO][ACL_NUM_PROTO];
  syn_valid_pairs(rng, coll, v);
  double wf = bw_fraction(l, coll, anchor_bytes(k));
  int nvalid = 0;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      nvalid += v[a][p];
  int winner = (int)(acl_land_unif(rng) * nvalid), idx = 0;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++) {
      if (!v[a][p])
        continue;
      /* Offsets: one winner at 1, the others 1.0x-3x slower. */
      pt->factor[a][p] = idx++ == winner ? 1.0f : (float)exp(fabs(acl_land_gauss(rng)) * 0.45);
      double lp = log2((double)l->max_channels) - acl_land_unif(rng) * 1.5 -
                  (1.0 - wf) * acl_land_unif(rng) * 3.0;
      pt->peak[a][p] = (float)(lp < 0.0 ? 1.0 : exp2(lp));
      pt->al[a][p] = (float)(0.05 + 0.35 * acl_land_unif(rng));
      pt->ar[a][p] = (float)(0.01 + 0.14 * acl_land_unif(rng));
      pt->pred_err[a][p] = (float)exp(acl_land_gauss(rng) * 0.2);
    }
  /* NCCL's pick: argmin of its (erroneous) prediction at its channel count. */
  pt->def_ch = syn_default_ch(l, anchor_bytes(k));
  double bestc = INFINITY;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++) {
      if (pt->factor[a][p] <= 0.0f)
        continue;
      double c =
          acl_land_syn_at(l, coll, k, anchor_bytes(k), a, p, pt->def_ch) * pt->pred_err[a][p];
      if (c < bestc) {
        bestc = c;
        pt->def_algo = a;
        pt->def_proto = p;
      }
    }
}

acl_landscape_t *acl_land_create_synth(uint64_t seed)
{
  acl_landscape_t *l = calloc(1, sizeof *l);
  if (!l)
    return NULL;
  uint64_t rng = seed ^ 0x5eed5eed12345678ull;
  l->kind = ACL_LAND_SYNTH;
  snprintf(l->name, sizeof l->name, "synth-%llu", (unsigned long long)seed);
  l->max_channels = ACL_LAND_MAX_CH;
  l->interf_base = 0.05 + 0.10 * acl_land_unif(&rng);
  l->interf_per_ch = 0.3 + 0.6 * acl_land_unif(&rng);
  for (int c = 0; c < ACL_NUM_COLL; c++) {
    l->lat_us[c] = 8.0 + 12.0 * acl_land_unif(&rng);
    l->busbw_gbs[c] = 100.0 + 300.0 * acl_land_unif(&rng);
  }
  for (int c = 0; c < ACL_NUM_COLL; c++)
    for (int k = 0; k < ACL_LAND_SYN_NANCH; k++)
      syn_anchor(l, &rng, c, k);
  return l;
}

/* Synthetic time (us, 2 ranks, no interference) with the shape of anchor k:
 *   t = (lat + bytes/busbw) * factor(a,p) * (1 + w * g(nch))
 *   g = al * log2(nch/peak)^2 below the peak, ar * log2(nch/peak)^2 above
 * (unimodal in nch), w = 0.1 + 0.9 * bandwidth-bound fraction. */
double acl_land_syn_at(const acl_landscape_t *l, int coll, int k, double bytes, int algo, int proto,
                       int nch)
{
  const acl_land_syn_pt_t *pt = &l->s[coll][k];
  if (algo == ACL_ALGO_NCCL) {
    algo = pt->def_algo;
    proto = pt->def_proto;
  }
  if (algo < 0 || algo >= ACL_NUM_ALGO || proto < 0 || proto >= ACL_NUM_PROTO ||
      pt->factor[algo][proto] <= 0.0f)
    return INFINITY;
  if (nch <= 0)
    nch = pt->def_ch;
  double x = log2((double)nch / pt->peak[algo][proto]);
  double g = (x < 0.0 ? pt->al[algo][proto] : pt->ar[algo][proto]) * x * x;
  double w = 0.1 + 0.9 * bw_fraction(l, coll, bytes);
  double base = l->lat_us[coll] + bytes / (l->busbw_gbs[coll] * 1e3);
  return base * pt->factor[algo][proto] * (1.0 + w * g);
}
