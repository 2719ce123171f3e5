/* Rank consensus, follower hosts: the leader's commit horizon seen from a
 * follower host (docs/consensus.md, "Leader loss"): fetching and storing
 * blocks, pushed commits, the seal when the leader is lost. The decide path
 * itself is in consensus.c. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "tuner/consensus/cons_int.h"
#include "tuner/consensus/relay.h"

/* This host's identity for the leader's commit: its segment (a restarted
 * host has a new one), on this machine. Never 0. */
uint64_t cons_host_id(const cons_hdr_t *h)
{
  char hn[256] = "";
  gethostname(hn, sizeof(hn) - 1);
  uint64_t v[3] = {h->generation, (uint64_t)(uint32_t)h->creator_pid, h->creator_start};
  uint64_t x = 0xcbf29ce484222325ull; /* FNV-1a */
  for (const char *q = hn; *q; q++)
    x = (x ^ (uint8_t)*q) * 0x100000001b3ull;
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    for (int b = 0; b < 64; b += 8) /* bytes low first: the same hash as before on x86 */
      x = (x ^ ((v[i] >> b) & 0xffu)) * 0x100000001b3ull;
  return x ? x : 1;
}

/* Raises w's commit to v, unless it is sealed (lock-free: pushes and answers
 * may be read by any local rank). */
static void commit_raise(cons_wl_t *w, uint64_t v)
{
  uint64_t cur = atomic_load_explicit(&w->commit, memory_order_acquire);
  while (!(cur & CONS_COMMIT_SEALED) && cur < v &&
         !atomic_compare_exchange_weak_explicit(&w->commit, &cur, v, memory_order_acq_rel,
                                                memory_order_acquire))
    ;
}

/* A commit pushed by the leader's relay (read on any of this rank's calls). */
void cons_on_push(void *ctx, const acl_relay_push_t *p)
{
  acl_cons_t *c = ctx;
  if (!c->hdr || p->comm_id != c->comm_id || p->widx >= (uint32_t)c->set.max_workloads)
    return;
  cons_wl_t *w = cons_wl(c->hdr, p->widx);
  if (atomic_load_explicit(&w->present, memory_order_acquire))
    commit_raise(w, p->commit);
}

/* Calls of w this rank may run from held blocks: all on the leader host,
 * below the commit on a follower host. */
uint64_t cons_run_limit(acl_cons_t *c, cons_wl_t *w)
{
  if (cons_leader_here(c))
    return UINT64_MAX;
  acl_relay_client_poll(c->client, 0); /* pushes already sent to this rank */
  return atomic_load_explicit(&w->commit, memory_order_acquire) & ~CONS_COMMIT_SEALED;
}

/* The leader is unreachable: every workload of this host freezes at the
 * commit it knows when first touched after this (the same value for every
 * local rank: one atomic). */
void cons_leader_lost(acl_cons_t *c, const char *why)
{
  static atomic_flag said = ATOMIC_FLAG_INIT;
  atomic_store_explicit(&c->hdr->leader_lost, 1, memory_order_release);
  if (!atomic_flag_test_and_set(&said))
    acl_warn("consensus: comm %016llx lost its leader host (%s); this host runs the blocks every "
             "live host held (the commit) and NCCL's choice after them, for every workload",
             (unsigned long long)c->comm_id, why);
}

/* Asks the leader's relay for the block covering call q of key and stores
 * it in this host's segment, then tells the relay what the host holds.
 * 0 stored (resp set); 1 answered without a block (resp->status; err set
 * unless FULL/TOO_OLD); -1 no answer (err), the leader may be gone. */
int cons_fetch(acl_cons_t *c, const cons_local_t *e, const acl_wkey_t *key, cons_wl_t *w,
               uint64_t q, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int timeout_ms,
               acl_relay_resp_t *resp_out, char *err, size_t errlen)
{
  acl_relay_resp_t resp;
  acl_relay_req_t req = {.flags = (e && e->restricted) ? 0 : ACL_RELAY_F_RESTRICT,
                         .rank = c->rank,
                         .comm_id = c->comm_id,
                         .key = *key,
                         .call_idx = q,
                         .settings_hash = c->set_hash,
                         .host_id = c->host_id,
                         .held_end = w ? cons_ring_end(w) : 0};
  memcpy(req.cost, cost, sizeof(req.cost));
  atomic_fetch_add_explicit(&c->relay_calls, 1, memory_order_relaxed);
  uint64_t w0 = acl_mono_ns();
  int rc = acl_relay_client_call(c->client, &req, &resp, timeout_ms, err, errlen);
  atomic_fetch_add_explicit(&c->wait_ns, acl_mono_ns() - w0, memory_order_relaxed);
  *resp_out = resp;
  if (rc != 0)
    return -1;
  if (resp.status == ACL_RELAY_FULL || resp.status == ACL_RELAY_TOO_OLD)
    return 1;
  if (resp.status != ACL_RELAY_OK) {
    snprintf(err, errlen, "coordinator %s:%d refused call %llu of %s/%llu bytes: %s", c->coord_host,
             c->coord_port, (unsigned long long)q, acl_coll_name(key->coll),
             (unsigned long long)key->nbytes, acl_relay_status_name(resp.status));
    return 1;
  }
  if (resp.widx >= (uint32_t)c->set.max_workloads) {
    snprintf(err, errlen, "coordinator sent workload index %u beyond the table",
             (unsigned)resp.widx);
    resp_out->status = ACL_RELAY_BAD;
    return 1;
  }
  if (cons_lock(c, true, c->timeout_ms, err, errlen) != 0) {
    resp_out->status = ACL_RELAY_BUSY;
    return 1;
  }
  w = cons_wl(c->hdr, resp.widx);
  if (!atomic_load_explicit(&w->present, memory_order_acquire)) {
    memset(w, 0, sizeof(*w));
    w->key = req.key;
    memset(w->key.pad, 0, sizeof(w->key.pad));
    atomic_store_explicit(&w->present, 1, memory_order_release);
    if (atomic_load(&c->hdr->nworkloads) <= resp.widx)
      atomic_store_explicit(&c->hdr->nworkloads, resp.widx + 1, memory_order_release);
  }
  cons_blk_t nb = {.num = resp.block_num,
                   .start = resp.start,
                   .len = resp.len,
                   .cand_id = resp.cand_id,
                   .phase = resp.phase,
                   .sample_shift = resp.sample_shift,
                   .cand = resp.cand,
                   .safe_id = resp.safe_id,
                   .safe = resp.safe};
  cons_ring_put(w, &nb);
  w->lead_fig = resp.fig;
  cons_unlock(c->hdr);
  /* the server counts only what this host says it holds (relay.h) */
  acl_relay_held_t held = {.widx = resp.widx,
                           .comm_id = c->comm_id,
                           .host_id = c->host_id,
                           .held_end = cons_ring_end(w)};
  acl_relay_client_held(c->client, &held);
  commit_raise(w, resp.commit);
  return 0;
}

/* Follower host, converged block b held and committed: from its middle on,
 * fetch the next block once (short wait), so that its commit is there
 * before any host needs it and the leader host (which never waits) does not
 * run ahead of it. Before the middle, come back then (c_end). */
void cons_prefetch(acl_cons_t *c, cons_local_t *e, cons_wl_t *w, const cons_blk_t *b, uint64_t k,
                   const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO])
{
  uint64_t end = b->start + b->len, mid = b->start + b->len / 2;
  if (!acl_phase_decided((acl_phase_t)b->phase) || e->pf_end == end || cons_ring_end(w) != end ||
      atomic_load_explicit(&c->hdr->leader_lost, memory_order_relaxed))
    return;
  if (k < mid) {
    e->c_end = e->c_end < mid ? e->c_end : mid;
    return;
  }
  e->pf_end = end; /* once per block and rank, answered or not */
  acl_relay_resp_t resp;
  char err[256];
  int ms = c->timeout_ms < CONS_PREFETCH_MS ? c->timeout_ms : CONS_PREFETCH_MS;
  (void)cons_fetch(c, e, &e->key, w, end, cost, ms, &resp, err, sizeof(err));
}
