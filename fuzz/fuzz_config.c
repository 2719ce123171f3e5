/* AUTOCCL_* values through acl_config_parse with a fake getenv built from
 * the input: lines "NAME=VALUE" (last one wins). Checks what config.h
 * promises: every value in range, one report per problem naming the
 * variable, unset variables keep their default, parsing is deterministic. */
#include <stdint.h>
#include <string.h>

#include "core/config.h"
#include "fuzz_common.h"

#define MAXVARS 64

typedef struct env {
  int n;
  char *name[MAXVARS], *value[MAXVARS];
} env_t;

typedef struct rep {
  int count;
  const env_t *env;
} rep_t;

static const char *fake_getenv(void *user, const char *name)
{
  const env_t *e = user;
  const char *v = NULL;
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0)
      v = e->value[i];
  return v;
}

static void report(void *user, const char *msg)
{
  rep_t *r = user;
  r->count++;
  FZ_CHECK(strncmp(msg, "invalid ", 8) == 0, "report without the invalid prefix: %s", msg);
  bool named = false;
  for (int i = 0; i < r->env->n && !named; i++) {
    size_t l = strlen(r->env->name[i]);
    named = l && strncmp(msg + 8, r->env->name[i], l) == 0 && msg[8 + l] == '=';
  }
  FZ_CHECK(named, "report does not name a variable that was set: %s", msg);
}

static bool is_set(const env_t *e, const char *name)
{
  const char *v = fake_getenv((void *)e, name);
  return v && *v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 8192)
    return 0;
  char *buf = malloc(size + 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  env_t e = {0};
  for (char *line = buf; line && e.n < MAXVARS;) {
    char *nl = memchr(line, '\n', strlen(line));
    if (nl)
      *nl = '\0';
    char *eq = strchr(line, '=');
    if (eq) {
      *eq = '\0';
      e.name[e.n] = line;
      e.value[e.n] = eq + 1;
      e.n++;
    }
    line = nl ? nl + 1 : NULL;
  }

  acl_config_t d, c1, c2;
  acl_config_defaults(&d);
  acl_config_defaults(&c1);
  acl_config_defaults(&c2);
  rep_t r1 = {0, &e}, r2 = {0, &e};
  int n1 = acl_config_parse(&c1, fake_getenv, &e, report, &r1);
  int n2 = acl_config_parse(&c2, fake_getenv, &e, report, &r2);
  FZ_CHECK(n1 >= 0 && n1 == r1.count, "returned %d problems, reported %d", n1, r1.count);
  FZ_CHECK(n1 == n2 && memcmp(&c1, &c2, sizeof(c1)) == 0, "parse is not deterministic");
  /* No report callback must be fine too. */
  acl_config_t c3;
  acl_config_defaults(&c3);
  FZ_CHECK(acl_config_parse(&c3, fake_getenv, &e, NULL, NULL) == n1, "count without report");

  FZ_CHECK(c1.mode >= ACL_MODE_ONLINE && c1.mode <= ACL_MODE_OFF, "mode %d", (int)c1.mode);
  FZ_CHECK(c1.profiler >= ACL_PROF_AUTO && c1.profiler <= ACL_PROF_OFF, "profiler %d",
           (int)c1.profiler);
  FZ_CHECK(c1.log_level >= 0 && c1.log_level <= 3, "log level %d", c1.log_level);
  FZ_CHECK(c1.http_port >= -1 && c1.http_port <= 65535, "port %d", c1.http_port);
  FZ_CHECK(c1.warmup_calls >= 0 && c1.warmup_calls <= ACL_CONFIG_WARMUP_MAX, "warmup %d",
           c1.warmup_calls);
  FZ_CHECK(c1.samples_per_cand >= ACL_CONFIG_SAMPLES_MIN &&
               c1.samples_per_cand <= ACL_CONFIG_SAMPLES_MAX,
           "samples %d", c1.samples_per_cand);
  FZ_CHECK(c1.max_workloads >= 1 && c1.max_workloads <= ACL_CONFIG_MAX_WORKLOADS_MAX,
           "workloads %d", c1.max_workloads);
  FZ_CHECK(c1.timeout_ms >= 100, "timeout %d", c1.timeout_ms);
  FZ_CHECK(c1.local_rank >= 0 && c1.local_rank <= 4095, "local rank %d", c1.local_rank);
  FZ_CHECK(memchr(c1.http_bind, 0, sizeof(c1.http_bind)) && c1.http_bind[0], "bind");
  FZ_CHECK(memchr(c1.table_path, 0, sizeof(c1.table_path)), "table path unterminated");
  FZ_CHECK(memchr(c1.coordinator, 0, sizeof(c1.coordinator)), "coordinator unterminated");
  FZ_CHECK(memchr(c1.sim_feed, 0, sizeof(c1.sim_feed)), "sim feed unterminated");

  /* Unset variables keep their defaults. */
  FZ_CHECK(is_set(&e, "AUTOCCL_MODE") || c1.mode == d.mode, "mode changed while unset");
  FZ_CHECK(is_set(&e, "AUTOCCL_HTTP_PORT") || c1.http_port == d.http_port, "port changed");
  FZ_CHECK(is_set(&e, "AUTOCCL_HTTP_BIND") || strcmp(c1.http_bind, d.http_bind) == 0, "bind");
  FZ_CHECK(is_set(&e, "AUTOCCL_WARMUP") || c1.warmup_calls == d.warmup_calls, "warmup");
  FZ_CHECK(is_set(&e, "AUTOCCL_SAMPLES") || c1.samples_per_cand == d.samples_per_cand, "samples");
  FZ_CHECK(is_set(&e, "AUTOCCL_TABLE") || !c1.table_path[0], "table path");
  FZ_CHECK(is_set(&e, "AUTOCCL_COORDINATOR") || !c1.coordinator[0], "coordinator");
  /* Nothing set, nothing reported. */
  int nset = 0;
  for (int i = 0; i < e.n; i++)
    nset += e.value[i][0] != '\0';
  FZ_CHECK(nset > 0 || n1 == 0, "%d problems with nothing set", n1);
  free(buf);
  return 0;
}
