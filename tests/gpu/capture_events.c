/* One GPU: what NCCL's profiler API events say about CUDA-graph capture.
 * A one-rank communicator never reaches the tuner (NCCL copies locally,
 * ncclLaunchOneRank, before collTaskAppend), so its AllReduce emits no
 * CollApi event; its send/recv to itself goes through p2pTaskAppend, which
 * emits GroupApi and P2pApi events with graphCaptured, set by the same
 * ncclPlannerSetCapturingGraph that collTaskAppend uses. Eager calls, then
 * the same calls captured into a CUDA graph (replayed 10 times), with
 * tests/gpu/capture_prof.c as NCCL_PROFILER_PLUGIN. Prints one JSON line.
 * usage: capture_events PROFILER_SO */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    if ((x) != 0) {                                                                                \
      fprintf(stderr, "failed: %s\n", #x);                                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef void (*counts_fn)(uint64_t out[6]);

static void calls(ncclComm_t comm, float *a, float *b, size_t n, cudaStream_t s)
{
  CK(ncclAllReduce(a, a, n, ncclFloat, ncclSum, comm, s));
  CK(ncclGroupStart());
  CK(ncclSend(a, n, ncclFloat, 0, comm, s));
  CK(ncclRecv(b, n, ncclFloat, 0, comm, s));
  CK(ncclGroupEnd());
}

static void delta(const char *name, const uint64_t x[6], const uint64_t y[6], int last)
{
  static const char *const k[3] = {"group_api", "coll_api", "p2p_api"};
  printf("\"%s\":{", name);
  for (int i = 0; i < 3; i++)
    printf("%s\"%s\":[%llu,%llu]", i ? "," : "", k[i], (unsigned long long)(y[2 * i] - x[2 * i]),
           (unsigned long long)(y[2 * i + 1] - x[2 * i + 1]));
  printf("}%s", last ? "" : ",");
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s PROFILER_SO\n", argv[0]);
    return 2;
  }
  setenv("NCCL_PROFILER_PLUGIN", argv[1], 1);
  int dev = 0, ver = 0;
  ncclComm_t comm;
  CK(cudaSetDevice(0));
  CK(ncclGetVersion(&ver));
  CK(ncclCommInitAll(&comm, 1, &dev));
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  counts_fn counts = h ? (counts_fn)dlsym(h, "acl_capture_counts") : NULL;
  if (!counts) {
    fprintf(stderr, "NCCL did not load %s as its profiler\n", argv[1]);
    return 1;
  }
  size_t n = 1 << 20;
  float *a, *b;
  cudaStream_t s;
  CK(cudaMalloc((void **)&a, n * sizeof(float)));
  CK(cudaMalloc((void **)&b, n * sizeof(float)));
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t c0[6], c1[6], c2[6], c3[6];
  counts(c0);
  calls(comm, a, b, n, s);
  CK(cudaStreamSynchronize(s));
  counts(c1);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  calls(comm, a, b, n, s);
  CK(cudaStreamEndCapture(s, &g));
  counts(c2);
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 10; i++)
    CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  counts(c3);
  printf("{\"nccl_version\":%d,", ver);
  delta("eager", c0, c1, 0);
  delta("capture", c1, c2, 0);
  delta("replays", c2, c3, 1);
  printf("}\n");
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  ncclCommDestroy(comm);
  return 0;
}
