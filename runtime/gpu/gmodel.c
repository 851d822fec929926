/* gmodel.c: building the GPU model (device memory, streams, the host
 * mirror that owns the parameter table and init, the TP communicator;
 * uploads and downloads: gmodel_host.c), the fused AdamW, gradient norm and checkpoint
 * snapshots. Forward and backward are in gmodel_step.c. Reads the CPU
 * model's private layout (model_impl.h) for the flat offsets so both stay
 * one layout. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "comm_nccl.h"
#include "gmodel_impl.h"
#include "llmt/env.h"

int gcheck(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "llm-train: CUDA %s: %s\n", what, cudaGetErrorString(e));
	return -1;
}

int llmt_gpu_available(char *why, size_t len)
{
	int n = 0;   /* cudaGetDeviceCount leaves it untouched on failure */
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		snprintf(why, len, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
		return 0;
	}
	if (n < 1) {
		snprintf(why, len, "cudaGetDeviceCount found no device");
		return 0;
	}
	return 1;
}

int llmt_gpu_select(void)
{
	char err[200];
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		n = 0;
	int d = gpick_device(n, getenv(LLMT_ENV_GPU), getenv("LOCAL_RANK"), err, sizeof err);
	if (d < 0) {
		fprintf(stderr, "llm-train: GPU backend: %s%s%s\n", err, e != cudaSuccess ? ": " : "",
				e != cudaSuccess ? cudaGetErrorString(e) : "");
		return -1;
	}
	return gcheck(cudaSetDevice(d), "cudaSetDevice") ? -1 : d;
}

void *gdmem(llmt_gmodel *g, size_t bytes)
{
	if (g->nd == g->capd) {
		int nc = g->capd ? 2 * g->capd : 128;
		void **p = realloc(g->dall, sizeof *p * (size_t)nc);
		if (!p)
			return NULL;
		g->dall = p;
		g->capd = nc;
	}
	void *p = NULL;
	if (cudaMalloc(&p, bytes ? bytes : 256) != cudaSuccess) {
		fprintf(stderr, "llm-train: cudaMalloc of %zu bytes failed\n", bytes);
		return NULL;
	}
	/* zeroed on the compute stream: a cudaMemset runs on the legacy
	 * default stream, which the model's non-blocking streams do not wait
	 * for (the AdamW state made by the first update would race its kernel) */
	if (cudaMemsetAsync(p, 0, bytes ? bytes : 256, g->st) != cudaSuccess) {
		cudaFree(p);
		return NULL;
	}
	g->dall[g->nd++] = p;
	return p;
}

void gdfree(llmt_gmodel *g, void *p)
{
	for (int i = 0; i < g->nd; i++)
		if (g->dall[i] == p) {
			g->dall[i] = g->dall[--g->nd];
			cudaFree(p);
			return;
		}
}

#define A(p, bytes) do { if (!((p) = gdmem(g, (bytes)))) return -1; } while (0)
static int alloc_dev(llmt_gmodel *g)
{
	const llmt_model *h = g->h;
	size_t M = (size_t)h->M, d = (size_t)h->c.d_model, n = h->n;
	size_t Hh = (size_t)h->Hl * h->hd, BH = (size_t)h->B * h->Hl, T = (size_t)h->T;
	size_t V = (size_t)h->c.vocab_size, Fl = (size_t)h->Fl, Wq = (size_t)h->Wq;
	size_t hd = (size_t)h->hd, es = 2, C = (size_t)g->attn_chunk;
	/* the fp32 master is made by the optimizer (gmaster_need) */
	A(g->grads, n * 4);
	A(g->wc, n * 2);
	A(g->cos_t, T * hd / 2 * 4);
	A(g->sin_t, T * hd / 2 * 4);
	if (gwf_plan(g))
		return -1;
	if (!(g->slots = calloc((size_t)h->nslots, sizeof *g->slots)))
		return -1;
	for (int s = 0; s < h->nslots; s++) {
		struct gslot *sl = &g->slots[s];
		if (!(sl->xs = calloc((size_t)h->nl + 1, sizeof *sl->xs)) ||
			!(sl->la = calloc((size_t)h->nl + 1, sizeof *sl->la)))
			return -1;
		for (int l = 0; l <= h->nl; l++)
			A(sl->xs[l], M * d * 4);
		A(sl->pos, M * 4);
		A(sl->lo, M * 4);
		if (h->first) {
			A(sl->tok, M * 4);
			A(sl->eu, M * 4);
			A(sl->es, (M + 1) * 4);
			A(sl->ep, M * 4);
		}
		if (h->last) {
			A(sl->tgt, M * 4);
			A(sl->xf, M * d * es);
			A(sl->rstdf, M * 4);
			A(sl->dlog, M * V * es);
		}
	}
	if (gact_alloc(g))
		return -1;
	size_t big = M * (d > Hh ? d : Hh);
	size_t wide = d > Wq ? d : Wq;
	wide = wide > Fl ? wide : Fl;
	A(g->qkv_s, M * Wq * (g->fused ? 2 : 4));  /* fused: bf16 q, k, v and their gradients */
	A(g->y, M * d * 4);
	A(g->dx, M * d * 4);
	A(g->dh, M * d * 4);
	A(g->da, M * Fl * 4);
	A(g->dq, BH * T * hd * (g->fused ? 2 : 4));
	if (g->fused) {
		A(g->dk, M * (size_t)h->KVl * hd * 2);
		A(g->dv, M * (size_t)h->KVl * hd * 2);
		A(g->Dsc, BH * T * 4);
	} else {
		A(g->S, BH * C * T * 4);    /* one query chunk */
		A(g->datt, M * Hh * 4);
		A(g->dP, BH * C * T * 4);
		A(g->dk, BH * T * hd * 4);
		A(g->dv, BH * T * hd * 4);
		A(g->O, BH * T * hd * es);
		A(g->dS, BH * C * T * es);
	}
	A(g->dyact, big * es);
	A(g->dgu, M * 2 * Fl * es);
	A(g->dO, BH * T * hd * es);
	A(g->dqkv, M * Wq * es);
	size_t pw = GK_COLSUM_CHUNKS * wide > GK_COLSUM_MAX * hd ? GK_COLSUM_CHUNKS * wide
															  : GK_COLSUM_MAX * hd;
	A(g->part, pw * 4);
	A(g->contrib, M * (size_t)(h->Hl + h->KVl) * hd * 4);
	A(g->sumsq, GK_SUMSQ_BLOCKS * sizeof(double));
	if (h->c.qk_norm && g->tp)
		A(g->qkn_g, 2 * hd * 4);
	if (h->last) {
		A(g->logits, M * V * 4);
		A(g->lossrow, M * 4);
	}
#undef A
	if (cudaMallocHost((void **)&g->lossrow_h, M * 4) != cudaSuccess)
		return -1;
	return 0;
}

/* the fused forward at head dims 64 and 128: mma.sync (default) unless
 * LLM_TRAIN_GPU_FLASH=wmma, or the mma forward disagrees with the wmma
 * one on this device (gk_flash_mma_check); 0 or -1 (a bad value) */
static int gflash_choose(llmt_gmodel *g)
{
	const char *fm = getenv(LLMT_ENV_GPU_FLASH);
	int hd = g->h->hd;
	if (fm && *fm && strcmp(fm, "mma") && strcmp(fm, "wmma")) {
		fprintf(stderr, "llm-train: %s='%s' is not mma or wmma\n", LLMT_ENV_GPU_FLASH, fm);
		return -1;
	}
	g->flash_mma = g->fused && (hd == 64 || hd == 128) && !(fm && !strcmp(fm, "wmma"));
	if (g->flash_mma && gk_flash_mma_check(hd, g->st) != 1) {
		fprintf(stderr, "llm-train: the mma flash forward disagreed with the wmma one on this GPU "
				"(self-check at head dim %d): running the wmma forward (set %s=wmma to say so)\n",
				hd, LLMT_ENV_GPU_FLASH);
		g->flash_mma = 0;
	}
	return 0;
}

/* fused or chunked attention (LLM_TRAIN_GPU_ATTN, the head dim); the
 * fused kernels' rescale rests on a wmma layout property the API does not
 * promise: checked once per model on this device. 0 or -1 (a bad value) */
static int gattn_choose(llmt_gmodel *g)
{
	const char *am = getenv(LLMT_ENV_GPU_ATTN);
	if ((g->fused = gattn_fused(g->h->hd, am)) < 0) {
		fprintf(stderr, "llm-train: %s='%s' is not fused or chunked\n", LLMT_ENV_GPU_ATTN, am);
		return -1;
	}
	if (g->fused && gk_flash_layout_ok(g->st) != 1) {
		fprintf(stderr, "llm-train: the fused attention's tensor-core layout check failed on this GPU: "
				"running the chunked attention (set %s=chunked to say so; llm-train memory "
				"assumed the fused one)\n", LLMT_ENV_GPU_ATTN);
		g->fused = 0;
	}
	return gflash_choose(g);
}

static int building;        /* the host mirror is being built (on the CPU) */

int llmt_gmodel_building(void) { return building; }

llmt_gmodel *llmt_gmodel_create(const llmt_config *c, const llmt_par *par, int B, int T,
								int nslots)
{
	return llmt_gmodel_create_rc(c, par, B, T, nslots, LLMT_RECOMPUTE_NONE);
}

llmt_gmodel *llmt_gmodel_create_rc(const llmt_config *c, const llmt_par *par, int B, int T,
								   int nslots, int rc)
{
	llmt_gmodel *g = calloc(1, sizeof *g);
	if (!g) {
		fprintf(stderr, "llm-train: out of memory building the GPU model\n");
		return NULL;
	}
	g->rc = llmt_rc_mode(rc);
	g->rc_layers = llmt_rc_layers(rc, c->n_layers / par->pp);
	/* the host mirror: parameter table and init (the device's weights
	 * made a piece at a time: no whole host master unless asked for); its
	 * own activations are sized for one token only; host gradients only
	 * on demand */
	building = 1;
	g->h = llmt_model_create_mirror(c, par);
	building = 0;
	if (!g->h)
		goto fail;
	llmt_model *h = g->h;
	h->B = B;
	h->T = T;
	h->M = B * T;
	h->nslots = nslots;
	if (B < 1 || T < 1 || T > c->max_seq || nslots < 1) {
		fprintf(stderr, "llm-train: bad micro-batch B=%d T=%d (max_seq %d) slots=%d\n", B, T,
				c->max_seq, nslots);
		goto fail;
	}
	/* tensor parallelism: NCCL over the TP group, created before any
	 * device allocation so that every member reaches it (collective). A
	 * one-rank group given by the caller takes the same path: a single GPU
	 * runs the TP all-reduces through NCCL too. */
	if (par->tp_comm && !(g->tp = llmt_nccl_create(par->tp_comm, 0))) {
		fprintf(stderr, "llm-train: cannot create the NCCL communicator of the TP group "
						"(tp=%d, rank %d)\n", par->tp, par->tp_rank);
		goto fail;
	}
	if (gcheck(cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking), "stream") ||
		gcheck(cudaStreamCreateWithFlags(&g->cst, cudaStreamNonBlocking), "comm stream") ||
		gcheck(cudaStreamCreateWithFlags(&g->xst, cudaStreamNonBlocking), "copy stream") ||
		gcheck(cudaEventCreateWithFlags(&g->ev_snap, cudaEventDisableTiming), "event") ||
		gcheck(cudaEventCreateWithFlags(&g->ev_snap_done, cudaEventDisableTiming), "event"))
		goto fail;
	g->attn_chunk = gattn_chunk(T);
	if (gattn_choose(g))
		goto fail;
	if (alloc_dev(g)) {
		fprintf(stderr, "llm-train: out of GPU memory building the model (B=%d T=%d slots=%d)\n",
				B, T, nslots);
		goto fail;
	}
	if (!(g->mm = gmm_create(g->st, 64u << 20)))
		goto fail;
	if (!(g->tok_h = malloc((size_t)h->M * 4 * 3 + 4)))
		goto fail;
	/* rotary tables for length T, same values as the CPU model's */
	int h2 = h->hd / 2;
	float *ct = malloc((size_t)T * h2 * 4), *sn = malloc((size_t)T * h2 * 4);
	double *inv = malloc((size_t)h2 * sizeof *inv);
	if (!ct || !sn || !inv) {
		free(ct);
		free(sn);
		free(inv);
		goto fail;
	}
	llmt_rope_inv_freq(c, h->hd, inv);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < h2; i++) {
			ct[t * h2 + i] = (float)cos(t * inv[i]);
			sn[t * h2 + i] = (float)sin(t * inv[i]);
		}
	free(inv);
	/* dmem's zeroing is queued on the compute stream, which the legacy
	 * stream's copies below do not wait for: it must not land on the tables
	 * after them */
	int bad = gcheck(cudaStreamSynchronize(g->st), "synchronize") ||
			  gcheck(cudaMemcpy(g->cos_t, ct, (size_t)T * h2 * 4, cudaMemcpyHostToDevice), "copy") ||
			  gcheck(cudaMemcpy(g->sin_t, sn, (size_t)T * h2 * 4, cudaMemcpyHostToDevice), "copy");
	free(ct);
	free(sn);
	/* the table copies ran on the legacy default stream, which the
	 * non-blocking model streams do not wait for */
	bad = bad || gcheck(cudaDeviceSynchronize(), "synchronize");
	if (bad || ginit_weights(g, 0) || llmt_gmodel_sync(g))
		goto fail;
	return g;
fail:
	llmt_gmodel_free(g);
	return NULL;
}

void llmt_gmodel_free(llmt_gmodel *g)
{
	if (!g)
		return;
	if (g->dp)
		gag_finish(g);          /* a weight all-gather in flight */
	if (g->st)
		llmt_gmodel_sync(g);
	if (g->cst)
		cudaStreamSynchronize(g->cst);
	llmt_nccl_free(g->tp);
	gmm_free(g->mm);
	for (int i = 0; i < g->nd; i++)
		cudaFree(g->dall[i]);
	free(g->dall);
	if (g->slots && g->h)
		for (int s = 0; s < g->h->nslots; s++) {
			free(g->slots[s].xs);
			free(g->slots[s].la);
		}
	free(g->slots);
	for (int i = 0; i < g->nbk; i++)
		cudaEventDestroy(g->bk_ev[i]);
	free(g->bk);
	free(g->bk_ev);
	for (int i = 0; g->ag_ev && i < g->nbk; i++)
		cudaEventDestroy(g->ag_ev[i]);
	free(g->ag_ev);
	free(g->ag_wp);
	if (g->ev_upd)
		cudaEventDestroy(g->ev_upd);
	if (g->ev_wf)
		cudaEventDestroy(g->ev_wf);
	free(g->dp_part);
	if (g->dp_sq)
		cudaFree(g->dp_sq);
	free(g->layer_t0);
	free(g->npc);
	free(g->sh_lo);
	free(g->sh_hi);
	free(g->sh_at);
	free(g->wf_flat);
	free(g->wf_at);
	free(g->wf_n);
	if (g->lossrow_h)
		cudaFreeHost(g->lossrow_h);
	if (g->snap_h)
		cudaFreeHost(g->snap_h);
	if (g->ev_snap)
		cudaEventDestroy(g->ev_snap);
	if (g->ev_snap_done)
		cudaEventDestroy(g->ev_snap_done);
	if (g->st)
		cudaStreamDestroy(g->st);
	if (g->cst)
		cudaStreamDestroy(g->cst);
	if (g->xst)
		cudaStreamDestroy(g->xst);
	free(g->tok_h);
	if (g->pinned) {
		cudaHostUnregister(g->h->master);
		cudaHostUnregister(g->h->grads);
	}
	if (g->h)
		g->h->dev = NULL;       /* the mirror is freed on the CPU path */
	llmt_model_free(g->h);
	free(g);
}

int llmt_gmodel_zero_grad(llmt_gmodel *g)
{
	g->gz = 1;  /* the next backward writes them (gmodel_step.c), a reader zeroes */
	return 0;
}

int ggrads_settle(llmt_gmodel *g)
{
	/* the init kept there given up; a checkpoint snapshot may still read
	 * the gradient buffer (scratch) */
	if (ginit_release(g))
		return -1;
	if (!g->gz || gsnap_fence(g))
		return g->gz ? -1 : 0;
	g->gz = 0;
	return gcheck(cudaMemsetAsync(g->grads, 0, g->h->n * 4, g->st), "zero gradients");
}

int llmt_gmodel_grad_sumsq(llmt_gmodel *g, double *out)
{
	double part[GK_SUMSQ_BLOCKS];
	if (ggrads_settle(g) || gcheck(gk_sumsq(g->grads, g->h->n, g->sumsq, g->st), "sumsq") ||
		gcheck(cudaMemcpyAsync(part, g->sumsq, sizeof part, cudaMemcpyDeviceToHost, g->st),
			   "sumsq copy") || llmt_gmodel_sync(g))
		return -1;
	double s = 0.0;
	for (int i = 0; i < GK_SUMSQ_BLOCKS; i++)
		s += part[i];
	*out = s;
	return 0;
}

int llmt_gmodel_adamw_range(llmt_gmodel *g, size_t lo, size_t hi, double lr, double gscale,
							const llmt_adamw_cfg *cfg, long t)
{
	/* AdamW state only when the device optimizer is used (the training
	 * loop's optimizer runs on the host with its own state) */
	if (gmaster_need(g) || gag_finish(g) || ggrads_settle(g))
		return -1;
	if (!g->m1 && (!(g->m1 = gdmem(g, g->nsh * 4)) || !(g->v1 = gdmem(g, g->nsh * 4)))) {
		fprintf(stderr, "llm-train: out of GPU memory for the AdamW state\n");
		return -1;
	}
	if (gsnap_fence(g))
		return -1;
	int np;
	const llmt_param_info *pt = llmt_model_params(g->h, &np);
	const double bc1 = 1.0 - pow(cfg->beta1, (double)t), bc2 = 1.0 - pow(cfg->beta2, (double)t);
	float b1 = (float)cfg->beta1, b2 = (float)cfg->beta2;
	float omb1 = (float)(1.0 - cfg->beta1), omb2 = (float)(1.0 - cfg->beta2);
	float step = (float)(lr / bc1), bc2s = (float)sqrt(bc2), eps = (float)cfg->eps;
	float keep_d = (float)(1.0 - lr * cfg->weight_decay);
	/* runs of consecutive tensors with the same decay treatment, cut to
	 * [lo, hi) (padding after the last tensor counts with it) */
	for (int i = 0; i < np;) {
		int j = i + 1;
		while (j < np && pt[j].no_decay == pt[i].no_decay)
			j++;
		size_t a = pt[i].offset, b = j < np ? pt[j].offset : g->h->n;
		a = a > lo ? a : lo;
		b = b < hi ? b : hi;
		float keep = pt[i].no_decay ? 1.0f : keep_d;
		size_t p = gsh_at(g, a);    /* [a, b) lies in one part of a share */
		if (a < b && gcheck(gk_adamw(g->master + p, g->grads + a, g->m1 + p, g->v1 + p,
									 g->wc + a, b - a, (float)gscale, b1, b2, omb1, omb2, keep,
									 step, bc2s, eps, g->st), "adamw"))
			return -1;
		i = j;
	}
	return 0;
}

int llmt_gmodel_adamw(llmt_gmodel *g, double lr, double gscale, const llmt_adamw_cfg *cfg, long t)
{
	if (g->sh_lo) {
		fprintf(stderr, "llm-train: the whole-buffer AdamW on a ZeRO-1 share\n");
		return -1;
	}
	return llmt_gmodel_adamw_range(g, 0, g->h->n, lr, gscale, cfg, t) || gwf_refresh(g) ? -1 : 0;
}

int llmt_gmodel_snapshot_start(llmt_gmodel *g)
{
	size_t bytes = g->h->n * 4;
	if (gmaster_need(g))
		return -1;
	const float *src = g->master;
	if (!g->snap_h && gcheck(cudaMallocHost((void **)&g->snap_h, bytes), "pinned snapshot buffer"))
		return -1;
	/* a ZeRO-1 share: gathered into the gradient buffer (collective over
	 * DP; the next write of grads waits for the copy) */
	if (g->sh_lo) {
		if (gag_finish(g) || gsnap_fence(g) || gsh_gather(g, g->master, g->grads) ||
			llmt_nccl_wait(g->dp, g->st))
			return -1;
		src = g->grads;
	}
	/* the copy stream starts after everything queued on the compute stream */
	if (gcheck(cudaEventRecord(g->ev_snap, g->st), "event") ||
		gcheck(cudaStreamWaitEvent(g->xst, g->ev_snap, 0), "wait event") ||
		gcheck(cudaMemcpyAsync(g->snap_h, src, bytes, cudaMemcpyDeviceToHost, g->xst),
			   "snapshot copy"))
		return -1;
	/* the next optimizer step must not overwrite master before the copy
	 * is done (forward and backward may run meanwhile) */
	if (gcheck(cudaEventRecord(g->ev_snap_done, g->xst), "event"))
		return -1;
	g->snap_pending = 1;
	return 0;
}

const float *llmt_gmodel_snapshot_wait(llmt_gmodel *g)
{
	if (!g->snap_h || gcheck(cudaStreamSynchronize(g->xst), "snapshot"))
		return NULL;
	return g->snap_h;
}

int llmt_gmodel_set_attn_chunk(llmt_gmodel *g, int C)
{
	/* a shorter chunk that divides T fits the buffers sized for the
	 * create-time one (P: T(T+C)/2 per head; scratch: C x T) */
	if (g->fused || C < 1 || C > g->attn_chunk || g->h->T % C)
		return -1;
	g->attn_chunk = C;
	return 0;
}

int llmt_gmodel_flash_mma(const llmt_gmodel *g) { return g->flash_mma; }
