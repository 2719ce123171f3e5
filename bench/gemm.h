/* Concurrent cuBLAS bf16 GEMM loop on its own stream (interference). */
#ifndef ACL_BENCH_GEMM_H
#define ACL_BENCH_GEMM_H

#include <stddef.h>

typedef struct acl_bench_gemm acl_bench_gemm_t;

/* Allocates n x n bf16 matrices on device `dev`, measures the GEMM alone
 * (iso_tflops), then starts a host thread that keeps the GEMM stream busy a
 * fraction `duty` of the time. Returns NULL with a message in err on failure.
 * Restores the calling thread's current device. */
acl_bench_gemm_t *acl_bench_gemm_start(int dev, int n, double duty, char *err, size_t errlen);
double acl_bench_gemm_iso_tflops(const acl_bench_gemm_t *g);
/* GEMMs completed so far */
long long acl_bench_gemm_done(acl_bench_gemm_t *g);
double acl_bench_gemm_flops_per_call(const acl_bench_gemm_t *g);
/* Stops the thread, frees everything; reports TFLOP/s over the thread's whole
 * life and the measured busy fraction of the GEMM stream. Returns 0, or -1 if
 * the thread hit a CUDA/cuBLAS error (message in err). */
int acl_bench_gemm_stop(acl_bench_gemm_t *g, double *run_tflops, double *duty_seen, char *err,
                        size_t errlen);

#endif
