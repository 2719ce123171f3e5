/* core/: config parsing, tuning tables, string buffer, names and formulas. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/procres.h"
#include "core/strbuf.h"
#include "core/table.h"
#include "core/text.h"
#include "core/types.h"

typedef struct kv {
  const char *k, *v;
} kv_t;

static const char *fake_get(void *user, const char *name)
{
  for (const kv_t *e = user; e->k; e++)
    if (strcmp(e->k, name) == 0)
      return e->v;
  return NULL;
}

static char reports[8][512];
static int nreports;
static void collect(void *user, const char *msg)
{
  (void)user;
  if (nreports < 8)
    snprintf(reports[nreports], sizeof(reports[0]), "%s", msg);
  nreports++;
}

static int parse(const kv_t *env, acl_config_t *cfg)
{
  nreports = 0;
  acl_config_defaults(cfg);
  return acl_config_parse(cfg, fake_get, (void *)env, collect, NULL);
}

Test(config, defaults_when_unset)
{
  kv_t env[] = {{NULL, NULL}};
  acl_config_t c;
  cr_assert_eq(parse(env, &c), 0);
  cr_assert_eq(c.mode, ACL_MODE_ONLINE);
  cr_assert_eq(c.http_port, -1);
  cr_assert_str_eq(c.http_bind, "127.0.0.1");
  cr_assert_eq(c.warmup_calls, 5);
  cr_assert_eq(c.local_rank, 0);
}

Test(config, valid_values)
{
  kv_t env[] = {{"AUTOCCL_MODE", "STATIC"},
                {"AUTOCCL_HTTP_PORT", "9464"},
                {"AUTOCCL_HTTP_BIND", "0.0.0.0"},
                {"AUTOCCL_LOG", "debug"},
                {"AUTOCCL_COORDINATOR", "10.0.0.1:29501"},
                {"LOCAL_RANK", "3"},
                {"AUTOCCL_WARMUP", "0"},
                {NULL, NULL}};
  acl_config_t c;
  cr_assert_eq(parse(env, &c), 0);
  cr_assert_eq(c.mode, ACL_MODE_STATIC);
  cr_assert_eq(c.http_port, 9464);
  cr_assert_str_eq(c.http_bind, "0.0.0.0");
  cr_assert_eq(c.log_level, 3);
  cr_assert_str_eq(c.coordinator, "10.0.0.1:29501");
  cr_assert_eq(c.local_rank, 3);
  cr_assert_eq(c.warmup_calls, 0);
}

Test(config, invalid_values_named_and_defaulted)
{
  kv_t env[] = {{"AUTOCCL_MODE", "fast"},
                {"AUTOCCL_HTTP_PORT", "80x"},
                {"AUTOCCL_SAMPLES", "1"},
                {"AUTOCCL_COORDINATOR", "nohost"},
                {"AUTOCCL_HTTP_BIND", "1.2.3.4; rm -rf"},
                {NULL, NULL}};
  acl_config_t c;
  cr_assert_eq(parse(env, &c), 5);
  cr_assert_eq(nreports, 5);
  cr_assert_eq(c.mode, ACL_MODE_ONLINE);
  cr_assert_eq(c.http_port, -1);
  cr_assert_eq(c.samples_per_cand, 5);
  cr_assert_str_eq(c.coordinator, "");
  cr_assert_str_eq(c.http_bind, "127.0.0.1");
  cr_assert(strstr(reports[0], "AUTOCCL_MODE") && strstr(reports[0], "online, static, off"), "%s",
            reports[0]);
  cr_assert(strstr(reports[1], "AUTOCCL_HTTP_PORT"), "%s", reports[1]);
}

/* AUTOCCL_SAMPLES: 2..16 (ACL_CONFIG_SAMPLES_MAX, the samples a candidate
 * keeps); 16 is taken as is, 17 is refused with the range named. */
Test(config, samples_range_is_the_searchs)
{
  kv_t ok[] = {{"AUTOCCL_SAMPLES", "16"}, {NULL, NULL}};
  acl_config_t c;
  cr_assert_eq(parse(ok, &c), 0);
  cr_assert_eq(c.samples_per_cand, 16);
  cr_assert_eq(ACL_CONFIG_SAMPLES_MAX, 16);
  kv_t bad[] = {{"AUTOCCL_SAMPLES", "17"}, {NULL, NULL}};
  cr_assert_eq(parse(bad, &c), 1);
  cr_assert_eq(c.samples_per_cand, ACL_CONFIG_SAMPLES_DEFAULT);
  cr_assert(strstr(reports[0], "AUTOCCL_SAMPLES") && strstr(reports[0], "from 2 to 16"), "%s",
            reports[0]);
}

/* The settings table (core/settings.def): byte counts with suffixes, the
 * range refused with the range named, tool variables, names not in it. */
Test(config, table_types_and_tool_rows)
{
  kv_t ok[] = {{"AUTOCCL_TRACE_MAX", "64K"},
               {"AUTOCCL_TRACE", "/tmp/t-%r.jsonl"},
               {"AUTOCCL_SIM_TRACES", "/data/traces"},
               {"AUTOCCL_SHM_SALT", "h1"},
               {NULL, NULL}};
  acl_config_t c;
  cr_assert_eq(parse(ok, &c), 0, "%s", reports[0]);
  cr_assert_eq(c.trace_max, 65536);
  cr_assert_str_eq(c.trace_path, "/tmp/t-%r.jsonl");
  cr_assert_str_eq(c.sim_traces, "/data/traces");
  cr_assert_str_eq(c.shm_salt, "h1");
  kv_t bad[] = {{"AUTOCCL_TRACE_MAX", "0"},
                {"AUTOCCL_SHM_SALT", "../x"},
                {"AUTOCCL_LOG", "loud"},
                {NULL, NULL}};
  cr_assert_eq(parse(bad, &c), 3);
  cr_assert_eq(c.trace_max, ACL_CONFIG_TRACE_MAX_DEFAULT);
  cr_assert_str_eq(c.shm_salt, "");
  cr_assert(strstr(reports[0], "AUTOCCL_LOG") && strstr(reports[0], "error, warn, info, debug") &&
                strstr(reports[0], "using info"),
            "%s", reports[0]);
  cr_assert(strstr(reports[1], "AUTOCCL_TRACE_MAX") && strstr(reports[1], "1 to 1024T") &&
                strstr(reports[1], "using 256M"),
            "%s", reports[1]);
  cr_assert(strstr(reports[2], "AUTOCCL_SHM_SALT") && strstr(reports[2], "letters and digits"),
            "%s", reports[2]);
  cr_assert_eq(acl_config_env_one(&c, "AUTOCCL_NOT_A_SETTING"), -1);
  cr_assert_null(acl_setting_find("AUTOCCL_NOT_A_SETTING"));
}

/* Every row: its default, in words, is what acl_config_defaults stores. */
Test(config, every_row_has_a_default_and_wording)
{
  acl_config_t c;
  acl_config_defaults(&c);
  cr_assert_gt(acl_nsettings, 15);
  for (size_t i = 0; i < acl_nsettings; i++) {
    const acl_setting_t *s = &acl_settings[i];
    char d[256], a[256];
    acl_setting_default(s, d, sizeof(d));
    acl_setting_accepted(s, a, sizeof(a));
    cr_assert(d[0] && a[0] && s->doc[0] && s->reader[0], "%s", s->name);
    cr_assert_eq(strncmp(s->name, "AUTOCCL_", 8), 0, "%s", s->name);
    cr_assert_eq(acl_setting_find(s->name), s, "%s is listed twice", s->name);
    if (s->type == ACL_SETTING_INT && s->offset >= 0)
      cr_assert_eq(*(const int *)(const void *)((const char *)&c + s->offset), (int)s->dnum, "%s",
                   s->name);
  }
  cr_assert_eq(c.warmup_calls, ACL_CONFIG_WARMUP_DEFAULT);
  cr_assert_eq(c.trace_max, ACL_CONFIG_TRACE_MAX_DEFAULT);
  cr_assert_eq(c.http_port, -1);
}

Test(config, local_rank_sources_in_order)
{
  kv_t env[] = {{"OMPI_COMM_WORLD_LOCAL_RANK", "5"}, {"SLURM_LOCALID", "6"}, {NULL, NULL}};
  acl_config_t c;
  parse(env, &c);
  cr_assert_eq(c.local_rank, 5);
  kv_t env2[] = {{"AUTOCCL_LOCAL_RANK", "2"}, {"LOCAL_RANK", "7"}, {NULL, NULL}};
  parse(env2, &c);
  cr_assert_eq(c.local_rank, 2);
}

Test(config, int_parse_is_strict)
{
  long v;
  cr_assert(acl_parse_int("42", 0, 100, &v) && v == 42);
  cr_assert_not(acl_parse_int("42 ", 0, 100, &v));
  cr_assert_not(acl_parse_int("", 0, 100, &v));
  cr_assert_not(acl_parse_int("101", 0, 100, &v));
  cr_assert_not(acl_parse_int("99999999999999999999", 0, 100, &v));
}

Test(table, parses_rules_and_first_match_wins)
{
  const char *txt = "# c\n\nall_reduce 0 64K RING LL 0  # small\n"
                    "AllReduce 64K max Tree Simple 16\r\n* 0 max RING LL128 0\n";
  acl_table_t t;
  char err[200];
  cr_assert_eq(acl_table_parse(txt, strlen(txt), &t, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(t.nrules, 3);
  const acl_table_rule_t *r = acl_table_lookup(&t, 4, 65536);
  cr_assert_eq(r->cand.algo, 1); /* 64K is inside the first (inclusive) range */
  r = acl_table_lookup(&t, 4, 65537);
  cr_assert_eq(r->cand.algo, 0);
  cr_assert_eq(r->cand.nchannels, 16);
  r = acl_table_lookup(&t, 2, 10);
  cr_assert_eq(r->cand.proto, 1);
}

Test(table, errors_name_the_line)
{
  const char *bad[] = {"all_reduce 0 1M RING LL\n",    "all_reduce 0 1Q RING LL 0\n",
                       "x 0 1M RING LL 0\n",           "all_reduce 2M 1M RING LL 0\n",
                       "all_reduce 0 1M RING LL 65\n", "ok 0\n"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    acl_table_t t;
    char err[200] = "";
    cr_assert_neq(acl_table_parse(bad[i], strlen(bad[i]), &t, err, sizeof(err)), 0, "%s", bad[i]);
    cr_assert(strstr(err, "line 1"), "%s", err);
  }
}

Test(table, sizes)
{
  uint64_t v;
  cr_assert(acl_parse_size("64K", &v) && v == 65536);
  cr_assert(acl_parse_size("1GiB", &v) && v == (1ull << 30));
  cr_assert(acl_parse_size("max", &v) && v == UINT64_MAX);
  cr_assert_not(acl_parse_size("-1", &v));
  cr_assert_not(acl_parse_size("99999999999999999T", &v));
}

Test(strbuf, grows_and_escapes_json)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  for (int i = 0; i < 1000; i++)
    acl_sb_printf(&sb, "%d,", i);
  cr_assert(acl_sb_ok(&sb));
  cr_assert_eq(strncmp(sb.data, "0,1,2,", 6), 0);
  acl_sb_reset(&sb);
  acl_sb_json_str(&sb, "a\"b\\c\n\x01");
  cr_assert_str_eq(sb.data, "\"a\\\"b\\\\c\\n\\u0001\"");
  size_t n;
  char *s = acl_sb_steal(&sb, &n);
  cr_assert_eq(n, strlen(s));
  free(s);
  acl_sb_free(&sb);
}

Test(types, names_parse_and_busbw)
{
  cr_assert_eq(acl_coll_parse("AllReduce"), 4);
  cr_assert_eq(acl_coll_parse("all_gather"), 2);
  cr_assert_eq(acl_algo_parse("Ring"), 1);
  cr_assert_eq(acl_algo_parse("NVLS_TREE"), 5);
  cr_assert_eq(acl_proto_parse("Simple"), 2);
  cr_assert_eq(acl_proto_parse("bogus"), -1);
  cr_assert_float_eq(acl_busbw_factor(4, 8), 1.75, 1e-12);
  cr_assert_float_eq(acl_busbw_factor(2, 8), 0.875, 1e-12);
  cr_assert_float_eq(acl_busbw_factor(0, 8), 1.0, 1e-12);
  char buf[64];
  acl_candidate_t c = {.algo = 1, .proto = 2, .nchannels = 16};
  cr_assert_str_eq(acl_candidate_str(&c, buf, sizeof(buf)), "RING/SIMPLE/16ch");
  c.algo = ACL_ALGO_NCCL;
  cr_assert_str_eq(acl_candidate_str(&c, buf, sizeof(buf)), "NCCL default");
}

/* nccl-tests' bus-bandwidth factors (what acl_search_busbw and the
 * endpoint's busbw use). */
Test(types, busbw_factor)
{
  cr_assert_float_eq(acl_busbw_factor(4, 4), 1.5, 1e-12);       /* AllReduce 2(n-1)/n */
  cr_assert_float_eq(acl_busbw_factor(3, 8), 7.0 / 8.0, 1e-12); /* ReduceScatter (n-1)/n */
  cr_assert_float_eq(acl_busbw_factor(2, 2), 0.5, 1e-12);       /* AllGather */
  cr_assert_float_eq(acl_busbw_factor(0, 8), 1.0, 1e-12);       /* Broadcast */
  cr_assert_eq(acl_busbw_factor(4, 0), 0.0);
}

/* Log lines: a value with a newline must not forge a line of its own. */
static char g_logged[4096];
static void fake_nccl_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                          const char *fmt, ...)
{
  (void)level, (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  size_t n = strlen(g_logged);
  vsnprintf(g_logged + n, sizeof(g_logged) - n, fmt, ap);
  va_end(ap);
}

Test(log, environment_values_cannot_forge_lines)
{
  acl_log_set_nccl(fake_nccl_log);
  acl_log_set_level(ACL_LOG_INFO);
  setenv("AUTOCCL_MODE", "fast\n[0] NCCL WARN forged\r\x1b[2J\xff\xc2\x9b\xe2\x80\xae", 1);
  g_logged[0] = '\0';
  acl_config_t c;
  acl_config_from_env(&c);
  unsetenv("AUTOCCL_MODE");
  cr_assert(strstr(g_logged, "AUTOCCL_MODE"), "%s", g_logged);
  cr_assert_null(strchr(g_logged, '\n'), "a raw newline was logged: %s", g_logged);
  cr_assert_null(strchr(g_logged, '\r'));
  cr_assert_null(strchr(g_logged, '\x1b'));
  for (const unsigned char *p = (const unsigned char *)g_logged; *p; p++)
    cr_assert_lt(*p, 0x80, "a raw byte 0x%02x was logged: %s", *p, g_logged);
  cr_assert(strstr(g_logged, "fast\\n[0] NCCL WARN forged\\r\\x1B[2J\\xFF\\u{009B}\\u{202E}"), "%s",
            g_logged);
}

Test(config, http_bind_localhost_resolved_names_refused)
{
  kv_t env[] = {{"AUTOCCL_HTTP_BIND", "localhost"}, {NULL, NULL}};
  acl_config_t c;
  cr_assert_eq(parse(env, &c), 0);
  cr_assert_str_eq(c.http_bind, "127.0.0.1");
  kv_t env2[] = {{"AUTOCCL_HTTP_BIND", "[::1]"}, {NULL, NULL}};
  cr_assert_eq(parse(env2, &c), 0);
  cr_assert_str_eq(c.http_bind, "::1");
  kv_t env3[] = {{"AUTOCCL_HTTP_BIND", "myhost.example"}, {NULL, NULL}};
  cr_assert_eq(parse(env3, &c), 1);
  cr_assert_str_eq(c.http_bind, "127.0.0.1");
  cr_assert(strstr(reports[0], "AUTOCCL_HTTP_BIND") && strstr(reports[0], "numeric"), "%s",
            reports[0]);
}

Test(text, clean_keeps_safe_utf8_and_cuts_on_a_character)
{
  char out[7];
  acl_text_clean(out, sizeof(out), "ab\xc3\xa9\xe2\x82\xac!"); /* a b é € ! = 8 bytes, 6 fit */
  cr_assert_str_eq(out, "ab\xc3\xa9"); /* € does not fit whole: cut before it */
  char o2[64];
  acl_text_clean(o2, sizeof(o2),
                 "x\xc2\x9b"
                 "1m\xe2\x80\xaey\x1b\xff");
  cr_assert_str_eq(o2, "x?1m?y??");
  char hp[64];
  cr_assert_str_eq(acl_fmt_hostport(hp, sizeof(hp), "::1", 80), "[::1]:80");
  cr_assert_str_eq(acl_fmt_hostport(hp, sizeof(hp), "10.0.0.1", 80), "10.0.0.1:80");
}

/* The leak checks' counters (core/procres.h) move with what they count. */
static void *park(void *arg)
{
  int *fds = arg;
  char c;
  return read(fds[0], &c, 1) == 1 ? NULL : arg;
}

Test(procres, counts_follow_descriptors_threads_and_mappings)
{
  acl_procres_t a, b;
  acl_procres_read(&a);
  cr_assert_gt(a.fds, 0);
  cr_assert_gt(a.threads, 0);
  cr_assert_gt(a.rss_kb, 0);
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, park, fds), 0);
  char name[64];
  snprintf(name, sizeof(name), "/acl-procres-%d", (int)getpid());
  int shm = shm_open(name, O_CREAT | O_RDWR | O_EXCL, 0600);
  cr_assert_geq(shm, 0);
  cr_assert_eq(ftruncate(shm, 4096), 0);
  void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, shm, 0);
  cr_assert_neq(m, MAP_FAILED);
  acl_procres_read(&b);
  cr_assert_eq(b.fds, a.fds + 3, "a pipe and a segment: %d -> %d", a.fds, b.fds);
  cr_assert_eq(b.threads, a.threads + 1);
  cr_assert_eq(b.shm_maps, a.shm_maps + 1);
  cr_assert_eq(acl_dir_count("/dev/shm", name + 1), 1);
  cr_assert_eq(write(fds[1], "x", 1), 1);
  pthread_join(th, NULL);
  munmap(m, 4096);
  close(shm);
  shm_unlink(name);
  close(fds[0]);
  close(fds[1]);
  acl_procres_read(&b);
  cr_assert_eq(b.fds, a.fds);
  cr_assert_eq(b.threads, a.threads);
  cr_assert_eq(b.shm_maps, a.shm_maps);
  cr_assert_eq(acl_dir_count("/dev/shm", name + 1), 0);
  cr_assert_eq(acl_dir_count("/nonexistent-acl-dir", NULL), 0);
}
