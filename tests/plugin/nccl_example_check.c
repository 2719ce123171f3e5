/* The two-way check of docs/tables.md: one table, two readers. Loads
 * autoccl (AUTOCCL_MODE=static, AUTOCCL_TABLE=file) and NCCL's example
 * tuner built from NCCL's source (NCCL_TUNER_CONFIG_FILE=file), asks both
 * about the same calls with the same cost table, and compares what NCCL
 * would run (algorithm, protocol, channels where a rule sets them). Run by
 * scripts/check-nccl-example-tuner.sh; prints one line per disagreement and
 * a summary, exits 1 on any disagreement.
 *
 * usage: nccl-example-check PLUGIN_SO EXAMPLE_SO TABLE NRANKS NNODES */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void load(acl_h_plugin_t *p, const char *path)
{
  setenv("ACL_PLUGIN", path, 1);
  acl_h_load(p);
  if (!p->v5) {
    fprintf(stderr, "%s: no ncclTunerPlugin_v5\n", path);
    exit(2);
  }
}

static void pick(acl_h_plugin_t *p, void *ctx, int coll, size_t nbytes, int nranks, int out[3])
{
  float t[7][3];
  acl_h_cost_table(coll, nbytes, nranks, t);
  int nch = 0;
  if (p->v5->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, 1, (float **)(void *)t, 7, 3, 0, &nch) !=
      ncclSuccess)
    out[0] = out[1] = -2;
  else
    acl_h_select(t, &out[0], &out[1]);
  out[2] = nch;
}

int main(int argc, char **argv)
{
  if (argc != 6) {
    fprintf(stderr, "usage: %s PLUGIN_SO EXAMPLE_SO TABLE NRANKS NNODES\n", argv[0]);
    return 2;
  }
  int nranks = atoi(argv[4]), nnodes = atoi(argv[5]);
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", argv[3], 1);
  setenv("AUTOCCL_HTTP_PORT", "", 1);
  setenv("NCCL_TUNER_CONFIG_FILE", argv[3], 1);
  acl_h_plugin_t a, e;
  load(&a, argv[1]);
  load(&e, argv[2]);
  void *actx = NULL, *ectx = NULL;
  if (a.v5->init(&actx, 0x2ca11ull, (size_t)nranks, (size_t)nnodes, acl_h_logger, NULL, NULL) ||
      e.v5->init(&ectx, 0x2ca11ull, (size_t)nranks, (size_t)nnodes, acl_h_logger, NULL, NULL)) {
    fprintf(stderr, "init failed:\n%s\n", acl_h_log_text());
    return 2;
  }
  static const int colls[] = {ncclFuncAllReduce, ncclFuncAllGather, ncclFuncReduceScatter,
                              ncclFuncBroadcast, ncclFuncReduce};
  int calls = 0, bad = 0, set = 0, defaults = 0;
  for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++)
    for (size_t nbytes = 1024; nbytes <= (4ull << 30); nbytes += nbytes / 4) {
      int x[3], y[3];
      pick(&a, actx, colls[c], nbytes, nranks, x);
      pick(&e, ectx, colls[c], nbytes, nranks, y);
      calls++;
      float t[7][3];
      int da, dp;
      acl_h_cost_table(colls[c], nbytes, nranks, t);
      acl_h_select(t, &da, &dp);
      set += x[0] != da || x[1] != dp || x[2] != 0;
      /* NCCL's example writes 1 channel where no rule sets a count (its
       * "Default channels"); autoccl leaves 0 (NCCL decides) */
      bool ch_ok = x[2] > 0 ? y[2] == x[2] : (y[2] == 0 || y[2] == 1);
      defaults += x[2] == 0 && y[2] == 1;
      if (x[0] != y[0] || x[1] != y[1] || !ch_ok) {
        bad++;
        printf("coll %d %zu bytes: autoccl %d/%d/%d, NCCL example %d/%d/%d\n", colls[c], nbytes,
               x[0], x[1], x[2], y[0], y[1], y[2]);
      }
    }
  printf("%d calls (%d where the table changes NCCL's choice): %d disagreements on algorithm, "
         "protocol or a set channel count; %d calls where the example wrote its default of 1 "
         "channel\n",
         calls, set, bad, defaults);
  a.v5->finalize(actx);
  e.v5->finalize(ectx);
  return bad ? 1 : 0;
}
