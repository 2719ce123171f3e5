/* acl-web-bench-render [WORKLOADS]: time acl_render_metrics and
 * acl_render_state_json on a synthetic snapshot (docs/benchmarks-web.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "observe/observe.h"

int main(int argc, char **argv)
{
  long nw = 7;
  if (argc > 1 && !acl_parse_int(argv[1], 1, ACL_SNAP_MAX_WORKLOADS, &nw)) {
    fprintf(stderr, "usage: acl-web-bench-render [WORKLOADS 1..%d]\n", ACL_SNAP_MAX_WORKLOADS);
    return 2;
  }
  acl_snapshot_t *s = calloc(1, sizeof(*s));
  if (!s)
    return 1;
  s->ncomms = 3;
  for (int i = 0; i < 3; i++) {
    s->comms[i].id = (uint64_t)i + 1;
    snprintf(s->comms[i].name, sizeof(s->comms[i].name), "comm%d", i);
  }
  for (int i = 0; i < nw; i++) {
    acl_snap_workload_t *w = &s->workloads[s->nworkloads++];
    w->comm = i % 3;
    w->key.coll = 4;
    w->key.nbytes = 4096ull << (i % 20);
    w->key.num_pipe_ops = 1 + i / 20;
    w->has_busbw = w->has_speedup = w->has_overlap = true;
    w->busbw = 1.234e11;
    w->speedup = 1.1;
    w->overlap = 0.23;
    w->dur_sum = 0.1234;
    w->traj_len = 20;
    for (int t = 0; t < 20; t++)
      w->traj[t] = (acl_traj_point_t){.step = (uint32_t)t,
                                      .cand = {.algo = 1, .proto = 2, .nchannels = 16},
                                      .busbw = 1.2e11f,
                                      .overlap = 0.21f};
  }
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  int n = nw > 100 ? 200 : 5000;
  double t0 = acl_mono_s();
  for (int i = 0; i < n; i++) {
    acl_sb_reset(&sb);
    acl_render_metrics(s, &sb);
  }
  double t1 = acl_mono_s();
  printf("metrics: %ld workloads, %zu bytes, %.1f us per render\n", nw, sb.len,
         (t1 - t0) / n * 1e6);
  t0 = acl_mono_s();
  for (int i = 0; i < n; i++) {
    acl_sb_reset(&sb);
    acl_render_state_json(s, &sb);
  }
  t1 = acl_mono_s();
  printf("state:   %ld workloads, %zu bytes, %.1f us per render\n", nw, sb.len,
         (t1 - t0) / n * 1e6);
  acl_sb_free(&sb);
  free(s);
  return 0;
}
