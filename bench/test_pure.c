/* Host-only tests of autoccl-bench's pure parts: size parsing, half/bf16
 * conversion, and that the -c 1 patterns reduce exactly in every datatype
 * (a host simulation of each collective, reducing in the datatype in rank
 * order and in reverse, must pass check_output; a corrupted element must
 * not). No GPU needed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

static int failures;
#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond);                           \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

/* reduce a (rank-ordered) list of elements in the datatype, like a device would */
static void reduce_in_type(const acl_bench_cfg_t *c, void *acc, const void *v, size_t idx)
{
  acl_bench_dtype_t d = c->dt;
  if (d == ACL_BENCH_DT_HALF || d == ACL_BENCH_DT_BF16 || d == ACL_BENCH_DT_FLOAT ||
      d == ACL_BENCH_DT_DOUBLE) {
    double a = acl_bench_dtype_load(d, acc, idx), b = acl_bench_dtype_load(d, v, idx), r = 0;
    switch (c->op) {
    case ACL_BENCH_OP_SUM:
      r = a + b;
      break;
    case ACL_BENCH_OP_PROD:
      r = a * b;
      break;
    case ACL_BENCH_OP_MAX:
      r = a > b ? a : b;
      break;
    case ACL_BENCH_OP_MIN:
      r = a < b ? a : b;
      break;
    default:
      break;
    }
    /* round to the type: values are exact small integers, store via int64 */
    acl_bench_dtype_store(d, acc, idx, (int64_t)r);
  } else {
    int64_t a = (int64_t)acl_bench_dtype_load(d, acc, idx),
            b = (int64_t)acl_bench_dtype_load(d, v, idx), r = 0;
    switch (c->op) {
    case ACL_BENCH_OP_SUM:
      r = (int64_t)((uint64_t)a + (uint64_t)b);
      break;
    case ACL_BENCH_OP_PROD:
      r = (int64_t)((uint64_t)a * (uint64_t)b);
      break;
    case ACL_BENCH_OP_MAX:
      r = a > b ? a : b;
      break;
    case ACL_BENCH_OP_MIN:
      r = a < b ? a : b;
      break;
    default:
      break;
    }
    acl_bench_dtype_store(d, acc, idx, r);
  }
}

static void sim_and_check(acl_bench_coll_t coll, acl_bench_dtype_t dt, acl_bench_op_t op,
                          int nranks, int reverse)
{
  acl_bench_cfg_t c;
  acl_bench_cfg_defaults(&c);
  c.coll = coll;
  c.dt = dt;
  c.op = op;
  c.root = nranks - 1;
  size_t es = acl_bench_dtype_size(dt);
  size_t count = 96 * (size_t)nranks; /* total elements of the larger buffer */
  size_t per = count / (size_t)nranks;
  int it = 7;
  size_t in_n = coll == ACL_BENCH_COLL_ALL_GATHER ? per : count;
  char **in = calloc((size_t)nranks, sizeof(char *));
  if (!in)
    abort();
  for (int r = 0; r < nranks; r++) {
    in[r] = calloc(in_n, es);
    if (!in[r])
      abort();
    acl_bench_pattern_fill(&c, nranks, r, it, in[r], in_n);
  }
  char *full = calloc(count, es);
  if (!full)
    abort();
  /* full reduction of all ranks' inputs, in rank order or reversed */
  if (coll == ACL_BENCH_COLL_ALL_REDUCE || coll == ACL_BENCH_COLL_REDUCE ||
      coll == ACL_BENCH_COLL_REDUCE_SCATTER) {
    int first = reverse ? nranks - 1 : 0;
    if (!in[first])
      abort();
    memcpy(full, in[first], count * es);
    for (int k = 1; k < nranks; k++) {
      int r = reverse ? nranks - 1 - k : k;
      for (size_t i = 0; i < count; i++)
        reduce_in_type(&c, full, in[r], i);
    }
  }
  for (int rank = 0; rank < nranks; rank++) {
    char *out = calloc(count, es);
    size_t out_n = count;
    switch (coll) {
    case ACL_BENCH_COLL_ALL_REDUCE:
    case ACL_BENCH_COLL_REDUCE:
      memcpy(out, full, count * es);
      break;
    case ACL_BENCH_COLL_REDUCE_SCATTER:
      memcpy(out, full + (size_t)rank * per * es, per * es);
      out_n = per;
      break;
    case ACL_BENCH_COLL_ALL_GATHER:
      for (int r = 0; r < nranks; r++)
        memcpy(out + (size_t)r * per * es, in[r], per * es);
      break;
    case ACL_BENCH_COLL_BROADCAST:
      memcpy(out, in[c.root], count * es);
      break;
    default:
      break;
    }
    if (coll == ACL_BENCH_COLL_REDUCE && rank != c.root)
      out_n = 0;
    int mp = 0;
    long long w = acl_bench_check_output(&c, nranks, rank, count, it, out, out_n, &mp);
    if (w != 0)
      fprintf(stderr, "  %s %s %s n=%d rank %d: %lld wrong\n", acl_bench_coll_name(coll),
              acl_bench_dtype_name(dt), acl_bench_op_name(op), nranks, rank, w);
    EXPECT(w == 0);
    if (out_n) {
      /* corrupt one element: exactly one wrong value */
      int64_t e = acl_bench_expected_value(&c, nranks, rank, count, out_n / 2, it);
      acl_bench_dtype_store(dt, out, out_n / 2, e == 3 ? 5 : 3);
      EXPECT(acl_bench_check_output(&c, nranks, rank, count, it, out, out_n, &mp) == 1);
      /* a different iteration's data must not pass */
      EXPECT(acl_bench_check_output(&c, nranks, rank, count, it + 1, out, out_n, &mp) > 0 ||
             nranks * (int)out_n < 8);
    }
    free(out);
  }
  for (int r = 0; r < nranks; r++)
    free(in[r]);
  free(in);
  free(full);
}

int main(void)
{
  size_t v = 0;
  EXPECT(acl_bench_parse_size("64K", &v) == 0 && v == 65536);
  EXPECT(acl_bench_parse_size("1G", &v) == 0 && v == (1ull << 30));
  EXPECT(acl_bench_parse_size("8MiB", &v) == 0 && v == (8u << 20));
  EXPECT(acl_bench_parse_size("123", &v) == 0 && v == 123);
  EXPECT(acl_bench_parse_size("123B", &v) == 0 && v == 123);
  EXPECT(acl_bench_parse_size("1X", &v) != 0);
  EXPECT(acl_bench_parse_size("", &v) != 0);
  EXPECT(acl_bench_parse_size("-1", &v) != 0);
  EXPECT(acl_bench_parse_size("K", &v) != 0);

  EXPECT(acl_bench_float_to_half(1.0f) == 0x3c00);
  EXPECT(acl_bench_float_to_half(2048.0f) == 0x6800);
  EXPECT(acl_bench_half_to_float(0x3c00) == 1.0f);
  EXPECT(acl_bench_float_to_bf16(1.0f) == 0x3f80);
  EXPECT(acl_bench_bf16_to_float(0x4380) == 256.0f);
  for (int i = 0; i <= 2048; i++)
    EXPECT(acl_bench_half_to_float(acl_bench_float_to_half((float)i)) == (float)i);
  for (int i = 0; i <= 256; i++)
    EXPECT(acl_bench_bf16_to_float(acl_bench_float_to_bf16((float)i)) == (float)i);

  /* sizes: nccl-tests semantics, AG/RS rounded to a multiple of nranks*type */
  acl_bench_cfg_t c;
  acl_bench_cfg_defaults(&c);
  c.minbytes = 65536;
  c.maxbytes = 1u << 30;
  c.factor = 4;
  size_t s[ACL_BENCH_MAX_SIZES];
  int n = acl_bench_sizes(&c, 2, s, ACL_BENCH_MAX_SIZES);
  EXPECT(n == 8 && s[0] == 65536 && s[7] == (1u << 30));
  c.coll = ACL_BENCH_COLL_ALL_GATHER;
  c.minbytes = c.maxbytes = 1000;
  n = acl_bench_sizes(&c, 3, s, ACL_BENCH_MAX_SIZES);
  EXPECT(n == 1 && s[0] % 12 == 0 && s[0] <= 1000);

  EXPECT(fabs(acl_bench_bus_factor(ACL_BENCH_COLL_ALL_REDUCE, 2) - 1.0) < 1e-12);
  EXPECT(fabs(acl_bench_bus_factor(ACL_BENCH_COLL_ALL_REDUCE, 8) - 1.75) < 1e-12);
  EXPECT(fabs(acl_bench_bus_factor(ACL_BENCH_COLL_ALL_GATHER, 4) - 0.75) < 1e-12);
  EXPECT(acl_bench_bus_factor(ACL_BENCH_COLL_BROADCAST, 4) == 1.0);

  /* ncclGetVersion codes: MAJOR*10000+MINOR*100+PATCH since 2.9, *1000 before */
  char ver[32];
  acl_bench_nccl_version_str(22803, ver, sizeof(ver));
  EXPECT(!strcmp(ver, "2.28.3"));
  acl_bench_nccl_version_str(21003, ver, sizeof(ver));
  EXPECT(!strcmp(ver, "2.10.3"));
  acl_bench_nccl_version_str(2804, ver, sizeof(ver));
  EXPECT(!strcmp(ver, "2.8.4"));
  acl_bench_nccl_version_str(0, ver, sizeof(ver));
  EXPECT(ver[0] == 0);

  int nr[] = {1, 2, 3, 8};
  for (int coll = 0; coll < ACL_BENCH_COLL_COUNT; coll++)
    for (int dt = 0; dt < ACL_BENCH_DT_COUNT; dt++)
      for (int op = 0; op < ACL_BENCH_OP_COUNT; op++)
        for (size_t k = 0; k < sizeof(nr) / sizeof(nr[0]); k++)
          for (int rev = 0; rev < 2; rev++)
            sim_and_check((acl_bench_coll_t)coll, (acl_bench_dtype_t)dt, (acl_bench_op_t)op, nr[k],
                          rev);

  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("all pure tests passed\n");
  return 0;
}
