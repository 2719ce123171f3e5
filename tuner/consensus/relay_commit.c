/* Multi-host relay: the server's commit horizon (relay.h, docs/consensus.md
 * "Leader loss"). Per communicator and workload, the smallest held_end over
 * the live follower hosts, never lowered. Pure bookkeeping: the relay thread
 * calls it (registry lock held) and sends the pushes. */
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "tuner/consensus/relay.h"

/* A live host holds at least one of the server's connections: no more hosts
 * than connections (SRV_MAX_CONN in relay.c). */
#define RC_MAX_HOSTS 1024
/* Workload indices tracked: the largest AUTOCCL_MAX_WORKLOADS. */
#define RC_MAX_WL ACL_CONFIG_MAX_WORKLOADS_MAX

typedef struct rc_host {
  uint64_t id;
  int nconn;      /* open connections; 0: not live, the slot may be reused */
  uint32_t nheld; /* entries of held */
  uint64_t *held; /* per widx: first call the host holds no block for, | RC_IN */
} rc_host_t;
/* The host counts for that workload's commit: it held the whole commit once.
 * A host that joins late (or restarts) catches up first, and never holds
 * the others back meanwhile. */
#define RC_IN (1ull << 63)

struct acl_relay_commit {
  rc_host_t hosts[RC_MAX_HOSTS];
  int nhosts;
  uint64_t commit[RC_MAX_WL];
};

acl_relay_commit_t *acl_relay_commit_create(void) { return calloc(1, sizeof(acl_relay_commit_t)); }

void acl_relay_commit_destroy(acl_relay_commit_t *rc)
{
  if (!rc)
    return;
  for (int i = 0; i < rc->nhosts; i++)
    free(rc->hosts[i].held);
  free(rc);
}

int acl_relay_commit_join(acl_relay_commit_t *rc, uint64_t host_id)
{
  int free_slot = -1;
  for (int i = 0; i < rc->nhosts; i++) {
    if (rc->hosts[i].id == host_id) {
      rc->hosts[i].nconn++;
      return i;
    }
    if (rc->hosts[i].nconn == 0 && free_slot < 0)
      free_slot = i;
  }
  if (free_slot < 0) {
    if (rc->nhosts >= RC_MAX_HOSTS)
      return -1;
    free_slot = rc->nhosts++;
  }
  rc_host_t *h = &rc->hosts[free_slot];
  free(h->held);
  *h = (rc_host_t){.id = host_id, .nconn = 1};
  return free_slot;
}

/* Grows the commit of widx to the smallest held_end over live hosts. */
static void recompute(acl_relay_commit_t *rc, uint32_t widx, acl_relay_grown_fn grown, void *ctx)
{
  uint64_t lo = UINT64_MAX;
  for (int i = 0; i < rc->nhosts; i++) {
    const rc_host_t *h = &rc->hosts[i];
    if (h->nconn <= 0)
      continue;
    uint64_t v = widx < h->nheld ? h->held[widx] : 0;
    if (v & RC_IN)
      lo = (v & ~RC_IN) < lo ? v & ~RC_IN : lo;
  }
  if (lo == UINT64_MAX || lo <= rc->commit[widx])
    return; /* nobody live, or no growth: a commit is never lowered */
  rc->commit[widx] = lo;
  if (grown)
    grown(ctx, widx, lo);
}

void acl_relay_commit_leave(acl_relay_commit_t *rc, int slot, acl_relay_grown_fn grown, void *ctx)
{
  if (!rc || slot < 0 || slot >= rc->nhosts || rc->hosts[slot].nconn <= 0)
    return;
  if (--rc->hosts[slot].nconn > 0)
    return;
  for (uint32_t w = 0; w < RC_MAX_WL; w++)
    if (rc->commit[w] || w < rc->hosts[slot].nheld)
      recompute(rc, w, grown, ctx);
}

uint64_t acl_relay_commit_held(acl_relay_commit_t *rc, int slot, uint32_t widx, uint64_t held,
                               acl_relay_grown_fn grown, void *ctx)
{
  if (!rc || widx >= RC_MAX_WL)
    return 0;
  if (slot >= 0 && slot < rc->nhosts && rc->hosts[slot].nconn > 0) {
    rc_host_t *h = &rc->hosts[slot];
    if (widx >= h->nheld) {
      uint32_t n = h->nheld ? h->nheld : 8;
      while (n <= widx)
        n *= 2;
      uint64_t *p = realloc(h->held, n * sizeof(*p));
      if (!p)
        return rc->commit[widx]; /* not recorded: the commit waits, never runs ahead */
      memset(p + h->nheld, 0, (n - h->nheld) * sizeof(*p));
      h->held = p;
      h->nheld = n;
    }
    held &= ~RC_IN;
    uint64_t in = h->held[widx] & RC_IN;
    if (held > (h->held[widx] & ~RC_IN))
      h->held[widx] = held | in;
    if (!in && held >= rc->commit[widx])
      h->held[widx] |= RC_IN;
    recompute(rc, widx, grown, ctx);
  }
  return rc->commit[widx];
}
