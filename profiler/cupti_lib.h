/* The CUPTI entry points autoccl uses, from a dlopen'ed libcupti (never
 * linked, so the plugin loads where CUPTI is missing). Only with
 * ACL_HAVE_CUPTI (cupti.h at build time). */
#ifndef ACL_PROFILER_CUPTI_LIB_H
#define ACL_PROFILER_CUPTI_LIB_H

#ifdef ACL_HAVE_CUPTI
#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

/* X(function, required): an optional one may be NULL after loading. */
#define CUPTI_FNS(X)                                                                               \
  X(cuptiGetVersion, 1)                                                                            \
  X(cuptiGetResultString, 0)                                                                       \
  X(cuptiSubscribe, 1)                                                                             \
  X(cuptiUnsubscribe, 1)                                                                           \
  X(cuptiActivityEnable, 1)                                                                        \
  X(cuptiActivityDisable, 1)                                                                       \
  X(cuptiActivityRegisterCallbacks, 1)                                                             \
  X(cuptiActivityFlushAll, 1)                                                                      \
  X(cuptiActivityGetNextRecord, 1)                                                                 \
  X(cuptiActivityGetNumDroppedRecords, 1)                                                          \
  X(cuptiActivityPushExternalCorrelationId, 1)                                                     \
  X(cuptiActivityPopExternalCorrelationId, 1)                                                      \
  X(cuptiEnableDomain, 0)                                                                          \
  X(cuptiFinalize, 0)

typedef struct acl_cupti_lib {
  void *lib;
  char path[512];
#define X(f, req) __typeof__(&f) f; /* NOLINT(bugprone-macro-parentheses): declarator */
  CUPTI_FNS(X)
#undef X
} acl_cupti_lib_t;

/* Loaded once and kept for the process's life (CUPTI keeps per-thread
 * state and our callbacks; unloading it under a live CUDA is not safe). */
extern acl_cupti_lib_t acl_cu;

/* only: exactly this library; NULL: the search in docs/profiler.md. */
bool acl_cupti_load(const char *only, char *why, size_t whylen);
const char *acl_cupti_res_str(CUptiResult r);
#endif

#endif
