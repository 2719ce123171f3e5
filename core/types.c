#include "core/types.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const coll_names[ACL_NUM_COLL] = {"Broadcast", "Reduce", "AllGather",
                                                     "ReduceScatter", "AllReduce"};
static const char *const coll_short[ACL_NUM_COLL] = {"broadcast", "reduce", "all_gather",
                                                     "reduce_scatter", "all_reduce"};
static const char *const algo_names[ACL_NUM_ALGO] = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char *const proto_names[ACL_NUM_PROTO] = {"LL", "LL128", "SIMPLE"};
/* Views and metric labels show these; the first six keep their meaning. */
static const char *const phase_names[ACL_PHASE_COUNT] = {
    "warmup",         "baseline",        "exploring",  "converged", "retuning", "disabled",
    "waiting-budget", "waiting-samples", "validating", "refining",  "paused"};

const char *acl_coll_name(int c) { return c >= 0 && c < ACL_NUM_COLL ? coll_names[c] : "?"; }
const char *acl_coll_short(int c) { return c >= 0 && c < ACL_NUM_COLL ? coll_short[c] : "unknown"; }
const char *acl_algo_name(int a)
{
  if (a == ACL_ALGO_NCCL)
    return "NCCL";
  return a >= 0 && a < ACL_NUM_ALGO ? algo_names[a] : "?";
}
const char *acl_kept_nccl_str(long long tried, char *buf, size_t len)
{
  if (buf && len)
    snprintf(buf, len, ACL_KEPT_NCCL_FMT, tried);
  return buf;
}

const char *acl_source_name(int src)
{
  static const char *const names[ACL_NUM_SOURCES] = {"nccl", "explored", "table"};
  return src >= 0 && src < ACL_NUM_SOURCES ? names[src] : names[0];
}
const char *acl_retune_cause_name(int cause)
{
  static const char *const names[ACL_NUM_RETUNE_CAUSES] = {NULL, "slower", "overlap", "table"};
  return cause > 0 && cause < ACL_NUM_RETUNE_CAUSES ? names[cause] : NULL;
}
const char *acl_wait_for_name(int why)
{
  static const char *const names[ACL_NUM_WAIT_FOR] = {NULL,        "first-events", "baseline",
                                                      "candidate", "confirm",      "validation"};
  return why > 0 && why < ACL_NUM_WAIT_FOR ? names[why] : NULL;
}
const char *acl_proto_name(int p) { return p >= 0 && p < ACL_NUM_PROTO ? proto_names[p] : "?"; }
const char *acl_phase_name(acl_phase_t ph)
{
  return (unsigned)ph < ACL_PHASE_COUNT ? phase_names[ph] : "?";
}
bool acl_phase_decided(acl_phase_t ph)
{
  return ph == ACL_PHASE_CONVERGED || ph == ACL_PHASE_VALIDATING || ph == ACL_PHASE_REFINING ||
         ph == ACL_PHASE_PAUSED;
}

static int find_name(const char *s, const char *const *names, int n)
{
  if (!s)
    return -1;
  for (int i = 0; i < n; i++)
    if (strcasecmp(s, names[i]) == 0)
      return i;
  return -1;
}

int acl_coll_parse(const char *s)
{
  int c = find_name(s, coll_names, ACL_NUM_COLL);
  return c >= 0 ? c : find_name(s, coll_short, ACL_NUM_COLL);
}
int acl_algo_parse(const char *s)
{
  if (s && strcasecmp(s, "CollNetDirect") == 0)
    return 2;
  if (s && strcasecmp(s, "CollNetChain") == 0)
    return 3;
  if (s && strcasecmp(s, "NVLSTree") == 0)
    return 5;
  return find_name(s, algo_names, ACL_NUM_ALGO);
}
int acl_proto_parse(const char *s) { return find_name(s, proto_names, ACL_NUM_PROTO); }
int acl_phase_parse(const char *s) { return find_name(s, phase_names, ACL_PHASE_COUNT); }

bool acl_candidate_eq(const acl_candidate_t *a, const acl_candidate_t *b)
{
  return a->algo == b->algo && a->proto == b->proto && a->nchannels == b->nchannels &&
         a->chunk_log2 == b->chunk_log2;
}

char *acl_candidate_str(const acl_candidate_t *c, char *buf, size_t len)
{
  char ch[24];
  if (c->chunk_log2 != 0)
    snprintf(ch, sizeof ch, " chunk %s", acl_chunk_str(c->chunk_log2, (char[16]){0}, 16));
  else
    ch[0] = '\0';
  if (c->algo == ACL_ALGO_NCCL)
    snprintf(buf, len, "NCCL default");
  else if (c->nchannels > 0)
    snprintf(buf, len, "%s/%s/%dch%s", acl_algo_name(c->algo), acl_proto_name(c->proto),
             c->nchannels, ch);
  else
    snprintf(buf, len, "%s/%s%s", acl_algo_name(c->algo), acl_proto_name(c->proto), ch);
  return buf;
}

bool acl_chunk_log2_valid(long v) { return v >= ACL_CHUNK_LOG2_MIN && v <= ACL_CHUNK_LOG2_MAX; }

size_t acl_chunk_scaled(size_t nccl, int log2)
{
  if (log2 == 0 || nccl == 0 || !acl_chunk_log2_valid(log2))
    return nccl;
  if (log2 < 0) {
    if (nccl <= ACL_CHUNK_FLOOR_BYTES)
      return nccl;
    size_t c = nccl >> -log2;
    return c < ACL_CHUNK_FLOOR_BYTES ? ACL_CHUNK_FLOOR_BYTES : c;
  }
  if (nccl >= ACL_CHUNK_CEIL_BYTES >> log2)
    return nccl > ACL_CHUNK_CEIL_BYTES ? nccl : ACL_CHUNK_CEIL_BYTES;
  return nccl << log2;
}

char *acl_chunk_str(int log2, char *buf, size_t len)
{
  if (log2 == 0)
    snprintf(buf, len, "nccl");
  else if (log2 < 0 && log2 >= -30)
    snprintf(buf, len, "x1/%lu", 1ul << -log2);
  else if (log2 > 0 && log2 <= 30)
    snprintf(buf, len, "x%lu", 1ul << log2);
  else
    snprintf(buf, len, "?");
  return buf;
}

int acl_chunk_parse(const char *s, int *log2)
{
  if (!s)
    return -1;
  if (strcasecmp(s, "nccl") == 0 || strcmp(s, "x1") == 0 || strcmp(s, "1") == 0) {
    *log2 = 0;
    return 0;
  }
  if (*s == 'x')
    s++;
  bool inv = strncmp(s, "1/", 2) == 0;
  if (inv)
    s += 2;
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || end == s || *end || v < 2 || (v & (v - 1)) != 0)
    return -1;
  int k = 0;
  while ((1ul << k) < v)
    k++;
  if (inv)
    k = -k;
  if (!acl_chunk_log2_valid(k))
    return -1;
  *log2 = k;
  return 0;
}

double acl_busbw_factor(int coll, int nranks)
{
  if (nranks <= 0)
    return 0.0;
  double n = (double)nranks;
  switch (coll) {
  case 4:
    return 2.0 * (n - 1.0) / n;
  case 2:
  case 3:
    return (n - 1.0) / n;
  default:
    return 1.0;
  }
}
