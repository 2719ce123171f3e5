/* Plugin glue: process-wide state (config, profiler, endpoint), the per-rank
 * contexts that tie the profiler and tuner ABIs together, and the decision
 * path of getCollInfo. Snapshots and SSE events live in plugin_obs.c. */
#include "tuner/plugin/plugin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/table.h"
#include "observe/observe.h"
#include "profiler/profiler.h"
#include "profiler/trace.h"
#include "tuner/consensus/consensus.h"
#include "tuner/plugin/plugin_int.h"

acl_proc_t acl_proc = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The rank a profiler init just created on this thread: NCCL initialises
 * the profiler plugin, then the tuner, of a communicator on the same thread. */
static __thread acl_rank_t *tls_pending;

static void sample_sink(void *user, const acl_prof_sample_t *s);

/* The search's sampling rule, for the profiler's event gate. */
static bool sampled_rule(uint8_t shift, uint64_t call) { return acl_search_sampled(shift, call); }

/* Called with acl_proc.lock held. */
static void proc_start_locked(ncclDebugLogger_t log)
{
  acl_log_set_nccl(log);
  if (!acl_proc.cfg_loaded) {
    acl_config_from_env(&acl_proc.cfg);
    acl_log_set_level((acl_log_level_t)acl_proc.cfg.log_level);
    acl_proc.t0_ns = acl_mono_ns();
    acl_proc.cfg_loaded = true;
    acl_info("loaded (mode %s, profiler %s)", acl_mode_name(acl_proc.cfg.mode),
             acl_prof_src_name(acl_proc.cfg.profiler));
  }
  bool online = acl_proc.cfg.mode == ACL_MODE_ONLINE;
  if ((acl_proc.cfg.mode == ACL_MODE_STATIC || (online && acl_proc.cfg.table_path[0])) &&
      !acl_proc.table && !acl_proc.table_failed) {
    char err[640];
    acl_proc.table_failed = true; /* until it loads: warn once, not per communicator */
    if (!acl_proc.cfg.table_path[0]) {
      acl_warn("AUTOCCL_MODE=static needs AUTOCCL_TABLE=<file>; leaving NCCL's choices");
    } else if (!(acl_proc.table = calloc(1, sizeof(*acl_proc.table))) ||
               acl_table_load(acl_proc.cfg.table_path, acl_proc.table, err, sizeof(err))) {
      acl_warn("cannot use tuning table (AUTOCCL_TABLE): %s; %s",
               acl_proc.table ? err : "out of memory",
               online ? "every workload explores" : "leaving NCCL's choices");
      free(acl_proc.table);
      acl_proc.table = NULL;
    } else if (acl_table_meta_refused_locked(err, sizeof(err))) {
      acl_warn("cannot use tuning table (AUTOCCL_TABLE): %s: %s: its %d rules are not "
               "used; %s",
               acl_proc.cfg.table_path, err, acl_proc.table->nrules,
               online ? "every workload explores" : "leaving NCCL's choices");
      free(acl_proc.table);
      acl_proc.table = NULL;
    } else {
      static const char *const fmt_names[] = {"autoccl", "NCCL CSV", "JSON"};
      acl_proc.table_failed = false;
      acl_info("%s: %d rules from %s (%s format, hash %016llx)",
               online ? "warm start" : "static mode", acl_proc.table->nrules,
               acl_proc.cfg.table_path, fmt_names[acl_proc.table->format % 3],
               (unsigned long long)acl_proc.table->hash);
      if (acl_proc.table->nskipped > 0)
        acl_warn("AUTOCCL_TABLE %s: %d rule%s skipped (line%s %s): %s; the other %d apply",
                 acl_proc.cfg.table_path, acl_proc.table->nskipped,
                 acl_proc.table->nskipped > 1 ? "s" : "", acl_proc.table->nskipped > 1 ? "s" : "",
                 acl_proc.table->skipped, ACL_TABLE_SKIP_WHY, acl_proc.table->nrules);
    }
  }
  if (acl_proc.cfg.mode == ACL_MODE_OFF)
    return;
  if (!acl_proc.prof) {
    acl_proc.prof = acl_prof_create_ex(&acl_proc.cfg, sample_sink, NULL,
                                       &(acl_prof_opts_t){.rule = sampled_rule});
    acl_trace_start(&(acl_trace_opts_t){.path = acl_proc.cfg.trace_path,
                                        .max_bytes = acl_proc.cfg.trace_max,
                                        .mode = acl_mode_name(acl_proc.cfg.mode),
                                        .profiler = acl_prof_src_name(acl_proc.cfg.profiler)});
  }
  acl_obs_start_locked();
}

/* Called with acl_proc.lock held when the last rank goes. */
static void proc_stop_locked(bool at_exit)
{
  acl_obs_stop_locked(); /* drops the lock for a while */
  if (!at_exit && acl_proc.nranks_live > 0) {
    /* A communicator arrived meanwhile: it uses the profiler; keep it. */
    acl_obs_start_locked();
    return;
  }
  if (at_exit)
    acl_table_write_out_locked(); /* ranks NCCL never finalized */
  acl_report_write_locked(at_exit);
  acl_prof_destroy(acl_proc.prof);
  if (acl_proc.prof)
    acl_trace_stop(); /* after the profiler: no sample arrives any more */
  acl_proc.prof = NULL;
  free(acl_proc.out);
  acl_proc.out = NULL;
  acl_proc.nout = acl_proc.nout_cap = 0;
  acl_proc.out_full_warned = false;
  atomic_store(&acl_proc.table_warned, 0);
  free(acl_proc.table);
  acl_proc.table = NULL; /* a later communicator loads it again */
  acl_proc.table_failed = false;
}

static acl_rank_t *rank_create_locked(uint64_t comm_id)
{
  acl_rank_t *r = calloc(1, sizeof(*r));
  if (!r)
    return NULL;
  int cap = acl_proc.cfg.max_workloads;
  r->stats = calloc((size_t)cap, sizeof(*r->stats));
  if (!r->stats) {
    free(r);
    return NULL;
  }
  r->nstats = cap;
  r->comm_id = comm_id;
  r->rank = -1;
  r->next = acl_proc.ranks;
  acl_proc.ranks = r;
  acl_proc.nranks_live++;
  return r;
}

/* Drops one of the two references (profiler, tuner). Lock held. */
static void rank_unref_locked(acl_rank_t *r)
{
  if (r->has_profiler || r->has_tuner)
    return;
  if (tls_pending == r)
    tls_pending = NULL;
  for (acl_rank_t **pp = &acl_proc.ranks; *pp; pp = &(*pp)->next) {
    if (*pp == r) {
      *pp = r->next;
      break;
    }
  }
  acl_prof_rank_detach(acl_proc.prof, r->prof_rank);
  if (r->cons) {
    /* finalize: this communicator's decisions go into AUTOCCL_TABLE_OUT */
    acl_table_keep_locked(r);
    acl_table_write_out_locked();
    acl_report_keep_locked(r); /* before its segment goes */
    /* how the local ranks' samples of a call met (docs/consensus.md): a
     * partial or late count says their reports came too far apart */
    acl_cons_stats_t st;
    acl_cons_stats(r->cons, &st);
    acl_info("consensus: %llu samples fed, %llu partial, %llu late, %llu skewed; %llu dropped "
             "here while the lock was held",
             (unsigned long long)st.samples_fed, (unsigned long long)st.samples_partial,
             (unsigned long long)st.samples_late, (unsigned long long)st.samples_skewed,
             (unsigned long long)st.samples_busy);
  }
  acl_cons_destroy(r->cons);
  free(r->stats);
  free(r);
  if (--acl_proc.nranks_live == 0)
    proc_stop_locked(false);
}

acl_rank_t *acl_plugin_profiler_attach(uint64_t comm_id, const char *comm_name, int nnodes,
                                       int nranks, int rank, ncclDebugLogger_t log, int *mask)
{
  pthread_mutex_lock(&acl_proc.lock);
  proc_start_locked(log);
  acl_rank_t *r = rank_create_locked(comm_id);
  if (r) {
    r->has_profiler = true;
    r->rank = rank;
    r->nranks = nranks;
    r->nnodes = nnodes;
    snprintf(r->name, sizeof(r->name), "%s", comm_name && *comm_name ? comm_name : "");
    r->nccl_mask = mask;
    tls_pending = r;
  }
  /* NCCL never asks the tuner about a one-rank communicator, and static
   * mode needs no samples: such communicators add no events. NCCL's mask
   * is one for the process; the profiler keeps it (profiler/gate.h). Online,
   * every call says whether it is being captured into a CUDA graph. */
  bool online = r && nranks > 1 && acl_proc.cfg.mode == ACL_MODE_ONLINE;
  if (r) /* (out of memory: the process's mask is left as it is) */
    acl_prof_mask_init(acl_proc.prof, mask, online);
  pthread_mutex_unlock(&acl_proc.lock);
  return r;
}

static void join_consensus_locked(acl_rank_t *r)
{
  acl_cons_params_t p = {
      .comm_id = r->comm_id,
      .nranks = r->nranks,
      .nnodes = r->nnodes,
      .rank = r->rank,
      .cfg = &acl_proc.cfg,
      .shm_ns = acl_proc.cfg.shm_salt[0] ? acl_proc.cfg.shm_salt : NULL,
      .table = acl_proc.table,
      .chunk_axis = r->abi >= 6 && acl_proc.cfg.chunk_axis,
      .events_per_comm = r->abi >= 6,
  };
  r->cons = acl_cons_create(&p, r->cons_err, sizeof(r->cons_err));
  acl_obs_joined_locked(r); /* this process's endpoint, for the host view */
  if (!r->cons && acl_proc.cfg.mode != ACL_MODE_ONLINE &&
      !strstr(r->cons_err, "AUTOCCL_MODE differs")) {
    /* Off and static modes never need the segment to be safe, only to
     * check agreement: any other failure just skips the check. */
    acl_warn("comm %016llx: mode agreement not checked: %s", (unsigned long long)r->comm_id,
             r->cons_err);
    r->cons_err[0] = '\0';
    return;
  }
  if (!r->cons) {
    /* Never a silent fallback on one rank: every collective of this
     * communicator fails loudly instead (see getCollInfo). */
    acl_error("comm %016llx: cannot join rank consensus: %s; collectives will fail",
              (unsigned long long)r->comm_id, r->cons_err);
  }
}

acl_rank_t *acl_plugin_tuner_attach(int abi, uint64_t comm_id, size_t nranks, size_t nnodes,
                                    ncclDebugLogger_t log)
{
  pthread_mutex_lock(&acl_proc.lock);
  proc_start_locked(log);
  acl_rank_t *r = NULL;
  if (tls_pending && (abi < 5 || tls_pending->comm_id == comm_id) && !tls_pending->has_tuner)
    r = tls_pending;
  tls_pending = NULL;
  if (!r && !(r = rank_create_locked(comm_id)))
    goto out;
  if (abi < 5 && r->comm_id)
    comm_id = r->comm_id; /* learned from the profiler init just before */
  r->has_tuner = true;
  r->abi = abi;
  r->comm_id = comm_id;
  r->nranks = (int)nranks;
  r->nnodes = (int)nnodes;
  if (!r->prof_rank && acl_proc.prof)
    r->prof_rank = acl_prof_rank_attach(acl_proc.prof, r, comm_id, r->rank, r->nranks);
  if (comm_id == 0) {
    /* Tuner v2-v4 carry no communicator id, so ranks in different processes
     * cannot find each other's decisions: tuning online could diverge. */
    if (acl_proc.cfg.mode == ACL_MODE_ONLINE) {
      r->online_unsafe = true;
      acl_warn("tuner ABI v%d has no communicator id; online tuning needs NCCL >= 2.27 "
               "(tuner v5) or the autoccl profiler; leaving NCCL's choices",
               abi);
    }
    goto out;
  }
  /* Every mode joins the segment: it records the mode, so a rank whose mode
   * differs from the others' is caught instead of silently diverging. */
  join_consensus_locked(r);
out:
  if (r)
    acl_info("comm %016llx rank %d/%zu nodes %zu: tuner v%d attached (%s)",
             (unsigned long long)comm_id, r->rank, nranks, nnodes, abi,
             acl_mode_name(acl_proc.cfg.mode));
  pthread_mutex_unlock(&acl_proc.lock);
  return r;
}

void acl_plugin_profiler_detach(acl_rank_t *r)
{
  if (!r)
    return;
  pthread_mutex_lock(&acl_proc.lock);
  r->has_profiler = false;
  acl_prof_mask_release(acl_proc.prof, r->nccl_mask);
  r->nccl_mask = NULL;
  rank_unref_locked(r);
  pthread_mutex_unlock(&acl_proc.lock);
}

void acl_plugin_tuner_detach(acl_rank_t *r)
{
  if (!r)
    return;
  pthread_mutex_lock(&acl_proc.lock);
  r->has_tuner = false;
  rank_unref_locked(r);
  pthread_mutex_unlock(&acl_proc.lock);
}

/* Makes NCCL's strict-minimum scan pick (a, p): zero its cost and keep every
 * other valid entry strictly positive. -1 entries stay untouched. */
static void apply_choice(float (*t)[NCCL_NUM_PROTOCOLS], int a, int p)
{
  for (int i = 0; i < NCCL_NUM_ALGORITHMS; i++)
    for (int j = 0; j < NCCL_NUM_PROTOCOLS; j++)
      if (t[i][j] == 0.0f && !(i == a && j == p))
        t[i][j] = 1.0f;
  t[a][p] = 0.0f;
}

_Static_assert(ACL_SEARCH_SAMPLE_NEVER == ACL_GATE_SAMPLE_NEVER,
               "the profiler reads the search's sampling shifts");

static void log_once(acl_rank_t *r, unsigned bit, const char *what, const char *detail)
{
  if (atomic_fetch_or(&r->logged, bit) & bit)
    return;
  acl_error("comm %016llx rank %d: %s: %s", (unsigned long long)r->comm_id, r->rank, what, detail);
}

/* Static mode. Every rank of the communicator computes the same decision
 * from the same table (agreed by hash) and the same call, so leaving NCCL's
 * choice where a rule cannot run keeps ranks together: NCCL sees the same
 * availability on every rank of a communicator (its cost table is built
 * from the communicator's shared topology). */
static ncclResult_t decide_static(acl_rank_t *r, int coll, size_t nbytes, int pipe_ops,
                                  float (*t)[NCCL_NUM_PROTOCOLS], int *nch, acl_chunk_pending_t *pe)
{
  if (r->cons && !acl_cons_table_agreed(r->cons)) {
    if (!(atomic_fetch_or(&r->logged, ACL_LOGGED_TABLE_HASH) & ACL_LOGGED_TABLE_HASH))
      acl_warn("comm %016llx rank %d: the ranks' AUTOCCL_TABLE files differ; every rank "
               "leaves NCCL's own choices",
               (unsigned long long)r->comm_id, r->rank);
    return ncclSuccess;
  }
  acl_table_query_t q = {.coll = coll,
                         .nbytes = nbytes,
                         .nnodes = r->nnodes,
                         .nranks = r->nranks,
                         .pipe_ops = pipe_ops};
  const acl_table_rule_t *rule = acl_table_find(acl_proc.table, &q);
  if (!rule || rule->cand.algo == ACL_ALGO_NCCL)
    return ncclSuccess;
  const acl_candidate_t *c = &rule->cand;
  if (t[c->algo][c->proto] < 0.0f) {
    unsigned bit = ACL_AP_BIT(c->algo, c->proto);
    if (!(atomic_fetch_or(&acl_proc.table_warned, bit) & bit))
      acl_warn("AUTOCCL_TABLE %s line %d: %s/%s is not available on comm %016llx (%s %zu "
               "bytes); NCCL's own choice runs for such calls (warned once)",
               acl_proc.cfg.table_path, rule->line, acl_algo_name(c->algo),
               acl_proto_name(c->proto), (unsigned long long)r->comm_id, acl_coll_name(coll),
               nbytes);
    return ncclSuccess;
  }
  apply_choice(t, c->algo, c->proto);
  if (c->nchannels > 0)
    *nch = c->nchannels;
  if (acl_proc.cfg.chunk_axis)
    acl_chunk_choose(pe, c);
  return ncclSuccess;
}

ncclResult_t acl_plugin_get_coll_info(acl_rank_t *r, int coll, size_t nbytes, int pipe_ops,
                                      float (*t)[NCCL_NUM_PROTOCOLS], int *nch)
{
  if (!r || !t || coll < 0 || coll >= ACL_NUM_COLL)
    return ncclSuccess;
  acl_mode_t mode = acl_proc.cfg.mode;
  if (!r->cons && r->cons_err[0]) {
    log_once(r, ACL_LOGGED_JOIN, "rank consensus unavailable", r->cons_err);
    return ncclSystemError;
  }
  /* Tuner v6: this call's chunk choice, NCCL's own until a candidate runs. */
  acl_chunk_pending_t *pe = acl_chunk_note(r, coll, nbytes);
  if (mode == ACL_MODE_OFF || r->online_unsafe)
    return ncclSuccess;
  if (mode == ACL_MODE_STATIC)
    return acl_proc.table ? decide_static(r, coll, nbytes, pipe_ops, t, nch, pe) : ncclSuccess;
  acl_wkey_t key = {
      .comm_id = r->comm_id, .nbytes = nbytes, .num_pipe_ops = pipe_ops, .coll = (uint8_t)coll};
  acl_decision_t d;
  char err[256];
  if (acl_cons_decide(r->cons, &key, (const float(*)[ACL_NUM_PROTO])t, &d, err, sizeof(err)) != 0) {
    log_once(r, ACL_LOGGED_DECIDE, "no consistent decision, failing this collective", err);
    return ncclInternalError;
  }
  /* A call captured into a CUDA graph runs what it gets at every replay:
   * the block's safe candidate (the proven decision or NCCL's choice),
   * the same on every rank for this call index. Its replays never come
   * back, so it is neither measured nor tagged. */
  bool captured = acl_prof_captured(r->prof_rank);
  if (captured) {
    d.cand = d.safe;
    d.cand_id = d.safe_id;
  }
  if (d.cand.algo != ACL_ALGO_NCCL) {
    if (t[d.cand.algo][d.cand.proto] < 0.0f) {
      log_once(r, ACL_LOGGED_DECIDE, "decided candidate is unavailable on this rank",
               "failing this collective rather than diverging");
      return ncclInternalError;
    }
    apply_choice(t, d.cand.algo, d.cand.proto);
    acl_chunk_choose(pe, &d.cand);
  }
  if (d.cand.nchannels > 0) /* also NCCL's pair capped at the stock count (ceiling mode) */
    *nch = d.cand.nchannels;
  acl_stall_note(r, coll, nbytes, &d);
  if (acl_trace_on())
    acl_trace_decision(&(acl_trace_dec_t){r->comm_id, nbytes, d.call_idx, r->rank, r->nranks,
                                          pipe_ops, d.widx, d.cand_id, (uint8_t)coll, d.phase,
                                          d.cand});
  if (d.widx < (uint32_t)r->nstats) {
    acl_rank_stats_t *st = &r->stats[d.widx];
    atomic_fetch_add_explicit(&st->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->bytes, nbytes, memory_order_relaxed);
    atomic_store_explicit(&st->last_captured, captured, memory_order_relaxed);
    if (captured) {
      uint64_t packed;
      memcpy(&packed, &d.cand, sizeof packed);
      atomic_fetch_add_explicit(&st->captured_calls, 1, memory_order_relaxed);
      atomic_store_explicit(&st->captured_cand, packed, memory_order_relaxed);
    }
    acl_nv_class_t nc = acl_nv_class((acl_phase_t)d.phase, d.cand.algo == ACL_ALGO_NCCL);
    if (captured && nc == ACL_NV_EXPLORE)
      nc = ACL_NV_DECIDED; /* the safe candidate is never an exploratory one */
    if (nc != ACL_NV_FREE)
      atomic_fetch_add_explicit(nc == ACL_NV_EXPLORE ? &st->explore_calls : &st->decided_calls, 1,
                                memory_order_relaxed);
  }
  if (r->prof_rank) {
    acl_call_tag_t tag = {.rank_ctx = r,
                          .call_idx = d.call_idx,
                          .widx = d.widx,
                          .cand_id = d.cand_id,
                          .coll = (uint8_t)coll,
                          .phase = (uint8_t)d.phase,
                          .nbytes = nbytes,
                          .cand = d.cand,
                          .pipe_ops = (uint8_t)(pipe_ops > 255 ? 255 : pipe_ops)};
    acl_prof_on_call(acl_proc.prof, r->prof_rank, &tag, d.sample_shift, captured);
  }
  return ncclSuccess;
}

ncclResult_t acl_plugin_get_coll_info_v2(acl_rank_t *r, int coll, size_t nbytes, int *algo,
                                         int *proto, int *nch)
{
  /* No cost table: validity is unknown, so only the static table can speak,
   * and NCCL checks its own constraints on what we set. */
  if (!r || acl_proc.cfg.mode != ACL_MODE_STATIC || !acl_proc.table)
    return ncclSuccess;
  const acl_table_rule_t *rule = acl_table_lookup(acl_proc.table, coll, nbytes);
  if (rule && rule->cand.algo != ACL_ALGO_NCCL) {
    *algo = rule->cand.algo;
    *proto = rule->cand.proto;
    if (rule->cand.nchannels > 0)
      *nch = rule->cand.nchannels;
  }
  return ncclSuccess;
}

_Static_assert(sizeof(acl_candidate_t) == sizeof(uint64_t), "a candidate packs into 64 bits");

acl_candidate_t acl_captured_cand(const acl_rank_stats_t *st)
{
  uint64_t packed = atomic_load_explicit(&st->captured_cand, memory_order_relaxed);
  acl_candidate_t c;
  memcpy(&c, &packed, sizeof c);
  return c;
}

/* The profiler's sample: to consensus as it came (the search's one way
 * in), then into this rank's view of the workload. */
static void sample_sink(void *user, const acl_prof_sample_t *s)
{
  (void)user;
  acl_rank_t *r = s->tag.rank_ctx;
  if (!r)
    return;
  /* a fact without a time (what NCCL's own choice runs) goes to consensus
   * only, which keeps the first */
  if (s->seconds >= 0.0)
    acl_trace_sample(r->comm_id, r->rank, r->nranks, s, s->seconds);
  acl_cons_observe(
      r->cons,
      &(acl_cons_obs_t){.widx = s->tag.widx,
                        .call_idx = s->tag.call_idx,
                        .cand_id = s->tag.cand_id,
                        .want_nch = s->tag.cand.algo == ACL_ALGO_NCCL ? 0 : s->tag.cand.nchannels,
                        .seconds = s->seconds,
                        .overlap = s->overlap,
                        .ran_algo = s->ran_algo,
                        .ran_proto = s->ran_proto,
                        .ran_nch = s->ran_nch,
                        .cupti = s->source == ACL_PROF_SOURCE_CUPTI});
  if (s->tag.widx < (uint32_t)r->nstats && s->seconds >= 0.0) {
    acl_rank_stats_t *st = &r->stats[s->tag.widx];
    int b = acl_hist_bucket(s->seconds);
    if (b < ACL_HIST_N)
      atomic_fetch_add_explicit(&st->hist[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->dur_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->dur_ns, (uint64_t)(s->seconds * 1e9), memory_order_relaxed);
    acl_nv_class_t nc =
        acl_nv_class((acl_phase_t)s->tag.phase, s->tag.cand.algo == ACL_ALGO_NCCL);
    bool tried = nc == ACL_NV_EXPLORE;
    if (s->overlap >= 0.0f && s->overlap <= 1.0f) { /* CUPTI window or simulator */
      int k = tried ? ACL_OV_TRIED : nc == ACL_NV_DECIDED ? ACL_OV_DECIDED : ACL_OV_NCCL;
      atomic_fetch_add_explicit(&st->ov_exposed_ns[k],
                                (uint64_t)(s->seconds * (1.0 - s->overlap) * 1e9),
                                memory_order_relaxed);
      atomic_fetch_add_explicit(&st->ov_coll_ns[k], (uint64_t)(s->seconds * 1e9),
                                memory_order_relaxed);
    }
    if (tried) {
      /* ns first: a fold that sees the count also sees its time. */
      atomic_fetch_add_explicit(&st->explore_ns, (uint64_t)(s->seconds * 1e9),
                                memory_order_relaxed);
      atomic_fetch_add_explicit(&st->explore_sampled, 1, memory_order_release);
    }
  }
}

ncclResult_t acl_plugin_event_start(acl_rank_t *r, void **eHandle, ncclProfilerEventDescr_v5_t *d)
{
  *eHandle = NULL;
  if (!r || !r->prof_rank || !acl_proc.prof)
    return ncclSuccess;
  return acl_prof_nccl_start(acl_proc.prof, r->prof_rank, eHandle, d);
}

ncclResult_t acl_plugin_event_stop(void *eHandle)
{
  return eHandle && acl_proc.prof ? acl_prof_nccl_stop(acl_proc.prof, eHandle) : ncclSuccess;
}

ncclResult_t acl_plugin_event_state(void *eHandle, ncclProfilerEventState_v5_t st,
                                    ncclProfilerEventStateArgs_v5_t *args)
{
  return eHandle && acl_proc.prof ? acl_prof_nccl_state(acl_proc.prof, eHandle, st, args)
                                  : ncclSuccess;
}

/* Library unload / process exit: stop the threads we own. Ranks that NCCL
 * never finalized keep their segments; the next job detects them as stale. */
__attribute__((destructor)) static void acl_plugin_unload(void)
{
  pthread_mutex_lock(&acl_proc.lock);
  if (acl_proc.nranks_live > 0)
    proc_stop_locked(true);
  pthread_mutex_unlock(&acl_proc.lock);
}
