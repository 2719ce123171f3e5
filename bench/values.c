/* autoccl-bench: the values of the command line (collective, type and
 * operation names, sizes) and the size list they give. No CUDA here. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

static const char *const coll_names[ACL_BENCH_COLL_COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"};
static const char *const dtype_names[ACL_BENCH_DT_COUNT] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"};
static const char *const op_names[ACL_BENCH_OP_COUNT] = {"sum", "prod", "max", "min"};

const char *acl_bench_coll_name(acl_bench_coll_t c)
{
  return (unsigned)c < ACL_BENCH_COLL_COUNT ? coll_names[c] : "?";
}
const char *acl_bench_dtype_name(acl_bench_dtype_t d)
{
  return (unsigned)d < ACL_BENCH_DT_COUNT ? dtype_names[d] : "?";
}
const char *acl_bench_op_name(acl_bench_op_t o)
{
  return (unsigned)o < ACL_BENCH_OP_COUNT ? op_names[o] : "?";
}

static int lower_eq(const char *a, const char *b)
{
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
  return *a == 0 && *b == 0;
}

int acl_bench_parse_size(const char *s, size_t *out)
{
  if (!s || !*s)
    return -1;
  const char *p = s;
  if (!isdigit((unsigned char)*p))
    return -1;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(p, &end, 10);
  if (errno)
    return -1;
  unsigned long long mul = 1;
  if (*end) {
    char u = (char)toupper((unsigned char)*end);
    switch (u) {
    case 'K':
      mul = 1ull << 10;
      break;
    case 'M':
      mul = 1ull << 20;
      break;
    case 'G':
      mul = 1ull << 30;
      break;
    case 'T':
      mul = 1ull << 40;
      break;
    case 'B':
      mul = 1;
      break;
    default:
      return -1;
    }
    end++;
    if (u != 'B') {
      /* optional "B" or "iB" */
      if (*end == 'i' || *end == 'I')
        end++;
      if (*end == 'b' || *end == 'B')
        end++;
    }
    if (*end)
      return -1;
  }
  if (mul > 1 && v > ULLONG_MAX / mul)
    return -1;
  v *= mul;
  if (v > (unsigned long long)SIZE_MAX)
    return -1;
  *out = (size_t)v;
  return 0;
}

int acl_bench_parse_coll(const char *s, acl_bench_coll_t *out)
{
  static const struct {
    const char *n;
    acl_bench_coll_t c;
  } t[] = {
      {"all_reduce", ACL_BENCH_COLL_ALL_REDUCE},
      {"allreduce", ACL_BENCH_COLL_ALL_REDUCE},
      {"all_gather", ACL_BENCH_COLL_ALL_GATHER},
      {"allgather", ACL_BENCH_COLL_ALL_GATHER},
      {"reduce_scatter", ACL_BENCH_COLL_REDUCE_SCATTER},
      {"reducescatter", ACL_BENCH_COLL_REDUCE_SCATTER},
      {"broadcast", ACL_BENCH_COLL_BROADCAST},
      {"bcast", ACL_BENCH_COLL_BROADCAST},
      {"reduce", ACL_BENCH_COLL_REDUCE},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (lower_eq(s, t[i].n)) {
      *out = t[i].c;
      return 0;
    }
  return -1;
}

int acl_bench_parse_dtype(const char *s, acl_bench_dtype_t *out)
{
  static const struct {
    const char *n;
    acl_bench_dtype_t d;
  } t[] = {
      {"int8", ACL_BENCH_DT_INT8},     {"char", ACL_BENCH_DT_INT8},
      {"uint8", ACL_BENCH_DT_UINT8},   {"int32", ACL_BENCH_DT_INT32},
      {"int", ACL_BENCH_DT_INT32},     {"uint32", ACL_BENCH_DT_UINT32},
      {"int64", ACL_BENCH_DT_INT64},   {"uint64", ACL_BENCH_DT_UINT64},
      {"half", ACL_BENCH_DT_HALF},     {"float16", ACL_BENCH_DT_HALF},
      {"fp16", ACL_BENCH_DT_HALF},     {"float", ACL_BENCH_DT_FLOAT},
      {"float32", ACL_BENCH_DT_FLOAT}, {"fp32", ACL_BENCH_DT_FLOAT},
      {"double", ACL_BENCH_DT_DOUBLE}, {"float64", ACL_BENCH_DT_DOUBLE},
      {"fp64", ACL_BENCH_DT_DOUBLE},   {"bfloat16", ACL_BENCH_DT_BF16},
      {"bf16", ACL_BENCH_DT_BF16},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (lower_eq(s, t[i].n)) {
      *out = t[i].d;
      return 0;
    }
  return -1;
}

int acl_bench_parse_op(const char *s, acl_bench_op_t *out)
{
  for (int i = 0; i < ACL_BENCH_OP_COUNT; i++)
    if (lower_eq(s, op_names[i])) {
      *out = (acl_bench_op_t)i;
      return 0;
    }
  return -1;
}

void acl_bench_format_size(size_t b, char *buf, size_t len)
{
  if (b >= (1ull << 30) && b % (1ull << 30) == 0)
    snprintf(buf, len, "%zuG", b >> 30);
  else if (b >= (1u << 20) && b % (1u << 20) == 0)
    snprintf(buf, len, "%zuM", b >> 20);
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(buf, len, "%zuK", b >> 10);
  else
    snprintf(buf, len, "%zu", b);
}

int acl_bench_sizes(const acl_bench_cfg_t *c, int nranks, size_t *sizes, int max)
{
  size_t unit = acl_bench_dtype_size(c->dt);
  if (c->coll == ACL_BENCH_COLL_ALL_GATHER || c->coll == ACL_BENCH_COLL_REDUCE_SCATTER)
    unit *= (size_t)nranks;
  int n = 0;
  double cur = (double)c->minbytes;
  size_t last = 0;
  while (cur <= (double)c->maxbytes * (1.0 + 1e-12) && n < max) {
    size_t s = (size_t)cur;
    s = s / unit * unit;
    if (s == 0)
      s = unit;
    if (n == 0 || s != last) {
      sizes[n++] = s;
      last = s;
    }
    if (c->factor <= 1.0)
      break;
    cur *= c->factor;
  }
  return n;
}
