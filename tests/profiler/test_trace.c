/* The trace recorder (profiler/trace.c): path templates, the line format,
 * decision de-duplication, the AUTOCCL_TRACE_MAX bound and gzip output. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef ACL_HAVE_ZLIB
#include <zlib.h>
#endif

#include "profiler/trace.h"

static char dir[64];

static void mkdir_tmp(void)
{
  snprintf(dir, sizeof(dir), "/tmp/acl-trace-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(trace, .init = mkdir_tmp, .fini = rm_tmp);

/* Reads a whole (possibly gzip) file into a NUL-terminated buffer. */
static char *slurp(const char *path, size_t *len)
{
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap + 1);
#ifdef ACL_HAVE_ZLIB
  gzFile f = gzopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  int k;
  while ((k = gzread(f, b + n, (unsigned)(cap - n))) > 0) {
    n += (size_t)k;
    if (n == cap)
      b = realloc(b, (cap *= 2) + 1);
  }
  gzclose(f);
#else
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  size_t k;
  while ((k = fread(b + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap)
      b = realloc(b, (cap *= 2) + 1);
  }
  fclose(f);
#endif
  b[n] = '\0';
  if (len)
    *len = n;
  return b;
}

static int count_of(const char *text, const char *needle)
{
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

static acl_prof_sample_t sample(uint64_t call, double sec)
{
  acl_prof_sample_t s = {0};
  s.tag.call_idx = call;
  s.tag.widx = 3;
  s.tag.cand_id = 7;
  s.tag.coll = 4;
  s.tag.pipe_ops = 1;
  s.tag.nbytes = 65536;
  s.tag.cand = (acl_candidate_t){.algo = 1, .proto = 0, .nchannels = 32};
  s.seconds = sec;
  s.overlap = -1.0f;
  s.call_ns = 1000;
  s.gpu_start = 5000;
  s.gpu_stop = 5000 + (uint64_t)(sec * 1e9);
  s.ran_algo = 1;
  s.ran_proto = 0;
  s.ran_nch = 16;
  s.source = 2;
  return s;
}

Test(trace, expand)
{
  char out[64];
  cr_assert_eq(acl_trace_expand("/t/a-%p-%r.jsonl", 42, 3, out, sizeof(out)), 0);
  cr_assert_str_eq(out, "/t/a-42-3.jsonl");
  cr_assert_eq(acl_trace_expand("x%r%%y", 1, -1, out, sizeof(out)), 0);
  cr_assert_str_eq(out, "xx%y");
  cr_assert_eq(acl_trace_expand("%q", 1, 1, out, sizeof(out)), 0);
  cr_assert_str_eq(out, "%q");
  cr_assert_eq(acl_trace_expand("abcdefgh%p", 123456, 0, out, 10), -1);
}

Test(trace, format_and_dedup)
{
  char tmpl[128], path[128];
  snprintf(tmpl, sizeof(tmpl), "%s/t-%%r.jsonl.gz", dir);
  acl_trace_start(&(acl_trace_opts_t){.path = tmpl, .mode = "online", .profiler = "auto"});
  cr_assert(acl_trace_on());
  acl_trace_dec_t d = {.comm_id = 0xabc,
                       .nbytes = 65536,
                       .call_idx = 0,
                       .rank = 1,
                       .nranks = 2,
                       .pipe_ops = 1,
                       .widx = 3,
                       .cand_id = 0,
                       .coll = 4,
                       .phase = ACL_PHASE_WARMUP,
                       .cand = {.algo = ACL_ALGO_NCCL}};
  for (int i = 0; i < 5; i++) { /* same decision: written once */
    d.call_idx = (uint64_t)i;
    acl_trace_decision(&d);
  }
  d.call_idx = 5;
  d.cand_id = 7;
  d.phase = ACL_PHASE_EXPLORING;
  d.cand = (acl_candidate_t){.algo = 1, .proto = 0, .nchannels = 32};
  acl_trace_decision(&d);
  for (int i = 0; i < 100; i++) {
    acl_prof_sample_t s = sample(5 + (uint64_t)i, 1e-5 * (1 + i % 3));
    acl_trace_sample(0xabc, 1, 2, &s, s.seconds);
  }
  acl_trace_stop();
  cr_assert_not(acl_trace_on());
  acl_trace_stats_t st;
  acl_trace_stats(&st);
  cr_assert_eq(st.samples, 100);
  cr_assert_eq(st.decisions, 2);
  cr_assert_eq(st.dropped_ring + st.dropped_max, 0);
  snprintf(path, sizeof(path), "%s/t-1.jsonl.gz", dir);
  char *text = slurp(path, NULL);
  cr_assert(strncmp(text, "{\"format\":\"autoccl-trace\",\"version\":1,", 38) == 0, "%.80s", text);
  cr_assert(strstr(text, "\"rank\":1,") && strstr(text, "\"mode\":\"online\""));
  cr_assert_eq(count_of(text, "\n{\"t\":\"d\","), 2);
  cr_assert_eq(count_of(text, "\n{\"t\":\"s\","), 100);
  cr_assert_eq(count_of(text, "\n{\"t\":\"end\","), 1);
  cr_assert(strstr(text, "\"cand\":[\"RING\",\"LL\",32]"));
  cr_assert(strstr(text, "\"ran\":[\"RING\",\"LL\",16],\"status\":\"clamped\""));
  cr_assert(strstr(text, "\"phase\":\"exploring\""));
  cr_assert(strstr(text, "\"gpu\":[5000,15000]"));
  cr_assert(strstr(text, "\"overlap\":null"));
  cr_assert(strstr(text, "\"coll\":\"AllReduce\",\"bytes\":65536,\"pipe\":1,\"w\":3"));
  /* every line is one object */
  for (char *p = text; *p;) {
    char *nl = strchr(p, '\n');
    cr_assert_not_null(nl);
    cr_assert_eq(*p, '{');
    cr_assert_eq(nl[-1], '}');
    p = nl + 1;
  }
  free(text);
}

Test(trace, bounded)
{
  char tmpl[128];
  snprintf(tmpl, sizeof(tmpl), "%s/b.jsonl", dir);
  const uint64_t max = 8192;
  acl_trace_start(&(acl_trace_opts_t){.path = tmpl, .max_bytes = max});
  for (int i = 0; i < 2000; i++) {
    acl_prof_sample_t s = sample((uint64_t)i, 2e-5);
    acl_trace_sample(0xabc, 0, 2, &s, s.seconds);
  }
  acl_trace_stop();
  size_t len;
  char *text = slurp(tmpl, &len);
  char *end = strstr(text, "{\"t\":\"end\",");
  cr_assert_not_null(end);
  cr_assert_leq((size_t)(end - text), max, "%zu bytes before the end line", (size_t)(end - text));
  cr_assert(strstr(end, "\"full\":true"));
  acl_trace_stats_t st;
  acl_trace_stats(&st);
  cr_assert_gt(st.dropped_max, 1000);
  cr_assert_eq(st.samples, 2000 - st.dropped_ring);
  free(text);
}

Test(trace, off_without_path)
{
  unsetenv("AUTOCCL_TRACE");
  acl_trace_start(NULL);
  cr_assert_not(acl_trace_on());
  acl_prof_sample_t s = sample(0, 1e-5);
  acl_trace_sample(1, 0, 2, &s, 1e-5); /* no-op */
  acl_trace_stop();
}

Test(trace, env_and_bad_max)
{
  char tmpl[128];
  snprintf(tmpl, sizeof(tmpl), "%s/e-%%p.jsonl", dir);
  setenv("AUTOCCL_TRACE", tmpl, 1);
  setenv("AUTOCCL_TRACE_MAX", "12Q", 1); /* warned, default used */
  acl_trace_start(NULL);
  cr_assert(acl_trace_on());
  acl_trace_stop();
  unsetenv("AUTOCCL_TRACE");
  unsetenv("AUTOCCL_TRACE_MAX");
  char path[160];
  snprintf(path, sizeof(path), "%s/e-%d.jsonl", dir, (int)getpid());
  char *text = slurp(path, NULL);
  cr_assert(strstr(text, "\"max_bytes\":268435456"));
  free(text);
}

/* Planted objects (core/safefile.h): a FIFO at the trace path must neither
 * hang the writer nor finalize; a symbolic link is never followed. */
static double stop_seconds_with(const char *tmpl)
{
  acl_trace_start(&(acl_trace_opts_t){.path = tmpl, .mode = "online", .profiler = "auto"});
  for (int i = 0; i < 10; i++) {
    acl_prof_sample_t s = sample((uint64_t)i, 1e-5);
    acl_trace_sample(0xabc, 0, 2, &s, s.seconds);
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  acl_trace_stop();
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

Test(trace, fifo_path_neither_hangs_nor_is_replaced, .timeout = 10)
{
  char tmpl[128];
  snprintf(tmpl, sizeof(tmpl), "%s/fifo-%%r.jsonl", dir);
  char path[128];
  snprintf(path, sizeof(path), "%s/fifo-0.jsonl", dir);
  cr_assert_eq(mkfifo(path, 0666), 0);
  double s = stop_seconds_with(tmpl);
  cr_assert_lt(s, 2.0, "finalize took %.2f s", s);
  struct stat st;
  cr_assert_eq(lstat(path, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode), "the FIFO is left as it is");
  acl_trace_stats_t ts;
  acl_trace_stats(&ts);
  cr_assert_eq(ts.bytes, 0, "nothing written");
}

Test(trace, symlink_path_is_not_followed, .timeout = 10)
{
  char tmpl[128], path[128], target[128];
  snprintf(tmpl, sizeof(tmpl), "%s/link-%%r.jsonl", dir);
  snprintf(path, sizeof(path), "%s/link-0.jsonl", dir);
  snprintf(target, sizeof(target), "%s/precious", dir);
  FILE *f = fopen(target, "w");
  fputs("precious\n", f);
  fclose(f);
  chmod(target, 0600);
  cr_assert_eq(symlink(target, path), 0);
  double s = stop_seconds_with(tmpl);
  cr_assert_lt(s, 2.0, "finalize took %.2f s", s);
  struct stat st;
  cr_assert_eq(stat(target, &st), 0);
  cr_assert_eq(st.st_size, 9, "the link's target was overwritten");
  cr_assert_eq(lstat(path, &st), 0);
  cr_assert(S_ISLNK(st.st_mode));
}
