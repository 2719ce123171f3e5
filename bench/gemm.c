/* cuBLAS bf16 GEMM interference: a host thread per GPU keeps a GEMM stream
 * busy (duty 1: two GEMMs always queued; duty d < 1: one GEMM, then the host
 * sleeps elapsed*(1-d)/d so the stream is busy a fraction d of the time). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "bench/bench.h"
#include "bench/gemm.h"
#include "core/clock.h"

struct acl_bench_gemm {
  int dev, n;
  double duty;
  cudaStream_t stream;
  cublasHandle_t handle;
  void *A, *B, *C;
  pthread_t thread;
  int started;
  atomic_int stop;
  atomic_llong done;
  atomic_llong busy_ns;
  double iso_tflops;
  double t_begin, t_end;
  atomic_int failed;
  char err[256];
};

double acl_bench_gemm_flops_per_call(const acl_bench_gemm_t *g)
{
  return 2.0 * (double)g->n * (double)g->n * (double)g->n;
}
double acl_bench_gemm_iso_tflops(const acl_bench_gemm_t *g) { return g->iso_tflops; }
long long acl_bench_gemm_done(acl_bench_gemm_t *g) { return atomic_load(&g->done); }

static int launch_gemm(acl_bench_gemm_t *g)
{
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t st = cublasGemmEx(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &alpha,
                                   g->A, CUDA_R_16BF, g->n, g->B, CUDA_R_16BF, g->n, &beta, g->C,
                                   CUDA_R_16BF, g->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    snprintf(g->err, sizeof(g->err), "cublasGemmEx failed: status %d", (int)st);
    return -1;
  }
  return 0;
}

#define GTRY(call)                                                                                 \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      snprintf(g->err, sizeof(g->err), "%s: %s", #call, cudaGetErrorString(e_));                   \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

static void sleep_s(double s)
{
  if (s <= 0)
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  nanosleep(&ts, NULL);
}

static void *gemm_thread(void *arg)
{
  acl_bench_gemm_t *g = arg;
  cudaEvent_t ev0[2] = {0, 0}, ev1[2] = {0, 0};
  int inflight[2] = {0, 0};
  GTRY(cudaSetDevice(g->dev));
  for (int i = 0; i < 2; i++) {
    GTRY(cudaEventCreateWithFlags(&ev0[i], cudaEventBlockingSync));
    GTRY(cudaEventCreateWithFlags(&ev1[i], cudaEventBlockingSync));
  }
  g->t_begin = acl_mono_s();
  for (long long k = 0; !atomic_load(&g->stop); k++) {
    int s = (int)(k & 1);
    if (g->duty >= 1.0) {
      if (inflight[s]) { /* wait for GEMM k-2 before queueing GEMM k */
        GTRY(cudaEventSynchronize(ev1[s]));
        float ms = 0;
        GTRY(cudaEventElapsedTime(&ms, ev0[s], ev1[s]));
        atomic_fetch_add(&g->busy_ns, (long long)(ms * 1e6));
        atomic_fetch_add(&g->done, 1);
        inflight[s] = 0;
      }
      GTRY(cudaEventRecord(ev0[s], g->stream));
      if (launch_gemm(g))
        goto fail;
      GTRY(cudaEventRecord(ev1[s], g->stream));
      inflight[s] = 1;
    } else {
      GTRY(cudaEventRecord(ev0[0], g->stream));
      if (launch_gemm(g))
        goto fail;
      GTRY(cudaEventRecord(ev1[0], g->stream));
      GTRY(cudaEventSynchronize(ev1[0]));
      float ms = 0;
      GTRY(cudaEventElapsedTime(&ms, ev0[0], ev1[0]));
      atomic_fetch_add(&g->busy_ns, (long long)(ms * 1e6));
      atomic_fetch_add(&g->done, 1);
      sleep_s(1e-3 * ms * (1.0 - g->duty) / g->duty);
    }
  }
  for (int s = 0; s < 2; s++) {
    if (!inflight[s])
      continue;
    GTRY(cudaEventSynchronize(ev1[s]));
    float ms = 0;
    GTRY(cudaEventElapsedTime(&ms, ev0[s], ev1[s]));
    atomic_fetch_add(&g->busy_ns, (long long)(ms * 1e6));
    atomic_fetch_add(&g->done, 1);
  }
  g->t_end = acl_mono_s();
  for (int i = 0; i < 2; i++) {
    cudaEventDestroy(ev0[i]);
    cudaEventDestroy(ev1[i]);
  }
  return NULL;
fail:
  g->t_end = acl_mono_s();
  atomic_store(&g->failed, 1);
  return NULL;
}

acl_bench_gemm_t *acl_bench_gemm_start(int dev, int n, double duty, char *err, size_t errlen)
{
  int prev = 0;
  cudaGetDevice(&prev);
  acl_bench_gemm_t *g = calloc(1, sizeof(*g));
  uint16_t *host = NULL;
  cudaEvent_t e0 = 0, e1 = 0;
  if (!g) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  g->dev = dev;
  g->n = n;
  g->duty = duty;
  size_t elems = (size_t)n * (size_t)n;
  GTRY(cudaSetDevice(dev));
  GTRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  GTRY(cudaMalloc(&g->A, elems * 2));
  GTRY(cudaMalloc(&g->B, elems * 2));
  GTRY(cudaMalloc(&g->C, elems * 2));
  host = malloc(elems * 2);
  if (!host) {
    snprintf(g->err, sizeof(g->err), "out of host memory for GEMM inputs");
    goto fail;
  }
  /* random values in [-1, 1): keeps tensor cores at realistic power */
  uint64_t x = 0x243F6A8885A308D3ull ^ (uint64_t)dev;
  for (size_t i = 0; i < elems; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    host[i] =
        acl_bench_float_to_bf16((float)((double)(x >> 11) * (1.0 / 4503599627370496.0)) - 1.0f);
  }
  GTRY(cudaMemcpy(g->A, host, elems * 2, cudaMemcpyHostToDevice));
  GTRY(cudaMemcpy(g->B, host, elems * 2, cudaMemcpyHostToDevice));
  GTRY(cudaMemset(g->C, 0, elems * 2));
  free(host);
  host = NULL;
  {
    cublasStatus_t st = cublasCreate(&g->handle);
    if (st != CUBLAS_STATUS_SUCCESS) {
      snprintf(g->err, sizeof(g->err), "cublasCreate failed: status %d", (int)st);
      goto fail;
    }
    st = cublasSetStream(g->handle, g->stream);
    if (st != CUBLAS_STATUS_SUCCESS) {
      snprintf(g->err, sizeof(g->err), "cublasSetStream failed: status %d", (int)st);
      goto fail;
    }
  }
  /* calibrate: 3 warm-up GEMMs, then 10 timed */
  GTRY(cudaEventCreate(&e0));
  GTRY(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++)
    if (launch_gemm(g))
      goto fail;
  GTRY(cudaEventRecord(e0, g->stream));
  for (int i = 0; i < 10; i++)
    if (launch_gemm(g))
      goto fail;
  GTRY(cudaEventRecord(e1, g->stream));
  GTRY(cudaEventSynchronize(e1));
  {
    float ms = 0;
    GTRY(cudaEventElapsedTime(&ms, e0, e1));
    g->iso_tflops = ms > 0 ? 10.0 * acl_bench_gemm_flops_per_call(g) / (ms * 1e-3) / 1e12 : 0.0;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  e0 = e1 = 0;
  if (pthread_create(&g->thread, NULL, gemm_thread, g) != 0) {
    snprintf(g->err, sizeof(g->err), "pthread_create failed");
    goto fail;
  }
  g->started = 1;
  cudaSetDevice(prev);
  return g;
fail:
  snprintf(err, errlen, "GEMM interference on device %d: %s", dev, g->err);
  free(host);
  if (e0)
    cudaEventDestroy(e0);
  if (e1)
    cudaEventDestroy(e1);
  if (g->handle)
    cublasDestroy(g->handle);
  if (g->A)
    cudaFree(g->A);
  if (g->B)
    cudaFree(g->B);
  if (g->C)
    cudaFree(g->C);
  if (g->stream)
    cudaStreamDestroy(g->stream);
  free(g);
  cudaSetDevice(prev);
  return NULL;
}

int acl_bench_gemm_stop(acl_bench_gemm_t *g, double *run_tflops, double *duty_seen, char *err,
                        size_t errlen)
{
  if (!g)
    return 0;
  int rc = 0;
  int prev = 0;
  cudaGetDevice(&prev);
  if (g->started) {
    atomic_store(&g->stop, 1);
    pthread_join(g->thread, NULL);
  }
  double wall = g->t_end - g->t_begin;
  if (run_tflops)
    *run_tflops =
        wall > 0 ? (double)atomic_load(&g->done) * acl_bench_gemm_flops_per_call(g) / wall / 1e12
                 : 0;
  if (duty_seen)
    *duty_seen = wall > 0 ? (double)atomic_load(&g->busy_ns) * 1e-9 / wall : 0;
  if (atomic_load(&g->failed)) {
    snprintf(err, errlen, "GEMM interference on device %d: %s", g->dev, g->err);
    rc = -1;
  }
  cudaSetDevice(g->dev);
  cudaStreamSynchronize(g->stream);
  cublasDestroy(g->handle);
  cudaFree(g->A);
  cudaFree(g->B);
  cudaFree(g->C);
  cudaStreamDestroy(g->stream);
  free(g);
  cudaSetDevice(prev);
  return rc;
}
