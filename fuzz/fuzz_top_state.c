/* autoccl-top's client side of /api/v1/state: acl_top_parse_state, then
 * everything the TUI does with a parsed document (merge, every sort, every
 * cell, the plot, the merged JSON, batch output). Checks: a failure leaves
 * an empty model and a reason; a success stays within the documented
 * bounds; the input is not NUL-terminated and must not be read past len. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tui/top.h"

static void use_model(const acl_top_model_t *m)
{
  FZ_CHECK(m->nworkloads >= 0 && m->nworkloads <= ACL_TOP_MAX_WORKLOADS, "%d workloads",
           m->nworkloads);
  FZ_CHECK(m->ncomms >= 0 && m->ncomms <= ACL_TOP_MAX_COMMS, "%d comms", m->ncomms);
  for (int i = 0; i < m->nworkloads; i++) {
    const acl_top_workload_t *w = &m->workloads[i];
    FZ_CHECK(w->traj_len >= 0 && w->traj_len <= ACL_TOP_MAX_TRAJ, "traj_len %d", w->traj_len);
    FZ_CHECK(memchr(w->comm, 0, sizeof(w->comm)) && memchr(w->state, 0, sizeof(w->state)) &&
                 memchr(w->collective, 0, sizeof(w->collective)) &&
                 memchr(w->subspace, 0, sizeof(w->subspace)),
             "unterminated string in workload %d", i);
  }
  const acl_top_model_t *models[2] = {m, m}; /* the same source twice merges too */
  acl_top_view_t v;
  memset(&v, 0, sizeof(v));
  if (acl_top_view_build(&v, models, 2) != 0)
    return;
  FZ_CHECK(v.nrows == 2 * m->nworkloads, "%d rows for 2x%d workloads", v.nrows, m->nworkloads);
  FZ_CHECK(v.converged >= 0 && v.converged <= v.total, "converged %d of %d", v.converged, v.total);
  (void)acl_top_weighted_speedup(v.rows, v.nrows);
  char cell[128];
  for (int c = 0; c < ACL_TOP_COL_COUNT; c++) {
    acl_top_view_sort(&v, (acl_top_col_t)c, c & 1);
    for (int r = 0; r < v.nrows && r < 64; r++) {
      const char *s = acl_top_cell(&v.rows[r], (acl_top_col_t)c, cell, sizeof(cell));
      FZ_CHECK(s && strlen(s) < sizeof(cell), "cell overflow");
    }
  }
  if (m->nworkloads > 0) {
    acl_top_plot_t p;
    memset(&p, 0, sizeof(p));
    if (acl_top_plot_build(&p, &m->workloads[0], 40, 10) == 0) {
      FZ_CHECK(p.nsubs >= 0 && p.nsubs <= ACL_TOP_PLOT_MAX_SUBS, "plot subs %d", p.nsubs);
      acl_top_plot_free(&p);
    }
  }
  acl_top_source_status_t st[2] = {{"http://a:1", "connected", NULL},
                                   {"http://b:2", "disconnected", "boom"}};
  char *json = acl_top_json_merged(&v, models, st, 2);
  free(json);
  FILE *f = fopen("/dev/null", "w");
  if (f) {
    acl_top_print_batch(f, &v, st, 2, 1);
    fclose(f);
  }
  acl_top_view_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 256 * 1024)
    return 0;
  char *doc = malloc(size ? size : 1); /* exact size, not terminated */
  if (!doc)
    return 0;
  memcpy(doc, data, size);
  acl_top_model_t m;
  acl_top_model_init(&m);
  char err[256] = "";
  int rc = acl_top_parse_state(doc, size, &m, err, sizeof(err));
  if (rc != 0) {
    FZ_CHECK(rc == -1 && err[0], "failure without a reason (rc %d)", rc);
    FZ_CHECK(m.nworkloads == 0 && m.ncomms == 0 && !m.workloads && !m.comms,
             "failed parse left data in the model");
  } else {
    use_model(&m);
  }
  acl_top_model_clear(&m);
  acl_top_model_clear(&m); /* twice is fine */
  free(doc);
  return 0;
}
