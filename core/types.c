#include "core/types.h"

#include <stdio.h>
#include <strings.h>

static const char *const coll_names[ACL_NUM_COLL] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
static const char *const coll_short[ACL_NUM_COLL] = {
    "broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce"};
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
const char *acl_source_name(int src)
{
  static const char *const names[ACL_NUM_SOURCES] = {"nccl", "explored", "table"};
  return src >= 0 && src < ACL_NUM_SOURCES ? names[src] : names[0];
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
  return a->algo == b->algo && a->proto == b->proto &&
         a->nchannels == b->nchannels && a->chunk_bytes == b->chunk_bytes;
}

char *acl_candidate_str(const acl_candidate_t *c, char *buf, size_t len)
{
  if (c->algo == ACL_ALGO_NCCL)
    snprintf(buf, len, "NCCL default");
  else if (c->nchannels > 0)
    snprintf(buf, len, "%s/%s/%dch", acl_algo_name(c->algo), acl_proto_name(c->proto),
             c->nchannels);
  else
    snprintf(buf, len, "%s/%s", acl_algo_name(c->algo), acl_proto_name(c->proto));
  return buf;
}

double acl_busbw_factor(int coll, int nranks)
{
  if (nranks <= 0)
    return 0.0;
  double n = (double)nranks;
  switch (coll) {
  case 4: return 2.0 * (n - 1.0) / n;
  case 2:
  case 3: return (n - 1.0) / n;
  default: return 1.0;
  }
}
