/* Renderers: histogram buckets, the Prometheus exposition's invariants and
 * the UTF-8 checks of the label escaping. The JSON documents:
 * test_render_json.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe/observe.h"
#include "observe/observe_int.h"
#include "tests/web/render_helpers.h"

static int count_substr(const char *hay, const char *needle)
{
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* The family a sample line belongs to, given the TYPE lines seen. */
static void family_of(const char *line, char *out, size_t len)
{
  size_t n = strcspn(line, "{ ");
  snprintf(out, len, "%.*s", (int)n, line);
  static const char *suf[] = {"_bucket", "_sum", "_count"};
  for (int i = 0; i < 3; i++) {
    size_t sl = strlen(suf[i]);
    if (n > sl && strcmp(out + n - sl, suf[i]) == 0 &&
        strncmp(out, "autoccl_collective_duration_seconds", n - sl) == 0 &&
        n - sl == strlen("autoccl_collective_duration_seconds"))
      out[n - sl] = '\0';
  }
}

/* Every family: HELP then TYPE before its first sample, samples contiguous,
 * never reopened. Returns the number of families. */
static int check_grouping(char *text)
{
  char seen[64][96];
  int nseen = 0;
  char cur[96] = "";
  char help[96] = "";
  bool typed = false;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char fam[96];
    if (strncmp(line, "# HELP ", 7) == 0) {
      snprintf(help, sizeof(help), "%.*s", (int)strcspn(line + 7, " "), line + 7);
      continue;
    }
    if (strncmp(line, "# TYPE ", 7) == 0) {
      snprintf(fam, sizeof(fam), "%.*s", (int)strcspn(line + 7, " "), line + 7);
      cr_assert_str_eq(fam, help, "TYPE %s not right after its HELP", fam);
      for (int i = 0; i < nseen; i++)
        cr_assert_str_neq(seen[i], fam, "family %s opened twice", fam);
      cr_assert_lt(nseen, 64);
      snprintf(seen[nseen++], sizeof(seen[0]), "%s", fam);
      snprintf(cur, sizeof(cur), "%s", fam);
      typed = true;
      continue;
    }
    cr_assert_neq(line[0], '#', "unexpected comment: %s", line);
    family_of(line, fam, sizeof(fam));
    cr_assert(typed, "sample before any TYPE: %s", line);
    cr_assert_str_eq(fam, cur, "sample of %s inside family %s", fam, cur);
  }
  return nseen;
}

Test(hist, bounds_and_buckets)
{
  cr_assert_float_eq(acl_hist_bound(0), 1e-6, 1e-18);
  cr_assert_float_eq(acl_hist_bound(1), 4e-6, 1e-18);
  cr_assert_float_eq(acl_hist_bound(ACL_HIST_N - 1), 1e-6 * pow(4, ACL_HIST_N - 1), 1e-9);
  cr_assert(isinf(acl_hist_bound(ACL_HIST_N)));
  cr_assert(isinf(acl_hist_bound(-1)));
  cr_assert_eq(acl_hist_bucket(0.0), 0);
  cr_assert_eq(acl_hist_bucket(-1.0), 0);
  cr_assert_eq(acl_hist_bucket(1e-6), 0, "le is inclusive");
  cr_assert_eq(acl_hist_bucket(1.0001e-6), 1);
  cr_assert_eq(acl_hist_bucket(4e-6), 1);
  cr_assert_eq(acl_hist_bucket(1e-3), 5); /* 1.024e-3 is bound 5 */
  cr_assert_eq(acl_hist_bucket(1e9), ACL_HIST_N);
  cr_assert_eq(acl_hist_bucket(NAN), ACL_HIST_N);
  cr_assert_eq(acl_hist_bucket(INFINITY), ACL_HIST_N);
  for (int i = 0; i < ACL_HIST_N; i++)
    cr_assert_eq(acl_hist_bucket(acl_hist_bound(i)), i);
}

Test(metrics, families_grouped_with_help_and_type)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  add_comm(s, 0x22, "tp", 1);
  for (int i = 0; i < 6; i++) {
    acl_snap_workload_t *w = add_wl(s, i % 2, 4, 1024u << i);
    w->has_busbw = true;
    w->busbw = 1e9 * (i + 1);
    w->has_speedup = i % 2;
    w->speedup = 1.1;
    w->hist[3] = 2;
    w->dur_count = 2;
    w->dur_sum = 1e-4;
  }
  char *m = metrics_of(s);
  cr_assert(strstr(m, "# TYPE autoccl_collective_duration_seconds histogram\n"));
  cr_assert(strstr(m, "autoccl_build_info{version=\""));
  cr_assert(strstr(m, "# TYPE autoccl_collective_calls_total counter\n"));
  int fams = check_grouping(m);
  cr_assert_geq(fams, 20, "only %d families", fams);
  free(m);
  free(s);
}

/* The totals come first, before any other family, and are the sums of the
 * workloads' figures; the ranks are the distinct rank numbers. */
Test(metrics, totals_first)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  add_comm(s, 0x22, "tp", 1);
  double saved[] = {0.5, -0.25, 2.0}, cost[] = {0.1, 0.0, 0.3};
  for (int i = 0; i < 3; i++) {
    acl_snap_workload_t *w = add_wl(s, i % 2, 4, 1024u << i);
    w->has_net = true;
    w->time_saved_seconds = saved[i];
    w->exploration_cost_seconds = cost[i];
    w->has_baseline = true;
    w->baseline_seconds = 1e-3;
    w->calls = 1000;
  }
  char *m = metrics_of(s);
  const char *first = m;
  while (*first == '#')
    first = strchr(first, '\n') + 1;
  cr_assert(strncmp(first, "autoccl_total_time_saved_seconds{host=\"node-1\"} 2.25\n",
                    strlen("autoccl_total_time_saved_seconds{host=\"node-1\"} 2.25\n")) == 0,
            "first sample: %.80s", first);
  cr_assert(strstr(m, "autoccl_total_exploration_cost_seconds{host=\"node-1\"} 0.4\n"));
  cr_assert(strstr(m, "autoccl_total_nccl_seconds{host=\"node-1\"} 3\n"));
  cr_assert(strstr(m, "autoccl_total_ranks{host=\"node-1\"} 2\n"));
  /* the job report's per-rank figure: the sum over the 2 ranks, halved */
  cr_assert(strstr(m, "autoccl_total_time_saved_per_rank_seconds{host=\"node-1\"} 1.125\n"), "%s",
            m);
  cr_assert(strstr(m, "autoccl_total_ranks") < strstr(m, "autoccl_build_info"));
  free(m);
  free(s);
}

Test(metrics, histogram_cumulative_and_inf_equals_count)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  acl_snap_workload_t *w = add_wl(s, 0, 4, 4096);
  uint64_t per[ACL_HIST_N] = {0, 1, 0, 5, 2, 0, 0, 7};
  memcpy(w->hist, per, sizeof(per));
  w->dur_count = 16; /* one sample beyond the last bound */
  w->dur_sum = 0.25;
  acl_snap_workload_t *odd = add_wl(s, 0, 4, 8192);
  odd->hist[0] = 5; /* inconsistent input: fewer counted than bucketed */
  odd->dur_count = 2;
  char *m = metrics_of(s);
  const char *p = strstr(m, "bytes=\"4096\",pipe_ops=\"1\",le=\"1e-06\"} ");
  cr_assert_not_null(p, "%s", m);
  uint64_t prev = 0, cum = 0;
  for (int i = 0; i < ACL_HIST_N; i++) {
    p = strstr(p, "le=\"");
    cr_assert_not_null(p);
    unsigned long long v = strtoull(strchr(p, '}') + 2, NULL, 10);
    cum += per[i];
    cr_assert_eq(v, cum, "bucket %d: %llu != %llu", i, v, (unsigned long long)cum);
    cr_assert_geq(v, prev);
    prev = v;
    p++;
  }
  cr_assert(strstr(m, "bytes=\"4096\",pipe_ops=\"1\",le=\"+Inf\"} 16\n"));
  cr_assert(strstr(m, "autoccl_collective_duration_seconds_count{comm=\"dp\",rank=\"0\","
                      "collective=\"all_reduce\",bytes=\"4096\",pipe_ops=\"1\"} 16\n"));
  cr_assert(strstr(m, "autoccl_collective_duration_seconds_sum{comm=\"dp\",rank=\"0\","
                      "collective=\"all_reduce\",bytes=\"4096\",pipe_ops=\"1\"} 0.25\n"));
  /* The odd one stays a valid histogram: +Inf = count = 5. */
  cr_assert(strstr(m, "bytes=\"8192\",pipe_ops=\"1\",le=\"+Inf\"} 5\n"));
  cr_assert(strstr(m, "bytes=\"8192\",pipe_ops=\"1\"} 5\n"));
  free(m);
  free(s);
}

Test(metrics, unknown_values_are_omitted_not_zero)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0)->consensus_wait_seconds = -1;
  acl_snap_workload_t *w = add_wl(s, 0, 4, 4096);
  w->has_busbw = false;
  w->busbw = 123;
  w->has_speedup = true;
  w->speedup = NAN; /* flagged valid but not a number: omitted too */
  w->has_overlap = false;
  w->calls_to_converge = 0;
  char *m = metrics_of(s);
  cr_assert_null(strstr(m, "autoccl_collective_bus_bandwidth_bytes_per_second{"));
  cr_assert_null(strstr(m, "autoccl_tuner_speedup_ratio{"));
  cr_assert_null(strstr(m, "autoccl_compute_overlap_ratio{"));
  cr_assert_null(strstr(m, "autoccl_tuner_calls_to_converge{"));
  cr_assert_null(strstr(m, "autoccl_workload_time_saved_seconds"), "unpriced: omitted");
  cr_assert_null(strstr(m, "autoccl_workload_exploration_cost_seconds"));
  cr_assert_null(strstr(m, "autoccl_consensus_wait_seconds_total{"));
  cr_assert_null(strstr(m, "autoccl_profiler_sample_latency_seconds"));
  cr_assert_null(strstr(m, "# TYPE autoccl_tuner_speedup_ratio"), "empty family has no header");
  cr_assert(strstr(m, "autoccl_collective_calls_total{"));
  w->has_busbw = true;
  w->has_overlap = true;
  w->overlap = 0.25;
  free(m);
  m = metrics_of(s);
  cr_assert(strstr(m, "autoccl_collective_bus_bandwidth_bytes_per_second{comm=\"dp\",rank=\"0\","
                      "collective=\"all_reduce\",bytes=\"4096\",pipe_ops=\"1\"} 123\n"));
  cr_assert(strstr(m, "autoccl_compute_overlap_ratio{comm=\"dp\",rank=\"0\","
                      "collective=\"all_reduce\",bytes=\"4096\",pipe_ops=\"1\"} 0.25\n"));
  free(m);
  free(s);
}

Test(metrics, state_is_one_hot)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  for (int ph = 0; ph < ACL_PHASE_COUNT; ph++)
    add_wl(s, 0, 4, 4096u + (unsigned)ph)->phase = (acl_phase_t)ph;
  /* captured: shown as such, whatever the search's state */
  acl_snap_workload_t *cw = add_wl(s, 0, 4, 8192u);
  cw->phase = ACL_PHASE_CONVERGED;
  cw->captured = true;
  char *m = metrics_of(s);
  /* every state and captured, for each of the ACL_PHASE_COUNT + 1 workloads */
  cr_assert_eq(count_substr(m, "\nautoccl_tuner_state{"),
               (ACL_PHASE_COUNT + 1) * (ACL_PHASE_COUNT + 1));
  cr_assert_eq(count_substr(m, "state=\"converged\"} 1\n"), 1);
  cr_assert_eq(count_substr(m, "state=\"captured\"} 1\n"), 1);
  cr_assert(strstr(m, "bytes=\"4099\",pipe_ops=\"1\",state=\"converged\"} 1\n"));
  cr_assert(strstr(m, "bytes=\"4099\",pipe_ops=\"1\",state=\"exploring\"} 0\n"));
  cr_assert(strstr(m, "bytes=\"8192\",pipe_ops=\"1\",state=\"captured\"} 1\n"));
  cr_assert(strstr(m, "bytes=\"8192\",pipe_ops=\"1\",state=\"converged\"} 0\n"));
  free(m);
  free(s);
}

Test(metrics, decision_source_is_one_hot)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  for (int src = 0; src < ACL_NUM_SOURCES; src++)
    add_wl(s, 0, 4, 8192u + (unsigned)src)->source = src;
  char *m = metrics_of(s);
  cr_assert_eq(count_substr(m, "\nautoccl_tuner_decision_source{"),
               ACL_NUM_SOURCES * ACL_NUM_SOURCES);
  cr_assert_eq(count_substr(m, "# TYPE autoccl_tuner_decision_source gauge\n"), 1);
  cr_assert(strstr(m, "bytes=\"8192\",pipe_ops=\"1\",source=\"nccl\"} 1\n"), "%s", m);
  cr_assert(strstr(m, "bytes=\"8193\",pipe_ops=\"1\",source=\"explored\"} 1\n"));
  cr_assert(strstr(m, "bytes=\"8194\",pipe_ops=\"1\",source=\"table\"} 1\n"));
  cr_assert(strstr(m, "bytes=\"8194\",pipe_ops=\"1\",source=\"nccl\"} 0\n"));
  free(m);
  free(s);
}

Test(metrics, label_values_escaped_and_utf8_sanitised)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "a\"b\\c\nd", 0);
  add_comm(s, 0x22,
           "bad\xff\xfe"
           "caf\xc3\xa9",
           -1);
  add_wl(s, 0, 4, 1);
  add_wl(s, 1, 2, 2);
  char *m = metrics_of(s);
  cr_assert(strstr(m, "comm=\"a\\\"b\\\\c\\nd\",rank=\"0\""), "%s", m);
  cr_assert(strstr(m, "comm=\"bad\xEF\xBF\xBD\xEF\xBF\xBD"
                      "caf\xc3\xa9\",rank=\"unknown\""));
  free(m);
  free(s);
}

Test(metrics, label_values_carry_no_c1_or_bidi_controls)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11,
           "x\xc2\x9b"
           "2J\xe2\x80\xae"
           "RLO\xe2\x81\xa6"
           "y",
           0);
  add_wl(s, 0, 4, 1);
  char *m = metrics_of(s);
  cr_assert(strstr(m, "comm=\"x?2J?RLO?y\""), "%s", m);
  cr_assert_null(strstr(m, "\xc2\x9b"), "a CSI in the exposition");
  cr_assert_null(strstr(m, "\xe2\x80\xae"), "a bidi override in the exposition");
  free(m);
  free(s);
}

Test(metrics, duplicate_series_are_not_rendered)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  add_comm(s, 0x22, "dp", 0); /* same name, other communicator */
  add_wl(s, 0, 4, 4096);
  add_wl(s, 1, 4, 4096);
  add_wl(s, 0, 4, 4096); /* the same workload twice: a bug upstream */
  char *m = metrics_of(s);
  cr_assert(strstr(m, "comm=\"dp/0x0000000000000011\""));
  cr_assert(strstr(m, "comm=\"dp/0x0000000000000022\""));
  cr_assert_eq(count_substr(m, "\nautoccl_collective_calls_total{"), 2, "%s", m);
  free(m);
  free(s);
}

Test(metrics, two_ranks_of_one_comm_in_one_process)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  add_comm(s, 0x11, "dp", 1); /* ncclCommInitAll: both ranks here */
  add_wl(s, 0, 4, 4096);
  add_wl(s, 1, 4, 4096);
  char *m = metrics_of(s);
  cr_assert(
      strstr(m, "autoccl_collective_calls_total{comm=\"dp\",rank=\"0\",collective=\"all_reduce\""));
  cr_assert(
      strstr(m, "autoccl_collective_calls_total{comm=\"dp\",rank=\"1\",collective=\"all_reduce\""));
  cr_assert(strstr(m, "autoccl_communicator_ranks{comm=\"dp\",rank=\"1\"} 4"));
  free(m);
  free(s);
}

Test(metrics, bounded_at_max_workloads)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x11, "dp", 0);
  for (int i = 0; i < ACL_SNAP_MAX_WORKLOADS; i++)
    add_wl(s, 0, 4, (uint64_t)i + 1);
  s->nworkloads = ACL_SNAP_MAX_WORKLOADS + 100; /* claims more than the array holds */
  char *m = metrics_of(s);
  cr_assert_eq(count_substr(m, "\nautoccl_collective_calls_total{"), ACL_SNAP_MAX_WORKLOADS);
  cr_assert(strstr(m, "\nautoccl_workloads_truncated 1\n"));
  free(m);
  free(s);
}

Test(util, utf8_sequences)
{
  cr_assert_eq(acl_utf8_seq((const unsigned char *)"a", 1), 1);
  cr_assert_eq(acl_utf8_seq((const unsigned char *)"\xc3\xa9", 2), 2);
  cr_assert_eq(acl_utf8_seq((const unsigned char *)"\xc3", 1), 0, "truncated");
  cr_assert_eq(acl_utf8_seq((const unsigned char *)"\xc0\xaf", 2), 0, "overlong");
  cr_assert_eq(acl_utf8_seq((const unsigned char *)"\xed\xa0\x80", 3), 0, "surrogate");
  cr_assert_eq(acl_utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
  cr_assert_eq(acl_utf8_seq((const unsigned char *)"\xf4\x90\x80\x80", 4), 0, "> U+10FFFF");
}

/* Every family of the field table is rendered, with the table's type, once
 * every figure is known: a row nobody renders (or a renderer that lost its
 * row) fails here. */
Test(metrics, every_family_of_the_table_is_rendered)
{
  acl_snapshot_t *s = snap_new();
  snprintf(s->profiler.cupti_window, sizeof(s->profiler.cupti_window), "open");
  s->profiler.sample_latency_seconds = 0.004;
  add_comm(s, 0x1a2b3c4d5e6f7081ULL, "dp", 0);
  acl_snap_workload_t *w = add_wl(s, 0, 4, 33554432);
  w->has_baseline = w->has_best = w->has_speedup = w->has_busbw = w->has_overlap = true;
  w->has_exposed = w->has_net = true;
  w->baseline_seconds = 2e-3;
  w->best_seconds = 1e-3;
  w->speedup = 2.0;
  w->busbw = 1e11;
  w->overlap = 0.5;
  w->collective_seconds = 1.0;
  w->exposed_seconds = 0.5;
  w->calls_to_converge = 100;
  w->calls = 10;
  char *m = metrics_of(s);
  int families = 0;
  for (int f = 0; f < ACL_F_COUNT; f++) {
    if (!acl_fields[f].metric[0])
      continue;
    char want[160];
    snprintf(want, sizeof(want), "# TYPE %s %s\n", acl_fields[f].metric,
             acl_metric_type_name(acl_fields[f].type));
    cr_expect_eq(count_substr(m, want), 1, "%s", want);
    families++;
  }
  cr_assert_gt(families, 40);
  cr_assert_eq(count_substr(m, "# TYPE "), families, "no family outside the table");
  free(m);
  free(s);
}
