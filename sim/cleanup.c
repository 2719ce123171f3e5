/* What a run leaves on the host (the feed segment, the decision logs, the
 * consensus segments of its communicators) is removed however the run
 * ends: by the parent on any exit it lives through, by a guardian process
 * when the parent and its ranks are gone (SIGKILL, a crash), and at the
 * next start for what a run killed together with its guardian left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/shm.h"
#include "sim/nccl_model.h"
#include "sim/sim.h"

static void unlink_own(void *user, const char *name)
{
  (void)user;
  int fd;
  struct stat st;
  char why[200];
  if (acl_shm_open_own(name, &fd, &st, why, sizeof(why)) != ACL_SHM_OK)
    return; /* not ours: not to be removed by us */
  close(fd);
  shm_unlink(name);
}

/* Removes what dir holds (rank logs, the plugin's reports and the
 * temporary files of its writes) and dir itself, only if it is our
 * directory: a mkdtemp folder of ours, whose every file is the run's. */
static void rm_logdir(const char *dir)
{
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
    return;
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
        unlinkat(dirfd(d), e->d_name, 0); /* a folder stays, and so does dir */
    closedir(d);
  }
  rmdir(dir);
}

uint64_t acl_sim_comm_id(const acl_sim_ctl_t *ctl, int c, uint32_t gen)
{
  return gen ? acl_sim_mix(ctl->comm_ids[c] + gen) | 1 : ctl->comm_ids[c];
}

static uint32_t max_churns(const acl_sim_world_t *w)
{
  uint32_t g = 0;
  for (int r = 0; r < w->o->nranks && r < ACL_SIM_MAX_RANKS; r++)
    g = w->ctl->rank[r].churns > g ? w->ctl->rank[r].churns : g;
  return g;
}

typedef struct seg_count {
  const acl_sim_world_t *w;
  int ncomms;
  uint32_t gens;
  int n;
} seg_count_t;

static void count_run_segment(void *user, const char *name)
{
  seg_count_t *sc = user;
  char want[64];
  for (int c = 0; c < sc->ncomms; c++)
    for (uint32_t g = 0; g <= sc->gens; g++) {
      snprintf(want, sizeof(want), "/autoccl-%u-%016llx", (unsigned)getuid(),
               (unsigned long long)acl_sim_comm_id(sc->w->ctl, c, g));
      if (strncmp(name, want, strlen(want)) == 0) {
        sc->n++;
        return;
      }
    }
}

int acl_sim_run_segments(const acl_sim_world_t *w, int ncomms)
{
  char prefix[32];
  snprintf(prefix, sizeof(prefix), "/autoccl-%u-", (unsigned)getuid());
  DIR *d = opendir("/dev/shm");
  if (!d)
    return -1;
  closedir(d);
  seg_count_t sc = {w, ncomms, max_churns(w), 0};
  acl_shm_scan(prefix, count_run_segment, &sc);
  return sc.n;
}

static void unlink_run_segment(void *user, const char *name)
{
  seg_count_t *sc = user;
  int before = sc->n;
  count_run_segment(user, name);
  if (sc->n > before)
    unlink_own(NULL, name);
}

void acl_sim_cleanup(const acl_sim_world_t *w, int ncomms)
{
  if (w->logdir[0])
    rm_logdir(w->logdir);
  if (w->feed_name[0])
    shm_unlink(w->feed_name);
  /* The ranks' consensus segments: killed ranks never detach. Names carry
   * this run's random communicator ids, so no other job's can match. */
  if (w->ctl && w->ctl != MAP_FAILED && !w->o->churn_every) {
    for (int c = 0; c < ncomms; c++) {
      char prefix[64];
      snprintf(prefix, sizeof(prefix), "/autoccl-%u-%016llx", (unsigned)getuid(),
               (unsigned long long)w->ctl->comm_ids[c]);
      acl_shm_scan(prefix, unlink_own, NULL);
    }
  } else if (w->ctl && w->ctl != MAP_FAILED) { /* every generation's ids */
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "/autoccl-%u-", (unsigned)getuid());
    seg_count_t sc = {w, ncomms, max_churns(w), 0};
    acl_shm_scan(prefix, unlink_run_segment, &sc);
  }
}

int acl_sim_guard_start(const acl_sim_world_t *w, int ncomms)
{
  int p[2];
  if (pipe(p) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    /* Outlives the parent: no terminal signals, no inherited output. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    close(p[1]);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      if (null > 2)
        close(null);
    }
    /* The write end is held by the parent and every rank process: EOF
     * means all of them are gone, however they ended. */
    for (;;) {
      char b;
      ssize_t k = read(p[0], &b, 1);
      if (k == 0 || (k < 0 && errno != EINTR))
        break;
    }
    acl_sim_cleanup(w, ncomms);
    _exit(0);
  }
  close(p[0]);
  return p[1];
}

static bool pid_dead(const char *s)
{
  char *end;
  long pid = strtol(s, &end, 10);
  return end != s && pid > 0 && !acl_pid_alive((int)pid);
}

static void reap_feed(void *user, const char *name)
{
  (void)user;
  if (pid_dead(name + strlen("/autoccl-sim-")))
    unlink_own(NULL, name);
}

void acl_sim_reap_stale(const char *tmpdir)
{
  acl_shm_scan("/autoccl-sim-", reap_feed, NULL);
  DIR *d = opendir(tmpdir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "autoccl-sim.", 12) != 0 || !pid_dead(e->d_name + 12))
      continue;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
    rm_logdir(path);
  }
  closedir(d);
}
