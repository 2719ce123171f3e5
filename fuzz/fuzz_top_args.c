/* autoccl-top's flags and URLs: the input is split at NUL bytes into argv.
 * Checks: a failure always says why; a success yields 1..ACL_TOP_MAX_URLS
 * normalised URLs (http://, no trailing slash, terminated, no duplicates)
 * and a delay within its documented range; a normalised URL (within the
 * input length limit) normalises to itself. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tui/top.h"

#define MAXARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 4096)
    return 0;
  char *buf = malloc(size + 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[MAXARGS + 2];
  int argc = 0;
  argv[argc++] = "autoccl-top";
  for (size_t i = 0; i <= size && argc < MAXARGS + 1;) {
    argv[argc++] = buf + i;
    i += strlen(buf + i) + 1;
  }
  argv[argc] = NULL;
  static acl_top_opts_t o; /* large: 64 URLs of 512 bytes */
  char err[256] = "";
  int rc = acl_top_parse_args(argc, argv, &o, err, sizeof(err));
  if (rc != 0) {
    FZ_CHECK(rc == -1 && err[0], "failure without a reason");
  } else {
    FZ_CHECK(o.nurls >= 1 && o.nurls <= ACL_TOP_MAX_URLS, "%d urls", o.nurls);
    FZ_CHECK(o.delay >= 0.1 && o.delay <= 3600, "delay %g", o.delay);
    FZ_CHECK(o.iterations == -1 || o.iterations >= 1, "iterations %ld", o.iterations);
    for (int i = 0; i < o.nurls; i++) {
      const char *u = o.urls[i];
      size_t l = strnlen(u, ACL_TOP_URL_MAX);
      FZ_CHECK(l < ACL_TOP_URL_MAX, "url %d unterminated", i);
      FZ_CHECK(strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0,
               "url without scheme: %s", u);
      FZ_CHECK(l > 0 && u[l - 1] != '/', "trailing slash: %s", u);
      /* Idempotent, within the input length limit (a long input grows by
       * "http://" and ":9464" and may then be over it: not a bug). */
      char again[ACL_TOP_URL_MAX], e2[160];
      if (l < ACL_TOP_URL_MAX - 16)
        FZ_CHECK(acl_top_normalize_url(u, again, sizeof(again), e2, sizeof(e2)) == 0 &&
                     strcmp(again, u) == 0,
                 "normalising %s again gives %s", u, again);
      for (int k = 0; k < i; k++)
        FZ_CHECK(strcmp(o.urls[k], u) != 0, "duplicate url %s", u);
    }
  }
  /* Each argument alone as a URL. */
  for (int i = 1; i < argc; i++) {
    char out[64], e[160] = "";
    int r = acl_top_normalize_url(argv[i], out, sizeof(out), e, sizeof(e));
    FZ_CHECK(r == 0 ? memchr(out, 0, sizeof(out)) != NULL : e[0] != '\0',
             "normalize_url(%s): rc %d, no reason or unterminated", argv[i], r);
  }
  free(buf);
  return 0;
}
