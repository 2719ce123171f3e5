/* Logging through the logger NCCL hands the plugin (subsystem TUNING, so
 * NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING shows it); stderr for tools. */
#ifndef ACL_CORE_LOG_H
#define ACL_CORE_LOG_H

#include "core/abi.h"

typedef enum acl_log_level {
  ACL_LOG_ERROR = 0,
  ACL_LOG_WARN = 1,
  ACL_LOG_INFO = 2,
  ACL_LOG_DEBUG = 3,
} acl_log_level_t;

/* First non-NULL logger wins; NULL keeps stderr. Thread-safe. */
void acl_log_set_nccl(ncclDebugLogger_t fn);
void acl_log_set_level(acl_log_level_t lvl);
/* Tools (sim, top) print to stderr with this prefix instead of NCCL's logger. */
void acl_log_set_prefix(const char *prefix);

void acl_log_at(acl_log_level_t lvl, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define acl_error(...) acl_log_at(ACL_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define acl_warn(...) acl_log_at(ACL_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define acl_info(...) acl_log_at(ACL_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define acl_debug(...) acl_log_at(ACL_LOG_DEBUG, __FILE__, __LINE__, __VA_ARGS__)

#endif
