#include "core/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

void acl_config_defaults(acl_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->mode = ACL_MODE_ONLINE;
  cfg->http_port = -1;
  snprintf(cfg->http_bind, sizeof(cfg->http_bind), "127.0.0.1");
  cfg->log_level = ACL_LOG_INFO; /* NCCL_DEBUG filters further */
  cfg->warmup_calls = ACL_CONFIG_WARMUP_DEFAULT;
  cfg->samples_per_cand = ACL_CONFIG_SAMPLES_DEFAULT;
  cfg->explore_budget_pct = ACL_CONFIG_BUDGET_PCT_DEFAULT;
  cfg->max_workloads = ACL_CONFIG_MAX_WORKLOADS_DEFAULT;
  cfg->timeout_ms = ACL_CONFIG_TIMEOUT_MS_DEFAULT;
  cfg->profiler = ACL_PROF_AUTO;
  cfg->local_rank = 0;
}

bool acl_parse_int(const char *s, long lo, long hi, long *out)
{
  if (!s || !*s)
    return false;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || !end || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

typedef struct parser {
  acl_getenv_fn get;
  void *get_user;
  acl_config_report_fn report;
  void *report_user;
  int errors;
} parser_t;

static void bad(parser_t *p, const char *name, const char *value, const char *accepted,
                const char *dflt)
{
  char msg[512];
  snprintf(msg, sizeof(msg), "invalid %s=\"%.64s\": accepted values are %s; using %s", name,
           value, accepted, dflt);
  p->errors++;
  if (p->report)
    p->report(p->report_user, msg);
}

static int parse_enum(parser_t *p, const char *name, const char *const *names, int n, int dflt,
                      const char *accepted)
{
  const char *v = p->get(p->get_user, name);
  if (!v || !*v)
    return dflt;
  for (int i = 0; i < n; i++)
    if (strcasecmp(v, names[i]) == 0)
      return i;
  bad(p, name, v, accepted, names[dflt]);
  return dflt;
}

static int parse_intvar(parser_t *p, const char *name, long lo, long hi, int dflt)
{
  const char *v = p->get(p->get_user, name);
  long out;
  if (!v || !*v)
    return dflt;
  if (acl_parse_int(v, lo, hi, &out))
    return (int)out;
  char accepted[96], d[32];
  snprintf(accepted, sizeof(accepted), "integers from %ld to %ld", lo, hi);
  snprintf(d, sizeof(d), "%d", dflt);
  bad(p, name, v, accepted, d);
  return dflt;
}

static void parse_str(parser_t *p, const char *name, char *dst, size_t len)
{
  const char *v = p->get(p->get_user, name);
  if (!v || !*v)
    return;
  if (strlen(v) >= len) {
    char accepted[64];
    snprintf(accepted, sizeof(accepted), "strings shorter than %zu bytes", len);
    bad(p, name, v, accepted, dst[0] ? dst : "unset");
    return;
  }
  memcpy(dst, v, strlen(v) + 1);
}

static const char *const mode_names[] = {"online", "static", "off"};
static const char *const prof_names[] = {"auto", "cupti", "nccl", "off"};
static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *acl_mode_name(acl_mode_t m) { return (unsigned)m < 3 ? mode_names[m] : "?"; }
const char *acl_prof_src_name(acl_prof_src_t s) { return (unsigned)s < 4 ? prof_names[s] : "?"; }

/* The endpoint binds numeric addresses only; "localhost" is the one name
 * taken, as 127.0.0.1, so that a name is never resolved differently later.
 * "[::1]" is stored as "::1". false: not an address. */
static bool normalise_bind(char *s, size_t len)
{
  if (strcasecmp(s, "localhost") == 0) {
    snprintf(s, len, "127.0.0.1");
    return true;
  }
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
    memmove(s, s + 1, n - 2);
    s[n - 2] = '\0';
  }
  unsigned char a[16];
  return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static bool valid_hostport(const char *s)
{
  const char *colon = strrchr(s, ':');
  long port;
  return colon && colon != s && acl_parse_int(colon + 1, 1, 65535, &port);
}

int acl_config_parse(acl_config_t *cfg, acl_getenv_fn get, void *get_user,
                     acl_config_report_fn report, void *report_user)
{
  parser_t p = {get, get_user, report, report_user, 0};
  cfg->mode = (acl_mode_t)parse_enum(&p, "AUTOCCL_MODE", mode_names, 3, cfg->mode,
                                     "online, static, off");
  cfg->log_level = parse_enum(&p, "AUTOCCL_LOG", level_names, 4, cfg->log_level,
                              "error, warn, info, debug");
  cfg->profiler = (acl_prof_src_t)parse_enum(&p, "AUTOCCL_PROFILER", prof_names, 4,
                                             cfg->profiler, "auto, cupti, nccl, off");

  const char *port = get(get_user, "AUTOCCL_HTTP_PORT");
  long v;
  if (port && *port) {
    if (acl_parse_int(port, 0, 65535, &v))
      cfg->http_port = (int)v;
    else
      bad(&p, "AUTOCCL_HTTP_PORT", port, "a port number from 0 to 65535 (0 = any free port)",
          "no HTTP endpoint");
  }
  char bind[sizeof(cfg->http_bind)];
  memcpy(bind, cfg->http_bind, sizeof(bind));
  parse_str(&p, "AUTOCCL_HTTP_BIND", cfg->http_bind, sizeof(cfg->http_bind));
  if (!normalise_bind(cfg->http_bind, sizeof(cfg->http_bind))) {
    bad(&p, "AUTOCCL_HTTP_BIND", cfg->http_bind,
        "a numeric IPv4 or IPv6 address, or localhost (= 127.0.0.1)", bind);
    memcpy(cfg->http_bind, bind, sizeof(bind));
  }
  parse_str(&p, "AUTOCCL_TABLE", cfg->table_path, sizeof(cfg->table_path));
  parse_str(&p, "AUTOCCL_TABLE_OUT", cfg->table_out, sizeof(cfg->table_out));
  parse_str(&p, "AUTOCCL_REPORT", cfg->report_path, sizeof(cfg->report_path));
  char coord[sizeof(cfg->coordinator)];
  memcpy(coord, cfg->coordinator, sizeof(coord));
  parse_str(&p, "AUTOCCL_COORDINATOR", cfg->coordinator, sizeof(cfg->coordinator));
  if (cfg->coordinator[0] && !valid_hostport(cfg->coordinator)) {
    bad(&p, "AUTOCCL_COORDINATOR", cfg->coordinator, "host:port with a port from 1 to 65535",
        coord[0] ? coord : "MASTER_ADDR/MASTER_PORT");
    memcpy(cfg->coordinator, coord, sizeof(coord));
  }
  cfg->warmup_calls =
      parse_intvar(&p, "AUTOCCL_WARMUP", 0, ACL_CONFIG_WARMUP_MAX, cfg->warmup_calls);
  cfg->samples_per_cand = parse_intvar(&p, "AUTOCCL_SAMPLES", ACL_CONFIG_SAMPLES_MIN,
                                       ACL_CONFIG_SAMPLES_MAX, cfg->samples_per_cand);
  cfg->explore_budget_pct = parse_intvar(&p, "AUTOCCL_EXPLORE_BUDGET", 0,
                                         ACL_CONFIG_BUDGET_PCT_MAX, cfg->explore_budget_pct);
  cfg->max_workloads = parse_intvar(&p, "AUTOCCL_MAX_WORKLOADS", 1, ACL_CONFIG_MAX_WORKLOADS_MAX,
                                    cfg->max_workloads);
  cfg->timeout_ms = parse_intvar(&p, "AUTOCCL_TIMEOUT_MS", ACL_CONFIG_TIMEOUT_MS_MIN,
                                 ACL_CONFIG_TIMEOUT_MS_MAX, cfg->timeout_ms);

  /* Local rank: ours first, then the launchers' conventions. */
  static const char *const lr_vars[] = {"AUTOCCL_LOCAL_RANK", "LOCAL_RANK",
                                        "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                        "MPI_LOCALRANKID"};
  for (size_t i = 0; i < sizeof(lr_vars) / sizeof(lr_vars[0]); i++) {
    const char *s = get(get_user, lr_vars[i]);
    if (!s || !*s)
      continue;
    if (acl_parse_int(s, 0, 4095, &v)) {
      cfg->local_rank = (int)v;
      break;
    }
    bad(&p, lr_vars[i], s, "integers from 0 to 4095", "the next source, else 0");
  }
  parse_str(&p, "AUTOCCL_SIM_FEED", cfg->sim_feed, sizeof(cfg->sim_feed));
  parse_str(&p, "AUTOCCL_SHM_SALT", cfg->shm_salt, sizeof(cfg->shm_salt));
  for (const char *c = cfg->shm_salt; *c; c++) {
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))) {
      bad(&p, "AUTOCCL_SHM_SALT", cfg->shm_salt, "letters and digits", "unset");
      cfg->shm_salt[0] = '\0';
      break;
    }
  }
  return p.errors;
}

static const char *env_get(void *user, const char *name)
{
  (void)user;
  return getenv(name);
}

static void env_report(void *user, const char *msg)
{
  (void)user;
  acl_warn("%s", msg);
}

int acl_config_from_env(acl_config_t *cfg)
{
  acl_config_defaults(cfg);
  return acl_config_parse(cfg, env_get, NULL, env_report, NULL);
}
