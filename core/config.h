/* Every AUTOCCL_* environment variable, parsed in one place. An invalid value
 * is reported once (naming the variable and what it accepts) and the default
 * is used instead; nothing else changes. Documented in README.md. */
#ifndef ACL_CORE_CONFIG_H
#define ACL_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum acl_mode {
  ACL_MODE_ONLINE = 0, /* tune during the job (default) */
  ACL_MODE_STATIC = 1, /* apply decisions from AUTOCCL_TABLE, never explore */
  ACL_MODE_OFF = 2,    /* leave NCCL's choice untouched */
} acl_mode_t;

typedef enum acl_prof_src {
  ACL_PROF_AUTO = 0, /* NCCL profiler events (CUPTI costs too much to be a default) */
  ACL_PROF_CUPTI = 1,
  ACL_PROF_NCCL = 2,
  ACL_PROF_OFF = 3,
} acl_prof_src_t;

/* Defaults and limits of the variables that change decisions, here once:
 * config.c accepts exactly these ranges, the search starts from the same
 * defaults (acl_search_params_default) and checks the same limits
 * (acl_search_params_fix). */
#define ACL_CONFIG_WARMUP_DEFAULT 5
#define ACL_CONFIG_WARMUP_MAX 1000
#define ACL_CONFIG_SAMPLES_DEFAULT 5
#define ACL_CONFIG_SAMPLES_MIN 2
#define ACL_CONFIG_SAMPLES_MAX 16 /* the samples a candidate keeps (ACL_SEARCH_MAX_SAMPLES) */
#define ACL_CONFIG_BUDGET_PCT_DEFAULT 3 /* docs/tuner.md: exploration pays for itself */
#define ACL_CONFIG_BUDGET_PCT_MAX 100000 /* > 100: tests and short experiments that must
                                          * explore at once, whatever it costs */
#define ACL_CONFIG_MAX_WORKLOADS_DEFAULT 256
#define ACL_CONFIG_MAX_WORKLOADS_MAX 1024
#define ACL_CONFIG_TIMEOUT_MS_DEFAULT 30000
#define ACL_CONFIG_TIMEOUT_MS_MIN 100
#define ACL_CONFIG_TIMEOUT_MS_MAX 3600000

typedef struct acl_config {
  acl_mode_t mode;         /* AUTOCCL_MODE: online | static | off */
  int http_port;           /* AUTOCCL_HTTP_PORT: base port, -1 = off; 0 = any free port */
  char http_bind[64];      /* AUTOCCL_HTTP_BIND: default 127.0.0.1 */
  int log_level;           /* AUTOCCL_LOG: error | warn | info (default) | debug */
  char table_path[512];    /* AUTOCCL_TABLE: tuning table (static mode; online: warm start) */
  char table_out[512];     /* AUTOCCL_TABLE_OUT: where the decisions are written at finalize */
  char report_path[512];   /* AUTOCCL_REPORT: the job report at exit (JSON; text in .txt) */
  char coordinator[256];   /* AUTOCCL_COORDINATOR: host:port for multi-host relay */
  int warmup_calls;        /* AUTOCCL_WARMUP: 0..1000, default 5 */
  int samples_per_cand;    /* AUTOCCL_SAMPLES: 2..16, default 5 */
  int explore_budget_pct;  /* AUTOCCL_EXPLORE_BUDGET: % of a workload's time so far that
                              exploring may cost, 0..100000, default 3; 0 = never explore */
  int max_workloads;       /* AUTOCCL_MAX_WORKLOADS: per communicator, 1..1024, default 256 */
  int timeout_ms;          /* AUTOCCL_TIMEOUT_MS: consensus wait bound, 100..3600000,
                              default 30000 */
  acl_prof_src_t profiler; /* AUTOCCL_PROFILER: auto | cupti | nccl | off */
  int local_rank;          /* AUTOCCL_LOCAL_RANK, else LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
                              SLURM_LOCALID, MPI_LOCALRANKID; else 0 */
  char sim_feed[128];      /* AUTOCCL_SIM_FEED: internal, set by autoccl-sim */
  char shm_salt[32];       /* AUTOCCL_SHM_SALT: internal, gives simulated hosts on one
                              machine their own consensus segments */
} acl_config_t;

typedef const char *(*acl_getenv_fn)(void *user, const char *name);
/* Called once per problem with a complete human-readable message. */
typedef void (*acl_config_report_fn)(void *user, const char *msg);

void acl_config_defaults(acl_config_t *cfg);
/* Parse from an environment lookup; returns the number of invalid values. */
int acl_config_parse(acl_config_t *cfg, acl_getenv_fn get, void *get_user,
                     acl_config_report_fn report, void *report_user);
/* Process environment; problems go to acl_warn(). */
int acl_config_from_env(acl_config_t *cfg);

const char *acl_mode_name(acl_mode_t m);
const char *acl_prof_src_name(acl_prof_src_t s);

/* Strict integer parse of the whole string in [lo, hi]; false otherwise. */
bool acl_parse_int(const char *s, long lo, long hi, long *out);

#endif
