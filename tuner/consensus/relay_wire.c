/* Multi-host relay: the wire format and the coordinator address, pure
 * functions (fuzzed by tests/consensus/test_relay.c). See relay.h. */
#include "tuner/consensus/relay.h"

#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "core/types.h"

/* ---- wire format (pure) --------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Frame types (relay.h): the payload's second byte. */
enum { FRAME_REQ = 1, FRAME_RESP = 2, FRAME_PUSH = 3, FRAME_HELD = 4 };

/* Starts a frame of plen payload bytes: length prefix, version and type
 * written, the rest of the payload zeroed. NULL when cap is too short. */
static uint8_t *frame_begin(uint8_t *buf, size_t cap, uint32_t plen, uint8_t type)
{
  if (cap < 4 + (size_t)plen)
    return NULL;
  uint8_t *p = buf + 4;
  memset(p, 0, plen);
  put32(buf, plen);
  p[0] = ACL_RELAY_VERSION;
  p[1] = type;
  return p;
}

/* The payload of a frame that must be plen bytes of the given type: 0 while
 * it is incomplete, -1 for another length, version or type (the caller checks
 * the other fields), 1 with *payload set. */
static int frame_open(const uint8_t *buf, size_t len, uint32_t plen, uint8_t type,
                      const uint8_t **payload)
{
  if (len < 4)
    return 0;
  if (get32(buf) != plen)
    return -1;
  if (len < 4 + (size_t)plen)
    return 0;
  if (buf[4] != ACL_RELAY_VERSION || buf[5] != type)
    return -1;
  *payload = buf + 4;
  return 1;
}

size_t acl_relay_encode_req(const acl_relay_req_t *r, uint8_t *buf, size_t cap)
{
  uint8_t *p = frame_begin(buf, cap, ACL_RELAY_REQ_LEN, FRAME_REQ);
  if (!p)
    return 0;
  p[2] = r->flags & ACL_RELAY_F_RESTRICT;
  p[3] = r->key.coll;
  put32(p + 4, (uint32_t)r->rank);
  put32(p + 8, (uint32_t)r->key.num_pipe_ops);
  put32(p + 12, 0);
  put64(p + 16, r->comm_id);
  put64(p + 24, r->key.nbytes);
  put64(p + 32, r->call_idx);
  put64(p + 40, r->settings_hash);
  for (int i = 0; i < ACL_NUM_AP; i++) {
    uint32_t bits;
    memcpy(&bits, &r->cost[i / ACL_NUM_PROTO][i % ACL_NUM_PROTO], 4);
    put32(p + 48 + 4 * i, bits);
  }
  put64(p + 132, r->host_id);
  put64(p + 140, r->held_end);
  return 4 + ACL_RELAY_REQ_LEN;
}

long acl_relay_decode_req(const uint8_t *buf, size_t len, acl_relay_req_t *out)
{
  const uint8_t *p = NULL;
  int open = frame_open(buf, len, ACL_RELAY_REQ_LEN, FRAME_REQ, &p);
  if (open <= 0)
    return open;
  if ((p[2] & ~ACL_RELAY_F_RESTRICT) || p[3] >= ACL_NUM_COLL || get32(p + 12) != 0)
    return -1;
  acl_relay_req_t r;
  memset(&r, 0, sizeof(r));
  r.flags = p[2];
  r.key.coll = p[3];
  r.rank = (int32_t)get32(p + 4);
  r.key.num_pipe_ops = (int32_t)get32(p + 8);
  r.comm_id = get64(p + 16);
  r.key.comm_id = r.comm_id;
  r.key.nbytes = get64(p + 24);
  r.call_idx = get64(p + 32);
  r.settings_hash = get64(p + 40);
  r.host_id = get64(p + 132);
  r.held_end = get64(p + 140);
  if (r.rank < -1 || r.host_id == 0)
    return -1;
  for (int i = 0; i < ACL_NUM_AP; i++) {
    uint32_t bits = get32(p + 48 + 4 * i);
    float f;
    memcpy(&f, &bits, 4);
    if (f != f) /* NaN never comes from NCCL */
      return -1;
    r.cost[i / ACL_NUM_PROTO][i % ACL_NUM_PROTO] = f;
  }
  *out = r;
  return 4 + ACL_RELAY_REQ_LEN;
}

size_t acl_relay_encode_resp(const acl_relay_resp_t *r, uint8_t *buf, size_t cap)
{
  uint8_t *p = frame_begin(buf, cap, ACL_RELAY_RESP_LEN, FRAME_RESP);
  if (!p)
    return 0;
  p[2] = r->status;
  p[3] = r->phase;
  put32(p + 4, r->widx);
  put64(p + 8, r->block_num);
  put64(p + 16, r->start);
  put32(p + 24, r->len);
  p[28] = (uint8_t)r->cand_id;
  p[29] = (uint8_t)(r->cand_id >> 8);
  p[30] = (uint8_t)r->cand.algo;
  p[31] = (uint8_t)r->cand.proto;
  p[32] = (uint8_t)(uint16_t)r->cand.nchannels;
  p[33] = (uint8_t)((uint16_t)r->cand.nchannels >> 8);
  p[34] = r->sample_shift;
  put32(p + 36, (uint32_t)r->cand.chunk_log2);
  put64(p + 40, r->commit);
  p[48] = (uint8_t)r->safe_id;
  p[49] = (uint8_t)(r->safe_id >> 8);
  p[50] = (uint8_t)r->safe.algo;
  p[51] = (uint8_t)r->safe.proto;
  p[52] = (uint8_t)(uint16_t)r->safe.nchannels;
  p[53] = (uint8_t)((uint16_t)r->safe.nchannels >> 8);
  p[54] = (uint8_t)(int8_t)r->safe.chunk_log2;
  const float fig[] = {r->fig.baseline_seconds, r->fig.best_seconds, r->fig.speedup,
                       r->fig.speedup_lo, r->fig.speedup_hi};
  for (int i = 0; i < 5; i++) {
    uint32_t bits;
    memcpy(&bits, &fig[i], 4);
    put32(p + 56 + 4 * i, bits);
  }
  p[76] = r->fig.source;
  p[77] = r->fig.paired ? 1 : 0;
  return 4 + ACL_RELAY_RESP_LEN;
}

long acl_relay_decode_resp(const uint8_t *buf, size_t len, acl_relay_resp_t *out)
{
  const uint8_t *p = NULL;
  int open = frame_open(buf, len, ACL_RELAY_RESP_LEN, FRAME_RESP, &p);
  if (open <= 0)
    return open;
  if (p[2] >= ACL_RELAY_NSTATUS || p[3] >= ACL_PHASE_COUNT || p[34] > 15 || p[35] || p[55] ||
      p[76] >= ACL_NUM_SOURCES || p[77] > 1 || p[78] || p[79])
    return -1;
  float fig[5];
  for (int i = 0; i < 5; i++) {
    uint32_t bits = get32(p + 56 + 4 * i);
    memcpy(&fig[i], &bits, 4);
    if (!(fig[i] >= 0.0f && fig[i] <= 1e30f)) /* NaN, negative or infinite */
      return -1;
  }
  acl_relay_resp_t r;
  memset(&r, 0, sizeof(r));
  r.status = p[2];
  r.phase = p[3];
  r.widx = get32(p + 4);
  r.block_num = get64(p + 8);
  r.start = get64(p + 16);
  r.len = get32(p + 24);
  r.cand_id = (uint16_t)(p[28] | p[29] << 8);
  r.cand.algo = (int8_t)p[30];
  r.cand.proto = (int8_t)p[31];
  r.cand.nchannels = (int16_t)(uint16_t)(p[32] | p[33] << 8);
  r.sample_shift = p[34];
  r.cand.chunk_log2 = (int32_t)get32(p + 36);
  r.commit = get64(p + 40);
  r.safe_id = (uint16_t)(p[48] | p[49] << 8);
  r.safe.algo = (int8_t)p[50];
  r.safe.proto = (int8_t)p[51];
  r.safe.nchannels = (int16_t)(uint16_t)(p[52] | p[53] << 8);
  r.safe.chunk_log2 = (int8_t)p[54];
  r.fig = (acl_relay_fig_t){.baseline_seconds = fig[0],
                            .best_seconds = fig[1],
                            .speedup = fig[2],
                            .speedup_lo = fig[3],
                            .speedup_hi = fig[4],
                            .source = p[76],
                            .paired = p[77]};
  if (r.status == ACL_RELAY_OK) {
    bool snccl = r.safe.algo == ACL_ALGO_NCCL;
    if ((!snccl && (r.safe.algo < 0 || r.safe.algo >= ACL_NUM_ALGO || r.safe.proto < 0 ||
                    r.safe.proto >= ACL_NUM_PROTO)) ||
        r.safe.nchannels < 0 || !acl_chunk_log2_valid(r.safe.chunk_log2))
      return -1;
    bool nccl = r.cand.algo == ACL_ALGO_NCCL;
    if (r.len == 0 || r.start + r.len < r.start ||
        (!nccl && (r.cand.algo < 0 || r.cand.algo >= ACL_NUM_ALGO || r.cand.proto < 0 ||
                   r.cand.proto >= ACL_NUM_PROTO)) ||
        r.cand.nchannels < 0 || !acl_chunk_log2_valid(r.cand.chunk_log2))
      return -1;
  }
  *out = r;
  return 4 + ACL_RELAY_RESP_LEN;
}

size_t acl_relay_encode_push(const acl_relay_push_t *r, uint8_t *buf, size_t cap)
{
  uint8_t *p = frame_begin(buf, cap, ACL_RELAY_PUSH_LEN, FRAME_PUSH);
  if (!p)
    return 0;
  put32(p + 4, r->widx);
  put64(p + 8, r->comm_id);
  put64(p + 16, r->commit);
  return 4 + ACL_RELAY_PUSH_LEN;
}

long acl_relay_decode_push(const uint8_t *buf, size_t len, acl_relay_push_t *out)
{
  const uint8_t *p = NULL;
  int open = frame_open(buf, len, ACL_RELAY_PUSH_LEN, FRAME_PUSH, &p);
  if (open <= 0)
    return open;
  if (p[2] || p[3])
    return -1;
  *out = (acl_relay_push_t){.widx = get32(p + 4), .comm_id = get64(p + 8), .commit = get64(p + 16)};
  return 4 + ACL_RELAY_PUSH_LEN;
}

size_t acl_relay_encode_held(const acl_relay_held_t *r, uint8_t *buf, size_t cap)
{
  uint8_t *p = frame_begin(buf, cap, ACL_RELAY_HELD_LEN, FRAME_HELD);
  if (!p)
    return 0;
  put32(p + 4, r->widx);
  put64(p + 8, r->comm_id);
  put64(p + 16, r->host_id);
  put64(p + 24, r->held_end);
  return 4 + ACL_RELAY_HELD_LEN;
}

long acl_relay_decode_held(const uint8_t *buf, size_t len, acl_relay_held_t *out)
{
  const uint8_t *p = NULL;
  int open = frame_open(buf, len, ACL_RELAY_HELD_LEN, FRAME_HELD, &p);
  if (open <= 0)
    return open;
  if (p[2] || p[3] || get64(p + 16) == 0)
    return -1;
  *out = (acl_relay_held_t){.widx = get32(p + 4),
                            .comm_id = get64(p + 8),
                            .host_id = get64(p + 16),
                            .held_end = get64(p + 24)};
  return 4 + ACL_RELAY_HELD_LEN;
}

const char *acl_relay_status_name(int s)
{
  static const char *names[] = {"ok",
                                "workload table full",
                                "call too old",
                                "communicator not registered on the leader host",
                                "settings differ from the leader host (AUTOCCL_* mismatch)",
                                "leader host busy (lock timeout)",
                                "malformed request",
                                "call index too far ahead"};
  return s >= 0 && s < ACL_RELAY_NSTATUS ? names[s] : "unknown status";
}

int acl_relay_parse_addr(const char *coord, const char *maddr, const char *mport, char *host,
                         size_t hostlen, int *port, char *err, size_t errlen)
{
  long pv = 0;
  if (coord && *coord) {
    const char *colon;
    const char *h = coord;
    size_t hl;
    if (coord[0] == '[') {
      const char *rb = strchr(coord, ']');
      if (!rb || rb[1] != ':')
        goto bad_coord;
      h = coord + 1;
      hl = (size_t)(rb - h);
      colon = rb + 1;
    } else {
      colon = strrchr(coord, ':');
      if (!colon || strchr(coord, ':') != colon)
        goto bad_coord;
      hl = (size_t)(colon - coord);
    }
    if (hl == 0 || hl >= hostlen || !acl_parse_int(colon + 1, 1, 65535, &pv))
      goto bad_coord;
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)pv;
    return 0;
  bad_coord:
    snprintf(err, errlen, "AUTOCCL_COORDINATOR=\"%.100s\" is not host:port (port 1..65535)", coord);
    return -1;
  }
  if (!maddr || !*maddr || !mport || !*mport) {
    snprintf(err, errlen,
             "several nodes need a coordinator: set AUTOCCL_COORDINATOR=host:port "
             "(or MASTER_ADDR and MASTER_PORT; the relay then uses MASTER_PORT+1)");
    return -1;
  }
  if (!acl_parse_int(mport, 1, 65534, &pv)) {
    snprintf(err, errlen, "MASTER_PORT=\"%.40s\" is not a port in 1..65534", mport);
    return -1;
  }
  if (strlen(maddr) >= hostlen) {
    snprintf(err, errlen, "MASTER_ADDR is too long");
    return -1;
  }
  snprintf(host, hostlen, "%s", maddr);
  *port = (int)pv + 1;
  return 0;
}
