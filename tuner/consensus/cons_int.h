/* Internals of rank consensus, shared by consensus.c (decisions),
 * cons_ring.c (published blocks), cons_shm.c (segment lifetime), cons_lock.c
 * (the lock, liveness) and cons_obs.c (samples, statistics).
 * The relay (relay.c) does not see them: consensus registers a serve
 * callback with it. Not used outside tuner/consensus/ (and its tests).
 * Layout notes: docs/consensus.md. */
#ifndef ACL_TUNER_CONS_INT_H
#define ACL_TUNER_CONS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/table.h"
#include "tuner/consensus/consensus.h"
#include "tuner/consensus/relay.h"

#define ACL_CONS_MAGIC 0x31534e4f434c4341ull /* "ACLCONS1" */
/* 2: cons_settings_t holds acl_search_params_t; 3: table hash; 4: a
 * process's endpoint port; 5: the relay's commit, and a block carries its
 * safe candidate (what a call captured into a CUDA graph runs); 6: a
 * workload's seal (a corrupt header freezes every workload consistently); 7: a
 * follower host's copy of the leader's figures; 8: the search counts its
 * waits planned on the cost table alone; 9: and the cost table's error a
 * neighbour measured; 10: validation counts the calls it paused; 11: and
 * knows which calls its latest pause ran; 12: budget lent between workloads
 * of a communicator; 13: the search keeps a re-tune's dropped baseline and
 * its cause; 14: the overlap drift rule's readings; 15: a sample's clock
 * (CUPTI or KernelCh) in the slots and the search; 16: the overlap rule's
 * 64 readings and its reference's size, and samples at offsets that move
 * from period to period (a rank of another build samples other calls); 17:
 * what a loan offer earns per call */
#define ACL_CONS_LAYOUT 17u
#define ACL_CONS_RING 512       /* published blocks kept per workload */
#define ACL_CONS_SLOTS 128      /* calls whose samples are being aggregated */
#define ACL_CONS_MAX_PROCS 128  /* processes recorded for stale detection */
#define ACL_CONS_ALT_NAMES 8    /* a name and its alternatives (-alt1..) */
#define ACL_CONS_RANK_BITS 4096 /* ranks whose masks are de-duplicated */
#define ACL_CONS_WARM_SPAN 4    /* NCCL-default block while ranks are missing */
#define ACL_CONS_DISABLED_SPAN                                                                     \
  4096u                               /* NCCL-default block of a disabled workload: long,
                                      * nothing to decide, one lock per 4096 calls */
#define ACL_CONS_MAX_AHEAD 1000000ull /* a request further ahead is refused */
/* The sample path may spin this long for the lock, then drops the sample
 * (counted): the target is <= 10 us per profiler event, and a local rank's
 * critical section takes about 1 us (docs/benchmarks-consensus.md). */
#define ACL_CONS_SAMPLE_SPIN_NS 5000ull
/* A lock held this long names its holder in one warning: ten times the
 * longest critical section seen (a search step, < 10 ms). */
#define ACL_CONS_STALL_WARN_MS 100
/* Snapshots and statistics (HTTP, finalize) wait at most this long. */
#define ACL_CONS_OBS_LOCK_MS 100
/* Detach at finalize waits at most this long for the lock, then leaves the
 * segment to the next job's stale detection: a share of finalize's 2 s. */
#define ACL_CONS_DETACH_MS 250

enum { CONS_ROLE_DECIDER = 0, CONS_ROLE_FOLLOWER = 1 };
#define CONS_COMMIT_SEALED (1ull << 63)
/* A follower waiting for a commit sleeps on its relay connection this long
 * between pulls: pushes wake it at once, the pull only notices a leader that
 * died without closing the connection (a host, not a process). */
#define CONS_COMMIT_POLL_MS 50
/* A converged block's next block is fetched ahead with at most this wait: a
 * loopback or LAN round trip is far shorter; a slower answer is not waited
 * for (the call it serves is covered already). */
#define CONS_PREFETCH_MS 50

/* One published block, read without the lock as a seqlock: tag is the block
 * number + 1 once the words are written, 0 while they are. */
typedef struct cons_block {
  _Atomic uint64_t tag;
  _Atomic uint64_t start;
  _Atomic uint64_t info; /* len:32 | cand_id:16 | algo:8 | proto:8 */
  _Atomic uint64_t res;  /* nchannels:16 | chunk:32 | phase:8 | sample_shift:8 */
  _Atomic uint64_t safe; /* cand_id:16 | algo:8 | proto:8 | nchannels:16 | chunk:8 */
} cons_block_t;

/* A plain copy of a block. */
typedef struct cons_blk {
  uint64_t num;   /* block number */
  uint64_t start; /* first call covered */
  uint32_t len;
  uint16_t cand_id;
  uint8_t phase;
  uint8_t sample_shift; /* profiler events on 1 call in 2^shift (acl_decision_t) */
  acl_candidate_t cand;
  uint16_t safe_id;     /* what a captured call runs (acl_decision_t.safe) */
  acl_candidate_t safe; /* its chunk scale fits 8 bits (ACL_CHUNK_LOG2_MIN..MAX) */
} cons_blk_t;

/* Samples of one call from the local ranks, until all reported. */
typedef struct cons_slot {
  uint64_t call1; /* call index + 1, 0 = empty */
  uint16_t cand_id;
  uint16_t nrep;
  float seconds; /* fastest so far: the last rank to arrive, free of skew */
  float overlap; /* of the fastest */
  float slowest; /* the first to arrive waited for the others: the skew */
  uint8_t cupti; /* the fastest's time is CUPTI's */
  uint8_t pad[7];
} cons_slot_t;

/* A call whose slowest rank took this many times its fastest: the early
 * ranks mostly waited (arrival skew), counted as skewed. */
#define ACL_CONS_SKEW_RATIO 2.0f

/* One workload in the segment. Everything but the atomics is only touched
 * under the segment lock. */
typedef struct cons_wl {
  acl_wkey_t key;
  _Atomic uint32_t present; /* follower segments fill sparse indices */
  uint32_t dirty;           /* set while the search or ring is being mutated */
  uint32_t disabled;        /* a lock holder died mid-update: NCCL default from now on */
  uint32_t nrestricted;
  uint8_t phase; /* of the latest block */
  uint8_t pad[7];
  _Atomic uint64_t nblocks;
  uint64_t next_call; /* first call not covered by a block */
  uint64_t samples_fed, samples_dropped;
  /* Sample classes (docs/profiler.md): late (slot reused by a newer call),
   * partial (a local rank never reported: fed, though it may be an early
   * rank's time), skewed (fed: the fastest rank is the collective). */
  uint64_t samples_late, samples_partial, samples_skewed;
  /* Starvation back-off: the search repeating a candidate it has no new
   * samples for gets ever longer blocks, so ranks far ahead of the samples
   * cannot run the block ring out. */
  uint64_t fed_at_last_block;
  uint32_t last_len;
  uint16_t last_cand;
  uint8_t last_sampled; /* the last block wanted samples (sample_shift < NEVER) */
  uint8_t pad2;
  uint32_t nblocks_search; /* blocks the search decided (not warm-up) */
  uint32_t pad3;
  /* Follower hosts: calls below it are held by every live follower host
   * (the leader's commit horizon, relay.h); CONS_COMMIT_SEALED once the
   * leader is lost: frozen, calls from it on run NCCL's choice. */
  _Atomic uint64_t commit;
  /* Leader host: the end of the published blocks, raised before a block is
   * published; CONS_COMMIT_SEALED once a rank found the header corrupt or
   * the lock unusable: every rank then runs the blocks below it and NCCL's
   * choice from it on (one atomic, so one horizon for every rank). Outside
   * the header, and kept when the slot's workload is created. */
  _Atomic uint64_t seal;
  /* Follower hosts: the leader's figures with the latest block fetched
   * (a follower runs no search; its views show these). */
  acl_relay_fig_t lead_fig;
  uint64_t rank_bits[ACL_CONS_RANK_BITS / 64];
  cons_slot_t slots[ACL_CONS_SLOTS];
  cons_block_t ring[ACL_CONS_RING];
  acl_search_t search;
} cons_wl_t;

typedef struct cons_proc {
  int32_t pid;
  uint32_t refs;
  uint64_t start_time; /* /proc/<pid>/stat field 22; 0 unknown */
  /* Its HTTP endpoint (acl_cons_set_endpoint): the host view lists the
   * processes of a host from here. 0: none (yet). */
  int32_t http_port;
  int32_t local_rank;
} cons_proc_t;

/* Settings that change decisions, the one copy every workload's search is
 * started from: equal on every rank (hashed byte for byte) or the join
 * fails. No implicit padding. */
typedef struct cons_settings {
  int32_t mode, nranks, nnodes, max_workloads;
  acl_search_params_t search;
} cons_settings_t;
_Static_assert(sizeof(cons_settings_t) == 16 + sizeof(acl_search_params_t),
               "cons_settings_t has no padding");

typedef struct cons_hdr {
  _Atomic uint64_t magic; /* written last by the creator */
  uint32_t layout, hdr_size;
  uint64_t wl_size, total_size;
  uint64_t comm_id, job_id, generation;
  int32_t creator_pid;
  uint32_t pad0;
  uint64_t creator_start;
  cons_settings_t set;
  _Atomic uint32_t retired;     /* unlinked or being replaced: do not join */
  _Atomic uint32_t leader;      /* rank 0 is attached on this host */
  _Atomic uint32_t nworkloads;  /* indices in use (sparse on followers) */
  _Atomic uint32_t leader_lost; /* follower host: a rank could not reach the leader */
  /* AUTOCCL_TABLE agreement: the creator's table hash (0 = none); a rank
   * joining with another raises table_off, and every rank then leaves
   * NCCL's choices instead of the table's (never some ranks only). */
  uint64_t table_hash;
  _Atomic uint32_t table_off;
  uint32_t pad2;
  _Atomic uint32_t lock; /* 0 free, else the holder's thread id (cons_lock.c) */
  uint32_t pad3;
  /* under the lock */
  uint32_t attached; /* ranks (acl_cons_t) attached on this host */
  uint32_t nprocs;
  cons_proc_t procs[ACL_CONS_MAX_PROCS];
  uint64_t refused;    /* workload creations refused: table full */
  uint64_t recoveries; /* dead lock holders recovered */
  uint64_t blocks_published;
} cons_hdr_t;

/* The segment is shared by processes (and, across plugin builds, refused by
 * ACL_CONS_LAYOUT, hdr_size and wl_size): its atomics must work between
 * processes, i.e. be lock-free (a lock-based _Atomic would take a
 * process-private lock), naturally aligned, and sit where readers look
 * without the lock. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LONG_LOCK_FREE == 2 &&
                   ATOMIC_LLONG_LOCK_FREE == 2,
               "shared-segment atomics must be lock-free");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic uint32_t) == 4,
               "shared-segment atomics have their plain size");
_Static_assert(sizeof(cons_block_t) == 40, "a published block is five 64-bit words");
_Static_assert(sizeof(cons_slot_t) == 32, "cons_slot_t has no implicit padding");
_Static_assert(sizeof(acl_wkey_t) == 24, "acl_wkey_t has no implicit padding");
_Static_assert(offsetof(cons_hdr_t, magic) == 0, "joiners read the magic first");
_Static_assert(offsetof(cons_hdr_t, lock) % 8 == 0 && offsetof(cons_hdr_t, retired) % 4 == 0,
               "header lock and atomics aligned");
_Static_assert(offsetof(cons_wl_t, present) % 4 == 0 && offsetof(cons_wl_t, nblocks) % 8 == 0 &&
                   offsetof(cons_wl_t, ring) % 8 == 0 && offsetof(cons_wl_t, search) % 8 == 0 &&
                   offsetof(cons_wl_t, commit) % 8 == 0,
               "workload atomics and the search state aligned");
_Static_assert(offsetof(cons_wl_t, seal) % 8 == 0, "the seal is one aligned atomic word");
_Static_assert(_Alignof(cons_wl_t) <= 64 && _Alignof(cons_hdr_t) <= 4096,
               "workloads sit at 64-byte strides after a page-aligned header");

/* A segment mapped once per process, shared by its ranks. */
typedef struct cons_map {
  char name[96];
  pid_t pid;
  cons_hdr_t *hdr;
  size_t size;
  int refs;
  struct cons_map *next;
} cons_map_t;

/* This rank's view of one workload (process-local open addressing). */
typedef struct cons_local {
  acl_wkey_t key;
  uint8_t used, resolved, restricted, pad;
  uint32_t widx;           /* ACL_CONS_WIDX_NONE: table full, NCCL default */
  uint64_t next;           /* this rank's next call index */
  uint64_t hint;           /* block number to look at first */
  uint64_t c_start, c_end; /* cached block */
  uint64_t pf_end;         /* follower: end of the block whose successor was fetched ahead */
  uint16_t c_cand_id;
  uint8_t c_phase;
  uint8_t c_sample_shift;
  acl_candidate_t c_cand;
  uint16_t c_safe_id;
  acl_candidate_t c_safe;
} cons_local_t;

struct acl_cons {
  cons_map_t *map;
  cons_hdr_t *hdr;
  uint64_t comm_id;
  int rank, nranks, nnodes;
  int role;
  int timeout_ms;
  acl_mode_t mode;
  cons_settings_t set;
  uint64_t set_hash;
  cons_local_t *tab;
  uint32_t tab_mask, tab_used, tab_limit;
  char coord_host[256];
  int coord_port;
  struct acl_relay_client *client; /* follower hosts */
  bool registered;                 /* rank 0: registered with the relay server */
  uint64_t host_id;                /* follower: this host's segment, for the commit */
  _Atomic uint64_t wait_ns, blocks_published, lock_acq, relay_calls;
  _Atomic uint64_t samples_busy;  /* samples dropped: the lock was held */
  _Atomic uint64_t busy_since_ns; /* first busy sample since the last acquisition */
  _Atomic uint64_t refused_keys;  /* workloads this rank found the table full for */
  _Atomic int stall_tid;          /* the holder last named in a warning */
  const acl_table_t *table;       /* AUTOCCL_TABLE of this process (seeds searches), or NULL */
  uint64_t table_hash;
  /* The header was found corrupt or the lock unusable: consensus is
   * sealed (cons_seal) and this rank no longer takes the lock. */
  _Atomic int broken;
};

/* cons_shm.c */
size_t cons_wl_size(void);
/* Workloads that fit a mapping of map_size bytes: the bound of every index
 * read from the header (which the ranks share and anything can scribble
 * on). */
uint32_t cons_wl_fit(size_t map_size);
/* The header, under the lock, against what this rank knows (its mapping,
 * settings and communicator): 0 with *nwl the workloads in use, or -1 with
 * err naming what is wrong. */
int cons_hdr_check(const acl_cons_t *c, uint32_t *nwl, char *err, size_t errlen);
/* Freezes every workload of c's segment at its published end (lock-free)
 * and marks c broken; says why once per rank. */
void cons_seal(acl_cons_t *c, const char *why);
/* Whether some rank has sealed c's segment. */
bool cons_sealed(const acl_cons_t *c);
cons_wl_t *cons_wl(cons_hdr_t *h, uint32_t widx);
/* The settings of p: 0, or -1 with err when a value is out of its limits. */
int cons_settings_from(cons_settings_t *s, const acl_cons_params_t *p, char *err, size_t errlen);
uint64_t cons_settings_hash(const cons_settings_t *s);
int cons_settings_diff(const cons_settings_t *a, const cons_settings_t *b, char *msg, size_t len);
/* Maps and joins (attached++); NULL with err on failure. */
cons_map_t *cons_seg_attach(acl_cons_t *c, const char *ns, char *err, size_t errlen);
void cons_seg_detach(acl_cons_t *c);

/* cons_lock.c */
/* The segment lock bounded by timeout_ms; 0 or -1 with err. Counts waits
 * in c when count; gives up early when some rank sealed the segment. */
int cons_lock(acl_cons_t *c, bool count, int timeout_ms, char *err, size_t errlen);
/* 0, or EINVAL: the word held another thread's id (it was scribbled on). */
int cons_unlock(cons_hdr_t *h);
/* The sample path's lock: spins ACL_CONS_SAMPLE_SPIN_NS at most, then
 * counts the sample as dropped and returns -1 (one warning names a holder
 * that keeps it past ACL_CONS_STALL_WARN_MS). */
int cons_lock_try(acl_cons_t *c, cons_hdr_t *h);
/* The lock without accounting: 0, or ETIMEDOUT. A holder that is gone is
 * taken over from, its workloads recovered (indices bounded by max_wl). */
int cons_lock_raw(cons_hdr_t *h, uint32_t max_wl, int timeout_ms);
void cons_lock_init(cons_hdr_t *h);
/* /proc/<pid>/stat start time; 0 unknown. */
uint64_t cons_proc_start_time(pid_t pid);
/* pid runs and (start != 0) is the same process that recorded start. */
bool cons_proc_alive(int32_t pid, uint64_t start);
/* Drops the entries (and attached ranks) of processes that are gone. */
void cons_prune_dead_locked(cons_hdr_t *h);
/* h->nprocs bounded by the array. */
uint32_t cons_nprocs(const cons_hdr_t *h);

/* consensus.c: the decider step, shared with the relay server. Called with
 * the lock held. Finds or creates the workload (ACL_CONS_WIDX_NONE when the
 * table is full), restricts with cost when restrict_rank != INT32_MIN (-1:
 * unknown rank, counted without de-duplication), and makes sure a block
 * covers call. 0 ok, 1 table full, -2 too old, -3 too far ahead, -4 the
 * header is corrupt (err) or the workload sealed: cons_seal's fallback. */
#define CONS_NO_RESTRICT INT32_MIN
/* cons_step.c: the decider step. */
bool cons_key_eq(const acl_wkey_t *a, const acl_wkey_t *b);
/* The workload of key among the first n slots (n bounded by the caller). */
cons_wl_t *cons_wl_find(cons_hdr_t *h, uint32_t n, const acl_wkey_t *key, uint32_t *widx);
/* Joining rank c's table hash against the segment's (lock held). */
void cons_table_join_locked(cons_hdr_t *h, const acl_cons_t *c, bool creator);
int cons_serve_locked(acl_cons_t *c, const acl_wkey_t *key, uint64_t call,
                      const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int restrict_rank,
                      uint32_t *widx, cons_blk_t *blk, uint64_t *published, char *err,
                      size_t errlen);
/* Test hook (tests/consensus/test_fail.c): take the segment lock and keep
 * it (the caller is then killed); with widx valid, also mark that workload
 * as being mutated. 0 on success. */
int acl_cons_test_hold_lock(acl_cons_t *c, uint32_t widx);
/* cons_follow.c: follower hosts (docs/consensus.md, "Leader loss") */
struct acl_relay_push;
struct acl_relay_resp;
/* This host's identity for the leader's commit (its segment); never 0. */
uint64_t cons_host_id(const cons_hdr_t *h);
/* The relay client's push callback (ctx: the acl_cons_t). */
void cons_on_push(void *ctx, const struct acl_relay_push *p);
/* Calls of w this rank may run from held blocks (UINT64_MAX on the leader
 * host); reads the pushes already delivered first. */
uint64_t cons_run_limit(acl_cons_t *c, cons_wl_t *w);
/* Marks the leader lost for this host (one WARN per process). */
void cons_leader_lost(acl_cons_t *c, const char *why);
/* Fetches and stores the block covering call q: 0 stored, 1 answered
 * without a block (resp->status), -1 no answer (err). */
int cons_fetch(acl_cons_t *c, const cons_local_t *e, const acl_wkey_t *key, cons_wl_t *w,
               uint64_t q, const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int timeout_ms,
               struct acl_relay_resp *resp, char *err, size_t errlen);
/* Converged block b held and committed: fetches the next one ahead, once. */
void cons_prefetch(acl_cons_t *c, cons_local_t *e, cons_wl_t *w, const cons_blk_t *b, uint64_t k,
                   const float cost[ACL_NUM_ALGO][ACL_NUM_PROTO]);

/* cons_ring.c */
/* Lock-free read of the block covering call: 0 hit, 1 not yet published,
 * -2 overwritten (call too old). */
int cons_ring_find(cons_wl_t *w, uint64_t call, uint64_t *hint, cons_blk_t *out);
/* Seqlock read of block number j: false when it is not (any more) there. */
bool cons_ring_read(cons_wl_t *w, uint64_t j, cons_blk_t *b);
/* The leader's figures for w (a follower host shows them; cons_obs.c). */
acl_relay_fig_t cons_figures_locked(const cons_wl_t *w);
/* This host decides (single node, or rank 0 attached to this segment). */
bool cons_leader_here(acl_cons_t *c);
/* Appends blk to w's ring (lock held), unless it is already there. */
void cons_ring_put(cons_wl_t *w, const cons_blk_t *blk);
/* Publishes blk as the ring's next block (lock held). */
void cons_ring_publish(cons_wl_t *w, const cons_blk_t *b);
/* First call not covered by this host's blocks (lock-free). */
uint64_t cons_ring_end(cons_wl_t *w);

#endif
