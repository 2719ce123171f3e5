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
 * 2x H200 sweep: NCCL picks Ring/LL128 at every size here. Small sizes: its
 * own choice runs 16 channels, as it ships. Medium: its own choice runs the
 * raised ceiling and is 6% slower than as it ships. Large: time falls with
 * channels up to the ceiling. */
enum { SMALL, MEDIUM, LARGE };
typedef struct world {
  int size;
  double stock_s; /* NCCL as it ships */
} world_t;

static const int own_ch[] = {16, CEIL, CEIL}; /* what NCCL's own choice runs */

static double chan_time(const world_t *w, int algo, int proto, int nch)
{
  double pair = algo == 1 && proto == 1 ? 1.0 : algo == 1 && proto == 2 ? 1.04 : 1.30;
  int best = w->size == SMALL ? 16 : w->size == MEDIUM ? STOCK : CEIL;
  double x = log2((double)nch / best);
  return w->stock_s * pair * (w->size == LARGE ? 0.90 : 1.0) * (1.0 + 0.15 * x * x);
}

static double world_time(void *user, const acl_candidate_t *c, uint64_t call)
{
  (void)call;
  const world_t *w = user;
  if (c->algo == ACL_ALGO_NCCL) {
    if (c->nchannels == 0) /* NCCL's own choice with the ceiling raised */
      return w->size == SMALL    ? w->stock_s
             : w->size == MEDIUM ? w->stock_s * 1.06
                                 : chan_time(w, 1, 1, CEIL);
    cr_assert_eq(c->nchannels, STOCK, "the baseline is capped at the stock count");
    return w->stock_s; /* its pair capped at the stock count: as it ships */
  }
  cr_assert(c->nchannels >= 1 && c->nchannels <= CEIL, "channels %d", c->nchannels);
  return chan_time(w, c->algo, c->proto, c->nchannels);
}

static void setup(acl_search_t *s, int size, int stock)
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
  acl_wkey_t key = {.comm_id = 9, .nbytes = 1u << (18 + 5 * size), .num_pipe_ops = 1, .coll = 2};
  acl_search_init(s, &prm, &key, cost);
  /* the profiler's Coll event of the first sampled call of NCCL's choice */
  acl_search_observe(s,
                     &(acl_search_obs_t){.ran_algo = 1, .ran_proto = 1, .ran_nch = own_ch[size]});
}

static double run(int size, acl_search_report_t *r, world_t *w)
{
  static acl_search_t s;
  w->size = size;
  w->stock_s = 20e-6 * (1 << (4 * size));
  setup(&s, size, STOCK);
  drive_opts_t o = {.noise = 0.01, .seed = 3, .max_calls = 200000, .settle = 1};
  cr_assert(drive(&s, world_time, w, &o) > 0, "settles");
  acl_search_report(&s, r);
  return world_time(w, &r->current, 0);
}

/* Where the raised ceiling alone loses, the baseline is still NCCL as it
 * ships (fails when cand 0 is NCCL's own choice under the ceiling). */
Test(ceiling, baseline_is_nccl_as_it_ships)
{
  acl_search_report_t r;
  world_t w;
  double t = run(MEDIUM, &r, &w);
  cr_assert_eq(r.baseline.algo, ACL_ALGO_NCCL);
  cr_assert_eq(r.baseline.nchannels, STOCK, "cand 0 is NCCL's pair capped at the stock count");
  cr_assert(fabs(r.baseline_seconds / w.stock_s - 1.0) < 0.03, "baseline %g x stock",
            r.baseline_seconds / w.stock_s);
  cr_assert_leq(t, w.stock_s * 1.005, "decision runs %g x stock", t / w.stock_s);
}

/* Where NCCL's own choice runs no more than the stock count it is NCCL as
 * it ships: it stays the baseline, uncapped. */
Test(ceiling, small_sizes_keep_the_stock_choice)
{
  acl_search_report_t r;
  world_t w;
  double t = run(SMALL, &r, &w);
  cr_assert_eq(r.baseline.nchannels, 0, "NCCL's own choice, uncapped");
  cr_assert_leq(t, w.stock_s * 1.005, "decision %s/%s/%d runs %g x stock",
                acl_algo_name(r.current.algo), acl_proto_name(r.current.proto), r.current.nchannels,
                t / w.stock_s);
}

Test(ceiling, large_sizes_take_the_channels)
{
  acl_search_report_t r;
  world_t w;
  double t = run(LARGE, &r, &w);
  cr_assert_eq(r.baseline.nchannels, STOCK);
  cr_assert_gt(r.current.nchannels, STOCK, "decision %d channels", r.current.nchannels);
  cr_assert_leq(t, w.stock_s * 0.95, "decision runs %g x stock", t / w.stock_s);
}

/* Without a stock count (or one at the ceiling) cand 0 stays NCCL's own. */
Test(ceiling, off_without_a_stock_count)
{
  acl_search_t s;
  acl_candidate_t c;
  uint32_t len;
  for (int stock = 0; stock <= CEIL; stock += CEIL) {
    setup(&s, LARGE, stock);
    acl_search_next(&s, &c, &len);
    cr_assert_eq(c.algo, ACL_ALGO_NCCL);
    cr_assert_eq(c.nchannels, 0);
    cr_assert_eq(s.hint_ch, CEIL);
  }
  acl_search_params_t p;
  acl_search_params_default(&p);
  p.stock_channels = -1;
  cr_assert_eq(acl_search_params_fix(&p, NULL, 0), 1);
  cr_assert_eq(p.stock_channels, 0);
}
