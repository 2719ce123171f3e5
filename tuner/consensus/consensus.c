/* Rank consensus: decisions and samples (docs/consensus.md).
 * The decider step is in cons_step.c, segment lifetime and the lock in
 * cons_shm.c; the multi-host relay (relay.c) is a transport this file
 * registers serve_remote with. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "tuner/consensus/cons_int.h"
#include "tuner/consensus/relay.h"

#define REFUSED_CAP 1024 /* refused keys remembered per rank */

/* ---- per-rank workload table ---------------------------------------------- */

static uint64_t key_hash(const acl_wkey_t *k)
{
  uint64_t h = k->nbytes * 0x9e3779b97f4a7c15ull ^ k->comm_id;
  h ^= ((uint64_t)(uint32_t)k->num_pipe_ops << 8 | k->coll) * 0xff51afd7ed558ccdull;
  h ^= h >> 29;
  return h * 0xc4ceb9fe1a85ec53ull;
}

static cons_local_t *local_find(acl_cons_t *c, const acl_wkey_t *k)
{
  for (uint32_t i = (uint32_t)key_hash(k) & c->tab_mask;; i = (i + 1) & c->tab_mask) {
    cons_local_t *e = &c->tab[i];
    if (!e->used)
      return NULL;
    if (cons_key_eq(&e->key, k))
      return e;
  }
}

static cons_local_t *local_insert(acl_cons_t *c, const acl_wkey_t *k, uint32_t widx)
{
  if (widx == ACL_CONS_WIDX_NONE && c->tab_used >= c->tab_limit)
    return NULL; /* refused keys beyond the cap are looked up each time */
  uint32_t i = (uint32_t)key_hash(k) & c->tab_mask;
  while (c->tab[i].used)
    i = (i + 1) & c->tab_mask;
  cons_local_t *e = &c->tab[i];
  memset(e, 0, sizeof(*e));
  e->key = *k;
  e->widx = widx;
  e->used = 1;
  c->tab_used++;
  return e;
}

/* ---- create / destroy ------------------------------------------------------ */

static void serve_remote(void *ctx, const acl_relay_req_t *req, acl_relay_resp_t *resp);

acl_cons_t *acl_cons_create(const acl_cons_params_t *p, char *err, size_t errlen)
{
  char dummy[8];
  if (!err || !errlen) {
    err = dummy;
    errlen = sizeof(dummy);
  }
  err[0] = '\0';
  acl_cons_t *c = NULL;
  if (!p || !p->cfg) {
    snprintf(err, errlen, "consensus: no parameters");
    goto fail;
  }
  if (p->nranks < 1 || p->nnodes < 1 || p->rank < -1 || p->rank >= p->nranks) {
    snprintf(err, errlen, "consensus: invalid communicator (rank %d of %d, %d nodes)", p->rank,
             p->nranks, p->nnodes);
    goto fail;
  }
  if (p->cfg->max_workloads < 1 || p->cfg->max_workloads > ACL_CONFIG_MAX_WORKLOADS_MAX) {
    snprintf(err, errlen, "consensus: max_workloads %d out of range", p->cfg->max_workloads);
    goto fail;
  }
  if (p->nnodes > 1 && p->rank < 0) {
    snprintf(err, errlen,
             "consensus: %d nodes but this rank's number is unknown: load "
             "autoccl as the profiler plugin too (NCCL_PROFILER_PLUGIN) so the leader host "
             "can be found",
             p->nnodes);
    goto fail;
  }
  c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(err, errlen, "consensus: out of memory");
    goto fail;
  }
  c->comm_id = p->comm_id;
  c->rank = p->rank;
  c->nranks = p->nranks;
  c->nnodes = p->nnodes;
  c->mode = p->cfg->mode;
  c->timeout_ms = p->cfg->timeout_ms > 0 ? p->cfg->timeout_ms : ACL_CONFIG_TIMEOUT_MS_DEFAULT;
  if (cons_settings_from(&c->set, p, err, errlen) != 0)
    goto fail;
  c->set_hash = cons_settings_hash(&c->set);
  c->table = p->table && p->cfg->mode == ACL_MODE_ONLINE ? p->table : NULL;
  c->table_hash = p->table ? p->table->hash : 0;
  uint32_t want = 2u * ((uint32_t)p->cfg->max_workloads + REFUSED_CAP), cap = 64;
  while (cap < want)
    cap <<= 1;
  c->tab = calloc(cap, sizeof(*c->tab));
  if (!c->tab) {
    snprintf(err, errlen, "consensus: out of memory");
    goto fail;
  }
  c->tab_mask = cap - 1;
  c->tab_limit = (uint32_t)p->cfg->max_workloads + REFUSED_CAP;
  c->role = CONS_ROLE_DECIDER;
  if (p->nnodes > 1) {
    if (acl_relay_parse_addr(p->cfg->coordinator, getenv("MASTER_ADDR"), getenv("MASTER_PORT"),
                             c->coord_host, sizeof(c->coord_host), &c->coord_port, err,
                             errlen) != 0)
      goto fail;
    if (p->rank != 0) {
      c->role = CONS_ROLE_FOLLOWER;
      c->client = acl_relay_client_create(c->coord_host, c->coord_port, cons_on_push, c);
      if (!c->client) {
        snprintf(err, errlen, "consensus: out of memory");
        goto fail;
      }
    }
  }
  c->map = cons_seg_attach(c, p->shm_ns, err, errlen);
  if (!c->map)
    goto fail;
  c->hdr = c->map->hdr;
  c->host_id = cons_host_id(c->hdr);
  if (p->nnodes > 1 && p->rank == 0) {
    atomic_store(&c->hdr->leader, 1);
    if (acl_relay_register(c->coord_host, c->coord_port, c->comm_id, c->host_id, serve_remote, c,
                           err, errlen) != 0)
      goto fail;
    c->registered = true;
  }
  return c;
fail:
  acl_cons_destroy(c);
  return NULL;
}

void acl_cons_destroy(acl_cons_t *c)
{
  if (!c)
    return;
  if (c->registered)
    acl_relay_unregister(c);
  acl_relay_client_destroy(c->client);
  cons_seg_detach(c);
  free(c->tab);
  free(c);
}

/* ---- decide ----------------------------------------------------------------- */

static int apply(cons_local_t *e, uint64_t k, uint32_t widx, uint16_t cand_id,
                 const acl_candidate_t *cand, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO],
                 acl_decision_t *out, char *err, size_t errlen)
{
  /* NCCL's choice unless the block says otherwise (refused, disabled) */
  out->safe_id = e ? e->c_safe_id : ACL_SEARCH_CAND_NCCL;
  out->safe = e ? e->c_safe : (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  if (cand->algo != ACL_ALGO_NCCL) {
    if (cand->algo < 0 || cand->algo >= ACL_NUM_ALGO || cand->proto < 0 ||
        cand->proto >= ACL_NUM_PROTO || cost[cand->algo][cand->proto] < 0.0f) {
      char cb[48];
      snprintf(err, errlen,
               "call %llu of %s/%llu bytes: the communicator decided %s, which "
               "this rank's cost table marks unsupported; failing this collective rather "
               "than diverging",
               (unsigned long long)k, acl_coll_name(e ? e->key.coll : -1),
               (unsigned long long)(e ? e->key.nbytes : 0),
               acl_candidate_str(cand, cb, sizeof(cb)));
      return -1;
    }
  }
  out->widx = widx;
  out->cand_id = cand_id;
  out->phase = e ? e->c_phase : (uint8_t)ACL_PHASE_DISABLED;
  out->sample_shift = e ? e->c_sample_shift : 0;
  out->call_idx = k;
  out->cand = *cand;
  if (e)
    e->next = k + 1;
  return 0;
}

/* Caches b, usable below limit (a follower host's commit). */
static void cache_blk(cons_local_t *e, const cons_blk_t *b, uint64_t limit)
{
  uint64_t end = b->start + b->len;
  e->c_start = b->start;
  e->c_end = end < limit ? end : limit < b->start ? b->start : limit;
  e->c_cand_id = b->cand_id;
  e->c_cand = b->cand;
  e->c_phase = b->phase;
  e->c_sample_shift = b->sample_shift;
  e->c_safe_id = b->safe_id;
  e->c_safe = b->safe;
}

static int too_old(const acl_wkey_t *key, uint64_t k, char *err, size_t errlen)
{
  snprintf(err, errlen,
           "call %llu of %s/%llu bytes is older than the %d decision blocks "
           "kept: this rank lags too far behind the others; no guess is made",
           (unsigned long long)k, acl_coll_name(key->coll), (unsigned long long)key->nbytes,
           ACL_CONS_RING);
  return -1;
}

bool cons_leader_here(acl_cons_t *c)
{
  return c->role == CONS_ROLE_DECIDER ||
         atomic_load_explicit(&c->hdr->leader, memory_order_relaxed);
}

/* Leader host: the first rank to reach an undecided call steps the search. */
/* A workload the full table refused: NCCL's choice on every rank, said
 * once per process and counted (autoccl_consensus_workloads_refused_total). */
static int refused(acl_cons_t *c, cons_local_t *e, const acl_wkey_t *key,
                   const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], acl_decision_t *out, char *err,
                   size_t errlen)
{
  static atomic_flag said = ATOMIC_FLAG_INIT;
  if (!e)
    local_insert(c, key, ACL_CONS_WIDX_NONE);
  atomic_fetch_add_explicit(&c->refused_keys, 1, memory_order_relaxed);
  if (!atomic_flag_test_and_set(&said))
    acl_warn("consensus: the workload table of comm %016llx is full (AUTOCCL_MAX_WORKLOADS=%d); "
             "%s/%llu bytes and later new workloads keep NCCL's choice (counted in "
             "autoccl_consensus_workloads_refused_total)",
             (unsigned long long)c->comm_id, c->set.max_workloads, acl_coll_name(key->coll),
             (unsigned long long)key->nbytes);
  acl_candidate_t nccl = {.algo = ACL_ALGO_NCCL};
  return apply(NULL, 0, ACL_CONS_WIDX_NONE, 0, &nccl, cost, out, err, errlen);
}

/* A call past a sealed commit: NCCL's choice, the call index consumed. */
static int lost_call(acl_cons_t *c, cons_local_t *e, const acl_wkey_t *key, uint32_t widx,
                     uint64_t k, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], acl_decision_t *out,
                     char *err, size_t errlen)
{
  if (!e)
    e = local_insert(c, key, widx);
  acl_candidate_t nccl = {.algo = ACL_ALGO_NCCL};
  int rc = apply(NULL, k, ACL_CONS_WIDX_NONE, 0, &nccl, cost, out, err, errlen);
  if (e)
    e->next = k + 1;
  return rc;
}

static void ms_sleep(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The seal's horizon for every rank: the blocks published below it (read
 * lock-free from the ring, which lies past the header), NCCL's choice from
 * it on; the call index consumed either way. A key this rank has not seen
 * is looked up in the slots without the lock. */
static int sealed_call(acl_cons_t *c, cons_local_t *e, const acl_wkey_t *key, uint64_t k,
                       const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], acl_decision_t *out,
                       char *err, size_t errlen)
{
  uint32_t widx = e ? e->widx : ACL_CONS_WIDX_NONE;
  for (uint32_t i = 0; !e && i < (uint32_t)c->set.max_workloads; i++) {
    cons_wl_t *w = cons_wl(c->hdr, i);
    if (atomic_load_explicit(&w->present, memory_order_acquire) && cons_key_eq(&w->key, key)) {
      widx = i;
      break;
    }
  }
  if (!e && !(e = local_insert(c, key, widx)))
    widx = ACL_CONS_WIDX_NONE;
  if (widx == ACL_CONS_WIDX_NONE)
    return lost_call(c, e, key, widx, k, cost, out, err, errlen);
  cons_wl_t *w = cons_wl(c->hdr, widx);
  uint64_t hz = atomic_load_explicit(&w->seal, memory_order_acquire) & ~CONS_COMMIT_SEALED;
  if (k >= hz)
    return lost_call(c, e, key, widx, k, cost, out, err, errlen);
  /* Below the horizon: its block was published, or is being (its end was
   * raised first), by a rank that holds the lock for microseconds. */
  uint64_t t0 = acl_mono_ns();
  for (;;) {
    cons_blk_t b;
    int r = cons_ring_find(w, k, &e->hint, &b);
    if (r == 0) {
      cache_blk(e, &b, hz);
      return apply(e, k, widx, b.cand_id, &b.cand, cost, out, err, errlen);
    }
    if (r == -2)
      return too_old(key, k, err, errlen);
    if (acl_mono_ns() - t0 > (uint64_t)c->timeout_ms * 1000000ull) {
      snprintf(err, errlen,
               "call %llu of %s/%llu bytes: its block, below the seal, was never published "
               "within %d ms",
               (unsigned long long)k, acl_coll_name(key->coll), (unsigned long long)key->nbytes,
               c->timeout_ms);
      return -1;
    }
    ms_sleep(1);
  }
}

static int slow_decider(acl_cons_t *c, cons_local_t *e, const acl_wkey_t *key, uint64_t k,
                        const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], acl_decision_t *out,
                        char *err, size_t errlen)
{
  if (cons_sealed(c)) {
    if (!atomic_load_explicit(&c->broken, memory_order_relaxed))
      cons_seal(c, "another rank found the consensus segment unusable and sealed it");
    return sealed_call(c, e, key, k, cost, out, err, errlen);
  }
  /* Several hosts: the follower hosts run what the relay serves up to their
   * commit and cannot see a seal here, so this fails loudly instead. */
  bool can_seal = c->nnodes == 1;
  if (cons_lock(c, true, c->timeout_ms, err, errlen) != 0) {
    if (!can_seal)
      return -1;
    cons_seal(c, err);
    return sealed_call(c, e, key, k, cost, out, err, errlen);
  }
  uint32_t widx = ACL_CONS_WIDX_NONE;
  cons_blk_t b;
  uint64_t pub = 0;
  bool first = !e || !e->restricted;
  int rc = cons_serve_locked(c, key, k, cost, first ? c->rank : CONS_NO_RESTRICT, &widx, &b, &pub,
                             err, errlen);
  int urc = cons_unlock(c->hdr);
  atomic_fetch_add_explicit(&c->blocks_published, pub, memory_order_relaxed);
  if (rc == -4 || urc != 0) {
    if (rc != -4)
      snprintf(err, errlen, "the consensus lock of comm %016llx could not be released (%s)",
               (unsigned long long)c->comm_id, strerror(urc));
    if (!can_seal)
      return -1;
    cons_seal(c, err);
    if (rc == 0 && !e)
      e = local_insert(c, key, widx);
    return sealed_call(c, e, key, k, cost, out, err, errlen);
  }
  if (rc == 1)
    return refused(c, e, key, cost, out, err, errlen);
  if (rc == -2)
    return too_old(key, k, err, errlen);
  if (rc != 0) {
    snprintf(err, errlen, "call %llu is implausibly far ahead of the decided calls",
             (unsigned long long)k);
    return -1;
  }
  if (!e && !(e = local_insert(c, key, widx))) {
    snprintf(err, errlen, "consensus: per-rank workload table full");
    return -1;
  }
  e->restricted = 1;
  e->hint = b.num;
  cache_blk(e, &b, UINT64_MAX);
  return apply(e, k, widx, b.cand_id, &b.cand, cost, out, err, errlen);
}

/* Follower host: fetch the blocks from the leader host's relay, one at a time,
 * without holding the local lock across the network; run a call from a held
 * block once the leader's commit covers it. */
static int slow_follower(acl_cons_t *c, cons_local_t *e, const acl_wkey_t *key, uint64_t k,
                         const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], acl_decision_t *out,
                         char *err, size_t errlen)
{
  uint64_t t0 = acl_mono_ns();
  int timeout_ms = c->timeout_ms;
  char lost_err[320] = "";
  for (int guard = 0; guard < 100000; guard++) {
    if (cons_leader_here(c)) /* rank 0 attached to this very segment meanwhile */
      return slow_decider(c, e, key, k, cost, out, err, errlen);
    bool lost = atomic_load_explicit(&c->hdr->leader_lost, memory_order_acquire);
    uint32_t widx = e ? e->widx : ACL_CONS_WIDX_NONE;
    cons_wl_t *w = NULL;
    if (widx == ACL_CONS_WIDX_NONE && lost)
      w = cons_wl_find(c->hdr, (uint32_t)c->set.max_workloads, key,
                       &widx); /* this rank's first call of it: the host may hold it */
    else if (widx != ACL_CONS_WIDX_NONE)
      w = cons_wl(c->hdr, widx);
    uint64_t q = 0;
    bool waiting = false;
    if (w) {
      uint64_t lim = cons_run_limit(c, w);
      if (lost)
        lim = atomic_fetch_or_explicit(&w->commit, CONS_COMMIT_SEALED, memory_order_acq_rel) &
              ~CONS_COMMIT_SEALED;
      uint64_t hint = e ? e->hint : 0;
      cons_blk_t b;
      int r = cons_ring_find(w, k, &hint, &b);
      if (r == 0 && k < lim && ((e && e->restricted) || lost)) {
        if (!e && !(e = local_insert(c, key, widx)))
          return lost_call(c, e, key, widx, k, cost, out, err, errlen);
        e->hint = hint;
        cache_blk(e, &b, lim);
        return apply(e, k, widx, b.cand_id, &b.cand, cost, out, err, errlen);
      }
      if (r == -2)
        return too_old(key, k, err, errlen);
      if (lost) {
        if (lost_err[0]) { /* this call found the leader gone: say so */
          lost_call(c, e, key, widx, k, cost, out, err, errlen);
          snprintf(err, errlen, "%s", lost_err);
          return -1;
        }
        return lost_call(c, e, key, widx, k, cost, out, err, errlen);
      }
      waiting = r == 0 && e && e->restricted; /* held, not committed yet */
      q = r == 0 ? k : cons_ring_end(w);      /* first call this host lacks */
    } else if (lost) {
      if (lost_err[0]) {
        lost_call(c, e, key, ACL_CONS_WIDX_NONE, k, cost, out, err, errlen);
        snprintf(err, errlen, "%s", lost_err);
        return -1;
      }
      return lost_call(c, e, key, ACL_CONS_WIDX_NONE, k, cost, out, err, errlen);
    }
    int left = timeout_ms - (int)((acl_mono_ns() - t0) / 1000000ull);
    if (waiting && left > 0) {
      /* the other hosts fetch it as they reach it: their pushes wake us */
      uint64_t w0 = acl_mono_ns();
      int pr =
          acl_relay_client_poll(c->client, left < CONS_COMMIT_POLL_MS ? left : CONS_COMMIT_POLL_MS);
      atomic_fetch_add_explicit(&c->wait_ns, acl_mono_ns() - w0, memory_order_relaxed);
      if (pr == 0 &&
          (atomic_load_explicit(&w->commit, memory_order_acquire) & ~CONS_COMMIT_SEALED) > k)
        continue;
      if (pr == 0 && guard % 8 != 7)
        continue; /* a pull now and then: a leader host that vanished closes nothing */
    } else if (waiting) {
      snprintf(err, errlen,
               "call %llu of %s/%llu bytes: not every follower host held its block within %d ms "
               "(AUTOCCL_TIMEOUT_MS; a host stopped?); NCCL's choice for this call",
               (unsigned long long)k, acl_coll_name(key->coll), (unsigned long long)key->nbytes,
               timeout_ms);
      return -1;
    }
    /* a pull late in the wait still gets a fair chance: a slow answer must
     * not pass for a dead leader (the bound grows by this much at most) */
    int ask_ms = left > 2 * CONS_COMMIT_POLL_MS ? left : 2 * CONS_COMMIT_POLL_MS;
    acl_relay_resp_t resp;
    int rc = cons_fetch(c, e, key, w, q, cost, ask_ms, &resp, err, errlen);
    if (rc < 0) {
      snprintf(lost_err, sizeof(lost_err), "%s", err);
      cons_leader_lost(c, err);
      continue; /* sealed now: the held and committed calls still run */
    }
    if (rc > 0 && resp.status == ACL_RELAY_FULL)
      return refused(c, e, key, cost, out, err, errlen);
    if (rc > 0 && resp.status == ACL_RELAY_TOO_OLD)
      return too_old(key, q, err, errlen);
    if (rc > 0)
      return -1;
    if (!e && !(e = local_insert(c, key, resp.widx))) {
      snprintf(err, errlen, "consensus: per-rank workload table full");
      return -1;
    }
    e->restricted = 1;
  }
  snprintf(err, errlen, "consensus: no block for call %llu after many relay answers",
           (unsigned long long)k);
  return -1;
}

int acl_cons_decide(acl_cons_t *c, const acl_wkey_t *key,
                    const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], acl_decision_t *out, char *err,
                    size_t errlen)
{
  char dummy[8];
  if (!err || !errlen) {
    err = dummy;
    errlen = sizeof(dummy);
  }
  if (!c || !key || !cost || !out) {
    snprintf(err, errlen, "consensus: invalid arguments");
    return -1;
  }
  cons_local_t *e = local_find(c, key);
  uint64_t k = 0;
  if (e) {
    if (e->widx == ACL_CONS_WIDX_NONE) {
      acl_candidate_t nccl = {.algo = ACL_ALGO_NCCL};
      return apply(NULL, 0, ACL_CONS_WIDX_NONE, 0, &nccl, cost, out, err, errlen);
    }
    k = e->next;
    if (k - e->c_start < e->c_end - e->c_start) /* converged path: cached block */
      return apply(e, k, e->widx, e->c_cand_id, &e->c_cand, cost, out, err, errlen);
    if (e->restricted) {
      cons_blk_t b;
      cons_wl_t *w = cons_wl(c->hdr, e->widx);
      int r = cons_ring_find(w, k, &e->hint, &b);
      if (r == 0) {
        uint64_t lim = cons_run_limit(c, w);
        cache_blk(e, &b, lim);
        if (k < e->c_end) {
          if (lim != UINT64_MAX)
            cons_prefetch(c, e, w, &b, k, cost);
          return apply(e, k, e->widx, b.cand_id, &b.cand, cost, out, err, errlen);
        }
      }
      if (r == -2)
        return too_old(key, k, err, errlen);
    }
  }
  if (cons_leader_here(c))
    return slow_decider(c, e, key, k, cost, out, err, errlen);
  return slow_follower(c, e, key, k, cost, out, err, errlen);
}

uint64_t acl_cons_skip(acl_cons_t *c, const acl_wkey_t *key, uint64_t n)
{
  cons_local_t *e = c && key ? local_find(c, key) : NULL;
  if (!e || e->widx == ACL_CONS_WIDX_NONE || e->next - e->c_start >= e->c_end - e->c_start)
    return 0;
  uint64_t left = e->c_end - e->next; /* the cached block: decide's fast path */
  n = n < left ? n : left;
  e->next += n;
  return n;
}

/* ---- relay server side ---------------------------------------------------- */

/* The relay's serve callback for this comm (rank 0 of a multi-host comm):
 * answers a follower host's request from this host's segment. */
static void serve_remote(void *ctx, const acl_relay_req_t *req, acl_relay_resp_t *resp)
{
  acl_cons_t *c = ctx;
  memset(resp, 0, sizeof(*resp));
  if (req->settings_hash != c->set_hash) {
    resp->status = ACL_RELAY_MISMATCH;
    return;
  }
  if (cons_sealed(c) ||
      cons_lock(c, false, c->timeout_ms < 2000 ? c->timeout_ms : 2000, NULL, 0) != 0) {
    resp->status = ACL_RELAY_BUSY;
    return;
  }
  uint32_t widx = ACL_CONS_WIDX_NONE;
  cons_blk_t b;
  uint64_t pub = 0;
  int rank =
      req->flags & ACL_RELAY_F_RESTRICT ? (req->rank >= 0 ? req->rank : -1) : CONS_NO_RESTRICT;
  char err[256];
  int rc = cons_serve_locked(c, &req->key, req->call_idx, req->cost, rank, &widx, &b, &pub, err,
                             sizeof(err));
  if (rc == 0)
    resp->fig = cons_figures_locked(cons_wl(c->hdr, widx));
  cons_unlock(c->hdr);
  atomic_fetch_add_explicit(&c->blocks_published, pub, memory_order_relaxed);
  resp->widx = widx;
  if (rc == 1) {
    resp->status = ACL_RELAY_FULL;
  } else if (rc == -2) {
    resp->status = ACL_RELAY_TOO_OLD;
  } else if (rc == -3) {
    resp->status = ACL_RELAY_AHEAD;
  } else if (rc == -4) {
    resp->status = ACL_RELAY_BUSY; /* the follower hosts then seal at their commit */
  } else {
    resp->status = ACL_RELAY_OK;
    resp->phase = b.phase;
    resp->sample_shift = b.sample_shift;
    resp->block_num = b.num;
    resp->start = b.start;
    resp->len = b.len;
    resp->cand_id = b.cand_id;
    resp->cand = b.cand;
    resp->safe_id = b.safe_id;
    resp->safe = b.safe;
  }
}

bool acl_cons_table_agreed(const acl_cons_t *c)
{
  return !c || !c->hdr || !atomic_load_explicit(&c->hdr->table_off, memory_order_relaxed);
}
