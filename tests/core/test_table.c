/* Tuning tables: both formats, every validation error (file, line, field),
 * the size rule, the export round trip (autoccl text and NCCL's CSV give
 * back the same decisions), the hash, the JSON document and the atomic
 * write. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/table.h"

static acl_table_t *T;
static void setup(void) { T = calloc(1, sizeof(*T)); }
static void teardown(void) { free(T); }
TestSuite(table, .init = setup, .fini = teardown);

static int parse(const char *txt, char *err, size_t n)
{
  return acl_table_parse(txt, strlen(txt), T, err, n);
}

Test(table, nccl_csv_is_read)
{
  const char *txt = "# NCCL example tuner format\n"
                    "allreduce,0,65536,ring,ll,4,1,8,-1,-1\n"
                    "allgather,65537,1048576,pat,simple,-1,-1,-1,2,-1\n"
                    "broadcast,0,max,-1,-1,-1,-1,-1,-1,-1\n";
  char err[256];
  cr_assert_eq(parse(txt, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(T->format, ACL_TABLE_FMT_NCCL_CSV);
  cr_assert_eq(T->nrules, 3);
  acl_table_query_t q = {.coll = 4, .nbytes = 1000, .nnodes = 1, .nranks = 8, .pipe_ops = 1};
  const acl_table_rule_t *r = acl_table_find(T, &q);
  cr_assert_not_null(r);
  cr_assert_eq(r->cand.algo, 1);
  cr_assert_eq(r->cand.proto, 0);
  cr_assert_eq(r->cand.nchannels, 4);
  cr_assert_eq(r->line, 2);
  q.nranks = 16; /* other shape: no match */
  cr_assert_null(acl_table_find(T, &q));
  q = (acl_table_query_t){.coll = 2, .nbytes = 100000, .nnodes = 4, .nranks = 32, .pipe_ops = 2};
  r = acl_table_find(T, &q);
  cr_assert_not_null(r);
  cr_assert_eq(r->cand.algo, 6);
  cr_assert_eq(r->cand.nchannels, 0, "-1 = NCCL decides");
  q.pipe_ops = 1;
  cr_assert_null(acl_table_find(T, &q));
  q = (acl_table_query_t){.coll = 0, .nbytes = 5, .nnodes = 1, .nranks = 2, .pipe_ops = 1};
  r = acl_table_find(T, &q);
  cr_assert_eq(r->cand.algo, -1, "algo -1: NCCL's own choice");
}

Test(table, autoccl_shape_fields_and_nccl_rules)
{
  char err[256];
  cr_assert_eq(parse("all_reduce 0 1M RING LL 0 2 * 1\n* 0 max NCCL - 0\n", err, sizeof(err)), 0,
               "%s", err);
  cr_assert_eq(T->format, ACL_TABLE_FMT_AUTOCCL);
  acl_table_query_t q = {.coll = 4, .nbytes = 10, .nnodes = 2, .nranks = 16, .pipe_ops = 1};
  cr_assert_eq(acl_table_find(T, &q)->cand.algo, 1);
  q.nnodes = 1;
  cr_assert_eq(acl_table_find(T, &q)->cand.algo, ACL_ALGO_NCCL);
}

/* Each bad line: the parse fails, and the message names the line and the
 * field (number and name) with what is accepted. */
static void bad(const char *txt, int line, const char *field, const char *what)
{
  char err[320] = "";
  cr_assert_neq(parse(txt, err, sizeof(err)), 0, "accepted: %s", txt);
  char want[32];
  snprintf(want, sizeof(want), "line %d:", line);
  cr_assert(strstr(err, want), "%s: %s", txt, err);
  if (field)
    cr_assert(strstr(err, field), "%s: want %s in: %s", txt, field, err);
  cr_assert(strstr(err, what), "%s: want '%s' in: %s", txt, what, err);
}

Test(table, every_autoccl_error_names_line_and_field)
{
  bad("all_reduce 0 1M RING LL\n", 1, NULL, "expected 6 fields");
  bad("# c\nall_reduce 0 1M RING LL 0 1 2\n", 2, NULL, "expected 6 fields");
  bad("x 0 1M RING LL 0\n", 1, "field 1 (collective)", "unknown collective");
  bad("all_reduce 1Q 1M RING LL 0\n", 1, "field 2 (min_bytes)", "bad size");
  bad("all_reduce 0 1Q RING LL 0\n", 1, "field 3 (max_bytes)", "bad size");
  bad("all_reduce 2M 1M RING LL 0\n", 1, "field 3 (max_bytes)", "smaller than min_bytes");
  bad("all_reduce 0 1M WARP LL 0\n", 1, "field 4 (algo)", "unknown algorithm");
  bad("all_reduce 0 1M RING LX 0\n", 1, "field 5 (proto)", "unknown protocol");
  bad("all_reduce 0 1M NCCL LL 0\n", 1, "field 5 (proto)", "takes protocol '-'");
  bad("all_reduce 0 1M RING LL 65\n", 1, "field 6 (channels)", "0 (NCCL decides)");
  bad("all_reduce 0 1M NCCL - 4\n", 1, "field 6 (channels)", "no channel count");
  bad("all_reduce 0 1M RING LL 0 0 8 1\n", 1, "field 7 (nnodes)", "node count");
  bad("all_reduce 0 1M RING LL 0 1 x 1\n", 1, "field 8 (nranks)", "rank count");
  bad("all_reduce 0 1M RING LL 0 1 8 -2\n", 1, "field 9 (pipe_ops)", "pipelined");
}

Test(table, every_csv_error_names_line_and_field)
{
  const char *ok = "allreduce,0,1M,ring,ll,4,1,8,1,-1\n";
  char err[256];
  cr_assert_eq(parse(ok, err, sizeof(err)), 0, "%s", err);
  bad("allreduce,0,1M,ring,ll,4,1,8,1,-1\nallreduce,0,1M,ring,ll,4,1\n", 2, NULL,
      "expected 8 to 10 comma-separated fields");
  bad("allreduce,0,1M,ring,ll,4,1,8,1,-1\nallreduce,0,1M,ring,ll,4,1,8,1,-1,5\n", 2, NULL,
      "expected 8 to 10");
  bad("sendrecv,0,1M,ring,ll,4,1,8,1,-1\n", 1, "field 1 (coll)", "unknown collective");
  bad("allreduce,a,1M,ring,ll,4,1,8,1,-1\n", 1, "field 2 (min_bytes)", "bad size");
  bad("allreduce,0,,ring,ll,4,1,8,1,-1\n", 1, "field 3 (max_bytes)", "bad size");
  bad("allreduce,9,1,ring,ll,4,1,8,1,-1\n", 1, "field 3 (max_bytes)", "smaller");
  bad("allreduce,0,1M,warp,ll,4,1,8,1,-1\n", 1, "field 4 (algo)", "unknown algorithm");
  bad("allreduce,0,1M,ring,lx,4,1,8,1,-1\n", 1, "field 5 (proto)", "unknown protocol");
  bad("allreduce,0,1M,ring,ll,99,1,8,1,-1\n", 1, "field 6 (channels)", "-1");
  bad("allreduce,0,1M,ring,ll,4,0,8,1,-1\n", 1, "field 7 (nNodes)", "node count");
  bad("allreduce,0,1M,ring,ll,4,1,q,1,-1\n", 1, "field 8 (nRanks)", "rank count");
  bad("allreduce,0,1M,ring,ll,4,1,8,0,-1\n", 1, "field 9 (numPipeOps)", "pipelined");
  bad("allreduce,0,1M,ring,ll,4,1,8,1,2\n", 1, "field 10 (regBuff)", "must be 0, 1 or -1");
}

Test(table, structural_errors_name_the_line)
{
  char big[700];
  memset(big, 'a', sizeof(big) - 2);
  big[sizeof(big) - 2] = '\n';
  big[sizeof(big) - 1] = '\0';
  bad(big, 1, NULL, "longer than");
  const char nul[] = "all_reduce 0 1M RING LL 0\nall\0reduce\n";
  char err[256] = "";
  cr_assert_neq(acl_table_parse(nul, sizeof(nul) - 1, T, err, sizeof(err)), 0);
  cr_assert(strstr(err, "line 2: contains a NUL byte"), "%s", err);
}

Test(table, load_names_the_file)
{
  char path[] = "/tmp/acl-tt-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  const char *txt = "all_reduce 0 1M RING LL 0\nall_gather 0 1M RING LX 0\n";
  cr_assert_eq(write(fd, txt, strlen(txt)), (ssize_t)strlen(txt));
  close(fd);
  char err[600];
  cr_assert_neq(acl_table_load(path, T, err, sizeof(err)), 0);
  char want[64];
  snprintf(want, sizeof(want), "%s: line 2: field 5 (proto)", path);
  cr_assert(strstr(err, want), "%s", err);
  unlink(path);
  cr_assert_neq(acl_table_load("/nonexistent/t", T, err, sizeof(err)), 0);
  cr_assert(strstr(err, "/nonexistent/t: No such file"), "%s", err);
}

/* A file that says 0 bytes and cannot be read is an error, not a table of
 * no rules; one that says 0 bytes and has text is read to its end. */
Test(table, unreadable_and_sizeless_files)
{
  char err[600] = "";
  T->nrules = -1;
  cr_assert_neq(acl_table_load("/proc/self/mem", T, err, sizeof(err)), 0,
                "/proc/self/mem loaded as %d rules", T->nrules);
  cr_assert(strstr(err, "/proc/self/mem: cannot be read"), "%s", err);
  cr_assert_neq(acl_table_load("/proc/self/status", T, err, sizeof(err)), 0);
  cr_assert(strstr(err, "/proc/self/status: line 1"), "read as empty, not parsed: %s", err);
}

/* Decisions of a run: three AllReduce sizes (one NCCL's own), one AllGather
 * of another shape, and one still exploring. */
static const acl_table_entry_t E[] = {
    {.coll = 4,
     .nbytes = 4096,
     .nnodes = 1,
     .nranks = 8,
     .pipe_ops = 1,
     .cand = {.algo = 1, .proto = 0, .nchannels = 4},
     .converged = true},
    {.coll = 4,
     .nbytes = 1 << 20,
     .nnodes = 1,
     .nranks = 8,
     .pipe_ops = 1,
     .cand = {.algo = ACL_ALGO_NCCL, .proto = -1},
     .converged = true},
    {.coll = 4,
     .nbytes = 256u << 20,
     .nnodes = 1,
     .nranks = 8,
     .pipe_ops = 1,
     .cand = {.algo = 0, .proto = 2, .nchannels = 24},
     .converged = true},
    {.coll = 2,
     .nbytes = 65536,
     .nnodes = 2,
     .nranks = 16,
     .pipe_ops = 1,
     .cand = {.algo = 6, .proto = 2, .nchannels = 0},
     .converged = true},
    {.coll = 3,
     .nbytes = 65536,
     .nnodes = 2,
     .nranks = 16,
     .pipe_ops = 1,
     .cand = {.algo = 1, .proto = 1, .nchannels = 8},
     .converged = false},
};
#define NE ((int)(sizeof(E) / sizeof(E[0])))

Test(table, size_rule_geometric_midpoints)
{
  cr_assert_eq(acl_table_from_entries(E, NE, T), 4, "the entry in progress is no rule");
  /* AllReduce 4K | 1M | 256M: borders floor(sqrt(4K*1M)) = 64K and
   * floor(sqrt(1M*256M)) = 16M; edges: half the smallest, twice the largest */
  const acl_table_rule_t *r = NULL;
  for (int i = 0; i < T->nrules; i++)
    if (T->rules[i].coll == 4 && T->rules[i].cand.algo == 1)
      r = &T->rules[i];
  cr_assert_not_null(r);
  cr_assert_eq(r->min_bytes, 2048);
  cr_assert_eq(r->max_bytes, 65536);
  acl_table_query_t q = {.coll = 4, .nnodes = 1, .nranks = 8, .pipe_ops = 1};
  int want[][2] = {{2047, -2},
                   {2048, 1},
                   {65536, 1},
                   {65537, ACL_ALGO_NCCL},
                   {16u << 20, ACL_ALGO_NCCL},
                   {(16u << 20) + 1, 0},
                   {512u << 20, 0},
                   {(512u << 20) + 1, -2}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    q.nbytes = (uint64_t)(unsigned)want[i][0];
    r = acl_table_find(T, &q);
    if (want[i][1] == -2)
      cr_assert_null(r, "%llu bytes: no rule", (unsigned long long)q.nbytes);
    else
      cr_assert(r && r->cand.algo == want[i][1], "%llu bytes", (unsigned long long)q.nbytes);
  }
}

/* Every size around every entry and border gets the same decision from a
 * and b (NULL both, or the same candidate). */
static void same_decisions(const acl_table_t *a, const acl_table_t *b, bool skip_nccl)
{
  for (int i = 0; i < NE; i++) {
    uint64_t sizes[] = {E[i].nbytes / 2 - 1, E[i].nbytes / 2, E[i].nbytes - 1,
                        E[i].nbytes,         E[i].nbytes + 1, 2 * E[i].nbytes,
                        2 * E[i].nbytes + 1, 65536,           65537,
                        16u << 20,           (16u << 20) + 1};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
      acl_table_query_t q = {.coll = E[i].coll,
                             .nbytes = sizes[k],
                             .nnodes = E[i].nnodes,
                             .nranks = E[i].nranks,
                             .pipe_ops = E[i].pipe_ops};
      const acl_table_rule_t *x = acl_table_find(a, &q), *y = acl_table_find(b, &q);
      if (skip_nccl && x && x->cand.algo == ACL_ALGO_NCCL)
        x = NULL;
      cr_assert_eq(!x, !y, "entry %d size %llu: %s vs %s", i, (unsigned long long)sizes[k],
                   x ? "rule" : "none", y ? "rule" : "none");
      if (x)
        cr_assert(acl_candidate_eq(&x->cand, &y->cand), "entry %d size %llu", i,
                  (unsigned long long)sizes[k]);
    }
  }
}

static void round_trip(acl_table_format_t fmt)
{
  acl_table_t *src = calloc(1, sizeof(*src));
  acl_table_from_entries(E, NE, src);
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_table_render(&sb, src, fmt);
  cr_assert(acl_sb_ok(&sb));
  char err[256];
  cr_assert_eq(acl_table_parse(sb.data, sb.len, T, err, sizeof(err)), 0, "%s\n%s", err, sb.data);
  cr_assert_eq(T->format, fmt, "%s", sb.data);
  same_decisions(src, T, fmt == ACL_TABLE_FMT_NCCL_CSV);
  if (fmt == ACL_TABLE_FMT_AUTOCCL) {
    cr_assert_eq(T->nrules, src->nrules);
    cr_assert_eq(T->hash, src->hash, "same rules, same hash");
  } else {
    cr_assert_eq(T->nrules, src->nrules - 1, "NCCL's own choice has no CSV spelling");
  }
  acl_sb_free(&sb);
  free(src);
}

Test(table, round_trip_autoccl_format) { round_trip(ACL_TABLE_FMT_AUTOCCL); }
Test(table, round_trip_nccl_csv) { round_trip(ACL_TABLE_FMT_NCCL_CSV); }

Test(table, hash_is_of_the_rules_not_the_spelling)
{
  char err[256];
  cr_assert_eq(parse("all_reduce 0 1M RING LL 4\n", err, sizeof(err)), 0);
  uint64_t h = T->hash;
  cr_assert_eq(parse("# x\nallreduce,0,1048576,ring,ll,4,-1,-1,-1,-1\n", err, sizeof(err)), 0);
  cr_assert_eq(T->hash, h);
  cr_assert_eq(parse("all_reduce 0 1M RING LL 8\n", err, sizeof(err)), 0);
  cr_assert_neq(T->hash, h);
}

Test(table, json_document)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_table_entry_t e[2] = {E[0], E[4]};
  e[0].speedup = 1.25;
  e[0].samples = 40;
  e[0].measured_unix = 1700000000.5;
  e[0].source = "explored";
  acl_table_meta_t m = {
      .nccl_version = "2.28.3", .gpu = "NVIDIA H200", .host = "h", .generated_unix = 1700000001.0};
  acl_table_render_json(&sb, &m, e, 2);
  cr_assert(acl_sb_ok(&sb));
  const char *want[] = {"{\"version\":1,",
                        "\"nccl_version\":\"2.28.3\"",
                        "\"gpu\":\"NVIDIA H200\"",
                        "\"collective\":\"all_reduce\",\"nbytes\":4096,\"num_pipe_ops\":1,"
                        "\"nranks\":8,\"nnodes\":1,\"algo\":\"RING\",\"proto\":\"LL\","
                        "\"channels\":4,\"converged\":true,\"source\":\"explored\","
                        "\"speedup\":1.2500,\"samples\":40,\"measured_unix\":1700000000.500",
                        "\"converged\":false",
                        "\"rules\":[{\"collective\":\"all_reduce\","
                        "\"min_bytes\":2048,\"max_bytes\":8192",
                        "\"hash\":\""};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    cr_assert(strstr(sb.data, want[i]), "want %s in %s", want[i], sb.data);
  acl_sb_reset(&sb);
  acl_table_render_json(&sb, NULL, NULL, 0);
  cr_assert(strstr(sb.data, "\"nccl_version\":null"), "%s", sb.data);
  cr_assert(strstr(sb.data, "\"entries\":[]"), "%s", sb.data);
  acl_sb_free(&sb);
}

Test(table, atomic_write_replaces_whole)
{
  char path[64];
  snprintf(path, sizeof(path), "/tmp/acl-aw-%d.txt", (int)getpid());
  char err[256];
  cr_assert_eq(acl_table_write_atomic(path, "one\n", 4, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(acl_table_write_atomic(path, "two\n", 4, err, sizeof(err)), 0, "%s", err);
  FILE *f = fopen(path, "r");
  char buf[16] = "";
  cr_assert(fgets(buf, sizeof(buf), f));
  fclose(f);
  cr_assert_str_eq(buf, "two\n");
  unlink(path);
  cr_assert_neq(acl_table_write_atomic("/nonexistent/dir/t", "x", 1, err, sizeof(err)), 0);
  cr_assert(strstr(err, "/nonexistent/dir/t"), "%s", err);
  cr_assert_eq(acl_table_format_for_path("a.CSV"), ACL_TABLE_FMT_NCCL_CSV);
  cr_assert_eq(acl_table_format_for_path("a.json"), -1);
  cr_assert_eq(acl_table_format_for_path("a.txt"), ACL_TABLE_FMT_AUTOCCL);
}

/* A file in the format of NCCL's sample nccl_tuner.conf: numPipeOps and
 * regBuff optional, rules that depend on buffer registration among the
 * others. Every rule that can be honoured loads; those with regBuff 0/1 are
 * listed by line, and a later lookup never sees them. */
Test(table, nccl_sample_format_loads_what_it_can)
{
  const char *txt =
      "# NCCL tuner configuration, CSV\n" /* 1 */
      "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,"
      "numPipeOps,regBuff\n"                                    /* 2 */
      "\n"                                                      /* 3 */
      "allreduce,0,65536,tree,simple,2,1,-1,-1,1\n"             /* 4: registered only */
      "allreduce,65537,1048576,ring,simple,4,4,32,1,0\n"        /* 5: unregistered only */
      "allreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4,-1\n" /* 6 */
      "allgather,0,4294967295,ring,simple,4,2,-1\n"             /* 7: 8 fields */
      "reducescatter,0,131072,ring,simple,2,1,-1,1\n"           /* 8: 9 fields */
      "reduce,0,4294967295,tree,simple,-1,-1,-1\n";             /* 9 */
  char err[256];
  cr_assert_eq(parse(txt, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(T->format, ACL_TABLE_FMT_NCCL_CSV);
  cr_assert_eq(T->nrules, 4);
  cr_assert_eq(T->nskipped, 2);
  cr_assert_str_eq(T->skipped, "4, 5");
  int lines[] = {6, 7, 8, 9};
  for (int i = 0; i < 4; i++)
    cr_assert_eq(T->rules[i].line, lines[i]);
  /* 8 fields: numPipeOps any; 9: as written */
  cr_assert_eq(T->rules[1].pipe_ops, ACL_TABLE_ANY);
  cr_assert_eq(T->rules[1].nnodes, 2);
  cr_assert_eq(T->rules[2].pipe_ops, 1);
  cr_assert_eq(T->rules[0].cand.nchannels, 0, "channels -1 = NCCL decides");
  /* AllReduce 1 KiB on one node: only the skipped registered-buffer rule
   * spoke for it, so nothing does now */
  acl_table_query_t q = {.coll = 4, .nbytes = 1024, .nnodes = 1, .nranks = 8, .pipe_ops = 1};
  cr_assert_null(acl_table_find(T, &q));
  q.nbytes = 4u << 20;
  q.pipe_ops = 4;
  const acl_table_rule_t *r = acl_table_find(T, &q);
  cr_assert(r && r->line == 6);
  /* the same rules without the skipped ones hash alike: the skipped ones
   * are no part of what ranks agree on */
  uint64_t h = T->hash;
  const char *kept = "allreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4,-1\n"
                     "allgather,0,4294967295,ring,simple,4,2,-1\n"
                     "reducescatter,0,131072,ring,simple,2,1,-1,1\n"
                     "reduce,0,4294967295,tree,simple,-1,-1,-1\n";
  cr_assert_eq(parse(kept, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(T->hash, h);
  cr_assert_eq(T->nskipped, 0);
}

Test(table, many_skipped_lines_are_listed_within_bounds)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  for (int i = 0; i < 200; i++)
    acl_sb_printf(&sb, "allreduce,%d,%d,ring,simple,4,1,-1,1,%d\n", 2 * i, 2 * i + 1, i % 2);
  char err[256];
  cr_assert_eq(acl_table_parse(sb.data, sb.len, T, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(T->nskipped, 200);
  cr_assert_eq(T->nrules, 0);
  cr_assert(strncmp(T->skipped, "1, 2, 3, ", 9) == 0, "%s", T->skipped);
  cr_assert(strstr(T->skipped, "...") != NULL, "%s", T->skipped);
  acl_sb_free(&sb);
}

/* The JSON document of the export is a table: the same decisions as the
 * entries' rules, and the NCCL version and GPU it was measured on. */
Test(table, json_document_is_read_back)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_table_meta_t m = {.nccl_version = "2.28.3", .gpu = "NVIDIA H200", .host = "h"};
  acl_table_render_json(&sb, &m, E, NE);
  cr_assert(acl_sb_ok(&sb));
  char err[256];
  cr_assert_eq(acl_table_parse(sb.data, sb.len, T, err, sizeof(err)), 0, "%s\n%s", err, sb.data);
  acl_table_t *src = calloc(1, sizeof(*src));
  acl_table_from_entries(E, NE, src);
  cr_assert_eq(T->format, ACL_TABLE_FMT_JSON);
  cr_assert_eq(T->nrules, src->nrules);
  cr_assert_eq(T->hash, src->hash, "same rules, same hash as the text formats");
  same_decisions(src, T, false);
  cr_assert_str_eq(T->nccl_version, "2.28.3");
  cr_assert_str_eq(T->gpu, "NVIDIA H200");
  free(src);
  acl_sb_free(&sb);
}

/* An editor's UTF-8 byte order mark before either format. */
Test(table, byte_order_mark_is_skipped)
{
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_sb_puts(&sb, "\xef\xbb\xbf");
  acl_table_meta_t m = {.nccl_version = "2.28.3", .gpu = "NVIDIA H200", .host = "h"};
  acl_table_render_json(&sb, &m, E, NE);
  cr_assert(acl_sb_ok(&sb));
  char err[256];
  cr_assert_eq(acl_table_parse(sb.data, sb.len, T, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(T->format, ACL_TABLE_FMT_JSON);
  acl_table_t *src = calloc(1, sizeof(*src));
  acl_table_from_entries(E, NE, src);
  cr_assert_eq(T->nrules, src->nrules);
  free(src);
  acl_sb_free(&sb);
  const char *txt = "\xef\xbb\xbf"
                    "all_reduce 0 1M RING LL 4\n";
  cr_assert_eq(acl_table_parse(txt, strlen(txt), T, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(T->nrules, 1);
}

Test(table, json_errors_are_named)
{
  char err[256];
  cr_assert_neq(parse("{\"version\":1,\"rules\":[", err, sizeof(err)), 0);
  cr_assert(strstr(err, "not valid JSON"), "%s", err);
  cr_assert_neq(parse("{\"version\":2,\"rules\":[]}", err, sizeof(err)), 0);
  cr_assert(strstr(err, "\"version\" must be 1"), "%s", err);
  cr_assert_neq(parse("{\"version\":1}", err, sizeof(err)), 0);
  cr_assert(strstr(err, "no \"rules\""), "%s", err);
  cr_assert_neq(parse("{\"version\":1,\"rules\":[{\"collective\":\"all_reduce\","
                      "\"min_bytes\":0,\"max_bytes\":9,\"algo\":\"RING\",\"proto\":\"LX\"}]}",
                      err, sizeof(err)),
                0);
  cr_assert(strstr(err, "JSON: rules[0]: unknown algorithm/protocol"), "%s", err);
  cr_assert_neq(parse("{\"version\":1,\"rules\":[{\"collective\":\"all_reduce\","
                      "\"min_bytes\":5,\"max_bytes\":4,\"algo\":\"NCCL\"}]}",
                      err, sizeof(err)),
                0);
  cr_assert(strstr(err, "smaller"), "%s", err);
  cr_assert_eq(parse("{\"version\":1,\"rules\":[{\"collective\":\"all_reduce\","
                     "\"min_bytes\":0,\"max_bytes\":\"max\",\"algo\":\"RING\","
                     "\"proto\":\"LL\",\"channels\":8,\"nranks\":4}]}",
                     err, sizeof(err)),
               0, "%s", err);
  cr_assert_eq(T->rules[0].max_bytes, UINT64_MAX);
  cr_assert_eq(T->rules[0].nranks, 4);
  cr_assert_eq(T->rules[0].nnodes, ACL_TABLE_ANY, "absent = any");
  cr_assert_eq(T->rules[0].cand.nchannels, 8);
}

/* The text formats carry the metadata in a comment that NCCL's reader
 * skips and autoccl's reads back. */
Test(table, text_meta_round_trip_and_check)
{
  acl_table_t *src = calloc(1, sizeof(*src));
  acl_table_from_entries(E, NE, src);
  snprintf(src->nccl_version, sizeof(src->nccl_version), "2.28.3");
  snprintf(src->gpu, sizeof(src->gpu), "NVIDIA H200");
  char err[256];
  for (int fmt = 0; fmt < 2; fmt++) {
    acl_strbuf_t sb;
    acl_sb_init(&sb);
    acl_table_render(&sb, src, (acl_table_format_t)fmt);
    cr_assert(strstr(sb.data, "# autoccl-meta: nccl_version=2.28.3; gpu=NVIDIA H200\n"), "%s",
              sb.data);
    cr_assert_eq(acl_table_parse(sb.data, sb.len, T, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(T->nccl_version, "2.28.3");
    cr_assert_str_eq(T->gpu, "NVIDIA H200");
    acl_sb_free(&sb);
  }
  cr_assert_eq(acl_table_meta_check(T, "2.28.3", "NVIDIA H200", err, sizeof(err)), 0);
  cr_assert_eq(acl_table_meta_check(T, "", "", err, sizeof(err)), 0, "unknown here: no evidence");
  cr_assert_eq(acl_table_meta_check(T, "2.28.9", "NVIDIA H200", err, sizeof(err)), -1);
  cr_assert_str_eq(err, "recorded with NCCL 2.28.3, this process runs NCCL 2.28.9");
  cr_assert_eq(acl_table_meta_check(T, "2.28.3", "NVIDIA A100-SXM4-80GB", err, sizeof(err)), -1);
  cr_assert_str_eq(err, "recorded on NVIDIA H200, this process runs on NVIDIA A100-SXM4-80GB");
  cr_assert_eq(
      parse("# autoccl-meta: nccl_version=-; gpu=-\nall_reduce 0 1M RING LL 4\n", err, sizeof(err)),
      0);
  cr_assert_str_eq(T->nccl_version, "");
  cr_assert_eq(acl_table_meta_check(T, "2.28.9", "X", err, sizeof(err)), 0);
  free(src);
}
