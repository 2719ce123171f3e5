/* NCCL's host time per call, by workload, for the trace.
 *
 * A small collective is bound by its host time: on one H100 a 64 KiB
 * AllReduce's kernel took 2-3 us on the rank that arrives last while a call
 * took ~14 us of host time. The host time is NCCL's GroupApi event
 * (collTaskAppend to the group's end, after the kernel launch), which NCCL
 * starts on every call once CollApi is in the mask; it is split over the
 * calls decided inside it on the same thread. Calls decided on another
 * thread (non-blocking communicators) and captured calls get none.
 *
 * A host ahead of its GPU blocks in the launch (CUDA's queue, NCCL's work
 * FIFO) for as long as the GPU takes to free a slot: its groups then last
 * a call of whatever the GPU is draining. Blocking only lengthens a group,
 * so the estimate is the workload's shortest call. The search does not use
 * it (docs/profiler.md, "Host time per call"). */
#ifndef ACL_PROFILER_HOSTCOST_H
#define ACL_PROFILER_HOSTCOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Per rank: one estimate per workload, by hash; a collision replaces the
 * older workload. */
#define ACL_HOSTCOST_N 128
typedef struct acl_hostcost {
  _Atomic uint64_t e[ACL_HOSTCOST_N];
} acl_hostcost_t;

/* One call's host time. The estimate is the shortest of the workload's
 * calls (a config's set-up call or a preempted thread is long, never
 * short). */
void acl_hostcost_note(acl_hostcost_t *h, uint32_t widx, uint64_t ns);
/* The estimate in ns, 0 while unknown (fewer than two calls). */
uint64_t acl_hostcost_ns(const acl_hostcost_t *h, uint32_t widx);

/* This thread's open group (GroupApi started here): its handle for NCCL. A
 * group left open (no stop came) is dropped by the next start. */
void *acl_hostcost_group_start(uint64_t now_ns);
/* A group's handle, this thread's or another's (never an event of the other
 * sources; handle must point at 8 readable bytes or be NULL). */
bool acl_hostcost_is_group(const void *handle);
/* A call decided on this thread while its group is open. */
void acl_hostcost_group_call(acl_hostcost_t *h, uint32_t widx);
/* GroupApi stopped: the time since its start, split over its calls. */
void acl_hostcost_group_stop(void *handle, uint64_t now_ns);

#endif
