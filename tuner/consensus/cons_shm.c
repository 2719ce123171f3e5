/* Consensus segment lifetime: naming, create/join, stale detection and
 * replacement, detach and removal.
 * Another local user can pre-create our names: a file that is not ours
 * (core/shm.h) is never mapped; every rank then skips to the same next
 * name, so they still meet. Leftovers of crashed jobs are reclaimed when a
 * process first attaches. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/shm.h"
#include "tuner/consensus/cons_int.h"

#define HDR_ALIGN 4096

static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;
static cons_map_t *maps;

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

size_t cons_wl_size(void) { return (sizeof(cons_wl_t) + 63) & ~(size_t)63; }

static size_t hdr_span(void)
{
  return (sizeof(cons_hdr_t) + HDR_ALIGN - 1) & ~(size_t)(HDR_ALIGN - 1);
}

cons_wl_t *cons_wl(cons_hdr_t *h, uint32_t widx)
{
  return (cons_wl_t *)((char *)h + hdr_span() + (size_t)widx * cons_wl_size());
}

uint32_t cons_wl_fit(size_t map_size)
{
  if (map_size <= hdr_span())
    return 0;
  size_t n = (map_size - hdr_span()) / cons_wl_size();
  return n < ACL_CONFIG_MAX_WORKLOADS_MAX ? (uint32_t)n : ACL_CONFIG_MAX_WORKLOADS_MAX;
}

int cons_settings_from(cons_settings_t *s, const acl_cons_params_t *p, char *err, size_t errlen)
{
  memset(s, 0, sizeof(*s));
  s->mode = (int32_t)p->cfg->mode;
  s->nranks = p->nranks;
  s->nnodes = p->nnodes;
  s->max_workloads = p->cfg->max_workloads;
  acl_search_params_from_config(&s->search, p->cfg, p->nranks);
  s->search.chunk_axis = p->chunk_axis;
  s->search.events_per_comm = p->events_per_comm;
  char why[160];
  if (acl_search_params_fix(&s->search, why, sizeof(why)) != 0) {
    snprintf(err, errlen, "consensus: %s", why);
    return -1;
  }
  return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

uint64_t cons_settings_hash(const cons_settings_t *s)
{
  return fnv(0xcbf29ce484222325ull, s, sizeof(*s)); /* memset'd: padding is zero */
}

int cons_settings_diff(const cons_settings_t *a, const cons_settings_t *b, char *msg, size_t len)
{
#define DIFF_I(f, what)                                                                            \
  if (a->f != b->f) {                                                                              \
    snprintf(msg, len, "%s differs: this rank has %d, the communicator has %d", what, (int)a->f,   \
             (int)b->f);                                                                           \
    return 1;                                                                                      \
  }
  if (a->mode != b->mode) {
    snprintf(msg, len, "AUTOCCL_MODE differs: this rank has %s, the communicator has %s",
             acl_mode_name((acl_mode_t)a->mode), acl_mode_name((acl_mode_t)b->mode));
    return 1;
  }
  DIFF_I(search.warmup_calls, "AUTOCCL_WARMUP")
  DIFF_I(search.samples_per_cand, "AUTOCCL_SAMPLES")
  DIFF_I(max_workloads, "AUTOCCL_MAX_WORKLOADS")
  DIFF_I(nranks, "communicator size")
  DIFF_I(nnodes, "node count")
  DIFF_I(search.max_channels, "search max_channels")
  DIFF_I(search.nranks, "search nranks")
  DIFF_I(search.drift_window, "search drift_window")
  if (a->search.budget != b->search.budget) {
    snprintf(msg, len,
             "AUTOCCL_EXPLORE_BUDGET differs: this rank has %g %%, the communicator "
             "has %g %%",
             100.0 * a->search.budget, 100.0 * b->search.budget);
    return 1;
  }
  if (a->search.drift_ratio != b->search.drift_ratio ||
      a->search.prune_ratio != b->search.prune_ratio) {
    snprintf(msg, len, "search drift/prune ratios differ");
    return 1;
  }
  DIFF_I(search.stock_channels, "AUTOCCL_STOCK_CHANNELS")
  DIFF_I(search.chunk_axis, "chunk axis (tuner ABI v6, AUTOCCL_CHUNK)")
#undef DIFF_I
  return 0;
}

void cons_table_join_locked(cons_hdr_t *h, const acl_cons_t *c, bool creator)
{
  if (creator) {
    h->table_hash = c->table_hash;
    return;
  }
  if (h->table_hash == c->table_hash ||
      atomic_exchange_explicit(&h->table_off, 1, memory_order_relaxed))
    return;
  acl_warn("comm %016llx: AUTOCCL_TABLE differs between ranks (table hash %016llx on this "
           "rank, %016llx on the ranks already here; 0 = no table): every rank leaves "
           "NCCL's own choices instead of the table's; give every rank the same file",
           (unsigned long long)c->comm_id, (unsigned long long)c->table_hash,
           (unsigned long long)h->table_hash);
}

/* Identifies the job, so a segment of another job is never joined. */
static uint64_t job_identity(void)
{
  static const char *vars[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",   "MASTER_ADDR",
                               "MASTER_PORT",         "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"};
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char *v = getenv(vars[i]);
    h = fnv(h, vars[i], strlen(vars[i]) + 1);
    if (v)
      h = fnv(h, v, strlen(v) + 1);
  }
  return h;
}

/* alt > 0: the alternatives, tried in order when a name is not ours. */
static void seg_name(char *out, size_t len, uint64_t comm_id, const char *ns, int alt)
{
  char suffix[16] = "";
  if (alt > 0)
    snprintf(suffix, sizeof(suffix), "-alt%d", alt);
  if (ns && *ns)
    snprintf(out, len, "/autoccl-%u-%016llx-%.32s%s", (unsigned)getuid(),
             (unsigned long long)comm_id, ns, suffix);
  else
    snprintf(out, len, "/autoccl-%u-%016llx%s", (unsigned)getuid(), (unsigned long long)comm_id,
             suffix);
}

static size_t seg_size(int max_workloads)
{
  return hdr_span() + (size_t)max_workloads * cons_wl_size();
}

static void proc_add_locked(cons_hdr_t *h, pid_t pid, uint64_t start)
{
  for (uint32_t i = 0; i < cons_nprocs(h); i++)
    if (h->procs[i].pid == pid) {
      h->procs[i].refs++;
      return;
    }
  if (h->nprocs < ACL_CONS_MAX_PROCS) /* beyond: stale detection uses the first ones */
    h->procs[h->nprocs++] = (cons_proc_t){.pid = pid, .refs = 1, .start_time = start};
}

static void proc_del_locked(cons_hdr_t *h, pid_t pid)
{
  uint32_t n = cons_nprocs(h);
  for (uint32_t i = 0; i < n; i++)
    if (h->procs[i].pid == pid) {
      if (--h->procs[i].refs == 0) {
        h->procs[i] = h->procs[n - 1];
        h->nprocs = n - 1;
      }
      return;
    }
}

/* Creator side: the name did not exist. */
static cons_hdr_t *seg_init(int fd, const acl_cons_t *c, size_t size, char *err, size_t errlen)
{
  if (ftruncate(fd, (off_t)size) != 0) {
    snprintf(err, errlen, "cannot size the consensus segment (%zu bytes): %s", size,
             strerror(errno));
    return NULL;
  }
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    snprintf(err, errlen, "cannot map the consensus segment: %s", strerror(errno));
    return NULL;
  }
  cons_hdr_t *h = p;
  h->creator_pid = (int32_t)getpid(); /* first: lets joiners judge a crashed init */
  h->layout = ACL_CONS_LAYOUT;
  h->hdr_size = (uint32_t)sizeof(cons_hdr_t);
  h->wl_size = cons_wl_size();
  h->total_size = size;
  h->comm_id = c->comm_id;
  h->job_id = job_identity();
  h->generation = acl_mono_ns() ^ ((uint64_t)getpid() << 32);
  h->creator_start = cons_proc_start_time(getpid());
  h->set = c->set;
  cons_table_join_locked(h, c, true);
  cons_lock_init(h);
  atomic_store_explicit(&h->magic, ACL_CONS_MAGIC, memory_order_release);
  return h;
}

typedef enum { JOIN_OK, JOIN_RETRY, JOIN_FAIL } join_rc_t;

/* Judges an existing segment: join it, retry (it was replaced), or fail. */
static join_rc_t seg_judge(const char *name, cons_hdr_t *h, size_t size, size_t have, acl_cons_t *c,
                           uint64_t deadline, char *err, size_t errlen)
{
  uint64_t magic;
  while ((magic = atomic_load_explicit(&h->magic, memory_order_acquire)) != ACL_CONS_MAGIC) {
    int32_t cp = h->creator_pid;
    if (magic != 0 && cp > 0 && cons_proc_alive(cp, 0)) {
      snprintf(err, errlen,
               "consensus segment %s is corrupt (magic %016llx); not used; "
               "remove /dev/shm%s if no job uses it",
               name, (unsigned long long)magic, name);
      return JOIN_FAIL;
    }
    if (cp > 0 && !cons_proc_alive(cp, 0)) {
      /* crashed during init: nobody can have joined it */
      if (atomic_exchange(&h->retired, 1) == 0)
        shm_unlink(name);
      acl_warn("consensus: replacing %s, left half-initialised by dead pid %d", name, cp);
      return JOIN_RETRY;
    }
    if (acl_mono_ns() > deadline) {
      snprintf(err, errlen,
               "consensus segment %s never finished initialising (creator "
               "pid %d); remove /dev/shm%s if no job uses it",
               name, (int)cp, name);
      return JOIN_FAIL;
    }
    sleep_ms(1);
  }
  if (atomic_load(&h->retired))
    return JOIN_RETRY;
  if (h->layout != ACL_CONS_LAYOUT || h->hdr_size != sizeof(cons_hdr_t) ||
      h->wl_size != cons_wl_size()) {
    snprintf(err, errlen,
             "consensus segment %s has another layout (another autoccl "
             "version?); all ranks must load the same plugin",
             name);
    return JOIN_FAIL;
  }
  if (h->total_size != have) {
    snprintf(err, errlen,
             "consensus segment %s is corrupt (its header says %llu bytes, the "
             "file has %zu); not used; remove /dev/shm%s if no job uses it",
             name, (unsigned long long)h->total_size, have, name);
    return JOIN_FAIL;
  }
  char ebuf[200];
  if (cons_lock_raw(h, cons_wl_fit(have), c->timeout_ms) != 0) {
    snprintf(err, errlen, "consensus segment %s: lock not obtained within %d ms", name,
             c->timeout_ms);
    return JOIN_FAIL;
  }
  if (atomic_load(&h->retired)) {
    cons_unlock(h);
    return JOIN_RETRY;
  }
  bool any_alive = false;
  for (uint32_t i = 0; i < cons_nprocs(h) && !any_alive; i++)
    any_alive = cons_proc_alive(h->procs[i].pid, h->procs[i].start_time);
  bool same_job = h->job_id == job_identity();
  if (!any_alive) {
    /* every process that ever attached is gone: a crashed job's leftover */
    atomic_store(&h->retired, 1);
    shm_unlink(name);
    cons_unlock(h);
    acl_warn("consensus: replacing stale segment %s (generation %llx, %s job, all "
             "attached processes dead)",
             name, (unsigned long long)h->generation, same_job ? "same" : "another");
    return JOIN_RETRY;
  }
  if (!same_job) {
    cons_unlock(h);
    snprintf(err, errlen,
             "consensus segment %s belongs to another live job (pid %d, job "
             "identity from TORCHELASTIC_RUN_ID/SLURM_JOB_ID/MASTER_ADDR/MASTER_PORT "
             "differs)",
             name, (int)h->procs[0].pid);
    return JOIN_FAIL;
  }
  if (h->total_size != size || cons_settings_diff(&c->set, &h->set, ebuf, sizeof(ebuf))) {
    if (h->total_size != size && !cons_settings_diff(&c->set, &h->set, ebuf, sizeof(ebuf)))
      snprintf(ebuf, sizeof(ebuf), "segment size differs");
    cons_unlock(h);
    snprintf(err, errlen,
             "settings mismatch with the ranks already in comm %016llx: %s "
             "(every rank must run with the same AUTOCCL_* settings)",
             (unsigned long long)c->comm_id, ebuf);
    return JOIN_FAIL;
  }
  proc_add_locked(h, getpid(), cons_proc_start_time(getpid()));
  h->attached++;
  cons_table_join_locked(h, c, false);
  cons_unlock(h);
  return JOIN_OK;
}

/* NULL with err; *foreign when the name holds a file that is not ours. */
static cons_hdr_t *seg_open(const char *name, acl_cons_t *c, size_t *sizep, bool *foreign,
                            char *err, size_t errlen)
{
  size_t size = seg_size(c->set.max_workloads);
  uint64_t deadline = acl_mono_ns() + (uint64_t)c->timeout_ms * 1000000ull;
  *foreign = false;
  /* A retired segment's name lasts until its last rank's shm_unlink, which
   * a preempted process can delay for a while: retries are bounded by the
   * deadline, not by a count that a busy machine exhausts in microseconds. */
  for (int attempt = 0; attempt < 64 || acl_mono_ns() < deadline; attempt++) {
    if (attempt >= 8)
      sleep_ms(1);
    int fd;
    acl_shm_rc_t rc = acl_shm_create(name, &fd, err, errlen);
    if (rc == ACL_SHM_OK) {
      cons_hdr_t *h = seg_init(fd, c, size, err, errlen);
      close(fd);
      if (!h) {
        shm_unlink(name);
        return NULL;
      }
      proc_add_locked(h, getpid(), h->creator_start); /* not yet visible to others */
      h->attached = 1;
      *sizep = size;
      return h;
    }
    if (rc != ACL_SHM_EXISTS)
      return NULL;
    struct stat st;
    rc = acl_shm_open_own(name, &fd, &st, err, errlen);
    if (rc == ACL_SHM_ABSENT)
      continue; /* removed meanwhile */
    if (rc == ACL_SHM_FOREIGN)
      *foreign = true;
    if (rc != ACL_SHM_OK)
      return NULL;
    size_t have = (size_t)st.st_size;
    while (have < sizeof(cons_hdr_t) && fstat(fd, &st) == 0 &&
           (have = (size_t)st.st_size) < sizeof(cons_hdr_t)) {
      if (acl_mono_ns() > deadline)
        break;
      sleep_ms(1); /* creator between shm_open and ftruncate */
    }
    if (have < sizeof(cons_hdr_t)) {
      close(fd);
      snprintf(err, errlen,
               "shared memory %s stays empty (a creator died right after "
               "creating it?); remove /dev/shm%s if no job uses it",
               name, name);
      return NULL;
    }
    void *p = mmap(NULL, have, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      snprintf(err, errlen, "cannot map shared memory %s: %s", name, strerror(errno));
      return NULL;
    }
    join_rc_t jr = seg_judge(name, p, size, have, c, deadline, err, errlen);
    if (jr == JOIN_OK) {
      *sizep = have;
      return p;
    }
    munmap(p, have);
    if (jr == JOIN_FAIL)
      return NULL;
  }
  snprintf(err, errlen, "consensus segment %s keeps being replaced; giving up", name);
  return NULL;
}

/* A first look without the lock, so that the segments of live jobs are
 * never locked (nor recovered) by a process that is not theirs. */
static bool any_alive_unlocked(const cons_hdr_t *h)
{
  if (atomic_load(&h->retired) || cons_proc_alive(h->creator_pid, h->creator_start))
    return true;
  uint32_t n = h->nprocs < ACL_CONS_MAX_PROCS ? h->nprocs : ACL_CONS_MAX_PROCS;
  for (uint32_t i = 0; i < n; i++)
    if (cons_proc_alive(h->procs[i].pid, h->procs[i].start_time))
      return true;
  return false;
}

/* A leftover of crashed processes: every process recorded in it (creator
 * and attachers) is dead. Judged under its lock, like a joiner would. */
static void reclaim_one(void *user, const char *name)
{
  (void)user;
  for (cons_map_t *m = maps; m; m = m->next)
    if (strcmp(m->name, name) == 0)
      return; /* ours, in use */
  int fd;
  struct stat st;
  char why[200];
  if (acl_shm_open_own(name, &fd, &st, why, sizeof(why)) != ACL_SHM_OK)
    return; /* not ours: never touched */
  /* The whole file: taking a dead holder's lock recovers its workloads
   * (recover_locked), which lie past the header. */
  size_t have = (size_t)st.st_size;
  void *p = have >= sizeof(cons_hdr_t) ? mmap(NULL, have, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                       : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED)
    return;
  cons_hdr_t *h = p;
  uint64_t magic = atomic_load_explicit(&h->magic, memory_order_acquire);
  bool gone = false;
  if (magic != ACL_CONS_MAGIC) {
    /* never initialised: only its creator could finish it */
    gone = h->creator_pid > 0 && !cons_proc_alive(h->creator_pid, 0) &&
           atomic_exchange(&h->retired, 1) == 0;
  } else if (h->layout == ACL_CONS_LAYOUT && h->hdr_size == sizeof(cons_hdr_t) &&
             h->set.max_workloads >= 1 && h->set.max_workloads <= ACL_CONFIG_MAX_WORKLOADS_MAX &&
             seg_size(h->set.max_workloads) <= have && !any_alive_unlocked(h) &&
             cons_lock_raw(h, cons_wl_fit(have), 200) == 0) {
    bool alive = !atomic_load(&h->retired) && cons_proc_alive(h->creator_pid, h->creator_start);
    for (uint32_t i = 0; i < h->nprocs && i < ACL_CONS_MAX_PROCS && !alive; i++)
      alive = cons_proc_alive(h->procs[i].pid, h->procs[i].start_time);
    gone = !alive && atomic_exchange(&h->retired, 1) == 0;
    cons_unlock(h);
  }
  if (gone) {
    shm_unlink(name);
    acl_info("consensus: reclaimed %s, left by processes that are all dead", name);
  }
  munmap(p, have);
}

static void reclaim_stale(void)
{
  char prefix[48];
  snprintf(prefix, sizeof(prefix), "/autoccl-%u-", (unsigned)getuid());
  acl_shm_scan(prefix, reclaim_one, NULL);
}

/* Under maps_mu: this process's mapping of name, or a new one (refs 0). */
static cons_map_t *map_name(acl_cons_t *c, const char *name, bool *foreign, char *err,
                            size_t errlen)
{
  for (cons_map_t *m = maps; m; m = m->next)
    if (m->pid == getpid() && strcmp(m->name, name) == 0)
      return m;
  cons_map_t *m = calloc(1, sizeof(*m));
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(m->name, sizeof(m->name), "%s", name);
  m->pid = getpid();
  m->hdr = seg_open(name, c, &m->size, foreign, err, errlen);
  if (!m->hdr) {
    free(m);
    return NULL;
  }
  m->next = maps;
  maps = m;
  return m;
}

cons_map_t *cons_seg_attach(acl_cons_t *c, const char *ns, char *err, size_t errlen)
{
  char name[96], skipped[ACL_CONS_ALT_NAMES][96];
  pthread_mutex_lock(&maps_mu);
  static pid_t reclaimed_in;
  if (reclaimed_in != getpid()) { /* once per process, forks included */
    reclaimed_in = getpid();
    reclaim_stale();
  }
  cons_map_t *m = NULL;
  int alt = 0;
  for (; alt < ACL_CONS_ALT_NAMES; alt++) {
    bool foreign = false;
    seg_name(name, sizeof(name), c->comm_id, ns, alt);
    m = map_name(c, name, &foreign, err, errlen);
    if (m || !foreign)
      break;
    /* Every rank of this host sees the same file and skips to the same
     * next name: they still meet, on a segment nobody else can open. */
    acl_warn("consensus: comm %016llx: %s; not used: trying the next name",
             (unsigned long long)c->comm_id, err);
    snprintf(skipped[alt], sizeof(skipped[alt]), "%s", name);
  }
  if (!m) {
    if (alt == ACL_CONS_ALT_NAMES)
      snprintf(err, errlen,
               "the %d consensus segment names of comm %016llx (%s ...) are all "
               "taken by files that are not ours; remove them, or run as their owner",
               ACL_CONS_ALT_NAMES, (unsigned long long)c->comm_id, skipped[0]);
    goto out;
  }
  if (alt > 0)
    acl_warn("consensus: comm %016llx uses %s: %s is not ours", (unsigned long long)c->comm_id,
             name, skipped[0]);
  if (m->refs > 0) {
    /* another rank of this process: same mapping, one more attached rank */
    char ebuf[200];
    if (cons_settings_diff(&c->set, &m->hdr->set, ebuf, sizeof(ebuf))) {
      snprintf(err, errlen, "settings mismatch with the ranks already in comm %016llx: %s",
               (unsigned long long)c->comm_id, ebuf);
      m = NULL;
      goto out;
    }
    if (cons_lock_raw(m->hdr, cons_wl_fit(m->size), c->timeout_ms) != 0) {
      snprintf(err, errlen, "consensus segment %s: lock not obtained within %d ms", name,
               c->timeout_ms);
      m = NULL;
      goto out;
    }
    proc_add_locked(m->hdr, getpid(), 0);
    m->hdr->attached++;
    cons_table_join_locked(m->hdr, c, false);
    cons_unlock(m->hdr);
  }
  m->refs++;
out:
  pthread_mutex_unlock(&maps_mu);
  return m;
}

void cons_seg_detach(acl_cons_t *c)
{
  cons_map_t *m = c->map;
  if (!m)
    return;
  pthread_mutex_lock(&maps_mu);
  cons_hdr_t *h = m->hdr;
  if (atomic_load(&c->broken)) {
    /* Its header cannot be trusted, nor judged stale by the next job: the
     * name goes now (the ranks still in it keep their mapping). */
    atomic_store(&h->retired, 1);
    shm_unlink(m->name);
  } else if (cons_lock_raw(h, cons_wl_fit(m->size), ACL_CONS_DETACH_MS) == 0) {
    cons_prune_dead_locked(h); /* a crashed rank must not keep the segment alive */
    proc_del_locked(h, getpid());
    if (h->attached > 0)
      h->attached--;
    if (c->rank == 0)
      atomic_store(&h->leader, 0);
    if (h->attached == 0 && atomic_exchange(&h->retired, 1) == 0)
      shm_unlink(m->name); /* last rank out */
    cons_unlock(h);
  } else {
    acl_warn("consensus: %s: lock not free within %d ms at detach (another rank holds it "
             "and does not progress); leaving the segment to the next job's stale detection",
             m->name, ACL_CONS_DETACH_MS);
  }
  if (--m->refs == 0) {
    cons_map_t **pp = &maps;
    while (*pp && *pp != m)
      pp = &(*pp)->next;
    if (*pp)
      *pp = m->next;
    munmap(m->hdr, m->size);
    free(m);
  }
  c->map = NULL;
  c->hdr = NULL;
  pthread_mutex_unlock(&maps_mu);
}
