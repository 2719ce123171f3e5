/* Ceiling mode (AUTOCCL_STOCK_CHANNELS, docs/channels.md): with the channel
 * ceiling raised above what NCCL builds as it ships, the search's baseline
 * is NCCL as it ships (its pair capped at the stock count), so small sizes,
 * where the raised ceiling alone loses, keep the stock choice, and large
 * sizes take the channels the ceiling adds. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/tuner/drive.h"
#include "tuner/search/search.h"

#define STOCK 24
#define CEIL 32

/* NCCL with the ceiling raised on a 2-GPU NVLink box, shaped after the
 * 2x H200 sweep (docs/channels.md): NCCL picks Ring/LL128 at every size
 * here; at a small size its own choice at the raised ceiling is 6% slower
 * than as it ships (a bandwidth term it over-trusts), more channels only
 * cost; at a large size time falls with channels up to the ceiling. */
typedef struct world {
  bool large;
  double stock_s; /* NCCL as it ships */
} world_t;

static double chan_time(const world_t *w, int algo, int proto, int nch)
{
  double pair = algo == 1 && proto == 1 ? 1.0 : algo == 1 && proto == 2 ? 1.04 : 1.30;
  if (!w->large) /* latency bound: more than 8 channels only add set-up per call */
    return w->stock_s * pair * (nch <= 8 ? 1.02 : 1.0 + 0.0025 * (nch - STOCK + 24) / 4.0);
  /* bandwidth bound: time ~ 1/channels up to a plateau at the ceiling */
  return w->stock_s * pair * (0.5 + 0.5 * STOCK / (double)nch) / 1.0;
}

static double world_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)call;
  const world_t *w = user;
  if (c->algo == ACL_ALGO_NCCL) {
    if (c->nchannels == 0) /* NCCL's own choice with the ceiling raised */
      return w->large ? chan_time(w, 1, 1, CEIL) : w->stock_s * 1.06;
    cr_assert_leq(c->nchannels, STOCK, "the baseline runs at most the stock count");
    return w->stock_s; /* its pair capped at the stock count: as it ships */
  }
  cr_assert(c->nchannels >= 1 && c->nchannels <= CEIL, "channels %d", c->nchannels);
  return chan_time(w, c->algo, c->proto, c->nchannels);
}

static void setup(acl_search_t *s, bool large, int stock)
{
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  int a[] = {0, 1, 1}, p[] = {2, 1, 2};
  float us[] = {40, 10, 11};
  table_only(cost, 3, a, p, us);
  acl_search_params_t prm;
  acl_search_params_default(&prm);
  prm.max_channels = CEIL;
  prm.stock_channels = stock;
  prm.budget = 0.5; /* the test is about the baseline, not the budget */
  acl_wkey_t key = {.comm_id = 9, .nbytes = large ? 1u << 30 : 1u << 18, .num_pipe_ops = 1,
                    .coll = 2};
  acl_search_init(s, &prm, &key, cost);
}

static double run(bool large, int stock, acl_search_report_t *r, double *stock_s)
{
  static acl_search_t s;
  world_t w = {.large = large, .stock_s = large ? 5e-3 : 20e-6};
  setup(&s, large, stock);
  double spent = 0;
  drive_opts_t o = {.noise = 0.01, .seed = 3, .max_calls = 200000, .settle = 1,
                    .time_spent = &spent};
  cr_assert(drive(&s, world_time, &w, &o) > 0, "settles");
  acl_search_report(&s, r);
  *stock_s = w.stock_s;
  return world_time(&w, &r->current, 0);
}

Test(ceiling, baseline_is_nccl_as_it_ships)
{
  acl_search_report_t r;
  double stock_s;
  run(false, STOCK, &r, &stock_s);
  cr_assert_eq(r.baseline.algo, ACL_ALGO_NCCL);
  cr_assert_eq(r.baseline.nchannels, STOCK, "cand 0 is NCCL's pair capped at the stock count");
  cr_assert(fabs(r.baseline_seconds / stock_s - 1.0) < 0.03, "baseline %g s, stock %g s",
            r.baseline_seconds, stock_s);
}

Test(ceiling, small_sizes_keep_the_stock_choice)
{
  acl_search_report_t r;
  double stock_s;
  double t = run(false, STOCK, &r, &stock_s);
  cr_assert_leq(t, stock_s * 1.005, "decision %s/%s/%d runs %g x stock",
                acl_algo_name(r.current.algo), acl_proto_name(r.current.proto),
                r.current.nchannels, t / stock_s);
}

Test(ceiling, large_sizes_take_the_channels)
{
  acl_search_report_t r;
  double stock_s;
  double t = run(true, STOCK, &r, &stock_s);
  cr_assert_gt(r.current.nchannels, STOCK, "decision %d channels", r.current.nchannels);
  cr_assert_leq(t, stock_s * 0.95, "decision runs %g x stock", t / stock_s);
}

/* Without a stock count (or one at the ceiling) cand 0 stays NCCL's own. */
Test(ceiling, off_without_a_stock_count)
{
  acl_search_t s;
  setup(&s, false, 0);
  acl_candidate_t c;
  uint32_t len;
  acl_search_next(&s, &c, &len);
  cr_assert_eq(c.algo, ACL_ALGO_NCCL);
  cr_assert_eq(c.nchannels, 0);
  setup(&s, false, CEIL);
  acl_search_next(&s, &c, &len);
  cr_assert_eq(c.nchannels, 0);
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.stock_channels = -1;
  cr_assert_eq(acl_search_params_fix(&p, NULL, 0), 1);
  cr_assert_eq(p.stock_channels, 0);
}
