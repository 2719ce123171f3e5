/* The window rule of the default sample source: CUPTI is attached for a
 * window of on_ns every period_ns and detached in between (docs/profiler.md
 * gives the cost model). Pure: time comes in as an argument, so the rule is
 * tested on the CPU. One enum, one transition function. */
#ifndef ACL_PROFILER_DUTY_H
#define ACL_PROFILER_DUTY_H

#include <stdbool.h>
#include <stdint.h>

typedef enum acl_duty_state {
  ACL_DUTY_CLOSED = 0, /* CUPTI detached: no tracing cost */
  ACL_DUTY_LEAD,       /* attached, recording compute kernels, no call tagged yet:
                        * kernels launched before the window are not recorded, so
                        * calls right after the opening would miss their overlap */
  ACL_DUTY_OPEN,       /* calls are tagged and sampled with their overlap */
  ACL_DUTY_ALWAYS,     /* AUTOCCL_PROFILER=cupti: attached and tagging for good */
} acl_duty_state_t;

/* Lead before the first tagged call of a window: a quarter of the window,
 * at most 20 ms (a training step's host runs a few ms ahead of its GPU; the
 * compute kernels a collective overlaps were launched within that). */
#define ACL_DUTY_LEAD_MAX_NS 20000000ull

typedef struct acl_duty {
  uint64_t on_ns, period_ns, lead_ns; /* period_ns 0: always on */
  acl_duty_state_t state;
  uint64_t opened_ns;    /* start of the current or last window */
  uint64_t next_open_ns; /* start of the next window */
  uint64_t windows;      /* windows opened so far */
  uint64_t on_total_ns;  /* time attached in closed windows */
} acl_duty_t;

/* The first window opens at now. period_ms 0 or on_ms >= period_ms: always on. */
void acl_duty_init(acl_duty_t *d, unsigned on_ms, unsigned period_ms, uint64_t now_ns);
/* The first window opens at the next multiple of the period on the wall
 * clock (wall_ns read at now_ns), so that the ranks of a job, whose hosts'
 * clocks agree, open their windows together: a workload called once per
 * step is sampled only where their windows cover the same call. */
void acl_duty_align(acl_duty_t *d, uint64_t now_ns, uint64_t wall_ns);
/* The first window opens at now, the process's first collective, whatever
 * the wall clock: the workloads' first calls get samples at once (NCCL's
 * cost table, 3-5x low at large sizes on one GPU, prices their budgets
 * until samples come; a benchmark process of 2.8 s on one H100 saw no
 * aligned window in two of three runs, and its only workload never paid
 * for a baseline). The aligned windows go on from the first a whole period
 * after it, so the attached share stays on/period. Once, while closed. */
void acl_duty_first_look(acl_duty_t *d, uint64_t now_ns);
/* Advances the rule to now and returns the state. A window missed while no
 * one called (now past its end) is skipped, not caught up: the attached
 * share never exceeds on/period. */
acl_duty_state_t acl_duty_step(acl_duty_t *d, uint64_t now_ns);
/* ns from now to the next transition (for the thread's timed wait);
 * UINT64_MAX when always on. */
uint64_t acl_duty_wait_ns(const acl_duty_t *d, uint64_t now_ns);
const char *acl_duty_state_name(acl_duty_state_t s);

#endif
