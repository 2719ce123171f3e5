/* The measuring side of autoccl-bench: buffers, CUDA event timing per
 * iteration, result checking and the summary of a run. The launch models
 * (--procs, --single) are in launch.c, --trace in worker_trace.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "bench/bench.h"
#include "bench/gemm.h"
#include "core/clock.h"

_Static_assert((int)ncclInt8 == ACL_BENCH_DT_INT8 && (int)ncclUint8 == ACL_BENCH_DT_UINT8 &&
                   (int)ncclInt32 == ACL_BENCH_DT_INT32 && (int)ncclUint32 == ACL_BENCH_DT_UINT32 &&
                   (int)ncclInt64 == ACL_BENCH_DT_INT64 && (int)ncclUint64 == ACL_BENCH_DT_UINT64 &&
                   (int)ncclFloat16 == ACL_BENCH_DT_HALF &&
                   (int)ncclFloat32 == ACL_BENCH_DT_FLOAT &&
                   (int)ncclFloat64 == ACL_BENCH_DT_DOUBLE &&
                   (int)ncclBfloat16 == ACL_BENCH_DT_BF16,
               "datatype enum must match ncclDataType_t");
_Static_assert((int)ncclSum == ACL_BENCH_OP_SUM && (int)ncclProd == ACL_BENCH_OP_PROD &&
                   (int)ncclMax == ACL_BENCH_OP_MAX && (int)ncclMin == ACL_BENCH_OP_MIN,
               "op enum must match ncclRedOp_t");

#include "bench/worker_int.h"

void acl_bench_set_err(struct shared *sh, int rank, const char *fmt, ...)
{
  if (sh->errmsg[rank][0])
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sh->errmsg[rank], sizeof(sh->errmsg[rank]), fmt, ap);
  va_end(ap);
}

static ncclResult_t launch(const acl_bench_cfg_t *c, struct gpu *g, size_t count, int nranks)
{
  ncclDataType_t dt = (ncclDataType_t)c->dt;
  ncclRedOp_t op = (ncclRedOp_t)c->op;
  switch (c->coll) {
  case ACL_BENCH_COLL_ALL_REDUCE:
    return ncclAllReduce(g->in, g->out, count, dt, op, g->comm, g->stream);
  case ACL_BENCH_COLL_ALL_GATHER:
    return ncclAllGather(g->in, g->out, count / (size_t)nranks, dt, g->comm, g->stream);
  case ACL_BENCH_COLL_REDUCE_SCATTER:
    return ncclReduceScatter(g->in, g->out, count / (size_t)nranks, dt, op, g->comm, g->stream);
  case ACL_BENCH_COLL_BROADCAST:
    return ncclBroadcast(g->in, g->out, count, dt, c->root, g->comm, g->stream);
  case ACL_BENCH_COLL_REDUCE:
    return ncclReduce(g->in, g->out, count, dt, op, c->root, g->comm, g->stream);
  default:
    return ncclInvalidArgument;
  }
}

/* where input and output live for this size (nccl-tests' in-place layout) */
static void place_buffers(const acl_bench_cfg_t *c, struct gpu *g, size_t count, int nranks)
{
  size_t es = acl_bench_dtype_size(c->dt), per = count / (size_t)nranks;
  char *send = g->send, *recv = g->recv;
  switch (c->coll) {
  case ACL_BENCH_COLL_ALL_GATHER:
    g->out = recv;
    g->out_elems = count;
    g->in = c->inplace ? recv + (size_t)g->rank * per * es : send;
    g->in_elems = per;
    break;
  case ACL_BENCH_COLL_REDUCE_SCATTER:
    g->in = send;
    g->in_elems = count;
    g->out = c->inplace ? send + (size_t)g->rank * per * es : recv;
    g->out_elems = per;
    break;
  default: /* all_reduce, broadcast, reduce */
    g->out = recv;
    g->out_elems = count;
    g->in = c->inplace ? recv : send;
    g->in_elems = count;
    break;
  }
  g->check_elems = (c->coll == ACL_BENCH_COLL_REDUCE && g->rank != c->root) ? 0 : g->out_elems;
}

static void print_device_line(struct gpu *g)
{
  struct cudaDeviceProp p;
  char bus[32] = "?";
  if (cudaGetDeviceProperties(&p, g->dev) == cudaSuccess) {
    snprintf(bus, sizeof(bus), "%04x:%02x:%02x", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    printf("#  rank %2d  pid %7d  device %2d [%s] %s\n", g->rank, (int)getpid(), g->dev, bus,
           p.name);
  }
  fflush(stdout);
}

static void summarize_size(const acl_bench_cfg_t *c, struct shared *sh, int s,
                           acl_bench_size_result_t *r)
{
  int T = sh->T, n = sh->nranks;
  r->bytes = sh->sizes[s];
  r->count = sh->sizes[s] / acl_bench_dtype_size(c->dt);
  r->status = 0;
  r->wrong = 0;
  r->gemm_tflops = -1;
  double gsum = 0;
  int gn = 0;
  for (int k = 0; k < n; k++) {
    if (sh->status[k][s])
      r->status = sh->status[k][s];
    r->wrong += sh->wrong[k][s];
    if (c->gemm && sh->gemm_tf[k][s] >= 0) {
      gsum += sh->gemm_tf[k][s];
      gn++;
    }
  }
  if (gn)
    r->gemm_tflops = gsum / gn;
  double *t = malloc(sizeof(double) * (size_t)T);
  if (!t) {
    r->status = -1;
    return;
  }
  double sum = 0;
  for (int i = 0; i < T; i++) {
    double m = 0;
    for (int k = 0; k < n; k++) {
      double v = times_of(sh, k, s)[i];
      if (v > m)
        m = v;
    }
    t[i] = m;
    sum += m;
  }
  r->time_incl_us = sum / T;
  int first = T - c->iters;
  double mn = INFINITY;
  for (int i = first; i < T; i++)
    if (t[i] < mn)
      mn = t[i];
  r->time_min_us = mn;
  r->time_us = acl_bench_median_of(t + first, c->iters);
  free(t);
  if (r->status) {
    r->time_us = r->time_incl_us = r->time_min_us = NAN;
  }
}

/* One call of the collective on every local GPU (a group around them in
 * --single); on failure sets the error, naming the size sz, and returns -1. */
static int launch_all(const acl_bench_cfg_t *c, struct shared *sh, struct gpu *gs, int nlocal,
                      size_t count, int n, const char *sz)
{
  ncclResult_t lr = ncclSuccess;
  int bad = 0;
  if (nlocal > 1)
    lr = ncclGroupStart();
  for (int j = 0; j < nlocal && lr == ncclSuccess; j++) {
    lr = launch(c, &gs[j], count, n);
    bad = j;
  }
  if (nlocal > 1) {
    ncclResult_t er = ncclGroupEnd(); /* always close the group */
    if (lr == ncclSuccess)
      lr = er;
  }
  if (lr == ncclSuccess)
    return 0;
  const char *last = ncclGetLastError(gs[bad].comm);
  set_err(sh, gs[bad].rank, "rank %d: %s %s bytes: %s%s%s", gs[bad].rank,
          acl_bench_coll_name(c->coll), sz, ncclGetErrorString(lr), last && *last ? ": " : "",
          last ? last : "");
  return -1;
}

/* ncalls untimed collectives on every local GPU, then a sync; 0 or -1. */
static int run_untimed(const acl_bench_cfg_t *c, struct shared *sh, struct gpu *gs, int nlocal,
                       size_t count, int n, const char *sz, long ncalls)
{
  for (long i = 0; i < ncalls; i++)
    if (launch_all(c, sh, gs, nlocal, count, n, sz))
      return -1;
  for (int j = 0; j < nlocal; j++) {
    if (cudaSetDevice(gs[j].dev) != cudaSuccess ||
        cudaStreamSynchronize(gs[j].stream) != cudaSuccess) {
      set_err(sh, gs[j].rank, "rank %d: warm-up: stream synchronize failed", gs[j].rank);
      return -1;
    }
  }
  return 0;
}

/* --warmup-time: about c->warmup_s seconds of untimed calls of size s. The
 * ranks of --procs run in separate processes with their own clocks, so rank
 * 0 times 50 calls and publishes the count the others use. */
static int warmup_by_time(const acl_bench_cfg_t *c, struct shared *sh, struct gpu *gs, int nlocal,
                          int s, size_t count, int n, const char *sz)
{
  const long calib = 50;
  /* the first calls of a size (and of a run) pay one-time set-up */
  if (run_untimed(c, sh, gs, nlocal, count, n, sz, 5))
    return -1;
  double t0 = acl_mono_s();
  if (run_untimed(c, sh, gs, nlocal, count, n, sz, calib))
    return -1;
  double per = (acl_mono_s() - t0) / (double)calib;
  if (gs[0].rank == 0) {
    double want = per > 0 ? c->warmup_s / per - (double)calib - 5.0 : 0.0;
    sh->warm_calls[s] = want < 0 ? 0 : want > 1e8 ? 100000000L : (long)want;
    atomic_store(&sh->warm_ready, s + 1);
  } else {
    double deadline = acl_mono_s() + 600.0;
    while (atomic_load(&sh->warm_ready) < s + 1) {
      if (acl_mono_s() > deadline) {
        set_err(sh, gs[0].rank, "rank %d: warm-up: rank 0 never published its call count",
                gs[0].rank);
        return -1;
      }
      usleep(200);
    }
  }
  return run_untimed(c, sh, gs, nlocal, count, n, sz, sh->warm_calls[s]);
}

/* Runs all sizes on the local GPUs (1 in --procs, all in --single). */
int acl_bench_run_local(const acl_bench_cfg_t *c, struct shared *sh, struct gpu *gs, int nlocal,
                        int reporter)
{
  int n = sh->nranks, T = sh->T;
  size_t maxbytes = sh->sizes[sh->nsizes - 1];
  int failed = 0, s = 0;
  int maxprint = 10;
  acl_bench_run_summary_t *rowbuf = NULL;
  for (int j = 0; j < nlocal; j++) {
    struct gpu *g = &gs[j];
    CTRY(g->rank, cudaSetDevice(g->dev));
    CTRY(g->rank, cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CTRY(g->rank, cudaMalloc(&g->send, maxbytes));
    CTRY(g->rank, cudaMalloc(&g->recv, maxbytes));
    CTRY(g->rank, cudaMemset(g->send, 0, maxbytes));
    CTRY(g->rank, cudaMemset(g->recv, 0, maxbytes));
    g->nev = T < EVENT_CHUNK ? T : EVENT_CHUNK;
    for (int i = 0; i < g->nev; i++) {
      CTRY(g->rank, cudaEventCreate(&g->ev0[i]));
      CTRY(g->rank, cudaEventCreate(&g->ev1[i]));
    }
    if (c->check) {
      CTRY(g->rank, cudaMallocHost(&g->hsend, maxbytes));
      CTRY(g->rank, cudaMallocHost(&g->hrecv, maxbytes));
    }
    if (!c->internal_child)
      print_device_line(g);
  }
  for (int j = 0; j < nlocal; j++) {
    if (!c->gemm)
      break;
    char err[300];
    gs[j].gemm = acl_bench_gemm_start(gs[j].dev, c->gemm_n, c->gemm_duty, err, sizeof(err));
    if (!gs[j].gemm) {
      set_err(sh, gs[j].rank, "rank %d: %s", gs[j].rank, err);
      goto fail;
    }
    sh->gemm_iso[gs[j].rank] = acl_bench_gemm_iso_tflops(gs[j].gemm);
  }
  rowbuf = calloc(1, sizeof(*rowbuf));
  if (!rowbuf)
    goto fail;

  for (s = 0; s < sh->nsizes; s++) {
    size_t bytes = sh->sizes[s], count = bytes / acl_bench_dtype_size(c->dt);
    char sz[32];
    acl_bench_format_size(bytes, sz, sizeof(sz));
    if (reporter)
      acl_bench_progress(c, "%s %s: size %s (%d/%d), %d iterations", c->label,
                         acl_bench_coll_name(c->coll), sz, s + 1, sh->nsizes, T);
    for (int j = 0; j < nlocal; j++)
      place_buffers(c, &gs[j], count, n);
    if (c->warmup_s > 0 && !c->check && warmup_by_time(c, sh, gs, nlocal, s, count, n, sz))
      goto fail;
    double t0 = acl_mono_s();
    for (int j = 0; j < nlocal; j++)
      gs[j].gemm_done0 = gs[j].gemm ? acl_bench_gemm_done(gs[j].gemm) : 0;
    int k = 0, base = 0;
    for (int it = 0; it < T; it++) {
      if (c->check) {
        for (int j = 0; j < nlocal; j++) {
          struct gpu *g = &gs[j];
          size_t es = acl_bench_dtype_size(c->dt);
          acl_bench_pattern_fill(c, n, g->rank, it, g->hsend, g->in_elems);
          CTRY(g->rank, cudaSetDevice(g->dev));
          CTRY(g->rank, cudaMemsetAsync(g->out, 0x7f, g->out_elems * es, g->stream));
          CTRY(g->rank, cudaMemcpyAsync(g->in, g->hsend, g->in_elems * es, cudaMemcpyHostToDevice,
                                        g->stream));
        }
      }
      for (int j = 0; j < nlocal; j++) {
        CTRY(gs[j].rank, cudaSetDevice(gs[j].dev));
        CTRY(gs[j].rank, cudaEventRecord(gs[j].ev0[k], gs[j].stream));
      }
      if (launch_all(c, sh, gs, nlocal, count, n, sz))
        goto fail;
      for (int j = 0; j < nlocal; j++) {
        CTRY(gs[j].rank, cudaSetDevice(gs[j].dev));
        CTRY(gs[j].rank, cudaEventRecord(gs[j].ev1[k], gs[j].stream));
      }
      if (c->check) {
        size_t es = acl_bench_dtype_size(c->dt);
        for (int j = 0; j < nlocal; j++) {
          struct gpu *g = &gs[j];
          CTRY(g->rank, cudaSetDevice(g->dev));
          if (g->check_elems)
            CTRY(g->rank, cudaMemcpyAsync(g->hrecv, g->out, g->check_elems * es,
                                          cudaMemcpyDeviceToHost, g->stream));
        }
        for (int j = 0; j < nlocal; j++) {
          struct gpu *g = &gs[j];
          CTRY(g->rank, cudaSetDevice(g->dev));
          CTRY(g->rank, cudaStreamSynchronize(g->stream));
          sh->wrong[g->rank][s] +=
              acl_bench_check_output(c, n, g->rank, count, it, g->hrecv, g->check_elems, &maxprint);
        }
      }
      k++;
      if (k == gs[0].nev || it == T - 1) {
        for (int j = 0; j < nlocal; j++) {
          struct gpu *g = &gs[j];
          CTRY(g->rank, cudaSetDevice(g->dev));
          CTRY(g->rank, cudaEventSynchronize(g->ev1[k - 1]));
          double *dst = times_of(sh, g->rank, s);
          for (int i = 0; i < k; i++) {
            float ms = 0;
            CTRY(g->rank, cudaEventElapsedTime(&ms, g->ev0[i], g->ev1[i]));
            dst[base + i] = 1e3 * (double)ms;
          }
        }
        base += k;
        k = 0;
      }
    }
    double t1 = acl_mono_s();
    for (int j = 0; j < nlocal; j++)
      sh->wall_s[gs[j].rank][s] = t1 - t0;
    for (int j = 0; j < nlocal; j++) {
      struct gpu *g = &gs[j];
      ncclResult_t ae = ncclSuccess;
      NTRY(g->rank, g->comm, ncclCommGetAsyncError(g->comm, &ae));
      if (ae != ncclSuccess) {
        set_err(sh, g->rank, "rank %d: asynchronous NCCL error: %s", g->rank,
                ncclGetErrorString(ae));
        goto fail;
      }
      /* GEMM throughput during this size, counted in whole GEMMs: only
       * meaningful when the window spans at least 10 of them */
      sh->gemm_tf[g->rank][s] = -1.0;
      if (g->gemm && acl_bench_gemm_iso_tflops(g->gemm) > 0) {
        double one =
            acl_bench_gemm_flops_per_call(g->gemm) / (acl_bench_gemm_iso_tflops(g->gemm) * 1e12);
        if (t1 - t0 >= 10.0 * one)
          sh->gemm_tf[g->rank][s] = (double)(acl_bench_gemm_done(g->gemm) - g->gemm_done0) *
                                    acl_bench_gemm_flops_per_call(g->gemm) / (t1 - t0) / 1e12;
      }
      atomic_store(&sh->size_done[g->rank], s + 1);
    }
    if (reporter && !c->internal_child) {
      /* wait (bounded) for the other ranks' times of this size */
      double deadline = acl_mono_s() + 60.0;
      for (int r = 0; r < n; r++)
        while (atomic_load(&sh->size_done[r]) < s + 1 && acl_mono_s() < deadline)
          usleep(100);
      summarize_size(c, sh, s, &rowbuf->res[0]);
      acl_bench_progress_done(c);
      acl_bench_print_table_row(stdout, c, n, &rowbuf->res[0]);
    }
  }
  goto cleanup;
fail:
  failed = 1;
  for (int j = 0; j < nlocal; j++) {
    for (int s2 = s; s2 < sh->nsizes; s2++)
      sh->status[gs[j].rank][s2] = 1;
    atomic_store(&sh->size_done[gs[j].rank], sh->nsizes);
  }
cleanup:
  if (reporter)
    acl_bench_progress_done(c);
  for (int j = 0; j < nlocal; j++) {
    struct gpu *g = &gs[j];
    if (g->gemm) {
      char err[300];
      if (acl_bench_gemm_stop(g->gemm, &sh->gemm_run[g->rank], &sh->gemm_duty[g->rank], err,
                              sizeof(err))) {
        set_err(sh, g->rank, "rank %d: %s", g->rank, err);
        failed = 1;
      }
      g->gemm = NULL;
    }
  }
  for (int j = 0; j < nlocal; j++) {
    struct gpu *g = &gs[j];
    cudaSetDevice(g->dev);
    if (g->stream)
      cudaStreamSynchronize(g->stream);
  }
  for (int j = 0; j < nlocal; j++) {
    struct gpu *g = &gs[j];
    if (g->comm) {
      if (failed)
        ncclCommAbort(g->comm);
      else
        ncclCommDestroy(g->comm);
      g->comm = NULL;
    }
  }
  for (int j = 0; j < nlocal; j++) {
    struct gpu *g = &gs[j];
    cudaSetDevice(g->dev);
    for (int i = 0; i < g->nev; i++) {
      if (g->ev0[i])
        cudaEventDestroy(g->ev0[i]);
      if (g->ev1[i])
        cudaEventDestroy(g->ev1[i]);
    }
    if (g->send)
      cudaFree(g->send);
    if (g->recv)
      cudaFree(g->recv);
    if (g->hsend)
      cudaFreeHost(g->hsend);
    if (g->hrecv)
      cudaFreeHost(g->hrecv);
    if (g->stream)
      cudaStreamDestroy(g->stream);
  }
  free(rowbuf);
  return failed ? ACL_BENCH_EXIT_RUNTIME : 0;
}

static void summarize(const acl_bench_cfg_t *c, struct shared *sh, acl_bench_run_summary_t *s)
{
  memset(s, 0, sizeof(*s));
  s->nsizes = sh->nsizes;
  for (int i = 0; i < sh->nsizes; i++)
    summarize_size(c, sh, i, &s->res[i]);
  int gn = 0;
  for (int r = 0; r < sh->nranks; r++) {
    if (sh->gemm_iso[r] > 0) {
      s->gemm_iso_tflops += sh->gemm_iso[r];
      s->gemm_run_tflops += sh->gemm_run[r];
      s->gemm_duty_seen += sh->gemm_duty[r];
      gn++;
    }
  }
  if (gn) {
    s->gemm_iso_tflops /= gn;
    s->gemm_run_tflops /= gn;
    s->gemm_duty_seen /= gn;
  }
  s->nccl_version = sh->nccl_version;
  for (int r = 0; r < sh->nranks; r++)
    if (sh->errmsg[r][0]) {
      snprintf(s->errmsg, sizeof(s->errmsg), "%s", sh->errmsg[r]);
      break;
    }
}

int acl_bench_nccl_version(const acl_bench_cfg_t *c)
{
  int v = 0;
  if (c->fake)
    return c->fake_nccl_version;
  return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

int acl_bench_worker_main(const acl_bench_cfg_t *c)
{
  char tpath[ACL_BENCH_PATH_MAX + 32], tprobe[ACL_BENCH_PATH_MAX + 64];
  const char *trace = acl_bench_trace_setup(c, tpath, sizeof(tpath), tprobe, sizeof(tprobe));
  size_t sizes[ACL_BENCH_MAX_SIZES];
  int n = c->ngpus;
  int nsizes = acl_bench_sizes(c, n, sizes, ACL_BENCH_MAX_SIZES);
  int T = c->warmup + c->iters;
  size_t bytes = sizeof(struct shared) + sizeof(double) * (size_t)n * (size_t)nsizes * (size_t)T;
  struct shared *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    fprintf(stderr, ACL_BENCH_NAME ": error: cannot map %zu bytes for results: %s\n", bytes,
            strerror(errno));
    return ACL_BENCH_EXIT_RUNTIME;
  }
  sh->nranks = n;
  sh->nsizes = nsizes;
  sh->T = T;
  memcpy(sh->sizes, sizes, sizeof(size_t) * (size_t)nsizes);
  sh->nccl_version = acl_bench_nccl_version(c);
  if (!c->internal_child)
    acl_bench_print_table_header(stdout, c, n);

  int rc;
  if (c->fake) {
    rc = 0;
    for (int s = 0; s < nsizes; s++) {
      int st = 0;
      for (int r = 0; r < n; r++)
        acl_bench_fake_times(c, n, sizes[s], T, times_of(sh, r, s), &st);
      for (int r = 0; r < n; r++) {
        sh->status[r][s] = st;
        sh->gemm_tf[r][s] = c->gemm ? 600.0 : -1.0;
        sh->wall_s[r][s] = 0;
        for (int i = 0; i < T; i++)
          sh->wall_s[r][s] += times_of(sh, r, s)[i] * 1e-6;
      }
      if (st && !sh->errmsg[0][0])
        set_err(sh, 0, "fake: unsupported configuration");
    }
    if (c->gemm)
      for (int r = 0; r < n; r++) {
        sh->gemm_iso[r] = 700.0;
        sh->gemm_run[r] = 600.0;
        sh->gemm_duty[r] = c->gemm_duty;
      }
    if (!c->internal_child) {
      acl_bench_size_result_t row;
      for (int s = 0; s < nsizes; s++) {
        summarize_size(c, sh, s, &row);
        acl_bench_print_table_row(stdout, c, n, &row);
      }
    }
  } else if (c->procs) {
    rc = acl_bench_procs_run(c, sh);
  } else {
    rc = acl_bench_single_run(c, sh);
  }

  acl_bench_run_summary_t *sum = calloc(1, sizeof(*sum));
  if (!sum) {
    munmap(sh, bytes);
    return ACL_BENCH_EXIT_RUNTIME;
  }
  summarize(c, sh, sum);
  if (trace)
    acl_bench_trace_finish(c, sh, trace, tprobe);
  long long wrong = 0;
  int any_fail = 0;
  for (int s = 0; s < nsizes; s++) {
    wrong += sum->res[s].wrong;
    if (sum->res[s].status)
      any_fail = 1;
  }
  if (any_fail && rc == 0)
    rc = ACL_BENCH_EXIT_RUNTIME;
  if (wrong > 0 && rc == 0)
    rc = ACL_BENCH_EXIT_WRONG;
  sum->rc = rc;
  if (c->internal_child) {
    acl_bench_print_child_lines(stdout, sum);
  } else {
    acl_bench_print_run_footer(stdout, c, n, sum);
    if (sum->errmsg[0])
      fprintf(stderr, ACL_BENCH_NAME ": error: %s\n", sum->errmsg);
    if (c->json)
      acl_bench_print_run_json(stdout, c, n, sum);
  }
  free(sum);
  munmap(sh, bytes);
  /* in the compare driver's children the driver decides what a failed
   * size means (an unsupported sweep config is not an error) */
  return rc;
}
