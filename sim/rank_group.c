/* Coalesced groups as NCCL runs them (sim/workload.h acl_sim_call_t.cgroup):
 * which calls a step issues together, and in which order NCCL asks the
 * tuner about them. */
#include <math.h>
#include <stdbool.h>

#include "sim/rank_int.h"

/* The calls issued together from call k of the step: one, or a coalesced
 * group (acl_sim_call_t.cgroup) in enqueue order; on odd steps a call
 * marked swap_odd trades places with the next. Returns how many. */
int acl_sim_group_at(const acl_sim_step_t *st, size_t k, uint64_t step, const acl_sim_call_t **out)
{
  const acl_sim_call_t *c = st->calls;
  if (step % 2 == 1 && !c[k].cgroup) {
    /* an ungrouped call marked swap_odd and its ungrouped successor */
    if (c[k].swap_odd && k + 1 < st->ncalls && !c[k + 1].cgroup) {
      out[0] = &c[k + 1];
      return 1;
    }
    if (k > 0 && c[k - 1].swap_odd && !c[k - 1].cgroup) {
      out[0] = &c[k - 1];
      return 1;
    }
  }
  int m = 1;
  out[0] = &c[k];
  while (c[k].cgroup && k + (size_t)m < st->ncalls && c[k + (size_t)m].cgroup == c[k].cgroup &&
         m < ACL_SIM_GROUP_MAX) {
    out[m] = &c[k + (size_t)m];
    m++;
  }
  return m;
}

/* NCCL's order of getCollInfo calls in a group (ncclPrepareTasks): tasks
 * sorted by size, largest first, binned by function in the order the bins
 * first appear, each bin smallest first. (Tasks of one function within 4x
 * of each other would be aggregated into one call; torch-fsdp has none.) */
static void nccl_decide_order(const acl_sim_call_t **g, int m, int *ord)
{
  int desc[ACL_SIM_GROUP_MAX];
  for (int i = 0; i < m; i++)
    desc[i] = i;
  for (int i = 1; i < m; i++)
    for (int j = i; j > 0 && g[desc[j]]->nbytes > g[desc[j - 1]]->nbytes; j--) {
      int t = desc[j];
      desc[j] = desc[j - 1];
      desc[j - 1] = t;
    }
  int n = 0;
  bool done[ACL_SIM_GROUP_MAX] = {false};
  for (int i = 0; i < m; i++) {
    if (done[desc[i]])
      continue;
    int start = n;
    for (int j = i; j < m; j++)
      if (!done[desc[j]] && g[desc[j]]->coll == g[desc[i]]->coll) {
        ord[n++] = desc[j];
        done[desc[j]] = true;
      }
    for (int a = start, b = n - 1; a < b; a++, b--) { /* LIFO: smallest first */
      int t = ord[a];
      ord[a] = ord[b];
      ord[b] = t;
    }
  }
}

/* What rank_run needs of a decided call (one call in flight at a time
 * otherwise). */
typedef struct flight {
  acl_candidate_t ran;
  bool failed_call, captured, nccl_left;
  int api_mask;
} flight_t;

static void flight_save(const rank_drv_t *d, flight_t *f)
{
  *f = (flight_t){d->ran, d->failed_call, d->captured, d->nccl_left, d->api_mask};
}

static void flight_load(rank_drv_t *d, const flight_t *f)
{
  d->ran = f->ran;
  d->failed_call = f->failed_call;
  d->captured = f->captured;
  d->nccl_left = f->nccl_left;
  d->api_mask = f->api_mask;
}

/* A coalesced group on one rank: every call enqueued (each latching the
 * mask), then getCollInfo for each in NCCL's order, then the launches in
 * that order. Returns the slowest call's seconds. */
double acl_sim_rank_group(rank_drv_t *d, const acl_sim_call_t **g, int m, double level)
{
  flight_t f[ACL_SIM_GROUP_MAX];
  int ord[ACL_SIM_GROUP_MAX];
  for (int i = 0; i < m; i++) {
    int nth = 0;
    for (int j = 0; j < i; j++)
      nth += g[j]->comm == g[i]->comm;
    acl_sim_rank_enqueue(d, g[i], nth);
    flight_save(d, &f[i]);
  }
  nccl_decide_order(g, m, ord);
  for (int i = 0; i < m; i++) {
    flight_load(d, &f[ord[i]]);
    acl_sim_rank_decide(d, g[ord[i]]);
    flight_save(d, &f[ord[i]]);
  }
  double sec = 0;
  for (int i = 0; i < m; i++) {
    flight_load(d, &f[ord[i]]);
    sec = fmax(sec, acl_sim_rank_run(d, g[ord[i]], level));
  }
  return sec;
}
