/* acl_top_parse_state: the /api/v1/state document -> model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/top.h"

/* The example of docs/api.md, trimmed to what matters here. */
static const char doc_example[] =
    "{\"version\": 1, \"host\": \"node-1\", \"pid\": 4242, \"local_rank\": 0, \"mode\": \"online\","
    " \"uptime_seconds\": 12.5,"
    " \"profiler\": {\"source\": \"nccl\", \"cupti_available\": false, \"cupti_backed_off\": false,"
    "   \"records\": 120, \"records_dropped\": 0, \"samples\": 118, \"ambiguous\": 0,"
    "   \"mismatches\": 0, \"sample_latency_seconds\": null},"
    " \"communicators\": [{\"id\": \"0x1a2b3c4d5e6f7081\", \"name\": \"dp\", \"rank\": 0,"
    "   \"nranks\": 4, \"nnodes\": 1, \"role\": \"decider\", \"consensus_wait_seconds\": 0.0012,"
    "   \"blocks_published\": 37, \"lock_acquisitions\": 40}],"
    " \"workloads\": [{\"comm\": \"0x1a2b3c4d5e6f7081\", \"rank\": 0, \"collective\": "
    "\"AllReduce\","
    "   \"bytes\": 33554432, \"pipe_ops\": 1, \"state\": \"exploring\", \"subspace\": "
    "\"RING/SIMPLE\","
    "   \"candidate\": {\"algo\": \"RING\", \"proto\": \"SIMPLE\", \"channels\": 16},"
    "   \"best\": {\"algo\": \"RING\", \"proto\": \"SIMPLE\", \"channels\": 24},"
    "   \"baseline\": {\"algo\": \"NCCL\", \"proto\": null, \"channels\": 0},"
    "   \"baseline_seconds\": 0.000410, \"best_seconds\": 0.000371, \"speedup\": 1.105,"
    "   \"busbw\": 1.6e11, \"overlap\": 0.12, \"candidates_evaluated\": 9,"
    "   \"calls_to_converge\": null, \"retunes\": 0, \"calls\": 412, \"bytes_total\": 13824425984,"
    "   \"source\": \"table\","
    "   \"trajectory\": ["
    "     {\"step\": 0, \"algo\": \"NCCL\", \"proto\": null, \"channels\": 0, \"busbw\": 1.45e11, "
    "\"overlap\": 0.1},"
    "     {\"step\": 1, \"algo\": \"RING\", \"proto\": \"SIMPLE\", \"channels\": 16, \"busbw\": "
    "1.5e11, \"overlap\": 0.1}]}],"
    " \"workloads_truncated\": false}";

Test(state, parses_the_documented_example)
{
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256];
  cr_assert_eq(acl_top_parse_state(doc_example, strlen(doc_example), &m, err, sizeof(err)), 0, "%s",
               err);
  cr_expect_str_eq(m.host, "node-1");
  cr_expect_eq(m.pid, 4242);
  cr_expect_str_eq(m.profiler.source, "nccl");
  cr_expect_eq(m.profiler.cupti_available, 0);
  cr_expect(isnan(m.profiler.sample_latency_seconds));
  cr_assert_eq(m.ncomms, 1);
  cr_expect_str_eq(m.comms[0].name, "dp");
  cr_expect_float_eq(m.comms[0].consensus_wait_seconds, 0.0012, 1e-12);
  cr_assert_eq(m.nworkloads, 1);
  const acl_top_workload_t *w = &m.workloads[0];
  cr_expect_str_eq(w->collective, "AllReduce");
  cr_expect_eq(w->bytes, 33554432);
  cr_expect_str_eq(w->state, "exploring");
  cr_expect(w->candidate.known);
  cr_expect_str_eq(w->candidate.algo, "RING");
  cr_expect_eq(w->candidate.channels, 16);
  cr_expect_eq(w->best.channels, 24);
  cr_expect_str_eq(w->baseline.proto, "");
  cr_expect_float_eq(w->speedup, 1.105, 1e-12);
  cr_expect_eq(w->calls_to_converge, -1); /* null stays unknown */
  cr_expect_eq(w->bytes_total, 13824425984LL);
  cr_expect_str_eq(w->source, "table");
  acl_top_row_t row = {.w = w};
  char cell[32];
  cr_expect_str_eq(acl_top_cell(&row, ACL_TOP_COL_SOURCE, cell, sizeof(cell)), "table");
  cr_expect_str_eq(acl_top_col_name(ACL_TOP_COL_SOURCE), "SOURCE");
  cr_assert_eq(w->traj_len, 2);
  cr_expect_str_eq(w->traj[0].cand.algo, "NCCL");
  cr_expect_float_eq(w->traj[1].busbw, 1.5e11, 1.0);
  cr_expect_not_null(m.json);
  acl_top_model_clear(&m);
  cr_expect_null(m.workloads);
}

Test(state, nulls_are_unknown_not_zero)
{
  const char *s = "{\"version\":1,\"workloads\":[{\"comm\":\"0x1\",\"rank\":null,"
                  "\"collective\":\"AllGather\",\"bytes\":null,\"state\":\"warmup\","
                  "\"candidate\":null,\"best\":null,\"speedup\":null,\"busbw\":null,"
                  "\"overlap\":null,\"calls\":null,\"baseline_seconds\":null,"
                  "\"trajectory\":null}]}";
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256];
  cr_assert_eq(acl_top_parse_state(s, strlen(s), &m, err, sizeof(err)), 0, "%s", err);
  const acl_top_workload_t *w = &m.workloads[0];
  cr_expect_eq(w->rank, -1);
  cr_expect_eq(w->bytes, -1);
  cr_expect_not(w->candidate.known);
  cr_expect_not(w->best.known);
  cr_expect(isnan(w->speedup));
  cr_expect(isnan(w->busbw));
  cr_expect(isnan(w->overlap));
  cr_expect_eq(w->calls, -1);
  cr_expect_eq(w->traj_len, 0);
  cr_expect_eq(m.ncomms, 0);
  /* And they render as "-". */
  char b[32];
  cr_expect_str_eq(acl_top_fmt_ratio(w->speedup, b, sizeof(b)), "-");
  cr_expect_str_eq(acl_top_fmt_bw(w->busbw, b, sizeof(b)), "-");
  cr_expect_str_eq(acl_top_fmt_pct(w->overlap, b, sizeof(b)), "-");
  cr_expect_str_eq(acl_top_fmt_bytes(w->bytes, b, sizeof(b)), "-");
  cr_expect_str_eq(acl_top_fmt_cand(&w->best, b, sizeof(b)), "-");
  cr_expect_str_eq(acl_top_fmt_int(w->calls, b, sizeof(b)), "-");
  acl_top_model_clear(&m);
}

static void expect_error(const char *doc, size_t len, const char *needle)
{
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256] = "";
  cr_expect_eq(acl_top_parse_state(doc, len, &m, err, sizeof(err)), -1, "accepted: %.80s", doc);
  cr_expect(strstr(err, needle) != NULL, "error '%s' lacks '%s'", err, needle);
  cr_expect_eq(m.nworkloads, 0);
  cr_expect_null(m.workloads);
  cr_expect_null(m.json);
  acl_top_model_clear(&m);
}

Test(state, malformed_json_is_rejected_with_position)
{
  const char *bad[] = {"",
                       "{",
                       "{\"version\":1,",
                       "[1,2",
                       "{\"version\":1,\"workloads\":[]} x",
                       "nul",
                       "{\"version\":1,\"workloads\":[],\"version\":1}"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    expect_error(bad[i], strlen(bad[i]), "malformed JSON");
}

Test(state, wrong_version_is_rejected)
{
  const char *s = "{\"version\":2,\"workloads\":[]}";
  expect_error(s, strlen(s), "unsupported schema version 2");
  s = "{\"version\":\"1\",\"workloads\":[]}";
  expect_error(s, strlen(s), "state.version");
  s = "{\"workloads\":[]}";
  expect_error(s, strlen(s), "state.version");
}

Test(state, wrong_types_name_the_field)
{
  const char *s =
      "{\"version\":1,\"workloads\":[{\"comm\":\"0x1\"},{\"comm\":\"0x1\",\"speedup\":\"fast\"}]}";
  expect_error(s, strlen(s), "workloads[1].speedup");
  s = "{\"version\":1,\"workloads\":{}}";
  expect_error(s, strlen(s), "state.workloads");
  s = "{\"version\":1,\"workloads\":[{\"rank\":0}]}";
  expect_error(s, strlen(s), "workloads[0].comm");
  s = "{\"version\":1,\"workloads\":[{\"comm\":\"0x1\",\"calls\":-4}]}";
  expect_error(s, strlen(s), "workloads[0].calls");
  s = "{\"version\":1,\"workloads\":[{\"comm\":\"0x1\",\"bytes\":1.5}]}";
  expect_error(s, strlen(s), "workloads[0].bytes");
  s = "{\"version\":1,\"workloads\":[{\"comm\":\"0x1\",\"trajectory\":[{\"step\":0,\"busbw\":true}]"
      "}]}";
  expect_error(s, strlen(s), "workloads[0].trajectory[0].busbw");
  s = "{\"version\":1,\"workloads\":[],\"communicators\":[{\"name\":\"dp\"}]}";
  expect_error(s, strlen(s), "communicators[0].id");
  s = "{\"version\":1,\"workloads\":[],\"profiler\":[]}";
  expect_error(s, strlen(s), "state.profiler");
}

Test(state, failed_parse_leaves_previous_model_alone_for_the_caller)
{
  /* The client parses into a scratch model and swaps only on success. */
  acl_top_model_t good, scratch;
  acl_top_model_init(&good);
  acl_top_model_init(&scratch);
  char err[256];
  cr_assert_eq(acl_top_parse_state(doc_example, strlen(doc_example), &good, err, sizeof(err)), 0);
  cr_expect_eq(acl_top_parse_state("{", 1, &scratch, err, sizeof(err)), -1);
  cr_expect_eq(good.nworkloads, 1);
  cr_expect_str_eq(good.workloads[0].collective, "AllReduce");
  acl_top_model_clear(&good);
  acl_top_model_clear(&scratch);
}

Test(state, length_is_respected_without_terminator)
{
  /* A valid document followed by bytes outside len must parse. */
  char buf[sizeof(doc_example) + 8];
  memcpy(buf, doc_example, strlen(doc_example));
  memcpy(buf + strlen(doc_example), "GARBAGE!", 8);
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256];
  cr_expect_eq(acl_top_parse_state(buf, strlen(doc_example), &m, err, sizeof(err)), 0, "%s", err);
  acl_top_model_clear(&m);
}

Test(state, long_trajectory_keeps_the_newest_points)
{
  char doc[16384];
  int n = snprintf(doc, sizeof(doc),
                   "{\"version\":1,\"workloads\":[{\"comm\":\"0x1\",\"trajectory\":[");
  for (int i = 0; i < 100; i++)
    n += snprintf(doc + n, sizeof(doc) - n, "%s{\"step\":%d,\"busbw\":%d}", i ? "," : "", i, i);
  n += snprintf(doc + n, sizeof(doc) - n, "]}]}");
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256];
  cr_assert_eq(acl_top_parse_state(doc, (size_t)n, &m, err, sizeof(err)), 0, "%s", err);
  cr_expect_eq(m.workloads[0].traj_len, ACL_TOP_MAX_TRAJ);
  cr_expect_eq(m.workloads[0].traj[0].step, 100 - ACL_TOP_MAX_TRAJ);
  cr_expect_eq(m.workloads[0].traj[ACL_TOP_MAX_TRAJ - 1].step, 99);
  acl_top_model_clear(&m);
}

Test(state, unknown_fields_are_ignored_and_long_strings_truncated)
{
  char doc[512];
  char longname[200];
  memset(longname, 'a', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = '\0';
  int n = snprintf(doc, sizeof(doc),
                   "{\"version\":1,\"future\":{\"x\":[1,2]},\"communicators\":[{\"id\":\"0x1\","
                   "\"name\":\"%s\"}],\"workloads\":[{\"comm\":\"0x1\",\"new_field\":3}]}",
                   longname);
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256];
  cr_assert_eq(acl_top_parse_state(doc, (size_t)n, &m, err, sizeof(err)), 0, "%s", err);
  cr_expect_eq(strlen(m.comms[0].name), sizeof(m.comms[0].name) - 1);
  acl_top_model_clear(&m);
}

Test(state, control_characters_never_reach_the_terminal)
{
  const char *s =
      "{\"version\":1,\"communicators\":[{\"id\":\"0x1\",\"name\":\"a\\u001b[31mb\\n\"}],"
      "\"workloads\":[{\"comm\":\"0x1\",\"collective\":\"x\\u0007y\"}]}";
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256];
  cr_assert_eq(acl_top_parse_state(s, strlen(s), &m, err, sizeof(err)), 0, "%s", err);
  cr_expect_str_eq(m.comms[0].name, "a?[31mb?");
  cr_expect_str_eq(m.workloads[0].collective, "x?y");
  acl_top_model_clear(&m);
}

/* Deterministic mutations of a valid document: the parser must either
 * accept or reject each with a message, never crash or leak (run under ASan
 * by the fuzzing pass; here it also guards the error paths). */
Test(state, mutated_documents_are_accepted_or_rejected_cleanly)
{
  size_t n = strlen(doc_example);
  char *buf = malloc(n + 1);
  cr_assert_not_null(buf);
  uint64_t x = 88172645463325252ull;
  int ok = 0, rejected = 0;
  for (int it = 0; it < 3000; it++) {
    memcpy(buf, doc_example, n);
    size_t len = n;
    for (int k = 0; k < 1 + it % 4 && len > 0; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t pos = (size_t)(x % len);
      switch ((x >> 32) % 3) {
      case 0:
        buf[pos] = (char)(x >> 40);
        break; /* flip a byte */
      case 1:
        len = pos;
        break; /* truncate */
      default:
        buf[pos] = "{}[]\",:0n-e."[(x >> 40) % 12]; /* structural */
      }
    }
    acl_top_model_t m;
    acl_top_model_init(&m);
    char err[256] = "";
    int rc = acl_top_parse_state(buf, len, &m, err, sizeof(err));
    if (rc == 0) {
      ok++;
      cr_assert_leq(m.nworkloads, ACL_TOP_MAX_WORKLOADS);
    } else {
      rejected++;
      cr_assert_eq(rc, -1);
      cr_assert_neq(err[0], '\0');
      cr_assert_null(m.workloads);
    }
    acl_top_model_clear(&m);
  }
  free(buf);
  cr_expect_gt(rejected, 100);
  cr_expect_gt(ok, 0); /* some flips land in values and stay valid */
}

/* C1 controls (U+009B is a CSI) and bidi overrides from a server reach
 * neither --once nor batch output (in --json only as \u escapes, plain
 * ASCII); a name cut at 63 bytes inside a UTF-8
 * character still makes a valid --json document. */
Test(state, c1_bidi_and_a_cut_character_are_safe_in_batch_and_json)
{
  char name[80];
  memset(name, 'n', 62);
  memcpy(name + 62, "\xc3\xa9tail", 7); /* é at bytes 62-63: the 63-byte cut splits it */
  char doc[1024];
  int n = snprintf(doc, sizeof(doc),
                   "{\"version\":1,\"communicators\":[{\"id\":\"0x1\",\"name\":\"%s\"},"
                   "{\"id\":\"0x2\",\"name\":\"x\\u009b31my\\u202egnp.exe\"}],"
                   "\"workloads\":[{\"comm\":\"0x1\",\"rank\":0,\"collective\":\"AllReduce\"},"
                   "{\"comm\":\"0x2\",\"rank\":0,\"collective\":\"All\\u009bReduce\"}]}",
                   name);
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256];
  cr_assert_eq(acl_top_parse_state(doc, (size_t)n, &m, err, sizeof(err)), 0, "%s", err);
  const acl_top_model_t *models[1] = {&m};
  acl_top_source_status_t st = {.url = "http://127.0.0.1:1", .status = "ok", .error = NULL};
  acl_top_view_t v;
  cr_assert_eq(acl_top_view_build(&v, models, 1), 0);
  char *json = acl_top_json_merged(&v, models, &st, 1);
  cr_assert_not_null(json, "--json failed on a name cut inside a UTF-8 character");
  char *txt = NULL;
  size_t tl = 0;
  FILE *f = open_memstream(&txt, &tl);
  acl_top_print_batch(f, &v, &st, 1, 1);
  fclose(f);
  const char *outs[] = {json, txt};
  for (int i = 0; i < 2; i++) {
    cr_expect_null(strstr(outs[i], "\xc2\x9b"), "U+009B reached the output: %s", outs[i]);
    cr_expect_null(strstr(outs[i], "\xe2\x80\xae"), "U+202E reached the output: %s", outs[i]);
  }
  cr_expect_null(strstr(txt, "\\u"), "%s", txt);
  free(txt);
  free(json);
  acl_top_view_free(&v);
  acl_top_model_clear(&m);
}

/* A malformed document's error quotes the input ("near '...'"): a raw ESC,
 * a CSI (U+009B) or a bidi override from the server never reaches the
 * terminal through it. */
Test(state, error_messages_quote_server_bytes_safely)
{
  static const char *docs[] = {
      "{\"host\": \"\x01\xc2\x9b"
      "2J\xc2\x9b"
      "31m\xe2\x80\xaeRLO\"}",
      "{\"host\": \"\x1b[2J\x1b]0;pwned\x07\"}",
      "{\"version\": 1, \"host\": \xe2\x80\xae\xc2\x9b}",
  };
  for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
    acl_top_model_t m;
    acl_top_model_init(&m);
    char err[256];
    cr_assert_lt(acl_top_parse_state(docs[i], strlen(docs[i]), &m, err, sizeof(err)), 0);
    cr_assert(err[0], "an error message");
    for (const unsigned char *p = (const unsigned char *)err; *p; p++) {
      cr_assert(*p >= 0x20 && *p != 0x7f, "control byte 0x%02x in: %s", *p, err);
      cr_assert_not(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f, "C1 control in: %s", err);
      cr_assert_not(p[0] == 0xe2 && p[1] == 0x80 && (p[2] >= 0xaa && p[2] <= 0xae),
                    "bidi override in: %s", err);
    }
    acl_top_model_clear(&m);
  }
}

/* A workload waiting for its exploration budget shows how many more calls
 * and what they pay for; one not waiting (the fields null or absent)
 * shows nothing. */
Test(state, a_budget_wait_shows_its_calls_and_reason)
{
  static const char from[] = "\"retunes\": 0,";
  static const char to[] =
      "\"retunes\": 0, \"budget_wait_calls\": 975, \"budget_wait_for\": \"first-events\",";
  const char *at = strstr(doc_example, from);
  cr_assert_not_null(at);
  char doc[sizeof(doc_example) + sizeof(to)];
  snprintf(doc, sizeof(doc), "%.*s%s%s", (int)(at - doc_example), doc_example, to,
           at + strlen(from));
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256], b[96];
  cr_assert_eq(acl_top_parse_state(doc, strlen(doc), &m, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(m.nworkloads, 1);
  cr_expect_eq(m.workloads[0].budget_wait_calls, 975);
  cr_expect_str_eq(m.workloads[0].budget_wait_for, "first-events");
  cr_expect_str_eq(acl_top_fmt_wait(&m.workloads[0], b, sizeof(b)),
                   "waits ~975 calls for first-events");
  acl_top_model_clear(&m);
  acl_top_model_init(&m);
  cr_assert_eq(acl_top_parse_state(doc_example, strlen(doc_example), &m, err, sizeof(err)), 0, "%s",
               err);
  cr_expect_eq(m.workloads[0].budget_wait_calls, -1);
  cr_expect_str_eq(acl_top_fmt_wait(&m.workloads[0], b, sizeof(b)), "");
  acl_top_model_clear(&m);
}
