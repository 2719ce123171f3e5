/* sim/landscape.c: synthetic shape, H200 model against the CSV, noise. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/landscape.h"

#ifndef ACL_TEST_CSV
#error "ACL_TEST_CSV must name sim/data/h200x2-nccl2.28.3-env-sweep.csv"
#endif

Test(landscape, synthetic_unimodal_along_channels)
{
  for (uint64_t seed = 1; seed <= 30; seed++) {
    acl_landscape_t *l = acl_land_create_synth(seed);
    cr_assert_not_null(l);
    int maxc = acl_land_max_channels(l);
    for (int coll = 0; coll < ACL_NUM_COLL; coll++)
      for (uint64_t b = 4096; b <= (1ull << 30); b <<= 4)
        for (int a = 0; a < ACL_NUM_ALGO; a++)
          for (int p = 0; p < ACL_NUM_PROTO; p++) {
            if (!acl_land_valid(l, coll, b, 4, a, p))
              continue;
            int falling = 1;
            double prev = INFINITY;
            for (int n = 1; n <= maxc; n++) {
              acl_candidate_t c = {.algo = (int8_t)a, .proto = (int8_t)p, .nchannels = (int16_t)n};
              double t = acl_land_time(l, coll, b, 4, &c, 0.0);
              cr_assert(isfinite(t) && t > 0.0);
              if (!falling)
                cr_assert(t >= prev * (1 - 1e-12), "seed %llu: rises then falls at %d ch",
                          (unsigned long long)seed, n);
              if (t > prev)
                falling = 0;
              prev = t;
            }
          }
    acl_land_destroy(l);
  }
}

Test(landscape, synthetic_has_invalid_pairs_and_imperfect_default)
{
  int invalid_seen = 0, default_suboptimal = 0, total = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    acl_landscape_t *l = acl_land_create_synth(seed);
    for (uint64_t b = 4096; b <= (1ull << 30); b <<= 2) {
      invalid_seen += !acl_land_valid(l, 4, b, 2, 0, 0) || !acl_land_valid(l, 4, b, 2, 1, 1);
      acl_candidate_t d;
      acl_land_nccl_default(l, 4, b, 2, &d);
      cr_assert(acl_land_valid(l, 4, b, 2, d.algo, d.proto));
      double td = acl_land_time(l, 4, b, 2, &d, 0.0);
      acl_candidate_t nccl = {.algo = ACL_ALGO_NCCL};
      cr_assert_float_eq(acl_land_time(l, 4, b, 2, &nccl, 0.0), td, td * 1e-12);
      double to = acl_land_oracle(l, 4, b, 2, 0.0, NULL);
      cr_assert_leq(to, td);
      default_suboptimal += to < 0.98 * td;
      total++;
      float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
      acl_land_cost_table(l, 4, b, 2, cost);
      for (int a = 0; a < ACL_NUM_ALGO; a++)
        for (int p = 0; p < ACL_NUM_PROTO; p++) {
          cr_assert_eq(cost[a][p] >= 0.0f, acl_land_valid(l, 4, b, 2, a, p));
          if (cost[a][p] >= 0.0f && !(a == d.algo && p == d.proto))
            cr_assert_gt(cost[a][p], cost[d.algo][d.proto], "default is NCCL's strict argmin");
        }
    }
    acl_land_destroy(l);
  }
  cr_assert_gt(invalid_seen, 0);
  cr_assert_gt(default_suboptimal, total / 4, "NCCL's default should often miss the optimum");
  cr_assert_lt(default_suboptimal, total);
}

Test(landscape, interference_changes_the_winner)
{
  int changed = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    acl_landscape_t *l = acl_land_create_synth(seed);
    acl_candidate_t b0, b1;
    acl_land_oracle(l, 4, 1 << 26, 2, 0.0, &b0);
    acl_land_oracle(l, 4, 1 << 26, 2, 0.9, &b1);
    cr_assert_leq(b1.nchannels, b0.nchannels, "interference favours fewer channels");
    changed += !acl_candidate_eq(&b0, &b1);
    acl_land_destroy(l);
  }
  cr_assert_gt(changed, 5);
}

Test(landscape, h200_reproduces_csv_at_measured_sizes)
{
  char err[256] = "";
  acl_landscape_t *l = acl_land_create_h200(err, sizeof err);
  cr_assert_not_null(l, "%s", err);
  FILE *f = fopen(ACL_TEST_CSV, "r");
  cr_assert_not_null(f);
  char line[256];
  int exact = 0, remeasured = 0;
  while (fgets(line, sizeof line, f)) {
    char coll[32], cfg[48];
    double size, oop;
    if (line[0] == '#' || sscanf(line, "%31[^,],%lf,%47[^,],%lf", coll, &size, cfg, &oop) != 4)
      continue;
    int c = acl_coll_parse(coll);
    uint64_t b = (uint64_t)size;
    acl_candidate_t d, x;
    acl_land_nccl_default(l, c, b, 2, &d);
    x = d;
    int v;
    if (strcmp(cfg, "default") == 0) {
      x.algo = ACL_ALGO_NCCL;
    } else if (strncmp(cfg, "proto_", 6) == 0) {
      x.proto = (int8_t)acl_proto_parse(cfg + 6);
    } else if (strncmp(cfg, "algo_", 5) == 0) {
      x.algo = (int8_t)acl_algo_parse(cfg + 5);
    } else if (sscanf(cfg, "nch_%d", &v) == 1) {
      x.nchannels = (int16_t)v;
    } else {
      continue; /* nt_, buf_: not tuner-settable */
    }
    double t = acl_land_time(l, c, b, 2, &x, 0.0) * 1e6;
    if (x.algo == ACL_ALGO_NCCL || !acl_candidate_eq(&x, &d)) {
      cr_assert_float_eq(t, oop, oop * 1e-9, "%s %s at %.0f: model %g vs csv %g", coll, cfg, size,
                         t, oop);
      exact++;
    } else {
      /* The row re-measures the default: agrees within run-to-run noise. */
      cr_assert(t / oop > 0.6 && t / oop < 1.7, "%s %s at %.0f: %g vs %g", coll, cfg, size, t, oop);
      remeasured++;
    }
  }
  fclose(f);
  cr_assert_gt(exact, 250);
  cr_assert_gt(remeasured, 30);
  acl_land_destroy(l);
}

Test(landscape, h200_interpolates_and_scales)
{
  acl_landscape_t *l = acl_land_create_h200(NULL, 0);
  cr_assert_not_null(l);
  acl_candidate_t c = {.algo = 1, .proto = 2, .nchannels = 32};
  double t16 = acl_land_time(l, 4, 16u << 20, 2, &c, 0.0);
  double t64 = acl_land_time(l, 4, 64u << 20, 2, &c, 0.0);
  double t32 = acl_land_time(l, 4, 32u << 20, 2, &c, 0.0);
  cr_assert(t32 > t16 && t32 < t64);
  cr_assert_float_eq(t32, sqrt(t16 * t64), t32 * 1e-9, "log-log midpoint");
  /* Bus bandwidth constant across ranks: AllReduce time scales 2(n-1)/n. */
  double t8 = acl_land_time(l, 4, 64u << 20, 8, &c, 0.0);
  cr_assert_float_eq(t8 / t64, 1.75, 1e-9);
  /* Broadcast of N = AllGather of 2N on 2 ranks. */
  cr_assert_float_eq(acl_land_time(l, 0, 8u << 20, 2, &c, 0.0),
                     acl_land_time(l, 2, 16u << 20, 2, &c, 0.0), 1e-15);
  /* What the sweep offers: Tree only for AllReduce, no NVLS (not in the CSV). */
  cr_assert(acl_land_valid(l, 4, 1 << 20, 2, 0, 2));
  cr_assert(!acl_land_valid(l, 2, 1 << 20, 2, 0, 2));
  cr_assert(!acl_land_valid(l, 4, 1 << 20, 2, 4, 2));
  cr_assert(!acl_land_valid(l, 4, 1 << 20, 1, 1, 2), "one rank: no tuner call");
  cr_assert(isinf(acl_land_time(l, 9, 1 << 20, 2, &c, 0.0)));
  /* Headroom over NCCL's default: AllReduce at 1 GiB runs 24 channels and
   * the best point of the sweep is faster. */
  acl_candidate_t d;
  acl_land_nccl_default(l, 4, 1ull << 30, 2, &d);
  cr_assert_eq(d.nchannels, 24);
  cr_assert(acl_land_oracle(l, 4, 1ull << 30, 2, 0.0, NULL) <
            acl_land_time(l, 4, 1ull << 30, 2, &d, 0.0));
  acl_land_destroy(l);
  acl_land_destroy(NULL);
}

Test(landscape, noise_statistics)
{
  uint64_t rng = 12345;
  const int n = 200000;
  double sum = 0.0, sq = 0.0;
  for (int i = 0; i < n; i++) {
    double x = acl_land_noise(&rng, 0.1);
    cr_assert(x > 0.0);
    sum += x;
    sq += x * x;
  }
  double mean = sum / n, sd = sqrt(sq / n - mean * mean);
  cr_assert_float_eq(mean, 1.0, 0.003, "mean %g", mean);
  cr_assert_float_eq(sd, 0.1, 0.003, "sd %g", sd);
  cr_assert_float_eq(acl_land_noise(&rng, 0.0), 1.0, 0.0);
  uint64_t r1 = 7, r2 = 7;
  cr_assert_float_eq(acl_land_noise(&r1, 0.2), acl_land_noise(&r2, 0.2), 0.0, "deterministic");
}

/* Ceiling mode's baseline, NCCL's own pair capped at a channel count,
 * runs NCCL's default pair at that count (not its own count). */
Test(landscape, nccl_choice_capped_runs_the_cap)
{
  acl_landscape_t *l = acl_land_create_h200(NULL, 0);
  cr_assert_not_null(l);
  for (uint64_t b = 1u << 16; b <= (1u << 30); b <<= 4) {
    acl_candidate_t d, capped = {.algo = ACL_ALGO_NCCL, .proto = -1, .nchannels = 8};
    acl_land_nccl_default(l, 4, b, 2, &d);
    acl_candidate_t same = {.algo = d.algo, .proto = d.proto, .nchannels = 8};
    double tc = acl_land_time(l, 4, b, 2, &capped, 0.0), ts = acl_land_time(l, 4, b, 2, &same, 0.0);
    cr_assert_float_eq(tc, ts, 1e-12 * ts, "%llu B: capped %g s, pair at 8 channels %g s",
                       (unsigned long long)b, tc, ts);
  }
  acl_land_destroy(l);
}
