/* Communicator churn (--churn-every) in a rank process: the communicators
 * made again, and the process's resources measured (sim/rank_int.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/procres.h"
#include "sim/rank_int.h"

/* The generations at which RSS is marked: the warm-up's last, then evenly
 * spaced up to the run's last (--steps tells how many there will be; a
 * --duration run marks only the warm-up's). */
static uint64_t churn_total(const acl_sim_opts_t *o)
{
  return o->steps > 1 ? (o->steps - 1) / o->churn_every : 0;
}

static bool churn_is_mark(const acl_sim_opts_t *o, uint32_t churns)
{
  if (churns < ACL_SIM_CHURN_WARM)
    return false;
  if (churns == ACL_SIM_CHURN_WARM)
    return true;
  uint64_t total = churn_total(o);
  if (total < ACL_SIM_CHURN_WARM + ACL_SIM_CHURN_MARKS - 1)
    return false;
  uint64_t span = (total - ACL_SIM_CHURN_WARM) / (ACL_SIM_CHURN_MARKS - 1);
  return (churns - ACL_SIM_CHURN_WARM) % span == 0;
}

/* The process's resources (ACL_SIM_RES_*). The plugin's own threads (the
 * endpoint, its watcher) open descriptors for moments, so the counts are
 * the least of `reads` readings 1 ms apart: a transient one is not a leak. */
static void churn_measure(uint64_t m[4], int reads)
{
  acl_procres_t r = {0};
  for (int k = 0; k < reads; k++) {
    if (k)
      nanosleep(&(struct timespec){0, 1000000}, NULL);
    acl_procres_read(&r);
    uint64_t v[3] = {[ACL_SIM_RES_SHM_MAPS] = (uint64_t)r.shm_maps,
                     [ACL_SIM_RES_FDS] = (uint64_t)r.fds,
                     [ACL_SIM_RES_THREADS] = (uint64_t)r.threads};
    for (int i = 0; i < 3; i++)
      m[i] = k == 0 || v[i] < m[i] ? v[i] : m[i];
  }
  m[ACL_SIM_RES_RSS_KB] = (uint64_t)r.rss_kb;
}

/* Communicator churn (--churn-every): every rank this thread drives
 * finalizes its communicators and creates them again under the next
 * generation's ids, as a job calling new_group or ncclCommSplit in a loop
 * does; with several, communicator 0 is the job's world communicator and
 * lives throughout. Then the process's resources are recorded
 * (rank_drv_t.slot). */
void acl_sim_rank_churn(rank_drv_t *ds, int n, bool whole_process)
{
  const acl_sim_opts_t *o = ds[0].w->o;
  int from = o->ncomms > 1 ? 1 : 0;
  char err[256];
  for (int i = 0; i < n; i++) {
    for (int c = o->ncomms - 1; c >= from; c--)
      acl_sim_rank_comm_fini(&ds[i], c);
    for (int c = from; c < o->ncomms; c++) {
      comm_rank_t *cr = &ds[i].comms[c];
      uint64_t ncalls = cr->ncalls; /* noise seeds: the same on every rank */
      uint32_t gen = cr->gen + 1;
      memset(cr, 0, sizeof(*cr));
      cr->ncalls = ncalls;
      cr->gen = gen;
      if (acl_sim_rank_comm_init(&ds[i], c, err, sizeof(err)) != 0 && !ds[i].slot->error[0])
        snprintf(ds[i].slot->error, sizeof(ds[i].slot->error), "%.255s", err);
    }
  }
  for (int i = 0; i < n; i++) {
    acl_sim_rank_slot_t *s = ds[i].slot;
    s->churns++;
    if (!whole_process)
      continue;
    /* With --steps the marks include the last generation: only they (and
     * the first) are measured; a --duration run measures every one. */
    bool mark = churn_is_mark(o, s->churns);
    bool marks_known = churn_total(o) >= ACL_SIM_CHURN_WARM + ACL_SIM_CHURN_MARKS - 1;
    if (marks_known && !mark && s->churns != 1)
      continue;
    uint64_t m[4];
    churn_measure(m, mark ? 3 : 1);
    if (s->churns == 1 || s->churns == ACL_SIM_CHURN_WARM)
      memcpy(s->churn_first, m, sizeof(m));
    memcpy(s->churn_last, m, sizeof(m));
    s->churn_measured = true;
    if (mark && s->churn_nmarks < ACL_SIM_CHURN_MARKS) {
      s->churn_mark_at[s->churn_nmarks] = s->churns;
      s->churn_mark_rss_kb[s->churn_nmarks++] = m[ACL_SIM_RES_RSS_KB];
    }
  }
}
