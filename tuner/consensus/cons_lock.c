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

/* /proc/<pid>/stat: state (field 3) and start time (field 22); false when
 * unreadable. */
static bool proc_stat(pid_t pid, char *state, uint64_t *start)
{
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return false;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* comm may contain spaces */
  if (!p || p[1] != ' ' || !p[2])
    return false;
  *state = p[2];
  int field = 2;
  for (; *p && field < 22; p++)
    if (*p == ' ')
      field++;
  *start = strtoull(p, NULL, 10);
  return true;
}

uint64_t cons_proc_start_time(pid_t pid)
{
  char state;
  uint64_t start = 0;
  return proc_stat(pid, &state, &start) ? start : 0;
}

bool cons_proc_alive(int32_t pid, uint64_t start)
{
  if (pid <= 0)
    return false;
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return false;
  char state = '?';
  uint64_t now = 0;
  if (proc_stat(pid, &state, &now) && (state == 'Z' || state == 'X'))
    return false; /* exited, not yet reaped: it will never detach */
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

uint32_t cons_nprocs(const cons_hdr_t *h)
{
  uint32_t n = h->nprocs;
  return n < ACL_CONS_MAX_PROCS ? n : ACL_CONS_MAX_PROCS;
}

/* Drops the entries (and attached ranks) of processes that are gone. */
void cons_prune_dead_locked(cons_hdr_t *h)
{
  uint32_t k = 0, n = cons_nprocs(h);
  for (uint32_t i = 0; i < n; i++) {
    if (h->procs[i].pid == getpid() || cons_proc_alive(h->procs[i].pid, h->procs[i].start_time))
      h->procs[k++] = h->procs[i];
    else
      h->attached = h->attached >= h->procs[i].refs ? h->attached - h->procs[i].refs : 0;
  }
  h->nprocs = k;
}

/* A dead holder may have left a workload half-updated: such a workload is
 * disabled (NCCL default, published consistently to every rank). */
static void recover_locked(cons_hdr_t *h, uint32_t max_wl)
{
  uint32_t n = atomic_load_explicit(&h->nworkloads, memory_order_acquire);
  if (n > max_wl) /* the header's word is not trusted: the mapping is the bound */
    n = max_wl;
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

/* A trylock result made usable: a dead holder is recovered from. */
static int after_dead_holder(cons_hdr_t *h, uint32_t max_wl, int rc)
{
  if (rc != EOWNERDEAD)
    return rc;
  acl_warn("consensus: a process died holding the lock of comm %016llx; recovering",
           (unsigned long long)h->comm_id);
  recover_locked(h, max_wl);
  return pthread_mutex_consistent(&h->lock) != 0 ? ENOTRECOVERABLE : 0;
}

/* The mutex's type word is what cons_robust_lock_init wrote: glibc trusts
 * it (a scribbled one makes it abort on an assertion), so a lock whose type
 * changed is refused as unusable before glibc sees it. */
static bool lock_kind_ok(cons_hdr_t *h)
{
#ifdef __GLIBC__
  static int want = -1;
  if (want == -1) {
    pthread_mutex_t m;
    if (cons_robust_lock_init(&m) != 0)
      return true;
    want = m.__data.__kind;
    pthread_mutex_destroy(&m);
  }
  return *(volatile int *)&h->lock.__data.__kind == want;
#else
  (void)h;
  return true;
#endif
}

int cons_lock_raw(cons_hdr_t *h, uint32_t max_wl, int timeout_ms)
{
  if (!lock_kind_ok(h))
    return EINVAL;
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
  return after_dead_holder(h, max_wl, rc);
}

/* The thread holding the lock, from glibc's mutex word; 0 unknown. Read
 * without synchronisation: it only names the holder in a warning. */
static int holder_tid(cons_hdr_t *h)
{
#ifdef __GLIBC__
  return *(volatile int *)&h->lock.__data.__owner & 0x3fffffff; /* FUTEX_TID_MASK */
#else
  (void)h;
  return 0;
#endif
}

/* "pid 123 (thread 125, state T (stopped))", from /proc. */
static void holder_name(int tid, char *out, size_t len)
{
  char path[64], line[128], state[48] = "unknown";
  int pid = 0;
  snprintf(path, sizeof(path), "/proc/%d/status", tid);
  FILE *f = tid > 0 ? fopen(path, "re") : NULL;
  while (f && fgets(line, sizeof(line), f)) {
    if (sscanf(line, "Tgid: %d", &pid) == 1)
      continue;
    if (strncmp(line, "State:", 6) == 0) {
      const char *v = line + 6;
      while (*v == ' ' || *v == '\t')
        v++;
      snprintf(state, sizeof(state), "%.*s", (int)strcspn(v, "\n"), v);
    }
  }
  if (f)
    fclose(f);
  if (pid > 0)
    snprintf(out, len, "pid %d (thread %d, state %s)", pid, tid, state);
  else if (tid > 0)
    snprintf(out, len, "thread %d (not visible from here)", tid);
  else
    snprintf(out, len, "an unknown process");
}

/* One warning per rank and holder: who stalls everyone, and what it costs. */
static void warn_stall(acl_cons_t *c, cons_hdr_t *h, uint64_t held_ns, const char *effect)
{
  int tid = holder_tid(h);
  if (!c || atomic_exchange_explicit(&c->stall_tid, tid, memory_order_relaxed) == tid)
    return;
  char who[128];
  holder_name(tid, who, sizeof(who));
  acl_warn("consensus: the lock of comm %016llx has been held for %.0f ms by %s, which does "
           "not progress; %s",
           (unsigned long long)h->comm_id, (double)held_ns * 1e-6, who, effect);
}

/* A holder that does not exist: the lock word was scribbled on (a dead
 * holder would have been reported by the robust lock). Only glibc names it. */
static bool holder_missing(cons_hdr_t *h)
{
#ifdef __GLIBC__
  char path[48];
  int tid = holder_tid(h);
  snprintf(path, sizeof(path), "/proc/%d", tid);
  return tid <= 0 || access(path, F_OK) != 0;
#else
  (void)h;
  return false;
#endif
}

#define CONS_LOCK_SLICE_MS 50 /* a long wait looks at the seal this often */

int cons_lock(acl_cons_t *c, bool count, int timeout_ms, char *err, size_t errlen)
{
  cons_hdr_t *h = c->hdr;
  uint32_t max_wl = (uint32_t)c->set.max_workloads;
  uint64_t t0 = acl_mono_ns();
  int first = timeout_ms < ACL_CONS_STALL_WARN_MS ? timeout_ms : ACL_CONS_STALL_WARN_MS;
  int rc = cons_lock_raw(h, max_wl, first);
  bool missing = false, sealed = false;
  if (rc == ETIMEDOUT && timeout_ms > first) {
    missing = holder_missing(h);
    if (!missing)
      warn_stall(count ? c : NULL, h, acl_mono_ns() - t0,
                 "decisions that need a new block wait for it (AUTOCCL_TIMEOUT_MS at most)");
  }
  /* The rest in slices: a rank that sealed the segment meanwhile ends the
   * wait of every other (nothing is decided under this lock any more). */
  while (rc == ETIMEDOUT && !missing && !(sealed = cons_sealed(c))) {
    int left = timeout_ms - (int)((acl_mono_ns() - t0) / 1000000ull);
    if (left <= 0)
      break;
    rc = cons_lock_raw(h, max_wl, left < CONS_LOCK_SLICE_MS ? left : CONS_LOCK_SLICE_MS);
  }
  uint64_t dt = acl_mono_ns() - t0;
  if (count) {
    atomic_fetch_add_explicit(&c->wait_ns, dt, memory_order_relaxed);
    if (rc == 0)
      atomic_fetch_add_explicit(&c->lock_acq, 1, memory_order_relaxed);
  }
  if (rc == 0)
    return 0;
  if (err)
    snprintf(err, errlen, "consensus lock of comm %016llx %s", (unsigned long long)c->comm_id,
             missing  ? "is held by a thread that does not exist (the segment's header was "
                        "overwritten)"
             : sealed ? "not taken: another rank sealed the segment"
             : rc == ETIMEDOUT ? "not obtained within the timeout (AUTOCCL_TIMEOUT_MS): "
                                 "another rank holds it and does not progress"
                               : "unusable (not recoverable, or its word was overwritten)");
  return -1;
}

/* A spin-wait hint: yielding could give the CPU away for a whole slice. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

int cons_lock_try(acl_cons_t *c, cons_hdr_t *h)
{
  if (atomic_load_explicit(&c->broken, memory_order_relaxed))
    return -1; /* nothing is decided under this lock any more */
  uint64_t t0 = acl_mono_ns(), now = t0;
  int rc;
  /* Local ranks report the same call within microseconds of each other:
   * a short spin lets them take turns; a longer hold is a stall. */
  if (!lock_kind_ok(h))
    return -1;
  while ((rc = pthread_mutex_trylock(&h->lock)) == EBUSY &&
         (now = acl_mono_ns()) - t0 < ACL_CONS_SAMPLE_SPIN_NS)
    cpu_relax();
  rc = after_dead_holder(h, (uint32_t)c->set.max_workloads, rc);
  if (rc == 0) {
    atomic_fetch_add_explicit(&c->lock_acq, 1, memory_order_relaxed);
    atomic_store_explicit(&c->busy_since_ns, 0, memory_order_relaxed);
    return 0;
  }
  atomic_fetch_add_explicit(&c->samples_busy, 1, memory_order_relaxed);
  uint64_t since = atomic_load_explicit(&c->busy_since_ns, memory_order_relaxed);
  if (!since)
    atomic_store_explicit(&c->busy_since_ns, now, memory_order_relaxed);
  else if (now - since > (uint64_t)ACL_CONS_STALL_WARN_MS * 1000000ull)
    warn_stall(c, h, now - since,
               "its samples are dropped (autoccl_consensus_samples_busy_total) until it goes");
  return -1;
}

int cons_unlock(cons_hdr_t *h) { return lock_kind_ok(h) ? pthread_mutex_unlock(&h->lock) : EINVAL; }
