#include "helpers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

uint64_t th_comm_id(int salt)
{
  static int counter;
  uint64_t x = ((uint64_t)getpid() << 20) ^ ((uint64_t)++counter << 8) ^ (uint64_t)salt;
  x ^= (uint64_t)time(NULL) << 40;
  return x * 0x9e3779b97f4a7c15ull | 1;
}

void th_params(th_rank_t *r, uint64_t comm, int rank, int nranks, int nnodes, const char *ns)
{
  memset(r, 0, sizeof(*r));
  acl_config_defaults(&r->cfg);
  r->cfg.warmup_calls = 3;
  r->cfg.samples_per_cand = 3;
  r->cfg.timeout_ms = 5000;
  /* agreement while exploring, not the exploration budget (tests/tuner) */
  r->cfg.explore_budget_pct = ACL_CONFIG_BUDGET_PCT_MAX;
  r->p.comm_id = comm;
  r->p.nranks = nranks;
  r->p.nnodes = nnodes;
  r->p.rank = rank;
  r->p.cfg = &r->cfg;
  r->p.shm_ns = ns;
}

void th_cost(float cost[ACL_NUM_ALGO][ACL_NUM_PROTO], int bad_proto)
{
  for (int a = 0; a < ACL_NUM_ALGO; a++)
    for (int p = 0; p < ACL_NUM_PROTO; p++)
      cost[a][p] = (a == 2 || a == 3 || a == 4 || a == 5) ? -1.0f : 10.0f + (float)(a * 3 + p);
  if (bad_proto >= 0)
    cost[1][bad_proto] = -1.0f;
}

double th_duration(const acl_candidate_t *c, uint64_t nbytes, double noise)
{
  /* distinct subspaces, channel optimum at 24: the search has to walk */
  double base = 5e-6 + (double)nbytes / 100e9;
  int nc = c->nchannels ? c->nchannels : 16;
  double fa = c->algo >= 0 ? 0.6 + 0.2 * ((c->algo * 7 + c->proto * 3) % 5) : 1.0;
  double fc = 1.0 + 1.5 * ((nc - 24) / 24.0) * ((nc - 24) / 24.0);
  return base * fa * fc * (1.0 + 0.03 * noise);
}

acl_wkey_t th_key(uint64_t comm, int coll, uint64_t nbytes)
{
  acl_wkey_t k;
  memset(&k, 0, sizeof(k));
  k.comm_id = comm;
  k.coll = (uint8_t)coll;
  k.nbytes = nbytes;
  k.num_pipe_ops = 1;
  return k;
}

uint64_t th_pack(const acl_decision_t *d)
{
  return (uint64_t)d->cand_id << 48 | (uint64_t)(uint8_t)d->cand.algo << 40 |
         (uint64_t)(uint8_t)d->cand.proto << 32 | (uint64_t)(uint16_t)d->cand.nchannels << 16 |
         (d->widx == ACL_CONS_WIDX_NONE ? 0xffffu : (d->widx & 0xfffu));
}

int th_decide_n(acl_cons_t *c, const acl_wkey_t *k, int n, acl_decision_t *last, char *err)
{
  float cost[ACL_NUM_ALGO][ACL_NUM_PROTO];
  th_cost(cost, -1);
  for (int i = 0; i < n; i++)
    if (acl_cons_decide(c, k, cost, last, err, 256) != 0)
      return -1;
  return 0;
}

void *th_shared(size_t bytes)
{
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

int th_wait(pid_t pid, int timeout_ms)
{
  double end = acl_mono_s() + timeout_ms / 1000.0;
  for (;;) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0)
      return -2;
    if (acl_mono_s() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    usleep(2000);
  }
}

int th_free_port(const char *host)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, host, &a.sin_addr);
  socklen_t l = sizeof(a);
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &l) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

uint64_t th_rand(uint64_t *s)
{
  uint64_t x = *s += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void th_feed_init(th_feed_t *f, uint64_t seed)
{
  memset(f, 0, sizeof(*f));
  f->rng = seed;
}

void th_feed_call(th_feed_t *f, acl_cons_t *c, const acl_decision_t *d, uint64_t nbytes,
                  int keep_pct)
{
  f->tick++;
  for (int i = 0; i < f->n;) {
    if (f->q[i].due <= f->tick || f->n == 64) {
      acl_cons_observe(c, &(acl_cons_obs_t){.widx = f->q[i].widx,
                                            .call_idx = f->q[i].call,
                                            .cand_id = f->q[i].cand,
                                            .seconds = f->q[i].sec,
                                            .overlap = 0.1f,
                                            .ran_algo = -1,
                                            .ran_proto = -1});
      f->sent++;
      f->q[i] = f->q[--f->n];
    } else {
      i++;
    }
  }
  if (d->widx == ACL_CONS_WIDX_NONE || (int)(th_rand(&f->rng) % 100) >= keep_pct)
    return;
  double noise = (double)(th_rand(&f->rng) % 1000) / 1000.0;
  f->q[f->n].widx = d->widx;
  f->q[f->n].call = d->call_idx;
  f->q[f->n].cand = d->cand_id;
  f->q[f->n].sec = th_duration(&d->cand, nbytes, noise);
  f->q[f->n].due = f->tick + (uint32_t)(th_rand(&f->rng) % 5);
  f->n++;
}
