/* Cost of acl_cons_decide (not a test): median ns per call on the converged
 * path (cached block, no lock, no atomics beyond the rank's own table) and
 * on the exploration path (fresh workloads: warm-up, baseline, exploring,
 * blocks stepped under the lock). Figures: docs/benchmarks-consensus.md.
 *   build-cons/tests/consensus/bench_cons [ranks]   */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "helpers.h"

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof(*v), cmp_d);
  return n ? v[n / 2] : 0;
}

int main(int argc, char **argv)
{
  int nr = argc > 1 ? atoi(argv[1]) : 1;
  if (nr < 1 || nr > 8) {
    fprintf(stderr, "usage: bench_cons [ranks 1..8]\n");
    return 2;
  }
  uint64_t id = th_comm_id(99);
  th_rank_t tr[8];
  acl_cons_t *c[8];
  char err[256];
  for (int r = 0; r < nr; r++) {
    th_params(&tr[r], id, r, nr, 1, "bench");
    tr[r].cfg.max_workloads = 1024;
    if (!(c[r] = acl_cons_create(&tr[r].p, err, sizeof(err)))) {
      fprintf(stderr, "bench_cons: %s\n", err);
      return 1;
    }
  }
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  acl_decision_t d;
  uint64_t rng = 7;

  /* exploration path: per-call times over the first 200 calls of fresh
   * workloads, one thread driving every rank in turn */
  enum { NW = 400, NC = 200 };
  double *ex = malloc(sizeof(double) * NW * NC * (size_t)nr);
  int nex = 0;
  for (int w = 0; w < NW; w++) {
    acl_wkey_t k = th_key(id, 4, 4096u + (uint64_t)w * 64);
    for (int i = 0; i < NC; i++)
      for (int r = 0; r < nr; r++) {
        double t0 = acl_mono_s();
        if (acl_cons_decide(c[r], &k, cost, &d, err, sizeof(err)) != 0) {
          fprintf(stderr, "bench_cons: %s\n", err);
          return 1;
        }
        ex[nex++] = (acl_mono_s() - t0) * 1e9;
        acl_cons_observe(
            c[r], &(acl_cons_obs_t){.widx = d.widx,
                                    .call_idx = d.call_idx,
                                    .cand_id = d.cand_id,
                                    .seconds = th_duration(&d.cand, k.nbytes,
                                                           (double)(th_rand(&rng) % 1000) / 1e3),
                                    .overlap = 0.0f,
                                    .ran_algo = -1,
                                    .ran_proto = -1});
      }
  }
  acl_cons_wl_stats_t *ws = calloc(NW, sizeof(*ws));
  int n = acl_cons_snapshot(c[0], NULL, ws, NW), conv = 0;
  for (int i = 0; i < n; i++)
    conv += acl_phase_decided(ws[i].phase);

  /* converged path: batches of 1000 calls of one converged workload */
  acl_wkey_t k = th_key(id, 4, 4096u);
  enum { NB = 2000, B = 1000 };
  double *cv = malloc(sizeof(double) * NB);
  for (int b = 0; b < NB; b++) {
    double t0 = acl_mono_s();
    for (int i = 0; i < B; i++)
      for (int r = 0; r < nr; r++)
        acl_cons_decide(c[r], &k, cost, &d, err, sizeof(err));
    cv[b] = (acl_mono_s() - t0) * 1e9 / (B * nr);
  }
  printf("ranks driven by one thread: %d\n", nr);
  printf("exploration path (first %d calls of %d fresh workloads, %d converged): "
         "median %.0f ns/call (includes ~20 ns of clock_gettime)\n",
         NC, NW, conv, median(ex, nex));
  double mean = 0;
  for (int i = 0; i < nex; i++)
    mean += ex[i] / nex;
  printf("  exploration path: mean %.0f ns, p90 %.0f ns, p99 %.0f ns (calls that step a "
         "block under the lock)\n",
         mean, ex[nex * 9 / 10], ex[nex * 99 / 100]);
  printf("converged path (%d batches of %d calls): median %.1f ns/call\n", NB, B, median(cv, NB));
  for (int r = 0; r < nr; r++)
    acl_cons_destroy(c[r]);
  free(ex);
  free(cv);
  free(ws);
  return 0;
}
