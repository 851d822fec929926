/* model_step.c: forward and backward of one micro-batch through this
 * stage (see model.h for the layout rules); matrix products via llmt_mm,
 * causal attention via attn.h in bf16 (else oneDNN on the full square),
 * the rest via kernels.c, TP all-reduces via comm.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "attn.h"
#include "kernels.h"
#include "matmul.h"
#include "model_impl.h"
#include "gpu/bridge.h"

#define DT(m) ((m)->bf ? LLMT_DT_BF16 : LLMT_DT_F32)
/* a slot's packed-sample tables, NULL when it holds whole sequences */
#define POS(sl) ((sl)->packed ? (const int32_t *)(sl)->pos : NULL)
#define LO(sl) ((sl)->packed ? (const int32_t *)(sl)->lo : NULL)

/* the fp32 weights at flat offset off of a tensor kernels read in fp32
 * (norms, embedding): the master, or its copy when the master is a share */
#define W32(m, off) llmt_model_w32((m), (off))

/* compute-precision view of the weights at flat offset off (fp32: the
 * master, always whole) */
static const void *cw(const llmt_model *m, size_t off)
{
	return m->bf ? (const void *)(m->wc + off) : (const void *)(m->master + off);
}

/* Y[M][N] (=|+=) alpha X[M][K] . W^T, W stored [N][K] */
static int lin_fwd(llmt_model *m, const void *X, size_t woff, void *Y, llmt_dt yt, int M, int N,
				   int K)
{
	return llmt_mm(1, M, N, K, X, 0, cw(m, woff), 1, DT(m), Y, yt, 1.0f, 0);
}
/* dX[M][K] = alpha dY[M][N] . W (of type xt); dW[N][K] += alpha dY^T X */
static int lin_bwd(llmt_model *m, const void *dY, const void *X, size_t woff, void *dX,
				   llmt_dt xt, int M, int N, int K, float alpha)
{
	if (llmt_mm(1, N, K, M, dY, 1, X, 0, DT(m), m->grads + woff, LLMT_DT_F32, alpha, !m->gover))
		return -1;
	return llmt_mm(1, M, K, N, dY, 0, cw(m, woff), 0, DT(m), dX, xt, alpha, 0);
}

static int tp_sum(llmt_model *m, float *buf, size_t n)
{
	if (m->par.tp == 1)
		return 0;
	return llmt_comm_allreduce_sum_f32(m->par.tp_comm, buf, n);
}

/* attention on the full T x T square through oneDNN batched products (fp32,
 * or bf16 where attn.h's blocked kernel does not apply): att from q, k, v */
static int attn_fwd_full(llmt_model *m, struct slot *sl, struct layer_act *a)
{
	int hd = m->hd, BH = m->B * m->Hl, T = m->T, bf = m->bf;
	if (llmt_mm(BH, T, T, hd, a->q, 0, a->k, 1, DT(m), m->S, LLMT_DT_F32,
				1.0f / sqrtf((float)hd), 0))
		return -1;
	k_softmax_seg_fwd(m->S, a->P, BH, T, m->Hl, LO(sl), bf);
	if (llmt_mm(BH, T, hd, T, a->P, 0, a->v, 0, DT(m), m->O, DT(m), 1.0f, 0))
		return -1;
	k_heads_to_tokens(m->O, a->att, m->B, T, m->Hl, hd, bf);
	return 0;
}

/* the forward attention of slot sl: blocked (attn.h) or on the full square */
static int attn_run_fwd(llmt_model *m, struct slot *sl, struct layer_act *a)
{
	if (!m->aw)
		return attn_fwd_full(m, sl, a);
	attn_fwd_seg(m->aw, a->q, a->k, a->v, a->P, a->att, LO(sl), m->B, m->Hl, m->T, m->hd,
				 1.0f / sqrtf((float)m->hd));
	return 0;
}

int llmt_model_set_seg(llmt_model *m, int s, const int32_t *seg)
{
	if (m->dev) {
		if (m->dev->set_seg)
			return m->dev->set_seg(m, s, seg);
		if (!seg)
			return 0;
		fprintf(stderr, "llm-train: packed samples (a loss mask with sample boundaries) are not "
						"supported by this device backend\n");
		return -1;
	}
	struct slot *sl = &m->slots[s];
	sl->packed = seg != NULL;
	for (int b = 0; seg && b < m->B; b++)
		for (int t = 0, start = 0; t < m->T; t++) {
			size_t i = (size_t)b * m->T + t;
			if (t > 0 && seg[i] != seg[i - 1])
				start = t;
			sl->lo[i] = start;
			sl->pos[i] = t - start;
		}
	return 0;
}

/* backward of attn_fwd_full: dq, dk, dv from datt */
static int attn_bwd_full(llmt_model *m, struct layer_act *a)
{
	int hd = m->hd, BH = m->B * m->Hl, T = m->T, bf = m->bf;
	k_tokens_to_heads(m->datt, m->dO, m->B, T, m->Hl, hd, bf);
	float sc = 1.0f / sqrtf((float)hd);
	if (llmt_mm(BH, T, T, hd, m->dO, 0, a->v, 1, DT(m), m->dP, LLMT_DT_F32, 1.0f, 0) ||
		llmt_mm(BH, T, hd, T, a->P, 1, m->dO, 0, DT(m), m->dv, LLMT_DT_F32, 1.0f, 0))
		return -1;
	k_softmax_causal_bwd(a->P, m->dP, m->dS, BH, T, bf);
	if (llmt_mm(BH, T, hd, T, m->dS, 0, a->k, 0, DT(m), m->dq, LLMT_DT_F32, sc, 0) ||
		llmt_mm(BH, T, hd, T, m->dS, 1, a->q, 0, DT(m), m->dk, LLMT_DT_F32, sc, 0))
		return -1;
	return 0;
}

static int layer_fwd(llmt_model *m, struct slot *sl, int l)
{
	const llmt_config *c = &m->c;
	const struct layer_off *lo = &m->lo[l];
	struct layer_act *a = &sl->la[l];
	int M = m->M, d = c->d_model, hd = m->hd, T = m->T, bf = m->bf;
	size_t Md = (size_t)M * d;
	float eps = (float)c->norm_eps;
	float *x = sl->xs[l];

	k_rmsnorm_fwd(x, W32(m, lo->ln1), a->h1, a->rstd1, M, d, eps, bf);
	float *qkv = c->qk_norm ? a->qkv : m->qkv_s;
	if (lin_fwd(m, a->h1, lo->qkv, qkv, LLMT_DT_F32, M, m->Wq, d))
		return -1;
	k_attn_prep_fwd_at(qkv, a->q, a->k, a->v, m->B, T, m->Hl, m->KVl, hd,
					   c->qk_norm ? W32(m, lo->qn) : NULL,
					   c->qk_norm ? W32(m, lo->kn) : NULL, a->qr, a->kr, eps, m->cos_t,
					   m->sin_t, POS(sl), bf);
	if (attn_run_fwd(m, sl, a))
		return -1;
	if (lin_fwd(m, a->att, lo->o, m->y, LLMT_DT_F32, M, d, m->Hl * hd) || tp_sum(m, m->y, Md))
		return -1;
	k_add_rmsnorm_fwd(x, m->y, a->x_mid, W32(m, lo->ln2), a->h2, a->rstd2, M, d, eps, bf);
	if (lin_fwd(m, a->h2, lo->gu, a->gu, DT(m), M, 2 * m->Fl, d))
		return -1;
	k_swiglu_fwd(a->gu, a->a, M, m->Fl, bf);
	if (lin_fwd(m, a->a, lo->down, m->y, LLMT_DT_F32, M, d, m->Fl) || tp_sum(m, m->y, Md))
		return -1;
	k_add(sl->xs[l + 1], a->x_mid, m->y, Md);
	return 0;
}

int llmt_model_forward(llmt_model *m, int s, const int32_t *tokens, const float *act_in,
					   const int32_t *targets, float *act_out, float *loss_out)
{
	if (m->dev)
		return m->dev->forward(m, s, tokens, act_in, targets, act_out, loss_out);
	struct slot *sl = &m->slots[s];
	int M = m->M, d = m->c.d_model;
	size_t Md = (size_t)M * d;
	if (m->first) {
		memcpy(sl->tokens, tokens, (size_t)M * 4);
		k_embed_fwd(W32(m, m->off_embed), tokens, sl->xs[0], M, d);
	} else {
		memcpy(sl->xs[0], act_in, Md * 4);
	}
	for (int l = 0; l < m->nl; l++)
		if (layer_fwd(m, sl, l))
			return -1;
	float *xl = sl->xs[m->nl];
	if (!m->last) {
		memcpy(act_out, xl, Md * 4);
		return 0;
	}
	k_rmsnorm_fwd(xl, W32(m, m->off_norm), sl->xf, sl->rstdf, M, d, (float)m->c.norm_eps,
				  m->bf);
	if (lin_fwd(m, sl->xf, m->off_head, m->logits, LLMT_DT_F32, M, m->c.vocab_size, d))
		return -1;
	double loss = k_xent_fwd(m->logits, targets, sl->dlog, M, m->c.vocab_size,
							 (float)m->c.z_loss, m->bf);
	if (loss_out)
		*loss_out = (float)loss;
	return 0;
}

static int layer_bwd(llmt_model *m, struct slot *sl, int l)
{
	const llmt_config *c = &m->c;
	const struct layer_off *lo = &m->lo[l];
	struct layer_act *a = &sl->la[l];
	int M = m->M, d = c->d_model, hd = m->hd, T = m->T, bf = m->bf;
	int Hh = m->Hl * hd;
	size_t Md = (size_t)M * d;
	float *dx = m->dx;

	/* MLP: dx is dL/d(x_out) = dL/d(down output), dyact holds it as act */
	if (lin_bwd(m, m->dyact, a->a, lo->down, m->da, LLMT_DT_F32, M, d, m->Fl, 1.0f))
		return -1;
	k_swiglu_bwd(a->gu, m->da, m->dgu, M, m->Fl, bf);
	if (lin_bwd(m, m->dgu, a->h2, lo->gu, m->dh, LLMT_DT_F32, M, 2 * m->Fl, d, 1.0f) ||
		tp_sum(m, m->dh, Md))
		return -1;
	k_rmsnorm_bwd_act(a->x_mid, W32(m, lo->ln2), a->rstd2, m->dh, dx, m->grads + lo->ln2, M,
					  d, m->dyact, bf);

	/* ATTN recomputation: the softmax probabilities again, by the forward's
	 * own kernels on the kept q, k, v (att is rewritten with the same values) */
	if (RC_AT(m, l) == LLMT_RECOMPUTE_ATTN && attn_run_fwd(m, sl, a))
		return -1;
	/* attention: dx is now dL/d(x_mid), and dyact too */
	if (lin_bwd(m, m->dyact, a->att, lo->o, m->datt, m->aw ? LLMT_DT_BF16 : LLMT_DT_F32, M, d,
				Hh, 1.0f))
		return -1;
	/* QK-norm weights are replicated but each TP rank sees only its heads:
	 * their gradient is summed over TP (in a scratch, so earlier
	 * micro-batches already in the buffer are not summed twice) */
	float *qkg = m->par.tp > 1 ? m->qkn_g : (c->qk_norm ? m->grads + lo->qn : NULL);
	if (c->qk_norm && m->par.tp > 1)
		memset(qkg, 0, sizeof(float) * 2 * (size_t)hd);
	const float *qw = c->qk_norm ? W32(m, lo->qn) : NULL;
	const float *kw = c->qk_norm ? W32(m, lo->kn) : NULL;
	if (m->aw) { /* blocked attention, the prep backward fused in */
		attn_prep_grad pg = { m->KVl, m->cos_t, m->sin_t, a->qkv, qw, kw, a->qr, a->kr,
							  c->qk_norm ? qkg : NULL, c->qk_norm ? qkg + hd : NULL, m->dqkv,
							  POS(sl) };
		attn_bwd(m->aw, a->q, a->k, a->v, a->P, m->datt, m->dS, &pg, m->B, m->Hl, T, hd,
				 1.0f / sqrtf((float)hd));
	} else {
		if (attn_bwd_full(m, a))
			return -1;
		k_attn_prep_bwd_at(m->dq, m->dk, m->dv, m->dqkv, a->qkv, m->B, T, m->Hl, m->KVl, hd, qw,
						   kw, a->qr, a->kr, c->qk_norm ? qkg : NULL,
						   c->qk_norm ? qkg + hd : NULL, m->cos_t, m->sin_t, POS(sl), bf);
	}
	if (c->qk_norm && m->par.tp > 1) {
		if (tp_sum(m, qkg, 2 * (size_t)hd))
			return -1;
		for (int i = 0; i < 2 * hd; i++)
			m->grads[lo->qn + i] += qkg[i];   /* k_norm follows q_norm */
	}
	if (lin_bwd(m, m->dqkv, a->h1, lo->qkv, m->dh, LLMT_DT_F32, M, m->Wq, d, 1.0f) ||
		tp_sum(m, m->dh, Md))
		return -1;
	/* dx becomes dL/d(layer input); dyact follows for the layer below */
	k_rmsnorm_bwd_act(sl->xs[l], W32(m, lo->ln1), a->rstd1, m->dh, dx, m->grads + lo->ln1, M,
					  d, m->dyact, bf);
	return 0;
}

/* backward through this stage (llmt_model_backward) */
static int stage_bwd(llmt_model *m, struct slot *sl, const float *grad_out, float *grad_in,
					 float grad_scale)
{
	int M = m->M, d = m->c.d_model;
	size_t Md = (size_t)M * d;
	if (m->last) {
		if (lin_bwd(m, sl->dlog, sl->xf, m->off_head, m->dh, LLMT_DT_F32, M, m->c.vocab_size, d,
					grad_scale))
			return -1;
		memset(m->dx, 0, Md * 4);
		k_rmsnorm_bwd_act(sl->xs[m->nl], W32(m, m->off_norm), sl->rstdf, m->dh, m->dx,
						  m->grads + m->off_norm, M, d, m->dyact, m->bf);
	} else {
		memcpy(m->dx, grad_out, Md * 4);
		k_to_act(m->dx, m->dyact, Md, m->bf);
	}
	/* FULL recomputation: the layer's forward again from its kept input
	 * (it rewrites xs[l + 1] with the same values, no longer needed) */
	for (int l = m->nl - 1; l >= 0; l--)
		if ((RC_AT(m, l) == LLMT_RECOMPUTE_FULL && layer_fwd(m, sl, l)) ||
			layer_bwd(m, sl, l))
			return -1;
	if (m->first)
		k_embed_bwd(m->grads + m->off_embed, sl->tokens, m->dx, M, d);
	else
		memcpy(grad_in, m->dx, Md * 4);
	return 0;
}

int llmt_model_backward(llmt_model *m, int s, const float *grad_out, float *grad_in,
						float grad_scale)
{
	if (m->dev)
		return m->dev->backward(m, s, grad_out, grad_in, grad_scale);
	/* first backward since zero_grad: the products write their gradients
	 * (0 + x without reading the zeros) */
	m->gover = m->gz;
	m->gz = 0;
	int rc = stage_bwd(m, &m->slots[s], grad_out, grad_in, grad_scale);
	m->gover = 0;
	return rc;
}

