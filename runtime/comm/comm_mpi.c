/* comm_mpi.c: the MPI (Open MPI) backend of comm.h. Sums are made
 * deterministic by hand: every reduction is an all-to-all of blocks, a local
 * sum in rank order 0..p-1, and (for all-reduce) an all-gather of the
 * reduced blocks, so the result is the same bits on every member and does
 * not depend on which algorithm Open MPI's tuning picks. Every blocking
 * MPI call is bracketed for the communication watchdog (watchdog.h). */
#include <mpi.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "comm.h"
#include "resilience/watchdog.h"

struct llmt_comm {
	MPI_Comm comm;
	int rank, size;
	int owned;          /* 1 when created by split (freed by llmt_comm_free) */
	char name[16];      /* for messages: "world", "all", "tp", "pp", "dp" */
	void *scratch;      /* alltoall receive buffer, grown on demand */
	size_t scratch_bytes;
	double t0;          /* when the bracketed call in flight began */
	double wait_s;      /* seconds blocked in this group's calls so far */
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int ok(const llmt_comm *c, int rc, const char *what)
{
	if (rc == MPI_SUCCESS)
		return 0;
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "llm-train: rank %d: %s failed: %s\n", c->rank, what, msg);
	return -1;
}

static int timing = 1;   /* count the waits (llmt_comm_set_timing) */
static double send_delay; /* the slowlink fault (llmt_comm_set_send_delay) */

void llmt_comm_set_timing(int on) { timing = on; }
void llmt_comm_set_send_delay(double s) { send_delay = s > 0 ? s : 0; }

/* The start of a bracketed call: enter the bracket, note the time. */
static void watched_begin(llmt_comm *c, const char *what, int peer, size_t bytes)
{
	llmt_wd_enter(what, c->name, c->size, peer, bytes);
	if (timing)
		c->t0 = mono_s();
	if (send_delay > 0 && strcmp(what, "MPI_Recv")) {
		struct timespec ts = { (time_t)send_delay, (long)((send_delay - (double)(time_t)send_delay) * 1e9) };
		while (nanosleep(&ts, &ts))
			;
	}
}

/* The end of a bracketed call: leave the bracket, count the wait, then
 * check rc. */
static int watched_end(llmt_comm *c, int rc, const char *what)
{
	llmt_wd_leave();
	if (timing)
		c->wait_s += mono_s() - c->t0;
	return ok(c, rc, what);
}

/* A blocking MPI call `call` named `what`, watched while it runs (peer:
 * rank in the group for send/recv, -1 for a collective). The comma
 * operator and the argument evaluation order put enter before the call
 * and leave after it. */
#define WATCHED(c, what, peer, bytes, call) \
	(watched_begin((c), (what), (peer), (bytes)), watched_end((c), (call), (what)))

static llmt_comm *wrap(MPI_Comm mc, int owned)
{
	llmt_comm *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->comm = mc;
	c->owned = owned;
	snprintf(c->name, sizeof c->name, "%s", owned ? "split" : "world");
	MPI_Comm_rank(mc, &c->rank);
	MPI_Comm_size(mc, &c->size);
	MPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN);
	return c;
}

int llmt_comm_launch_check(void)
{
	const char *t = getenv("SLURM_MPI_TYPE"), *id = getenv("SLURM_PROCID");
	char v[40];
	size_t n = 0;

	if (!getenv("SLURM_STEP_ID") || getenv("PMIX_RANK") || getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_RANK"))
		return 0;
	for (; t && t[n] && n < 32; n++)   /* the user's own value, printable */
		v[n] = t[n] > ' ' && t[n] < 127 ? t[n] : '?';
	v[n] = 0;
	if (id && !strcmp(id, "0"))
		fprintf(stderr, "llm-train: srun started the tasks without PMIx (SLURM_MPI_TYPE %s%s), which Open MPI "
		        "needs to join them: run srun --mpi=pmix, export SLURM_MPI_TYPE=pmix, or have the admin set "
		        "MpiDefault=pmix in slurm.conf\n", t ? v : "unset", t ? "" : ", and the cluster's MpiDefault is not pmix");
	return 64;
}

llmt_comm *llmt_comm_world(int *argc, char ***argv)
{
	int inited = 0, provided = 0;
	MPI_Initialized(&inited);
	if (!inited && MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "llm-train: MPI_Init_thread failed\n");
		return NULL;
	}
	llmt_comm *c = wrap(MPI_COMM_WORLD, 0);
	if (!c)
		fprintf(stderr, "llm-train: out of memory creating the world communicator\n");
	return c;
}

llmt_comm *llmt_comm_split(llmt_comm *c, int color, int key)
{
	MPI_Comm nc;
	if (WATCHED(c, "MPI_Comm_split", -1, 0, MPI_Comm_split(c->comm, color, key, &nc)))
		return NULL;
	llmt_comm *r = wrap(nc, 1);
	if (!r)
		MPI_Comm_free(&nc);
	return r;
}

void llmt_comm_free(llmt_comm *c)
{
	if (!c)
		return;
	if (c->owned)
		MPI_Comm_free(&c->comm);
	free(c->scratch);
	free(c);
}

void llmt_comm_finalize(llmt_comm *world)
{
	int fin = 0;
	if (world) {
		free(world->scratch);
		free(world);
	}
	MPI_Finalized(&fin);
	if (!fin)
		MPI_Finalize();
}

void llmt_comm_set_name(llmt_comm *c, const char *name)
{
	snprintf(c->name, sizeof c->name, "%s", name);
}

int llmt_comm_rank(const llmt_comm *c) { return c->rank; }
double llmt_comm_wait_s(const llmt_comm *c) { return c ? c->wait_s : 0; }
void llmt_comm_add_wait(llmt_comm *c, double s) { if (c) c->wait_s += s; }
int llmt_comm_size(const llmt_comm *c) { return c->size; }

static void *scratch(llmt_comm *c, size_t bytes)
{
	if (bytes > c->scratch_bytes) {
		void *p = realloc(c->scratch, bytes);
		if (!p)
			return NULL;
		c->scratch = p;
		c->scratch_bytes = bytes;
	}
	return c->scratch;
}

/* Largest element count moved in one MPI call (counts are int). */
#define CHUNK ((size_t)1 << 26)

/* Block of a length-n vector owned by rank r when split over p ranks. */
static void block(size_t n, int p, int r, size_t *off, size_t *len)
{
	size_t base = n / (size_t)p, rem = n % (size_t)p;
	*off = (size_t)r * base + ((size_t)r < rem ? (size_t)r : rem);
	*len = base + ((size_t)r < rem ? 1 : 0);
}

static size_t min_z(size_t a, size_t b) { return a < b ? a : b; }

/* Deterministic reduce-scatter of send[0..n) (vector split by block()):
 * block `rank` summed in rank order into out (len of own block). In rounds
 * of at most LLMT_RS_ROUND elements of each block, so the receive scratch
 * is at most LLMT_RS_ROUND x size elements, not the whole vector; each
 * element is summed as in one round, so the bits do not depend on it. */
#define DEFINE_RS(NAME, T, MT)                                                   \
static int NAME(llmt_comm *c, const T *send, T *out, size_t n)                    \
{                                                                                 \
	int p = c->size;                                                              \
	size_t moff, mlen, big = n / (size_t)p + (n % (size_t)p != 0);               \
	block(n, p, c->rank, &moff, &mlen);                                           \
	T *rbuf = scratch(c, (big ? min_z(big, LLMT_RS_ROUND) : 1) * (size_t)p * sizeof(T)); \
	int *sc = malloc(sizeof(int) * 4 * (size_t)p), e = 0;                         \
	if (!rbuf || !sc) {                                                           \
		free(sc);                                                                 \
		fprintf(stderr, "llm-train: out of memory in reduction\n");              \
		return -1;                                                                \
	}                                                                             \
	int *sd = sc + p, *rc = sc + 2 * p, *rd = sc + 3 * p;                         \
	for (size_t k = 0; k < big && !e; k += LLMT_RS_ROUND) {                       \
		size_t mine = mlen > k ? min_z(mlen - k, LLMT_RS_ROUND) : 0, bytes = 0;   \
		for (int r = 0; r < p; r++) {                                             \
			size_t off, len;                                                      \
			block(n, p, r, &off, &len);                                           \
			sc[r] = (int)(len > k ? min_z(len - k, LLMT_RS_ROUND) : 0);           \
			sd[r] = (int)(off + (len > k ? k : 0));                               \
			rc[r] = (int)mine; rd[r] = (int)(mine * (size_t)r);                   \
			bytes += (size_t)sc[r] * sizeof(T);                                   \
		}                                                                         \
		e = WATCHED(c, "MPI_Alltoallv", -1, bytes,                                \
					MPI_Alltoallv(send, sc, sd, MT, rbuf, rc, rd, MT, c->comm));  \
		for (size_t i = 0; i < mine && !e; i++) {                                 \
			T s = rbuf[i];                                                        \
			for (int r = 1; r < p; r++)                                           \
				s += rbuf[(size_t)r * mine + i];                                  \
			out[k + i] = s;                                                       \
		}                                                                         \
	}                                                                             \
	free(sc);                                                                     \
	return e ? -1 : 0;                                                            \
}
DEFINE_RS(rs_f32, float, MPI_FLOAT)
DEFINE_RS(rs_f64, double, MPI_DOUBLE)

/* All-gather of the block() pieces of an n-vector, in place in buf. */
static int ag_blocks(llmt_comm *c, void *buf, size_t n, MPI_Datatype t)
{
	int p = c->size;
	int *cnt = malloc(sizeof(int) * 2 * (size_t)p);
	if (!cnt)
		return -1;
	int *dsp = cnt + p;
	for (int r = 0; r < p; r++) {
		size_t off, len;
		block(n, p, r, &off, &len);
		cnt[r] = (int)len;
		dsp[r] = (int)off;
	}
	int tsize = 1;
	MPI_Type_size(t, &tsize);
	int e = WATCHED(c, "MPI_Allgatherv", -1, n * (size_t)tsize,
					MPI_Allgatherv(MPI_IN_PLACE, 0, t, buf, cnt, dsp, t, c->comm));
	free(cnt);
	return e;
}

#define DEFINE_AR(NAME, T, MT, RS)                                               \
int NAME(llmt_comm *c, T *buf, size_t n)                                          \
{                                                                                 \
	if (c->size == 1)                                                             \
		return 0;                                                                 \
	for (size_t done = 0; done < n; done += CHUNK) {                              \
		size_t m = n - done < CHUNK ? n - done : CHUNK;                           \
		size_t off, len;                                                          \
		block(m, c->size, c->rank, &off, &len);                                   \
		T *mine = malloc((len ? len : 1) * sizeof(T));                            \
		if (!mine)                                                                \
			return -1;                                                            \
		if (RS(c, buf + done, mine, m)) {                                         \
			free(mine);                                                           \
			return -1;                                                            \
		}                                                                         \
		memcpy(buf + done + off, mine, len * sizeof(T));                          \
		free(mine);                                                               \
		if (ag_blocks(c, buf + done, m, MT))                                      \
			return -1;                                                            \
	}                                                                             \
	return 0;                                                                     \
}
DEFINE_AR(llmt_comm_allreduce_sum_f32, float, MPI_FLOAT, rs_f32)
DEFINE_AR(llmt_comm_allreduce_sum_f64, double, MPI_DOUBLE, rs_f64)

int llmt_comm_allreduce_max_f64(llmt_comm *c, double *buf, size_t n)
{
	/* max is exact and order independent */
	for (size_t done = 0; done < n; done += CHUNK) {
		int m = (int)(n - done < CHUNK ? n - done : CHUNK);
		if (WATCHED(c, "MPI_Allreduce", -1, (size_t)m * sizeof(double),
					MPI_Allreduce(MPI_IN_PLACE, buf + done, m, MPI_DOUBLE, MPI_MAX, c->comm)))
			return -1;
	}
	return 0;
}

int llmt_comm_reduce_scatter_sum_f32(llmt_comm *c, const float *send, float *recv, size_t n)
{
	int p = c->size;
	if (p == 1) {
		memmove(recv, send, n * sizeof(float));
		return 0;
	}
	if (n > (size_t)INT_MAX / (size_t)p) {
		fprintf(stderr, "llm-train: reduce-scatter of %zu elements per rank is too large\n", n);
		return -1;
	}
	return rs_f32(c, send, recv, n * (size_t)p);
}

int llmt_comm_allgather_f32(llmt_comm *c, const float *send, float *recv, size_t n)
{
	return llmt_comm_allgather_bytes(c, send, recv, n * sizeof(float));
}

int llmt_comm_allgather_bytes(llmt_comm *c, const void *send, void *recv, size_t bytes)
{
	if (bytes > (size_t)INT_MAX) {
		fprintf(stderr, "llm-train: all-gather of %zu bytes per rank is too large\n", bytes);
		return -1;
	}
	return WATCHED(c, "MPI_Allgather", -1, bytes,
				   MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, c->comm));
}

int llmt_comm_bcast_bytes(llmt_comm *c, void *buf, size_t bytes, int root)
{
	for (size_t done = 0; done < bytes; done += (size_t)1 << 30) {
		size_t m = bytes - done < ((size_t)1 << 30) ? bytes - done : ((size_t)1 << 30);
		if (WATCHED(c, "MPI_Bcast", -1, m, MPI_Bcast((char *)buf + done, (int)m, MPI_BYTE, root, c->comm)))
			return -1;
	}
	return 0;
}

int llmt_comm_send_bytes(llmt_comm *c, const void *buf, size_t bytes, int peer, int tag)
{
	for (size_t done = 0; done < bytes || bytes == 0; done += (size_t)1 << 30) {
		size_t m = bytes - done < ((size_t)1 << 30) ? bytes - done : ((size_t)1 << 30);
		if (WATCHED(c, "MPI_Send", peer, m,
					MPI_Send((const char *)buf + done, (int)m, MPI_BYTE, peer, tag, c->comm)))
			return -1;
		if (bytes == 0)
			break;
	}
	return 0;
}

int llmt_comm_recv_bytes(llmt_comm *c, void *buf, size_t bytes, int peer, int tag)
{
	for (size_t done = 0; done < bytes || bytes == 0; done += (size_t)1 << 30) {
		size_t m = bytes - done < ((size_t)1 << 30) ? bytes - done : ((size_t)1 << 30);
		if (WATCHED(c, "MPI_Recv", peer, m,
					MPI_Recv((char *)buf + done, (int)m, MPI_BYTE, peer, tag, c->comm, MPI_STATUS_IGNORE)))
			return -1;
		if (bytes == 0)
			break;
	}
	return 0;
}

int llmt_comm_sendrecv_bytes(llmt_comm *c, const void *sbuf, size_t sbytes, int dest, void *rbuf,
							 size_t rbytes, int src, int tag)
{
	if (sbytes > (size_t)INT_MAX || rbytes > (size_t)INT_MAX) {
		fprintf(stderr, "llm-train: sendrecv of %zu/%zu bytes is too large\n", sbytes, rbytes);
		return -1;
	}
	return WATCHED(c, "MPI_Sendrecv", dest, sbytes,
				   MPI_Sendrecv(sbuf, (int)sbytes, MPI_BYTE, dest, tag, rbuf, (int)rbytes, MPI_BYTE,
								src, tag, c->comm, MPI_STATUS_IGNORE));
}

void llmt_comm_abort(llmt_comm *c, int exit_code)
{
	MPI_Abort(c ? c->comm : MPI_COMM_WORLD, exit_code);
}
