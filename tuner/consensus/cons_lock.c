/* Rank consensus: the robust process-shared lock of a segment, recovery
 * from a holder that died, and process liveness (pid + start time). Segment
 * lifetime is in cons_shm.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "tuner/consensus/cons_int.h"

uint64_t cons_proc_start_time(pid_t pid)
{
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* comm may contain spaces */
  if (!p)
    return 0;
  /* after ")": state is field 3; starttime is field 22 */
  int field = 2;
  for (; *p && field < 22; p++)
    if (*p == ' ')
      field++;
  return strtoull(p, NULL, 10);
}

bool cons_proc_alive(int32_t pid, uint64_t start)
{
  if (pid <= 0)
    return false;
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return false;
  uint64_t now = cons_proc_start_time(pid);
  /* a recycled pid has another start time; unknown counts as alive */
  return !(start && now && now != start);
}

int cons_robust_lock_init(pthread_mutex_t *m)
{
  pthread_mutexattr_t a;
  if (pthread_mutexattr_init(&a))
    return -1;
  int rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  rc = rc ? rc : pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  rc = rc ? rc : pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
  return rc ? -1 : 0;
}

/* Drops the entries (and attached ranks) of processes that are gone. */
void cons_prune_dead_locked(cons_hdr_t *h)
{
  uint32_t k = 0;
  for (uint32_t i = 0; i < h->nprocs && i < ACL_CONS_MAX_PROCS; i++) {
    if (h->procs[i].pid == getpid() || cons_proc_alive(h->procs[i].pid, h->procs[i].start_time))
      h->procs[k++] = h->procs[i];
    else
      h->attached = h->attached >= h->procs[i].refs ? h->attached - h->procs[i].refs : 0;
  }
  h->nprocs = k;
}

/* A dead holder may have left a workload half-updated: such a workload is
 * disabled (NCCL default, published consistently to every rank). */
static void recover_locked(cons_hdr_t *h)
{
  uint32_t n = atomic_load_explicit(&h->nworkloads, memory_order_acquire);
  if (n > (uint32_t)h->set.max_workloads)
    n = (uint32_t)h->set.max_workloads;
  for (uint32_t i = 0; i < n; i++) {
    cons_wl_t *w = cons_wl(h, i);
    if (w->dirty) {
      w->dirty = 0;
      w->disabled = 1;
    }
  }
  cons_prune_dead_locked(h);
  h->recoveries++;
}

int cons_lock_raw(cons_hdr_t *h, int timeout_ms)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  int rc = pthread_mutex_trylock(&h->lock);
  if (rc == EBUSY)
    rc = pthread_mutex_timedlock(&h->lock, &ts);
  if (rc == EOWNERDEAD) {
    acl_warn("consensus: a process died holding the lock of comm %016llx; recovering",
             (unsigned long long)h->comm_id);
    recover_locked(h);
    if (pthread_mutex_consistent(&h->lock) != 0)
      return ENOTRECOVERABLE;
    rc = 0;
  }
  return rc;
}

int cons_lock(acl_cons_t *c, cons_hdr_t *h, int timeout_ms, char *err, size_t errlen)
{
  uint64_t t0 = acl_mono_ns();
  int rc = cons_lock_raw(h, timeout_ms);
  uint64_t dt = acl_mono_ns() - t0;
  if (c) {
    atomic_fetch_add_explicit(&c->wait_ns, dt, memory_order_relaxed);
    if (rc == 0)
      atomic_fetch_add_explicit(&c->lock_acq, 1, memory_order_relaxed);
  }
  if (rc == 0)
    return 0;
  if (err)
    snprintf(err, errlen, "consensus lock of comm %016llx %s", (unsigned long long)h->comm_id,
             rc == ETIMEDOUT ? "not obtained within the timeout (AUTOCCL_TIMEOUT_MS): "
                               "another rank holds it and does not progress"
                             : "unusable (not recoverable)");
  return -1;
}

void cons_unlock(cons_hdr_t *h)
{
  pthread_mutex_unlock(&h->lock);
}
