/* Multi-host relay (docs/consensus.md): the host holding rank 0 of a
 * communicator decides; other hosts fetch the blocks it publishes over TCP.
 *
 * The process holding rank 0 registers the communicator with a process-wide
 * relay server listening on the coordinator address (AUTOCCL_COORDINATOR, else
 * MASTER_ADDR:MASTER_PORT+1). A follower rank asks "which block covers call k
 * of workload W of comm X?"; the server answers from the leader host's
 * segment, running the first-to-arrive step itself when nobody on the leader
 * host has reached call k yet, so the leader host never waits on followers.
 *
 * Wire format (all integers little-endian): a frame is u32 payload length,
 * then the payload. Request payload (ACL_RELAY_REQ_LEN bytes):
 *   u8 version=3, u8 type=1, u8 flags (bit0: restrict with cost), u8 coll,
 *   i32 rank, i32 num_pipe_ops, u32 reserved=0,
 *   u64 comm_id, u64 nbytes, u64 call_idx, u64 settings_hash,
 *   f32 cost[7][3] (IEEE-754 bits), u64 host_id (!= 0), u64 held_end
 * Response payload (ACL_RELAY_RESP_LEN bytes):
 *   u8 version=3, u8 type=2, u8 status, u8 phase, u32 widx,
 *   u64 block_num, u64 start, u32 len, u16 cand_id, i8 algo, i8 proto,
 *   i16 nchannels, u8 sample_shift (<= 15), u8 reserved=0, i32 chunk_log2,
 *   u64 commit,
 *   u16 safe_id, i8 safe_algo, i8 safe_proto, i16 safe_nchannels,
 *   i8 safe_chunk_log2, u8 reserved=0 (the block's safe candidate: what a
 *   call captured into a CUDA graph runs),
 *   f32 baseline_seconds, f32 best_seconds, f32 speedup, f32 speedup_low,
 *   f32 speedup_high (finite, >= 0; 0 unknown), u8 source, u8 flags (bit0:
 *   the speedup is paired), u16 reserved=0 (the leader's figures for the
 *   workload: what a follower host's views and job report show)
 * Push payload (ACL_RELAY_PUSH_LEN bytes, server to client, unasked):
 *   u8 version=3, u8 type=3, u16 reserved=0, u32 widx, u64 comm_id,
 *   u64 commit
 * Held payload (ACL_RELAY_HELD_LEN bytes, client to server, no answer):
 *   u8 version=3, u8 type=4, u16 reserved=0, u32 widx, u64 comm_id,
 *   u64 host_id (!= 0), u64 held_end
 * Parsing is strict: any other length, version, type, flag bit, reserved
 * value, collective or status is rejected.
 *
 * Commit horizon (docs/consensus.md, "Leader loss"): held_end is the first
 * call the sender's host holds no block for (its blocks are contiguous from
 * call 0), sent with every request and, once an answer's block is stored, in
 * a held frame: the server counts only what a host said it holds, never an
 * answer it sent (which may arrive after its asker gave up). The server keeps, per communicator and workload, the smallest
 * held_end over the live follower hosts (a host is live while it holds an
 * open connection) and never lowers it: the commit. Whenever a commit grows,
 * the server pushes it to every connection of the communicator in one pass
 * before it answers anybody. A follower host runs a block's call only below
 * the commit it knows. */
#ifndef ACL_TUNER_RELAY_H
#define ACL_TUNER_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

#define ACL_RELAY_VERSION 3 /* 3: a response carries the leader's figures */
#define ACL_RELAY_REQ_LEN 148
#define ACL_RELAY_RESP_LEN 80
#define ACL_RELAY_PUSH_LEN 24
#define ACL_RELAY_HELD_LEN 32
#define ACL_RELAY_FRAME_MAX 4096 /* a longer declared frame is a protocol error */

enum {
  ACL_RELAY_OK = 0,
  ACL_RELAY_FULL = 1,     /* workload table full: NCCL default */
  ACL_RELAY_TOO_OLD = 2,  /* the block covering that call was overwritten */
  ACL_RELAY_NO_COMM = 3,  /* communicator not registered (yet, or any more) */
  ACL_RELAY_MISMATCH = 4, /* settings differ from the leader host */
  ACL_RELAY_BUSY = 5,     /* leader segment lock not obtained in time */
  ACL_RELAY_BAD = 6,      /* malformed request */
  ACL_RELAY_AHEAD = 7,    /* call index implausibly far ahead */
  ACL_RELAY_NSTATUS
};

typedef struct acl_relay_req {
  uint8_t flags;
  int32_t rank;
  uint64_t comm_id;
  acl_wkey_t key; /* key.comm_id == comm_id */
  uint64_t call_idx;
  uint64_t settings_hash;
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  uint64_t host_id;  /* the sender's host (its segment), != 0 */
  uint64_t held_end; /* first call of key the sender's host holds no block for */
} acl_relay_req_t;
#define ACL_RELAY_F_RESTRICT 1u

/* The leader host's figures for a workload (acl_search_report): a follower
 * host runs no search, so its views and job report show these. */
typedef struct acl_relay_fig {
  float baseline_seconds, best_seconds;  /* 0: not measured */
  float speedup, speedup_lo, speedup_hi; /* 0: unknown */
  uint8_t source;                        /* acl_source_name */
  uint8_t paired;                        /* speedup measured interleaved */
} acl_relay_fig_t;

typedef struct acl_relay_resp {
  uint8_t status, phase;
  uint8_t sample_shift; /* which calls carry profiler events (consensus.h) */
  uint32_t widx;
  uint64_t block_num, start;
  uint32_t len;
  uint16_t cand_id;
  acl_candidate_t cand;
  uint64_t commit;      /* calls below it are held by every live follower host */
  uint16_t safe_id;     /* acl_decision_t.safe_id */
  acl_candidate_t safe; /* chunk_log2 within ACL_CHUNK_LOG2_MIN..MAX */
  acl_relay_fig_t fig;
} acl_relay_resp_t;

typedef struct acl_relay_push {
  uint32_t widx;
  uint64_t comm_id, commit;
} acl_relay_push_t;

typedef struct acl_relay_held {
  uint32_t widx;
  uint64_t comm_id, host_id, held_end;
} acl_relay_held_t;

/* Encode into buf (cap >= 4 + payload); returns the frame length, 0 if cap is
 * too small. */
size_t acl_relay_encode_req(const acl_relay_req_t *r, uint8_t *buf, size_t cap);
size_t acl_relay_encode_resp(const acl_relay_resp_t *r, uint8_t *buf, size_t cap);
size_t acl_relay_encode_push(const acl_relay_push_t *r, uint8_t *buf, size_t cap);
size_t acl_relay_encode_held(const acl_relay_held_t *r, uint8_t *buf, size_t cap);
/* Pure parsers of one frame at buf: > 0 bytes consumed, 0 incomplete (need
 * more bytes), -1 malformed (close the connection). */
long acl_relay_decode_req(const uint8_t *buf, size_t len, acl_relay_req_t *out);
long acl_relay_decode_resp(const uint8_t *buf, size_t len, acl_relay_resp_t *out);
long acl_relay_decode_push(const uint8_t *buf, size_t len, acl_relay_push_t *out);
long acl_relay_decode_held(const uint8_t *buf, size_t len, acl_relay_held_t *out);
const char *acl_relay_status_name(int status);

/* Coordinator address: coordinator ("host:port", "[v6]:port") when non-empty,
 * else master_addr with master_port + 1. 0, or -1 with a message. */
int acl_relay_parse_addr(const char *coordinator, const char *master_addr, const char *master_port,
                         char *host, size_t hostlen, int *port, char *err, size_t errlen);

/* The server side is a transport: it knows nothing of consensus. The host
 * holding rank 0 of a communicator registers a serve callback for that
 * communicator; requests for it are answered by that callback, called on the
 * relay thread with the registry lock held (unregister waits for it). */
typedef void (*acl_relay_serve_fn)(void *ctx, const acl_relay_req_t *req, acl_relay_resp_t *resp);
/* Rank 0: start (first time) the process-wide server on host:port and
 * register comm_id with serve(ctx, ...). self_host is the leader host's own
 * id: its other processes may ask before rank 0 has joined its segment, and
 * never count for the commit. 0, or -1 with err. */
int acl_relay_register(const char *host, int port, uint64_t comm_id, uint64_t self_host,
                       acl_relay_serve_fn serve, void *ctx, char *err, size_t errlen);
/* Drops the registration made with ctx; the last one stops the server. */
void acl_relay_unregister(void *ctx);

/* Test hook (tests/consensus/relay_load): called on the relay thread before
 * a push pass (sent -1), after each push it sent (sent 1, 2, ...) and after
 * the pass (sent INT32_MAX), so that a test can tell whether the leader died
 * inside one (docs/consensus.md, "Leader loss", item 1). Set before
 * acl_relay_register; NULL clears. */
typedef void (*acl_relay_pass_hook_fn)(void *ctx, uint32_t widx, uint64_t commit, int sent);
void acl_relay_test_pass_hook(acl_relay_pass_hook_fn fn, void *ctx);

/* A follower's connection (one per rank; reconnects as needed). Pushed
 * commits that arrive on it are handed to on_push(ctx, ...) (may be NULL),
 * in order, from whichever call reads them. */
typedef struct acl_relay_client acl_relay_client_t;
typedef void (*acl_relay_push_fn)(void *ctx, const acl_relay_push_t *push);
acl_relay_client_t *acl_relay_client_create(const char *host, int port, acl_relay_push_fn on_push,
                                            void *ctx);
void acl_relay_client_destroy(acl_relay_client_t *cl); /* NULL ok */
/* One request/answer within timeout_ms, retrying connection failures and
 * ACL_RELAY_NO_COMM until then. 0 with *resp (any status), -1 with err. */
int acl_relay_client_call(acl_relay_client_t *cl, const acl_relay_req_t *req,
                          acl_relay_resp_t *resp, int timeout_ms, char *err, size_t errlen);
/* Tells the server what this host holds now (no answer; dropped silently
 * when the connection is down: the commit then waits, never runs ahead). */
void acl_relay_client_held(acl_relay_client_t *cl, const acl_relay_held_t *h);
/* Reads the pushes already sent on the connection, waiting up to wait_ms
 * for one. 0; -1 when the connection is closed or broken (or never made). */
int acl_relay_client_poll(acl_relay_client_t *cl, int wait_ms);

/* ---- inside the relay: socket helpers (relay.c) ------------------------- */
struct addrinfo;
struct addrinfo *acl_relay_resolve(const char *host, int port, bool passive);
int acl_relay_nonblock(int fd);
void acl_relay_nodelay(int fd);
void acl_relay_nap_ms(int ms);

/* ---- relay.c <-> relay_commit.c (the server's commit horizon) ---------- */
typedef struct acl_relay_commit acl_relay_commit_t;
acl_relay_commit_t *acl_relay_commit_create(void);
void acl_relay_commit_destroy(acl_relay_commit_t *rc); /* NULL ok */
/* A connection of host_id opened (first request) / closed: returns a host
 * slot for the connection, -1 when the table is full (the host is then not
 * counted: it never holds the commit back, docs/consensus.md). */
int acl_relay_commit_join(acl_relay_commit_t *rc, uint64_t host_id);
/* The last connection of a host gone may let commits grow: the widx whose
 * commit grew are passed to grown(ctx, widx, commit). */
typedef void (*acl_relay_grown_fn)(void *ctx, uint32_t widx, uint64_t commit);
void acl_relay_commit_leave(acl_relay_commit_t *rc, int slot, acl_relay_grown_fn grown, void *ctx);
/* After an answer for slot: the host holds calls below held on widx.
 * Returns the commit of widx (calling grown first when it grew). */
uint64_t acl_relay_commit_held(acl_relay_commit_t *rc, int slot, uint32_t widx, uint64_t held,
                               acl_relay_grown_fn grown, void *ctx);

#endif
