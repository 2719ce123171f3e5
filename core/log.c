#include "core/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"

static _Atomic(ncclDebugLogger_t) nccl_logger;
static atomic_int log_level = ACL_LOG_WARN;
static char log_prefix[32] = "autoccl";

void acl_log_set_nccl(ncclDebugLogger_t fn)
{
  ncclDebugLogger_t expected = NULL;
  if (fn)
    atomic_compare_exchange_strong(&nccl_logger, &expected, fn);
}

void acl_log_set_level(acl_log_level_t lvl) { atomic_store(&log_level, (int)lvl); }

void acl_log_set_prefix(const char *prefix)
{
  snprintf(log_prefix, sizeof(log_prefix), "%s", prefix ? prefix : "autoccl");
}

void acl_log_at(acl_log_level_t lvl, const char *file, int line, const char *fmt, ...)
{
  if ((int)lvl > atomic_load(&log_level))
    return;
  char raw[1024], msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof(raw), fmt, ap);
  va_end(ap);
  /* Messages quote environment values, paths and peers' words: a newline
   * there must not forge a line of its own, nor raw bytes reach a terminal. */
  acl_text_escape(msg, sizeof(msg), raw);
  ncclDebugLogger_t fn = atomic_load(&nccl_logger);
  if (fn) {
    /* NCCL prints WARN unconditionally and INFO only with NCCL_DEBUG=INFO. */
    ncclDebugLogLevel nl = lvl <= ACL_LOG_WARN   ? NCCL_LOG_WARN
                           : lvl == ACL_LOG_INFO ? NCCL_LOG_INFO
                                                 : NCCL_LOG_TRACE;
    fn(nl, NCCL_TUNING, file, line, "autoccl: %s", msg);
    return;
  }
  static const char *const names[] = {"error", "warn", "info", "debug"};
  fprintf(stderr, "%s %s: %s\n", log_prefix, names[lvl & 3], msg);
}
