/* gmodel_shard.c: where the GPU model's fp32 master weights live: whole
 * (no data parallelism), or ZeRO-1 packed to this DP rank's share once
 * llmt_gmodel_set_dp has cut the buffer into buckets (m and v alike); the
 * fp32 copies of the tensors kernels read in fp32 (embedding, norm
 * weights); moving weights between host, share, bf16 copy and those
 * copies through the gradient buffer as scratch (between steps only); and
 * the weight all-gather after a ZeRO-1 update, off the critical path; the
 * share's SDC check against the bf16 weights and fp32 copies it gave. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "comm_nccl.h"
#include "gmodel_impl.h"

#define CK(call, what) do { if (gcheck((call), (what))) return -1; } while (0)

size_t gsh_at(const llmt_gmodel *g, size_t flat)
{
	for (int i = 0; g->sh_lo && i < g->nsh_parts; i++)
		if (flat >= g->sh_lo[i] && flat < g->sh_hi[i])
			return g->sh_at[i] + (flat - g->sh_lo[i]);
	return flat;
}

int gsh_has(const llmt_gmodel *g, size_t at, size_t n)
{
	if (!g->sh_lo)
		return at <= g->h->n && n <= g->h->n - at;
	for (int i = 0; i < g->nsh_parts; i++)
		if (at >= g->sh_lo[i] && n <= g->sh_hi[i] - at && at < g->sh_hi[i])
			return 1;
	return 0;
}

int gwf_plan(llmt_gmodel *g)
{
	const llmt_model *h = g->h;
	int np;
	const llmt_param_info *pt = llmt_model_params(h, &np);
	if (!(g->wf_flat = calloc((size_t)np + 1, sizeof *g->wf_flat)) ||
		!(g->wf_at = calloc((size_t)np + 1, sizeof *g->wf_at)) ||
		!(g->wf_n = calloc((size_t)np + 1, sizeof *g->wf_n)))
		return -1;
	for (int i = 0; i < np; i++) {
		size_t o = pt[i].offset;
		int in = (h->first && o == h->off_embed) || (h->last && o == h->off_norm);
		for (int l = 0; !in && l < h->nl; l++)
			in = o == h->lo[l].ln1 || o == h->lo[l].ln2 ||
				 (h->c.qk_norm && (o == h->lo[l].qn || o == h->lo[l].kn));
		if (!in)
			continue;
		g->wf_flat[g->nwf] = o;
		g->wf_at[g->nwf] = g->wf_len;
		g->wf_n[g->nwf] = pt[i].numel;
		g->wf_len += pt[i].numel;
		g->nwf++;
	}
	return (g->wf = gdmem(g, g->wf_len * 4)) ? 0 : -1;
}

const float *gw32(const llmt_gmodel *g, size_t flat)
{
	for (int i = 0; i < g->nwf; i++)
		if (flat >= g->wf_flat[i] && flat < g->wf_flat[i] + g->wf_n[i])
			return g->wf + g->wf_at[i] + (flat - g->wf_flat[i]);
	fprintf(stderr, "llm-train: internal error: no fp32 copy of flat element %zu\n", flat);
	abort();
}

/* the intersection of [a, b) and [c, d) into [*x, *y); 1 when not empty */
static int meet(size_t a, size_t b, size_t c, size_t d, size_t *x, size_t *y)
{
	*x = a > c ? a : c;
	*y = b < d ? b : d;
	return *x < *y;
}

/* copy the flat range [at, at + n) of src (flat layout from element s0:
 * src[0] is element s0) into master (its layout); on the compute stream */
static int to_master(llmt_gmodel *g, const float *src, size_t s0, size_t at, size_t n,
					 enum cudaMemcpyKind k)
{
	size_t x, y;
	if (!g->sh_lo) {
		CK(cudaMemcpyAsync(g->master + at, src + (at - s0), n * 4, k, g->st), "master copy");
		return 0;
	}
	for (int i = 0; i < g->nsh_parts; i++)
		if (meet(at, at + n, g->sh_lo[i], g->sh_hi[i], &x, &y))
			CK(cudaMemcpyAsync(g->master + g->sh_at[i] + (x - g->sh_lo[i]), src + (x - s0),
							   (y - x) * 4, k, g->st), "master copy");
	return 0;
}

static int spread(llmt_gmodel *g, size_t at, size_t n, int zero);

int ginit_weights(llmt_gmodel *g, int master)
{
	size_t n = g->h->n, C = GINIT_CHUNK;
	float *b = malloc((n < C ? n : C) * 4 + 4);
	int rc = b ? 0 : -1;
	if (!b)
		fprintf(stderr, "llm-train: out of host memory initialising the weights\n");
	for (size_t at = 0; !rc && at < n; at += C) {
		size_t k = n - at < C ? n - at : C;
		llmt_model_init_range(g->h, at, at + k, b);
		rc = master ? to_master(g, b, at, at, k, cudaMemcpyHostToDevice)
					: gcheck(cudaMemcpyAsync(g->grads + at, b, k * 4, cudaMemcpyHostToDevice, g->st),
							 "init") || spread(g, at, k, 0);
		rc = rc || gcheck(cudaStreamSynchronize(g->st), "init");   /* b is used again */
	}
	free(b);
	g->ginit = !rc && !master;  /* kept in grads for the master (gmaster_need) */
	return rc ? -1 : 0;
}

int ginit_release(llmt_gmodel *g)
{
	if (!g->ginit)
		return 0;
	g->ginit = 0;       /* zeroed, as they were before the init was kept there */
	return gcheck(cudaMemsetAsync(g->grads, 0, g->h->n * 4, g->st), "zero gradients");
}

/* the share check's ranges, GK_SHARE_RANGES to a launch: one more (n
 * elements of master at m against ref), the last launch when m is NULL */
static int check_add(llmt_gmodel *g, gk_share_ranges *r, unsigned long long *bad, const float *m,
					 const void *ref, size_t n, int is_bf16)
{
	if (r->nr == GK_SHARE_RANGES || (!m && r->nr)) {
		CK(gk_share_check(r, bad, g->st), "master-share check");
		r->nr = 0;
	}
	if (m && n) {
		r->m[r->nr] = m;
		r->ref[r->nr] = ref;
		r->n[r->nr] = n;
		r->is_bf16[r->nr++] = is_bf16;
	}
	return 0;
}

int gsh_check(llmt_gmodel *g, unsigned long long *bad)
{
	gk_share_ranges r;
	size_t x, y;
	r.nr = 0;
	CK(cudaMemsetAsync(bad, 0, sizeof *bad, g->st), "memset");
	for (int p = 0; p < g->nsh_parts; p++) {
		size_t lo = g->sh_lo[p], hi = g->sh_hi[p];
		const float *m = g->master + g->sh_at[p];
		if (check_add(g, &r, bad, m, g->wc + lo, hi - lo, 1))
			return -1;
		for (int i = 0; i < g->nwf; i++)
			if (meet(lo, hi, g->wf_flat[i], g->wf_flat[i] + g->wf_n[i], &x, &y) &&
				check_add(g, &r, bad, m + (x - lo), g->wf + g->wf_at[i] + (x - g->wf_flat[i]),
						  y - x, 0))
				return -1;
	}
	return check_add(g, &r, bad, NULL, NULL, 0, 0);
}

int gmaster_need(llmt_gmodel *g)
{
	if (g->master)
		return 0;
	g->nsh = g->sh_lo ? g->sh_at[g->nsh_parts] : g->h->n;
	if (!(g->master = gdmem(g, g->nsh * 4))) {
		fprintf(stderr, "llm-train: out of GPU memory for the fp32 master weights\n");
		return -1;
	}
	/* the device weights are the last upload's: the host master; with
	 * none (never asked for on the host) the init's: still in grads since
	 * creation, or else made again a piece at a time */
	const float *src = g->h->master ? g->h->master : g->ginit ? g->grads : NULL;
	if (!src)
		return ginit_weights(g, 1);
	if (to_master(g, src, 0, 0, g->h->n,
				  src == g->grads ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice) ||
		ginit_release(g))
		return -1;
	return gcheck(cudaStreamSynchronize(g->st), "master upload");
}

int gsh_plan(llmt_gmodel *g)
{
	int np = 2 * g->nbk;
	if (g->m1) {
		fprintf(stderr, "llm-train: data parallelism set after the optimizer state exists\n");
		return -1;
	}
	if (!(g->sh_lo = malloc(sizeof(size_t) * (size_t)np)) ||
		!(g->sh_hi = malloc(sizeof(size_t) * (size_t)np)) ||
		!(g->sh_at = malloc(sizeof(size_t) * (size_t)(np + 1)))) {
		fprintf(stderr, "llm-train: out of memory planning the ZeRO-1 share\n");
		return -1;
	}
	/* the order of gmodel_opt.c's parts: each bucket's block, then its tail */
	size_t at = 0;
	g->nsh_parts = 0;
	for (int b = 0; b < g->nbk; b++) {
		gshard sh;
		gbucket_shard(&g->bk[b], g->dp_size, g->dp_rank, &sh);
		const size_t r[2][2] = {{sh.own_lo, sh.own_hi}, {sh.tail_lo, sh.hi}};
		for (int j = 0; j < 2; j++) {
			g->sh_lo[g->nsh_parts] = r[j][0];
			g->sh_hi[g->nsh_parts] = r[j][1];
			g->sh_at[g->nsh_parts++] = at;
			at += r[j][1] - r[j][0];
		}
	}
	g->sh_at[g->nsh_parts] = at;
	if (!g->master)
		return 0;           /* made at the first need, from the host master */
	/* a whole master already on the device: its share, then freed */
	float *whole = g->master;
	g->master = NULL;
	g->nsh = at;
	if (!(g->master = gdmem(g, at * 4)) ||
		to_master(g, whole, 0, 0, g->h->n, cudaMemcpyDeviceToDevice) ||
		gcheck(cudaStreamSynchronize(g->st), "synchronize"))
		return -1;
	gdfree(g, whole);
	return 0;
}

/* zero: grads[at, at + n) zeroed after (not: the init kept there) */
static int spread(llmt_gmodel *g, size_t at, size_t n, int zero)
{
	size_t x, y;
	const float *s = g->grads;
	CK(gk_f32_to_bf16(s + at, g->wc + at, n, g->st), "bf16 copy");
	for (int i = 0; i < g->nwf; i++)
		if (meet(at, at + n, g->wf_flat[i], g->wf_flat[i] + g->wf_n[i], &x, &y))
			CK(cudaMemcpyAsync(g->wf + g->wf_at[i] + (x - g->wf_flat[i]), s + x, (y - x) * 4,
							   cudaMemcpyDeviceToDevice, g->st), "fp32 copy");
	if (g->master && to_master(g, s, 0, at, n, cudaMemcpyDeviceToDevice))
		return -1;
	if (zero)
		CK(cudaMemsetAsync(g->grads + at, 0, n * 4, g->st), "zero gradients");
	return 0;
}

int gmaster_spread(llmt_gmodel *g, size_t at, size_t n) { return spread(g, at, n, 1); }

int gwf_refresh(llmt_gmodel *g)
{
	size_t x, y;
	if (!g->sh_lo) {
		for (int i = 0; i < g->nwf; i++)
			CK(cudaMemcpyAsync(g->wf + g->wf_at[i], g->master + g->wf_flat[i], g->wf_n[i] * 4,
							   cudaMemcpyDeviceToDevice, g->st), "fp32 copy");
		return 0;
	}
	/* each element from the one rank that updated it (tails: DP rank 0),
	 * zeros elsewhere: the sum over DP (the caller's) is that element
	 * exactly */
	CK(cudaMemsetAsync(g->wf, 0, g->wf_len * 4, g->st), "memset");
	for (int p = 0; p < g->nsh_parts; p++) {
		if (p % 2 && g->dp_rank != 0)
			continue;
		for (int i = 0; i < g->nwf; i++)
			if (meet(g->sh_lo[p], g->sh_hi[p], g->wf_flat[i], g->wf_flat[i] + g->wf_n[i], &x, &y))
				CK(cudaMemcpyAsync(g->wf + g->wf_at[i] + (x - g->wf_flat[i]),
								   g->master + g->sh_at[p] + (x - g->sh_lo[p]), (y - x) * 4,
								   cudaMemcpyDeviceToDevice, g->st), "fp32 copy");
	}
	return 0;       /* summed over DP by llmt_gmodel_dp_allgather */
}

int gsh_gather(llmt_gmodel *g, const float *packed, float *whole)
{
	if (llmt_nccl_group_start(g->dp))
		return -1;
	int bad = 0;
	for (int p = 0; p < g->nsh_parts && !bad; p++) {
		size_t k = g->sh_hi[p] - g->sh_lo[p];
		if (!k)
			continue;
		if (p % 2 == 0)     /* the bucket's blocks, rank after rank */
			bad = llmt_nccl_allgather_f32(g->dp, packed + g->sh_at[p],
										  whole + g->bk[p / 2].lo, k, g->st);
		else                /* its tail: the same on every rank */
			bad = gcheck(cudaMemcpyAsync(whole + g->sh_lo[p], packed + g->sh_at[p], k * 4,
										 cudaMemcpyDeviceToDevice, g->st), "tail copy");
	}
	return llmt_nccl_group_end(g->dp) || bad ? -1 : 0;
}

static int sh_pack(llmt_gmodel *g, float *packed, const float *whole, enum cudaMemcpyKind k)
{
	size_t x, y;
	if (!g->sh_lo) {
		CK(cudaMemcpyAsync(packed, whole, g->h->n * 4, k, g->st), "share copy");
		return 0;
	}
	for (int p = 0; p < g->nsh_parts; p++)
		if (meet(g->sh_lo[p], g->sh_hi[p], 0, g->h->n, &x, &y))
			CK(cudaMemcpyAsync(packed + g->sh_at[p], whole + x, (y - x) * 4, k, g->st),
			   "share copy");
	return 0;
}

int gsh_put(llmt_gmodel *g, float *packed, const float *host)
{
	return sh_pack(g, packed, host, cudaMemcpyHostToDevice);
}

int gsh_pack(llmt_gmodel *g, float *packed, const float *whole)
{
	return sh_pack(g, packed, whole, cudaMemcpyDeviceToDevice);
}

int gag_wait(llmt_gmodel *g, size_t hi)
{
	if (!g->ag_pending)
		return 0;
	if (g->ag_w == g->nbk)
		CK(cudaStreamWaitEvent(g->st, g->ev_wf, 0), "wait for the fp32 copies");
	/* bucket nbk - 1 holds the lowest range: the forward's first layers */
	while (g->ag_w > 0 && g->bk[g->ag_w - 1].lo < hi) {   /* and all below */
		CK(cudaStreamWaitEvent(g->st, g->ag_ev[g->ag_w - 1], 0), "wait for the weights");
		g->ag_w--;
	}
	return 0;
}

int gag_finish(llmt_gmodel *g)
{
	if (!g->ag_pending)
		return 0;
	if (gag_wait(g, g->h->n))
		return -1;
	g->ag_pending = 0;
	return llmt_nccl_wait(g->dp, g->cst);
}

/* the weight all-gather's events, and each bucket's wait point: the
 * forward waits before each layer for the buckets below its first tensor */
static int ag_plan(llmt_gmodel *g)
{
	const llmt_model *h = g->h;
	size_t *w = malloc(sizeof *w * ((size_t)h->nl + 1));
	g->ag_ev = calloc((size_t)g->nbk, sizeof *g->ag_ev);
	g->ag_wp = malloc(sizeof *g->ag_wp * (size_t)g->nbk);
	if (!w || !g->ag_ev || !g->ag_wp) {
		free(w);
		fprintf(stderr, "llm-train: out of memory\n");
		return -1;
	}
	for (int l = 0; l < h->nl; l++)
		w[l] = h->lo[l].ln1;
	w[h->nl] = h->n;
	for (int b = 0; b < g->nbk; b++)
		g->ag_wp[b] = gbucket_wait_point(&g->bk[b], w, h->nl + 1);
	free(w);
	if (gcheck(cudaEventCreateWithFlags(&g->ev_upd, cudaEventDisableTiming), "event") ||
		gcheck(cudaEventCreateWithFlags(&g->ev_wf, cudaEventDisableTiming), "event"))
		return -1;
	for (int b = 0; b < g->nbk; b++)
		CK(cudaEventCreateWithFlags(&g->ag_ev[b], cudaEventDisableTiming), "event");
	return 0;
}

int llmt_gmodel_dp_allgather(llmt_gmodel *g)
{
	if (gsnap_fence(g))         /* a rank that updated nothing writes here first */
		return -1;
	if (!g->ag_ev && ag_plan(g))
		return -1;
	/* the fp32 copies (staged by gwf_refresh on the compute stream), then
	 * the bf16 copy of every block (the update wrote this rank's and the
	 * tails; the fp32 master stays sharded), on the communication stream,
	 * lowest range first with an event each: the next forward's first
	 * layers start when their bucket is there, the host does not wait.
	 * The buckets the forward waits for before the same layer: one group */
	if (gwf_refresh(g))
		return -1;
	CK(cudaEventRecord(g->ev_upd, g->st), "event");
	CK(cudaStreamWaitEvent(g->cst, g->ev_upd, 0), "wait event");
	if (g->wf_len && llmt_nccl_allreduce_sum_f32(g->dp, g->wf, g->wf, g->wf_len, g->cst))
		return -1;
	CK(cudaEventRecord(g->ev_wf, g->cst), "event");
	for (int b = g->nbk - 1, e; b >= 0; b = e - 1) {
		for (e = b; e > 0 && g->ag_wp[e - 1] == g->ag_wp[b]; e--)
			;
		if (llmt_nccl_group_start(g->dp))
			return -1;
		int bad = 0;
		for (int k = b; k >= e && !bad; k--) {
			gshard sh;
			gbucket_shard(&g->bk[k], g->dp_size, g->dp_rank, &sh);
			bad = sh.blk && llmt_nccl_allgather_bf16(g->dp, g->wc + sh.own_lo, g->wc + g->bk[k].lo,
													 sh.blk, g->cst);
		}
		if (llmt_nccl_group_end(g->dp) || bad)
			return -1;
		for (int k = b; k >= e; k--)
			CK(cudaEventRecord(g->ag_ev[k], g->cst), "event");
	}
	g->ag_pending = 1;
	g->ag_w = g->nbk;
	return 0;
}
