/* gmodel_step.c: forward and backward of one micro-batch on the GPU, the
 * same sequence of operations as model_step.c (cuBLASLt products through
 * gmm, the rest through gk_*, the tensor-parallel all-reduces through NCCL
 * on the compute stream), the bucketed data-parallel gradient
 * reduce-scatter that overlaps backward, and the ZeRO-1 optimizer step
 * (each rank updates its blocks, then all-gathers the weights). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "comm_nccl.h"
#include "gmodel_impl.h"

#define BF LLMT_DT_BF16
#define F32 LLMT_DT_F32
#define CK(call, what) do { if (gcheck((call), (what))) return -1; } while (0)

/* Y[M][N] = X[M][K] . W^T, W stored [N][K] (bf16 compute copy) */
static int lin_fwd(llmt_gmodel *g, const void *X, size_t woff, void *Y, llmt_dt yt, int M, int N,
				   int K)
{
	return gmm(g->mm, 1, M, N, K, X, 0, g->wc + woff, 1, BF, Y, yt, 1.0f, 0);
}

/* dW[N][K] += alpha dY^T X (= in the first backward since zero_grad:
 * beta 0, no zeroed buffer read); dX[M][K] = alpha dY . W (of type dxt) */
static int lin_bwd_t(llmt_gmodel *g, const void *dY, const void *X, size_t woff, void *dX,
					 llmt_dt dxt, int M, int N, int K, float alpha)
{
	if (gmm(g->mm, 1, N, K, M, dY, 1, X, 0, BF, g->grads + woff, F32, alpha, !g->gw))
		return -1;
	return gmm(g->mm, 1, M, K, N, dY, 0, g->wc + woff, 0, BF, dX, dxt, alpha, 0);
}

static int lin_bwd(llmt_gmodel *g, const void *dY, const void *X, size_t woff, float *dX, int M,
				   int N, int K, float alpha)
{
	return lin_bwd_t(g, dY, X, woff, dX, F32, M, N, K, alpha);
}

/* Causal attention in query chunks of g->attn_chunk rows (host_plan.h:
 * gattn_chunk): chunk c's queries meet keys 0 .. (c+1)C-1 only, so the
 * blocks above the diagonal are neither computed nor stored. Scores S and
 * their gradient dP are fp32 scratch of one chunk; P (bf16) is kept per
 * layer, chunk after chunk. q, k, v, O are head-major [BH][T][hd]. */
static int attn_fwd(llmt_gmodel *g, struct glayer_act *a, int BH, int T, int hd,
					const int32_t *lo)
{
	int C = g->attn_chunk;
	long long sT = (long long)T * hd;
	for (int c = 0; c < T / C; c++) {
		int r0 = c * C, kc = r0 + C;
		long long sP = (long long)C * kc;
		gk_bf16 *P = a->P + gattn_p_offset((size_t)BH, C, c);
		if (gmm_ld(g->mm, BH, C, kc, hd, a->q + (size_t)r0 * hd, hd, sT, 0, a->k, hd, sT, 1, BF,
				   g->S, kc, sP, F32, 1.0f / sqrtf((float)hd), 0))
			return -1;
		CK(gk_softmax_seg_chunk_fwd(g->S, P, BH, C, kc, r0, g->h->Hl, T, lo, g->st), "softmax");
		if (gmm_ld(g->mm, BH, C, hd, kc, P, kc, sP, 0, a->v, hd, sT, 0, BF,
				   g->O + (size_t)r0 * hd, hd, sT, BF, 1.0f, 0))
			return -1;
	}
	return 0;
}

/* Backward of attn_fwd from dO: dq, dk, dv (fp32, head-major). dk and dv
 * collect every chunk's share, in chunk order. */
static int attn_bwd(llmt_gmodel *g, struct glayer_act *a, int BH, int T, int hd)
{
	int C = g->attn_chunk, nc = T / C, acc = nc > 1;
	long long sT = (long long)T * hd;
	float sc = 1.0f / sqrtf((float)hd);
	if (acc) {
		CK(cudaMemsetAsync(g->dk, 0, (size_t)BH * T * hd * 4, g->st), "zero dk");
		CK(cudaMemsetAsync(g->dv, 0, (size_t)BH * T * hd * 4, g->st), "zero dv");
	}
	for (int c = 0; c < nc; c++) {
		int r0 = c * C, kc = r0 + C;
		long long sP = (long long)C * kc;
		const gk_bf16 *P = a->P + gattn_p_offset((size_t)BH, C, c);
		const gk_bf16 *dO = g->dO + (size_t)r0 * hd, *q = a->q + (size_t)r0 * hd;
		if (gmm_ld(g->mm, BH, C, kc, hd, dO, hd, sT, 0, a->v, hd, sT, 1, BF, g->dP, kc, sP, F32,
				   1.0f, 0) ||
			gmm_ld(g->mm, BH, kc, hd, C, P, kc, sP, 1, dO, hd, sT, 0, BF, g->dv, hd, sT, F32,
				   1.0f, acc))
			return -1;
		CK(gk_softmax_chunk_bwd(P, g->dP, g->dS, BH, C, kc, r0, g->st), "softmax backward");
		if (gmm_ld(g->mm, BH, C, hd, kc, g->dS, kc, sP, 0, a->k, hd, sT, 0, BF,
				   g->dq + (size_t)r0 * hd, hd, sT, F32, sc, 0) ||
			gmm_ld(g->mm, BH, kc, hd, C, g->dS, kc, sP, 1, q, hd, sT, 0, BF, g->dk, hd, sT, F32,
				   sc, acc))
			return -1;
	}
	return 0;
}

/* Megatron's f/g: the sum over the TP group of a partial result (output
 * of a row-parallel linear, input gradient of a column-parallel one), in
 * place, queued on the compute stream after the kernels that produce it
 * and before those that read it. Whenever the model has a TP communicator,
 * even of one rank. */
static int tp_sum(llmt_gmodel *g, float *buf, size_t n)
{
	if (!g->tp)
		return 0;
	return llmt_nccl_allreduce_sum_f32(g->tp, buf, buf, n, g->st);
}

/* Y = R + X . W^T (fp32): without TP the residual add is the product's
 * epilogue (cuBLASLt's C input apart from its output); with TP the
 * partial products are summed over the group first, then added */
static int lin_fwd_res(llmt_gmodel *g, const void *X, size_t woff, const float *R, float *Y,
					   int M, int N, int K)
{
	size_t n = (size_t)M * N;
	if (!g->tp)
		return gmm_res(g->mm, M, N, K, X, 0, g->wc + woff, 1, BF, R, Y, F32, 1.0f);
	if (lin_fwd(g, X, woff, g->y, F32, M, N, K) || tp_sum(g, g->y, n))
		return -1;
	CK(cudaMemcpyAsync(Y, R, n * 4, cudaMemcpyDeviceToDevice, g->st), "copy");
	CK(gk_add(Y, g->y, n, g->st), "add");
	return 0;
}

/* one layer's attention from its q, k, v (again before its backward
 * under --recompute attn); fused: token-major in and out, no layout
 * kernels; packed samples by their first token's index (one id per
 * sample within a sequence) */
static int attn_core_fwd(llmt_gmodel *g, struct gslot *sl, struct glayer_act *a)
{
	const llmt_model *h = g->h;
	const int32_t *lo = sl->packed ? sl->lo : NULL;
	if (g->fused)
		return gcheck((g->flash_mma ? gk_flash_fwd : gk_flash_fwd_wmma)(
						  a->q, a->k, a->v, a->att, a->lse, lo, h->B, h->T, h->Hl, h->KVl, h->hd,
						  g->st), "fused attention");
	if (attn_fwd(g, a, h->B * h->Hl, h->T, h->hd, lo))
		return -1;
	return gcheck(gk_heads_to_tokens(g->O, a->att, h->B, h->T, h->Hl, h->hd, g->st),
				  "heads to tokens");
}

static int layer_fwd(llmt_gmodel *g, struct gslot *sl, int l)
{
	const llmt_model *h = g->h;
	const llmt_config *c = &h->c;
	const struct layer_off *lo = &h->lo[l];
	struct glayer_act *a = &sl->la[l];
	int M = h->M, d = c->d_model, hd = h->hd, T = h->T;
	float eps = (float)c->norm_eps;
	float *x = sl->xs[l];
	cudaStream_t st = g->st;

	CK(gk_rmsnorm_fwd(x, gw32(g, lo->ln1), a->h1, a->rstd1, M, d, eps, st), "rmsnorm");
	void *qkv = c->qk_norm ? a->qkv : g->qkv_s;   /* bf16 on the fused path */
	if (lin_fwd(g, a->h1, lo->qkv, qkv, g->fused ? BF : F32, M, h->Wq, d))
		return -1;
	CK(gk_attn_prep_fwd_tm(qkv, a->q, a->k, a->v, h->B, T, h->Hl, h->KVl, hd,
						   c->qk_norm ? gw32(g, lo->qn) : NULL,
						   c->qk_norm ? gw32(g, lo->kn) : NULL, a->qr, a->kr, eps, g->cos_t,
						   g->sin_t, sl->packed ? sl->pos : NULL, g->fused, st), "attention prep");
	if (attn_core_fwd(g, sl, a))
		return -1;
	if (lin_fwd_res(g, a->att, lo->o, x, a->x_mid, M, d, h->Hl * hd))
		return -1;

	CK(gk_rmsnorm_fwd(a->x_mid, gw32(g, lo->ln2), a->h2, a->rstd2, M, d, eps, st), "rmsnorm");
	if (lin_fwd(g, a->h2, lo->gu, a->gu, BF, M, 2 * h->Fl, d))
		return -1;
	CK(gk_swiglu_fwd(a->gu, a->a, M, h->Fl, st), "swiglu");
	return lin_fwd_res(g, a->a, lo->down, a->x_mid, sl->xs[l + 1], M, d, h->Fl);
}

/* packed samples of slot s (model.h's llmt_model_set_seg): each token's
 * rotary row and first key, computed here, uploaded for the slot */
int llmt_gmodel_set_seg(llmt_gmodel *g, int s, const int32_t *seg)
{
	struct gslot *sl = &g->slots[s];
	int B = g->h->B, T = g->h->T, M = B * T;
	sl->packed = seg != NULL;
	if (!seg)
		return 0;
	int32_t *pl = malloc(sizeof(int32_t) * 2 * (size_t)M);
	if (!pl)
		return -1;
	for (int b = 0; b < B; b++)
		for (int t = 0, start = 0; t < T; t++) {
			int i = b * T + t;
			if (t > 0 && seg[i] != seg[i - 1])
				start = t;
			pl[i] = t - start;
			pl[M + i] = start;
		}
	cudaError_t e = cudaMemcpyAsync(sl->pos, pl, sizeof(int32_t) * (size_t)M,
									cudaMemcpyHostToDevice, g->st);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(sl->lo, pl + M, sizeof(int32_t) * (size_t)M, cudaMemcpyHostToDevice,
							g->st);
	int rc = e == cudaSuccess ? llmt_gmodel_sync(g) : -1; /* pl is read before it is freed */
	if (e != cudaSuccess)
		fprintf(stderr, "llm-train: GPU: sample boundaries: %s\n", cudaGetErrorString(e));
	free(pl);
	return rc;
}

int llmt_gmodel_forward(llmt_gmodel *g, int s, const int32_t *tokens, const float *act_in,
						const int32_t *targets, float *act_out, float *loss_out)
{
	const llmt_model *h = g->h;
	struct gslot *sl = &g->slots[s];
	int M = h->M, d = h->c.d_model;
	size_t Md = (size_t)M * d;
	cudaStream_t st = g->st;
	if (h->first) {
		/* the embedding backward plan is built here, while the host has
		 * the tokens (pageable copies: the staging buffer is reused) */
		int32_t *u = g->tok_h, *es = u + M, *ep = es + M + 1;
		int nu = gembed_plan(tokens, M, h->c.vocab_size, u, es, ep);
		if (nu < 0) {
			fprintf(stderr, "llm-train: a token is outside the vocabulary of %d\n",
					h->c.vocab_size);
			return -1;
		}
		sl->neu = nu;
		CK(cudaMemcpyAsync(sl->tok, tokens, (size_t)M * 4, cudaMemcpyHostToDevice, st), "tokens");
		CK(cudaMemcpyAsync(sl->eu, u, (size_t)nu * 4, cudaMemcpyHostToDevice, st), "plan");
		CK(cudaMemcpyAsync(sl->es, es, (size_t)(nu + 1) * 4, cudaMemcpyHostToDevice, st), "plan");
		CK(cudaMemcpyAsync(sl->ep, ep, (size_t)M * 4, cudaMemcpyHostToDevice, st), "plan");
		if (llmt_gmodel_sync(g))                        /* staging is reused */
			return -1;
		if (gag_wait(g, h->lo[0].ln1))   /* the weight all-gather, as it lands */
			return -1;
		CK(gk_embed_fwd(gw32(g, h->off_embed), sl->tok, sl->xs[0], M, d, st), "embedding");
	} else {
		CK(cudaMemcpyAsync(sl->xs[0], act_in, Md * 4, cudaMemcpyHostToDevice, st), "act_in");
	}
	for (int l = 0; l < h->nl; l++)
		if (gag_wait(g, l + 1 < h->nl ? h->lo[l + 1].ln1 : h->n) ||
			layer_fwd(g, sl, l))
			return -1;
	float *xl = sl->xs[h->nl];
	if (!h->last) {
		CK(cudaMemcpyAsync(act_out, xl, Md * 4, cudaMemcpyDeviceToHost, st), "act_out");
		return llmt_gmodel_sync(g);
	}
	CK(gk_rmsnorm_fwd(xl, gw32(g, h->off_norm), sl->xf, sl->rstdf, M, d,
					  (float)h->c.norm_eps, st), "final norm");
	if (lin_fwd(g, sl->xf, h->off_head, g->logits, F32, M, h->c.vocab_size, d))
		return -1;
	/* a target outside the vocabulary would be an out-of-bounds read in
	 * the cross-entropy kernel: on a device, a dead context */
	for (int m = 0; m < M; m++)
		if (targets[m] < -1 || targets[m] >= h->c.vocab_size) { /* -1: not trained on */
			fprintf(stderr, "llm-train: target %d (row %d) is outside the vocabulary of %d\n",
					(int)targets[m], m, h->c.vocab_size);
			return -1;
		}
	CK(cudaMemcpyAsync(sl->tgt, targets, (size_t)M * 4, cudaMemcpyHostToDevice, st), "targets");
	CK(gk_xent_fwd(g->logits, sl->tgt, sl->dlog, g->lossrow, M, h->c.vocab_size,
				   (float)h->c.z_loss, st), "cross-entropy");
	CK(cudaMemcpyAsync(g->lossrow_h, g->lossrow, (size_t)M * 4, cudaMemcpyDeviceToHost, st),
	   "loss");
	if (llmt_gmodel_sync(g))
		return -1;
	double tot = 0.0;
	for (int m = 0; m < M; m++)
		tot += g->lossrow_h[m];
	if (loss_out)
		*loss_out = (float)(tot / M);
	return 0;
}

int llmt_gmodel_logits(llmt_gmodel *g, float *out)
{
	if (!g->h->last)
		return -1;
	size_t n = (size_t)g->h->M * g->h->c.vocab_size;
	CK(cudaMemcpyAsync(out, g->logits, n * 4, cudaMemcpyDeviceToHost, g->st), "logits");
	return llmt_gmodel_sync(g);
}

/* launch the all-reduce of every bucket whose tensors are all final */
static int dp_launch(llmt_gmodel *g, int first_done)
{
	if (!g->reducing || g->dp_failed)
		return g->dp_failed ? -1 : 0;
	int ready = gbucket_ready(g->bk, g->nbk, first_done);
	if (g->bk_sent == ready)
		return 0;
	/* the buckets ready now in one group: one launch */
	if (llmt_nccl_group_start(g->dp)) {
		g->dp_failed = 1;
		return -1;
	}
	for (; g->bk_sent < ready; g->bk_sent++) {
		gshard sh;
		gbucket_shard(&g->bk[g->bk_sent], g->dp_size, g->dp_rank, &sh);
		cudaEvent_t ev = g->bk_ev[g->bk_sent];
		CK(cudaEventRecord(ev, g->st), "bucket event");
		CK(cudaStreamWaitEvent(g->cst, ev, 0), "bucket wait");
		/* in place: this rank's block of the bucket gets the sum */
		float *base = g->grads + g->bk[g->bk_sent].lo;
		if ((sh.blk && llmt_nccl_reduce_scatter_sum_f32(g->dp, base,
														 g->grads + sh.own_lo, sh.blk, g->cst)) ||
			(sh.hi > sh.tail_lo &&
			 llmt_nccl_allreduce_sum_f32(g->dp, g->grads + sh.tail_lo, g->grads + sh.tail_lo,
										 sh.hi - sh.tail_lo, g->cst))) {
			g->dp_failed = 1;
			llmt_nccl_group_end(g->dp);
			return -1;
		}
	}
	if (llmt_nccl_group_end(g->dp)) {
		g->dp_failed = 1;
		return -1;
	}
	return 0;
}

static int layer_bwd(llmt_gmodel *g, struct gslot *sl, int l)
{
	const llmt_model *h = g->h;
	const llmt_config *c = &h->c;
	const struct layer_off *lo = &h->lo[l];
	struct glayer_act *a = &sl->la[l];
	int M = h->M, d = c->d_model, hd = h->hd, BH = h->B * h->Hl, T = h->T;
	int Hh = h->Hl * hd;
	size_t Md = (size_t)M * d;
	float *dx = g->dx;
	cudaStream_t st = g->st;

	CK(gk_f32_to_bf16(dx, g->dyact, Md, st), "to bf16");
	if (lin_bwd(g, g->dyact, a->a, lo->down, g->da, M, d, h->Fl, 1.0f))
		return -1;
	CK(gk_swiglu_bwd(a->gu, g->da, g->dgu, M, h->Fl, st), "swiglu backward");
	if (lin_bwd(g, g->dgu, a->h2, lo->gu, g->dh, M, 2 * h->Fl, d, 1.0f) || tp_sum(g, g->dh, Md))
		return -1;
	CK(gk_rmsnorm_bwd(a->x_mid, gw32(g, lo->ln2), a->rstd2, g->dh, dx, g->grads + lo->ln2,
					  g->part, M, d, !g->gw, st), "rmsnorm backward");

	CK(gk_f32_to_bf16(dx, g->dyact, Md, st), "to bf16");
	/* ATTN: the attention's probabilities or logsumexp and its output
	 * again, by the forward's kernels on the kept q, k, v */
	if (GRC_AT(g, l) == LLMT_RECOMPUTE_ATTN && attn_core_fwd(g, sl, a))
		return -1;
	if (g->fused) {
		/* the attention output gradient straight into bf16 token-major dO */
		if (lin_bwd_t(g, g->dyact, a->att, lo->o, g->dO, BF, M, d, Hh, 1.0f))
			return -1;
		CK(gk_flash_bwd(a->q, a->k, a->v, a->att, g->dO, a->lse, g->Dsc, sl->packed ? sl->lo : NULL,
						(gk_bf16 *)g->dq, (gk_bf16 *)g->dk, (gk_bf16 *)g->dv, h->B, T, h->Hl,
						h->KVl, hd, st), "fused attention backward");
	} else {
		if (lin_bwd(g, g->dyact, a->att, lo->o, g->datt, M, d, Hh, 1.0f))
			return -1;
		CK(gk_tokens_to_heads(g->datt, g->dO, h->B, T, h->Hl, hd, st), "tokens to heads");
		if (attn_bwd(g, a, BH, T, hd))
			return -1;
	}
	/* QK-norm weights are replicated but each TP rank sees only its heads:
	 * their gradient is summed over TP in a scratch (earlier micro-batches
	 * already in the buffer must not be summed again), then added (copied
	 * in the first backward). The kernel adds: without TP the first
	 * backward zeroes the two (2 hd floats; kn follows qn) */
	float *dqw = g->qkn_g ? g->qkn_g : g->grads + lo->qn;
	float *dkw = g->qkn_g ? g->qkn_g + hd : g->grads + lo->kn;
	if (g->qkn_g)
		CK(cudaMemsetAsync(g->qkn_g, 0, sizeof(float) * 2 * (size_t)hd, st), "memset");
	else if (c->qk_norm && g->gw)
		CK(cudaMemsetAsync(dqw, 0, sizeof(float) * 2 * (size_t)hd, st), "memset");
	CK(gk_attn_prep_bwd_tm(g->dq, g->dk, g->dv, g->dqkv, a->qkv, h->B, T, h->Hl, h->KVl, hd,
						   c->qk_norm ? gw32(g, lo->qn) : NULL,
						   c->qk_norm ? gw32(g, lo->kn) : NULL, a->qr, a->kr,
						   c->qk_norm ? dqw : NULL, c->qk_norm ? dkw : NULL, g->contrib,
						   g->part, g->cos_t, g->sin_t, sl->packed ? sl->pos : NULL, g->fused, st),
	   "attention prep backward");
	if (g->qkn_g) {
		if (tp_sum(g, g->qkn_g, 2 * (size_t)hd))
			return -1;
		if (g->gw)
			CK(cudaMemcpyAsync(g->grads + lo->qn, g->qkn_g, sizeof(float) * 2 * (size_t)hd,
							   cudaMemcpyDeviceToDevice, st), "copy");
		else {
			CK(gk_add(g->grads + lo->qn, g->qkn_g, (size_t)hd, st), "add");
			CK(gk_add(g->grads + lo->kn, g->qkn_g + hd, (size_t)hd, st), "add");
		}
	}
	if (lin_bwd(g, g->dqkv, a->h1, lo->qkv, g->dh, M, h->Wq, d, 1.0f) || tp_sum(g, g->dh, Md))
		return -1;
	CK(gk_rmsnorm_bwd(sl->xs[l], gw32(g, lo->ln1), a->rstd1, g->dh, dx, g->grads + lo->ln1,
					  g->part, M, d, !g->gw, st), "rmsnorm backward");
	return dp_launch(g, g->layer_t0 ? g->layer_t0[l] : 0);
}

int llmt_gmodel_backward_dp(llmt_gmodel *g, int s, const float *grad_out, float *grad_in,
							float grad_scale, int reduce)
{
	const llmt_model *h = g->h;
	struct gslot *sl = &g->slots[s];
	int M = h->M, d = h->c.d_model;
	size_t Md = (size_t)M * d;
	cudaStream_t st = g->st;
	if (ginit_release(g))   /* before the gradients are written */
		return -1;
	g->reducing = reduce && g->dp;
	g->bk_sent = 0;
	g->gw = g->gz;          /* the first backward since zero_grad writes */
	g->gz = 0;
	if (gsnap_fence(g))     /* a snapshot may still read grads (scratch) */
		return -1;
	if (h->last) {
		if (lin_bwd(g, sl->dlog, sl->xf, h->off_head, g->dh, M, h->c.vocab_size, d, grad_scale))
			return -1;
		CK(cudaMemsetAsync(g->dx, 0, Md * 4, st), "memset");
		CK(gk_rmsnorm_bwd(sl->xs[h->nl], gw32(g, h->off_norm), sl->rstdf, g->dh, g->dx,
						  g->grads + h->off_norm, g->part, M, d, !g->gw, st), "final norm backward");
	} else {
		CK(cudaMemcpyAsync(g->dx, grad_out, Md * 4, cudaMemcpyHostToDevice, st), "grad_out");
	}
	/* FULL: the layer's forward again from its kept input (xs[l + 1] is
	 * rewritten with the same values, no longer read) */
	for (int l = h->nl - 1; l >= 0; l--)
		if ((GRC_AT(g, l) == LLMT_RECOMPUTE_FULL && layer_fwd(g, sl, l)) || layer_bwd(g, sl, l))
			return -1;
	if (h->first) {
		/* a scatter-add over the tokens of the micro-batch: the first
		 * backward zeroes the table first, unless the tied head's product
		 * wrote it (one stage) */
		if (g->gw && !(h->last && h->off_head == h->off_embed))
			CK(cudaMemsetAsync(g->grads + h->off_embed, 0,
							   (size_t)h->c.vocab_size * d * sizeof(float), st), "memset");
		CK(gk_embed_bwd(g->grads + h->off_embed, sl->eu, sl->es, sl->ep, sl->neu, g->dx, d, st),
		   "embedding backward");
	} else {
		CK(cudaMemcpyAsync(grad_in, g->dx, Md * 4, cudaMemcpyDeviceToHost, st), "grad_in");
		if (llmt_gmodel_sync(g))
			return -1;
	}
	return dp_launch(g, 0);
}

int llmt_gmodel_backward(llmt_gmodel *g, int s, const float *grad_out, float *grad_in,
						 float grad_scale)
{
	return llmt_gmodel_backward_dp(g, s, grad_out, grad_in, grad_scale, 0);
}

int llmt_gmodel_set_dp(llmt_gmodel *g, struct llmt_nccl *dp, size_t bucket_elems)
{
	int np;
	const llmt_param_info *pt = llmt_model_params(g->h, &np);
	size_t *off = malloc(sizeof *off * (size_t)np), *num = malloc(sizeof *num * (size_t)np);
	int cap = np + 1;
	g->bk = calloc((size_t)cap, sizeof *g->bk);
	g->bk_ev = calloc((size_t)cap, sizeof *g->bk_ev);
	g->layer_t0 = calloc((size_t)g->h->nl + 1, sizeof *g->layer_t0);
	if (!off || !num || !g->bk || !g->bk_ev || !g->layer_t0) {
		free(off);
		free(num);
		fprintf(stderr, "llm-train: out of memory planning gradient buckets\n");
		return -1;
	}
	for (int i = 0; i < np; i++) {
		off[i] = pt[i].offset;
		num[i] = pt[i].numel;
		for (int l = 0; l < g->h->nl; l++)
			if (pt[i].offset == g->h->lo[l].ln1)
				g->layer_t0[l] = i;
	}
	g->nbk = gbucket_plan(off, num, np, g->h->n, bucket_elems, g->bk, cap);
	free(off);
	free(num);
	if (g->nbk < 0) {
		fprintf(stderr, "llm-train: cannot plan gradient buckets\n");
		return -1;
	}
	for (int i = 0; i < g->nbk; i++)
		if (gcheck(cudaEventCreateWithFlags(&g->bk_ev[i], cudaEventDisableTiming), "event"))
			return -1;
	g->dp = dp;
	g->dp_size = llmt_nccl_size(dp);
	g->dp_rank = llmt_nccl_rank(dp);
	return gsh_plan(g);     /* ZeRO-1: master, m and v keep this rank's share */
}

int llmt_gmodel_dp_wait(llmt_gmodel *g)
{
	if (!g->dp)
		return 0;
	if (g->dp_failed || llmt_nccl_wait(g->dp, g->cst))
		return -1;
	/* the optimizer (compute stream) must see the reduced gradients */
	CK(cudaEventRecord(g->bk_ev[0], g->cst), "event");
	CK(cudaStreamWaitEvent(g->st, g->bk_ev[0], 0), "wait");
	return 0;
}

/* the flat ranges this rank adds to the global norm (gbucket_norm_ranges
 * with the host optimizer's rule, train_setup.c) */
static int plan_norm(llmt_gmodel *g)
{
	int np;
	const llmt_param_info *pt = llmt_model_params(g->h, &np);
	size_t *off = malloc(sizeof *off * (size_t)np);
	int *in = malloc(sizeof *in * (size_t)np), cap = 2 * (g->nbk + np);
	g->npc = malloc(sizeof *g->npc * (size_t)cap);
	if (!off || !in || !g->npc) {
		free(off);
		free(in);
		fprintf(stderr, "llm-train: out of memory\n");
		return -1;
	}
	for (int i = 0; i < np; i++) {
		off[i] = pt[i].offset;
		in[i] = !pt[i].tied_copy && (pt[i].split_dim >= 0 || g->h->par.tp_rank == 0);
	}
	g->nnpc = gbucket_norm_ranges(g->bk, g->nbk, g->dp_size, g->dp_rank, off, in, np, g->h->n,
								  g->npc, cap);
	free(off);
	free(in);
	return g->nnpc < 0 ? -1 : 0;
}

int llmt_gmodel_step_dp(llmt_gmodel *g, double lr, double clip, const llmt_adamw_cfg *cfg, long t,
						double *norm)
{
	if (!g->dp || (!g->npc && plan_norm(g)) || gag_finish(g) || ggrads_settle(g))
		return -1;
	/* device doubles: [np partials][this rank's sum over DP][one per TP rank] */
	size_t np = (size_t)g->nnpc * GK_SUMSQ_BLOCKS;
	int tpn = g->tp ? llmt_nccl_size(g->tp) : 0;
	size_t nall = np + 1 + (size_t)tpn;
	if (!g->dp_part && !(g->dp_part = calloc(nall, sizeof(double)))) {
		fprintf(stderr, "llm-train: out of memory\n");
		return -1;
	}
	if (!g->dp_sq && gcheck(cudaMalloc((void **)&g->dp_sq, nall * sizeof(double)), "malloc"))
		return -1;
	CK(cudaMemsetAsync(g->dp_sq, 0, nall * sizeof(double), g->st), "memset");
	for (int i = 0; i < g->nnpc; i++)
		CK(gk_sumsq(g->grads + g->npc[i][0], g->npc[i][1] - g->npc[i][0],
					g->dp_sq + (size_t)i * GK_SUMSQ_BLOCKS, g->st), "sumsq");
	CK(cudaMemcpyAsync(g->dp_part, g->dp_sq, np * sizeof(double), cudaMemcpyDeviceToHost, g->st),
	   "copy");
	if (llmt_gmodel_sync(g))
		return -1;
	double local = 0.0;
	for (size_t i = 0; i < np; i++)
		local += g->dp_part[i];
	/* the sum over DP (the same bits on every member), then every TP
	 * rank's sum gathered (a copy, no arithmetic) and added in TP rank
	 * order: the same bits on every rank of the stage, whichever DP
	 * replica (an all-reduce over TP could order the terms differently
	 * from one TP group to another) */
	CK(cudaMemcpyAsync(g->dp_sq + np, &local, sizeof(double), cudaMemcpyHostToDevice, g->st),
	   "copy");
	if (llmt_nccl_allreduce_sum_f64(g->dp, g->dp_sq + np, g->dp_sq + np, 1, g->st) ||
		(g->tp && llmt_nccl_allgather_f32(g->tp, (const float *)(g->dp_sq + np),
										  (float *)(g->dp_sq + np + 1), 2, g->st)))
		return -1;
	CK(cudaMemcpyAsync(&g->dp_part[np], g->dp_sq + np, (1 + (size_t)tpn) * sizeof(double),
					   cudaMemcpyDeviceToHost, g->st), "copy");
	if (llmt_nccl_wait(g->dp, g->st) || llmt_gmodel_sync(g))
		return -1;
	double tot = g->dp_part[np];
	if (tpn) {
		tot = 0.0;
		for (int i = 0; i < tpn; i++)
			tot += g->dp_part[np + 1 + (size_t)i];
	}
	*norm = sqrt(tot);
	double gscale = llmt_clip_scale(*norm, clip);
	for (int b = 0; b < g->nbk; b++) {
		gshard sh;
		gbucket_shard(&g->bk[b], g->dp_size, g->dp_rank, &sh);
		if ((sh.blk && llmt_gmodel_adamw_range(g, sh.own_lo, sh.own_hi, lr, gscale, cfg, t)) ||
			(sh.hi > sh.tail_lo && llmt_gmodel_adamw_range(g, sh.tail_lo, sh.hi, lr, gscale, cfg, t)))
			return -1;
	}
	return llmt_gmodel_dp_allgather(g);
}
