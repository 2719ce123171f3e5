/* Rank consensus: the decider step, run under the segment lock by the
 * first rank of the leader host to reach an undecided call (and by the
 * relay server for follower hosts): find or create the workload, restrict
 * its search with a rank's valid set, publish the blocks that cover a call
 * (docs/consensus.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tuner/consensus/cons_int.h"

bool cons_key_eq(const acl_wkey_t *a, const acl_wkey_t *b)
{
  return a->comm_id == b->comm_id && a->nbytes == b->nbytes && a->num_pipe_ops == b->num_pipe_ops &&
         a->coll == b->coll;
}

cons_wl_t *cons_wl_find(cons_hdr_t *h, uint32_t n, const acl_wkey_t *key, uint32_t *widx)
{
  for (uint32_t i = 0; i < n; i++) {
    cons_wl_t *w = cons_wl(h, i);
    if (atomic_load_explicit(&w->present, memory_order_acquire) && cons_key_eq(&w->key, key)) {
      *widx = i;
      return w;
    }
  }
  return NULL;
}

/* Raises w's published end to end before a block is published: false
 * when w is sealed (the block is not published). */
static bool seal_raise(cons_wl_t *w, uint64_t end)
{
  uint64_t cur = atomic_load_explicit(&w->seal, memory_order_acquire);
  do {
    if (cur & CONS_COMMIT_SEALED)
      return false;
    if (cur >= end)
      return true;
  } while (!atomic_compare_exchange_weak_explicit(&w->seal, &cur, end, memory_order_acq_rel,
                                                  memory_order_acquire));
  return true;
}

/* A block of NCCL's own choice, unsampled. */
static void nccl_block(cons_blk_t *b, uint32_t len, int phase)
{
  b->len = len;
  b->cand_id = ACL_SEARCH_CAND_NCCL;
  b->cand = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  b->phase = (uint8_t)phase;
  b->sample_shift = ACL_SEARCH_SAMPLE_NEVER;
  b->safe = b->cand;
}

/* Workloads in use: the header's word, bounded by the mapping (a header
 * scribbled while ranks run must not send a loop past the segment). */
static uint32_t wl_used(const cons_hdr_t *h, const cons_settings_t *set)
{
  uint32_t n = atomic_load_explicit(&h->nworkloads, memory_order_relaxed);
  return n < (uint32_t)set->max_workloads ? n : (uint32_t)set->max_workloads;
}

/* Workload i of the segment when it is another live workload of w's
 * communicator, else NULL. */
static cons_wl_t *comm_neighbour(cons_hdr_t *h, const cons_wl_t *w, uint32_t i)
{
  cons_wl_t *o = cons_wl(h, i);
  return o != w && atomic_load_explicit(&o->present, memory_order_acquire) &&
                 o->key.comm_id == w->key.comm_id && !o->disabled
             ? o
             : NULL;
}

/* The cost table's error for w, while its search has no sample of NCCL's
 * choice: what the nearest measured workload of the communicator found
 * (same collective first, then the closest size), else none. The table's
 * error grows with size on one H200 (5x at 16-256 MiB), so a neighbour's is
 * a far better prior than the table's own. Only an error that says the
 * table is low carries over: one that says it is high would lengthen the
 * wait, and a wait is priced again only by samples of w's own, which a
 * process without CUPTI's windows never gets while it waits. On one H100
 * with two ranks in one process, ReduceScatter 256 KiB-256 MiB, priced by
 * 64 KiB's error (its kernel 2 us), waited for the budget through every
 * 2 s run. The segment is shared and read under its lock: every rank's
 * blocks follow the same scale. */
static void prior_scale(cons_hdr_t *h, const cons_settings_t *set, cons_wl_t *w)
{
  if (!acl_search_on_prior(&w->search))
    return;
  uint32_t n = wl_used(h, set);
  double best = -1.0, scale = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    cons_wl_t *o = comm_neighbour(h, w, i);
    double r;
    if (!o || !acl_search_prior_error(&o->search, &r))
      continue;
    double d = fabs(log2((double)(o->key.nbytes + 1) / (double)(w->key.nbytes + 1))) +
               (o->key.coll == w->key.coll ? 0.0 : 64.0);
    if (best < 0.0 || d < best) {
      best = d;
      scale = r;
    }
  }
  if (scale > 0.0)
    acl_search_observe(&w->search, &(acl_search_obs_t){.cand_id = -1,
                                                       .seconds = -1.0,
                                                       .prior_scale = scale > 1.0 ? scale : 1.0});
}

/* Whether another workload of w's communicator has had its first profiler
 * events charged (the search uses it only where they cost once per
 * communicator). Under the segment's lock: every rank sees the same. */
static bool events_nearby(cons_hdr_t *h, const cons_settings_t *set, const cons_wl_t *w)
{
  uint32_t n = wl_used(h, set);
  for (uint32_t i = 0; i < n; i++) {
    const cons_wl_t *o = comm_neighbour(h, w, i);
    if (o && acl_search_events_charged(&o->search))
      return true;
  }
  return false;
}

/* A workload borrows only while its time so far is at least this share of
 * its communicator's: FSDP's 250 MiB AllGather on one H100 was 6 % of its
 * communicator's collective time, a 4 KiB AllReduce once per step is far
 * below 1 % and could never win back its baseline's first events. */
#define CONS_LOAN_MIN_SHARE 0.01

/* Budget for w's baseline from the communicator's converged workloads, and
 * while w owes the communicator's first events (first) also from those
 * that owe them too, for its baseline or for those events in its next
 * candidate's cost (acl_search_lendable; acl_search_obs_t.loan_offer):
 * offered before the search plans w's block,
 * charged to the lenders in proportion to what each could lend once the
 * search took it; *earned: what those lenders earned so far, which tells
 * w's wait how fast the pool grows. Under the segment's lock, like
 * prior_scale: every rank sees the same loan. 0 for a workload too small a
 * share of the communicator's time. */
static double loan_pool(cons_hdr_t *h, const cons_settings_t *set, const cons_wl_t *w,
                        bool first, double *earned)
{
  uint32_t n = wl_used(h, set);
  double pool = 0.0, mine = acl_search_time_so_far(&w->search), all = mine;
  *earned = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    const cons_wl_t *o = comm_neighbour(h, w, i);
    if (o) {
      pool += acl_search_lendable(&o->search, first);
      *earned += acl_search_lend_earned(&o->search, first);
      all += acl_search_time_so_far(&o->search);
    }
  }
  if (mine >= CONS_LOAN_MIN_SHARE * all)
    return pool;
  *earned = 0.0;
  return 0.0;
}

static void loan_charge(cons_hdr_t *h, const cons_settings_t *set, const cons_wl_t *w,
                        double got, double pool, bool first)
{
  uint32_t n = wl_used(h, set);
  for (uint32_t i = 0; i < n && got > 0.0 && pool > 0.0; i++) {
    cons_wl_t *o = comm_neighbour(h, w, i);
    double share = o ? acl_search_lendable(&o->search, first) : 0.0;
    if (share <= 0.0)
      continue;
    o->dirty = 1;
    acl_search_observe(&o->search, &(acl_search_obs_t){
                                       .cand_id = -1, .seconds = -1.0, .lent = got * share / pool});
    o->dirty = 0;
  }
}

/* Longest block the starvation back-off makes: 512 ring entries x 1024
 * calls of slack for a lagging rank. */
#define CONS_STARVE_MAX_LEN 1024u
/* ... and at most this much collective time, but never below
 * CONS_STARVE_MIN_LEN calls (512 x 16 calls of slack). The search looks at
 * its samples only between blocks: with samples ~1,000 calls late (one
 * H200, 256 MiB: 690 us a call), a 1,024-call block held a baseline
 * judged at its start for 0.7 s, and AllReduce and AllGather were still
 * waiting for samples when the 2-second run ended. */
#define CONS_STARVE_MAX_S 0.01
#define CONS_STARVE_MIN_LEN 16u

/* The starvation back-off's next length after w's last block. */
static uint32_t starve_len(const cons_wl_t *w)
{
  uint32_t cap = CONS_STARVE_MAX_LEN;
  double ref = acl_search_ref_seconds(&w->search);
  double calls = ref > 0.0 ? CONS_STARVE_MAX_S / ref : (double)cap;
  if (calls < (double)cap)
    cap = calls < (double)CONS_STARVE_MIN_LEN ? CONS_STARVE_MIN_LEN : (uint32_t)calls;
  return w->last_len * 2 > cap ? cap : w->last_len * 2;
}

/* The block policy, what consensus adds to the search, in one place: the
 * next block of w is
 * - NCCL's choice for good (ACL_CONS_DISABLED_SPAN) once w is disabled (a
 *   dead lock holder left it half-updated);
 * - NCCL's choice (ACL_CONS_WARM_SPAN) while some rank of the communicator
 *   has not reported its valid set and the search has no decision yet;
 * - otherwise the search's block, grown while it starves (below), its
 *   time priced by a neighbour's measured cost-table error until it has
 *   samples of its own (prior_scale), its baseline paid by its converged
 *   neighbours where its own budget cannot yet (loan_pool).
 * The search knows nothing of ranks, locks or the ring: these facts are the
 * consensus layer's, so they stay here, not in the search's states. */
static void block_policy(cons_hdr_t *h, const cons_settings_t *set, cons_wl_t *w, cons_blk_t *b)
{
  if (w->disabled) {
    nccl_block(b, ACL_CONS_DISABLED_SPAN, ACL_PHASE_DISABLED);
    return;
  }
  if (w->nrestricted < (uint32_t)set->nranks && !acl_phase_decided(acl_search_phase(&w->search))) {
    nccl_block(b, ACL_CONS_WARM_SPAN, ACL_PHASE_WARMUP);
    return;
  }
  prior_scale(h, set, w);
  /* the warm-up span and grown blocks ran calls the search did not plan */
  acl_search_observe(
      &w->search, &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .next_call = b->start + 1});
  if (!acl_search_events_charged(&w->search) && events_nearby(h, set, w))
    acl_search_observe(&w->search,
                       &(acl_search_obs_t){.cand_id = -1, .seconds = -1.0, .events_nearby = 1});
  /* the communicator's first events still owed by w: every neighbour that
   * owes them too may pay for them, begun or not */
  bool first = !acl_search_events_charged(&w->search);
  double earned = 0.0;
  bool borrows = acl_search_wants_loan(&w->search) || acl_search_owes_first_events(&w->search);
  double pool = borrows ? loan_pool(h, set, w, first, &earned) : 0.0;
  if (pool > 0.0 || earned > 0.0)
    acl_search_observe(&w->search, &(acl_search_obs_t){.cand_id = -1,
                                                       .seconds = -1.0,
                                                       .loan_offer = pool,
                                                       .loan_earned = earned});
  uint32_t len = 1;
  int id = acl_search_next(&w->search, &b->cand, &len);
  loan_charge(h, set, w, acl_search_loan_taken(&w->search), pool, first);
  b->cand_id = (uint16_t)(id < 0 ? 0 : id);
  if (id <= 0)
    b->cand = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  b->len = len ? len : 1;
  b->phase = (uint8_t)acl_search_phase(&w->search);
  b->sample_shift = acl_search_sample_shift(&w->search);
  /* the state after this step: a challenger block carries the decision */
  b->safe_id = (uint16_t)acl_search_safe(&w->search, &b->safe);
  /* Starvation back-off. Only a block that wanted samples and got none
   * starves: after an unsampled one (a budget wait) the next measuring
   * block would run twice the wait's length with events on every call.
   * And it grows a block, never shortens one: the search counts the calls
   * it planned (its budget is a share of them), and a long wait cut to the
   * cap overdrew it. */
  if (w->nblocks_search > 0 && w->last_sampled && b->cand_id == w->last_cand &&
      w->samples_fed == w->fed_at_last_block && w->last_len >= b->len) {
    uint32_t grown = starve_len(w); /* only for a starving block: it reads the search */
    if (grown > b->len)
      b->len = grown;
  }
  w->nblocks_search++;
  w->last_cand = b->cand_id;
  w->last_len = b->len;
  w->last_sampled = b->sample_shift < ACL_SEARCH_SAMPLE_NEVER;
  w->fed_at_last_block = w->samples_fed;
}

/* Publishes w's next block (block_policy); false: w is sealed. */
static bool step_locked(cons_hdr_t *h, const cons_settings_t *set, cons_wl_t *w)
{
  cons_blk_t b = {.num = atomic_load_explicit(&w->nblocks, memory_order_relaxed),
                  .start = w->next_call};
  w->dirty = 1;
  block_policy(h, set, w, &b);
  if (!seal_raise(w, b.start + b.len)) {
    w->dirty = 0;
    return false;
  }
  cons_ring_publish(w, &b);
  w->dirty = 0;
  h->blocks_published++;
  return true;
}

int cons_serve_locked(acl_cons_t *c, const acl_wkey_t *key, uint64_t call,
                      const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int restrict_rank,
                      uint32_t *widx, cons_blk_t *blk, uint64_t *published, char *err,
                      size_t errlen)
{
  cons_hdr_t *h = c->hdr;
  const cons_settings_t *set = &c->set;
  uint32_t n;
  if (cons_hdr_check(c, &n, err, errlen) != 0)
    return -4;
  cons_wl_t *w = cons_wl_find(h, n, key, widx);
  if (!w) {
    /* "table full" is read from the shared table under the lock, and the
     * table only grows: every rank reaches the same verdict for a key */
    if (n >= (uint32_t)set->max_workloads) {
      h->refused++;
      *widx = ACL_CONS_WIDX_NONE;
      return 1;
    }
    w = cons_wl(h, n);
    /* all but the seal, which a rank may be setting right now */
    size_t so = offsetof(cons_wl_t, seal), se = so + sizeof(w->seal);
    memset(w, 0, so);
    memset((char *)w + se, 0, sizeof(*w) - se);
    w->key = (acl_wkey_t){.comm_id = key->comm_id,
                          .nbytes = key->nbytes,
                          .num_pipe_ops = key->num_pipe_ops,
                          .coll = key->coll};
    acl_search_init(&w->search, &set->search, &w->key, cost);
    if (c->table && !atomic_load_explicit(&h->table_off, memory_order_relaxed)) {
      acl_table_query_t q = {.coll = key->coll,
                             .nbytes = key->nbytes,
                             .nnodes = set->nnodes,
                             .nranks = set->nranks,
                             .pipe_ops = key->num_pipe_ops};
      const acl_table_rule_t *rule = acl_table_find(c->table, &q);
      if (rule)
        acl_search_seed(&w->search, &rule->cand); /* -1: not runnable here, explores */
    }
    atomic_store_explicit(&w->present, 1, memory_order_release);
    atomic_store_explicit(&h->nworkloads, n + 1, memory_order_release);
    *widx = n;
  }
  if (restrict_rank != CONS_NO_RESTRICT) {
    bool fresh = true;
    if (restrict_rank >= 0 && restrict_rank < ACL_CONS_RANK_BITS) {
      uint64_t bit = 1ull << (restrict_rank % 64);
      fresh = !(w->rank_bits[restrict_rank / 64] & bit);
      w->rank_bits[restrict_rank / 64] |= bit;
    }
    if (fresh) {
      w->dirty = 1;
      acl_search_restrict(&w->search, cost);
      w->dirty = 0;
      w->nrestricted++;
    }
  }
  if (call >= w->next_call && call - w->next_call > ACL_CONS_MAX_AHEAD)
    return -3;
  while (w->next_call <= call) {
    if (!step_locked(h, set, w)) {
      snprintf(err, errlen, "comm %016llx: sealed by another rank", (unsigned long long)c->comm_id);
      return -4;
    }
    if (published)
      (*published)++;
  }
  uint64_t hint = atomic_load_explicit(&w->nblocks, memory_order_relaxed) - 1;
  return cons_ring_find(w, call, &hint, blk) == 0 ? 0 : -2;
}
