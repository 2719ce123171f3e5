/* Text that reaches a terminal or a log line from outside (environment
 * values, a server's JSON): unsafe characters neutralised, truncation that
 * never cuts a UTF-8 character in two. */
#ifndef ACL_CORE_TEXT_H
#define ACL_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Code points a terminal would act on: C0 controls, DEL, C1 controls
 * (U+0080..U+009F, U+009B is a CSI) and the bidirectional formatting
 * characters (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069). */
bool acl_cp_unsafe(uint32_t cp);
/* Decodes the valid UTF-8 sequence at p (n bytes left): its length, 0 if
 * invalid (then *cp is the byte). */
size_t acl_utf8_decode(const char *p, size_t n, uint32_t *cp);
/* Copies in into out (len bytes, NUL included): valid safe UTF-8 as is,
 * every unsafe character and invalid byte as '?', cut before a character
 * that does not fit. */
void acl_text_clean(char *out, size_t len, const char *in);
/* Copies in into out with escapes a log line can carry: \n \r \t \\,
 * other control bytes and invalid UTF-8 as \xNN, unsafe code points as
 * \u{XXXX}; cut before an escape or character that does not fit. Returns
 * the length written. */
size_t acl_text_escape(char *out, size_t len, const char *in);

/* "host:port", IPv6 addresses in brackets ("[::1]:9464"); returns buf. */
const char *acl_fmt_hostport(char *buf, size_t len, const char *host, int port);

#endif
