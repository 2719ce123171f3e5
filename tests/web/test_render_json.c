/* Renderers: the state JSON and the SSE event payloads (parsed with
 * jansson), exposed time in both documents, and the snapshot's entries from
 * consensus's and the profiler's plain statistics. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe/observe.h"
#include "profiler/profiler.h"
#include "tests/web/render_helpers.h"
#include "tuner/consensus/consensus.h"

static json_t *parse(const char *text)
{
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  cr_assert_not_null(j, "invalid JSON at %d:%d: %s\n%s", e.line, e.column, e.text, text);
  return j;
}

Test(state, schema_and_nulls)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x1a2b3c4d5e6f7081ULL, "dp", 0);
  acl_snap_workload_t *w = add_wl(s, 0, 4, 33554432);
  w->has_baseline = true;
  w->baseline = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  w->baseline_seconds = 0.00041;
  w->has_best = true;
  w->best = (acl_candidate_t){.algo = 1, .proto = 2, .nchannels = 24};
  w->best_seconds = 0.000371;
  w->has_speedup = true;
  w->speedup = INFINITY; /* never emitted as Inf */
  w->has_net = true;
  w->time_saved_seconds = -0.0025; /* a loss is shown, not hidden */
  w->exploration_cost_seconds = 0.004;
  w->traj_len = 2;
  w->traj[0] = (acl_traj_point_t){
      .step = 0, .cand = {.algo = ACL_ALGO_NCCL}, .busbw = 1.45e11f, .overlap = -1};
  w->traj[1] = (acl_traj_point_t){
      .step = 1, .cand = {.algo = 1, .proto = 2, .nchannels = 16}, .busbw = NAN, .overlap = 0.5f};
  w->source = 2;
  acl_snap_workload_t *u = add_wl(s, 0, 2, 1024);
  u->phase = ACL_PHASE_WARMUP;
  u->current = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  strcpy(s->hostname, "h\xff");
  char *text = state_of(s);
  json_t *j = parse(text);
  cr_assert_eq(json_integer_value(json_object_get(j, "version")), 1);
  cr_assert_str_eq(json_string_value(json_object_get(j, "host")), "h\xEF\xBF\xBD");
  cr_assert(
      json_is_null(json_object_get(json_object_get(j, "profiler"), "sample_latency_seconds")));
  json_t *c = json_array_get(json_object_get(j, "communicators"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(c, "id")), "0x1a2b3c4d5e6f7081");
  json_t *ws = json_object_get(j, "workloads");
  cr_assert_eq(json_array_size(ws), 2);
  json_t *a = json_array_get(ws, 0);
  cr_assert_str_eq(json_string_value(json_object_get(a, "comm")), "0x1a2b3c4d5e6f7081");
  cr_assert_str_eq(json_string_value(json_object_get(a, "collective")), "AllReduce");
  cr_assert_eq(json_integer_value(json_object_get(a, "bytes")), 33554432);
  cr_assert_str_eq(json_string_value(json_object_get(a, "state")), "exploring");
  cr_assert_str_eq(json_string_value(json_object_get(a, "subspace")), "RING/SIMPLE");
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(a, "best"), "channels")), 24);
  cr_assert(json_is_null(json_object_get(json_object_get(a, "baseline"), "proto")));
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "baseline"), "algo")),
                   "NCCL");
  cr_assert(json_is_null(json_object_get(a, "speedup")), "Inf must render as null");
  cr_assert(json_is_null(json_object_get(a, "busbw")));
  cr_assert(json_is_null(json_object_get(a, "calls_to_converge")));
  cr_assert_float_eq(json_real_value(json_object_get(a, "best_seconds")), 0.000371, 1e-12);
  cr_assert_float_eq(json_number_value(json_object_get(a, "time_saved_seconds")), -0.0025, 1e-12);
  cr_assert_float_eq(json_number_value(json_object_get(a, "exploration_cost_seconds")), 0.004,
                     1e-12);
  json_t *t = json_object_get(a, "trajectory");
  cr_assert_eq(json_array_size(t), 2);
  cr_assert(json_is_null(json_object_get(json_array_get(t, 0), "overlap")));
  cr_assert(json_is_null(json_object_get(json_array_get(t, 1), "busbw")));
  cr_assert_float_eq(json_number_value(json_object_get(json_array_get(t, 0), "busbw")), 1.45e11,
                     1e5);
  cr_assert_str_eq(json_string_value(json_object_get(a, "source")), "table");
  json_t *b = json_array_get(ws, 1);
  cr_assert_str_eq(json_string_value(json_object_get(b, "source")), "nccl");
  cr_assert(json_is_null(json_object_get(b, "subspace")));
  cr_assert(json_is_null(json_object_get(b, "best")));
  cr_assert(json_is_null(json_object_get(b, "baseline")));
  cr_assert(json_is_null(json_object_get(b, "baseline_seconds")));
  cr_assert(json_is_null(json_object_get(b, "time_saved_seconds")), "unpriced: null, not 0");
  cr_assert(json_is_null(json_object_get(b, "exploration_cost_seconds")));
  cr_assert(json_is_null(json_object_get(b, "overlap")));
  cr_assert(json_is_false(json_object_get(j, "workloads_truncated")));
  json_decref(j);
  free(text);
  free(s);
}

Test(state, empty_and_full_snapshots_are_valid_json)
{
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  char *text = state_of(s);
  json_t *j = parse(text);
  cr_assert_eq(json_array_size(json_object_get(j, "workloads")), 0);
  json_decref(j);
  free(text);
  for (int i = 0; i < ACL_SNAP_MAX_COMMS; i++)
    add_comm(s, (uint64_t)i + 1, "c", i);
  for (int i = 0; i < ACL_SNAP_MAX_WORKLOADS; i++) {
    acl_snap_workload_t *w = add_wl(s, i % ACL_SNAP_MAX_COMMS, i % 5, (uint64_t)i);
    w->traj_len = ACL_SNAP_TRAJ + 5; /* out of range: clamped */
  }
  s->workloads_truncated = true;
  s->comms[0].rank = -1;
  s->workloads[0].rank = -1;
  text = state_of(s);
  j = parse(text);
  cr_assert_eq(json_array_size(json_object_get(j, "workloads")), ACL_SNAP_MAX_WORKLOADS);
  cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(j, "workloads"), 0),
                                               "trajectory")),
               ACL_SNAP_TRAJ);
  cr_assert(
      json_is_null(json_object_get(json_array_get(json_object_get(j, "workloads"), 0), "rank")));
  cr_assert(json_is_true(json_object_get(j, "workloads_truncated")));
  json_decref(j);
  free(text);
  free(s);
}

Test(event, one_line_json)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0xabc, "dp", 2);
  acl_snap_workload_t *w = add_wl(s, 0, 3, 65536);
  w->traj_len = 3;
  w->traj[2].step = 12;
  w->has_busbw = true;
  w->busbw = 1.5e11;
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  acl_render_event_json(s, w, &sb);
  cr_assert_null(strchr(sb.data, '\n'));
  json_t *j = parse(sb.data);
  cr_assert_str_eq(json_string_value(json_object_get(j, "comm")), "0x0000000000000abc");
  cr_assert_eq(json_integer_value(json_object_get(j, "rank")), 2);
  cr_assert_str_eq(json_string_value(json_object_get(j, "collective")), "ReduceScatter");
  cr_assert_eq(json_integer_value(json_object_get(j, "step")), 12);
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "candidate"), "algo")),
                   "RING");
  cr_assert(json_is_null(json_object_get(j, "best")));
  cr_assert(json_is_null(json_object_get(j, "speedup")));
  cr_assert_float_eq(json_number_value(json_object_get(j, "busbw")), 1.5e11, 1);
  json_decref(j);
  acl_sb_free(&sb);
  free(s);
}

/* Exposed communication: per workload and for the job, beside the net time
 * saved; absent (null, no series) while no overlap was measured. */
Test(render, exposed_time_per_workload_and_job)
{
  acl_snapshot_t *s = snap_new();
  add_comm(s, 0x1a2b3c4d5e6f7081ULL, "dp", 0);
  acl_snap_workload_t *w = add_wl(s, 0, 4, 33554432);
  w->has_exposed = true;
  w->collective_seconds = 2.0;
  w->exposed_seconds = 0.5;
  w->exposed_share = 0.25;
  w->has_net = true;
  w->time_saved_seconds = 0.125;
  acl_snap_workload_t *u = add_wl(s, 0, 2, 1024);
  u->has_exposed = true;
  u->collective_seconds = 1.0;
  u->exposed_seconds = 1.0;
  u->exposed_share = 1.0;
  acl_snap_workload_t *x = add_wl(s, 0, 3, 4096); /* overlap never measured */
  (void)x;
  snprintf(s->profiler.source, sizeof(s->profiler.source), "cupti");
  snprintf(s->profiler.cupti_window, sizeof(s->profiler.cupti_window), "closed");
  s->profiler.cupti_on_ms = 100;
  s->profiler.cupti_period_ms = 5000;
  s->profiler.cupti_windows = 7;
  s->profiler.stale = 5;
  s->profiler.overlap_unknown = 6;
  s->profiler.overlap_late = 8;
  s->profiler.overlap_late_seconds = 0.375;
  s->profiler.cupti_on_seconds = 0.7;
  char *text = state_of(s);
  json_t *j = parse(text);
  json_t *ws = json_object_get(j, "workloads");
  json_t *a = json_array_get(ws, 0);
  cr_assert_float_eq(json_number_value(json_object_get(a, "exposed_seconds")), 0.5, 1e-12);
  cr_assert_float_eq(json_number_value(json_object_get(a, "exposed_share")), 0.25, 1e-12);
  cr_assert_float_eq(json_number_value(json_object_get(a, "collective_seconds")), 2.0, 1e-12);
  cr_assert(json_is_null(json_object_get(json_array_get(ws, 2), "exposed_seconds")));
  json_t *job = json_object_get(j, "job");
  cr_assert_float_eq(json_number_value(json_object_get(job, "collective_seconds")), 3.0, 1e-12);
  cr_assert_float_eq(json_number_value(json_object_get(job, "exposed_seconds")), 1.5, 1e-12);
  cr_assert_float_eq(json_number_value(json_object_get(job, "exposed_share")), 0.5, 1e-12);
  cr_assert_float_eq(json_number_value(json_object_get(job, "time_saved_seconds")), 0.125, 1e-12);
  cr_assert_eq(json_integer_value(json_object_get(job, "ranks")), 1);
  cr_assert_float_eq(json_number_value(json_object_get(job, "time_saved_per_rank_seconds")), 0.125,
                     1e-12);
  json_t *p = json_object_get(j, "profiler");
  cr_assert_str_eq(json_string_value(json_object_get(p, "cupti_window")), "closed");
  cr_assert_eq(json_integer_value(json_object_get(p, "cupti_windows")), 7);
  cr_assert_eq(json_integer_value(json_object_get(p, "stale")), 5);
  cr_assert_eq(json_integer_value(json_object_get(p, "overlap_unknown")), 6);
  cr_assert_eq(json_integer_value(json_object_get(p, "overlap_late")), 8);
  cr_assert_float_eq(json_number_value(json_object_get(p, "overlap_late_seconds")), 0.375, 1e-12);
  json_decref(j);
  free(text);
  char *m = metrics_of(s);
  cr_assert(strstr(m, "autoccl_workload_exposed_seconds_total{comm=\"dp\",rank=\"0\","));
  cr_assert(strstr(m, "# TYPE autoccl_workload_exposed_seconds_total counter"));
  cr_assert(strstr(m, "autoccl_job_exposed_seconds_total 1.5\n"), "%s", m);
  cr_assert(strstr(m, "autoccl_job_time_saved_seconds 0.125\n"));
  cr_assert(strstr(m, "autoccl_profiler_cupti_windows_total 7\n"));
  cr_assert(strstr(m, "autoccl_profiler_stale_total 5\n"), "%s", m);
  cr_assert(strstr(m, "autoccl_profiler_overlap_unknown_total 6\n"), "%s", m);
  cr_assert(strstr(m, "autoccl_profiler_overlap_late_total 8\n"), "%s", m);
  cr_assert(strstr(m, "autoccl_profiler_overlap_late_seconds_total 0.375\n"), "%s", m);
  free(m);
  /* nothing measured: no job series, job fields null */
  for (int i = 0; i < s->nworkloads; i++)
    s->workloads[i].has_exposed = s->workloads[i].has_net = false;
  s->profiler.cupti_window[0] = 0;
  m = metrics_of(s);
  cr_assert_null(strstr(m, "autoccl_job_exposed_seconds_total"));
  cr_assert_null(strstr(m, "autoccl_workload_exposed_seconds_total{"));
  cr_assert_null(strstr(m, "autoccl_profiler_cupti_windows_total"));
  free(m);
  text = state_of(s);
  j = parse(text);
  cr_assert(json_is_null(json_object_get(json_object_get(j, "job"), "exposed_seconds")));
  cr_assert(json_is_null(json_object_get(json_object_get(j, "profiler"), "cupti_window")));
  json_decref(j);
  free(text);
  free(s);
}

/* Consensus's and the profiler's plain figures become the snapshot's entries
 * unchanged; strings are cut to the snapshot's fields, never overrun. */
Test(stats, fill_copies_every_figure)
{
  acl_cons_wl_stats_t cw;
  memset(&cw, 0, sizeof(cw));
  cw.rank = 3;
  cw.widx = 7;
  cw.key = (acl_wkey_t){.comm_id = 0xabc, .nbytes = 4096, .num_pipe_ops = 2, .coll = 4};
  cw.phase = ACL_PHASE_VALIDATING;
  cw.current = (acl_candidate_t){.algo = 1, .proto = 2, .nchannels = 8, .chunk_log2 = -1};
  cw.best = (acl_candidate_t){.algo = 0, .proto = 1, .nchannels = 4};
  cw.baseline = (acl_candidate_t){.algo = ACL_ALGO_NCCL};
  cw.has_best = cw.has_baseline = cw.has_speedup = cw.has_speedup_ci = true;
  cw.has_busbw = cw.has_overlap = true;
  cw.baseline_seconds = 2e-3;
  cw.best_seconds = 1e-3;
  cw.speedup = 1.9;
  cw.speedup_lo = 1.8;
  cw.speedup_hi = 2.1;
  cw.busbw = 5e10;
  cw.overlap = 0.25;
  cw.candidates_evaluated = 11;
  cw.calls_to_converge = 1234;
  cw.retunes = 2;
  cw.clock_offset_seconds = 2.3e-6;
  cw.source = 1;
  cw.samples = 99;
  cw.traj_len = ACL_CONS_TRAJ;
  for (int i = 0; i < ACL_CONS_TRAJ; i++)
    cw.traj[i] = (acl_traj_point_t){.step = (uint32_t)i, .busbw = (float)i, .overlap = -1};
  acl_snap_workload_t w;
  memset(&w, 0xff, sizeof(w)); /* the fill clears what it does not set */
  acl_snap_workload_fill(&w, &cw);
  cr_assert_eq(w.rank, 3);
  cr_assert_eq(w.widx, 7);
  cr_assert_eq(memcmp(&w.key, &cw.key, sizeof(w.key)), 0);
  cr_assert_eq(w.phase, ACL_PHASE_VALIDATING);
  cr_assert_eq(memcmp(&w.current, &cw.current, sizeof(w.current)), 0);
  cr_assert_eq(memcmp(&w.best, &cw.best, sizeof(w.best)), 0);
  cr_assert_eq(w.baseline.algo, ACL_ALGO_NCCL);
  cr_assert(w.has_best && w.has_baseline && w.has_speedup && w.has_speedup_ci);
  cr_assert(w.has_busbw && w.has_overlap);
  cr_assert(!w.has_exposed && !w.has_net, "the plugin's figures are not consensus's");
  cr_assert_eq(w.baseline_seconds, 2e-3);
  cr_assert_eq(w.best_seconds, 1e-3);
  cr_assert_eq(w.speedup, 1.9);
  cr_assert_eq(w.speedup_lo, 1.8);
  cr_assert_eq(w.speedup_hi, 2.1);
  cr_assert_eq(w.busbw, 5e10);
  cr_assert_eq(w.overlap, 0.25);
  cr_assert_eq(w.candidates_evaluated, 11);
  cr_assert_eq(w.calls_to_converge, 1234);
  cr_assert_eq(w.retunes, 2);
  cr_assert_eq(w.clock_offset_seconds, 2.3e-6);
  cr_assert_eq(w.source, 1);
  cr_assert_eq(w.samples, 99);
  cr_assert_eq(w.calls, 0);
  cr_assert_eq(w.traj_len, ACL_SNAP_TRAJ);
  cr_assert_eq(w.traj[ACL_SNAP_TRAJ - 1].step, ACL_SNAP_TRAJ - 1);
  cw.traj_len = 1000; /* more than a snapshot holds: the points copied stay in bounds */
  acl_snap_workload_fill(&w, &cw);
  cr_assert_eq(w.traj[ACL_SNAP_TRAJ - 1].step, ACL_SNAP_TRAJ - 1);

  acl_cons_comm_stats_t cc = {.id = 0x42,
                              .rank = 1,
                              .nranks = 8,
                              .nnodes = 2,
                              .decider = false,
                              .wait_seconds = 0.5,
                              .blocks_published = 3,
                              .lock_acquisitions = 4,
                              .samples_busy = 5,
                              .workloads_refused = 6};
  acl_snap_comm_t c;
  acl_snap_comm_fill(&c, &cc);
  cr_assert_eq(c.id, 0x42);
  cr_assert_eq(c.rank, 1);
  cr_assert_eq(c.nranks, 8);
  cr_assert_eq(c.nnodes, 2);
  cr_assert_str_eq(c.role, "follower");
  cr_assert_eq(c.consensus_wait_seconds, 0.5);
  cr_assert_eq(c.blocks_published, 3);
  cr_assert_eq(c.lock_acquisitions, 4);
  cr_assert_eq(c.samples_busy, 5);
  cr_assert_eq(c.workloads_refused, 6);
  cr_assert_str_eq(c.name, "", "the plugin names the communicator");
  cc.decider = true;
  acl_snap_comm_fill(&c, &cc);
  cr_assert_str_eq(c.role, "decider");

  acl_prof_stats_t ps = {.source = "cupti",
                         .cupti_available = true,
                         .cupti_backed_off = true,
                         .records = 10,
                         .records_dropped = 1,
                         .samples = 9,
                         .ambiguous = 2,
                         .stale = 11,
                         .overlap_unknown = 12,
                         .overlap_late = 13,
                         .overlap_late_seconds = 0.25,
                         .mismatches = 3,
                         .sample_latency_seconds = 0.004,
                         .cupti_window = "always-and-longer-than-the-field",
                         .cupti_on_ms = 100,
                         .cupti_period_ms = 5000,
                         .cupti_windows = 7,
                         .cupti_on_seconds = 0.7};
  acl_snap_profiler_t p;
  acl_snap_profiler_fill(&p, &ps);
  cr_assert_str_eq(p.source, "cupti");
  cr_assert(p.cupti_available && p.cupti_backed_off);
  cr_assert_eq(p.records, 10);
  cr_assert_eq(p.records_dropped, 1);
  cr_assert_eq(p.samples, 9);
  cr_assert_eq(p.ambiguous, 2);
  cr_assert_eq(p.stale, 11);
  cr_assert_eq(p.overlap_unknown, 12);
  cr_assert_eq(p.overlap_late, 13);
  cr_assert_eq(p.overlap_late_seconds, 0.25);
  cr_assert_eq(p.mismatches, 3);
  cr_assert_eq(p.sample_latency_seconds, 0.004);
  cr_assert_eq(strnlen(p.cupti_window, sizeof(p.cupti_window)), sizeof(p.cupti_window) - 1);
  cr_assert_eq(p.cupti_on_ms, 100);
  cr_assert_eq(p.cupti_period_ms, 5000);
  cr_assert_eq(p.cupti_windows, 7);
  cr_assert_eq(p.cupti_on_seconds, 0.7);
}
