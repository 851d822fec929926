/* cuda_emu_nccl.c: NCCL of the emulated CUDA runtime (cuda_emu.c), over
 * the group's MPI communicator. Device buffers are host memory here, so
 * each NCCL call is the comm.h collective on the same group (deterministic,
 * as the runtime's MPI backend); a NULL group is a one-rank communicator
 * (single-process tests). Each call first orders its stream like NCCL
 * would (llmt_emu_collective). Calls and launches (a group is one) are
 * counted for tests. */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "cuda_emu_int.h"
#include "gpu/comm_nccl.h"

struct llmt_nccl { llmt_comm *c; int rank, size; };

long llmt_nccl_emu_calls, llmt_nccl_emu_launches;
static int group_depth;
/* every collective and point-to-point call: st ordered, counted */
static void issue(cudaStream_t st)
{
	llmt_emu_collective(st);
	llmt_nccl_emu_calls++;
	if (!group_depth)
		llmt_nccl_emu_launches++;
}

llmt_nccl *llmt_nccl_create(llmt_comm *group, double timeout_s)
{
	(void)timeout_s;
	llmt_nccl *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->c = group;
	n->rank = group ? llmt_comm_rank(group) : 0;
	n->size = group ? llmt_comm_size(group) : 1;
	return n;
}
void llmt_nccl_free(llmt_nccl *n) { free(n); }
int llmt_nccl_rank(const llmt_nccl *n) { return n->rank; }
int llmt_nccl_size(const llmt_nccl *n) { return n->size; }
static int allreduce_f32(llmt_nccl *n, const float *s, float *r, size_t c)
{
	memmove(r, s, c * 4);
	return n->size > 1 ? llmt_comm_allreduce_sum_f32(n->c, r, c) : 0;
}
long llmt_nccl_emu_allreduces;   /* calls of llmt_nccl_allreduce_sum_f32 (for tests) */
int llmt_nccl_allreduce_sum_f32(llmt_nccl *n, const float *s, float *r, size_t c, cudaStream_t st)
{
	issue(st);
	llmt_nccl_emu_allreduces++;
	return allreduce_f32(n, s, r, c);
}
int llmt_nccl_allreduce_sum_f64(llmt_nccl *n, const double *s, double *r, size_t c, cudaStream_t st)
{
	issue(st);
	memmove(r, s, c * 8);
	return n->size > 1 ? llmt_comm_allreduce_sum_f64(n->c, r, c) : 0;
}
int llmt_nccl_reduce_scatter_sum_f32(llmt_nccl *n, const float *s, float *r, size_t c,
									 cudaStream_t st)
{
	issue(st);
	if (n->size == 1)
		return allreduce_f32(n, s, r, c);
	return llmt_comm_reduce_scatter_sum_f32(n->c, s, r, c);
}
int llmt_nccl_allgather_f32(llmt_nccl *n, const float *s, float *r, size_t c, cudaStream_t st)
{
	issue(st);
	if (n->size == 1)
		return allreduce_f32(n, s, r, c);
	if (s == r + (size_t)n->rank * c) {   /* in place, as NCCL allows */
		float *tmp = malloc(c ? c * 4 : 1);
		if (!tmp)
			return -1;
		memcpy(tmp, s, c * 4);
		int rc = llmt_comm_allgather_f32(n->c, tmp, r, c);
		free(tmp);
		return rc;
	}
	return llmt_comm_allgather_f32(n->c, s, r, c);
}
int llmt_nccl_allgather_bf16(llmt_nccl *n, const void *s, void *r, size_t c, cudaStream_t st)
{
	issue(st);
	size_t b = c * 2;
	if (n->size == 1) {
		memmove(r, s, b);
		return 0;
	}
	/* in place (s inside r) as NCCL allows: gather from a copy */
	void *tmp = malloc(b ? b : 1);
	if (!tmp)
		return -1;
	memcpy(tmp, s, b);
	int rc = llmt_comm_allgather_bytes(n->c, tmp, r, b);
	free(tmp);
	return rc;
}
/* groups only batch launches: the emulation runs each call at once, and
 * counts the outermost group as one launch */
int llmt_nccl_group_start(llmt_nccl *n)
{
	(void)n;
	if (!group_depth++)
		llmt_nccl_emu_launches++;
	return 0;
}
int llmt_nccl_group_end(llmt_nccl *n)
{
	(void)n;
	if (group_depth <= 0)
		return -1;      /* no group started: NCCL refuses it too */
	group_depth--;
	return 0;
}
int llmt_nccl_bcast_bytes(llmt_nccl *n, void *b, size_t bytes, int root, cudaStream_t st)
{
	issue(st);
	return n->size > 1 ? llmt_comm_bcast_bytes(n->c, b, bytes, root) : 0;
}
int llmt_nccl_send_bytes(llmt_nccl *n, const void *b, size_t bytes, int peer, cudaStream_t st)
{
	issue(st);
	return n->size > 1 ? llmt_comm_send_bytes(n->c, b, bytes, peer, 311) : -1;
}
int llmt_nccl_recv_bytes(llmt_nccl *n, void *b, size_t bytes, int peer, cudaStream_t st)
{
	issue(st);
	return n->size > 1 ? llmt_comm_recv_bytes(n->c, b, bytes, peer, 311) : -1;
}
int llmt_nccl_wait(llmt_nccl *n, cudaStream_t st)
{
	(void)n;
	return cudaStreamSynchronize(st) == cudaSuccess ? 0 : -1;   /* a wait on st */
}
