/* The measured 2x H200 landscape: parse the embedded nccl-tests sweep and
 * evaluate the separable model at a measured size.
 *
 * Model at a measured size (2 ranks):
 *   t(algo, proto, nch) = t_default * A(algo) * P(proto) * C(nch)
 * where A, P, C are the single-variable ratios t(config)/t(default) from the
 * sweep, normalised so the value the default ran has ratio 1. So every
 * single-variable row of the CSV whose value differs from the default's is
 * reproduced exactly; rows equal to the default (e.g. algo_Ring) are
 * re-measurements of it and agree within run-to-run noise. Out-of-place
 * times are used (nccl-tests' first column). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/landscape_int.h"

const int acl_land_h200_ch[ACL_LAND_H200_NCH] = {1, 2, 4, 8, 16, 24, 32};

/* Raw rows at one (collective, size). 0 = missing. */
typedef struct raw {
  double def_oop, def_ip;
  double algo_oop[ACL_NUM_ALGO], algo_ip[ACL_NUM_ALGO];
  double proto_oop[ACL_NUM_PROTO], proto_ip[ACL_NUM_PROTO];
  double ch_oop[ACL_LAND_H200_NCH], ch_ip[ACL_LAND_H200_NCH];
} raw_t;

static int mcoll_of(int coll)
{
  switch (coll) {
  case 2:
    return 0; /* AllGather */
  case 3:
    return 1; /* ReduceScatter */
  case 4:
    return 2; /* AllReduce */
  default:
    return -1;
  }
}

static int size_index(double bytes)
{
  for (int i = 0; i < ACL_LAND_H200_NSIZE; i++)
    if (fabs(bytes - 1024.0 * pow(4.0, i)) < 0.5)
      return i;
  return -1;
}

/* |log| distance of a config from the default in both columns: the smallest
 * one is taken as "what the default ran". */
static double closeness(double oop, double ip, const raw_t *r)
{
  if (oop <= 0.0 || ip <= 0.0)
    return INFINITY;
  return fabs(log(oop / r->def_oop)) + fabs(log(ip / r->def_ip));
}

static int apply_row(raw_t *r, const char *cfg, double oop, double ip)
{
  long v;
  char tail[32];
  if (strcmp(cfg, "default") == 0) {
    r->def_oop = oop;
    r->def_ip = ip;
  } else if (strncmp(cfg, "algo_", 5) == 0) {
    int a = acl_algo_parse(cfg + 5);
    if (a < 0)
      return -1;
    r->algo_oop[a] = oop;
    r->algo_ip[a] = ip;
  } else if (strncmp(cfg, "proto_", 6) == 0) {
    int p = acl_proto_parse(cfg + 6);
    if (p < 0)
      return -1;
    r->proto_oop[p] = oop;
    r->proto_ip[p] = ip;
  } else if (sscanf(cfg, "nch_%ld%31s", &v, tail) == 1) {
    int k = -1;
    for (int i = 0; i < ACL_LAND_H200_NCH; i++)
      if (acl_land_h200_ch[i] == v)
        k = i;
    if (k < 0)
      return -1;
    r->ch_oop[k] = oop;
    r->ch_ip[k] = ip;
  }
  /* nt_N and buf_N: not settable by a tuner on NCCL 2.28; ignored. */
  return 0;
}

static int build_point(acl_land_h200_pt_t *pt, const raw_t *r, int mcoll, char *err, size_t errlen,
                       double size)
{
  memset(pt, 0, sizeof *pt);
  if (r->def_oop <= 0.0 || r->def_ip <= 0.0) {
    snprintf(err, errlen, "H200 data: no default row for collective %d at %.0f bytes", mcoll, size);
    return -1;
  }
  pt->t_def = r->def_oop;
  /* Algorithm: Ring is what the default ran wherever the sweep can tell
   * (>= 4 MiB, algo_Ring within 1% of the default); below, all rows sit in
   * 13-20 us launch-latency noise. Tree is measured for AllReduce only. */
  pt->def_algo = 1;
  pt->a_ratio[1] = 1.0;
  if (mcoll == 2 && r->algo_oop[0] > 0.0)
    pt->a_ratio[0] = r->algo_oop[0] / r->def_oop;

  double best = INFINITY;
  for (int p = 0; p < ACL_NUM_PROTO; p++) {
    double d = closeness(r->proto_oop[p], r->proto_ip[p], r);
    if (d < best) {
      best = d;
      pt->def_proto = p;
    }
  }
  if (!isfinite(best)) {
    snprintf(err, errlen, "H200 data: no protocol rows at %.0f bytes", size);
    return -1;
  }
  for (int p = 0; p < ACL_NUM_PROTO; p++)
    pt->p_ratio[p] = p == pt->def_proto ? 1.0 : r->proto_oop[p] / r->def_oop;

  best = INFINITY;
  int defk = -1;
  for (int k = 0; k < ACL_LAND_H200_NCH; k++) {
    double d = closeness(r->ch_oop[k], r->ch_ip[k], r);
    if (d < best) {
      best = d;
      defk = k;
    }
  }
  if (defk < 0) {
    snprintf(err, errlen, "H200 data: no channel rows at %.0f bytes", size);
    return -1;
  }
  pt->def_ch = acl_land_h200_ch[defk];
  for (int k = 0; k < ACL_LAND_H200_NCH; k++) {
    if (r->ch_oop[k] <= 0.0) {
      snprintf(err, errlen, "H200 data: nch_%d missing at %.0f bytes", acl_land_h200_ch[k], size);
      return -1;
    }
    pt->c_ratio[k] = k == defk ? 1.0 : r->ch_oop[k] / r->def_oop;
  }
  return 0;
}

int acl_land_h200_load(acl_landscape_t *l, const char *csv, char *err, size_t errlen)
{
  raw_t *raw = calloc(ACL_LAND_H200_NCOLL * ACL_LAND_H200_NSIZE, sizeof *raw);
  int rc = -1, lineno = 0, rows = 0;
  if (!raw) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  const char *p = csv;
  while (*p) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    char line[256];
    lineno++;
    if (n >= sizeof line) {
      snprintf(err, errlen, "H200 data line %d: too long", lineno);
      goto out;
    }
    memcpy(line, p, n);
    line[n] = '\0';
    p += n + (eol ? 1 : 0);
    if (n && line[n - 1] == '\r')
      line[n - 1] = '\0';
    if (line[0] == '#' || line[0] == '\0' || strncmp(line, "collective,", 11) == 0)
      continue;
    char coll[32], cfg[48];
    double size, oop, oopbw, ip;
    if (sscanf(line, "%31[^,],%lf,%47[^,],%lf,%lf,%lf", coll, &size, cfg, &oop, &oopbw, &ip) != 6 ||
        oop <= 0.0 || ip <= 0.0) {
      snprintf(err, errlen, "H200 data line %d: cannot parse '%s'", lineno, line);
      goto out;
    }
    int mc = mcoll_of(acl_coll_parse(coll)), si = size_index(size);
    if (mc < 0 || si < 0) {
      snprintf(err, errlen, "H200 data line %d: unexpected collective or size", lineno);
      goto out;
    }
    if (apply_row(&raw[mc * ACL_LAND_H200_NSIZE + si], cfg, oop, ip) < 0) {
      snprintf(err, errlen, "H200 data line %d: unknown config '%s'", lineno, cfg);
      goto out;
    }
    rows++;
  }
  for (int i = 0; i < ACL_LAND_H200_NSIZE; i++)
    l->sizes[i] = 1024.0 * pow(4.0, i);
  for (int mc = 0; mc < ACL_LAND_H200_NCOLL; mc++)
    for (int i = 0; i < ACL_LAND_H200_NSIZE; i++)
      if (build_point(&l->h[mc][i], &raw[mc * ACL_LAND_H200_NSIZE + i], mc, err, errlen,
                      l->sizes[i]) < 0)
        goto out;
  if (rows == 0) {
    snprintf(err, errlen, "H200 data: no rows");
    goto out;
  }
  rc = 0;
out:
  free(raw);
  return rc;
}

/* Channel factor: piecewise log-log between the measured counts. */
static double ch_factor(const acl_land_h200_pt_t *pt, int nch)
{
  if (nch <= 0)
    return 1.0; /* NCCL's own count: the default row */
  if (nch <= acl_land_h200_ch[0])
    return pt->c_ratio[0];
  for (int k = 0; k + 1 < ACL_LAND_H200_NCH; k++) {
    int lo = acl_land_h200_ch[k], hi = acl_land_h200_ch[k + 1];
    if (nch <= hi) {
      double w = log((double)nch / lo) / log((double)hi / lo);
      return exp((1.0 - w) * log(pt->c_ratio[k]) + w * log(pt->c_ratio[k + 1]));
    }
  }
  return pt->c_ratio[ACL_LAND_H200_NCH - 1];
}

double acl_land_h200_at(const acl_landscape_t *l, int mcoll, int i, int algo, int proto, int nch)
{
  const acl_land_h200_pt_t *pt = &l->h[mcoll][i];
  if (algo == ACL_ALGO_NCCL) {
    algo = pt->def_algo;
    proto = pt->def_proto;
  }
  if (algo < 0 || algo >= ACL_NUM_ALGO || proto < 0 || proto >= ACL_NUM_PROTO ||
      pt->a_ratio[algo] <= 0.0)
    return INFINITY;
  return pt->t_def * pt->a_ratio[algo] * pt->p_ratio[proto] * ch_factor(pt, nch);
}
