/* Host-side datatypes, input patterns and result checking. No CUDA here.
 *
 * Inputs are small non-negative integers that depend on (rank, element,
 * iteration) and are chosen so that any reduction order is exact in the
 * datatype: for sum, values < limit/nranks (limit: half 2048, bfloat16 256,
 * float 2^24, int8 127, ...); for prod, values in {1, 2} (products are powers
 * of two; integer types wrap identically whatever the order); for max/min
 * any value below the limit. So the expected output is computed exactly on
 * the host and compared bit for bit. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <string.h>

#include "bench/bench.h"

size_t acl_bench_dtype_size(acl_bench_dtype_t d)
{
  switch (d) {
  case ACL_BENCH_DT_INT8:
  case ACL_BENCH_DT_UINT8:
    return 1;
  case ACL_BENCH_DT_HALF:
  case ACL_BENCH_DT_BF16:
    return 2;
  case ACL_BENCH_DT_INT32:
  case ACL_BENCH_DT_UINT32:
  case ACL_BENCH_DT_FLOAT:
    return 4;
  case ACL_BENCH_DT_INT64:
  case ACL_BENCH_DT_UINT64:
  case ACL_BENCH_DT_DOUBLE:
    return 8;
  default:
    return 1;
  }
}

uint16_t acl_bench_float_to_half(float f)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = (int32_t)((x >> 23) & 0xffu);
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff)
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f)
    return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10)
      return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u)))
      h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h++;
  return (uint16_t)(sign | h);
}

float acl_bench_half_to_float(uint16_t h)
{
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
  uint32_t mant = (uint32_t)h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    float v = ldexpf((float)mant, -24);
    return sign ? -v : v;
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15u + 127u) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t acl_bench_float_to_bf16(float f)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float acl_bench_bf16_to_float(uint16_t b)
{
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

void acl_bench_dtype_store(acl_bench_dtype_t d, void *buf, size_t idx, int64_t v)
{
  uint64_t u = (uint64_t)v;
  switch (d) {
  case ACL_BENCH_DT_INT8: {
    int8_t t = (int8_t)(uint8_t)u;
    memcpy((char *)buf + idx, &t, 1);
    break;
  }
  case ACL_BENCH_DT_UINT8: {
    uint8_t t = (uint8_t)u;
    memcpy((char *)buf + idx, &t, 1);
    break;
  }
  case ACL_BENCH_DT_INT32: {
    int32_t t = (int32_t)(uint32_t)u;
    memcpy((char *)buf + 4 * idx, &t, 4);
    break;
  }
  case ACL_BENCH_DT_UINT32: {
    uint32_t t = (uint32_t)u;
    memcpy((char *)buf + 4 * idx, &t, 4);
    break;
  }
  case ACL_BENCH_DT_INT64: {
    memcpy((char *)buf + 8 * idx, &v, 8);
    break;
  }
  case ACL_BENCH_DT_UINT64: {
    memcpy((char *)buf + 8 * idx, &u, 8);
    break;
  }
  case ACL_BENCH_DT_HALF: {
    uint16_t t = acl_bench_float_to_half((float)v);
    memcpy((char *)buf + 2 * idx, &t, 2);
    break;
  }
  case ACL_BENCH_DT_BF16: {
    uint16_t t = acl_bench_float_to_bf16((float)v);
    memcpy((char *)buf + 2 * idx, &t, 2);
    break;
  }
  case ACL_BENCH_DT_FLOAT: {
    float t = (float)v;
    memcpy((char *)buf + 4 * idx, &t, 4);
    break;
  }
  case ACL_BENCH_DT_DOUBLE: {
    double t = (double)v;
    memcpy((char *)buf + 8 * idx, &t, 8);
    break;
  }
  default:
    break;
  }
}

double acl_bench_dtype_load(acl_bench_dtype_t d, const void *buf, size_t idx)
{
  const char *p = buf;
  switch (d) {
  case ACL_BENCH_DT_INT8: {
    int8_t t;
    memcpy(&t, p + idx, 1);
    return t;
  }
  case ACL_BENCH_DT_UINT8: {
    uint8_t t;
    memcpy(&t, p + idx, 1);
    return t;
  }
  case ACL_BENCH_DT_INT32: {
    int32_t t;
    memcpy(&t, p + 4 * idx, 4);
    return t;
  }
  case ACL_BENCH_DT_UINT32: {
    uint32_t t;
    memcpy(&t, p + 4 * idx, 4);
    return t;
  }
  case ACL_BENCH_DT_INT64: {
    int64_t t;
    memcpy(&t, p + 8 * idx, 8);
    return (double)t;
  }
  case ACL_BENCH_DT_UINT64: {
    uint64_t t;
    memcpy(&t, p + 8 * idx, 8);
    return (double)t;
  }
  case ACL_BENCH_DT_HALF: {
    uint16_t t;
    memcpy(&t, p + 2 * idx, 2);
    return acl_bench_half_to_float(t);
  }
  case ACL_BENCH_DT_BF16: {
    uint16_t t;
    memcpy(&t, p + 2 * idx, 2);
    return acl_bench_bf16_to_float(t);
  }
  case ACL_BENCH_DT_FLOAT: {
    float t;
    memcpy(&t, p + 4 * idx, 4);
    return t;
  }
  case ACL_BENCH_DT_DOUBLE: {
    double t;
    memcpy(&t, p + 8 * idx, 8);
    return t;
  }
  default:
    return NAN;
  }
}

/* largest integer such that every integer in [0, limit] is exact in d */
static int64_t exact_limit(acl_bench_dtype_t d)
{
  switch (d) {
  case ACL_BENCH_DT_INT8:
    return 127;
  case ACL_BENCH_DT_UINT8:
    return 255;
  case ACL_BENCH_DT_HALF:
    return 2048;
  case ACL_BENCH_DT_BF16:
    return 256;
  default:
    return 1 << 24; /* float (exact), 32/64-bit integers, double: keep it modest */
  }
}

static inline uint32_t mix(uint64_t i, int r, int it)
{
  uint64_t h = i * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)(r + 1) * 0xC2B2AE3D27D4EB4Full;
  h ^= (uint64_t)(it + 1) * 0x165667B19E3779F9ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return (uint32_t)h;
}

int64_t acl_bench_pattern_value(const acl_bench_cfg_t *c, int nranks, int r, size_t i, int it)
{
  uint32_t h = mix(i, r, it);
  int64_t lim = exact_limit(c->dt);
  switch (c->op) {
  case ACL_BENCH_OP_PROD:
    return r < 15 ? 1 + (int64_t)(h & 1u) : 1;
  case ACL_BENCH_OP_MAX:
  case ACL_BENCH_OP_MIN:
    return (int64_t)(h % (uint32_t)(lim + 1));
  case ACL_BENCH_OP_SUM:
  default: {
    int64_t range = lim / (nranks > 0 ? nranks : 1);
    if (range < 1)
      range = 1;
    return (int64_t)(h % (uint64_t)(range + (range == lim ? 1 : 0)));
  }
  }
}

void acl_bench_pattern_fill(const acl_bench_cfg_t *c, int nranks, int r, int it, void *buf,
                            size_t n)
{
  for (size_t i = 0; i < n; i++)
    acl_bench_dtype_store(c->dt, buf, i, acl_bench_pattern_value(c, nranks, r, i, it));
}

static int64_t reduce_all(const acl_bench_cfg_t *c, int nranks, size_t idx, int it)
{
  int64_t acc = acl_bench_pattern_value(c, nranks, 0, idx, it);
  for (int r = 1; r < nranks; r++) {
    int64_t v = acl_bench_pattern_value(c, nranks, r, idx, it);
    switch (c->op) {
    case ACL_BENCH_OP_SUM:
      acc += v;
      break;
    case ACL_BENCH_OP_PROD:
      acc = (int64_t)((uint64_t)acc * (uint64_t)v);
      break;
    case ACL_BENCH_OP_MAX:
      acc = v > acc ? v : acc;
      break;
    case ACL_BENCH_OP_MIN:
      acc = v < acc ? v : acc;
      break;
    default:
      break;
    }
  }
  return acc;
}

int64_t acl_bench_expected_value(const acl_bench_cfg_t *c, int nranks, int rank, size_t count,
                                 size_t j, int it)
{
  size_t per = count / (size_t)nranks;
  switch (c->coll) {
  case ACL_BENCH_COLL_ALL_REDUCE:
  case ACL_BENCH_COLL_REDUCE:
    return reduce_all(c, nranks, j, it);
  case ACL_BENCH_COLL_ALL_GATHER:
    return acl_bench_pattern_value(c, nranks, (int)(j / per), j % per, it);
  case ACL_BENCH_COLL_REDUCE_SCATTER:
    return reduce_all(c, nranks, (size_t)rank * per + j, it);
  case ACL_BENCH_COLL_BROADCAST:
    return acl_bench_pattern_value(c, nranks, c->root, j, it);
  default:
    return 0;
  }
}

long long acl_bench_check_output(const acl_bench_cfg_t *c, int nranks, int rank, size_t count,
                                 int it, const void *out, size_t n, int *maxprint)
{
  size_t es = acl_bench_dtype_size(c->dt);
  long long wrong = 0;
  unsigned char tmp[8];
  for (size_t j = 0; j < n; j++) {
    int64_t e = acl_bench_expected_value(c, nranks, rank, count, j, it);
    acl_bench_dtype_store(c->dt, tmp, 0, e);
    if (memcmp(tmp, (const char *)out + j * es, es) != 0) {
      if (maxprint && *maxprint > 0) {
        (*maxprint)--;
        fprintf(stderr, ACL_BENCH_NAME ": rank %d iteration %d element %zu: expected %g got %g\n",
                rank, it, j, acl_bench_dtype_load(c->dt, tmp, 0),
                acl_bench_dtype_load(c->dt, out, j));
      }
      wrong++;
    }
  }
  return wrong;
}
