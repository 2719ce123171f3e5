/* One rank on one GPU: enough for NCCL to load the tuner and profiler
 * plugins and say which ABI version it took (scripts/gpu-nccl-load.sh). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
int main(void)
{
  int v = 0;
  ncclGetVersion(&v);
  printf("nccl version %d\n", v);
  ncclComm_t c;
  int dev = 0;
  if (ncclCommInitAll(&c, 1, &dev) != ncclSuccess) {
    printf("init failed\n");
    return 1;
  }
  float *b;
  cudaMalloc((void **)&b, 4 << 20);
  for (int i = 0; i < 100; i++)
    if (ncclAllReduce(b, b, 1 << 20, ncclFloat, ncclSum, c, 0) != ncclSuccess) {
      printf("allreduce failed\n");
      return 1;
    }
  cudaDeviceSynchronize();
  ncclCommDestroy(c);
  printf("ok\n");
  return 0;
}
