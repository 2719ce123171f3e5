/* What the profiler GPU checks share: the kernels of fake_kernels.cu and
 * a CUDA error check that stops the check. */
#ifndef ACL_PROFILER_GPUCHECK_CHECK_H
#define ACL_PROFILER_GPUCHECK_CHECK_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

int acl_check_fake_launch(cudaStream_t s, unsigned long long ns);
int acl_check_compute_launch(cudaStream_t s, float *a, int n, int iters);
int acl_check_spin_launch(cudaStream_t s, unsigned long long ns);

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));           \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

#endif
