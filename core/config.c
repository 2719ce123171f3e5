#include "core/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/table.h"

/* The choices of the ENUM rows, in the order of their enums. */
static const char *const acl_config_mode_names[] = {"online", "static", "off", NULL};
static const char *const acl_config_prof_names[] = {"auto", "cupti", "nccl", "off", NULL};
static const char *const acl_config_off_on_names[] = {"off", "on", NULL}; /* AUTOCCL_CHUNK */
static const char *const acl_config_level_names[] = {"error", "warn", "info", "debug", NULL};

static bool acl_config_check_bind(char *s, size_t len);
static bool acl_config_check_hostport(char *s, size_t len);
static bool acl_config_check_salt(char *s, size_t len);
static bool acl_config_check_window(char *s, size_t len);

/* Field sizes each type writes; STR (0) fills any char array. */
#define ACL_SETSZ_ENUM sizeof(int)
#define ACL_SETSZ_INT sizeof(int)
#define ACL_SETSZ_BYTES sizeof(uint64_t)
#define ACL_SETSZ_FLAG sizeof(bool)
#define ACL_SETSZ_STR 0

#define ACL_SETTING_ROW(NAME, TYPE, FIELD, DNUM, DSTR, LO, HI, CHOICES, CHECK, ACCEPTED, UNSET,    \
                        UNIT, READER, DOC)                                                         \
  {#NAME,                                                                                          \
   ACL_SETTING_##TYPE,                                                                             \
   (long)offsetof(acl_config_t, FIELD),                                                            \
   sizeof(((acl_config_t *)0)->FIELD),                                                             \
   (long long)(DNUM),                                                                              \
   DSTR,                                                                                           \
   (long long)(LO),                                                                                \
   (long long)(HI),                                                                                \
   CHOICES,                                                                                        \
   CHECK,                                                                                          \
   ACCEPTED,                                                                                       \
   UNSET,                                                                                          \
   UNIT,                                                                                           \
   READER,                                                                                         \
   DOC},
#define ACL_SETTING_DOC(NAME, TYPE, ACCEPTED, READER, DOC)                                         \
  {#NAME, ACL_SETTING_##TYPE, -1, 0, 0, "", 0, 0, NULL, NULL, ACCEPTED, NULL, "", READER, DOC},
const acl_setting_t acl_settings[] = {
#include "core/settings.def"
};
#undef ACL_SETTING_ROW
#undef ACL_SETTING_DOC
const size_t acl_nsettings = sizeof(acl_settings) / sizeof(acl_settings[0]);

/* A row's type writes exactly its field's width. */
#define ACL_SETTING_ROW(NAME, TYPE, FIELD, ...)                                                    \
  _Static_assert(ACL_SETSZ_##TYPE == 0 || sizeof(((acl_config_t *)0)->FIELD) == ACL_SETSZ_##TYPE,  \
                 #NAME ": field width does not match its type");
#define ACL_SETTING_DOC(...)
#include "core/settings.def"
#undef ACL_SETTING_ROW
#undef ACL_SETTING_DOC

static int nchoices(const char *const *c)
{
  int n = 0;
  while (c && c[n])
    n++;
  return n;
}

const char *acl_mode_name(acl_mode_t m)
{
  return (unsigned)m < (unsigned)nchoices(acl_config_mode_names) ? acl_config_mode_names[m] : "?";
}

const char *acl_prof_src_name(acl_prof_src_t s)
{
  return (unsigned)s < (unsigned)nchoices(acl_config_prof_names) ? acl_config_prof_names[s] : "?";
}

const acl_setting_t *acl_setting_find(const char *name)
{
  for (size_t i = 0; name && i < acl_nsettings; i++)
    if (strcmp(acl_settings[i].name, name) == 0)
      return &acl_settings[i];
  return NULL;
}

static void bytes_str(unsigned long long v, char *out, size_t len)
{
  static const char sfx[] = "KMGT";
  int i = -1;
  while (v && v % 1024 == 0 && i < 3) {
    v /= 1024;
    i++;
  }
  if (i < 0)
    snprintf(out, len, "%llu", v);
  else
    snprintf(out, len, "%llu%c", v, sfx[i]);
}

void acl_setting_accepted(const acl_setting_t *s, char *out, size_t len)
{
  if (s->accepted) {
    snprintf(out, len, "%s", s->accepted);
    return;
  }
  char lo[32], hi[32];
  switch (s->type) {
  case ACL_SETTING_ENUM:
    out[0] = '\0';
    for (int i = 0; s->choices[i]; i++)
      snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? ", " : "", s->choices[i]);
    return;
  case ACL_SETTING_INT:
    snprintf(out, len, "integers from %lld to %lld", s->lo, s->hi);
    return;
  case ACL_SETTING_BYTES:
    bytes_str((unsigned long long)s->lo, lo, sizeof(lo));
    bytes_str((unsigned long long)s->hi, hi, sizeof(hi));
    snprintf(out, len, "byte counts from %s to %s (suffix K, M, G or T)", lo, hi);
    return;
  case ACL_SETTING_STR:
  case ACL_SETTING_FLAG:
    snprintf(out, len, "any value");
    return;
  }
  snprintf(out, len, "?");
}

void acl_setting_default(const acl_setting_t *s, char *out, size_t len)
{
  switch (s->type) {
  case ACL_SETTING_ENUM:
    snprintf(out, len, "%s",
             s->dnum >= 0 && s->dnum < nchoices(s->choices) ? s->choices[s->dnum] : "?");
    return;
  case ACL_SETTING_INT:
    if (s->unset)
      snprintf(out, len, "%s", s->unset);
    else
      snprintf(out, len, "%lld", s->dnum);
    return;
  case ACL_SETTING_BYTES:
    bytes_str((unsigned long long)s->dnum, out, len);
    return;
  case ACL_SETTING_STR:
    snprintf(out, len, "%s", s->dstr && s->dstr[0] ? s->dstr : s->unset ? s->unset : "unset");
    return;
  case ACL_SETTING_FLAG:
    snprintf(out, len, "unset");
    return;
  }
  snprintf(out, len, "?");
}

void acl_config_defaults(acl_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  for (size_t i = 0; i < acl_nsettings; i++) {
    const acl_setting_t *s = &acl_settings[i];
    if (s->offset < 0)
      continue;
    char *f = (char *)cfg + s->offset;
    switch (s->type) {
    case ACL_SETTING_ENUM:
    case ACL_SETTING_INT:
      *(int *)(void *)f = (int)s->dnum;
      break;
    case ACL_SETTING_BYTES:
      *(uint64_t *)(void *)f = (uint64_t)s->dnum;
      break;
    case ACL_SETTING_FLAG:
      *(bool *)(void *)f = s->dnum != 0;
      break;
    case ACL_SETTING_STR:
      snprintf(f, s->size, "%s", s->dstr);
      break;
    }
  }
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
  snprintf(msg, sizeof(msg), "invalid %s=\"%.64s\": accepted values are %s; using %s", name, value,
           accepted, dflt);
  p->errors++;
  if (p->report)
    p->report(p->report_user, msg);
}

/* What the field holds now, in words, for "using ..." in a message. */
static void current_str(const acl_setting_t *s, const char *f, char *out, size_t len)
{
  switch (s->type) {
  case ACL_SETTING_ENUM: {
    int v = *(const int *)(const void *)f;
    snprintf(out, len, "%s", v >= 0 && v < nchoices(s->choices) ? s->choices[v] : "?");
    return;
  }
  case ACL_SETTING_INT: {
    int v = *(const int *)(const void *)f;
    if (s->unset && v == s->dnum)
      snprintf(out, len, "%s", s->unset);
    else
      snprintf(out, len, "%d", v);
    return;
  }
  case ACL_SETTING_BYTES:
    bytes_str((unsigned long long)*(const uint64_t *)(const void *)f, out, len);
    return;
  case ACL_SETTING_STR:
    snprintf(out, len, "%s", f[0] ? f : s->unset ? s->unset : "unset");
    return;
  case ACL_SETTING_FLAG:
    snprintf(out, len, "%s", *(const bool *)(const void *)f ? "set" : "unset");
    return;
  }
}

/* One row: the variable's value, if set, into its field; an invalid value
 * is reported and leaves the field as it was. */
static void parse_row(parser_t *p, const acl_setting_t *s, acl_config_t *cfg)
{
  const char *v = p->get(p->get_user, s->name);
  if (!v || !*v || s->offset < 0)
    return;
  char *f = (char *)cfg + s->offset;
  char accepted[160], was[128];
  long iv;
  uint64_t bv;
  switch (s->type) {
  case ACL_SETTING_ENUM:
    for (int i = 0; s->choices[i]; i++)
      if (strcasecmp(v, s->choices[i]) == 0) {
        *(int *)(void *)f = i;
        return;
      }
    break;
  case ACL_SETTING_INT:
    if (acl_parse_int(v, (long)s->lo, (long)s->hi, &iv)) {
      *(int *)(void *)f = (int)iv;
      return;
    }
    break;
  case ACL_SETTING_BYTES:
    if (acl_parse_size(v, &bv) && bv >= (uint64_t)s->lo && bv <= (uint64_t)s->hi) {
      *(uint64_t *)(void *)f = bv;
      return;
    }
    break;
  case ACL_SETTING_FLAG:
    *(bool *)(void *)f = true;
    return;
  case ACL_SETTING_STR: {
    char tmp[1024];
    if (strlen(v) < s->size && strlen(v) < sizeof(tmp)) {
      memcpy(tmp, v, strlen(v) + 1);
      if (!s->check || s->check(tmp, s->size)) {
        memcpy(f, tmp, strlen(tmp) + 1);
        return;
      }
      acl_setting_accepted(s, accepted, sizeof(accepted));
    } else {
      snprintf(accepted, sizeof(accepted), "strings shorter than %zu bytes", s->size);
    }
    current_str(s, f, was, sizeof(was));
    bad(p, s->name, v, accepted, was);
    return;
  }
  }
  acl_setting_accepted(s, accepted, sizeof(accepted));
  current_str(s, f, was, sizeof(was));
  bad(p, s->name, v, accepted, was);
}

/* The endpoint binds numeric addresses only; "localhost" is the one name
 * taken, as 127.0.0.1, so that a name is never resolved differently later.
 * "[::1]" is stored as "::1". false: not an address. */
static bool acl_config_check_bind(char *s, size_t len)
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

static bool acl_config_check_hostport(char *s, size_t len)
{
  (void)len;
  const char *colon = strrchr(s, ':');
  long port;
  return colon && colon != s && acl_parse_int(colon + 1, 1, 65535, &port);
}

/* Part of a shared-memory name: nothing that could leave /dev/shm. */
static bool acl_config_check_salt(char *s, size_t len)
{
  (void)len;
  for (const char *c = s; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
      return false;
  return true;
}

bool acl_config_window_ms(const char *s, unsigned *on_ms, unsigned *period_ms)
{
  char buf[24];
  long on, per;
  const char *slash = s ? strchr(s, '/') : NULL;
  size_t n = slash ? (size_t)(slash - s) : 0;
  if (!slash || n >= sizeof(buf))
    return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (!acl_parse_int(buf, 1, ACL_CONFIG_CUPTI_MS_MAX, &on) ||
      !acl_parse_int(slash + 1, 2, ACL_CONFIG_CUPTI_MS_MAX, &per) || on >= per)
    return false;
  *on_ms = (unsigned)on;
  *period_ms = (unsigned)per;
  return true;
}

static bool acl_config_check_window(char *s, size_t len)
{
  unsigned on, per;
  (void)len;
  return acl_config_window_ms(s, &on, &per);
}

/* Read after AUTOCCL_LOCAL_RANK when it is unset: the launchers' conventions. */
static const char *const local_rank_fallbacks[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                   "SLURM_LOCALID", "MPI_LOCALRANKID"};

int acl_config_parse(acl_config_t *cfg, acl_getenv_fn get, void *get_user,
                     acl_config_report_fn report, void *report_user)
{
  parser_t p = {get, get_user, report, report_user, 0};
  for (size_t i = 0; i < acl_nsettings; i++)
    parse_row(&p, &acl_settings[i], cfg);

  /* The launchers' local rank when ours is unset or invalid. */
  const acl_setting_t *lr = acl_setting_find("AUTOCCL_LOCAL_RANK");
  const char *own = get(get_user, lr->name);
  long v;
  if (own && *own && acl_parse_int(own, (long)lr->lo, (long)lr->hi, &v))
    return p.errors;
  char accepted[64];
  acl_setting_accepted(lr, accepted, sizeof(accepted));
  for (size_t i = 0; i < sizeof(local_rank_fallbacks) / sizeof(*local_rank_fallbacks); i++) {
    const char *s = get(get_user, local_rank_fallbacks[i]);
    if (!s || !*s)
      continue;
    if (acl_parse_int(s, (long)lr->lo, (long)lr->hi, &v)) {
      cfg->local_rank = (int)v;
      break;
    }
    bad(&p, local_rank_fallbacks[i], s, accepted, "the next source, else 0");
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

int acl_config_env_one(acl_config_t *cfg, const char *name)
{
  const acl_setting_t *s = acl_setting_find(name);
  if (!s)
    return -1;
  parser_t p = {env_get, NULL, env_report, NULL, 0};
  parse_row(&p, s, cfg);
  return p.errors;
}
