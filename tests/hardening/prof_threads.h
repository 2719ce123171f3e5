/* The profiler library on its own under concurrent NCCL events (prof_threads.c). */
#ifndef ACL_TESTS_PROF_THREADS_H
#define ACL_TESTS_PROF_THREADS_H

/* Exits 1 on a failed check; returns the samples delivered. */
int acl_hard_prof_threads(void);

#endif
