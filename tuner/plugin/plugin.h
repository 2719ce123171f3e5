/* The plugin's process-wide state and per-rank contexts, shared by the ABI
 * adapters (plugin_abi.c). One acl_rank_t per rank of a communicator: created
 * by the profiler init (which knows the rank) or the tuner init, whichever
 * comes first on the thread, and shared by both. */
#ifndef ACL_TUNER_PLUGIN_H
#define ACL_TUNER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "core/abi.h"

typedef struct acl_rank acl_rank_t;

/* Profiler v5 init: returns a rank context (NULL on allocation failure) and
 * the event mask NCCL should deliver. */
acl_rank_t *acl_plugin_profiler_attach(uint64_t comm_id, const char *comm_name, int nnodes,
                                       int nranks, int rank, ncclDebugLogger_t log, int *mask);
/* Tuner init (abi 2..5). comm_id is 0 for v2-v4, which carry none. */
acl_rank_t *acl_plugin_tuner_attach(int abi, uint64_t comm_id, size_t nranks, size_t nnodes,
                                    ncclDebugLogger_t log);
void acl_plugin_profiler_detach(acl_rank_t *r);
void acl_plugin_tuner_detach(acl_rank_t *r);

/* table is NCCL's float[7][3] cost table; NULL for tuner v2. */
ncclResult_t acl_plugin_get_coll_info(acl_rank_t *r, int coll, size_t nbytes, int pipe_ops,
                                      float (*table)[NCCL_NUM_PROTOCOLS], int *nchannels);
/* Tuner v6 getChunkSize: *chunk is NCCL's own chunk size for a part of a
 * collective decided by an earlier getCollInfo of this rank; it is scaled
 * by that decision's candidate (chunk_log2), the same on every rank. */
ncclResult_t acl_plugin_get_chunk_size(acl_rank_t *r, int coll, size_t nbytes, int algo, int proto,
                                       int nchannels, size_t *chunk);
/* Tuner v2: no cost table, the plugin may set algorithm and protocol. */
ncclResult_t acl_plugin_get_coll_info_v2(acl_rank_t *r, int coll, size_t nbytes, int *algo,
                                         int *proto, int *nchannels);

ncclResult_t acl_plugin_event_start(acl_rank_t *r, void **eHandle, ncclProfilerEventDescr_v5_t *d);
ncclResult_t acl_plugin_event_stop(void *eHandle);
ncclResult_t acl_plugin_event_state(void *eHandle, ncclProfilerEventState_v5_t st,
                                    ncclProfilerEventStateArgs_v5_t *args);

#endif
