// Kernels for the profiler GPU check: one named like an NCCL kernel (so the
// profiler attributes it) that spins for a given time, and a plain compute
// kernel used when cuBLAS is not loadable. C++ linkage on purpose: CUPTI
// reports the mangled name, as it does for NCCL's kernels.
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ uint64_t gtimer()
{
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void ncclDevKernel_Fake(unsigned long long ns)
{
  uint64_t t0 = gtimer();
  while (gtimer() - t0 < ns) {
  }
}

__global__ void acl_check_compute(float *a, int n, int iters)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float x = a[i];
  for (int k = 0; k < iters; k++)
    x = x * 0.999f + 0.001f;
  a[i] = x;
}

extern "C" int acl_check_fake_launch(cudaStream_t s, unsigned long long ns)
{
  ncclDevKernel_Fake<<<1, 32, 0, s>>>(ns);
  return (int)cudaGetLastError();
}

extern "C" int acl_check_compute_launch(cudaStream_t s, float *a, int n, int iters)
{
  acl_check_compute<<<(n + 255) / 256, 256, 0, s>>>(a, n, iters);
  return (int)cudaGetLastError();
}

// A short spin that is not an NCCL name: the untagged launches of the
// overhead loop (compute work between collectives).
__global__ void acl_check_spin(unsigned long long ns)
{
  uint64_t t0 = gtimer();
  while (gtimer() - t0 < ns) {
  }
}

extern "C" int acl_check_spin_launch(cudaStream_t s, unsigned long long ns)
{
  acl_check_spin<<<1, 32, 0, s>>>(ns);
  return (int)cudaGetLastError();
}
