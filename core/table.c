#include "core/table.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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
    case 'K':
      shift = 10;
      break;
    case 'M':
      shift = 20;
      break;
    case 'G':
      shift = 30;
      break;
    case 'T':
      shift = 40;
      break;
    default:
      return false;
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

#define MAX_FIELDS 10

static const char *const csv_names[MAX_FIELDS] = {"coll",       "min_bytes", "max_bytes", "algo",
                                                  "proto",      "channels",  "nNodes",    "nRanks",
                                                  "numPipeOps", "regBuff"};
static const char *const acl_names[9] = {"collective", "min_bytes", "max_bytes", "algo",    "proto",
                                         "channels",   "nnodes",    "nranks",    "pipe_ops"};

/* autoccl's format: whitespace or commas; empty fields collapse. */
static int split_ws(char *line, char **f)
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

/* NCCL's CSV: exactly the commas; fields trimmed. */
static int split_csv(char *line, char **f)
{
  int n = 0;
  char *p = line;
  for (;;) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = '\0';
    while (isspace((unsigned char)*p))
      p++;
    char *e = p + strlen(p);
    while (e > p && isspace((unsigned char)e[-1]))
      *--e = '\0';
    if (n == MAX_FIELDS)
      return MAX_FIELDS + 1;
    f[n++] = p;
    if (!comma)
      return n;
    p = comma + 1;
  }
}

/* A non-negative count or "any" (*, -1). */
static bool parse_any(const char *s, long max, int32_t *out)
{
  if (strcmp(s, "*") == 0 || strcmp(s, "-1") == 0) {
    *out = ACL_TABLE_ANY;
    return true;
  }
  long v;
  if (!acl_parse_int(s, 1, max, &v))
    return false;
  *out = (int32_t)v;
  return true;
}

#define BAD(field, ...)                                                                            \
  do {                                                                                             \
    int k_ = snprintf(why, whylen, "field %d (%s): ", (field) + 1, names[field]);                  \
    if (k_ > 0 && (size_t)k_ < whylen)                                                             \
      snprintf(why + k_, whylen - (size_t)k_, __VA_ARGS__);                                        \
    return -1;                                                                                     \
  } while (0)

static int parse_rule(char *line, bool csv, acl_table_rule_t *r, char *why, size_t whylen)
{
  char *f[MAX_FIELDS];
  const char *const *names = csv ? csv_names : acl_names;
  int n = csv ? split_csv(line, f) : split_ws(line, f);
  if (csv && (n < 8 || n > 10)) {
    snprintf(why, whylen,
             "expected 8 to 10 comma-separated fields (coll,min_bytes,max_bytes,"
             "algo,proto,channels,nNodes,nRanks[,numPipeOps[,regBuff]]), got %d",
             n);
    return -1;
  }
  if (!csv && n != 6 && n != 9) {
    snprintf(why, whylen,
             "expected 6 fields (collective min max algo proto channels) or 9 "
             "(... nnodes nranks pipe_ops), got %d",
             n);
    return -1;
  }
  memset(r, 0, sizeof(*r));
  r->nnodes = r->nranks = r->pipe_ops = ACL_TABLE_ANY;
  bool any = strcmp(f[0], "*") == 0 || (csv && strcmp(f[0], "-1") == 0);
  r->coll = any ? -1 : acl_coll_parse(f[0]);
  if (r->coll < 0 && !any)
    BAD(0,
        "unknown collective '%.32s' (all_reduce, all_gather, reduce_scatter, broadcast, "
        "reduce, or *)",
        f[0]);
  if (!acl_parse_size(f[1], &r->min_bytes))
    BAD(1, "bad size '%.32s' (bytes with optional K/M/G/T, or max)", f[1]);
  if (!acl_parse_size(f[2], &r->max_bytes))
    BAD(2, "bad size '%.32s' (bytes with optional K/M/G/T, or max)", f[2]);
  if (r->min_bytes > r->max_bytes)
    BAD(2, "max_bytes %.32s is smaller than min_bytes %.32s", f[2], f[1]);
  bool nccl = strcasecmp(f[3], "NCCL") == 0 || strcmp(f[3], "-1") == 0;
  int a = nccl ? ACL_ALGO_NCCL : acl_algo_parse(f[3]);
  if (!nccl && a < 0)
    BAD(3,
        "unknown algorithm '%.32s' (TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, "
        "NVLS_TREE, PAT, or NCCL for NCCL's own choice)",
        f[3]);
  int p = -1;
  if (nccl) {
    if (strcmp(f[4], "-") != 0 && strcmp(f[4], "-1") != 0 && strcasecmp(f[4], "NCCL") != 0)
      BAD(4, "algorithm NCCL (NCCL's own choice) takes protocol '-', got '%.32s'", f[4]);
  } else if ((p = acl_proto_parse(f[4])) < 0) {
    BAD(4, "unknown protocol '%.32s' (LL, LL128, SIMPLE)", f[4]);
  }
  /* autoccl's format: channels[:chunk], chunk a scale of NCCL's own chunk
   * size (x1/4, x2, ...; tuner v6, NCCL 2.30). */
  int chunk = 0;
  char *colon = csv ? NULL : strchr(f[5], ':');
  if (colon) {
    *colon = '\0';
    if (acl_chunk_parse(colon + 1, &chunk) != 0)
      BAD(5,
          "chunk '%.32s' after ':' must be a power-of-two scale of NCCL's own chunk "
          "size from x1/256 to x256 (x1/4, x2, ...) or nccl",
          colon + 1);
    if (nccl && chunk != 0)
      BAD(5, "NCCL's own choice takes no chunk size, got '%.32s'", colon + 1);
  }
  long ch;
  if (csv && strcmp(f[5], "-1") == 0)
    ch = 0;
  else if (!acl_parse_int(f[5], 0, 64, &ch))
    BAD(5, "channels must be 0 (NCCL decides)%s to 64, got '%.32s'", csv ? ", -1" : "", f[5]);
  if (nccl && ch != 0)
    BAD(5, "NCCL's own choice takes no channel count, got '%.32s'", f[5]);
  if (n >= 8) {
    if (!parse_any(f[6], 1 << 20, &r->nnodes))
      BAD(6, "node count must be a positive number or -1 (any), got '%.32s'", f[6]);
    if (!parse_any(f[7], 1 << 24, &r->nranks))
      BAD(7, "rank count must be a positive number or -1 (any), got '%.32s'", f[7]);
  }
  if (n >= 9 && !parse_any(f[8], 1 << 20, &r->pipe_ops))
    BAD(8, "pipelined operation count must be a positive number or -1 (any), got '%.32s'", f[8]);
  r->cand = (acl_candidate_t){
      .algo = (int8_t)a, .proto = (int8_t)p, .nchannels = (int16_t)ch, .chunk_log2 = chunk};
  if (n == 10 && strcmp(f[9], "-1") != 0) {
    if (strcmp(f[9], "0") != 0 && strcmp(f[9], "1") != 0)
      BAD(9, "must be 0, 1 or -1 (any), got '%.32s'", f[9]);
    return 1; /* valid, but not honoured: see ACL_TABLE_SKIP_REGBUFF */
  }
  return 0;
}
#undef BAD

/* NCCL's CSV when the first rule line has seven to nine commas (NCCL's
 * numPipeOps and regBuff are optional). Eight commas could also be
 * autoccl's nine fields: they are NCCL's first nine in the same order, and
 * the CSV reading accepts everything autoccl's does there. */
static bool looks_csv(const char *line)
{
  int commas = 0;
  for (const char *q = line; *q; q++)
    commas += *q == ',';
  return commas >= 7 && commas <= 9;
}

/* Notes a rule not honoured on line lineno in t->skipped ("19, 27, ..."). */
static void note_skip(acl_table_t *t, int lineno)
{
  size_t k = strlen(t->skipped);
  if (k + 16 < sizeof(t->skipped))
    snprintf(t->skipped + k, sizeof(t->skipped) - k, "%s%d", t->nskipped ? ", " : "", lineno);
  else if (k + 5 < sizeof(t->skipped) && t->skipped[k - 1] != '.')
    snprintf(t->skipped + k, sizeof(t->skipped) - k, ", ...");
  t->nskipped++;
}

/* "# autoccl-meta: nccl_version=X; gpu=Y" (ACL_TABLE_META_TAG); any other
 * comment is a comment. */
static void meta_comment(const char *c, acl_table_t *t)
{
  while (*c == ' ' || *c == '\t')
    c++;
  if (strncmp(c, ACL_TABLE_META_TAG, strlen(ACL_TABLE_META_TAG)) != 0)
    return;
  c += strlen(ACL_TABLE_META_TAG);
  static const char *const keys[] = {"nccl_version=", "gpu="};
  char *dst[] = {t->nccl_version, t->gpu};
  size_t cap[] = {sizeof(t->nccl_version), sizeof(t->gpu)};
  for (int k = 0; k < 2; k++) {
    const char *v = strstr(c, keys[k]);
    if (!v)
      continue;
    v += strlen(keys[k]);
    size_t n = strcspn(v, ";\r\n");
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
      n--;
    if (n >= cap[k])
      n = cap[k] - 1;
    if (n == 1 && v[0] == '-')
      n = 0; /* unknown */
    memcpy(dst[k], v, n);
    dst[k][n] = '\0';
  }
}

int acl_table_parse(const char *text, size_t len, acl_table_t *out, char *err, size_t errlen)
{
  acl_table_t *t = calloc(1, sizeof(*t));
  if (!t) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* A UTF-8 byte order mark, as some editors save: not part of the table. */
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
    text += 3;
    len -= 3;
  }
  size_t pos = 0;
  while (pos < len && isspace((unsigned char)text[pos]))
    pos++;
  if (pos < len && text[pos] == '{') {
    int jrc = acl_table_parse_json(text, len, t, err, errlen);
    if (jrc == 0) {
      t->hash = acl_table_hash(t);
      memcpy(out, t, sizeof(*t));
    }
    free(t);
    return jrc;
  }
  pos = 0;
  int lineno = 0, rc = -1;
  bool decided = false, csv = false;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n')
      end++;
    lineno++;
    char line[512] = {0};
    size_t n = end - pos;
    if (n >= sizeof(line)) {
      snprintf(err, errlen, "line %d: longer than %zu bytes", lineno, sizeof(line) - 1);
      goto out;
    }
    memcpy(line, text + pos, n);
    line[n] = '\0';
    pos = end + 1;
    if (memchr(line, '\0', n)) {
      snprintf(err, errlen, "line %d: contains a NUL byte", lineno);
      goto out;
    }
    char *hash = strchr(line, '#');
    if (hash) {
      meta_comment(hash + 1, t);
      *hash = '\0';
    }
    for (char *q = line; *q; q++)
      if (*q == '\r')
        *q = ' ';
    char *s = line;
    while (isspace((unsigned char)*s))
      s++;
    if (!*s)
      continue;
    if (!decided) {
      csv = looks_csv(s);
      decided = true;
    }
    if (t->nrules == ACL_TABLE_MAX_RULES) {
      snprintf(err, errlen, "line %d: more than %d rules", lineno, ACL_TABLE_MAX_RULES);
      goto out;
    }
    char why[224];
    int prc = parse_rule(s, csv, &t->rules[t->nrules], why, sizeof(why));
    if (prc < 0) {
      snprintf(err, errlen, "line %d: %s", lineno, why);
      goto out;
    }
    if (prc > 0) {
      note_skip(t, lineno);
      continue;
    }
    t->rules[t->nrules].line = lineno;
    t->nrules++;
  }
  t->format = csv ? ACL_TABLE_FMT_NCCL_CSV : ACL_TABLE_FMT_AUTOCCL;
  t->hash = acl_table_hash(t);
  memcpy(out, t, sizeof(*t));
  rc = 0;
out:
  free(t);
  return rc;
}

int acl_table_load(const char *path, acl_table_t *out, char *err, size_t errlen)
{
  /* O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  char *buf = NULL;
  int rc = -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen,
             "%s: not a regular file (a FIFO, device or folder); give the path "
             "of a table file",
             path);
    goto out;
  }
  if (st.st_size > ACL_TABLE_MAX_BYTES) {
    snprintf(err, errlen, "%s: larger than %u bytes", path, ACL_TABLE_MAX_BYTES);
    goto out;
  }
  /* Read to the end, not to st_size: a /proc or sysfs file says 0 bytes
   * and has text, /proc/self/mem says 0 and fails to read (an I/O error
   * must be named, not taken for an empty table). */
  size_t cap = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1, got = 0;
  if (!(buf = malloc(cap + 1))) {
    snprintf(err, errlen, "%s: out of memory", path);
    goto out;
  }
  for (;;) {
    if (got == cap) {
      char *nb = cap <= ACL_TABLE_MAX_BYTES ? realloc(buf, cap * 2 + 1) : NULL;
      if (!nb) {
        snprintf(err, errlen, "%s: larger than %u bytes", path, ACL_TABLE_MAX_BYTES);
        goto out;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t k = read(fd, buf + got, cap - got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0) {
      snprintf(err, errlen, "%s: cannot be read: %s", path, strerror(errno));
      goto out;
    }
    if (k == 0)
      break;
    got += (size_t)k;
  }
  if (got > ACL_TABLE_MAX_BYTES) {
    snprintf(err, errlen, "%s: larger than %u bytes", path, ACL_TABLE_MAX_BYTES);
    goto out;
  }
  char inner[320];
  if (acl_table_parse(buf, got, out, inner, sizeof(inner)) != 0) {
    snprintf(err, errlen, "%s: %s", path, inner);
    goto out;
  }
  rc = 0;
out:
  free(buf);
  close(fd);
  return rc;
}

static bool any_or(int32_t rule, int32_t v) { return rule == ACL_TABLE_ANY || rule == v; }

const acl_table_rule_t *acl_table_find(const acl_table_t *t, const acl_table_query_t *q)
{
  for (int i = 0; t && i < t->nrules; i++) {
    const acl_table_rule_t *r = &t->rules[i];
    if ((r->coll < 0 || r->coll == q->coll) && q->nbytes >= r->min_bytes &&
        q->nbytes <= r->max_bytes && (q->nnodes < 0 || any_or(r->nnodes, q->nnodes)) &&
        (q->nranks < 0 || any_or(r->nranks, q->nranks)) &&
        (q->pipe_ops < 0 || any_or(r->pipe_ops, q->pipe_ops)))
      return r;
  }
  return NULL;
}

const acl_table_rule_t *acl_table_lookup(const acl_table_t *t, int coll, uint64_t nbytes)
{
  acl_table_query_t q = {
      .coll = coll, .nbytes = nbytes, .nnodes = -1, .nranks = -1, .pipe_ops = -1};
  return acl_table_find(t, &q);
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  return h;
}

uint64_t acl_table_hash(const acl_table_t *t)
{
  uint64_t h = fnv(0xcbf29ce484222325ull, (uint64_t)t->nrules);
  for (int i = 0; i < t->nrules; i++) {
    const acl_table_rule_t *r = &t->rules[i];
    h = fnv(h, (uint64_t)(int64_t)r->coll);
    h = fnv(h, r->min_bytes);
    h = fnv(h, r->max_bytes);
    h = fnv(h, (uint64_t)(int64_t)r->nnodes);
    h = fnv(h, (uint64_t)(int64_t)r->nranks);
    h = fnv(h, (uint64_t)(int64_t)r->pipe_ops);
    h = fnv(h, (uint64_t)(int64_t)r->cand.algo);
    h = fnv(h, (uint64_t)(int64_t)r->cand.proto);
    h = fnv(h, (uint64_t)(int64_t)r->cand.nchannels);
    if (r->cand.chunk_log2 != 0) /* tables without chunk sizes keep their hashes */
      h = fnv(h, 0x10000ull + (uint64_t)(int64_t)r->cand.chunk_log2);
  }
  return h;
}
