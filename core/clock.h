/* The one monotonic clock (CLOCK_MONOTONIC: never jumps with the wall
 * clock) for every module. Inline because the decision path and the
 * profiler's event handlers read it per call; header-only, so the programs
 * built outside meson (profiler/gpucheck) need no extra object. */
#ifndef ACL_CORE_CLOCK_H
#define ACL_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t acl_mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double acl_mono_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
