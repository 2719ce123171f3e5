/* Internals of observe/, shared by render.c, render_metrics.c and report.c:
 * escaping for JSON and Prometheus label values (UTF-8 sanitised, since
 * names come from NCCL and hostnames), number formatting, comm labels. */
#ifndef ACL_OBSERVE_INT_H
#define ACL_OBSERVE_INT_H

#include <stddef.h>

#include "core/strbuf.h"
#include "observe/observe.h"

/* sep, then "key": of field f (its one spelling, observe/fields.def). */
void acl_render_key(acl_strbuf_t *sb, const char *sep, acl_field_t f);

/* JSON string literal of the first strnlen(s, maxlen) bytes; invalid UTF-8
 * becomes U+FFFD. NULL renders as "". */
void acl_render_json_str(acl_strbuf_t *sb, const char *s, size_t maxlen);
/* acl_retune_cause_name's name as a JSON string, null for none. */
void acl_render_retune_cause(acl_strbuf_t *sb, int cause);
/* A JSON number, or null when not finite (JSON has no NaN/Inf). */
void acl_render_json_num(acl_strbuf_t *sb, double v);
/* A float (trajectory values) with the digits a float has: %.7g, or null. */
void acl_render_json_float(acl_strbuf_t *sb, float v);
/* Prometheus label value (without quotes): \\ \" \n escaped, other control
 * characters, C1 controls and bidi formatting characters as '?', invalid
 * UTF-8 as U+FFFD. */
void acl_render_prom_label(acl_strbuf_t *sb, const char *s, size_t maxlen);
/* Prometheus sample value: NaN, +Inf, -Inf or a decimal. */
void acl_render_prom_float(acl_strbuf_t *sb, double v);

/* Decimal integer, without printf. */
void acl_render_u64(acl_strbuf_t *sb, uint64_t v);

/* , "budget_wait_calls": .., "clock_offset_us": .. of a workload (null where
 * it is not waiting, or has no offset): the same in the state and the job
 * report. */
void acl_render_wait_and_clock(acl_strbuf_t *sb, const acl_snap_workload_t *w);

/* "algo": .., "proto": .., "channels": .. of a candidate (no braces): the one
 * spelling of a candidate in every JSON document. */
void acl_render_cand_fields(acl_strbuf_t *sb, const acl_candidate_t *c);

/* {"comm": .., "rank": .., "collective": .., "bytes": .. (open: the caller
 * adds fields and the closing brace); the head of every workload object. */
void acl_render_workload_head(acl_strbuf_t *sb, const acl_snapshot_t *s,
                              const acl_snap_workload_t *w);

/* "0x%016llx" of a communicator id into buf (>= 19 bytes). */
char *acl_render_comm_hex(uint64_t id, char *buf, size_t len);

#endif
