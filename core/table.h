/* Tuning tables: fixed decisions by collective, message size and
 * communicator shape. AUTOCCL_MODE=static applies them; online mode starts
 * every covered workload on them (warm start). Two text formats are read,
 * detected per file (docs/tables.md):
 *
 * autoccl's, one rule per line, whitespace or commas between fields:
 *
 *   # collective    min_bytes  max_bytes  algo  proto   channels [nnodes nranks pipe_ops]
 *   all_reduce      0          1M         RING  LL      0
 *   all_gather      4M         64M        RING  LL128   16       1 8 1
 *   *               1G         max        NCCL  -       0
 *
 * collective: all_reduce | all_gather | reduce_scatter | broadcast | reduce
 * (or NCCL's spelling) | *; sizes are bytes with optional K/M/G/T (powers of
 * 1024) or `max`; the range is inclusive; channels 0 = NCCL decides; algo
 * NCCL (proto -) = NCCL's own choice; nnodes, nranks, pipe_ops * or -1 =
 * any (absent: any).
 *
 * NCCL's example tuner CSV (plugins/tuner/example), 10 comma-separated
 * fields: coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks,
 * numPipeOps,regBuff with -1 = any (channels -1 = NCCL decides); regBuff
 * must be -1 (decisions never depend on it: it can differ between ranks).
 *
 * First match wins. Any error rejects the whole table; err names the line
 * and the field. */
#ifndef ACL_CORE_TABLE_H
#define ACL_CORE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "core/types.h"

#define ACL_TABLE_MAX_RULES 1024
#define ACL_TABLE_MAX_BYTES (1u << 20) /* files larger than this are refused */
#define ACL_TABLE_ANY (-1)
#define ACL_TABLE_VERSION 1 /* of the JSON document */
/* A text table's comment "# autoccl-meta: nccl_version=2.28.3; gpu=NVIDIA H200"
 * ("-" unknown) records where it was measured. */
#define ACL_TABLE_META_TAG "autoccl-meta:"
/* Why NCCL-CSV rules whose regBuff is 0 or 1 are skipped (the rest of the
 * table still applies): whether a buffer is registered can differ between
 * the ranks of one collective, and a decision must be the same on all. */
#define ACL_TABLE_SKIP_WHY                                                                         \
  "they depend on buffer registration (regBuff 0 or 1), which can differ between the "             \
  "ranks of one collective, and every rank must run the same decision"

typedef enum acl_table_format {
  ACL_TABLE_FMT_AUTOCCL = 0,
  ACL_TABLE_FMT_NCCL_CSV = 1,
  ACL_TABLE_FMT_JSON = 2, /* the export's JSON document (core/table_json.c) */
} acl_table_format_t;

typedef struct acl_table_rule {
  int coll; /* -1 = any */
  uint64_t min_bytes, max_bytes;
  int32_t nnodes, nranks, pipe_ops; /* ACL_TABLE_ANY = any */
  acl_candidate_t cand;             /* algo ACL_ALGO_NCCL: NCCL's own choice */
  int line;                         /* where it was read, 0 when built in memory */
} acl_table_rule_t;

typedef struct acl_table {
  int nrules;
  acl_table_format_t format;
  uint64_t hash; /* of the rules (acl_table_hash), what ranks agree on */
  /* Where the rules were measured (JSON document, or a text table's
   * "# autoccl-meta" comment); "" unknown. */
  char nccl_version[32];
  char gpu[128];
  /* Valid rules that are not honoured (ACL_TABLE_SKIP_WHY): how many, and
   * their line numbers ("19, 27, 33"); the loader warns once. */
  int nskipped;
  char skipped[160];
  acl_table_rule_t rules[ACL_TABLE_MAX_RULES];
} acl_table_t;

/* What a lookup is about: one call of one communicator. */
typedef struct acl_table_query {
  int coll;
  uint64_t nbytes;
  int32_t nnodes, nranks, pipe_ops;
} acl_table_query_t;

/* A text table, or the JSON document of the export when the first
 * non-blank character is '{' (acl_table_parse_json). */
int acl_table_parse(const char *text, size_t len, acl_table_t *out, char *err, size_t errlen);
/* The JSON document (core/table_json.c): its "rules" and its metadata;
 * refused (err) when autoccl was built without jansson. */
int acl_table_parse_json(const char *text, size_t len, acl_table_t *t, char *err, size_t errlen);
/* A table is for the NCCL version and GPU model it was measured on: -1 with
 * err saying what differs when both sides know a value and they differ;
 * 0 otherwise (unknown on either side: no evidence against it). */
int acl_table_meta_check(const acl_table_t *t, const char *nccl_version, const char *gpu, char *err,
                         size_t errlen);
/* Reads a regular file only: a FIFO or a device is refused without blocking
 * (opened O_NONBLOCK, checked with fstat). */
int acl_table_load(const char *path, acl_table_t *out, char *err, size_t errlen);
const acl_table_rule_t *acl_table_find(const acl_table_t *t, const acl_table_query_t *q);
/* Any shape (the tuner v2 path, which knows no communicator shape). */
const acl_table_rule_t *acl_table_lookup(const acl_table_t *t, int coll, uint64_t nbytes);
/* FNV-1a over the rules' decision fields: equal tables, equal hashes,
 * whatever the format, comments or spacing. */
uint64_t acl_table_hash(const acl_table_t *t);
/* Parses "64K", "1M", "4096", "max"; false on anything else. */
bool acl_parse_size(const char *s, uint64_t *out);

/* ---- export (core/table_export.c) --------------------------------------- */

/* One workload's decision, as the tuner knows it. */
typedef struct acl_table_entry {
  int coll;
  uint64_t nbytes;
  int32_t nnodes, nranks, pipe_ops;
  acl_candidate_t cand; /* the decision (ACL_ALGO_NCCL: NCCL's own) */
  bool converged;       /* false: still in progress (JSON only) */
  const char *source;   /* "table", "explored", "nccl" */
  double speedup;       /* over NCCL's own choice, 0 unknown */
  uint64_t samples;     /* measured calls behind it */
  double measured_unix; /* when, seconds since the epoch, 0 unknown */
} acl_table_entry_t;

typedef struct acl_table_meta {
  const char *nccl_version; /* "2.28.3", NULL unknown */
  const char *gpu;          /* "NVIDIA H200", NULL unknown */
  const char *host;
  double generated_unix;
} acl_table_meta_t;

/* Size rule (docs/tables.md): the converged entries of one (collective,
 * nnodes, nranks, pipe_ops) sorted by size; the border between two
 * neighbouring sizes a < b is their geometric mean g = floor(sqrt(a*b)):
 * a covers up to g, b from g+1. The smallest covers down to half its size,
 * the largest up to twice its size. Entries not converged are left out.
 * Returns the number of rules (capped at ACL_TABLE_MAX_RULES). */
int acl_table_from_entries(const acl_table_entry_t *e, int n, acl_table_t *out);
/* The versioned JSON document: meta, the entries (converged and in
 * progress) and the rules they give. */
void acl_table_render_json(acl_strbuf_t *sb, const acl_table_meta_t *m, const acl_table_entry_t *e,
                           int n);
/* The table as text acl_table_parse reads back to the same decisions.
 * NCCL's CSV cannot say "NCCL's own choice": such rules are left out. */
void acl_table_render(acl_strbuf_t *sb, const acl_table_t *t, acl_table_format_t fmt);
/* Writes text to path atomically, 0644 less the umask (core/safefile.h). */
int acl_table_write_atomic(const char *path, const char *text, size_t len, char *err,
                           size_t errlen);
/* Format for an output path: .csv -> NCCL's CSV, .json -> the JSON document
 * (returned as -1), anything else autoccl's. */
int acl_table_format_for_path(const char *path);

#endif
