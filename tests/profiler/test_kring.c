/* The stale-stamp check (acl_kring, profiler/overlap.h) on a recorded
 * trace: the plugin's samples of a one-H200 run (NCCL 2.30.7, two ranks, one
 * process per rank, AllReduce 64 KiB-256 MiB, docs/benchmarks.md
 * "Results, 2026-12-04"), recorded before the NCCL-event path had the check.
 * Its KernelCh samples include one kernel's stamps handed to calls 64 apart
 * and starts 63 ms before their ends. Replayed in the order they reached the
 * tuner, the check must keep no two samples of a rank that overlap, refuse
 * every repeat, and keep the rest. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profiler/overlap.h"

#ifndef STALE_TRACE
#error "STALE_TRACE: the recorded trace's path"
#endif

typedef struct rec {
  uint64_t key; /* comm id hash ^ rank */
  uint64_t s, e;
  int kept;
} rec_t;

static uint64_t hash(const char *p, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

/* The sample lines ("t":"s") with their stamps ("gpu":[start,end]). */
static size_t load(rec_t **out)
{
  gzFile f = gzopen(STALE_TRACE, "rb");
  cr_assert_not_null(f, "cannot open %s", STALE_TRACE);
  size_t n = 0, cap = 1024;
  rec_t *r = malloc(cap * sizeof(*r));
  cr_assert_not_null(r);
  static char line[8192];
  while (gzgets(f, line, sizeof(line))) {
    if (!strstr(line, "\"t\":\"s\""))
      continue;
    const char *c = strstr(line, "\"comm\":\""), *k = strstr(line, "\"rank\":"),
               *g = strstr(line, "\"gpu\":[");
    if (!c || !k || !g)
      continue;
    c += 8;
    const char *ce = strchr(c, '"');
    unsigned long long s, e;
    if (!ce || sscanf(g + 7, "%llu,%llu", &s, &e) != 2)
      continue;
    if (n == cap) {
      cap *= 2;
      r = realloc(r, cap * sizeof(*r));
      cr_assert_not_null(r);
    }
    r[n].key = hash(c, (size_t)(ce - c)) ^ (uint64_t)atoi(k + 7);
    r[n].s = s;
    r[n].e = e;
    r[n].kept = 0;
    n++;
  }
  gzclose(f);
  *out = r;
  return n;
}

static int by_key_start(const void *x, const void *y)
{
  const rec_t *a = x, *b = y;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return a->s < b->s ? -1 : a->s > b->s;
}

Test(kring, recorded_trace_keeps_no_overlap)
{
  rec_t *r;
  size_t n = load(&r);
  cr_assert_gt(n, 10000, "the trace holds %zu samples", n);
  /* one ring per rank, as the profiler keeps them */
  uint64_t keys[16];
  acl_kring_t *rings = calloc(16, sizeof(*rings));
  cr_assert_not_null(rings);
  size_t nkeys = 0, kept = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k;
    for (k = 0; k < nkeys && keys[k] != r[i].key; k++)
      ;
    cr_assert_lt(k, 16);
    if (k == nkeys)
      keys[nkeys++] = r[i].key;
    r[i].kept = !acl_kring_overlaps(&rings[k], r[i].s, r[i].e);
    kept += (size_t)r[i].kept;
  }
  /* what was kept, per rank in time order: no overlap beyond the tolerance */
  qsort(r, n, sizeof(*r), by_key_start);
  size_t overlapping = 0, repeats = 0, repeats_kept = 0;
  uint64_t end = 0, key = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && r[i].key == r[i - 1].key && r[i].s == r[i - 1].s && r[i].e == r[i - 1].e) {
      repeats++;
      repeats_kept += (size_t)(r[i].kept && r[i - 1].kept);
    }
    if (!r[i].kept)
      continue;
    if (r[i].key == key && end > r[i].s && end - r[i].s > ACL_KRING_TOL_NS)
      overlapping++;
    if (r[i].key != key || r[i].e > end)
      end = r[i].e;
    key = r[i].key;
  }
  cr_log_info("%zu samples, %zu kept, %zu repeats", n, kept, repeats);
  cr_expect_gt(repeats, 100, "the trace shows the repeats it was chosen for");
  cr_expect_eq(repeats_kept, 0, "%zu repeated stamps kept twice", repeats_kept);
  cr_expect_eq(overlapping, 0, "%zu kept samples overlap an earlier one of their rank",
               overlapping);
  /* A third of this run's stamps were stale (repeats, and spans hundreds of
   * us long for 64 KiB calls that overlap each other); the rest is kept. */
  cr_expect_geq(kept * 10, n * 6, "kept %zu of %zu: the check starves the search", kept, n);
  free(rings);
  free(r);
}
