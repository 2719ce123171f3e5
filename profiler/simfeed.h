/* The simulator's side channel: autoccl-sim publishes, per rank, how much
 * compute currently overlaps the collectives (what CUPTI would measure on a
 * GPU). A POSIX shared-memory object named by AUTOCCL_SIM_FEED; the plugin's
 * simulated source reads it. Durations still come from NCCL profiler events. */
#ifndef ACL_PROFILER_SIMFEED_H
#define ACL_PROFILER_SIMFEED_H

#include <stdatomic.h>
#include <stdint.h>

#define ACL_SIMFEED_MAGIC 0x41434c46u /* "ACLF" */
#define ACL_SIMFEED_MAX_RANKS 256

typedef struct acl_simfeed {
  uint32_t magic;
  uint32_t nranks;
  /* Overlap per rank in thousandths (0..1000); rank = the rank's index in the
   * world communicator as reported by the profiler init. */
  _Atomic uint32_t overlap_milli[ACL_SIMFEED_MAX_RANKS];
  /* Compute kernels concurrently running per rank (for the endpoint). */
  _Atomic uint32_t compute_kernels[ACL_SIMFEED_MAX_RANKS];
} acl_simfeed_t;

#endif
