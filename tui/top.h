/* autoccl-top's pure side: the /api/v1/state model and its parser, the
 * incremental SSE parser, merging several sources by communicator, sorting,
 * the weighted speedup, human formatting, the trajectory plot grid and flag
 * parsing. No curses, no network: the tests and fuzzers link this alone
 * (libacl_top.a). Unknown values stay unknown: NaN for doubles, -1 for
 * counters, known=false for candidates; they render as "-". */
#ifndef ACL_TUI_TOP_H
#define ACL_TUI_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/strbuf.h"
#include "core/types.h"

#define ACL_TOP_SCHEMA_VERSION 1
#define ACL_TOP_MAX_TRAJ 64        /* server ring size; older points dropped */
#define ACL_TOP_MAX_WORKLOADS 4096 /* per source; more is a parse error */
#define ACL_TOP_MAX_COMMS 1024
#define ACL_TOP_MAX_URLS 64
#define ACL_TOP_URL_MAX 512
#define ACL_TOP_DEFAULT_URL "http://127.0.0.1:9464"
#define ACL_TOP_DEFAULT_PORT 9464

/* ---- model of one /api/v1/state document ---- */
typedef struct acl_top_cand {
  bool known;     /* false: null or absent */
  char algo[24];  /* "" when null */
  char proto[16]; /* "" when null */
  int channels;   /* -1 when null; 0 = NCCL decides */
  int chunk_log2; /* chunk = NCCL's own x 2^chunk_log2; 0 (or absent) = NCCL's */
} acl_top_cand_t;

typedef struct acl_top_traj {
  int64_t step; /* -1 unknown */
  acl_top_cand_t cand;
  double busbw;   /* bytes/s, NaN unknown */
  double overlap; /* 0..1, NaN unknown */
} acl_top_traj_t;

typedef struct acl_top_workload {
  char comm[24]; /* communicator id as sent ("0x…") */
  int rank;      /* -1 unknown */
  char collective[24];
  int64_t bytes;     /* -1 unknown */
  int pipe_ops;      /* -1 unknown */
  char state[16];    /* "" unknown */
  char subspace[40]; /* "" unknown */
  char source[12];   /* decision from "nccl" | "explored" | "table"; "" unknown */
  acl_top_cand_t candidate, best, baseline;
  double baseline_seconds, best_seconds, speedup, busbw, overlap; /* NaN unknown */
  double time_saved_seconds, exploration_cost_seconds;            /* NaN unknown */
  double collective_seconds, exposed_seconds; /* not overlapped by compute; NaN unknown */
  int64_t candidates_evaluated, calls_to_converge, retunes, calls, bytes_total; /* -1 */
  int64_t budget_wait_calls; /* waiting for the budget: about how many more calls; -1 none */
  char budget_wait_for[16];  /* what those pay for ("first-events", ...); "" unknown */
  int traj_len; /* newest ACL_TOP_MAX_TRAJ kept, oldest first */
  acl_top_traj_t traj[ACL_TOP_MAX_TRAJ];
} acl_top_workload_t;

typedef struct acl_top_comm {
  char id[24];
  char name[64];
  int rank, nranks, nnodes; /* -1 unknown */
  char role[16];
  double consensus_wait_seconds; /* NaN unknown */
  int64_t blocks_published, lock_acquisitions;
} acl_top_comm_t;

typedef struct acl_top_profiler {
  char source[16];     /* "" unknown */
  int cupti_available; /* 1, 0, -1 unknown */
  int cupti_backed_off;
  int64_t records, records_dropped, samples, ambiguous, mismatches;
  double sample_latency_seconds;
} acl_top_profiler_t;

typedef struct acl_top_model {
  int version;
  char host[64];
  int64_t pid;
  int local_rank;
  char mode[16];
  double uptime_seconds;
  acl_top_profiler_t profiler;
  int ncomms;
  acl_top_comm_t *comms;
  int nworkloads;
  acl_top_workload_t *workloads;
  bool truncated;
  void *json; /* the parsed document (json_t *), kept for --json output */
} acl_top_model_t;

void acl_top_model_init(acl_top_model_t *m);
/* Frees what the model holds and re-initialises it; NULL is fine. */
void acl_top_model_clear(acl_top_model_t *m);
/* Parses a state document into *out (cleared first). Returns 0, or -1 with a
 * one-line reason in err ("workloads[2].speedup: expected a number or null")
 * and *out left empty. Never reads beyond len; json need not be terminated. */
int acl_top_parse_state(const char *json, size_t len, acl_top_model_t *out, char *err,
                        size_t errlen);

/* ---- incremental Server-Sent Events parser (WHATWG rules) ---- */
typedef struct acl_top_sse_event {
  const char *type; /* "message" unless an event: field said otherwise */
  const char *data; /* data: lines joined by '\n', NUL-terminated */
  size_t data_len;
  const char *id; /* last event id seen, "" if none */
} acl_top_sse_event_t;
typedef void (*acl_top_sse_cb)(void *ud, const acl_top_sse_event_t *ev);

#define ACL_TOP_SSE_MAX_LINE (1u << 20) /* longer lines are dropped, counted */
typedef struct acl_top_sse {
  acl_top_sse_cb cb;
  void *ud;
  acl_strbuf_t line, data;
  char type[64];
  char id[128];
  bool have_data;    /* a data: field was seen since the last dispatch */
  bool last_cr;      /* previous chunk ended in CR: a leading LF is its pair */
  bool started;      /* BOM check done */
  unsigned char bom; /* bytes of a UTF-8 BOM matched so far (it may arrive split) */
  bool overflow;     /* current line exceeded the cap: skip to its end */
  uint64_t events, comments, dropped_lines;
  long retry_ms; /* last retry: field, -1 none */
} acl_top_sse_t;

void acl_top_sse_init(acl_top_sse_t *p, acl_top_sse_cb cb, void *ud);
/* Forget any partial line or event (new connection); counters kept. */
void acl_top_sse_reset(acl_top_sse_t *p);
void acl_top_sse_free(acl_top_sse_t *p);
/* Feeds len bytes (any split); calls cb once per complete event. Returns 0,
 * or -1 on allocation failure (the parser is then reset). */
int acl_top_sse_feed(acl_top_sse_t *p, const char *data, size_t len);

/* ---- merged view over several sources ---- */
typedef enum acl_top_col {
  ACL_TOP_COL_COMM = 0,
  ACL_TOP_COL_RANK,
  ACL_TOP_COL_COLL,
  ACL_TOP_COL_SIZE,
  ACL_TOP_COL_STATE,
  ACL_TOP_COL_SUBSPACE,
  ACL_TOP_COL_CAND,
  ACL_TOP_COL_BEST,
  ACL_TOP_COL_SPEEDUP,
  ACL_TOP_COL_SAVED, /* net time saved (time_saved_seconds) */
  ACL_TOP_COL_OVERLAP,
  ACL_TOP_COL_BUSBW,
  ACL_TOP_COL_CALLS,
  ACL_TOP_COL_SOURCE, /* where the decision comes from: nccl | explored | table */
  ACL_TOP_COL_COUNT
} acl_top_col_t;

const char *acl_top_col_name(acl_top_col_t c); /* "COMM", "SPEEDUP", ... */
/* Metrics sort high-first, text low-first; reverse flips. Unknowns last. */
bool acl_top_col_desc_default(acl_top_col_t c);

typedef struct acl_top_row {
  int source;                  /* index into the models given to build */
  const acl_top_workload_t *w; /* points into that model */
  char comm_label[64];         /* communicator name, else short id */
} acl_top_row_t;

typedef struct acl_top_mcomm { /* one communicator over all sources */
  char id[24];
  char label[64];
  int nranks;                    /* -1 unknown */
  int sources;                   /* how many sources report it */
  double consensus_wait_seconds; /* sum over sources; NaN if none known */
} acl_top_mcomm_t;

typedef struct acl_top_view {
  int nrows;
  acl_top_row_t *rows;
  int ncomms;
  acl_top_mcomm_t *comms;
  int converged, total; /* converged: state "converged" only */
  int ranks;            /* distinct ranks per source, summed: what "per rank" divides by */
  double weighted_speedup;                    /* NaN when no workload has the inputs */
  double time_saved_seconds; /* net, summed over rows (the host's total); NaN when none known */
  double collective_seconds, exposed_seconds; /* summed over rows; NaN when none known */
  double consensus_wait_seconds;              /* NaN when no communicator reports it */
  char profiler[64];                          /* distinct sources joined by '+', "-" */
} acl_top_view_t;

/* models[i] may be NULL (source without data yet). Rows start in merged
 * order: communicator, collective, size, rank, source. 0 or -1 (ENOMEM). */
int acl_top_view_build(acl_top_view_t *v, const acl_top_model_t *const *models, int n);
void acl_top_view_free(acl_top_view_t *v);
void acl_top_view_sort(acl_top_view_t *v, acl_top_col_t col, bool reverse);
/* Mean speedup weighted by time spent: weight = calls x baseline_seconds (the
 * time those calls take with NCCL's default). Rows missing any of speedup,
 * calls, baseline_seconds are left out; NaN when nothing is left. */
double acl_top_weighted_speedup(const acl_top_row_t *rows, int n);
/* Label for a communicator id: name when known and not just the id, else a
 * short id ("0x1a2b3c4d"). */
void acl_top_comm_label(const char *id, const char *name, char *out, size_t len);

/* ---- formatting (always NUL-terminates; "-" for unknown) ---- */
const char *acl_top_fmt_bytes(int64_t bytes, char *buf, size_t len); /* "32 MiB" */
const char *acl_top_fmt_bw(double bps, char *buf, size_t len);       /* "160.0 GB/s" */
const char *acl_top_fmt_cand(const acl_top_cand_t *c, char *buf, size_t len);
const char *acl_top_fmt_ratio(double x, char *buf, size_t len);          /* "1.11x" */
const char *acl_top_fmt_pct(double x, char *buf, size_t len);            /* "12%" */
const char *acl_top_fmt_seconds(double s, char *buf, size_t len);        /* "1.2 ms" */
const char *acl_top_fmt_signed_seconds(double s, char *buf, size_t len); /* "+1.2 ms", "-3.0 us" */
const char *acl_top_fmt_int(int64_t v, char *buf, size_t len);
/* A budget wait: "waits ~975 calls for first-events"; "" when not waiting. */
const char *acl_top_fmt_wait(const acl_top_workload_t *w, char *buf, size_t len);
const char *acl_top_state_label(const char *state); /* as sent, "-" if none */
/* A state name whose workload has a decision applied (core/types.h). */
bool acl_top_state_decided(const char *state);
/* One cell of the table for row r and column c. */
const char *acl_top_cell(const acl_top_row_t *r, acl_top_col_t c, char *buf, size_t len);

/* ---- trajectory plot: busbw against step, one glyph/colour per subspace ---- */
#define ACL_TOP_PLOT_MAX_SUBS 8
typedef struct acl_top_plot {
  int w, h;
  char *glyph;          /* w*h, row 0 at the top; ' ' empty */
  unsigned char *color; /* w*h, 0 none, 1..ACL_TOP_PLOT_MAX_SUBS subspace */
  double ymin, ymax;    /* busbw range shown */
  int64_t xmin, xmax;   /* steps shown */
  int npoints;          /* points with a known busbw */
  int nsubs;
  char subs[ACL_TOP_PLOT_MAX_SUBS][40];
} acl_top_plot_t;
extern const char acl_top_plot_glyphs[ACL_TOP_PLOT_MAX_SUBS + 1];
/* Plots w's trajectory into a w x h grid (both >= 2). 0 or -1 (ENOMEM/size). */
int acl_top_plot_build(acl_top_plot_t *p, const acl_top_workload_t *wl, int w, int h);
void acl_top_plot_free(acl_top_plot_t *p);

/* ---- flags ---- */
typedef struct acl_top_opts {
  int nurls;
  char urls[ACL_TOP_MAX_URLS][ACL_TOP_URL_MAX];
  double delay; /* seconds between refreshes */
  bool batch;
  long iterations; /* -n; -1 = until quit */
  bool once, json, no_color, help, version;
  int local_ranks; /* --local-ranks N: each URL stands for ports port..port+N-1 */
  int nuser;       /* urls[0..nuser) came from the flags; the rest from /api/v1/host */
} acl_top_opts_t;

/* Normalises "host:port", "http://host[:port][/prefix]" into a base URL
 * without trailing slash. No scheme: http:// and port 9464 are assumed;
 * http:// without port keeps 80. 0 or -1 with err. */
int acl_top_normalize_url(const char *in, char *out, size_t outlen, char *err, size_t errlen);
/* The port of a normalised URL. 0, or -1 with err. */
int acl_top_url_port(const char *u, long *port, char *err, size_t errlen);
/* The normalised URL u with another port. 0, or -1 (too long, bad port). */
int acl_top_url_with_port(const char *u, long port, char *out, size_t outlen);
/* The siblings of URL o->urls[k] that its /api/v1/host document (body)
 * lists, appended to o->urls (same host name, their ports; URLs already
 * watched are skipped). Returns how many were added, or -1 with err when
 * the document is not a host list (nothing is added then). */
int acl_top_add_siblings(acl_top_opts_t *o, int k, const char *body, char *err, size_t errlen);
/* Joins fields with two spaces into out, at most width columns: the
 * fields that fit whole; the first that does not is cut at a word, and
 * "..." (or the ellipsis character when utf8) ends the line. */
void acl_top_fit_fields(char *out, size_t outlen, const char *const *fields, int nf, int width,
                        bool utf8);
/* 0 ok, -1 bad usage (err says why). Does not print or exit. */
int acl_top_parse_args(int argc, char *const *argv, acl_top_opts_t *o, char *err, size_t errlen);
extern const char acl_top_usage[];

/* ---- output without curses ---- */
typedef struct acl_top_source_status {
  const char *url;
  const char *status; /* "connected (stream)", "disconnected — retrying", ... */
  const char *error;  /* last error or NULL */
} acl_top_source_status_t;
/* Header lines + table, plain text, for -b. */
void acl_top_print_batch(FILE *f, const acl_top_view_t *v, const acl_top_source_status_t *st,
                         int nsrc, int iteration);
/* {"version":1,"sources":[…],"communicators":[…],"summary":{…},"workloads":[…]}
 * with every workload carrying "source" (its URL) and "comm_name". malloc'd,
 * NULL on ENOMEM. */
char *acl_top_json_merged(const acl_top_view_t *v, const acl_top_model_t *const *models,
                          const acl_top_source_status_t *st, int nsrc);

#endif
