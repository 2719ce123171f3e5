/* Rank consensus: the process-shared lock of a segment (a futex word),
 * recovery from a holder that died, and process liveness (pid + start
 * time). Segment lifetime is in cons_shm.c. */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

void cons_lock_init(cons_hdr_t *h) { atomic_store_explicit(&h->lock, 0, memory_order_release); }

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

/* The lock word: 0 free, else the holder's thread id, with LOCK_WAITERS
 * once a thread sleeps on it (its unlock then wakes one). Plain atomics and
 * a futex, so that whatever is written into the word (the header is shared
 * memory any process of this uid can write) gives a wait, a take-over or an
 * error, never a crash inside a library that trusts the word. A holder that
 * is gone (killed, crashed: its thread no longer runs) is taken over from
 * and its half-updated workloads are disabled, as a robust mutex would. */
#define LOCK_WAITERS 0x80000000u
#define LOCK_TID 0x3fffffffu
#define LOCK_CHECK_NS 1000000ull /* holders keep it for microseconds: check after 1 ms */
#define LOCK_SLICE_MS 10         /* a sleeping waiter looks again this often */

static uint32_t self_tid(void) { return (uint32_t)gettid() & LOCK_TID; }

static void futex_wait(_Atomic uint32_t *w, uint32_t v, int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, v, &ts, NULL, 0); /* shared: no PRIVATE */
}

static void futex_wake(_Atomic uint32_t *w, int n)
{
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, n, NULL, NULL, 0);
}

/* The word's holder does not run: dead, a zombie, no thread at all (0), or
 * this very thread (nothing here takes the lock twice). */
static bool holder_gone(uint32_t v, uint32_t me)
{
  uint32_t t = v & LOCK_TID;
  return t == 0 || t == me || !cons_proc_alive((int32_t)t, 0);
}

static int take_over(cons_hdr_t *h, uint32_t max_wl, uint32_t v, uint32_t mine)
{
  if (!atomic_compare_exchange_strong_explicit(&h->lock, &v, mine, memory_order_acquire,
                                               memory_order_relaxed))
    return EBUSY;
  acl_warn("consensus: the lock of comm %016llx was held by thread %u, which is gone; "
           "recovering",
           (unsigned long long)h->comm_id, (unsigned)(v & LOCK_TID));
  recover_locked(h, max_wl);
  return 0;
}

int cons_lock_raw(cons_hdr_t *h, uint32_t max_wl, int timeout_ms)
{
  uint32_t me = self_tid(), bits = 0;
  uint64_t t0 = acl_mono_ns();
  for (;;) {
    uint32_t v = 0;
    if (atomic_compare_exchange_strong_explicit(&h->lock, &v, me | bits, memory_order_acquire,
                                                memory_order_relaxed))
      return 0;
    uint64_t el = acl_mono_ns() - t0;
    if (el >= LOCK_CHECK_NS && holder_gone(v, me) && take_over(h, max_wl, v, me | bits) == 0)
      return 0;
    int left = timeout_ms - (int)(el / 1000000ull);
    if (left <= 0)
      return ETIMEDOUT;
    if (!(v & LOCK_WAITERS) &&
        !atomic_compare_exchange_strong_explicit(&h->lock, &v, v | LOCK_WAITERS,
                                                 memory_order_relaxed, memory_order_relaxed))
      continue; /* changed meanwhile: look again */
    futex_wait(&h->lock, v | LOCK_WAITERS, left < LOCK_SLICE_MS ? left : LOCK_SLICE_MS);
    bits = LOCK_WAITERS; /* others may sleep too: this holder's unlock wakes the next */
  }
}

/* The thread holding the lock, from the lock word; 0 none. */
static int holder_tid(cons_hdr_t *h)
{
  return (int)(atomic_load_explicit(&h->lock, memory_order_relaxed) & LOCK_TID);
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

#define CONS_LOCK_SLICE_MS 50 /* a long wait looks at the seal this often */

int cons_lock(acl_cons_t *c, bool count, int timeout_ms, char *err, size_t errlen)
{
  cons_hdr_t *h = c->hdr;
  uint32_t max_wl = (uint32_t)c->set.max_workloads;
  uint64_t t0 = acl_mono_ns();
  int first = timeout_ms < ACL_CONS_STALL_WARN_MS ? timeout_ms : ACL_CONS_STALL_WARN_MS;
  int rc = cons_lock_raw(h, max_wl, first);
  bool sealed = false;
  if (rc == ETIMEDOUT && timeout_ms > first)
    warn_stall(count ? c : NULL, h, acl_mono_ns() - t0,
               "decisions that need a new block wait for it (AUTOCCL_TIMEOUT_MS at most)");
  /* The rest in slices: a rank that sealed the segment meanwhile ends the
   * wait of every other (nothing is decided under this lock any more). */
  while (rc == ETIMEDOUT && !(sealed = cons_sealed(c))) {
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
             sealed ? "not taken: another rank sealed the segment"
                    : "not obtained within the timeout (AUTOCCL_TIMEOUT_MS): another rank "
                      "holds it and does not progress");
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
  uint32_t me = self_tid(), v;
  bool got;
  /* Local ranks report the same call within microseconds of each other:
   * a short spin lets them take turns; a longer hold is a stall (a dead
   * holder is taken over from by the decide path, which waits). */
  for (;;) {
    v = 0;
    got = atomic_compare_exchange_strong_explicit(&h->lock, &v, me, memory_order_acquire,
                                                  memory_order_relaxed);
    if (got || (now = acl_mono_ns()) - t0 >= ACL_CONS_SAMPLE_SPIN_NS)
      break;
    cpu_relax();
  }
  if (got) {
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

int cons_unlock(cons_hdr_t *h)
{
  uint32_t v = atomic_exchange_explicit(&h->lock, 0, memory_order_release);
  bool mine = (v & LOCK_TID) == self_tid();
  if (!mine) {
    futex_wake(&h->lock, INT32_MAX); /* the word was overwritten: nobody may sleep on it */
    return EINVAL;
  }
  if (v & LOCK_WAITERS)
    futex_wake(&h->lock, 1);
  return 0;
}
