/* Merging sources by communicator, sorting, the weighted speedup, the
 * plot grid and the --json / -b outputs. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "tui/top.h"

/* A source: rank r of communicators dp (named) and an unnamed one. */
static void make_source(acl_top_model_t *m, int rank, const char *extra_workload)
{
  char doc[4096];
  int n = snprintf(
      doc, sizeof(doc),
      "{\"version\":1,\"host\":\"h%d\",\"pid\":%d,\"profiler\":{\"source\":\"%s\"},"
      "\"communicators\":["
      " {\"id\":\"0x1a2b3c4d5e6f7081\",\"name\":\"dp\",\"nranks\":2,\"consensus_wait_seconds\":0.5}"
      ","
      " {\"id\":\"0x99aabbccddeeff00\",\"name\":\"0x99aabbccddeeff00\",\"nranks\":2,"
      "  \"consensus_wait_seconds\":null}],"
      "\"workloads\":["
      " {\"comm\":\"0x1a2b3c4d5e6f7081\",\"rank\":%d,\"collective\":\"AllReduce\",\"bytes\":1024,"
      "  "
      "\"state\":\"converged\",\"speedup\":2.0,\"calls\":10,\"baseline_seconds\":1.0,\"busbw\":5e9}"
      ","
      " {\"comm\":\"0x99aabbccddeeff00\",\"rank\":%d,\"collective\":\"AllGather\",\"bytes\":4096,"
      "  "
      "\"state\":\"exploring\",\"speedup\":1.0,\"calls\":30,\"baseline_seconds\":1.0,\"busbw\":"
      "null},"
      " {\"comm\":\"0x1a2b3c4d5e6f7081\",\"rank\":%d,\"collective\":\"AllReduce\",\"bytes\":"
      "1048576,"
      "  "
      "\"state\":\"warmup\",\"speedup\":null,\"calls\":3,\"baseline_seconds\":null,\"busbw\":7e9}%"
      "s%s]}",
      rank, 100 + rank, rank ? "cupti" : "nccl", rank, rank, rank, extra_workload ? "," : "",
      extra_workload ? extra_workload : "");
  acl_top_model_init(m);
  char err[256];
  cr_assert_eq(acl_top_parse_state(doc, (size_t)n, m, err, sizeof(err)), 0, "%s", err);
}

Test(view, merges_sources_by_communicator)
{
  acl_top_model_t a, b;
  make_source(&a, 0, NULL);
  make_source(&b, 1, NULL);
  const acl_top_model_t *ms[3] = {&a, NULL, &b}; /* a source without data yet */
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 3), 0);
  cr_expect_eq(v.nrows, 6);
  cr_expect_eq(v.total, 6);
  cr_expect_eq(v.converged, 2);
  cr_assert_eq(v.ncomms, 2);
  cr_expect_str_eq(v.comms[0].label, "dp");
  cr_expect_eq(v.comms[0].sources, 2);
  cr_expect_float_eq(v.comms[0].consensus_wait_seconds, 1.0, 1e-12); /* summed */
  cr_expect(isnan(v.comms[1].consensus_wait_seconds));               /* all null */
  cr_expect_str_eq(v.comms[1].label, "0x99aabbcc");                  /* short id */
  cr_expect_float_eq(v.consensus_wait_seconds, 1.0, 1e-12);
  cr_expect_str_eq(v.profiler, "nccl+cupti");
  /* Merged order: communicator label, collective, size, rank, source. */
  const char *want_label[] = {"0x99aabbcc", "0x99aabbcc", "dp", "dp", "dp", "dp"};
  int64_t want_bytes[] = {4096, 4096, 1024, 1024, 1048576, 1048576};
  int want_rank[] = {0, 1, 0, 1, 0, 1};
  for (int i = 0; i < 6; i++) {
    cr_expect_str_eq(v.rows[i].comm_label, want_label[i], "row %d", i);
    cr_expect_eq(v.rows[i].w->bytes, want_bytes[i], "row %d", i);
    cr_expect_eq(v.rows[i].w->rank, want_rank[i], "row %d", i);
    cr_expect_eq(v.rows[i].source, want_rank[i] ? 2 : 0, "row %d", i);
  }
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
  acl_top_model_clear(&b);
}

Test(view, workload_of_unlisted_communicator_gets_short_id)
{
  acl_top_model_t a;
  make_source(&a, 0, "{\"comm\":\"0xdeadbeefcafef00d\",\"collective\":\"Reduce\"}");
  const acl_top_model_t *ms[1] = {&a};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 1), 0);
  bool found = false;
  for (int i = 0; i < v.nrows; i++)
    if (!strcmp(v.rows[i].w->collective, "Reduce")) {
      cr_expect_str_eq(v.rows[i].comm_label, "0xdeadbeef");
      found = true;
    }
  cr_expect(found);
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
}

Test(view, weighted_speedup_uses_calls_times_baseline)
{
  acl_top_model_t a;
  make_source(&a, 0, NULL);
  const acl_top_model_t *ms[1] = {&a};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 1), 0);
  /* (10*1*2.0 + 30*1*1.0) / (10 + 30) = 1.25; the warm-up row (null speedup,
   * null baseline) is left out rather than counted as 0. */
  cr_expect_float_eq(v.weighted_speedup, 1.25, 1e-12);
  cr_expect_float_eq(acl_top_weighted_speedup(v.rows, v.nrows), 1.25, 1e-12);
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
  /* Nothing to weigh: unknown, not 0 or 1. */
  cr_expect(isnan(acl_top_weighted_speedup(NULL, 0)));
}

static void sorted_bytes(acl_top_view_t *v, acl_top_col_t col, bool rev, int64_t *out)
{
  acl_top_view_sort(v, col, rev);
  for (int i = 0; i < v->nrows; i++)
    out[i] = v->rows[i].w->bytes;
}

Test(view, sort_orders_and_unknowns_last)
{
  acl_top_model_t a;
  make_source(&a, 0,
              "{\"comm\":\"0x1a2b3c4d5e6f7081\",\"collective\":\"Broadcast\",\"bytes\":2,"
              "\"state\":\"retuning\",\"speedup\":3.0,\"busbw\":1e9}");
  const acl_top_model_t *ms[1] = {&a};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 1), 0);
  cr_assert_eq(v.nrows, 4);
  int64_t b[4];
  /* speedup: high first by default, null last either way */
  sorted_bytes(&v, ACL_TOP_COL_SPEEDUP, false, b);
  cr_expect(b[0] == 2 && b[1] == 1024 && b[2] == 4096 && b[3] == 1048576);
  sorted_bytes(&v, ACL_TOP_COL_SPEEDUP, true, b);
  cr_expect(b[0] == 4096 && b[1] == 1024 && b[2] == 2 && b[3] == 1048576);
  /* busbw: 7e9, 5e9, 1e9, null */
  sorted_bytes(&v, ACL_TOP_COL_BUSBW, false, b);
  cr_expect(b[0] == 1048576 && b[1] == 1024 && b[2] == 2 && b[3] == 4096);
  sorted_bytes(&v, ACL_TOP_COL_BUSBW, true, b);
  cr_expect(b[0] == 2 && b[1] == 1024 && b[2] == 1048576 && b[3] == 4096);
  /* size: large first */
  sorted_bytes(&v, ACL_TOP_COL_SIZE, false, b);
  cr_expect(b[0] == 1048576 && b[1] == 4096 && b[2] == 1024 && b[3] == 2);
  /* state: lifecycle order warm-up, exploring, re-tuning, converged */
  sorted_bytes(&v, ACL_TOP_COL_STATE, false, b);
  cr_expect(b[0] == 1048576 && b[1] == 4096 && b[2] == 2 && b[3] == 1024);
  /* collective: alphabetical, ties by merged order */
  sorted_bytes(&v, ACL_TOP_COL_COLL, false, b);
  cr_expect_str_eq(v.rows[0].w->collective, "AllGather");
  cr_expect_str_eq(v.rows[3].w->collective, "Broadcast");
  /* communicator: "0x99aabbcc" < "dp" */
  sorted_bytes(&v, ACL_TOP_COL_COMM, false, b);
  cr_expect_str_eq(v.rows[0].comm_label, "0x99aabbcc");
  sorted_bytes(&v, ACL_TOP_COL_COMM, true, b);
  cr_expect_str_eq(v.rows[3].comm_label, "0x99aabbcc");
  cr_expect(acl_top_col_desc_default(ACL_TOP_COL_SPEEDUP));
  cr_expect_not(acl_top_col_desc_default(ACL_TOP_COL_COMM));
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
}

Test(view, formatting)
{
  char b[64];
  cr_expect_str_eq(acl_top_fmt_bytes(0, b, sizeof(b)), "0 B");
  cr_expect_str_eq(acl_top_fmt_bytes(1024, b, sizeof(b)), "1 KiB");
  cr_expect_str_eq(acl_top_fmt_bytes(33554432, b, sizeof(b)), "32 MiB");
  cr_expect_str_eq(acl_top_fmt_bytes(1536, b, sizeof(b)), "1.5 KiB");
  cr_expect_str_eq(acl_top_fmt_bytes(1073741824, b, sizeof(b)), "1 GiB");
  cr_expect_str_eq(acl_top_fmt_bw(1.6e11, b, sizeof(b)), "160.0 GB/s");
  cr_expect_str_eq(acl_top_fmt_bw(2.5e8, b, sizeof(b)), "250.0 MB/s");
  cr_expect_str_eq(acl_top_fmt_bw(0, b, sizeof(b)), "0 B/s"); /* known zero stays 0 */
  cr_expect_str_eq(acl_top_fmt_ratio(1.2, b, sizeof(b)), "1.20x");
  cr_expect_str_eq(acl_top_fmt_pct(0.12, b, sizeof(b)), "12%");
  cr_expect_str_eq(acl_top_fmt_seconds(0.0012, b, sizeof(b)), "1.2 ms");
  cr_expect_str_eq(acl_top_fmt_seconds(0, b, sizeof(b)), "0 s");
  cr_expect_str_eq(acl_top_fmt_signed_seconds(0.0412, b, sizeof(b)), "+41.2 ms");
  cr_expect_str_eq(acl_top_fmt_signed_seconds(-0.00019, b, sizeof(b)), "-190.0 us");
  cr_expect_str_eq(acl_top_fmt_signed_seconds(0, b, sizeof(b)), "0 s");
  cr_expect_str_eq(acl_top_fmt_signed_seconds(NAN, b, sizeof(b)), "-");
  acl_top_cand_t c = {.known = true, .algo = "RING", .proto = "SIMPLE", .channels = 16};
  cr_expect_str_eq(acl_top_fmt_cand(&c, b, sizeof(b)), "RING/SIMPLE/16ch");
  c.channels = 0;
  cr_expect_str_eq(acl_top_fmt_cand(&c, b, sizeof(b)), "RING/SIMPLE");
  acl_top_cand_t d = {.known = true, .algo = "NCCL", .proto = "", .channels = 0};
  cr_expect_str_eq(acl_top_fmt_cand(&d, b, sizeof(b)), "NCCL");
  cr_expect_str_eq(acl_top_state_label("warmup"), "warmup");
  cr_expect_str_eq(acl_top_state_label("retuning"), "retuning");
  cr_expect_str_eq(acl_top_state_label("converged"), "converged");
  cr_expect_str_eq(acl_top_state_label(""), "-");
  /* Tiny buffers truncate safely. */
  char t[4];
  acl_top_fmt_bw(1.6e11, t, sizeof(t));
  cr_expect_eq(strlen(t), 3);
}

Test(view, plot_puts_extremes_at_the_edges)
{
  acl_top_workload_t w;
  memset(&w, 0, sizeof(w));
  const double bw[] = {5, 10, 1, 7};
  const char *algo[] = {"NCCL", "RING", "RING", "TREE"};
  w.traj_len = 4;
  for (int i = 0; i < 4; i++) {
    w.traj[i].step = i * 10;
    w.traj[i].busbw = bw[i];
    w.traj[i].overlap = NAN;
    w.traj[i].cand.known = true;
    snprintf(w.traj[i].cand.algo, sizeof(w.traj[i].cand.algo), "%s", algo[i]);
    snprintf(w.traj[i].cand.proto, sizeof(w.traj[i].cand.proto), "%s", i ? "SIMPLE" : "");
  }
  acl_top_plot_t p;
  cr_assert_eq(acl_top_plot_build(&p, &w, 31, 10), 0);
  cr_expect_eq(p.npoints, 4);
  cr_expect_eq(p.nsubs, 3); /* NCCL, RING/SIMPLE, TREE/SIMPLE */
  cr_expect_str_eq(p.subs[1], "RING/SIMPLE");
  cr_expect_float_eq(p.ymax, 10, 1e-9);
  cr_expect_float_eq(p.ymin, 1, 1e-9);
  /* max (step 10, RING) on the top row at column 10; min (step 20) at the bottom */
  cr_expect_eq(p.glyph[0 * 31 + 10], acl_top_plot_glyphs[1]);
  cr_expect_eq(p.color[0 * 31 + 10], 2);
  cr_expect_eq(p.glyph[9 * 31 + 20], acl_top_plot_glyphs[1]);
  cr_expect_eq(p.glyph[9 * 31 + 0] == ' ' || p.glyph[9 * 31 + 0] == '.', true);
  /* last point (TREE) in the last column */
  bool last_col = false;
  for (int r = 0; r < 10; r++)
    last_col |= p.glyph[r * 31 + 30] == acl_top_plot_glyphs[2];
  cr_expect(last_col);
  /* dots join the points */
  int dots = 0;
  for (int i = 0; i < 31 * 10; i++)
    dots += p.glyph[i] == '.';
  cr_expect_gt(dots, 10);
  acl_top_plot_free(&p);
  /* No bandwidth known: no points, no crash; bad sizes refused. */
  for (int i = 0; i < 4; i++)
    w.traj[i].busbw = NAN;
  cr_assert_eq(acl_top_plot_build(&p, &w, 10, 5), 0);
  cr_expect_eq(p.npoints, 0);
  acl_top_plot_free(&p);
  cr_expect_eq(acl_top_plot_build(&p, &w, 1, 5), -1);
}

Test(view, json_merged_carries_sources)
{
  acl_top_model_t a, b;
  make_source(&a, 0, NULL);
  make_source(&b, 1, NULL);
  const acl_top_model_t *ms[3] = {&a, &b, NULL};
  acl_top_source_status_t st[3] = {{"http://127.0.0.1:1", "ok", NULL},
                                   {"http://127.0.0.1:2", "ok", NULL},
                                   {"http://127.0.0.1:3", "disconnected", "Connection refused"}};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 3), 0);
  char *doc = acl_top_json_merged(&v, ms, st, 3);
  cr_assert_not_null(doc);
  json_error_t je;
  json_t *root = json_loads(doc, 0, &je);
  cr_assert_not_null(root, "%s", je.text);
  json_t *wls = json_object_get(root, "workloads");
  cr_assert_eq(json_array_size(wls), 6);
  for (size_t i = 0; i < 6; i++) {
    json_t *w = json_array_get(wls, i);
    const char *src = json_string_value(json_object_get(w, "source"));
    int rank = (int)json_integer_value(json_object_get(w, "rank"));
    cr_expect_str_eq(src, rank ? "http://127.0.0.1:2" : "http://127.0.0.1:1");
    cr_expect_not_null(json_object_get(w, "comm_name"));
  }
  /* nulls stay null in the merged copy */
  bool saw_null = false;
  for (size_t i = 0; i < 6; i++)
    saw_null |= json_is_null(json_object_get(json_array_get(wls, i), "speedup"));
  cr_expect(saw_null);
  json_t *srcs = json_object_get(root, "sources");
  cr_assert_eq(json_array_size(srcs), 3);
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(srcs, 2), "error")),
                   "Connection refused");
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(srcs, 1), "host")), "h1");
  json_t *sum = json_object_get(root, "summary");
  cr_expect_float_eq(json_number_value(json_object_get(sum, "weighted_speedup")), 1.25, 1e-9);
  cr_expect_eq(json_integer_value(json_object_get(sum, "converged")), 2);
  json_decref(root);
  free(doc);
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
  acl_top_model_clear(&b);
}

Test(view, batch_table_has_header_and_rows)
{
  acl_top_model_t a;
  make_source(&a, 0, NULL);
  const acl_top_model_t *ms[1] = {&a};
  acl_top_source_status_t st[1] = {{"http://127.0.0.1:9", "ok", NULL}};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 1), 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f);
  acl_top_print_batch(f, &v, st, 1, 3);
  fclose(f);
  cr_expect(strstr(buf, "iteration 3") != NULL);
  cr_expect(strstr(buf, "converged 1/3") != NULL, "%s", buf);
  cr_expect(strstr(buf, "speedup 1.25x") != NULL, "%s", buf);
  cr_expect(strstr(buf, "COMM") && strstr(buf, "SPEEDUP") && strstr(buf, "BUSBW"));
  cr_expect(strstr(buf, "32 MiB") == NULL);
  cr_expect(strstr(buf, "1 MiB") != NULL);
  cr_expect(strstr(buf, "warmup") != NULL && strstr(buf, "warm-up") == NULL);
  free(buf);
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
}

/* Net value: the SAVED cell, the header total (unknowns left out, not 0),
 * and "NCCL, N tried" where NCCL's choice was kept after a search:
 * the job report's spelling (ACL_KEPT_NCCL_FMT). */
Test(view, net_saved_and_nccl_kept)
{
  acl_top_model_t a;
  make_source(&a, 0,
              "{\"comm\":\"0x1a2b3c4d5e6f7081\",\"rank\":0,\"collective\":\"AllReduce\","
              "\"bytes\":65536,\"state\":\"converged\",\"best\":{\"algo\":\"NCCL\","
              "\"proto\":null,\"channels\":0},\"candidates_evaluated\":10,"
              "\"time_saved_seconds\":-0.0002,\"exploration_cost_seconds\":0.0002},"
              "{\"comm\":\"0x1a2b3c4d5e6f7081\",\"rank\":0,\"collective\":\"AllGather\","
              "\"bytes\":65536,\"state\":\"converged\",\"best\":{\"algo\":\"RING\","
              "\"proto\":\"LL\",\"channels\":8},\"candidates_evaluated\":7,"
              "\"time_saved_seconds\":0.0102,\"exploration_cost_seconds\":0.001}");
  const acl_top_model_t *ms[1] = {&a};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 1), 0);
  cr_expect_float_eq(v.time_saved_seconds, 0.01, 1e-12);
  char b[64];
  int seen = 0;
  for (int i = 0; i < v.nrows; i++) {
    const acl_top_workload_t *w = v.rows[i].w;
    if (w->bytes != 65536)
      continue;
    seen++;
    if (!strcmp(w->collective, "AllReduce")) {
      cr_expect_str_eq(acl_top_cell(&v.rows[i], ACL_TOP_COL_BEST, b, sizeof(b)),
                       "NCCL, 10 tried");
      cr_expect_str_eq(acl_top_cell(&v.rows[i], ACL_TOP_COL_SAVED, b, sizeof(b)), "-200.0 us");
    } else {
      cr_expect_str_eq(acl_top_cell(&v.rows[i], ACL_TOP_COL_BEST, b, sizeof(b)), "RING/LL/8ch");
      cr_expect_str_eq(acl_top_cell(&v.rows[i], ACL_TOP_COL_SAVED, b, sizeof(b)), "+10.2 ms");
    }
  }
  cr_expect_eq(seen, 2);
  /* Rows without the field (older servers) show "-". */
  for (int i = 0; i < v.nrows; i++)
    if (v.rows[i].w->bytes == 1024)
      cr_expect_str_eq(acl_top_cell(&v.rows[i], ACL_TOP_COL_SAVED, b, sizeof(b)), "-");
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
  acl_top_model_t e;
  make_source(&e, 1, NULL);
  const acl_top_model_t *me[1] = {&e};
  cr_assert_eq(acl_top_view_build(&v, me, 1), 0);
  cr_expect(isnan(v.time_saved_seconds), "no net value known: unknown, not 0");
  acl_top_view_free(&v);
  acl_top_model_clear(&e);
}

/* "Saved" per rank, as the job report: two sources of one rank each that
 * saved 10 ms each show +10.0 ms per rank, the host's +20.0 ms labelled a
 * total; only "converged" counts as converged (validating, refining not). */
Test(view, saved_per_rank_and_converged_only)
{
  const char *extra = "{\"comm\":\"0x1a2b3c4d5e6f7081\",\"rank\":%d,\"collective\":"
                      "\"Broadcast\",\"bytes\":65536,\"state\":\"%s\",\"decided\":true,"
                      "\"time_saved_seconds\":0.01}";
  char x0[512], x1[512];
  snprintf(x0, sizeof(x0), extra, 0, "validating");
  snprintf(x1, sizeof(x1), extra, 1, "refining");
  acl_top_model_t a, b;
  make_source(&a, 0, x0);
  make_source(&b, 1, x1);
  const acl_top_model_t *ms[2] = {&a, &b};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, ms, 2), 0);
  cr_expect_eq(v.converged, 2, "validating and refining rows are not converged");
  cr_expect_eq(v.ranks, 2);
  cr_expect_float_eq(v.time_saved_seconds, 0.02, 1e-12);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f);
  acl_top_print_batch(f, &v, NULL, 0, 1);
  fclose(f);
  cr_expect(strstr(buf, "net saved +10.0 ms per rank (total +20.0 ms, 2 ranks)") != NULL, "%s",
            buf);
  free(buf);
  acl_top_view_free(&v);
  acl_top_model_clear(&a);
  acl_top_model_clear(&b);
}
