/* Tuning tables for AUTOCCL_MODE=static: fixed decisions by collective and
 * message size. Text, one rule per line, first match wins:
 *
 *   # collective    min_bytes  max_bytes  algo  proto   channels
 *   all_reduce      0          1M         RING  LL      0
 *   all_gather      4M         64M        RING  LL128   16
 *   *               1G         max        RING  SIMPLE  32
 *
 * collective: all_reduce | all_gather | reduce_scatter | broadcast | reduce
 * (or NCCL's spelling) | *; sizes are bytes with optional K/M/G/T (powers of
 * 1024) or `max`; the range is inclusive; channels 0 = NCCL decides. Any
 * error rejects the whole table (line number and reason in err). */
#ifndef ACL_CORE_TABLE_H
#define ACL_CORE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

#define ACL_TABLE_MAX_RULES 256

typedef struct acl_table_rule {
  int coll; /* -1 = any */
  uint64_t min_bytes, max_bytes;
  acl_candidate_t cand;
} acl_table_rule_t;

typedef struct acl_table {
  int nrules;
  acl_table_rule_t rules[ACL_TABLE_MAX_RULES];
} acl_table_t;

int acl_table_parse(const char *text, size_t len, acl_table_t *out, char *err, size_t errlen);
int acl_table_load(const char *path, acl_table_t *out, char *err, size_t errlen);
const acl_table_rule_t *acl_table_lookup(const acl_table_t *t, int coll, uint64_t nbytes);
/* Parses "64K", "1M", "4096", "max"; false on anything else. */
bool acl_parse_size(const char *s, uint64_t *out);

#endif
