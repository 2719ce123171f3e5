/* End of run: compare every rank's decision log call by call (a real NCCL
 * hangs when ranks disagree), derive per-workload results from what NCCL ran,
 * and print them as text or one JSON line. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/strbuf.h"
#include "sim/sim.h"

typedef struct wstat {
  const acl_sim_call_t *call; /* first call of the workload */
  uint64_t n;                 /* calls */
  uint64_t last_change;       /* workload-call index where the final decision began */
  uint64_t changes;
  uint64_t errors;
  acl_sim_logent_t last;
  /* second pass (rank 0's log again), against the final decision */
  uint64_t seen;
  uint64_t first_final; /* 1-based workload call where the final decision first ran */
  uint64_t explore;     /* calls that ran anything else */
  /* captured calls, and those that ran neither NCCL's own choice nor the
   * final decision: an exploratory candidate frozen into a graph */
  uint64_t captured, captured_explore;
} wstat_t;

/* What NCCL ran (and whether it failed); the capture flags aside. */
static bool same(const acl_sim_logent_t *a, const acl_sim_logent_t *b)
{
  return a->algo == b->algo && a->proto == b->proto && a->nchannels == b->nchannels &&
         a->chunk_log2 == b->chunk_log2 &&
         (a->flags & ACL_SIM_LOG_ERROR) == (b->flags & ACL_SIM_LOG_ERROR);
}

/* Uncaptured calls of the workload looked at on each side of a captured
 * one: a decision runs at least 12 of every 16 calls (validation and
 * refinement interleave 4 of another), an explored candidate a few calls. */
#define CAPTURE_WINDOW 32

/* Captured calls (rank 0's log) and those that ran an exploratory
 * candidate: neither NCCL's own choice, nor the final decision, nor what
 * most of the workload's uncaptured calls just before or just after it ran
 * (the decision applied then, which a later refinement may have replaced). The
 * simulator sees what ran, not the plugin's state: a candidate under
 * validation runs most calls too, so this catches exploration, not an
 * unproven decision (tests/plugin/test_capture.c checks that). */
static void count_captured(FILE *f, const acl_sim_step_t *st, wstat_t *ws)
{
  size_t n = 0, cap = 0;
  acl_sim_logent_t *v = NULL, e;
  if (fseek(f, 0, SEEK_SET) != 0)
    return;
  while (fread(&e, sizeof(e), 1, f) == 1) {
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 4096;
      acl_sim_logent_t *nv = realloc(v, nc * sizeof(*nv));
      if (!nv)
        break;
      v = nv;
      cap = nc;
    }
    v[n++] = e;
  }
  for (size_t i = 0; i < n; i++) {
    if (!(v[i].flags & ACL_SIM_LOG_CAPTURED))
      continue;
    uint32_t wid = st->calls[i % st->ncalls].wid;
    wstat_t *s = &ws[wid];
    s->captured++;
    if ((v[i].flags & ACL_SIM_LOG_NCCL) || same(&v[i], &s->last))
      continue;
    bool held = false; /* by most calls before it, or most after it */
    for (int dir = -1; dir <= 1; dir += 2) {
      int got = 0, agree = 0;
      for (size_t j = i; got < CAPTURE_WINDOW && (dir < 0 ? j > 0 : j + 1 < n);) {
        j = dir < 0 ? j - 1 : j + 1;
        if (st->calls[j % st->ncalls].wid != wid || (v[j].flags & ACL_SIM_LOG_CAPTURED))
          continue;
        got++;
        agree += same(&v[j], &v[i]);
      }
      held = held || 2 * agree > got;
    }
    s->captured_explore += !held;
  }
  free(v);
}

/* Ranks agree on a call: the same run, and the same capture flags. */
static bool agree_eq(const acl_sim_logent_t *a, const acl_sim_logent_t *b)
{
  return same(a, b) && a->flags == b->flags;
}

static void cand_json(acl_strbuf_t *sb, const acl_candidate_t *c)
{
  acl_sb_puts(sb, "{\"algo\":");
  acl_sb_json_str(sb, acl_algo_name(c->algo));
  acl_sb_puts(sb, ",\"proto\":");
  if (c->algo == ACL_ALGO_NCCL)
    acl_sb_puts(sb, "null");
  else
    acl_sb_json_str(sb, acl_proto_name(c->proto));
  acl_sb_printf(sb, ",\"channels\":%d,\"chunk_log2\":%d}", c->nchannels, (int)c->chunk_log2);
}

static void num_json(acl_strbuf_t *sb, double v)
{
  if (isfinite(v))
    acl_sb_printf(sb, "%.6g", v);
  else
    acl_sb_puts(sb, "null");
}

/* --churn-every: generations made (the fewest of any rank), the run's
 * consensus segments still in /dev/shm now that every rank is gone, and
 * each measured rank process's resources after the warm-up churns and
 * after the last. */
static void churn_json(const acl_sim_world_t *w, acl_strbuf_t *sb)
{
  static const char *const res[4] = {"shm_maps", "fds", "threads", "rss_kb"};
  uint32_t cycles = UINT32_MAX;
  for (int r = 0; r < w->o->nranks; r++)
    cycles = w->ctl->rank[r].churns < cycles ? w->ctl->rank[r].churns : cycles;
    /* ASan's quarantine holds freed memory (up to 256 MiB): RSS then says
   * nothing about leaks, which LeakSanitizer checks itself. */
#ifdef __SANITIZE_ADDRESS__
  const char *rss_meaningful = "false";
#else
  const char *rss_meaningful = "true";
#endif
  acl_sb_printf(sb,
                ",\"churn\":{\"cycles\":%u,\"warm_cycles\":%u,\"segments_left\":%d,"
                "\"rss_meaningful\":%s,\"ranks\":[",
                cycles == UINT32_MAX ? 0u : cycles, ACL_SIM_CHURN_WARM,
                acl_sim_run_segments(w, w->o->ncomms), rss_meaningful);
  bool first = true;
  for (int r = 0; r < w->o->nranks; r++) {
    const acl_sim_rank_slot_t *s = &w->ctl->rank[r];
    if (!s->churn_measured)
      continue;
    acl_sb_printf(sb, "%s{\"rank\":%d", first ? "" : ",", r);
    first = false;
    for (int k = 0; k < 2; k++) {
      const uint64_t *m = k ? s->churn_last : s->churn_first;
      acl_sb_printf(sb, ",\"%s\":{", k ? "last" : "first");
      for (int i = 0; i < 4; i++)
        acl_sb_printf(sb, "%s\"%s\":%llu", i ? "," : "", res[i], (unsigned long long)m[i]);
      acl_sb_puts(sb, "}");
    }
    acl_sb_puts(sb, ",\"rss_marks\":[");
    for (uint32_t i = 0; i < s->churn_nmarks && i < ACL_SIM_CHURN_MARKS; i++)
      acl_sb_printf(sb, "%s{\"cycle\":%u,\"rss_kb\":%llu}", i ? "," : "", s->churn_mark_at[i],
                    (unsigned long long)s->churn_mark_rss_kb[i]);
    acl_sb_puts(sb, "]}");
  }
  acl_sb_puts(sb, "]}");
}

int acl_sim_report(const acl_sim_world_t *w, double wall_s, double endpoint_wait_s,
                   const char *endpoint_off, char *const *states)
{
  bool endpoint_ok = !endpoint_off;
  const acl_sim_opts_t *o = w->o;
  const acl_sim_step_t *st = w->step;
  int n = o->nranks, status = ACL_SIM_EXIT_FAILED;
  /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of FILE pointers */
  FILE **fs = calloc((size_t)n, sizeof(*fs));
  acl_sim_logent_t *row = calloc((size_t)n, sizeof(*row));
  wstat_t *ws = calloc(st->nworkloads ? st->nworkloads : 1, sizeof(*ws));
  acl_strbuf_t sb;
  acl_sb_init(&sb);
  if (!fs || !row || !ws) {
    fprintf(stderr, "autoccl-sim: out of memory for the report\n");
    goto out;
  }
  for (int r = 0; r < n; r++) {
    char p[300];
    snprintf(p, sizeof(p), "%s/rank%d.log", w->logdir, r);
    if (!(fs[r] = fopen(p, "rb"))) {
      fprintf(stderr, "autoccl-sim: cannot read the decision log of rank %d: %s\n", r,
              strerror(errno));
      goto out;
    }
  }
  for (size_t i = 0; i < st->ncalls; i++)
    if (!ws[st->calls[i].wid].call)
      ws[st->calls[i].wid].call = &st->calls[i];

  /* Lockstep over all ranks' logs. */
  uint64_t divergent = 0, length_mismatch = 0, idx = 0, first_div = UINT64_MAX;
  for (;; idx++) {
    int got = 0;
    for (int r = 0; r < n; r++)
      got += fread(&row[r], sizeof(row[r]), 1, fs[r]) == 1;
    if (got == 0)
      break;
    if (got != n) {
      length_mismatch++;
      divergent++;
      continue;
    }
    bool agree = true;
    for (int r = 1; r < n; r++)
      agree = agree && agree_eq(&row[0], &row[r]);
    if (!agree) {
      divergent++;
      if (first_div == UINT64_MAX)
        first_div = idx;
    }
    if (st->ncalls == 0) /* nothing scheduled: nothing to attribute */
      continue;
    wstat_t *s = &ws[st->calls[idx % st->ncalls].wid];
    if (row[0].flags & ACL_SIM_LOG_ERROR)
      s->errors++;
    if (s->n == 0 || !same(&s->last, &row[0])) {
      if (s->n)
        s->changes++;
      s->last_change = s->n;
      s->last = row[0];
    }
    s->n++;
  }
  /* What a warm start saves: when the final decision first ran, and how
   * many calls ran anything else (warm-up, exploration, validation). */
  if (st->ncalls && fseek(fs[0], 0, SEEK_SET) == 0) {
    for (uint64_t k = 0; fread(&row[0], sizeof(row[0]), 1, fs[0]) == 1; k++) {
      wstat_t *s = &ws[st->calls[k % st->ncalls].wid];
      s->seen++;
      bool fin = same(&s->last, &row[0]);
      if (!fin)
        s->explore++;
      else if (!s->first_final)
        s->first_final = s->seen;
    }
    count_captured(fs[0], st, ws);
  }
  uint64_t steps = UINT64_MAX, plugin_errors = 0;
  double gci = 0;
  for (int r = 0; r < n; r++) {
    const acl_sim_rank_slot_t *sl = &w->ctl->rank[r];
    steps = sl->steps_done < steps ? sl->steps_done : steps;
    plugin_errors += sl->plugin_errors;
    gci += sl->gci_seconds;
  }
  double level = steps ? acl_sim_interf_level(&o->interf, steps - 1) : 0.0;
  double wait = endpoint_ok ? endpoint_wait_s : gci;

  FILE *out = stdout;
  /* The text is the plugin's own job report (what the live views show);
   * the simulator's table of what NCCL ran only where the plugin wrote none. */
  bool table = false;
  if (!o->json || o->verbose) {
    fprintf(out,
            "\nautoccl-sim report: workload %s on %s, %d ranks (%d host%s, %d communicator%s), "
            "%llu steps, %llu calls per rank, %.1f s\n",
            acl_sim_mix_name(o->mix), acl_land_name(w->land), n, o->nhosts,
            o->nhosts == 1 ? "" : "s", o->ncomms, o->ncomms == 1 ? "" : "s",
            (unsigned long long)steps, (unsigned long long)(idx), wall_s);
    table = !acl_sim_job_text(w, out);
    if (table)
      fprintf(out, "%-4s %-13s %-13s %10s  %-10s %-22s %8s %8s %9s\n", "comm", "workload",
              "collective", "bytes", "held", "final (NCCL ran)", "speedup", "vs-orcl", "converge");
  }
  acl_sb_printf(
      &sb, "{\"version\":1,\"nccl_version\":\"%s\",\"landscape\":", o->nccl230 ? "2.30" : "2.28");
  acl_sb_json_str(&sb, acl_land_name(w->land));
  acl_sb_puts(&sb, ",\"workload\":");
  acl_sb_json_str(&sb, acl_sim_mix_name(o->mix));
  acl_sb_printf(&sb,
                ",\"ranks\":%d,\"hosts\":%d,\"comms\":%d,\"group_mode\":%s,\"ranks_per_proc\":%d,"
                "\"steps\":%llu,\"calls_per_rank\":%llu,\"wall_seconds\":%.3f,"
                "\"interference_now\":%.3f",
                n, o->nhosts, o->ncomms, o->group_mode ? "true" : "false", o->ranks_per_proc,
                (unsigned long long)steps, (unsigned long long)idx, wall_s, level);
  acl_sb_printf(&sb, ",\"divergent_decisions\":%llu,\"log_length_mismatch\":%llu",
                (unsigned long long)divergent, (unsigned long long)length_mismatch);
  acl_sb_printf(&sb, ",\"plugin_errors\":%llu,\"consensus_wait_seconds\":",
                (unsigned long long)plugin_errors);
  num_json(&sb, wait);
  acl_sb_printf(&sb, ",\"consensus_wait_source\":\"%s\",\"endpoint_off\":",
                endpoint_ok ? "endpoint" : "getcollinfo");
  if (endpoint_off)
    acl_sb_json_str(&sb, endpoint_off);
  else
    acl_sb_puts(&sb, "null");
  acl_sb_puts(&sb, ",\"getcollinfo_seconds\":");
  num_json(&sb, gci);
  acl_sim_job_json(w, states, &sb);
  if (o->churn_every)
    churn_json(w, &sb);
  acl_sb_puts(&sb, ",\"workloads\":[");
  for (size_t i = 0; i < st->nworkloads; i++) {
    wstat_t *s = &ws[i];
    const acl_sim_call_t *c = s->call;
    acl_candidate_t fin = {s->last.algo, s->last.proto, s->last.nchannels, s->last.chunk_log2};
    acl_candidate_t base = {ACL_ALGO_NCCL, -1, 0, 0}, best, def;
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): workloads come from calls */
    acl_land_nccl_default(w->land, c->coll, c->nbytes, n, &def);
    bool ok = s->n > 0 && !(s->last.flags & ACL_SIM_LOG_ERROR);
    double t_fin = ok ? acl_land_time(w->land, c->coll, c->nbytes, n, &fin, level) : NAN;
    double t_def = acl_land_time(w->land, c->coll, c->nbytes, n, &base, level);
    double t_orc = acl_land_oracle(w->land, c->coll, c->nbytes, n, level, &best);
    double speedup = t_def / t_fin, vs_oracle = t_orc / t_fin;
    /* Converged: the final decision held for the last fifth of the calls
     * (at least 10) - the sim sees only what NCCL ran, not the plugin. */
    uint64_t held = s->n - s->last_change, need = s->n / 5 > 10 ? s->n / 5 : 10;
    const char *state = s->n == 0      ? "idle"
                        : !ok          ? "error"
                        : held >= need ? "converged"
                                       : "exploring";
    char cs[48];
    if (table)
      fprintf(out, "%-4d %-13s %-13s %10llu  %-10s %-22s %8.3f %8.3f %9llu\n", c->comm,
              acl_sim_group_name(c->group), acl_coll_name(c->coll), (unsigned long long)c->nbytes,
              state, ok ? acl_candidate_str(&fin, cs, sizeof(cs)) : "(failed)", speedup, vs_oracle,
              (unsigned long long)s->last_change);
    acl_sb_printf(&sb, "%s{\"comm\":%d,\"comm_id\":\"0x%016llx\",\"workload\":", i ? "," : "",
                  c->comm, (unsigned long long)w->ctl->comm_ids[c->comm]);
    acl_sb_json_str(&sb, acl_sim_group_name(c->group));
    acl_sb_puts(&sb, ",\"collective\":");
    acl_sb_json_str(&sb, acl_coll_name(c->coll));
    acl_sb_printf(&sb, ",\"bytes\":%llu,\"state\":\"%s\",\"final\":", (unsigned long long)c->nbytes,
                  state);
    if (ok)
      cand_json(&sb, &fin);
    else
      acl_sb_puts(&sb, "null");
    acl_sb_puts(&sb, ",\"nccl_default\":");
    cand_json(&sb, &def);
    acl_sb_puts(&sb, ",\"oracle\":");
    cand_json(&sb, &best);
    acl_sb_puts(&sb, ",\"speedup\":");
    num_json(&sb, speedup);
    acl_sb_puts(&sb, ",\"final_over_oracle\":");
    num_json(&sb, vs_oracle);
    acl_sb_printf(&sb,
                  ",\"calls\":%llu,\"calls_to_converge\":%llu,\"decision_changes\":%llu,"
                  "\"errors\":%llu,\"first_decision_call\":%llu,\"exploration_calls\":%llu,"
                  "\"captured_calls\":%llu,\"captured_exploratory\":%llu}",
                  (unsigned long long)s->n, (unsigned long long)s->last_change,
                  (unsigned long long)s->changes, (unsigned long long)s->errors,
                  (unsigned long long)s->first_final, (unsigned long long)s->explore,
                  (unsigned long long)s->captured, (unsigned long long)s->captured_explore);
  }
  acl_sb_puts(&sb, "]}");
  if (!acl_sb_ok(&sb)) {
    fprintf(stderr, "autoccl-sim: out of memory for the report\n");
    goto out;
  }
  if (!o->json || o->verbose) {
    fprintf(
        out, "divergent decisions: %llu%s   plugin errors: %llu   consensus wait: %.4f s (%s)\n",
        (unsigned long long)divergent, divergent ? " (a real NCCL would hang or corrupt data)" : "",
        (unsigned long long)plugin_errors, wait,
        endpoint_ok ? "plugin endpoint" : "time inside getCollInfo");
    if (endpoint_off && o->port > 0)
      fprintf(out, "endpoint off: %s\n", endpoint_off);
    if (first_div != UINT64_MAX)
      fprintf(out, "first divergent call: #%llu of each rank (step %llu, call %llu of the step)\n",
              (unsigned long long)first_div, (unsigned long long)(first_div / st->ncalls),
              (unsigned long long)(first_div % st->ncalls));
  }
  for (int r = 0; r < n; r++)
    if (w->ctl->rank[r].error[0])
      fprintf(stderr, "autoccl-sim: %s\n", w->ctl->rank[r].error);
  if (o->json)
    fprintf(out, "%s\n", sb.data);
  fflush(out);
  status = divergent || plugin_errors ? ACL_SIM_EXIT_INCONSISTENT : ACL_SIM_EXIT_OK;
out:
  for (int r = 0; fs && r < n; r++)
    if (fs[r])
      fclose(fs[r]);
  acl_sb_free(&sb);
  free(fs);
  free(row);
  free(ws);
  return status;
}

/* Minimal HTTP/1.0 GET on loopback; the body of /api/v1/state is scanned for
 * its "pid" and every "consensus_wait_seconds": number (one per
 * communicator). */
double acl_sim_fetch_wait(int port, double timeout_s, int pid)
{
  return acl_sim_fetch_state(port, timeout_s, pid, NULL);
}

double acl_sim_fetch_state(int port, double timeout_s, int pid, char **body_out)
{
  if (body_out)
    *body_out = NULL;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  double total = -1, deadline = acl_mono_s() + timeout_s;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (!buf)
    goto out;
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS)
    goto out;
  struct pollfd pf = {fd, POLLOUT, 0};
  if (poll(&pf, 1, (int)(timeout_s * 1000)) != 1)
    goto out;
  int soerr = 0;
  socklen_t sl = sizeof(soerr);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr)
    goto out;
  static const char req[] = "GET /api/v1/state HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
    goto out;
  for (;;) {
    double left = deadline - acl_mono_s();
    if (left <= 0)
      goto out;
    pf.events = POLLIN;
    if (poll(&pf, 1, (int)(left * 1000) + 1) != 1)
      goto out;
    if (len == cap) {
      if (cap >= (64u << 20))
        goto out;
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb)
        goto out;
      buf = nb;
      cap *= 2;
    }
    ssize_t k = recv(fd, buf + len, cap - len, 0);
    if (k < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (k < 0)
      goto out;
    if (k == 0)
      break;
    len += (size_t)k;
  }
  buf[len] = '\0';
  if (strncmp(buf, "HTTP/1.", 7) != 0 || strncmp(buf + 9, "200", 3) != 0)
    goto out;
  const char *body = strstr(buf, "\r\n\r\n");
  if (!body)
    goto out;
  /* Another process on the port (ours failed to bind) is not our figure. */
  const char *pp = strstr(body, "\"pid\"");
  if (!pp) {
    total = -2;
    goto out;
  }
  pp += 5;
  while (*pp == ' ' || *pp == ':')
    pp++;
  if (atoi(pp) != pid) {
    total = -2;
    goto out;
  }
  total = 0;
  static const char key[] = "\"consensus_wait_seconds\"";
  for (const char *p = strstr(body, key); p; p = strstr(p + 1, key)) {
    p += sizeof(key) - 1;
    while (*p == ' ' || *p == ':')
      p++;
    char *e;
    double v = strtod(p, &e);
    if (e != p && isfinite(v) && v >= 0)
      total += v;
  }
  if (body_out)
    *body_out = strdup(body + 4);
out:
  free(buf);
  close(fd);
  return total;
}
