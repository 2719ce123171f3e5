/* The multi-host relay's wire parser and coordinator address. First byte
 * (mod 5) picks the parser: request, answer, address, push, held. Checks: a frame that decodes re-encodes to the same
 * bytes (the format is strict, so canonical); every shorter prefix of it is
 * "incomplete", never a different frame; a frame never consumes more than
 * it was given; addresses come back terminated with a port in range, and a
 * failure always says why. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tuner/consensus/relay.h"

/* The checks every frame kind gets: what decodes re-encodes to the same
 * bytes (and not into a buffer one byte short), every shorter prefix is
 * incomplete, nothing past n is consumed. Returns the bytes consumed. */
#define FRAME_CHECK(kind, T, LEN)                                                                  \
  static long check_##kind(const uint8_t *d, size_t n, T *r)                                       \
  {                                                                                                \
    long got = acl_relay_decode_##kind(d, n, r);                                                   \
    FZ_CHECK(got >= -1 && got <= (long)n, "decode_" #kind " returned %ld for %zu bytes", got, n);  \
    if (got <= 0)                                                                                  \
      return got;                                                                                  \
    uint8_t buf[4 + (LEN)];                                                                        \
    size_t len = acl_relay_encode_##kind(r, buf, sizeof(buf));                                     \
    FZ_CHECK(len == (size_t)got && memcmp(buf, d, len) == 0, #kind " does not round-trip");        \
    FZ_CHECK(acl_relay_encode_##kind(r, buf, sizeof(buf) - 1) == 0, "encode into a short buffer"); \
    for (size_t i = 0; i < (size_t)got; i++) {                                                     \
      T r2;                                                                                        \
      FZ_CHECK(acl_relay_decode_##kind(d, i, &r2) == 0, "prefix of %zu bytes is not incomplete",   \
               i);                                                                                 \
    }                                                                                              \
    return got;                                                                                    \
  }
FRAME_CHECK(req, acl_relay_req_t, ACL_RELAY_REQ_LEN)
FRAME_CHECK(resp, acl_relay_resp_t, ACL_RELAY_RESP_LEN)
FRAME_CHECK(push, acl_relay_push_t, ACL_RELAY_PUSH_LEN)
FRAME_CHECK(held, acl_relay_held_t, ACL_RELAY_HELD_LEN)

static void req(const uint8_t *d, size_t n)
{
  acl_relay_req_t r;
  if (check_req(d, n, &r) > 0)
    FZ_CHECK(r.key.coll < ACL_NUM_COLL && r.key.comm_id == r.comm_id && r.rank >= -1 && r.host_id,
             "decoded request out of range");
}

static void resp(const uint8_t *d, size_t n)
{
  acl_relay_resp_t r;
  if (check_resp(d, n, &r) <= 0)
    return;
  FZ_CHECK(r.status < ACL_RELAY_NSTATUS, "status %u accepted", r.status);
  FZ_CHECK(strcmp(acl_relay_status_name(r.status), "unknown status") != 0, "status name");
}

static void push(const uint8_t *d, size_t n)
{
  acl_relay_push_t r;
  acl_relay_resp_t ro;
  if (check_push(d, n, &r) > 0)
    FZ_CHECK(acl_relay_decode_resp(d, n, &ro) == -1, "a push parsed as an answer");
}

static void held(const uint8_t *d, size_t n)
{
  acl_relay_held_t r;
  acl_relay_req_t rq;
  if (check_held(d, n, &r) <= 0)
    return;
  FZ_CHECK(r.host_id != 0, "host id 0 accepted");
  FZ_CHECK(acl_relay_decode_req(d, n, &rq) == -1, "a held frame parsed as a request");
}

static void addr(const uint8_t *d, size_t n)
{
  /* Three NUL-separated strings: coordinator, MASTER_ADDR, MASTER_PORT. */
  char *s = malloc(n + 3);
  if (!s)
    return;
  memcpy(s, d, n);
  s[n] = s[n + 1] = s[n + 2] = '\0';
  const char *coord = s;
  const char *maddr = coord + strlen(coord) + 1;
  if (maddr > s + n)
    maddr = s + n + 1;
  const char *mport = maddr + strlen(maddr) + 1;
  if (mport > s + n + 1)
    mport = s + n + 2;
  char host[64], err[160];
  memset(host, 'X', sizeof(host));
  err[0] = '\0';
  int port = -7;
  int rc = acl_relay_parse_addr(coord, maddr, mport, host, sizeof(host), &port, err, sizeof(err));
  if (rc == 0) {
    FZ_CHECK(memchr(host, 0, sizeof(host)) && host[0], "host empty or unterminated");
    FZ_CHECK(port >= 1 && port <= 65535, "port %d", port);
  } else {
    FZ_CHECK(rc == -1 && err[0] && memchr(err, 0, sizeof(err)), "failure without a reason");
  }
  /* A tiny host buffer must fail cleanly or fit. */
  char tiny[4];
  if (acl_relay_parse_addr(coord, maddr, mport, tiny, sizeof(tiny), &port, err, sizeof(err)) == 0)
    FZ_CHECK(strlen(tiny) < sizeof(tiny), "host overflowed");
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size > 8192)
    return 0;
  switch (data[0] % 5) {
  case 0:
    req(data + 1, size - 1);
    break;
  case 1:
    resp(data + 1, size - 1);
    break;
  case 2:
    addr(data + 1, size - 1);
    break;
  case 3:
    push(data + 1, size - 1);
    break;
  default:
    held(data + 1, size - 1);
  }
  return 0;
}
