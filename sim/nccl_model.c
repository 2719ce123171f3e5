#include "sim/nccl_model.h"

#include <math.h>

#include "core/abi.h"

/* Latency and bandwidth constants in the spirit of NCCL's own tuning model
 * (src/graph/tuning.cc): a per-call base latency, a per-step hardware latency
 * (NVLink inside a node, the network across nodes) and a per-protocol share of
 * the link bandwidth. Rough H200 numbers: they only need the right shape. */
static const double base_lat_us[ACL_NUM_ALGO][ACL_NUM_PROTO] = {
    {6.8, 14.0, 8.4}, /* TREE */
    {6.6, 14.0, 8.4}, /* RING */
    {-1, -1, -1},     /* COLLNET_DIRECT: no CollNet in the simulator */
    {-1, -1, -1},     /* COLLNET_CHAIN */
    {-1, -1, 25.0},   /* NVLS: SIMPLE only */
    {-1, -1, 25.0},   /* NVLS_TREE */
    {-1, -1, 8.0},    /* PAT: SIMPLE only */
};
static const double hw_lat_nvl_us[ACL_NUM_PROTO] = {0.6, 1.25, 4.0};
static const double hw_lat_net_us[ACL_NUM_PROTO] = {5.0, 8.4, 14.0};
static const double proto_bw_share[ACL_NUM_PROTO] = {0.25, 0.9, 1.0};
static const double nvl_bw_gbs = 320.0; /* bus bandwidth inside a node */
static const double net_bw_gbs = 40.0;  /* per GPU across nodes */

static double log2_ceil(int n)
{
  double l = 0;
  while ((1 << (int)l) < n)
    l += 1;
  return l < 1 ? 1 : l;
}

double acl_sim_ab_cost_us(int coll, uint64_t nbytes, int nranks, int nnodes, int algo, int proto)
{
  if (algo < 0 || algo >= ACL_NUM_ALGO || proto < 0 || proto >= ACL_NUM_PROTO || coll < 0 ||
      coll >= ACL_NUM_COLL || nranks < 2)
    return -1;
  double base = base_lat_us[algo][proto];
  if (base < 0)
    return -1;
  bool reduce_all = coll == ncclFuncAllReduce;
  bool gather_like = coll == ncclFuncAllGather || coll == ncclFuncReduceScatter;
  double n = nranks, steps, wire; /* wire: bytes moved per rank / nbytes */
  switch (algo) {
  case NCCL_ALGO_RING:
    steps = reduce_all ? 2.0 * (n - 1) : n - 1;
    wire = reduce_all ? 2.0 * (n - 1) / n : gather_like ? (n - 1) / n : 1.0;
    break;
  case NCCL_ALGO_TREE:
    if (!reduce_all)
      return -1;
    steps = 2.0 * log2_ceil(nranks);
    wire = 2.0 * (n - 1) / n / 0.92; /* trees reach ~92% of a ring's bandwidth */
    break;
  case NCCL_ALGO_NVLS:
  case NCCL_ALGO_NVLS_TREE:
    if (!(reduce_all || (gather_like && algo == NCCL_ALGO_NVLS)))
      return -1;
    if ((algo == NCCL_ALGO_NVLS_TREE) != (nnodes > 1))
      return -1;
    steps = 2.0;
    wire = reduce_all ? 1.0 : (n - 1) / n; /* the switch reduces */
    break;
  case NCCL_ALGO_PAT:
    if (!gather_like || nnodes < 1 || nranks / nnodes != 1)
      return -1; /* PAT: one GPU per node only */
    steps = log2_ceil(nranks);
    wire = (n - 1) / n;
    break;
  default:
    return -1;
  }
  const double *hw = nnodes > 1 ? hw_lat_net_us : hw_lat_nvl_us;
  double bw = (nnodes > 1 ? net_bw_gbs : nvl_bw_gbs) * proto_bw_share[proto];
  return base + steps * hw[proto] + (double)nbytes * wire / (bw * 1e3);
}

void acl_sim_cost_table(float table[ACL_NUM_ALGO][ACL_NUM_PROTO], int coll, uint64_t nbytes,
                        int nranks, int nnodes, uint32_t valid_mask, int def_algo, int def_proto)
{
  float min_other = INFINITY;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++) {
      table[a][p] = -1.0f;
      if (!(valid_mask & ACL_AP_BIT(a, p)))
        continue;
      double c = acl_sim_ab_cost_us(coll, nbytes, nranks, nnodes, a, p);
      if (c < 0) /* valid per the landscape, unknown to the model: say "slow" */
        c = 1e6;
      table[a][p] = (float)c;
      if ((a != def_algo || p != def_proto) && table[a][p] < min_other)
        min_other = table[a][p];
    }
  if (def_algo >= 0 && def_algo < ACL_NUM_ALGO && def_proto >= 0 && def_proto < ACL_NUM_PROTO &&
      (valid_mask & ACL_AP_BIT(def_algo, def_proto)) && table[def_algo][def_proto] >= min_other)
    table[def_algo][def_proto] = min_other * 0.98f;
}

bool acl_sim_select(const float table[ACL_NUM_ALGO][ACL_NUM_PROTO], int *algo, int *proto)
{
  float best = INFINITY;
  *algo = *proto = -1;
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++) {
      float t = table[a][p];
      if (t >= 0.0f && t < best) { /* strict: the first of equals stays */
        best = t;
        *algo = a;
        *proto = p;
      }
    }
  return *algo >= 0;
}

int acl_sim_clamp_channels(int requested, int max_channels)
{
  if (requested <= 0)
    return 0;
  return requested > max_channels ? max_channels : requested;
}

static int per_rank_split(int coll)
{
  return coll == ncclFuncAllGather || coll == ncclFuncReduceScatter;
}

size_t acl_sim_count_from_bytes(int coll, uint64_t nbytes, int nranks, int dtype_bytes)
{
  if (dtype_bytes <= 0 || nranks <= 0 || nbytes % (uint64_t)dtype_bytes)
    return 0;
  uint64_t elems = nbytes / (uint64_t)dtype_bytes;
  if (per_rank_split(coll)) {
    if (elems % (uint64_t)nranks)
      return 0;
    elems /= (uint64_t)nranks;
  }
  return (size_t)elems;
}

uint64_t acl_sim_bytes_from_count(int coll, size_t count, int nranks, int dtype_bytes)
{
  uint64_t b = (uint64_t)count * (uint64_t)dtype_bytes;
  return per_rank_split(coll) ? b * (uint64_t)nranks : b;
}

uint64_t acl_sim_round_bytes(int coll, uint64_t nbytes, int nranks, int dtype_bytes)
{
  uint64_t unit = (uint64_t)dtype_bytes * (per_rank_split(coll) ? (uint64_t)nranks : 1);
  uint64_t r = nbytes / unit * unit;
  return r ? r : unit;
}

size_t acl_sim_nccl_chunk(int algo, int proto)
{
  switch (proto) {
  case NCCL_PROTO_LL:
    return 32768; /* 512 KiB buffer / 8 steps / 2 */
  case NCCL_PROTO_LL128:
    return 576000; /* 4,915,200 / 8 steps x 15/16 */
  default:
    return algo == NCCL_ALGO_RING ? 2097152 : 524288; /* 4 MiB / 8 steps x chunkSteps */
  }
}

int acl_sim_chunk_ran(int algo, int proto, size_t own, size_t got, int8_t *scale)
{
  /* NCCL 2.30 device.h ncclProtoGrainSize: a chunk below it rounds to 0. */
  size_t grain = proto == NCCL_PROTO_LL ? 16 : proto == NCCL_PROTO_LL128 ? 1920 : 512;
  size_t limit = algo == NCCL_ALGO_RING ? own : 4 * own;
  if (got > limit)
    got = limit;
  got = got / grain * grain;
  if (got == 0 || own == 0)
    return -1;
  *scale = (int8_t)lround(log2((double)got / (double)own));
  return 0;
}

uint64_t acl_sim_mix(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
