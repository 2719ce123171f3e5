/* The plugin as NCCL sees it: symbols, every tuner ABI version, config
 * errors, static tables. Each Criterion test runs in its own process, so
 * each gets a fresh plugin and its own environment. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static acl_h_plugin_t P;

static void teardown(void) { acl_h_unload(&P); }

TestSuite(abi, .fini = teardown, .timeout = 20);

Test(abi, exports_all_versions_newest_first)
{
  acl_h_load(&P);
  cr_assert_eq(P.version, 6); /* NCCL 2.30: v6; the others in tests/plugin/test_v6.c */
  cr_assert_not_null(P.v4);
  cr_assert_not_null(P.v3);
  cr_assert_not_null(P.v2);
  cr_assert_not_null(P.prof);
  cr_assert_str_eq(P.v5->name, "autoccl");
  cr_assert_str_eq(P.prof->name, "autoccl");
  /* Internals stay hidden: nothing but the ABI symbols resolves. */
  cr_assert_null(dlsym(P.handle, "acl_plugin_get_coll_info"));
  cr_assert_null(dlsym(P.handle, "acl_config_parse"));
}

Test(abi, found_by_bare_name_like_nccl_tuner_plugin_autoccl)
{
  /* NCCL_TUNER_PLUGIN=autoccl -> dlopen("libnccl-tuner-autoccl.so"). */
  void *h = dlopen("libnccl-tuner-autoccl.so", RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(h, "dlopen by name: %s", dlerror());
  cr_assert_not_null(dlsym(h, "ncclTunerPlugin_v5"));
  cr_assert_not_null(dlsym(h, "ncclProfiler_v5"));
  dlclose(h);
}

/* One call through v5 with a fresh cost table; returns what NCCL would run. */
static ncclResult_t call_v5(void *ctx, int coll, size_t nbytes, float t[7][3], int *algo,
                            int *proto, int *nch)
{
  *nch = 0;
  ncclResult_t rc =
      P.v5->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, 1, (float **)(void *)t, 7, 3, 0, nch);
  acl_h_select(t, algo, proto);
  return rc;
}

Test(abi, mode_off_leaves_every_choice_untouched)
{
  setenv("AUTOCCL_MODE", "off", 1);
  acl_h_load(&P);
  void *ctx = NULL;
  cr_assert_eq(P.v5->init(&ctx, 0x1234, 4, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  for (int coll = 0; coll < 5; coll++) {
    for (size_t nb = 1024; nb <= (1u << 30); nb *= 16) {
      float t[7][3], ref[7][3];
      acl_h_cost_table(coll, nb, 4, t);
      memcpy(ref, t, sizeof(t));
      int a, p, nch, ra, rp;
      cr_assert_eq(call_v5(ctx, coll, nb, t, &a, &p, &nch), ncclSuccess);
      cr_assert_eq(memcmp(t, ref, sizeof(t)), 0, "table changed in off mode");
      acl_h_select(ref, &ra, &rp);
      cr_assert_eq(a, ra);
      cr_assert_eq(p, rp);
      cr_assert_eq(nch, 0);
    }
  }
  cr_assert_eq(P.v5->finalize(ctx), ncclSuccess);
}

Test(abi, null_context_declines)
{
  acl_h_load(&P);
  float t[7][3];
  acl_h_cost_table(ncclFuncAllReduce, 1 << 20, 8, t);
  int nch = 0;
  cr_assert_eq(
      P.v5->getCollInfo(NULL, ncclFuncAllReduce, 1 << 20, 1, (float **)(void *)t, 7, 3, 0, &nch),
      ncclSuccess);
  cr_assert_eq(P.v5->finalize(NULL), ncclSuccess);
  cr_assert_eq(P.v4->destroy(NULL), ncclSuccess);
}

Test(abi, v4_and_v3_without_comm_id_keep_nccl_choice)
{
  acl_h_load(&P);
  void *c4 = NULL, *c3 = NULL;
  cr_assert_eq(P.v4->init(8, 1, acl_h_logger, &c4), ncclSuccess);
  cr_assert_eq(P.v3->init(8, 1, acl_h_logger, &c3), ncclSuccess);
  cr_assert_not_null(c4);
  for (int i = 0; i < 200; i++) {
    float t[7][3], ref[7][3];
    acl_h_cost_table(ncclFuncAllGather, 4u << 20, 8, t);
    memcpy(ref, t, sizeof(t));
    int nch = 0;
    cr_assert_eq(
        P.v4->getCollInfo(c4, ncclFuncAllGather, 4u << 20, 1, (float **)(void *)t, 7, 3, 1, &nch),
        ncclSuccess);
    cr_assert_eq(memcmp(t, ref, sizeof(t)), 0);
    cr_assert_eq(
        P.v3->getCollInfo(c3, ncclFuncAllGather, 4u << 20, 1, (float **)(void *)t, 7, 3, &nch),
        ncclSuccess);
    cr_assert_eq(memcmp(t, ref, sizeof(t)), 0);
    cr_assert_eq(nch, 0);
  }
  cr_assert_geq(acl_h_log_count("no communicator id"), 1, "log: %s", acl_h_log_text());
  cr_assert_eq(P.v4->destroy(c4), ncclSuccess);
  cr_assert_eq(P.v3->destroy(c3), ncclSuccess);
}

Test(abi, invalid_variables_reported_once_with_accepted_values)
{
  setenv("AUTOCCL_MODE", "turbo", 1);
  setenv("AUTOCCL_HTTP_PORT", "99999", 1);
  setenv("AUTOCCL_LOG", "info", 1);
  acl_h_load(&P);
  void *a = NULL, *b = NULL;
  cr_assert_eq(P.v5->init(&a, 0x51, 2, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  cr_assert_eq(P.v5->init(&b, 0x52, 2, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  cr_assert_eq(acl_h_log_count("AUTOCCL_MODE=\"turbo\""), 1, "log: %s", acl_h_log_text());
  cr_assert_eq(acl_h_log_count("online, static, off"), 1);
  cr_assert_eq(acl_h_log_count("AUTOCCL_HTTP_PORT=\"99999\""), 1);
  /* The default is used: online mode. */
  cr_assert_geq(acl_h_log_count("mode online"), 1, "log: %s", acl_h_log_text());
  /* Messages go through NCCL's logger under the TUNING subsystem. */
  cr_assert_geq(acl_h_log_count("/40] autoccl:"), 1);
  P.v5->finalize(a);
  P.v5->finalize(b);
}

static char *write_table(const char *text)
{
  static char path[] = "/tmp/acl-table-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  return path;
}

Test(abi, static_table_decides_and_v2_follows)
{
  char *path = write_table("# test table\n"
                           "all_reduce 0 64K RING LL 0\n"
                           "all_reduce 64K max TREE SIMPLE 8\n"
                           "* 0 max RING LL128 4\n");
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  cr_assert_eq(P.v5->init(&ctx, 0x77, 8, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  float t[7][3];
  int a, p, nch;
  acl_h_cost_table(ncclFuncAllReduce, 4096, 8, t);
  cr_assert_eq(call_v5(ctx, ncclFuncAllReduce, 4096, t, &a, &p, &nch), ncclSuccess);
  cr_assert_eq(a, NCCL_ALGO_RING);
  cr_assert_eq(p, NCCL_PROTO_LL);
  cr_assert_eq(nch, 0);
  acl_h_cost_table(ncclFuncAllReduce, 256u << 20, 8, t);
  cr_assert_eq(call_v5(ctx, ncclFuncAllReduce, 256u << 20, t, &a, &p, &nch), ncclSuccess);
  cr_assert_eq(a, NCCL_ALGO_TREE);
  cr_assert_eq(p, NCCL_PROTO_SIMPLE);
  cr_assert_eq(nch, 8);
  acl_h_cost_table(ncclFuncAllGather, 1u << 20, 8, t);
  cr_assert_eq(call_v5(ctx, ncclFuncAllGather, 1u << 20, t, &a, &p, &nch), ncclSuccess);
  cr_assert_eq(a, NCCL_ALGO_RING);
  cr_assert_eq(p, NCCL_PROTO_LL128);
  cr_assert_eq(nch, 4);
  P.v5->finalize(ctx);

  void *c2 = NULL;
  cr_assert_eq(P.v2->init(8, 1, acl_h_logger, &c2), ncclSuccess);
  int algo = -1, proto = -1, n2 = 0;
  cr_assert_eq(P.v2->getCollInfo(c2, ncclFuncAllReduce, 1u << 30, 0, 1, 1, &algo, &proto, &n2),
               ncclSuccess);
  cr_assert_eq(algo, NCCL_ALGO_TREE);
  cr_assert_eq(proto, NCCL_PROTO_SIMPLE);
  cr_assert_eq(n2, 8);
  P.v2->destroy(c2);
  unlink(path);
}

Test(abi, bad_table_rejected_whole_with_line_number)
{
  char *path = write_table("all_reduce 0 1M RING LL 0\nall_gather 0 1M WARP LL 0\n");
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x79, 8, 1, acl_h_logger, NULL, NULL);
  cr_assert_eq(acl_h_log_count("line 2"), 1, "log: %s", acl_h_log_text());
  float t[7][3], ref[7][3];
  acl_h_cost_table(ncclFuncAllReduce, 4096, 8, t);
  memcpy(ref, t, sizeof(t));
  int a, p, nch;
  cr_assert_eq(call_v5(ctx, ncclFuncAllReduce, 4096, t, &a, &p, &nch), ncclSuccess);
  cr_assert_eq(memcmp(t, ref, sizeof(t)), 0, "a rejected table must change nothing");
  P.v5->finalize(ctx);
  unlink(path);
}

Test(abi, busy_port_logged_once_and_harmless)
{
  /* Occupy a loopback port, then ask the plugin to serve on it. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  cr_assert_eq(listen(fd, 1), 0);
  socklen_t len = sizeof(a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  char port[16];
  snprintf(port, sizeof(port), "%d", ntohs(a.sin_port));
  setenv("AUTOCCL_HTTP_PORT", port, 1);
  setenv("AUTOCCL_LOCAL_RANK", "0", 1);
  acl_h_load(&P);
  void *c1 = NULL, *c2 = NULL;
  cr_assert_eq(P.v5->init(&c1, 0x9101, 2, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  cr_assert_eq(P.v5->init(&c2, 0x9102, 2, 1, acl_h_logger, NULL, NULL), ncclSuccess);
  cr_assert_eq(acl_h_log_count("HTTP endpoint disabled"), 1, "log: %s", acl_h_log_text());
  float t[7][3];
  acl_h_cost_table(ncclFuncAllReduce, 1 << 20, 2, t);
  int nch = 0;
  cr_assert_eq(
      P.v5->getCollInfo(c1, ncclFuncAllReduce, 1 << 20, 1, (float **)(void *)t, 7, 3, 0, &nch),
      ncclSuccess);
  P.v5->finalize(c1);
  P.v5->finalize(c2);
  close(fd);
}
