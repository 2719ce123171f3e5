/* The two launch models of autoccl-bench: --single (one process,
 * ncclCommInitAll, all GPUs) and --procs (fork one process per GPU, the
 * ncclUniqueId over a pipe, ncclCommInitRank, as PyTorch does). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/worker_int.h"
#include "core/clock.h"

static int check_devices(const acl_bench_cfg_t *c, struct shared *sh, int rank)
{
  int count = 0, need = acl_bench_gpus_needed(c);
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    set_err(sh, rank, "no usable CUDA device: %s", cudaGetErrorString(e));
    return -1;
  }
  if (count < need) {
    if (c->ranks_per_gpu > 1)
      set_err(sh, rank, "-g %d --ranks-per-gpu %d needs %d GPUs, but %d %s visible", c->ngpus,
              c->ranks_per_gpu, need, count, count == 1 ? "is" : "are");
    else
      set_err(sh, rank,
              "-g %d needs %d GPUs, but %d %s visible (--ranks-per-gpu %d runs %d ranks per "
              "GPU with NCCL 2.30.3 or later)",
              c->ngpus, need, count, count == 1 ? "is" : "are",
              (c->ngpus + count - 1) / (count > 0 ? count : 1), c->ngpus);
    return -1;
  }
  return 0;
}

static void fail_all_sizes(struct shared *sh, int rank)
{
  for (int s = 0; s < sh->nsizes; s++)
    sh->status[rank][s] = 1;
  atomic_store(&sh->size_done[rank], sh->nsizes);
}

int acl_bench_single_run(const acl_bench_cfg_t *c, struct shared *sh)
{
  int n = sh->nranks;
  struct gpu *gs = calloc((size_t)n, sizeof(struct gpu));
  ncclComm_t comms[ACL_BENCH_MAX_RANKS];
  int devs[ACL_BENCH_MAX_RANKS];
  if (!gs)
    return ACL_BENCH_EXIT_RUNTIME;
  if (check_devices(c, sh, 0)) {
    for (int r = 0; r < n; r++)
      fail_all_sizes(sh, r);
    free(gs);
    return ACL_BENCH_EXIT_RUNTIME;
  }
  for (int r = 0; r < n; r++)
    devs[r] = acl_bench_rank_device(c, r);
  ncclResult_t nr = ncclCommInitAll(comms, n, devs);
  if (nr != ncclSuccess) {
    set_err(sh, 0, "ncclCommInitAll(%d ranks on %d GPUs): %s: %s", n, acl_bench_gpus_needed(c),
            ncclGetErrorString(nr), ncclGetLastError(NULL));
    for (int r = 0; r < n; r++)
      fail_all_sizes(sh, r);
    free(gs);
    return ACL_BENCH_EXIT_RUNTIME;
  }
  for (int r = 0; r < n; r++) {
    gs[r].dev = devs[r];
    gs[r].rank = r;
    gs[r].comm = comms[r];
  }
  int rc = acl_bench_run_local(c, sh, gs, n, 1);
  free(gs);
  return rc;
}

static int write_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
  char *p = buf;
  while (len) {
    ssize_t r = read(fd, p, len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    p += r;
    len -= (size_t)r;
  }
  return 0;
}

/* one rank in its own process */
static int rank_main(const acl_bench_cfg_t *c, struct shared *sh, int rank, int (*pipes)[2])
{
  int n = sh->nranks;
  ncclUniqueId id;
  struct gpu *g = calloc(1, sizeof(struct gpu));
  if (!g)
    return ACL_BENCH_EXIT_RUNTIME;
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      set_err(sh, 0, "ncclGetUniqueId: %s", ncclGetErrorString(r));
      memset(&id, 0, sizeof(id)); /* peers get a zero id and fail their init */
    }
    for (int k = 1; k < n; k++)
      if (write_all(pipes[k][1], &id, sizeof(id)))
        set_err(sh, 0, "cannot send the NCCL id to rank %d", k);
    for (int k = 1; k < n; k++)
      close(pipes[k][1]);
    if (r != ncclSuccess)
      goto fail;
  } else {
    if (read_all(pipes[rank][0], &id, sizeof(id))) {
      set_err(sh, rank, "rank %d: no NCCL id from rank 0", rank);
      goto fail;
    }
    close(pipes[rank][0]);
  }
  if (check_devices(c, sh, rank))
    goto fail;
  g->dev = acl_bench_rank_device(c, rank);
  {
    cudaError_t e = cudaSetDevice(g->dev);
    if (e != cudaSuccess) {
      set_err(sh, rank, "rank %d: cudaSetDevice(%d): %s", rank, g->dev, cudaGetErrorString(e));
      goto fail;
    }
  }
  g->rank = rank;
  {
    ncclResult_t r = ncclCommInitRank(&g->comm, n, id, rank);
    if (r != ncclSuccess) {
      set_err(sh, rank, "rank %d: ncclCommInitRank: %s: %s", rank, ncclGetErrorString(r),
              ncclGetLastError(NULL));
      goto fail;
    }
  }
  {
    int rc = acl_bench_run_local(c, sh, g, 1, rank == 0);
    free(g);
    return rc;
  }
fail:
  fail_all_sizes(sh, rank);
  free(g);
  return ACL_BENCH_EXIT_RUNTIME;
}

int acl_bench_procs_run(const acl_bench_cfg_t *c, struct shared *sh)
{
  int n = sh->nranks;
  int pipes[ACL_BENCH_MAX_RANKS][2];
  pid_t pids[ACL_BENCH_MAX_RANKS];
  memset(pipes, -1, sizeof(pipes));
  for (int k = 1; k < n; k++)
    if (pipe(pipes[k])) {
      set_err(sh, 0, "pipe: %s", strerror(errno));
      return ACL_BENCH_EXIT_RUNTIME;
    }
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    pid_t p = fork();
    if (p < 0) {
      set_err(sh, r, "fork: %s", strerror(errno));
      for (int k = 0; k < r; k++)
        kill(pids[k], SIGKILL);
      for (int k = 0; k < r; k++)
        waitpid(pids[k], NULL, 0);
      return ACL_BENCH_EXIT_RUNTIME;
    }
    if (p == 0) {
      /* child: keep only our pipe ends */
      for (int k = 1; k < n; k++) {
        if (r == 0) {
          close(pipes[k][0]);
        } else {
          close(pipes[k][1]);
          if (k != r)
            close(pipes[k][0]);
        }
      }
      int rc = rank_main(c, sh, r, pipes);
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
    pids[r] = p;
  }
  for (int k = 1; k < n; k++) {
    close(pipes[k][0]);
    close(pipes[k][1]);
  }
  /* wait; once one rank fails, give the others 20 s, then kill them (they
   * may be stuck in a collective with the dead rank) */
  int alive = n, rc = 0;
  int done[ACL_BENCH_MAX_RANKS] = {0};
  double fail_at = 0;
  while (alive > 0) {
    int st = 0;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (int r = 0; r < n; r++) {
        if (pids[r] != p || done[r])
          continue;
        done[r] = 1;
        alive--;
        int bad = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (bad) {
          if (WIFSIGNALED(st))
            set_err(sh, r, "rank %d killed by signal %d", r, WTERMSIG(st));
          else if (!sh->errmsg[r][0])
            set_err(sh, r, "rank %d exited with status %d", r, WEXITSTATUS(st));
          rc = ACL_BENCH_EXIT_RUNTIME;
          if (fail_at == 0)
            fail_at = acl_mono_s();
        }
      }
    } else if (p == 0) {
      usleep(20000);
      if (fail_at > 0 && acl_mono_s() - fail_at > 20.0) {
        for (int r = 0; r < n; r++)
          if (!done[r]) {
            set_err(sh, r, "rank %d killed after a peer failed", r);
            kill(pids[r], SIGKILL);
            fail_all_sizes(sh, r);
          }
        fail_at = acl_mono_s() + 1e9;
      }
    } else if (errno != EINTR) {
      break;
    }
  }
  return rc;
}
