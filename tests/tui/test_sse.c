/* acl_top_sse_feed: the incremental text/event-stream parser. */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/top.h"

typedef struct rec {
  int n;
  char type[8][64];
  char data[8][256];
  char id[8][64];
} rec_t;

static void on_ev(void *ud, const acl_top_sse_event_t *ev)
{
  rec_t *r = ud;
  if (r->n < 8) {
    snprintf(r->type[r->n], 64, "%s", ev->type);
    snprintf(r->data[r->n], 256, "%s", ev->data);
    snprintf(r->id[r->n], 64, "%s", ev->id);
    cr_expect_eq(strlen(ev->data), ev->data_len);
  }
  r->n++;
}

static const char stream[] = ": hello\n"
                             "event: sample\n"
                             "data: {\"step\": 1}\n"
                             "\n"
                             ": heartbeat\n"
                             "\n"
                             "event: decision\r\n"
                             "id: 7\r\n"
                             "data: line one\r\n"
                             "data:line two\r\n"
                             "\r\n"
                             "data: plain\r"
                             "\r";

static void check_stream(const rec_t *r, const acl_top_sse_t *p)
{
  cr_assert_eq(r->n, 3);
  cr_expect_str_eq(r->type[0], "sample");
  cr_expect_str_eq(r->data[0], "{\"step\": 1}");
  cr_expect_str_eq(r->type[1], "decision");
  cr_expect_str_eq(r->data[1], "line one\nline two");
  cr_expect_str_eq(r->id[1], "7");
  cr_expect_str_eq(r->type[2], "message");
  cr_expect_str_eq(r->data[2], "plain");
  cr_expect_eq(p->comments, 2);
  cr_expect_eq(p->events, 3);
}

Test(sse, whole_stream_with_comments_crlf_and_cr)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  cr_assert_eq(acl_top_sse_feed(&p, stream, strlen(stream)), 0);
  check_stream(&r, &p);
  acl_top_sse_free(&p);
}

Test(sse, every_split_point_gives_the_same_events)
{
  size_t n = strlen(stream);
  for (size_t cut = 0; cut <= n; cut++) {
    rec_t r = {0};
    acl_top_sse_t p;
    acl_top_sse_init(&p, on_ev, &r);
    cr_assert_eq(acl_top_sse_feed(&p, stream, cut), 0);
    cr_assert_eq(acl_top_sse_feed(&p, stream + cut, n - cut), 0);
    check_stream(&r, &p);
    acl_top_sse_free(&p);
  }
}

Test(sse, byte_at_a_time)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  for (size_t i = 0; i < strlen(stream); i++)
    cr_assert_eq(acl_top_sse_feed(&p, stream + i, 1), 0);
  check_stream(&r, &p);
  acl_top_sse_free(&p);
}

Test(sse, heartbeat_only_dispatches_nothing)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  const char *s = ": heartbeat\n\n: heartbeat\r\n\r\n";
  cr_assert_eq(acl_top_sse_feed(&p, s, strlen(s)), 0);
  cr_expect_eq(r.n, 0);
  cr_expect_eq(p.comments, 2);
  /* An event: field without data is not an event either. */
  s = "event: sample\n\n";
  acl_top_sse_feed(&p, s, strlen(s));
  cr_expect_eq(r.n, 0);
  acl_top_sse_free(&p);
}

Test(sse, incomplete_event_waits_for_blank_line)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  const char *s = "event: sample\ndata: {}\n";
  acl_top_sse_feed(&p, s, strlen(s));
  cr_expect_eq(r.n, 0);
  acl_top_sse_feed(&p, "\n", 1);
  cr_expect_eq(r.n, 1);
  /* After a reset (new connection) a half event is forgotten. */
  acl_top_sse_feed(&p, "data: half\n", 11);
  acl_top_sse_reset(&p);
  acl_top_sse_feed(&p, "\n", 1);
  cr_expect_eq(r.n, 1);
  acl_top_sse_free(&p);
}

Test(sse, bom_field_without_colon_and_retry)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  const char *s = "\xEF\xBB\xBF"
                  "data\nretry: 2500\nretry: x\nunknown: 1\n\n";
  acl_top_sse_feed(&p, s, strlen(s));
  cr_assert_eq(r.n, 1);
  cr_expect_str_eq(r.data[0], ""); /* "data" alone is an empty data line */
  cr_expect_eq(p.retry_ms, 2500);
  acl_top_sse_free(&p);
}

Test(sse, overlong_line_is_dropped_and_parsing_continues)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  size_t big = ACL_TOP_SSE_MAX_LINE + 100;
  char *chunk = malloc(4096);
  cr_assert_not_null(chunk);
  memset(chunk, 'x', 4096);
  acl_top_sse_feed(&p, "data: ", 6);
  for (size_t sent = 0; sent < big; sent += 4096)
    acl_top_sse_feed(&p, chunk, 4096);
  free(chunk);
  const char *s = "\ndata: ok\n\n";
  acl_top_sse_feed(&p, s, strlen(s));
  cr_expect_eq(p.dropped_lines, 1);
  cr_assert_eq(r.n, 1);
  cr_expect_str_eq(r.data[0], "ok");
  cr_expect_lt(p.line.cap, (size_t)ACL_TOP_SSE_MAX_LINE * 2 + 1);
  acl_top_sse_free(&p);
}

Test(sse, crlf_split_exactly_between_cr_and_lf)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  /* If the LF after a chunk-final CR were read as a second line end, the
   * event would dispatch early with only "a". */
  acl_top_sse_feed(&p, "data: a\r", 8);
  acl_top_sse_feed(&p, "\ndata: b\r", 9);
  acl_top_sse_feed(&p, "\n\r", 2);
  acl_top_sse_feed(&p, "\n", 1);
  cr_assert_eq(r.n, 1);
  cr_expect_str_eq(r.data[0], "a\nb");
  acl_top_sse_free(&p);
}

Test(sse, random_bytes_never_break_the_parser)
{
  rec_t r = {0};
  acl_top_sse_t p;
  acl_top_sse_init(&p, on_ev, &r);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  static const char *const tok[] = {"data: x", "\n",        "\r", "\r\n", ": hb", "event: e",
                                    "id: 1",   "{\"a\":1}", "da", "ta:",  "\xff", "retry: 9"};
  char chunk[512];
  for (int it = 0; it < 2000; it++) {
    size_t len = 0;
    for (int k = 0; k < 16; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const char *t = tok[(x >> 24) % 12];
      memcpy(chunk + len, t, strlen(t));
      len += strlen(t);
    }
    /* Feed it in two pieces split at a random point. */
    size_t cut = (size_t)(x % (len + 1));
    cr_assert_eq(acl_top_sse_feed(&p, chunk, cut), 0);
    cr_assert_eq(acl_top_sse_feed(&p, chunk + cut, len - cut), 0);
  }
  cr_expect_gt(p.events, 0);
  cr_expect_eq(p.events, (uint64_t)r.n);
  acl_top_sse_free(&p);
}
