/* Private to bench/worker.c (sizes, timing, checking) and bench/launch.c
 * (the two launch models): the results shared between forked ranks, one
 * GPU's state, and the error helpers. */
#ifndef ACL_BENCH_WORKER_INT_H
#define ACL_BENCH_WORKER_INT_H

#include <stdatomic.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "bench/bench.h"
#include "bench/gemm.h"
#define EVENT_CHUNK 1024

/* Lives in MAP_SHARED memory so forked ranks write their results where the
 * parent reads them. */
struct shared {
  int nranks, nsizes, T;
  size_t sizes[ACL_BENCH_MAX_SIZES];
  atomic_int size_done[ACL_BENCH_MAX_RANKS];
  int status[ACL_BENCH_MAX_RANKS][ACL_BENCH_MAX_SIZES];
  long long wrong[ACL_BENCH_MAX_RANKS][ACL_BENCH_MAX_SIZES];
  double gemm_tf[ACL_BENCH_MAX_RANKS][ACL_BENCH_MAX_SIZES];
  double gemm_iso[ACL_BENCH_MAX_RANKS], gemm_run[ACL_BENCH_MAX_RANKS],
      gemm_duty[ACL_BENCH_MAX_RANKS];
  int nccl_version;
  char errmsg[ACL_BENCH_MAX_RANKS][256];
  /* --warmup-time: rank 0 calibrates the untimed calls of each size and
   * publishes the count, so every rank makes the same number of calls */
  long warm_calls[ACL_BENCH_MAX_SIZES];
  atomic_int warm_ready;
  /* --trace: host time of a size's T timed iterations */
  double wall_s[ACL_BENCH_MAX_RANKS][ACL_BENCH_MAX_SIZES];
  double times[]; /* [rank][size][T], microseconds */
};

static inline double *times_of(struct shared *sh, int rank, int s)
{
  return sh->times + ((size_t)rank * (size_t)sh->nsizes + (size_t)s) * (size_t)sh->T;
}

struct gpu {
  int dev, rank;
  ncclComm_t comm;
  cudaStream_t stream;
  void *send, *recv;
  void *hsend, *hrecv;
  cudaEvent_t ev0[EVENT_CHUNK], ev1[EVENT_CHUNK];
  int nev;
  acl_bench_gemm_t *gemm;
  long long gemm_done0;
  /* per size */
  void *in, *out;
  size_t in_elems, out_elems, check_elems;
};

/* The first error of a rank (later ones are consequences). */
void acl_bench_set_err(struct shared *sh, int rank, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define set_err acl_bench_set_err

#define CTRY(rank, call)                                                                           \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      set_err(sh, (rank), "rank %d: %s: %s", (rank), #call, cudaGetErrorString(e_));               \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

#define NTRY(rank, comm, call)                                                                     \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      const char *last_ = ncclGetLastError(comm);                                                  \
      set_err(sh, (rank), "rank %d: %s: %s%s%s", (rank), #call, ncclGetErrorString(r_),            \
              last_ &&*last_ ? ": " : "", last_ ? last_ : "");                                     \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

/* worker.c: runs all sizes on the local GPUs (1 in --procs, all in --single). */
int acl_bench_run_local(const acl_bench_cfg_t *c, struct shared *sh, struct gpu *gs, int nlocal,
                        int reporter);
/* launch.c: the two launch models; 0 or an exit code, errors in sh. */
int acl_bench_single_run(const acl_bench_cfg_t *c, struct shared *sh);
int acl_bench_procs_run(const acl_bench_cfg_t *c, struct shared *sh);
/* worker_trace.c: --trace / --trace-file: the file's path (NULL: no
 * trace), the probe's result file and the plugins set for it; then the
 * trace written from the shared results. */
const char *acl_bench_trace_setup(const acl_bench_cfg_t *c, char *path, size_t len, char *probe,
                                  size_t plen);
void acl_bench_trace_finish(const acl_bench_cfg_t *c, struct shared *sh, const char *path,
                            const char *probe);

#endif
