/* The model landscape and drivers shared by the search's tests. */
#include "tests/tuner/search_model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/tuner/drive.h"

double model_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)call;
  const model_t *m = user;
  if (c->algo == ACL_ALGO_NCCL)
    return m->nccl_seconds;
  double b = m->base[c->algo][c->proto];
  cr_assert(b > 0.0, "search ran an invalid pair %d/%d", c->algo, c->proto);
  cr_assert(c->nchannels >= 1 && c->nchannels <= 32, "channels %d", c->nchannels);
  double x = log2((double)c->nchannels / m->peak[c->algo][c->proto]);
  return b * (1.0 + m->curv * x * x);
}

const acl_wkey_t key = {.comm_id = 7, .nbytes = 1 << 24, .num_pipe_ops = 1, .coll = 4};

void ring_tree_model(model_t *m, float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  memset(m, 0, sizeof *m);
  int a[] = {0, 0, 0, 1, 1, 1}, p[] = {0, 1, 2, 0, 1, 2};
  float us[] = {300, 200, 120, 280, 150, 100}; /* NCCL predicts RING/SIMPLE */
  table_only(cost, 6, a, p, us);
  double bases[] = {3e-3, 2e-3, 1.25e-3, 2.8e-3, 1.5e-3, 1.0e-3};
  for (int i = 0; i < 6; i++) {
    m->base[a[i]][p[i]] = bases[i];
    m->peak[a[i]][p[i]] = 24;
  }
  m->curv = 0.08;
  m->nccl_seconds = 1.0e-3 * (1.0 + 0.08 * pow(log2(16.0 / 24.0), 2)); /* RING/SIMPLE/16 */
}

acl_search_params_t params(void)
{
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.budget = 1e9;
  return p;
}

void ring_tree_start(acl_search_t *s, model_t *m)
{
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  ring_tree_model(m, cost);
  acl_search_params_t p = params();
  acl_search_init(s, &p, &key, cost);
}

void converge_simple(acl_search_t *s, model_t *m)
{
  ring_tree_start(s, m);
  drive_opts_t o = {.max_calls = 2000};
  cr_assert(drive(s, model_time, m, &o) > 0);
}

int converged_decision(acl_search_t *s, model_t *m, double *t)
{
  converge_simple(s, m);
  return decision_next(s, m, t);
}

int decision_next(acl_search_t *s, model_t *m, double *t)
{
  acl_candidate_t c;
  uint32_t len;
  int id = acl_search_next(s, &c, &len);
  if (id == ACL_SEARCH_CAND_NCCL) /* a validation block: the decision's comes next */
    id = acl_search_next(s, &c, &len);
  *t = model_time(m, &c, 0);
  return id;
}
