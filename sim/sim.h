/* autoccl-sim internals shared by its files (not a public interface). */
#ifndef ACL_SIM_SIM_H
#define ACL_SIM_SIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/abi.h"
#include "core/strbuf.h"
#include "core/types.h"
#include "sim/landscape.h"
#include "sim/workload.h"

#define ACL_SIM_MAX_RANKS 256
#define ACL_SIM_MAX_COMMS 256

/* Exit statuses (documented in --help). */
enum {
  ACL_SIM_EXIT_OK = 0,
  ACL_SIM_EXIT_INCONSISTENT = 1, /* divergent decisions or plugin errors */
  ACL_SIM_EXIT_USAGE = 2,        /* bad flags or files: nothing was run */
  ACL_SIM_EXIT_FAILED = 3,       /* a rank crashed, hung or could not load the plugin */
};

typedef struct acl_sim_opts {
  int nranks;
  int ncomms;
  int ranks_per_proc; /* ranks one process drives (--threads-per-proc) */
  bool group_mode;    /* one thread drives them all, NCCL group style */
  int nhosts;
  acl_sim_mix_t mix;
  char landscape[64]; /* "h200" | "synthetic[:seed]" */
  double noise;
  acl_sim_interf_t interf;
  char interf_spec[128];
  bool demo;         /* --demo: README demo defaults, watch hints */
  double duration_s; /* wall clock; <= 0 when --steps is used */
  uint64_t steps;    /* 0 when --duration is used */
  int port;          /* -1: no endpoint */
  int coord_port;    /* 0: pick a free one */
  double host_jitter_us;
  double overlap_spread; /* rank r's overlap x (1 - spread r/(ranks-1)) */
  double stale_stamps;   /* share of calls whose KernelCh stamps are stale */
  bool realtime;
  double slowdown;       /* --realtime: wall seconds per simulated second */
  double step_compute_s; /* simulated compute per training step */
  double hang_timeout_s; /* no progress for this long = hang */
  uint64_t max_lag;      /* calls a rank may run ahead of the slowest */
  uint64_t seed;
  bool verbose, quiet, json;
  /* --nccl 2.30: tuner v6 (getChunkSize after getCollInfo) and profiler v6
   * are looked up first, and synthetic landscapes have a chunk-size model */
  bool nccl230;
  /* --capture-every N: call k of a communicator is captured into a CUDA
   * graph when k % N == N - 1 (0: none); NCCL's profiler API events say so
   * before getCollInfo (docs/consensus.md, CUDA graphs) */
  uint32_t capture_every;
  /* --churn-every N: every N steps each rank destroys its communicators and
   * creates them again under new ids (torch new_group, ncclCommSplit), all
   * but communicator 0 when there are several (the world communicator);
   * 0: they live for the whole run */
  uint32_t churn_every;
  char plugin[1024];
} acl_sim_opts_t;

/* Parses argv. Returns -1 on error (message printed), 1 when --help/--bench
 * handled the run (*exit_code set), 0 to run. */
int acl_sim_parse_args(int argc, char **argv, acl_sim_opts_t *o, int *exit_code);
void acl_sim_usage(FILE *f);

#define ACL_SIM_CHURN_MARKS 5u

/* Per rank, in memory shared between the parent and the rank processes. */
typedef struct acl_sim_rank_slot {
  _Atomic uint64_t progress; /* step this rank has committed to */
  _Atomic uint32_t state;    /* 0 init, 1 running, 2 finished steps, 3 done, 4 failed */
  uint32_t pad;
  _Atomic uint64_t calls; /* calls completed (the lag window reads it) */
  uint64_t plugin_errors;
  uint64_t steps_done;
  double gci_seconds; /* wall time inside getCollInfo */
  /* What this rank's calls took (simulated, set-up and events included),
   * and what the same draws of NCCL's own choice take without the plugin:
   * the job's real saving, against which the plugin's account is read. */
  double ran_seconds, nccl_alone_seconds;
  char error[256];    /* first error, for the report */
  /* --churn-every: communicator generations this rank went through, and
   * its process's resources (ACL_SIM_RES_*) after the warm-up churns and
   * after the last one; measured only where one thread drives the
   * process's ranks (whole-process counts would race with other threads).
   * RSS is also taken at ACL_SIM_CHURN_MARKS evenly spaced generations
   * from the warm-up on: a leak grows in every stretch between them, while
   * a one-off step (malloc growing its heap once) shows in one stretch only. */
  uint32_t churns;
  bool churn_measured;
  uint32_t churn_nmarks;
  uint64_t churn_first[4], churn_last[4];
  uint32_t churn_mark_at[ACL_SIM_CHURN_MARKS];
  uint64_t churn_mark_rss_kb[ACL_SIM_CHURN_MARKS];
} acl_sim_rank_slot_t;
enum { ACL_SIM_RES_SHM_MAPS, ACL_SIM_RES_FDS, ACL_SIM_RES_THREADS, ACL_SIM_RES_RSS_KB };
/* The first churns load what the plugin makes lazily (its endpoint, the
 * first communicator's buffers): the comparison starts after them. */
#define ACL_SIM_CHURN_WARM 20u

typedef struct acl_sim_ctl {
  _Atomic uint32_t stopping;  /* parent wants to stop: wait for stop_step */
  _Atomic uint64_t stop_step; /* ranks run steps < stop_step */
  _Atomic uint32_t release;   /* parent read the endpoints: finalize now */
  uint32_t pad;
  uint64_t comm_ids[ACL_SIM_MAX_COMMS];
  uint64_t start_clock_ns; /* simulated GPU globaltimer at step 0 */
  acl_sim_rank_slot_t rank[ACL_SIM_MAX_RANKS];
} acl_sim_ctl_t;

/* One decision-log entry per call per rank: what NCCL ran. */
typedef struct acl_sim_logent {
  int8_t algo, proto; /* -1/-1 when the call failed */
  int16_t nchannels;  /* clamped; 0 = NCCL decides */
  uint8_t flags;      /* ACL_SIM_LOG_* */
  int8_t chunk_log2;  /* chunk NCCL ran: its own x 2^chunk_log2 (2.30) */
  uint8_t pad[2];
} acl_sim_logent_t;
#define ACL_SIM_LOG_ERROR 1u
#define ACL_SIM_LOG_CAPTURED 2u /* the call was captured into a CUDA graph */
#define ACL_SIM_LOG_NCCL 4u     /* the plugin left NCCL's own choice (table and channels) */

/* The loaded plugin (one per rank process). */
typedef struct acl_sim_plugin {
  void *dl;
  int tuner_version; /* 6..2, 0 when no tuner symbol */
  const ncclTuner_v6_t *t6;
  const ncclTuner_v5_t *t5;
  const ncclTuner_v4_t *t4;
  const ncclTuner_v3_t *t3;
  const ncclTuner_v2_t *t2;
  const ncclProfiler_v5_t *prof;
  const ncclProfiler_v6_t *prof6; /* NCCL 2.30: v6 first, else prof (v5) */
} acl_sim_plugin_t;

/* NCCL's lookup: the newest tuner and profiler versions it knows first
 * (max_version 5 plays NCCL 2.28, 6 plays 2.30). */
int acl_sim_plugin_load(const char *path, int max_version, acl_sim_plugin_t *p, char *err,
                        size_t errlen);
void acl_sim_plugin_unload(acl_sim_plugin_t *p);
/* NCCL-style logger handed to the plugin (WARN only unless verbose). */
void acl_sim_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void acl_sim_logger_setup(bool verbose, int first_rank);

/* Everything a rank process needs (set up by the parent before fork). */
typedef struct acl_sim_world {
  const acl_sim_opts_t *o;
  acl_landscape_t *land;
  const acl_sim_step_t *step;
  acl_sim_ctl_t *ctl;
  char logdir[256];
  char feed_name[128];
  int parent_pid;
} acl_sim_world_t;

/* cleanup.c: removes the run's feed, logs and consensus segments. */
void acl_sim_cleanup(const acl_sim_world_t *w, int ncomms);
/* Communicator c's id in churn generation gen (gen 0: ctl->comm_ids[c]);
 * the same on every rank. */
uint64_t acl_sim_comm_id(const acl_sim_ctl_t *ctl, int c, uint32_t gen);
/* /dev/shm entries left of this run's consensus segments, over every
 * generation the ranks reached (-1 when /dev/shm cannot be read). */
int acl_sim_run_segments(const acl_sim_world_t *w, int ncomms);
/* Forks the guardian that cleans up once the parent and every rank process
 * are gone; returns the descriptor the parent keeps (and its children
 * inherit), -1 when it could not. */
int acl_sim_guard_start(const acl_sim_world_t *w, int ncomms);
/* Removes feeds and log directories (under tmpdir) of runs whose parent
 * pid is dead. */
void acl_sim_reap_stale(const char *tmpdir);

/* Body of rank process `proc` (drives ranks [proc*rpp, ...)). Returns the
 * process exit status. */
int acl_sim_proc_main(const acl_sim_world_t *w, int proc);

/* Reads the decision logs and prints the report; returns the exit status. */
/* endpoint_off: NULL when endpoint_wait_s came from the ranks' own
 * endpoints, else why not (the report then uses the time in getCollInfo). */
/* states: per rank process, its /api/v1/state body read after the ranks
 * stopped and before they finalized (NULL entries where none was read). */
int acl_sim_report(const acl_sim_world_t *w, double wall_s, double endpoint_wait_s,
                   const char *endpoint_off, char *const *states);

/* report_job.c: the plugin's job report (AUTOCCL_REPORT, which each rank
 * process gets as <logdir>/report-<proc>.%r.json). The path of process
 * proc's: the template (tmpl) or the file. */
void acl_sim_report_path(const acl_sim_world_t *w, int proc, bool tmpl, char *buf, size_t len);
/* Prints rank process 0's report text and the job's totals over every
 * process's report to out; false when no report was written (a plugin
 * without one: the caller prints its own table). */
bool acl_sim_job_text(const acl_sim_world_t *w, FILE *out);
/* Copies every process's report (and its .txt) to the user's AUTOCCL_REPORT
 * template (the simulator gives its ranks their own): %p, %r and %h as the
 * plugin expands them, written as the plugin writes (no planted link, FIFO
 * or device is followed or opened; each refusal is said on stderr). */
void acl_sim_job_copy(const acl_sim_world_t *w, const char *tmpl);
/* ,"job_totals":{..},"job_reports":[..],"final_states":[..] into sb. */
void acl_sim_job_json(const acl_sim_world_t *w, char *const *states, acl_strbuf_t *sb);

/* Sum of consensus_wait_seconds over /api/v1/state of 127.0.0.1:port; -1 on
 * failure. */
/* Sum of consensus_wait_seconds on 127.0.0.1:port, read only when the
 * state there is process pid's: -2 when another process serves the port,
 * -1 when none answers. */
double acl_sim_fetch_wait(int port, double timeout_s, int pid);
/* The same, and the body of that state (malloc'ed, NULL on failure) in
 * *body when body is not NULL. */
double acl_sim_fetch_state(int port, double timeout_s, int pid, char **body);

#endif
