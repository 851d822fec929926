/* comm.h: the one communication interface of the runtime. A llmt_comm is a
 * group of ranks (world, or a TP/PP/DP group split from it). Backends: MPI
 * (comm_mpi.c, Open MPI) now; NCCL (GPU issue) implements the same calls.
 * Every reduction is deterministic: the same inputs give bit-identical
 * results on every member (DP replicas must stay bit-identical). */
#ifndef LLMT_COMM_H
#define LLMT_COMM_H
#include <stddef.h>
#include <stdint.h>

typedef struct llmt_comm llmt_comm;

/* World from the environment (MPI_Init inside). Returns NULL with a
 * message on stderr when the backend cannot start. */
llmt_comm *llmt_comm_world(int *argc, char ***argv);
/* Before llmt_comm_world: a task srun started without PMIx
 * (SLURM_STEP_ID set, no PMIX_RANK, not under mpirun, no PMI-1/2) cannot
 * join (Open MPI prints pages and aborts): task 0 says so in one line
 * naming SLURM_MPI_TYPE and MpiDefault=pmix, and it returns 64 (usage:
 * never retried). 0 where the launch can work or there is no srun. */
int llmt_comm_launch_check(void);
/* New group of the members that pass the same color, ordered by key
 * (collective over c). */
llmt_comm *llmt_comm_split(llmt_comm *c, int color, int key);
void llmt_comm_free(llmt_comm *c);     /* a split group */
void llmt_comm_finalize(llmt_comm *world);
/* Name the group in messages (the watchdog's line): "all", "tp", ... */
void llmt_comm_set_name(llmt_comm *c, const char *name);
int llmt_comm_rank(const llmt_comm *c);
int llmt_comm_size(const llmt_comm *c);
/* Seconds this process has spent blocked in the group's calls so far (the
 * per-rank timings; NULL: 0). A backend over the same group (NCCL) adds
 * its own waits with llmt_comm_add_wait. */
double llmt_comm_wait_s(const llmt_comm *c);
void llmt_comm_add_wait(llmt_comm *c, double s);
/* Off: no clock reads around the calls, waits stay 0 (the per-rank
 * timings switched off, LLM_TRAIN_STEP_TIMINGS=0: the benchmark's side). */
void llmt_comm_set_timing(int on);

/* Fault injection (LLM_TRAIN_FAULT=slowlink, resilience/faults.h): every
 * later send and collective of this process starts s seconds late (0:
 * off). Counted as time blocked in the group. */
void llmt_comm_set_send_delay(double s);

/* All return 0 on success, -1 on a communication failure (the caller
 * exits with LLMT_EXIT_TRANSIENT). n counts elements. */
int llmt_comm_allreduce_sum_f32(llmt_comm *c, float *buf, size_t n);
int llmt_comm_allreduce_max_f64(llmt_comm *c, double *buf, size_t n);
int llmt_comm_allreduce_sum_f64(llmt_comm *c, double *buf, size_t n);
/* rank r receives the sum of block r (n elements per rank) of every
 * member's send buffer (size n * size), summed in rank order; moved in
 * rounds of LLMT_RS_ROUND elements per block (the receive scratch: that
 * many elements per member; memest.c counts it). */
#define LLMT_RS_ROUND ((size_t)1 << 22)
int llmt_comm_reduce_scatter_sum_f32(llmt_comm *c, const float *send, float *recv, size_t n);
/* every member's n elements, concatenated by rank into recv (n * size). */
int llmt_comm_allgather_f32(llmt_comm *c, const float *send, float *recv, size_t n);
int llmt_comm_allgather_bytes(llmt_comm *c, const void *send, void *recv, size_t bytes);
int llmt_comm_bcast_bytes(llmt_comm *c, void *buf, size_t bytes, int root);
int llmt_comm_send_bytes(llmt_comm *c, const void *buf, size_t bytes, int peer, int tag);
int llmt_comm_recv_bytes(llmt_comm *c, void *buf, size_t bytes, int peer, int tag);
/* Send to dest and receive from src at once (a ring shift: no ordering
 * needed to avoid a deadlock). Each side at most INT_MAX bytes. */
int llmt_comm_sendrecv_bytes(llmt_comm *c, const void *sbuf, size_t sbytes, int dest, void *rbuf,
                             size_t rbytes, int src, int tag);
/* Abort every member (used on fatal errors so no rank hangs). */
void llmt_comm_abort(llmt_comm *c, int exit_code);

#endif
