/* Flags and URL normalisation. */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/top.h"

#define ARGV(...) ((char *const[]){"autoccl-top", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"autoccl-top", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(o, err, ...)                                                                         \
  acl_top_parse_args(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), o, err, sizeof(err))

static acl_top_opts_t o;

Test(args, defaults)
{
  char err[256];
  char *const argv[] = {"autoccl-top", NULL};
  cr_assert_eq(acl_top_parse_args(1, argv, &o, err, sizeof(err)), 0);
  cr_expect_eq(o.nurls, 1);
  cr_expect_str_eq(o.urls[0], "http://127.0.0.1:9464");
  cr_expect_float_eq(o.delay, 1.0, 1e-12);
  cr_expect_eq(o.iterations, -1);
  cr_expect_not(o.batch || o.once || o.json || o.no_color);
}

Test(args, all_flags)
{
  char err[256];
  cr_assert_eq(PARSE(&o, err, "--url", "127.0.0.1:9464", "-u", "http://10.0.0.2:9465/",
                     "--url=[::1]:9466", "-d", "0.5", "-b", "-n", "2", "--no-color"),
               0, "%s", err);
  cr_expect_eq(o.nurls, 3);
  cr_expect_str_eq(o.urls[0], "http://127.0.0.1:9464");
  cr_expect_str_eq(o.urls[1], "http://10.0.0.2:9465");
  cr_expect_str_eq(o.urls[2], "http://[::1]:9466");
  cr_expect_float_eq(o.delay, 0.5, 1e-12);
  cr_expect(o.batch);
  cr_expect_eq(o.iterations, 2);
  cr_expect(o.no_color);
  cr_assert_eq(PARSE(&o, err, "--once", "--json", "--delay=2", "-n3"), 0, "%s", err);
  cr_expect(o.once && o.json);
  cr_expect_float_eq(o.delay, 2.0, 1e-12);
  cr_expect_eq(o.iterations, 3);
  cr_assert_eq(PARSE(&o, err, "--help"), 0);
  cr_expect(o.help);
  cr_assert_eq(PARSE(&o, err, "-V"), 0);
  cr_expect(o.version);
}

static void bad(int argc, char *const *argv, const char *needle)
{
  char err[256] = "";
  cr_expect_eq(acl_top_parse_args(argc, argv, &o, err, sizeof(err)), -1, "accepted %s", argv[1]);
  cr_expect(strstr(err, needle) != NULL, "error '%s' lacks '%s'", err, needle);
  /* main prints the one "Try 'autoccl-top --help'." after every error */
  cr_expect(strstr(err, "--help") == NULL, "error '%s' carries a second --help hint", err);
}

Test(args, bad_usage_is_explained)
{
  bad(ARGC("-d", "0"), ARGV("-d", "0"), "bad delay '0'");
  bad(ARGC("-d", "abc"), ARGV("-d", "abc"), "bad delay");
  bad(ARGC("-d", "nan"), ARGV("-d", "nan"), "bad delay");
  bad(ARGC("--delay"), ARGV("--delay"), "needs a number");
  bad(ARGC("-n", "0"), ARGV("-n", "0"), "bad iteration count");
  bad(ARGC("-n", "5x"), ARGV("-n", "5x"), "bad iteration count");
  bad(ARGC("--frobnicate"), ARGV("--frobnicate"), "unknown option '--frobnicate'");
  bad(ARGC("localhost:9464"), ARGV("localhost:9464"), "unexpected argument");
  bad(ARGC("--json"), ARGV("--json"), "--json needs --once or --batch");
  bad(ARGC("--url", "a:1", "--url", "http://a:1/"), ARGV("--url", "a:1", "--url", "http://a:1/"),
      "given twice");
  bad(ARGC("--url", "ftp://x"), ARGV("--url", "ftp://x"), "only http://");
  bad(ARGC("--url"), ARGV("--url"), "needs a URL");
}

static void url_ok(const char *in, const char *want)
{
  char out[ACL_TOP_URL_MAX], err[256];
  cr_expect_eq(acl_top_normalize_url(in, out, sizeof(out), err, sizeof(err)), 0, "%s: %s", in, err);
  cr_expect_str_eq(out, want, "for %s", in);
}

static void url_bad(const char *in, const char *needle)
{
  char out[ACL_TOP_URL_MAX] = "untouched", err[256] = "";
  cr_expect_eq(acl_top_normalize_url(in, out, sizeof(out), err, sizeof(err)), -1, "%s", in);
  cr_expect(strstr(err, needle) != NULL, "'%s' -> '%s'", in, err);
}

Test(args, urls)
{
  url_ok("localhost", "http://localhost:9464");
  url_ok("node-1:9470", "http://node-1:9470");
  url_ok("http://node-1", "http://node-1:80");
  url_ok("HTTP://127.0.0.1:8080/autoccl//", "http://127.0.0.1:8080/autoccl");
  url_ok("[::1]:9464", "http://[::1]:9464");
  url_bad("", "empty");
  url_bad("https://x:1", "only http://");
  url_bad("http://:80", "missing host");
  url_bad("x:0", "1..65535");
  url_bad("x:65536", "1..65535");
  url_bad("x:99999999999999999999", "1..65535");
  url_bad("x:", "bad port");
  url_bad("x y", "space");
  url_bad("x\n", "control");
  url_bad("x:1?a=b", "unexpected '?'");
  url_bad("x:1/p?a=b", "query");
  url_bad("x@y", "unexpected '@'");
  url_bad("[zz]:1", "IPv6");
}

/* One URL for a host: --local-ranks N adds the ports of local ranks 1..N-1
 * (AUTOCCL_HTTP_PORT + local rank), prefix and IPv6 kept. */
Test(args, local_ranks_from_one_url)
{
  char err[256];
  cr_assert_eq(PARSE(&o, err, "--url", "127.0.0.1:9464", "--local-ranks", "4"), 0, "%s", err);
  cr_assert_eq(o.nurls, 4);
  cr_expect_str_eq(o.urls[0], "http://127.0.0.1:9464");
  cr_expect_str_eq(o.urls[3], "http://127.0.0.1:9467");
  cr_assert_eq(PARSE(&o, err, "-u", "http://[::1]:9000/p", "-l2"), 0, "%s", err);
  cr_assert_eq(o.nurls, 2);
  cr_expect_str_eq(o.urls[1], "http://[::1]:9001/p");
  cr_assert_eq(PARSE(&o, err, "-l", "3"), 0, "%s", err); /* the default URL */
  cr_expect_str_eq(o.urls[2], "http://127.0.0.1:9466");
  bad(ARGC("-l", "0"), ARGV("-l", "0"), "count of local ranks");
  bad(ARGC("-u", "h:65535", "-l", "2"), ARGV("-u", "h:65535", "-l", "2"), "past 65535");
  bad(ARGC("-u", "h:1", "-u", "h:2", "-l", "2"), ARGV("-u", "h:1", "-u", "h:2", "-l", "2"),
      "given twice");
}

/* One URL for a host without --local-ranks: the endpoint's /api/v1/host
 * adds its siblings (same host name and prefix, their ports); watched URLs
 * are not added twice, processes without an endpoint are skipped, and a
 * document that is not a host list adds nothing. */
Test(args, siblings_from_host_document)
{
  char err[256];
  cr_assert_eq(PARSE(&o, err, "--url", "http://[::1]:9464/p"), 0, "%s", err);
  cr_assert_eq(o.nuser, 1);
  const char *doc = "{\"version\":1,\"processes\":[{\"local_rank\":0,\"pid\":1,\"port\":9464},"
                    "{\"local_rank\":1,\"pid\":2,\"port\":9465},{\"local_rank\":2,\"pid\":3,"
                    "\"port\":null},{\"local_rank\":3,\"pid\":4,\"port\":70000}]}";
  cr_assert_eq(acl_top_add_siblings(&o, 0, doc, err, sizeof(err)), 1);
  cr_assert_eq(o.nurls, 2);
  cr_expect_str_eq(o.urls[1], "http://[::1]:9465/p");
  cr_assert_eq(acl_top_add_siblings(&o, 0, doc, err, sizeof(err)), 0); /* already watched */
  cr_assert_eq(acl_top_add_siblings(&o, 0, "{\"version\":1}", err, sizeof(err)), -1);
  cr_expect(strstr(err, "processes") != NULL, "%s", err);
  cr_assert_eq(acl_top_add_siblings(&o, 0, "not json", err, sizeof(err)), -1);
  cr_assert_eq(o.nurls, 2);
}

/* Connection lines: whole fields while they fit, then a cut at a word and
 * an ellipsis; the first field (the URL) may be cut anywhere. */
Test(args, fit_fields_cuts_at_a_word)
{
  char out[256];
  const char *f[] = {"http://127.0.0.1:9467", "no answer \xe2\x80\x94 retrying",
                     "Operation timed out after 5000 milliseconds"};
  acl_top_fit_fields(out, sizeof(out), f, 3, 200, true);
  cr_expect_str_eq(out, "http://127.0.0.1:9467  no answer \xe2\x80\x94 retrying  Operation timed "
                        "out after 5000 milliseconds");
  acl_top_fit_fields(out, sizeof(out), f, 3, 61, true); /* 45 columns before the error */
  cr_expect_str_eq(out, "http://127.0.0.1:9467  no answer \xe2\x80\x94 retrying  Operation "
                        "timed\xe2\x80\xa6");
  acl_top_fit_fields(out, sizeof(out), f, 3, 60, false);
  cr_expect_str_eq(out, "http://127.0.0.1:9467  no answer \xe2\x80\x94 retrying  Operation...");
  acl_top_fit_fields(out, sizeof(out), f, 3, 30, true); /* the label does not fit a word */
  cr_expect_str_eq(out, "http://127.0.0.1:9467  no\xe2\x80\xa6");
  acl_top_fit_fields(out, sizeof(out), f, 3, 10, true);
  cr_expect_str_eq(out, "http://12\xe2\x80\xa6");
}
