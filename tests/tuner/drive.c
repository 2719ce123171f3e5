#include "tests/tuner/drive.h"

#include <math.h>
#include <stdlib.h>

static uint64_t next_u64(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

double drive_noise(uint64_t *rng, double rel)
{
  if (rel <= 0.0)
    return 1.0;
  double u1 = unif(rng), u2 = unif(rng);
  if (u1 < 1e-300)
    u1 = 1e-300;
  double g = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
  double f = 1.0 + rel * g;
  return f < 0.2 ? 0.2 : f;
}

void table_only(float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int n, const int *algo, const int *proto,
                const float *us)
{
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      cost[a][p] = -1.0f;
  for (int i = 0; i < n; i++)
    cost[algo[i]][proto[i]] = us[i];
}

typedef struct pend {
  int id;
  uint64_t call;
  uint64_t due;
  double sec;
} pend_t;

uint64_t drive(acl_search_t *s, drive_time_fn fn, void *user, const drive_opts_t *o)
{
  uint64_t rng = o->seed ? o->seed : 1, k = 0;
  pend_t q[256];
  int nq = 0;
  while (k < o->max_calls) {
    acl_candidate_t c;
    uint32_t len = 0;
    int id = acl_search_next(s, &c, &len);
    if (acl_phase_decided(acl_search_phase(s))) {
      acl_search_report_t r;
      acl_search_report(s, &r);
      if (!o->settle || !r.validating)
        return k ? k : 1;
    }
    /* Only the calls the search wants sampled carry profiler events. */
    uint8_t shift = acl_search_sample_shift(s);
    double drop = o->drop;
    if (id == ACL_SEARCH_CAND_NCCL && acl_search_phase(s) == ACL_PHASE_VALIDATING)
      drop += (1.0 - drop) * o->starve_nccl;
    for (uint32_t j = 0; j < len && k < o->max_calls; j++, k++) {
      double t = fn(user, &c, k) * drive_noise(&rng, o->noise);
      if (o->time_spent)
        *o->time_spent += fn(user, &c, k);
      bool sampled = acl_search_sampled(shift, k);
      if (sampled && unif(&rng) >= drop && nq < 256)
        q[nq++] = (pend_t){id, k, k + (uint64_t)o->lag, t};
      int w = 0;
      for (int i = 0; i < nq; i++) {
        if (q[i].due <= k)
          acl_search_observe(
              s, &(acl_search_obs_t){
                     .cand_id = q[i].id,
                     .seconds = q[i].sec,
                     .overlap = o->no_overlap ? -1.0f : 0.0f,
                     .call = o->calls ? q[i].call + 1 : 0});
        else
          q[w++] = q[i];
      }
      nq = w;
    }
  }
  return 0;
}
