/* comm_nccl.h: the NCCL backend of the runtime's communication, for device
 * buffers. A llmt_nccl communicator spans the same ranks as a comm.h group
 * (TP, PP or DP, split by parallel.c); its unique id travels through that
 * group's MPI bootstrap (llmt_comm_bcast_bytes). Calls enqueue on a CUDA
 * stream; llmt_nccl_wait blocks under a watchdog: an asynchronous NCCL
 * error or a deadline (LLM_TRAIN_NCCL_TIMEOUT seconds, default 300)
 * aborts the communicator and returns -1, which the caller turns into
 * exit 75 (LLMT_EXIT_TRANSIENT) - never a silent hang. Sums are
 * deterministic for a given communicator (NCCL's ring/tree reduce each
 * element once and broadcast the result), so replicas stay bit-identical. */
#ifndef LLMT_COMM_NCCL_H
#define LLMT_COMM_NCCL_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#include "comm/comm.h"

typedef struct llmt_nccl llmt_nccl;

/* Collective over group (the CUDA device must already be chosen).
 * timeout_s <= 0: from LLM_TRAIN_NCCL_TIMEOUT or 300 s. NULL with a
 * message on stderr on failure. */
llmt_nccl *llmt_nccl_create(llmt_comm *group, double timeout_s);
void llmt_nccl_free(llmt_nccl *n);
int llmt_nccl_rank(const llmt_nccl *n);
int llmt_nccl_size(const llmt_nccl *n);

/* Enqueue on st; 0 or -1 (message on stderr, communicator aborted). */
int llmt_nccl_allreduce_sum_f32(llmt_nccl *n, const float *send, float *recv, size_t count,
                                cudaStream_t st);
int llmt_nccl_allreduce_sum_f64(llmt_nccl *n, const double *send, double *recv, size_t count,
                                cudaStream_t st);
int llmt_nccl_reduce_scatter_sum_f32(llmt_nccl *n, const float *send, float *recv,
                                     size_t recvcount, cudaStream_t st);
int llmt_nccl_allgather_f32(llmt_nccl *n, const float *send, float *recv, size_t sendcount,
                            cudaStream_t st);
/* bf16 elements (2 bytes each), as the f32 all-gather; in place allowed */
int llmt_nccl_allgather_bf16(llmt_nccl *n, const void *send, void *recv, size_t sendcount,
                             cudaStream_t st);
/* ncclGroupStart / ncclGroupEnd: the calls between are launched together
 * (one launch for a step's buckets); end returns 0 or -1 (aborted). */
int llmt_nccl_group_start(llmt_nccl *n);
int llmt_nccl_group_end(llmt_nccl *n);
int llmt_nccl_bcast_bytes(llmt_nccl *n, void *buf, size_t bytes, int root, cudaStream_t st);
int llmt_nccl_send_bytes(llmt_nccl *n, const void *buf, size_t bytes, int peer, cudaStream_t st);
int llmt_nccl_recv_bytes(llmt_nccl *n, void *buf, size_t bytes, int peer, cudaStream_t st);
/* Wait for st under the watchdog. 0, or -1 after an error or timeout. */
int llmt_nccl_wait(llmt_nccl *n, cudaStream_t st);

#endif
