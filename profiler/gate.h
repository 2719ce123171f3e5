/* Event gating: which collectives carry NCCL's profiler events (profiler.h,
 * acl_prof_on_call). Internal to profiler/.
 *
 * NCCL 2.28-2.30 (src/plugin/profiler.cc, enqueue.cc): the event mask is one
 * int for the process, whose address every communicator's profiler init
 * gets. NCCL reads it once per collective, when the collective is enqueued
 * (ncclProfilerStartGroupApiEvent from collTaskAppend, inside or outside a
 * group), and stamps it on the task; the Coll, KernelCh and proxy events of
 * that collective follow the stamp. The tuner is asked at ncclGroupEnd,
 * after every collective of the group was enqueued, in NCCL's own order
 * (by size and function), so a decision can never change its own call's
 * events, nor those of calls enqueued with it.
 *
 * So the gate works at the enqueue, which NCCL reports by the CollApi
 * event (always on, profiler.h): it remembers whether the collective just
 * enqueued carries events (the mask it stamped is the one the gate left),
 * and sets the mask for the next enqueue of the process, predicted to be
 * the collective that followed this one last time, on whichever
 * communicator (a training step repeats its sequence); each decision sets
 * it again with the newest rule. The tuner's decision then learns from the
 * enqueue record whether its call carries events, exactly, groups and
 * several communicators included. */
#ifndef ACL_PROFILER_GATE_H
#define ACL_PROFILER_GATE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct acl_gate acl_gate_t;

/* rule(shift, call): whether call `call` of a workload whose block samples
 * 1 call in 2^shift carries events (the search's rule, written once, in
 * tuner/search/search.h acl_search_sampled). NULL: events stay off. */
typedef bool (*acl_gate_rule_fn)(uint8_t shift, uint64_t call);
acl_gate_t *acl_gate_create(acl_gate_rule_fn rule);
void acl_gate_destroy(acl_gate_t *g); /* accepts NULL */

/* NCCL's mask (profiler init) and the bits always kept there. Returns the
 * value written. */
int acl_gate_set_mask(acl_gate_t *g, int *mask, int keep);
/* The communicator that gave `mask` is gone: the gate writes there no more
 * once every communicator that gave that address is. */
void acl_gate_release_mask(acl_gate_t *g, int *mask);
/* Forgets every record of rank `who` (its communicator is gone). */
void acl_gate_forget(acl_gate_t *g, const void *who);

/* A collective enqueued by rank `who` (the CollApi event): `bytes` as the
 * tuner will see them. `full` is the mask a sampled call needs now.
 * Returns whether it carries events. */
bool acl_gate_enqueued(acl_gate_t *g, const void *who, int coll, uint64_t bytes, int full);
/* The tuner decided call `call_idx` of that collective's workload, whose
 * block samples 1 call in 2^shift (>= ACL_GATE_NEVER: none). Returns
 * whether the call carries events (false when its enqueue was not seen,
 * e.g. a group NCCL aggregated into one call of another size). */
#define ACL_GATE_NEVER 15 /* profiler.h ACL_GATE_SAMPLE_NEVER */
bool acl_gate_decided(acl_gate_t *g, const void *who, int coll, uint64_t bytes, uint64_t call_idx,
                      uint8_t shift);

typedef struct acl_gate_stats {
  uint64_t enqueued, carried, decided, unseen; /* unseen: decisions with no enqueue record */
} acl_gate_stats_t;
void acl_gate_stats(acl_gate_t *g, acl_gate_stats_t *out);

#endif
