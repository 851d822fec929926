/* gmodel_opt.c: the device side of the training loop's GPU optimizer (see
 * gmodel_opt.h): share, norm partials, update and all-gather, element
 * copies, checkpoint snapshot and restore. Reads the GPU model's private
 * layout (gmodel_impl.h): its buffers, streams, buckets and the snapshot
 * events that the fused AdamW already waits on; the share's SDC check; the
 * ZeRO-1 replica hash (on the device: dev_xxh3.cu). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "ckpt/ckpt.h"
#include "comm_nccl.h"
#include "gmodel_impl.h"
#include "gmodel_opt.h"

#define CK(call, what) do { if (gcheck((call), (what))) return -1; } while (0)

struct llmt_gopt {
	llmt_gmodel *g;
	size_t n;
	size_t *sq_lo, *sq_hi;        /* ranges summed for the norm, in order */
	int nsq;
	size_t sq_n;                  /* their total length */
	float *sq_buf;                /* the ranges packed (one sum launch) */
	double *sq_d, *sq_h;          /* GK_SUMSQ_BLOCKS partials (sq_d: also the
	                               * share check's count, after the norm) */
	size_t ck_lo, ck_hi;
	size_t w_lo, w_hi;            /* the master's part in a snapshot: whole, or (ZeRO-1)
	                               * the part this DP rank writes (llmt_ckpt_dp_share) */
	float *pin;                   /* snapshot: master w_hi - w_lo, m and v ck_hi - ck_lo
	                               * each */
	uint64_t hash;                /* ZeRO-1: the whole master's XXH3 */
	uint64_t *xh;                 /* its device scratch (gk_xxh3_scratch_bytes) */
};

/* this rank's share, part i of nparts: the elements it updates, and
 * whether they count in its norm partial (tails: DP rank 0 only) */
static int nparts(const llmt_gmodel *g) { return g->dp ? 2 * g->nbk : 1; }

static void part(const llmt_gmodel *g, int i, size_t *lo, size_t *hi, int *counted)
{
	if (!g->dp) {
		*lo = 0;
		*hi = g->h->n;
		*counted = 1;
		return;
	}
	gshard sh;
	gbucket_shard(&g->bk[i / 2], g->dp_size, g->dp_rank, &sh);
	if (i % 2 == 0) {
		*lo = sh.own_lo;
		*hi = sh.own_hi;
		*counted = 1;
	} else {
		*lo = sh.tail_lo;
		*hi = sh.hi;
		*counted = g->dp_rank == 0;
	}
}

llmt_gopt *llmt_gopt_create(llmt_gmodel *g, const llmt_adamw_cfg *cfg, const size_t *lo,
							const size_t *hi, int nruns, size_t ck_lo, size_t ck_hi)
{
	llmt_gopt *o = calloc(1, sizeof *o);
	int np = nparts(g), cap = np * (nruns > 0 ? nruns : 1);
	if (!o || !(o->sq_lo = malloc(sizeof(size_t) * (size_t)cap)) ||
		!(o->sq_hi = malloc(sizeof(size_t) * (size_t)cap))) {
		fprintf(stderr, "llm-train: out of memory for the GPU optimizer\n");
		llmt_gopt_free(o);
		return NULL;
	}
	o->g = g;
	o->n = g->h->n;
	o->ck_lo = ck_lo;
	o->ck_hi = ck_hi;
	o->w_hi = o->n;
	if (g->dp)
		llmt_ckpt_dp_share(o->n, g->dp_size, g->dp_rank, &o->w_lo, &o->w_hi);
	/* norm ranges: counted parts of the share cut to the norm runs, in
	 * share order (a fixed order, so the sum has the same bits each step) */
	for (int i = 0; i < np; i++) {
		size_t a, b;
		int counted;
		part(g, i, &a, &b, &counted);
		for (int r = 0; counted && r < nruns; r++) {
			size_t x = a > lo[r] ? a : lo[r], y = b < hi[r] ? b : hi[r];
			if (x < y) {
				o->sq_lo[o->nsq] = x;
				o->sq_hi[o->nsq] = y;
				o->nsq++;
				o->sq_n += y - x;
			}
		}
	}
	size_t nb = GK_SUMSQ_BLOCKS * sizeof(double);
	if (!(o->sq_h = malloc(nb)) || gcheck(cudaMalloc((void **)&o->sq_d, nb), "norm scratch") ||
		(o->nsq > 1 && gcheck(cudaMalloc((void **)&o->sq_buf, o->sq_n * 4), "norm scratch")) ||
		(g->dp && gcheck(cudaMalloc((void **)&o->xh, gk_xxh3_scratch_bytes(o->n * 4)),
						 "replica hash scratch")) ||
		/* the AdamW state (zeros): an empty update allocates it */
		llmt_gmodel_adamw_range(g, 0, 0, 0.0, 1.0, cfg, 1) ||
		/* its zeroing, queued on the compute stream */
		gcheck(cudaDeviceSynchronize(), "synchronize")) {
		llmt_gopt_free(o);
		return NULL;
	}
	return o;
}

void llmt_gopt_free(llmt_gopt *o)
{
	if (!o)
		return;
	if (o->g && o->g->xst)
		cudaStreamSynchronize(o->g->xst);
	if (o->sq_d)
		cudaFree(o->sq_d);
	if (o->sq_buf)
		cudaFree(o->sq_buf);
	if (o->pin)
		cudaFreeHost(o->pin);
	if (o->xh)
		cudaFree(o->xh);
	free(o->sq_h);
	free(o->sq_lo);
	free(o->sq_hi);
	free(o);
}

size_t llmt_gopt_first(const llmt_gopt *o)
{
	return o->nsq ? o->sq_lo[0] : o->n;
}

int llmt_gopt_share_check(llmt_gopt *o, size_t *bad)
{
	llmt_gmodel *g = o->g;
	unsigned long long h = 0, *cnt = (unsigned long long *)(void *)o->sq_d;
	*bad = 0;
	if (!g->sh_lo)
		return 0;
	/* the weight all-gather wrote the other ranks' blocks and the fp32
	 * copies; the forward waited for it on the compute stream */
	if (gmaster_need(g) || gag_finish(g) || gsh_check(g, cnt))
		return -1;
	CK(cudaMemcpyAsync(&h, cnt, sizeof h, cudaMemcpyDeviceToHost, g->st), "share check");
	CK(cudaStreamSynchronize(g->st), "share check");
	*bad = (size_t)h;
	return 0;
}

int llmt_gopt_sumsq(llmt_gopt *o, double *out)
{
	llmt_gmodel *g = o->g;
	*out = 0.0;
	if (!o->nsq)
		return 0;
	if (ggrads_settle(g))
		return -1;
	/* one sum over the ranges packed in order (a share is many bucket
	 * blocks: one launch instead of one per block) */
	const float *x = g->grads + o->sq_lo[0];
	if (o->nsq > 1) {
		size_t at = 0;
		for (int i = 0; i < o->nsq; i++) {
			size_t k = o->sq_hi[i] - o->sq_lo[i];
			CK(cudaMemcpyAsync(o->sq_buf + at, g->grads + o->sq_lo[i], k * 4,
							   cudaMemcpyDeviceToDevice, g->st), "pack");
			at += k;
		}
		x = o->sq_buf;
	}
	CK(gk_sumsq(x, o->sq_n, o->sq_d, g->st), "sumsq");
	CK(cudaMemcpyAsync(o->sq_h, o->sq_d, GK_SUMSQ_BLOCKS * sizeof(double), cudaMemcpyDeviceToHost,
					   g->st), "norm partials");
	CK(cudaStreamSynchronize(g->st), "norm partials");
	double s = 0.0;
	for (int i = 0; i < GK_SUMSQ_BLOCKS; i++)
		s += o->sq_h[i];
	*out = s;
	return 0;
}

int llmt_gopt_update(llmt_gopt *o, double lr, double gscale, const llmt_adamw_cfg *cfg, long t)
{
	llmt_gmodel *g = o->g;
	for (int i = 0; i < nparts(g); i++) {
		size_t a, b;
		int counted;
		part(g, i, &a, &b, &counted);
		if (a < b && llmt_gmodel_adamw_range(g, a, b, lr, gscale, cfg, t))
			return -1;
	}
	if (!g->dp)         /* the update refreshed the bf16 copy itself */
		return gwf_refresh(g);
	return llmt_gmodel_dp_allgather(g);
}

/* all-gather the blocks of buf in the buckets overlapping [lo, hi), one
 * group */
static int gather(llmt_gmodel *g, float *buf, size_t lo, size_t hi)
{
	if (llmt_nccl_group_start(g->dp))
		return -1;
	int bad = 0;
	for (int b = 0; b < g->nbk && !bad; b++) {
		gshard sh;
		gbucket_shard(&g->bk[b], g->dp_size, g->dp_rank, &sh);
		bad = sh.blk && g->bk[b].lo < hi && lo < g->bk[b].hi &&
			  llmt_nccl_allgather_f32(g->dp, buf + sh.own_lo, buf + g->bk[b].lo, sh.blk, g->st);
	}
	return llmt_nccl_group_end(g->dp) || bad ? -1 : 0;
}

int llmt_gopt_grads_whole(llmt_gopt *o, size_t lo, size_t hi)
{
	llmt_gmodel *g = o->g;
	if (!g->dp)
		return 0;
	if (ggrads_settle(g) || gather(g, g->grads, lo, hi))
		return -1;
	return llmt_nccl_wait(g->dp, g->st);
}

int llmt_gopt_get(llmt_gopt *o, llmt_gbuf which, size_t at, size_t n, float *host)
{
	llmt_gmodel *g = o->g;
	if (at > o->n || n > o->n - at || gag_finish(g) ||
		(which == LLMT_GBUF_GRADS && ggrads_settle(g)))
		return -1;
	if (which == LLMT_GBUF_SHARE) {
		if (!gsh_has(g, at, n) || gmaster_need(g))
			return -1;
		CK(cudaMemcpyAsync(host, g->master + gsh_at(g, at), n * 4, cudaMemcpyDeviceToHost, g->st),
		   "download");
		CK(cudaStreamSynchronize(g->st), "download");
		return 0;
	}
	if (which == LLMT_GBUF_MASTER && g->sh_lo) {
		/* a ZeRO-1 share: the replicated bf16 copy, widened */
		uint16_t *b = malloc(n * 2 + 2);
		if (!b)
			return -1;
		int rc = gcheck(cudaMemcpyAsync(b, g->wc + at, n * 2, cudaMemcpyDeviceToHost, g->st),
						"download") || gcheck(cudaStreamSynchronize(g->st), "download");
		for (size_t i = 0; !rc && i < n; i++) {
			uint32_t u = (uint32_t)b[i] << 16;
			memcpy(&host[i], &u, 4);
		}
		free(b);
		return rc ? -1 : 0;
	}
	const float *src = which == LLMT_GBUF_MASTER ? g->master : g->grads;
	CK(cudaMemcpyAsync(host, src + at, n * 4, cudaMemcpyDeviceToHost, g->st), "download");
	CK(cudaStreamSynchronize(g->st), "download");
	return 0;
}

int llmt_gopt_put(llmt_gopt *o, llmt_gbuf which, size_t at, size_t n, const float *host)
{
	llmt_gmodel *g = o->g;
	if (at > o->n || n > o->n - at || gag_finish(g) ||
		(which == LLMT_GBUF_GRADS && ggrads_settle(g)))   /* the rest stays zero */
		return -1;
	if (which == LLMT_GBUF_SHARE) {
		if (!gsh_has(g, at, n) || gmaster_need(g) || gsnap_fence(g))
			return -1;
		CK(cudaMemcpyAsync(g->master + gsh_at(g, at), host, n * 4, cudaMemcpyHostToDevice, g->st),
		   "upload");
	} else if (which == LLMT_GBUF_MASTER) {
		/* staged in the gradient buffer (between steps: it is free) to
		 * master, its bf16 copy and fp32 copies */
		if (gsnap_fence(g))
			return -1;
		CK(cudaMemcpyAsync(g->grads + at, host, n * 4, cudaMemcpyHostToDevice, g->st), "upload");
		if (gmaster_spread(g, at, n))
			return -1;
	} else {
		CK(cudaMemcpyAsync(g->grads + at, host, n * 4, cudaMemcpyHostToDevice, g->st), "upload");
	}
	CK(cudaStreamSynchronize(g->st), "upload");   /* host may reuse its buffer */
	return 0;
}

/* the XXH3 of the whole master gathered in the gradient buffer (the
 * replica hash a checkpoint of a whole master holds, without a whole
 * master on the host): hashed on the device after the gather (waited for
 * under the DP watchdog), only the 8-byte hash comes back */
static int hash_whole(llmt_gopt *o)
{
	llmt_gmodel *g = o->g;
	if (llmt_nccl_wait(g->dp, g->st))
		return -1;
	CK(gk_xxh3_64(g->grads, o->n * 4, o->xh, &o->hash, g->st), "replica hash");
	return 0;
}

/* ZeRO-1 share: master, m and v one after the other all-gathered into
 * the gradient buffer (free between steps) and copied from there (the
 * master: its part this rank writes, after its whole hash); each gather
 * waits for the copy before it, the next backward for the last
 * (gsnap_fence) */
static int snapshot_shared(llmt_gopt *o)
{
	llmt_gmodel *g = o->g;
	size_t k = o->ck_hi - o->ck_lo, w = o->w_hi - o->w_lo;
	float *const src[3] = {g->master, g->m1, g->v1};
	float *const dst[3] = {o->pin, o->pin + w, o->pin + w + k};
	for (int i = 0; i < 3; i++) {
		size_t lo = i ? o->ck_lo : o->w_lo, len = i ? k : w;
		if (i)
			CK(cudaStreamWaitEvent(g->st, g->ev_snap_done, 0), "wait for the snapshot");
		if (gsh_gather(g, src[i], g->grads) || (!i && hash_whole(o)))
			return -1;
		CK(cudaEventRecord(g->ev_snap, g->st), "event");
		CK(cudaStreamWaitEvent(g->xst, g->ev_snap, 0), "wait event");
		CK(cudaMemcpyAsync(dst[i], g->grads + lo, len * 4, cudaMemcpyDeviceToHost, g->xst),
		   "snapshot");
		CK(cudaEventRecord(g->ev_snap_done, g->xst), "event");
	}
	g->snap_pending = 1;
	return llmt_nccl_wait(g->dp, g->st);
}

int llmt_gopt_snapshot(llmt_gopt *o)
{
	llmt_gmodel *g = o->g;
	size_t k = o->ck_hi - o->ck_lo, w = o->w_hi - o->w_lo;
	if (!o->pin && gcheck(cudaMallocHost((void **)&o->pin, (w + 2 * k) * 4 + 4),
						  "pinned checkpoint buffer"))
		return -1;
	if (gsnap_fence(g) || gag_finish(g))
		return -1;
	if (g->sh_lo)
		return snapshot_shared(o);
	CK(cudaEventRecord(g->ev_snap, g->st), "event");
	CK(cudaStreamWaitEvent(g->xst, g->ev_snap, 0), "wait event");
	CK(cudaMemcpyAsync(o->pin, g->master, o->n * 4, cudaMemcpyDeviceToHost, g->xst), "snapshot");
	CK(cudaMemcpyAsync(o->pin + o->n, g->m1 + o->ck_lo, k * 4, cudaMemcpyDeviceToHost, g->xst),
	   "snapshot");
	CK(cudaMemcpyAsync(o->pin + o->n + k, g->v1 + o->ck_lo, k * 4, cudaMemcpyDeviceToHost,
					   g->xst), "snapshot");
	CK(cudaEventRecord(g->ev_snap_done, g->xst), "event");
	g->snap_pending = 1;
	return 0;
}

int llmt_gopt_snapshot_wait(llmt_gopt *o, const float **master, const float **m,
							const float **v, uint64_t *hash)
{
	if (!o->pin)
		return -1;
	CK(cudaStreamSynchronize(o->g->xst), "snapshot");
	size_t k = o->ck_hi - o->ck_lo, w = o->w_hi - o->w_lo;
	*master = o->pin;
	*m = o->pin + w;
	*v = o->pin + w + k;
	if (hash)
		*hash = o->hash;
	return 0;
}

int llmt_gopt_restore(llmt_gopt *o, const float *master, const float *m, const float *v)
{
	llmt_gmodel *g = o->g;
	if (gsnap_fence(g) || gag_finish(g))
		return -1;
	/* master staged in the gradient buffer (free before a step); m and v:
	 * this rank's share of the whole buffers */
	CK(cudaMemcpyAsync(g->grads, master, o->n * 4, cudaMemcpyHostToDevice, g->st), "upload master");
	if (gmaster_spread(g, 0, o->n) || (m && (gsh_put(g, g->m1, m) || gsh_put(g, g->v1, v))))
		return -1;
	CK(cudaStreamSynchronize(g->st), "upload");
	return 0;
}

/* [ck_lo, ck_hi) of a flat buffer, this DP rank's llmt_zero1_range (blocks
 * of n/dp, the last rank's with the rest), made whole in the gradient
 * buffer: the blocks all-gathered, the rest broadcast by the last rank;
 * copies only, the same bits */
static int whole_from_range(llmt_gopt *o, const float *part)
{
	llmt_gmodel *g = o->g;
	size_t b = o->n / (size_t)g->dp_size, rest = b * (size_t)g->dp_size;
	if (o->ck_lo != b * (size_t)g->dp_rank) {
		fprintf(stderr, "llm-train: internal error: checkpoint range %zu..%zu is not DP rank %d's "
						"ZeRO-1 range\n", o->ck_lo, o->ck_hi, g->dp_rank);
		return -1;
	}
	CK(cudaMemcpyAsync(g->grads + o->ck_lo, part, (o->ck_hi - o->ck_lo) * 4,
					   cudaMemcpyHostToDevice, g->st), "upload");
	if ((b && llmt_nccl_allgather_f32(g->dp, g->grads + o->ck_lo, g->grads, b, g->st)) ||
		(o->n > rest && llmt_nccl_bcast_bytes(g->dp, g->grads + rest, (o->n - rest) * 4,
											  g->dp_size - 1, g->st)))
		return -1;
	return 0;
}

int llmt_gopt_restore_range(llmt_gopt *o, const float *master, const float *m, const float *v)
{
	llmt_gmodel *g = o->g;
	if (!g->dp)
		return llmt_gopt_restore(o, master, m, v);
	if (gsnap_fence(g) || gag_finish(g))
		return -1;
	/* m, v, then master (spread to its share, bf16 and fp32 copies,
	 * which zeroes the gradient buffer) */
	if (m && (whole_from_range(o, m) || gsh_pack(g, g->m1, g->grads) ||
			  whole_from_range(o, v) || gsh_pack(g, g->v1, g->grads)))
		return -1;
	if (whole_from_range(o, master) || gmaster_spread(g, 0, o->n))
		return -1;
	return llmt_nccl_wait(g->dp, g->st);
}
