/* autoccl-top's SSE feed parser (WHATWG rules), fed the input in pieces at
 * fuzzer-chosen split points. Checks: the events seen do not depend on how
 * the stream is split (the same bytes fed whole or byte by byte give the
 * same events), every event's data is NUL-terminated at data_len, and the
 * parser survives reset and free at any point. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tui/top.h"

typedef struct rec {
  uint64_t hash; /* FNV-1a over every event's type, data, id */
  int n;
} rec_t;

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return (h ^ 0xff) * 0x100000001b3ull;
}

static void on_event(void *ud, const acl_top_sse_event_t *ev)
{
  rec_t *r = ud;
  FZ_CHECK(ev->type && ev->data && ev->id, "NULL field in event");
  FZ_CHECK(ev->data[ev->data_len] == '\0', "data not terminated at data_len");
  FZ_CHECK(strlen(ev->data) <= ev->data_len, "data_len too short");
  r->hash = fnv(r->hash, ev->type, strlen(ev->type));
  r->hash = fnv(r->hash, ev->data, ev->data_len);
  r->hash = fnv(r->hash, ev->id, strlen(ev->id));
  r->n++;
}

static rec_t run(const uint8_t *d, size_t n, const uint8_t *splits, size_t nsplits, int mode)
{
  rec_t r = {0xcbf29ce484222325ull, 0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_event, &r);
  size_t pos = 0, k = 0;
  while (pos < n) {
    size_t step = mode == 0 ? n : mode == 1 ? 1 : (size_t)(nsplits ? splits[k++ % nsplits] : 7) + 1;
    if (step > n - pos)
      step = n - pos;
    char *piece = malloc(step); /* exact-size pieces: over-reads are caught */
    if (!piece)
      break;
    memcpy(piece, d + pos, step);
    FZ_CHECK(acl_top_sse_feed(&p, piece, step) == 0, "feed failed");
    free(piece);
    pos += step;
  }
  acl_top_sse_free(&p);
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size > 64 * 1024)
    return 0;
  /* First byte: how many split sizes follow; the rest is the stream. */
  size_t nsplits = data[0] % 16;
  if (1 + nsplits > size)
    return 0;
  const uint8_t *splits = data + 1, *stream = data + 1 + nsplits;
  size_t n = size - 1 - nsplits;
  rec_t whole = run(stream, n, splits, nsplits, 0);
  rec_t bytes = run(stream, n, splits, nsplits, 1);
  rec_t chunks = run(stream, n, splits, nsplits, 2);
  FZ_CHECK(whole.n == bytes.n && whole.hash == bytes.hash,
           "byte-by-byte feeding gives %d events, whole gives %d (or different content)", bytes.n,
           whole.n);
  FZ_CHECK(whole.n == chunks.n && whole.hash == chunks.hash, "chunked feeding differs");
  /* Reset in the middle, then feed again: no leak, no crash. */
  rec_t r = {0, 0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_event, &r);
  acl_top_sse_feed(&p, (const char *)stream, n / 2);
  acl_top_sse_reset(&p);
  acl_top_sse_feed(&p, (const char *)stream + n / 2, n - n / 2);
  acl_top_sse_free(&p);
  return 0;
}
