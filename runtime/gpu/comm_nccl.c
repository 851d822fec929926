/* comm_nccl.c: NCCL communicators for the TP, PP and DP groups (see
 * comm_nccl.h). Communicators are non-blocking (ncclConfig_t.blocking =
 * 0) so that init and every wait can be watched: gwatch decides, this file
 * polls cudaStreamQuery and ncclCommGetAsyncError and calls ncclCommAbort. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include "comm_nccl.h"
#include "llmt/clock.h"
#include "host_plan.h"
#include "resilience/watchdog.h"
#include "llmt/env.h"
#include "llmt/clock.h"

struct llmt_nccl {
	ncclComm_t comm;
	int rank, size;
	double timeout_s;
	int aborted;
	llmt_comm *group;   /* the MPI group it was made from: its waits count there */
};

static void nccl_abort(llmt_nccl *n, const char *what, const char *why)
{
	fprintf(stderr, "llm-train: rank %d/%d: NCCL %s: %s; aborting the communicator\n", n->rank,
			n->size, what, why);
	if (!n->aborted)
		ncclCommAbort(n->comm);
	n->aborted = 1;
}

/* Poll until the communicator leaves ncclInProgress and (have_stream)
 * until the work on st is done, under the deadline. */
static int poll_done(llmt_nccl *n, const char *what, int have_stream, cudaStream_t st)
{
	gwatch w;
	gwatch_arm(&w, llmt_mono_s(), n->timeout_s);
	for (int polls = 0;; polls++) {
		ncclResult_t a = ncclSuccess;
		if (ncclCommGetAsyncError(n->comm, &a) != ncclSuccess)
			a = ncclSystemError;
		gw_async as = a == ncclSuccess ? GW_ASYNC_OK
					  : a == ncclInProgress ? GW_ASYNC_IN_PROGRESS : GW_ASYNC_ERROR;
		int done = 1;
		if (have_stream) {
			cudaError_t q = cudaStreamQuery(st);
			if (q != cudaSuccess && q != cudaErrorNotReady) {
				nccl_abort(n, what, cudaGetErrorString(q));
				return -1;
			}
			done = q == cudaSuccess;
		}
		switch (gwatch_poll(&w, llmt_mono_s(), done, as)) {
		case GW_OK:
			return 0;
		case GW_ERROR:
			nccl_abort(n, what, ncclGetErrorString(a));
			return -1;
		case GW_TIMEOUT: {
			char why[96];
			snprintf(why, sizeof why, "no progress within %.0f s (LLM_TRAIN_NCCL_TIMEOUT)",
					 n->timeout_s);
			nccl_abort(n, what, why);
			return -1;
		}
		case GW_PENDING:
			break;
		}
		unsigned us = gwatch_backoff_us(polls);
		if (us)
			usleep(us);
	}
}

/* poll_done inside the communication watchdog's bracket (watchdog.h), as
 * an MPI call is: the watchdog's deadline in force bounds the wait too,
 * and the heartbeat is kept fresh while this rank waits for its peers, so
 * the wrapper names the rank they wait for, not this one. */
static int watch(llmt_nccl *n, const char *what, int have_stream, cudaStream_t st)
{
	double t0 = llmt_mono_s();
	llmt_wd_enter(what, "nccl", n->size, -1, 0);
	int rc = poll_done(n, what, have_stream, st);
	llmt_wd_leave();
	llmt_comm_add_wait(n->group, llmt_mono_s() - t0);
	return rc;
}

/* after an enqueue: ncclInProgress is normal for a non-blocking comm */
static int issued(llmt_nccl *n, ncclResult_t r, const char *what)
{
	if (n->aborted) {
		fprintf(stderr, "llm-train: NCCL %s on an aborted communicator\n", what);
		return -1;
	}
	if (r == ncclSuccess)
		return 0;
	if (r == ncclInProgress)
		return watch(n, what, 0, 0);
	nccl_abort(n, what, ncclGetErrorString(r));
	return -1;
}

llmt_nccl *llmt_nccl_create(llmt_comm *group, double timeout_s)
{
	char err[160];
	if (timeout_s <= 0) {
		timeout_s = gwatch_timeout_from(getenv(LLMT_ENV_NCCL_TIMEOUT), 300.0, err, sizeof err);
		if (timeout_s < 0) {
			fprintf(stderr, "llm-train: %s\n", err);
			return NULL;
		}
	}
	llmt_nccl *n = calloc(1, sizeof *n);
	if (!n) {
		fprintf(stderr, "llm-train: out of memory creating an NCCL communicator\n");
		return NULL;
	}
	n->rank = llmt_comm_rank(group);
	n->size = llmt_comm_size(group);
	n->timeout_s = timeout_s;
	n->group = group;
	ncclUniqueId id;
	memset(&id, 0, sizeof id);
	int bad = 0;
	if (n->rank == 0) {
		ncclResult_t r = ncclGetUniqueId(&id);
		if (r != ncclSuccess) {
			fprintf(stderr, "llm-train: ncclGetUniqueId failed: %s\n", ncclGetErrorString(r));
			bad = 1;
		}
	}
	/* the root's verdict travels with the id, so every member fails alike */
	struct { ncclUniqueId id; int bad; } msg;
	msg.id = id;
	msg.bad = bad;
	if (llmt_comm_bcast_bytes(group, &msg, sizeof msg, 0) || msg.bad) {
		free(n);
		return NULL;
	}
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	cfg.blocking = 0;
	ncclResult_t r = ncclCommInitRankConfig(&n->comm, n->size, msg.id, n->rank, &cfg);
	if (r != ncclSuccess && r != ncclInProgress) {
		fprintf(stderr, "llm-train: ncclCommInitRankConfig (rank %d of %d) failed: %s\n",
				n->rank, n->size, ncclGetErrorString(r));
		free(n);
		return NULL;
	}
	if (watch(n, "communicator init", 0, 0)) {
		ncclCommDestroy(n->comm);
		free(n);
		return NULL;
	}
	return n;
}

void llmt_nccl_free(llmt_nccl *n)
{
	if (!n)
		return;
	if (!n->aborted) {
		ncclCommFinalize(n->comm);
		watch(n, "finalize", 0, 0);
		ncclCommDestroy(n->comm);
	}
	free(n);
}

int llmt_nccl_rank(const llmt_nccl *n) { return n->rank; }
int llmt_nccl_size(const llmt_nccl *n) { return n->size; }

int llmt_nccl_allreduce_sum_f32(llmt_nccl *n, const float *send, float *recv, size_t count,
								cudaStream_t st)
{
	return issued(n, ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, n->comm, st),
				  "all-reduce");
}

int llmt_nccl_allreduce_sum_f64(llmt_nccl *n, const double *send, double *recv, size_t count,
								cudaStream_t st)
{
	return issued(n, ncclAllReduce(send, recv, count, ncclFloat64, ncclSum, n->comm, st),
				  "all-reduce");
}

int llmt_nccl_reduce_scatter_sum_f32(llmt_nccl *n, const float *send, float *recv,
									 size_t recvcount, cudaStream_t st)
{
	return issued(n, ncclReduceScatter(send, recv, recvcount, ncclFloat32, ncclSum, n->comm, st),
				  "reduce-scatter");
}

int llmt_nccl_allgather_f32(llmt_nccl *n, const float *send, float *recv, size_t sendcount,
							cudaStream_t st)
{
	return issued(n, ncclAllGather(send, recv, sendcount, ncclFloat32, n->comm, st),
				  "all-gather");
}

int llmt_nccl_allgather_bf16(llmt_nccl *n, const void *send, void *recv, size_t sendcount,
							 cudaStream_t st)
{
	/* a copy, no arithmetic: as bytes (any NCCL version has the type) */
	return issued(n, ncclAllGather(send, recv, sendcount * 2, ncclUint8, n->comm, st),
				  "all-gather");
}

int llmt_nccl_group_start(llmt_nccl *n)
{
	return n->aborted ? issued(n, ncclSuccess, "group start")
					  : issued(n, ncclGroupStart(), "group start");
}

int llmt_nccl_group_end(llmt_nccl *n)
{
	/* a group started must end, aborted or not */
	return issued(n, ncclGroupEnd(), "group end");
}

int llmt_nccl_bcast_bytes(llmt_nccl *n, void *buf, size_t bytes, int root, cudaStream_t st)
{
	return issued(n, ncclBroadcast(buf, buf, bytes, ncclUint8, root, n->comm, st), "broadcast");
}

int llmt_nccl_send_bytes(llmt_nccl *n, const void *buf, size_t bytes, int peer, cudaStream_t st)
{
	return issued(n, ncclSend(buf, bytes, ncclUint8, peer, n->comm, st), "send");
}

int llmt_nccl_recv_bytes(llmt_nccl *n, void *buf, size_t bytes, int peer, cudaStream_t st)
{
	return issued(n, ncclRecv(buf, bytes, ncclUint8, peer, n->comm, st), "recv");
}

int llmt_nccl_wait(llmt_nccl *n, cudaStream_t st)
{
	if (n->aborted)
		return -1;
	return watch(n, "wait", 1, st);
}
