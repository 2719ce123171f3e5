/* A growable string buffer for rendering JSON and metrics text. Allocation
 * failure is sticky: the buffer reports it once at the end (acl_sb_ok). */
#ifndef ACL_CORE_STRBUF_H
#define ACL_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct acl_strbuf {
  char *data;
  size_t len;
  size_t cap;
  bool failed;
} acl_strbuf_t;

void acl_sb_init(acl_strbuf_t *sb);
void acl_sb_free(acl_strbuf_t *sb);
void acl_sb_reset(acl_strbuf_t *sb);
bool acl_sb_ok(const acl_strbuf_t *sb);
void acl_sb_append(acl_strbuf_t *sb, const char *s, size_t n);
void acl_sb_puts(acl_strbuf_t *sb, const char *s);
void acl_sb_printf(acl_strbuf_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included; invalid UTF-8
 * becomes U+FFFD, control characters are escaped. NULL renders as "". */
void acl_sb_json_str(acl_strbuf_t *sb, const char *s);
void acl_sb_json_strn(acl_strbuf_t *sb, const char *s, size_t n);
/* Appends n bytes of s: printable ASCII and valid UTF-8 as they are,
 * invalid UTF-8 as U+FFFD, and every other byte (controls, DEL, '"', '\\')
 * through esc. The one walker behind the JSON and Prometheus escapers. */
typedef void (*acl_sb_escape_fn)(acl_strbuf_t *sb, unsigned c);
void acl_sb_escape(acl_strbuf_t *sb, const char *s, size_t n, acl_sb_escape_fn esc);
/* Length (1..4) of the valid UTF-8 sequence at p (n bytes left), 0 if the
 * bytes there are not valid UTF-8 (overlong, surrogate, truncated...). */
size_t acl_utf8_seq(const unsigned char *p, size_t n);
/* Takes ownership of the data (NUL-terminated); the buffer is left empty. */
char *acl_sb_steal(acl_strbuf_t *sb, size_t *len);

#endif
