/* The plugin's log, captured as NCCL's logger would receive it, for the
 * profiler tests that check what it says (logbuf; each test empties it). */
#ifndef ACL_TEST_LOGCAP_H
#define ACL_TEST_LOGCAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"

static char logbuf[8192];

static void logger(ncclDebugLogLevel l, unsigned long f, const char *file, int line,
                   const char *fmt, ...)
{
  (void)l, (void)f, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  size_t n = strlen(logbuf);
  vsnprintf(logbuf + n, sizeof(logbuf) - n, fmt, ap);
  va_end(ap);
  strncat(logbuf, "\n", sizeof(logbuf) - strlen(logbuf) - 1);
}

#endif
