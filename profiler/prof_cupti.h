/* CUPTI glue: libcupti is dlopen'ed (never linked) and kept loaded for the
 * process's life; activity records (CONCURRENT_KERNEL, EXTERNAL_CORRELATION
 * and the launch APIs' records that external correlation needs) flow into
 * an attribution engine. Compiled to stubs without ACL_HAVE_CUPTI. */
#ifndef ACL_PROFILER_CUPTI_H
#define ACL_PROFILER_CUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/attrib.h"
#include "profiler/duty.h"

typedef struct acl_cupti acl_cupti_t;
/* Called from the flush thread after each flush (process + deliver). */
typedef void (*acl_cupti_batch_fn)(void *u, bool final);

typedef struct acl_cupti_opts {
  const char *lib;           /* exact library to dlopen; NULL = search (see profiler.md) */
  unsigned flush_us;         /* flush period while calls are pending (default 2000) */
  unsigned on_ms, period_ms; /* window rule (duty.h); period_ms 0: always on */
  bool keep_attached;        /* close a window by disabling our kinds only (no
                       * cuptiFinalize); the GPU check compares both */
} acl_cupti_opts_t;

typedef struct acl_cupti_win {
  acl_duty_state_t state;
  unsigned on_ms, period_ms;
  uint64_t windows, detaches, attach_failures;
  double on_seconds; /* attached, closed windows */
} acl_cupti_win_t;

/* NULL with a reason in why (CUPTI not loadable). CUPTI itself attaches
 * after the first acl_cupti_called; another subscriber found then backs off. */
acl_cupti_t *acl_cupti_start(const acl_cupti_opts_t *o, acl_attr_t *attr, acl_cupti_batch_fn batch,
                             void *u, char *why, size_t whylen);
/* Stops the flush thread, force-flushes, disables our activity kinds.
 * at_exit: CUDA may be torn down: touch CUPTI as little as possible. */
void acl_cupti_stop(acl_cupti_t *c, bool at_exit);
/* On the tagging thread: begin returns whether calls are tagged now (window
 * open); only then tag, push and end. Between begin and end the window
 * cannot close under the caller. push pops our previous id, pushes ext. */
bool acl_cupti_begin(acl_cupti_t *c);
/* Every collective that is not captured, tagged or not: the first one lets
 * the windows start (a call that carries no events must too: a job whose
 * workloads all wait for the budget carries none). */
void acl_cupti_called(acl_cupti_t *c);
void acl_cupti_push(acl_cupti_t *c, uint64_t ext);
void acl_cupti_end(acl_cupti_t *c);
/* Window open (calls tagged): CUPTI is the source now, KernelCh otherwise. */
bool acl_cupti_tagging(const acl_cupti_t *c);
void acl_cupti_window_stats(const acl_cupti_t *c, acl_cupti_win_t *w);
/* Thread slot for the calling thread (stable per thread), -1 if none left. */
int acl_cupti_thread_slot(acl_cupti_t *c);
void acl_cupti_kick(acl_cupti_t *c);  /* wake the flush thread */
void acl_cupti_flush(acl_cupti_t *c); /* flush + final process, synchronous */
bool acl_cupti_backed_off(const acl_cupti_t *c);
/* Its first attach failed (not for another subscriber): no CUPTI. */
bool acl_cupti_unavailable(const acl_cupti_t *c);
/* No more windows: the flush thread closes an open one (our kinds off,
 * CUPTI left initialised: no detach to re-attach from) and backs off, so
 * samples come from NCCL's events. For a process whose ranks' kernels wait
 * on each other's launches, where cuptiSubscribe while they run deadlocks
 * with the launching thread (seen with two ranks on one H200). */
void acl_cupti_retire(acl_cupti_t *c, const char *why);
uint64_t acl_cupti_buffers(const acl_cupti_t *c);

#endif
