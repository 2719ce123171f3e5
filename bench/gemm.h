/* Concurrent cuBLAS bf16 GEMM loop on its own stream (interference). */
#ifndef AUTOCCL_BENCH_GEMM_H
#define AUTOCCL_BENCH_GEMM_H

#include <stddef.h>

struct gemm_ctx;

/* Allocates n x n bf16 matrices on device `dev`, measures the GEMM alone
 * (iso_tflops), then starts a host thread that keeps the GEMM stream busy a
 * fraction `duty` of the time. Returns NULL with a message in err on failure.
 * Restores the calling thread's current device. */
struct gemm_ctx *gemm_start(int dev, int n, double duty, char *err, size_t errlen);
double gemm_iso_tflops(const struct gemm_ctx *g);
/* GEMMs completed so far */
long long gemm_done(struct gemm_ctx *g);
double gemm_flops_per_call(const struct gemm_ctx *g);
/* Stops the thread, frees everything; reports TFLOP/s over the thread's whole
 * life and the measured busy fraction of the GEMM stream. Returns 0, or -1 if
 * the thread hit a CUDA/cuBLAS error (message in err). */
int gemm_stop(struct gemm_ctx *g, double *run_tflops, double *duty_seen, char *err, size_t errlen);
double now_s(void);

#endif
