/* NCCL calls for the --nccl check, in their own file: nccl.h and the
 * plugin's own ABI header (core/abi.h) both define ncclResult_t. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <string.h>

int acl_check_nccl_id(void *id, size_t len)
{
  ncclUniqueId u;
  if (len < sizeof(u) || ncclGetUniqueId(&u) != ncclSuccess)
    return -1;
  memcpy(id, &u, sizeof(u));
  return 0;
}

int acl_check_nccl_init(void **comm, int nranks, const void *id, int rank)
{
  ncclUniqueId u;
  memcpy(&u, id, sizeof(u));
  return ncclCommInitRank((ncclComm_t *)comm, nranks, u, rank) == ncclSuccess ? 0 : -1;
}

int acl_check_nccl_allreduce(float *buf, size_t count, void *comm, cudaStream_t s)
{
  return ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, (ncclComm_t)comm, s) == ncclSuccess
             ? 0
             : -1;
}

void acl_check_nccl_destroy(void *comm) { ncclCommDestroy((ncclComm_t)comm); }
