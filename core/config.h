/* Every AUTOCCL_* environment variable, parsed in one place from one table
 * (core/settings.def). An invalid value is reported once (naming the
 * variable and what it accepts) and the default is used instead; nothing
 * else changes. README.md's table is generated from the same rows. */
#ifndef ACL_CORE_CONFIG_H
#define ACL_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum acl_mode {
  ACL_MODE_ONLINE = 0, /* tune during the job (default) */
  ACL_MODE_STATIC = 1, /* apply decisions from AUTOCCL_TABLE, never explore */
  ACL_MODE_OFF = 2,    /* leave NCCL's choice untouched */
} acl_mode_t;

typedef enum acl_prof_src {
  ACL_PROF_AUTO = 0, /* CUPTI in windows (AUTOCCL_CUPTI_WINDOW), NCCL events between */
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
#define ACL_CONFIG_SAMPLES_MAX 16       /* the samples a candidate keeps (ACL_SEARCH_MAX_SAMPLES) */
#define ACL_CONFIG_BUDGET_PCT_DEFAULT 3 /* docs/tuner.md: exploration pays for itself */
#define ACL_CONFIG_BUDGET_PCT_MAX                                                                  \
  100000 /* > 100: tests and short experiments that must
                                          * explore at once, whatever it costs */
#define ACL_CONFIG_MAX_WORKLOADS_DEFAULT 256
#define ACL_CONFIG_MAX_WORKLOADS_MAX 1024
#define ACL_CONFIG_TIMEOUT_MS_DEFAULT 30000
#define ACL_CONFIG_TIMEOUT_MS_MIN 100
#define ACL_CONFIG_TIMEOUT_MS_MAX 3600000
#define ACL_CONFIG_STOCK_CH_MAX 64 /* NCCL 2.28's MAXCHANNELS */
#define ACL_CONFIG_TRACE_MAX_DEFAULT                                                               \
  (256ull << 20)                              /* bytes of text per trace file: hours
                                                     * of a busy job (docs/trace.md) */
#define ACL_CONFIG_TRACE_MAX_MAX (1ull << 50) /* 1 PiB: a bound, not a limit */
#define ACL_CONFIG_LOCAL_RANK_MAX 4095        /* far above any host's GPU count */
/* AUTOCCL_CUPTI_WINDOW=ON/PERIOD (ms): default "100/5000", CUPTI attached
 * 100 ms every 5 s (2 %). On one H200 attached CUPTI cost 33 % of a loop of
 * 3 us kernels; this rule measured +1.6 % there and +0.12 % on a loop of
 * 1 ms kernels (docs/benchmarks-profiler.md), within the 2 % / 0.5 %
 * targets; 100 ms holds a few steps' collectives. */
#define ACL_CONFIG_CUPTI_MS_MAX 3600000 /* an hour: a bound, not a limit */

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
  int stock_channels;      /* AUTOCCL_STOCK_CHANNELS: channels NCCL builds as it ships, when
                              NCCL_MIN_NCHANNELS raised the ceiling; 0 = no ceiling mode
                              (docs/channels.md) */
  acl_prof_src_t profiler; /* AUTOCCL_PROFILER: auto | cupti | nccl | off */
  char cupti_window[24];   /* AUTOCCL_CUPTI_WINDOW: "ON/PERIOD" in ms (acl_config_window_ms) */
  int chunk_axis;          /* AUTOCCL_CHUNK: on (1, default) | off (0): chunk size is a
                              search axis where the tuner ABI can set it (v6, NCCL 2.30) */
  int local_rank;          /* AUTOCCL_LOCAL_RANK, else LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
                              SLURM_LOCALID, MPI_LOCALRANKID; else 0 */
  char sim_feed[128];      /* AUTOCCL_SIM_FEED: internal, set by autoccl-sim */
  char shm_salt[32];       /* AUTOCCL_SHM_SALT: internal, gives simulated hosts on one
                              machine their own consensus segments */
  char trace_path[512];    /* AUTOCCL_TRACE: trace file template; "" = not recorded */
  uint64_t trace_max;      /* AUTOCCL_TRACE_MAX: bytes per trace file */
  char sim_traces[512];    /* AUTOCCL_SIM_TRACES: autoccl-sim's trace folder */
} acl_config_t;

/* One row of core/settings.def, for tools that list or check the settings. */
typedef enum acl_setting_type {
  ACL_SETTING_ENUM,  /* a name from a list, stored as its index (int) */
  ACL_SETTING_INT,   /* a decimal integer in [lo, hi] (int) */
  ACL_SETTING_STR,   /* a string shorter than the field, optionally checked */
  ACL_SETTING_BYTES, /* a byte count with an optional K/M/G/T suffix (uint64_t) */
  ACL_SETTING_FLAG,  /* set (any non-empty value) or not */
} acl_setting_type_t;

typedef struct acl_setting {
  const char *name;
  acl_setting_type_t type;
  long offset;                /* into acl_config_t; -1: not parsed by core (documented only) */
  size_t size;                /* of the field */
  long long dnum;             /* default of ENUM/INT/BYTES/FLAG */
  const char *dstr;           /* default of STR */
  long long lo, hi;           /* INT/BYTES range */
  const char *const *choices; /* ENUM, NULL-terminated */
  bool (*check)(char *value, size_t len);
  const char *accepted; /* NULL: generated from the type */
  const char *unset;    /* what unset means, when the default is no value */
  const char *unit, *reader, *doc;
} acl_setting_t;

extern const acl_setting_t acl_settings[];
extern const size_t acl_nsettings;

/* The row of a variable, or NULL. */
const acl_setting_t *acl_setting_find(const char *name);
/* What the row accepts, in words ("integers from 2 to 16", "online, static, off"). */
void acl_setting_accepted(const acl_setting_t *s, char *out, size_t len);
/* Its default, in words ("5", "online", "256M", or the UNSET text). */
void acl_setting_default(const acl_setting_t *s, char *out, size_t len);

typedef const char *(*acl_getenv_fn)(void *user, const char *name);
/* Called once per problem with a complete human-readable message. */
typedef void (*acl_config_report_fn)(void *user, const char *msg);

void acl_config_defaults(acl_config_t *cfg);
/* Parse from an environment lookup; returns the number of invalid values. */
int acl_config_parse(acl_config_t *cfg, acl_getenv_fn get, void *get_user,
                     acl_config_report_fn report, void *report_user);
/* Process environment; problems go to acl_warn(). */
int acl_config_from_env(acl_config_t *cfg);
/* "ON/PERIOD" (AUTOCCL_CUPTI_WINDOW) in ms, 1 <= ON < PERIOD <= an hour. */
bool acl_config_window_ms(const char *s, unsigned *on_ms, unsigned *period_ms);
/* One variable from the process environment into cfg (tools that read only
 * their own, e.g. AUTOCCL_SIM_TRACES); problems go to acl_warn(). Returns
 * the number of invalid values (0 or 1); -1 for a name not in the table. */
int acl_config_env_one(acl_config_t *cfg, const char *name);

const char *acl_mode_name(acl_mode_t m);
const char *acl_prof_src_name(acl_prof_src_t s);

/* Strict integer parse of the whole string in [lo, hi]; false otherwise. */
bool acl_parse_int(const char *s, long lo, long hi, long *out);

#endif
