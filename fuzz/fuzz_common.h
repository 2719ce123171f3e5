/* Shared by the fuzz targets: a check that aborts with a message, so a
 * broken invariant is a libFuzzer crash with a reproducer, not a silent pass. */
#ifndef ACL_FUZZ_COMMON_H
#define ACL_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#define FZ_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "fuzz invariant failed: %s (%s:%d): ", #cond, __FILE__, __LINE__);           \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#endif
