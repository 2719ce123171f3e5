/* Tuning tables in the plugin: a rule this communicator cannot run is
 * skipped with one warning, a table path that is no regular file is refused
 * without blocking, ranks whose tables differ all leave NCCL's choices,
 * online mode starts on the table (warm start), and AUTOCCL_TABLE_OUT is
 * written at finalize and reads back to the same decisions. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/table.h"
#include "harness.h"

static acl_h_plugin_t P;

static void teardown(void) { acl_h_unload(&P); }

TestSuite(table, .fini = teardown, .timeout = 30);

static char *write_table(const char *text)
{
  static char path[64];
  snprintf(path, sizeof(path), "/tmp/acl-table-XXXXXX");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  return path;
}

/* One v5 call; *changed: the plugin touched the cost table or channels. */
static ncclResult_t call(void *ctx, int coll, size_t nbytes, int nranks, int *algo, int *proto,
                         int *nch, bool *changed)
{
  float t[7][3], ref[7][3];
  acl_h_cost_table(coll, nbytes, nranks, t);
  memcpy(ref, t, sizeof(t));
  *nch = 0;
  ncclResult_t rc =
      P.v5->getCollInfo(ctx, (ncclFunc_t)coll, nbytes, 1, (float **)(void *)t, 7, 3, 0, nch);
  if (changed)
    *changed = memcmp(t, ref, sizeof(t)) != 0 || *nch != 0;
  acl_h_select(t, algo, proto);
  return rc;
}

Test(table, static_rule_unavailable_is_skipped_with_one_warning)
{
  /* NVLS is never offered for Broadcast: NCCL's choice runs, the call
   * succeeds, one warning names the file and line; the all_reduce rule
   * still applies. */
  char *path = write_table("# rules\nbroadcast 0 max NVLS LL 0\nall_reduce 0 max RING LL 4\n");
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x78, 8, 1, acl_h_logger, NULL, NULL);
  int a, p, nch;
  bool changed;
  for (int i = 0; i < 20; i++) {
    cr_assert_eq(call(ctx, ncclFuncBroadcast, 4096, 8, &a, &p, &nch, &changed), ncclSuccess);
    cr_assert_not(changed, "NCCL's own choice must run untouched");
  }
  cr_assert_eq(acl_h_log_count("not available"), 1, "log: %s", acl_h_log_text());
  cr_assert_eq(acl_h_log_count("line 2"), 1, "log: %s", acl_h_log_text());
  cr_assert_eq(call(ctx, ncclFuncAllReduce, 4096, 8, &a, &p, &nch, &changed), ncclSuccess);
  cr_assert_eq(a, NCCL_ALGO_RING);
  cr_assert_eq(p, NCCL_PROTO_LL);
  cr_assert_eq(nch, 4);
  P.v5->finalize(ctx);
  unlink(path);
}

/* NCCL picks the strict minimum: an entry NCCL itself costs at zero (or
 * minus zero) would tie with the decision's, so it becomes positive; a
 * positive or unavailable (-1) entry is left as NCCL gave it. */
Test(table, static_rule_wins_over_zero_cost_entries)
{
  char *path = write_table("all_reduce 0 max RING LL 4\n");
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x79, 8, 1, acl_h_logger, NULL, NULL);
  float t[7][3], ref[7][3];
  acl_h_cost_table(ncclFuncAllReduce, 4096, 8, t);
  t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 0.0f;
  t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = -0.0f;
  memcpy(ref, t, sizeof(t));
  int nch = 0, a, p;
  cr_assert_eq(
      P.v5->getCollInfo(ctx, ncclFuncAllReduce, 4096, 1, (float **)(void *)t, 7, 3, 0, &nch),
      ncclSuccess);
  acl_h_select(t, &a, &p);
  cr_assert_eq(a, NCCL_ALGO_RING);
  cr_assert_eq(p, NCCL_PROTO_LL);
  cr_assert_eq(nch, 4);
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 3; j++) {
      if (i == NCCL_ALGO_RING && j == NCCL_PROTO_LL)
        cr_assert_eq(t[i][j], 0.0f);
      else if (ref[i][j] == 0.0f)
        cr_assert_gt(t[i][j], 0.0f, "[%d][%d] still ties with the decision", i, j);
      else
        cr_assert_eq(t[i][j], ref[i][j], "[%d][%d] changed: %g -> %g", i, j, ref[i][j], t[i][j]);
    }
  P.v5->finalize(ctx);
  unlink(path);
}

Test(table, fifo_table_refused_without_blocking)
{
  char path[64];
  snprintf(path, sizeof(path), "/tmp/acl-fifo-%d", (int)getpid());
  unlink(path);
  cr_assert_eq(mkfifo(path, 0600), 0);
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  acl_h_load(&P);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x7a, 8, 1, acl_h_logger, NULL, NULL); /* no writer: would block forever */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  cr_assert_lt(s, 2.0, "init took %.2f s", s);
  cr_assert_eq(acl_h_log_count("not a regular file"), 1, "log: %s", acl_h_log_text());
  int a, p, nch;
  bool changed;
  cr_assert_eq(call(ctx, ncclFuncAllReduce, 4096, 8, &a, &p, &nch, &changed), ncclSuccess);
  cr_assert_not(changed);
  P.v5->finalize(ctx);
  unlink(path);

  /* a device too */
  setenv("AUTOCCL_TABLE", "/dev/zero", 1);
  acl_table_t *t = calloc(1, sizeof(*t));
  char err[256];
  cr_assert_neq(acl_table_load("/dev/zero", t, err, sizeof(err)), 0);
  cr_assert(strstr(err, "not a regular file"), "%s", err);
  cr_assert_neq(acl_table_load("/tmp", t, err, sizeof(err)), 0);
  cr_assert(strstr(err, "not a regular file"), "%s", err);
  free(t);
}

/* Rank `rank` of 2 in static mode with its own table: joins, signals, waits,
 * then 20 calls; exit status: calls whose cost table the plugin changed
 * (+100 on a failed call). */
static int run_rank(const char *mode, const char *table, uint64_t comm, int rank, int wait_fd,
                    int tell_fd)
{
  setenv("AUTOCCL_MODE", mode, 1);
  setenv("AUTOCCL_TABLE", table, 1);
  acl_h_load(&P);
  void *pc = NULL, *tc = NULL;
  int mask = 0;
  char c = 0;
  P.prof->init(&pc, comm, &mask, "table", 1, 2, rank, acl_h_logger);
  P.v5->init(&tc, comm, 2, 1, acl_h_logger, NULL, NULL);
  if (tell_fd >= 0 && write(tell_fd, "r", 1) != 1)
    return 102;
  if (wait_fd >= 0 && read(wait_fd, &c, 1) != 1)
    return 101;
  int changed_calls = 0;
  for (int i = 0; i < 20; i++) {
    int a, p, nch;
    bool changed;
    if (call(tc, ncclFuncAllReduce, 1 << 20, 2, &a, &p, &nch, &changed) != ncclSuccess)
      return 100;
    changed_calls += changed;
  }
  if (acl_h_log_count("differ") < 1 && changed_calls == 0)
    fprintf(stderr, "%s", acl_h_log_text());
  if (tell_fd >= 0 && write(tell_fd, "d", 1) != 1)
    return 103;
  if (wait_fd >= 0 && read(wait_fd, &c, 1) < 0)
    return 104;
  P.v5->finalize(tc);
  P.prof->finalize(pc);
  return changed_calls;
}

/* Returns the changed-call counts of the first (child) and second rank. */
static void two_ranks(const char *mode, const char *t0, const char *t1, int *first, int *second)
{
  uint64_t comm = 0xdef000ull + (uint64_t)getpid();
  int to_child[2], to_parent[2];
  cr_assert_eq(pipe(to_child), 0);
  cr_assert_eq(pipe(to_parent), 0);
  pid_t child = fork();
  if (child == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    _exit(run_rank(mode, t0, comm, 0, to_child[0], to_parent[1]));
  }
  close(to_child[0]);
  close(to_parent[1]);
  char c;
  cr_assert_eq(read(to_parent[0], &c, 1), 1); /* child joined */
  /* second rank: joins, then lets the child call */
  setenv("AUTOCCL_MODE", mode, 1);
  setenv("AUTOCCL_TABLE", t1, 1);
  acl_h_load(&P);
  void *pc = NULL, *tc = NULL;
  int mask = 0;
  P.prof->init(&pc, comm, &mask, "table", 1, 2, 1, acl_h_logger);
  P.v5->init(&tc, comm, 2, 1, acl_h_logger, NULL, NULL);
  cr_assert_eq(write(to_child[1], "g", 1), 1);
  int changed_calls = 0;
  for (int i = 0; i < 20; i++) {
    int a, p, nch;
    bool changed;
    cr_assert_eq(call(tc, ncclFuncAllReduce, 1 << 20, 2, &a, &p, &nch, &changed), ncclSuccess);
    changed_calls += changed;
  }
  cr_assert_eq(read(to_parent[0], &c, 1), 1); /* child done calling */
  close(to_child[1]);
  int st = 0;
  waitpid(child, &st, 0);
  cr_assert(WIFEXITED(st), "first rank crashed");
  *first = WEXITSTATUS(st);
  *second = changed_calls;
  P.v5->finalize(tc);
  P.prof->finalize(pc);
}

Test(table, ranks_with_different_tables_all_leave_nccl_choice)
{
  char a[64], b[64];
  snprintf(a, sizeof(a), "%s", write_table("all_reduce 0 max RING LL 4\n"));
  snprintf(b, sizeof(b), "%s", write_table("all_reduce 0 max RING SIMPLE 8\n"));
  int first = -1, second = -1;
  two_ranks("static", a, b, &first, &second);
  cr_assert_eq(first, 0, "the first rank must leave NCCL's choices too (%d changed calls)", first);
  cr_assert_eq(second, 0, "the second rank must leave NCCL's choices (%d changed)", second);
  cr_assert_geq(acl_h_log_count("AUTOCCL_TABLE differs between ranks"), 1, "log: %s",
                acl_h_log_text());
  unlink(a);
  unlink(b);
}

Test(table, ranks_with_equal_tables_apply_them)
{
  char a[64], b[64];
  /* same rules, other spelling and comments: the hash is of the rules */
  snprintf(a, sizeof(a), "%s", write_table("all_reduce 0 max RING LL 4\n"));
  snprintf(b, sizeof(b), "%s", write_table("# same\nAllReduce,0,max,Ring,LL,4\n"));
  int first = -1, second = -1;
  two_ranks("static", a, b, &first, &second);
  cr_assert_eq(first, 20);
  cr_assert_eq(second, 20);
  unlink(a);
  unlink(b);
}

/* Online: equal tables warm-start both ranks (the table's decision runs from
 * the first call, NCCL's own in the validation's short blocks); different
 * tables: no warm start on either rank (without samples nothing is
 * explored, so NCCL's choice runs throughout). */
Test(table, online_warm_start_needs_equal_tables)
{
  char a[64], b[64];
  snprintf(a, sizeof(a), "%s", write_table("all_reduce 0 max RING LL 4\n"));
  snprintf(b, sizeof(b), "%s", write_table("all_reduce 0 max RING SIMPLE 8\n"));
  int first = -1, second = -1;
  two_ranks("online", a, b, &first, &second);
  cr_assert_eq(first, 0, "different tables: no warm start (%d changed calls)", first);
  cr_assert_eq(second, 0, "different tables: no warm start (%d changed calls)", second);
  unlink(a);
  unlink(b);
}

/* (A test of its own: the configuration is read once per process.) */
Test(table, online_warm_start_with_equal_tables)
{
  char a[64], b[64];
  snprintf(a, sizeof(a), "%s", write_table("all_reduce 0 max RING LL 4\n"));
  snprintf(b, sizeof(b), "%s",
           write_table("# the same rule\nallreduce,0,max,ring,ll,4,-1,-1,-1,-1\n"));
  int first = -1, second = -1;
  two_ranks("online", a, b, &first, &second);
  cr_assert_geq(first, 12, "equal tables: warm start (%d changed calls of 20)", first);
  cr_assert_geq(second, 12, "equal tables: warm start (%d changed calls of 20)", second);
  unlink(a);
  unlink(b);
}

Test(table, online_warm_start_runs_the_table_from_the_first_call_and_exports)
{
  char out[64];
  snprintf(out, sizeof(out), "/tmp/acl-out-%d.txt", (int)getpid());
  unlink(out);
  char *path = write_table("all_reduce 0 max RING LL 4 1 8 *\n");
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  setenv("AUTOCCL_TABLE_OUT", out, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x7c0000ull + (uint64_t)getpid(), 8, 1, acl_h_logger, NULL, NULL);
  int a, p, nch;
  cr_assert_eq(call(ctx, ncclFuncAllReduce, 1 << 20, 8, &a, &p, &nch, NULL), ncclSuccess);
  cr_assert_eq(a, NCCL_ALGO_RING, "log: %s", acl_h_log_text());
  cr_assert_eq(p, NCCL_PROTO_LL);
  cr_assert_eq(nch, 4);
  /* not covered (AllGather): explores as usual, NCCL's choice during warm-up */
  bool changed;
  cr_assert_eq(call(ctx, ncclFuncAllGather, 1 << 20, 8, &a, &p, &nch, &changed), ncclSuccess);
  cr_assert_not(changed);
  P.v5->finalize(ctx);
  acl_table_t *t = calloc(1, sizeof(*t));
  char err[256];
  cr_assert_eq(acl_table_load(out, t, err, sizeof(err)), 0, "%s", err);
  acl_table_query_t q = {.coll = 4, .nbytes = 1 << 20, .nnodes = 1, .nranks = 8, .pipe_ops = 1};
  const acl_table_rule_t *r = acl_table_find(t, &q);
  cr_assert_not_null(r, "the warm-started workload is exported");
  cr_assert_eq(r->cand.algo, NCCL_ALGO_RING);
  cr_assert_eq(r->cand.proto, NCCL_PROTO_LL);
  cr_assert_eq(r->cand.nchannels, 4);
  q.coll = 2; /* AllGather: still exploring, not a rule */
  cr_assert_null(acl_table_find(t, &q));
  free(t);
  struct stat st;
  char tmp[96];
  snprintf(tmp, sizeof(tmp), "%s.tmp.%d", out, (int)getpid());
  cr_assert_neq(stat(tmp, &st), 0, "no temp file left behind");
  unlink(out);
  unlink(path);
}

Test(table, json_export_is_the_api_document)
{
  /* AUTOCCL_TABLE_OUT=*.json writes what GET /api/v1/table serves */
  char out[64];
  snprintf(out, sizeof(out), "/tmp/acl-out-%d.json", (int)getpid());
  unlink(out);
  char *path = write_table("all_reduce 0 max RING LL 4\n");
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  setenv("AUTOCCL_TABLE_OUT", out, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x7d0000ull + (uint64_t)getpid(), 8, 1, acl_h_logger, NULL, NULL);
  int a, p, nch;
  cr_assert_eq(call(ctx, ncclFuncAllReduce, 1 << 20, 8, &a, &p, &nch, NULL), ncclSuccess);
  cr_assert_eq(call(ctx, ncclFuncAllGather, 1 << 20, 8, &a, &p, &nch, NULL), ncclSuccess);
  P.v5->finalize(ctx);
  FILE *f = fopen(out, "r");
  cr_assert_not_null(f);
  static char doc[65536];
  size_t n = fread(doc, 1, sizeof(doc) - 1, f);
  fclose(f);
  doc[n] = '\0';
  const char *want[] = {"{\"version\":1,",
                        "\"collective\":\"all_reduce\",\"nbytes\":1048576,"
                        "\"num_pipe_ops\":1,\"nranks\":8,\"nnodes\":1,\"algo\":\"RING\","
                        "\"proto\":\"LL\",\"channels\":4,\"converged\":true,\"source\":\"table\"",
                        "\"collective\":\"all_gather\"", "\"converged\":false",
                        "\"rules\":[{\"collective\":\"all_reduce\",\"min_bytes\":524288,"
                        "\"max_bytes\":2097152"};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    cr_assert(strstr(doc, want[i]), "want %s in %s", want[i], doc);
  unlink(out);
  unlink(path);
}

/* A file in the format of NCCL's sample nccl_tuner.conf: the rules on
 * regBuff are skipped with one warning naming their lines, the others
 * apply (here: AllGather on 2 nodes would not match; the AllReduce rule
 * with numPipeOps absent and the Broadcast one do). */
Test(table, nccl_sample_format_skips_regbuff_rules_with_one_warning)
{
  char *path = write_table("# coll,min,max,algo,proto,channels,nNodes,nRanks,numPipeOps,regBuff\n"
                           "allreduce,0,65536,tree,simple,2,1,-1,-1,1\n"
                           "allreduce,0,4294967295,ring,ll,4,-1,-1\n"
                           "broadcast,0,32768,ring,simple,2,-1,-1,1,0\n"
                           "broadcast,0,4294967295,ring,ll128,-1,-1,-1,-1,-1\n");
  setenv("AUTOCCL_MODE", "static", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x79, 8, 1, acl_h_logger, NULL, NULL);
  int a, p, nch;
  cr_assert_eq(call(ctx, ncclFuncAllReduce, 4096, 8, &a, &p, &nch, NULL), ncclSuccess);
  cr_assert(a == NCCL_ALGO_RING && p == NCCL_PROTO_LL && nch == 4, "the 8-field rule applies");
  cr_assert_eq(call(ctx, ncclFuncBroadcast, 4096, 8, &a, &p, &nch, NULL), ncclSuccess);
  cr_assert(a == NCCL_ALGO_RING && p == NCCL_PROTO_LL128 && nch == 0,
            "the regBuff 0 rule is skipped, the next applies");
  cr_assert_eq(acl_h_log_count("2 rules skipped (lines 2, 4)"), 1, "log: %s", acl_h_log_text());
  cr_assert_eq(acl_h_log_count("buffer registration"), 1, "log: %s", acl_h_log_text());
  cr_assert_eq(acl_h_log_count("the other 2 apply"), 1, "log: %s", acl_h_log_text());
  P.v5->finalize(ctx);
  unlink(path);
}

/* Planted objects at every path the plugin writes: a FIFO at the table's
 * destination, another at its old temporary name (the pid is public) and a
 * FIFO as the trace. Finalize ends within its 2 s bound, every object is
 * left as it was, and the table refusal is said. */
Test(table, finalize_is_bounded_with_planted_fifos)
{
  char out[64], tmp[96], trace[64];
  snprintf(out, sizeof(out), "/tmp/acl-fifo-out-%d.txt", (int)getpid());
  snprintf(tmp, sizeof(tmp), "%s.tmp.%d", out, (int)getpid());
  snprintf(trace, sizeof(trace), "/tmp/acl-fifo-trace-%d.jsonl", (int)getpid());
  unlink(out);
  unlink(tmp);
  unlink(trace);
  cr_assert_eq(mkfifo(out, 0666), 0);
  cr_assert_eq(mkfifo(tmp, 0666), 0);
  cr_assert_eq(mkfifo(trace, 0666), 0);
  char *path = write_table("all_reduce 0 max RING LL 4\n");
  setenv("AUTOCCL_MODE", "online", 1);
  setenv("AUTOCCL_TABLE", path, 1);
  setenv("AUTOCCL_TABLE_OUT", out, 1);
  setenv("AUTOCCL_TRACE", trace, 1);
  acl_h_load(&P);
  void *ctx = NULL;
  P.v5->init(&ctx, 0x7e0000ull + (uint64_t)getpid(), 8, 1, acl_h_logger, NULL, NULL);
  int a, p, nch;
  cr_assert_eq(call(ctx, ncclFuncAllReduce, 1 << 20, 8, &a, &p, &nch, NULL), ncclSuccess);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  P.v5->finalize(ctx);
  acl_h_unload(&P); /* the process's last communicator: the trace writer stops */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  unsetenv("AUTOCCL_TRACE");
  struct stat st;
  bool fifos = lstat(out, &st) == 0 && S_ISFIFO(st.st_mode) && lstat(tmp, &st) == 0 &&
               S_ISFIFO(st.st_mode) && lstat(trace, &st) == 0 && S_ISFIFO(st.st_mode);
  unlink(out);
  unlink(tmp);
  unlink(trace);
  unlink(path);
  cr_assert_lt(s, 2.0, "finalize took %.2f s", s);
  cr_assert(fifos, "a planted FIFO was replaced");
  cr_assert_geq(acl_h_log_count("a FIFO, not a regular file"), 1, "log: %s", acl_h_log_text());
}
