#include "core/table.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

bool acl_parse_size(const char *s, uint64_t *out)
{
  if (!s || !*s)
    return false;
  if (strcmp(s, "max") == 0) {
    *out = UINT64_MAX;
    return true;
  }
  if (!isdigit((unsigned char)s[0]))
    return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return false;
  unsigned shift = 0;
  if (*end) {
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: return false;
    }
    end++;
    if (*end == 'i' || *end == 'I')
      end++;
    if (*end == 'B' || *end == 'b')
      end++;
    if (*end)
      return false;
  }
  if (shift && v > (UINT64_MAX >> shift))
    return false;
  *out = (uint64_t)v << shift;
  return true;
}

#define MAX_FIELDS 7

static int split(char *line, char **f)
{
  int n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(line, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
    if (n == MAX_FIELDS)
      return MAX_FIELDS + 1;
    f[n++] = tok;
  }
  return n;
}

static int parse_rule(char *line, acl_table_rule_t *r, char *why, size_t whylen)
{
  char *f[MAX_FIELDS];
  int n = split(line, f);
  if (n != 6) {
    snprintf(why, whylen, "expected 6 fields (collective min max algo proto channels), got %d", n);
    return -1;
  }
  r->coll = strcmp(f[0], "*") == 0 ? -1 : acl_coll_parse(f[0]);
  if (r->coll < 0 && strcmp(f[0], "*") != 0) {
    snprintf(why, whylen, "unknown collective '%.32s'", f[0]);
    return -1;
  }
  if (!acl_parse_size(f[1], &r->min_bytes) || !acl_parse_size(f[2], &r->max_bytes)) {
    snprintf(why, whylen, "bad size '%.32s' or '%.32s' (bytes with optional K/M/G/T, or max)",
             f[1], f[2]);
    return -1;
  }
  if (r->min_bytes > r->max_bytes) {
    snprintf(why, whylen, "min_bytes is greater than max_bytes");
    return -1;
  }
  int a = acl_algo_parse(f[3]), p = acl_proto_parse(f[4]);
  if (a < 0 || p < 0) {
    snprintf(why, whylen, "unknown algorithm '%.32s' or protocol '%.32s'", f[3], f[4]);
    return -1;
  }
  long ch;
  if (!acl_parse_int(f[5], 0, 64, &ch)) {
    snprintf(why, whylen, "channels must be 0 (NCCL decides) to 64, got '%.32s'", f[5]);
    return -1;
  }
  r->cand = (acl_candidate_t){.algo = (int8_t)a, .proto = (int8_t)p, .nchannels = (int16_t)ch};
  return 0;
}

int acl_table_parse(const char *text, size_t len, acl_table_t *out, char *err, size_t errlen)
{
  acl_table_t t = {0};
  size_t pos = 0;
  int lineno = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n')
      end++;
    lineno++;
    char line[512] = {0};
    size_t n = end - pos;
    if (n >= sizeof(line)) {
      snprintf(err, errlen, "line %d: longer than %zu bytes", lineno, sizeof(line) - 1);
      return -1;
    }
    memcpy(line, text + pos, n);
    line[n] = '\0';
    pos = end + 1;
    if (memchr(line, '\0', n)) {
      snprintf(err, errlen, "line %d: contains a NUL byte", lineno);
      return -1;
    }
    char *hash = strchr(line, '#');
    if (hash)
      *hash = '\0';
    char *s = line;
    while (isspace((unsigned char)*s))
      s++;
    if (!*s || *s == '\r')
      continue;
    for (char *q = s; *q; q++)
      if (*q == '\r')
        *q = ' ';
    if (t.nrules == ACL_TABLE_MAX_RULES) {
      snprintf(err, errlen, "line %d: more than %d rules", lineno, ACL_TABLE_MAX_RULES);
      return -1;
    }
    char why[160];
    if (parse_rule(s, &t.rules[t.nrules], why, sizeof(why)) != 0) {
      snprintf(err, errlen, "line %d: %s", lineno, why);
      return -1;
    }
    t.nrules++;
  }
  *out = t;
  return 0;
}

int acl_table_load(const char *path, acl_table_t *out, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  char *buf = malloc(1 << 20);
  int rc = -1;
  if (!buf) {
    snprintf(err, errlen, "%s: out of memory", path);
    goto out;
  }
  size_t n = fread(buf, 1, 1 << 20, f);
  if (ferror(f) || !feof(f)) {
    snprintf(err, errlen, "%s: unreadable or larger than 1 MiB", path);
    goto out;
  }
  char inner[256];
  if (acl_table_parse(buf, n, out, inner, sizeof(inner)) != 0) {
    snprintf(err, errlen, "%s: %s", path, inner);
    goto out;
  }
  rc = 0;
out:
  free(buf);
  fclose(f);
  return rc;
}

const acl_table_rule_t *acl_table_lookup(const acl_table_t *t, int coll, uint64_t nbytes)
{
  for (int i = 0; i < t->nrules; i++) {
    const acl_table_rule_t *r = &t->rules[i];
    if ((r->coll < 0 || r->coll == coll) && nbytes >= r->min_bytes && nbytes <= r->max_bytes)
      return r;
  }
  return NULL;
}
