/* The job report at exit (AUTOCCL_REPORT, observe/observe.h): each rank's rows
 * are kept when NCCL finalizes its communicator, from the same snapshot that
 * /api/v1/state serves, and the report is written when the last rank goes
 * (or at process exit for ranks NCCL never finalized). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "observe/observe.h"
#include "tuner/plugin/plugin_int.h"

static acl_snapshot_t *kept; /* under acl_proc.lock */

void acl_report_keep_locked(acl_rank_t *r)
{
  if (!acl_proc.cfg.report_path[0] || !r->cons)
    return;
  if (!kept) {
    kept = calloc(1, sizeof(*kept));
    if (!kept) {
      acl_warn("AUTOCCL_REPORT: out of memory; no job report");
      return;
    }
    acl_obs_snap_head_locked(kept);
  }
  acl_obs_snap_add_rank_locked(kept, r);
}

/* The path of this process's report: %p the pid, %r the local rank, %h the
 * host name (one folder shared by several hosts); a template with neither
 * %p nor %r gets ".<local rank>" appended on local ranks other
 * than 0, so the processes of one host never overwrite each other. */
static int expand_path(const char *tmpl, char *out, size_t len)
{
  size_t o = 0;
  bool per_proc = false;
  for (const char *c = tmpl; *c && o + 1 < len; c++) {
    int n = 0;
    if (c[0] == '%' && c[1] == 'p') {
      n = snprintf(out + o, len - o, "%d", (int)getpid());
      per_proc = true;
      c++;
    } else if (c[0] == '%' && c[1] == 'h') {
      char host[64] = "";
      gethostname(host, sizeof(host) - 1);
      n = snprintf(out + o, len - o, "%s", host);
      c++;
    } else if (c[0] == '%' && c[1] == 'r') {
      n = snprintf(out + o, len - o, "%d", acl_proc.cfg.local_rank);
      per_proc = true;
      c++;
    } else {
      out[o] = *c;
      n = 1;
    }
    if (n < 0 || (size_t)n >= len - o)
      return -1;
    o += (size_t)n;
  }
  out[o] = '\0';
  if (!per_proc && acl_proc.cfg.local_rank != 0) {
    int n = snprintf(out + o, len - o, ".%d", acl_proc.cfg.local_rank);
    if (n < 0 || (size_t)n >= len - o)
      return -1;
  }
  return 0;
}

static void write_one(const char *path, const acl_strbuf_t *sb, const char *what)
{
  char err[320];
  if (!acl_sb_ok(sb))
    acl_warn("AUTOCCL_REPORT: out of memory; no %s written", what);
  else if (acl_table_write_atomic(path, sb->data ? sb->data : "", sb->len, err, sizeof(err)) != 0)
    acl_warn("AUTOCCL_REPORT: cannot write the %s: %s", what, err);
}

void acl_report_write_locked(bool at_exit)
{
  if (!acl_proc.cfg.report_path[0])
    return;
  if (at_exit)
    for (acl_rank_t *r = acl_proc.ranks; r; r = r->next)
      acl_report_keep_locked(r);
  if (!kept)
    return; /* no communicator was tuned here */
  kept->uptime_seconds = (double)(acl_mono_ns() - acl_proc.t0_ns) * 1e-9;
  acl_obs_snap_profiler_locked(kept); /* the whole run's, not the first finalize's */
  char path[600];
  acl_strbuf_t js, tx;
  acl_sb_init(&js);
  acl_sb_init(&tx);
  if (expand_path(acl_proc.cfg.report_path, path, sizeof(path) - 4) != 0) {
    acl_warn("AUTOCCL_REPORT: the path is too long once expanded; no job report");
    goto out;
  }
  acl_report_json(kept, &js);
  acl_report_text(kept, &tx);
  write_one(path, &js, "job report");
  snprintf(path + strlen(path), sizeof(path) - strlen(path), ".txt");
  write_one(path, &tx, "job report text");
  /* The text in the log too, line by line (NCCL_DEBUG=INFO shows it). */
  if (acl_sb_ok(&tx) && tx.data) {
    for (char *line = tx.data, *nl; *line; line = nl + 1) {
      nl = strchr(line, '\n');
      if (!nl)
        nl = line + strlen(line) - 1;
      acl_info("%.*s", (int)(nl - line), line);
      if (!nl[1])
        break;
    }
  }
out:
  acl_sb_free(&js);
  acl_sb_free(&tx);
  free(kept);
  kept = NULL;
}
