/* test_gpu_emu.c: the GPU backend's kernels and model orchestration run on
 * the CPU (kernels through gk_emu.h, CUDA runtime and cuBLASLt mapping
 * through cuda_emu.c) against the CPU model: every gk_* kernel against its
 * kernels.c twin, then whole GPU-model steps (loss, logits, every gradient,
 * fused AdamW, pipeline stages, snapshot) against llmt_model, with the
 * chunked attention (the CPU model's arithmetic: tight limits) and with
 * the fused one (dev_flash.cu: fp32 probabilities where the CPU model
 * rounds them to bf16, so limits at bf16 level). This checks
 * logic on machines without a GPU; speed and real-device behaviour are
 * checked by tests/gpu/check on a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/bf16.h"
#include "gpu/comm_nccl.h"
#include "gpu/dev_kernels.h"
#include "gpu/gmodel.h"
#include "gpu/host_plan.h"
#include "model/kernels.h"
#include "model/model.h"
#include "train/optim.h"
#include "relerr.h"
#include "small_cfg.h"

static uint64_t rs = 12345;
static float frand(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (float)((rs >> 11) * (1.0 / 9007199254740992.0)) * 2.f - 1.f;
}
static float *rnd(size_t n, float scale)
{
	float *p = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		p[i] = frand() * scale;
	return p;
}
static float *dup(const float *x, size_t n)
{
	float *p = malloc(n * 4);
	memcpy(p, x, n * 4);
	return p;
}
static double relb(const bf16 *a, const bf16 *b, size_t n)
{
	double d = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		double x = bf16_to_f32(a[i]), y = bf16_to_f32(b[i]);
		d = fmax(d, fabs(x - y));
		m = fmax(m, fabs(y));
	}
	return d / (m > 0 ? m : 1);
}
/* NEAR prints each measured error next to its limit (the log is the
 * measurement). relb limits of 8e-3 are one bf16 ulp (2^-7): an fp32
 * difference of one ulp before rounding may flip a bf16 result; measured 0. */
#define NEAR(v, lim) do { double v_ = (v); printf("near %d: %s = %.3g (limit %.3g)\n", __LINE__, #v, v_, (double)(lim)); if (!(v_ <= (lim))) fail_msg("%s = %g > %g", #v, v_, (double)(lim)); } while (0)

static void test_rmsnorm(void **st)
{
	(void)st;
	int M = 6, d = 40;
	float *x = rnd((size_t)M * d, 2), *w = rnd(d, 1), *dy = rnd((size_t)M * d, 1);
	bf16 *o1 = malloc((size_t)M * d * 2), *o2 = malloc((size_t)M * d * 2);
	float r1[6], r2[6];
	assert_int_equal(gk_rmsnorm_fwd(x, w, o1, r1, M, d, 1e-5f, 0), 0);
	k_rmsnorm_fwd(x, w, o2, r2, M, d, 1e-5f, 1);
	NEAR(relb(o1, o2, (size_t)M * d), 8e-3);
	NEAR(relerr(r1, r2, M), 1e-5);
	float *dx1 = rnd((size_t)M * d, 1), *dx2 = dup(dx1, (size_t)M * d);
	float *dw1 = rnd(d, 1), *dw2 = dup(dw1, d), *part = malloc(GK_COLSUM_CHUNKS * d * 4);
	assert_int_equal(gk_rmsnorm_bwd(x, w, r2, dy, dx1, dw1, part, M, d, 0), 0);
	k_rmsnorm_bwd(x, w, r2, dy, dx2, dw2, M, d);
	NEAR(relerr(dx1, dx2, (size_t)M * d), 1e-5);
	NEAR(relerr(dw1, dw2, d), 1e-5);
	free(x); free(w); free(dy); free(o1); free(o2); free(dx1); free(dx2); free(dw1); free(dw2);
	free(part);
}

static void attn_prep(int qk, int T)
{
	int B = 2, H = 4, KV = 2, hd = 8, M = B * T, W = (H + 2 * KV) * hd;
	size_t nh = (size_t)B * H * T * hd;
	float *qkv = rnd((size_t)M * W, 1), *qw = rnd(hd, 1), *kw = rnd(hd, 1);
	float *cs = malloc((size_t)T * hd / 2 * 4), *sn = malloc((size_t)T * hd / 2 * 4);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < hd / 2; i++) {
			cs[t * hd / 2 + i] = cosf(t * powf(100.f, -2.f * i / hd));
			sn[t * hd / 2 + i] = sinf(t * powf(100.f, -2.f * i / hd));
		}
	bf16 *q[2], *k[2], *v[2];
	float *qr[2], *kr[2];
	for (int j = 0; j < 2; j++) {
		q[j] = malloc(nh * 2);
		k[j] = malloc(nh * 2);
		v[j] = malloc(nh * 2);
		qr[j] = malloc((size_t)M * H * 4);
		kr[j] = malloc((size_t)M * KV * 4);
	}
	assert_int_equal(gk_attn_prep_fwd(qkv, q[0], k[0], v[0], B, T, H, KV, hd, qk ? qw : NULL,
									  qk ? kw : NULL, qr[0], kr[0], 1e-6f, cs, sn, 0), 0);
	k_attn_prep_fwd(qkv, q[1], k[1], v[1], B, T, H, KV, hd, qk ? qw : NULL, qk ? kw : NULL,
					qr[1], kr[1], 1e-6f, cs, sn, 1);
	NEAR(relb(q[0], q[1], nh), 8e-3);
	NEAR(relb(k[0], k[1], nh), 8e-3);
	NEAR(relb(v[0], v[1], nh), 0);
	if (qk) {
		NEAR(relerr(qr[0], qr[1], (size_t)M * H), 1e-5);
		NEAR(relerr(kr[0], kr[1], (size_t)M * KV), 1e-5);
	}
	float *dq = rnd(nh, 1), *dk = rnd(nh, 1), *dv = rnd(nh, 1);
	bf16 *g1 = malloc((size_t)M * W * 2), *g2 = malloc((size_t)M * W * 2);
	float dqw1[8] = {0}, dkw1[8] = {0}, dqw2[8] = {0}, dkw2[8] = {0};
	float *contrib = malloc((size_t)M * (H + KV) * hd * 4), *part = malloc(GK_COLSUM_MAX * hd * 4);
	assert_int_equal(gk_attn_prep_bwd(dq, dk, dv, g1, qkv, B, T, H, KV, hd, qk ? qw : NULL,
									  qk ? kw : NULL, qr[1], kr[1], dqw1, dkw1, contrib, part, cs,
									  sn, 0), 0);
	k_attn_prep_bwd(dq, dk, dv, g2, qkv, B, T, H, KV, hd, qk ? qw : NULL, qk ? kw : NULL, qr[1],
					kr[1], dqw2, dkw2, cs, sn, 1);
	NEAR(relb(g1, g2, (size_t)M * W), 8e-3);
	if (qk) {
		NEAR(relerr(dqw1, dqw2, hd), 1e-5);
		NEAR(relerr(dkw1, dkw2, hd), 1e-5);
	}
	for (int j = 0; j < 2; j++) {
		free(q[j]); free(k[j]); free(v[j]); free(qr[j]); free(kr[j]);
	}
	free(qkv); free(qw); free(kw); free(cs); free(sn); free(dq); free(dk); free(dv);
	free(g1); free(g2); free(contrib); free(part);
}
static void test_attn_prep(void **st) { (void)st; attn_prep(0, 5); }
/* 40 positions: 320 query-head rows, so the QK-norm weight gradient is
 * summed over several chunks */
static void test_attn_prep_qknorm(void **st) { (void)st; attn_prep(1, 40); }

static void test_softmax_layout(void **st)
{
	(void)st;
	int n = 3, T = 7, B = 1, H = 3, hd = 4;
	size_t nn = (size_t)n * T * T;
	float *S = rnd(nn, 4), *dP = rnd(nn, 1);
	bf16 *P1 = malloc(nn * 2), *P2 = malloc(nn * 2), *d1 = malloc(nn * 2), *d2 = malloc(nn * 2);
	assert_int_equal(gk_softmax_causal_fwd(S, P1, n, T, 0), 0);
	k_softmax_causal_fwd(S, P2, n, T, 1);
	NEAR(relb(P1, P2, nn), 8e-3);
	assert_int_equal(gk_softmax_causal_bwd(P2, dP, d1, n, T, 0), 0);
	k_softmax_causal_bwd(P2, dP, d2, n, T, 1);
	NEAR(relb(d1, d2, nn), 8e-3);
	size_t nh = (size_t)B * H * T * hd;
	bf16 *o = malloc(nh * 2), *a1 = malloc(nh * 2), *a2 = malloc(nh * 2);
	for (size_t i = 0; i < nh; i++)
		o[i] = f32_to_bf16(frand());
	assert_int_equal(gk_heads_to_tokens(o, a1, B, T, H, hd, 0), 0);
	k_heads_to_tokens(o, a2, B, T, H, hd, 1);
	assert_memory_equal(a1, a2, nh * 2);
	float *datt = rnd(nh, 1);
	assert_int_equal(gk_tokens_to_heads(datt, a1, B, T, H, hd, 0), 0);
	k_tokens_to_heads(datt, a2, B, T, H, hd, 1);
	assert_memory_equal(a1, a2, nh * 2);
	free(S); free(dP); free(P1); free(P2); free(d1); free(d2); free(o); free(a1); free(a2);
	free(datt);
}

static void test_elementwise(void **st)
{
	(void)st;
	int M = 5, F = 12, d = 16, V = 37;
	size_t ng = (size_t)M * 2 * F;
	bf16 *gu = malloc(ng * 2), *a1 = malloc((size_t)M * F * 2), *a2 = malloc((size_t)M * F * 2);
	for (size_t i = 0; i < ng; i++)
		gu[i] = f32_to_bf16(frand() * 3);
	assert_int_equal(gk_swiglu_fwd(gu, a1, M, F, 0), 0);
	k_swiglu_fwd(gu, a2, M, F, 1);
	NEAR(relb(a1, a2, (size_t)M * F), 8e-3);
	float *da = rnd((size_t)M * F, 1);
	bf16 *g1 = malloc(ng * 2), *g2 = malloc(ng * 2);
	assert_int_equal(gk_swiglu_bwd(gu, da, g1, M, F, 0), 0);
	k_swiglu_bwd(gu, da, g2, M, F, 1);
	NEAR(relb(g1, g2, ng), 8e-3);
	/* embedding: forward, and backward from the sorted plan */
	int32_t tok[5] = {3, 7, 3, 0, 7}, u[5], s[6], p[5];
	float *E = rnd((size_t)V * d, 1), *x1 = malloc((size_t)M * d * 4), *x2 = malloc((size_t)M * d * 4);
	assert_int_equal(gk_embed_fwd(E, tok, x1, M, d, 0), 0);
	k_embed_fwd(E, tok, x2, M, d);
	assert_memory_equal(x1, x2, (size_t)M * d * 4);
	float *dE1 = rnd((size_t)V * d, 1), *dE2 = dup(dE1, (size_t)V * d), *dx = rnd((size_t)M * d, 1);
	int nu = gembed_plan(tok, M, V, u, s, p);
	assert_int_equal(nu, 3);
	assert_int_equal(gk_embed_bwd(dE1, u, s, p, nu, dx, d, 0), 0);
	k_embed_bwd(dE2, tok, dx, M, d);
	NEAR(relerr(dE1, dE2, (size_t)V * d), 1e-6);
	/* cross-entropy with z-loss */
	float *lg = rnd((size_t)M * V, 5), loss[5];
	int32_t tgt[5] = {1, 36, 0, 7, 20};
	bf16 *dl1 = malloc((size_t)M * V * 2), *dl2 = malloc((size_t)M * V * 2);
	assert_int_equal(gk_xent_fwd(lg, tgt, dl1, loss, M, V, 1e-3f, 0), 0);
	double ref = k_xent_fwd(lg, tgt, dl2, M, V, 1e-3f, 1), tot = 0;
	for (int m = 0; m < M; m++)
		tot += loss[m];
	NEAR(fabs(tot / M - ref) / ref, 1e-7);   /* fp32 row sums: measured 3.5e-9 */
	NEAR(relb(dl1, dl2, (size_t)M * V), 8e-3);
	free(gu); free(a1); free(a2); free(da); free(g1); free(g2); free(E); free(x1); free(x2);
	free(dE1); free(dE2); free(dx); free(lg); free(dl1); free(dl2);
}

static void test_adamw_sumsq(void **st)
{
	(void)st;
	size_t n = 1003;     /* 16-byte groups and a tail */
	float *p1 = rnd(n, 1), *g = rnd(n, 1), *m1 = rnd(n, 0.1f), *v1 = rnd(n, 0.1f);
	for (size_t i = 0; i < n; i++)
		v1[i] = fabsf(v1[i]);
	float *p2 = dup(p1, n), *m2 = dup(m1, n), *v2 = dup(v1, n);
	bf16 *wc = malloc(n * 2);
	llmt_adamw_cfg c = {0.9, 0.95, 1e-8, 0.1, 0};
	double lr = 1e-3, gs = 0.5;
	long t = 3;
	double bc1 = 1.0 - pow(c.beta1, t), bc2 = 1.0 - pow(c.beta2, t);
	assert_int_equal(gk_adamw(p1, g, m1, v1, wc, n, (float)gs, 0.9f, 0.95f, (float)(1 - 0.9),
							  (float)(1 - 0.95), (float)(1 - lr * 0.1), (float)(lr / bc1),
							  (float)sqrt(bc2), 1e-8f, 0), 0);
	llmt_adamw_update(p2, g, m2, v2, n, lr, gs, &c, t, 1);
	NEAR(relerr(p1, p2, n), 1e-7);   /* fp32 update vs double: measured 3.7e-9 */
	NEAR(relerr(m1, m2, n), 1e-6);
	NEAR(relerr(v1, v2, n), 1e-6);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(wc[i], f32_to_bf16(p1[i]));
	double part[GK_SUMSQ_BLOCKS], s = 0;
	assert_int_equal(gk_sumsq(g, n, part, 0), 0);
	for (int i = 0; i < GK_SUMSQ_BLOCKS; i++)
		s += part[i];
	NEAR(fabs(s - llmt_sumsq_det(g, n)) / s, 1e-13);   /* measured 7.7e-15 */
	free(p1); free(g); free(m1); free(v1); free(p2); free(m2); free(v2); free(wc);
}

/* the 16-byte paths of gk_add, gk_f32_to_bf16 and gk_sumsq and their
 * one-by-one fallback (a pointer off by one element), n not a multiple
 * of 4 nor of the block count */
static void test_vector_kernels(void **st)
{
	(void)st;
	size_t n = 4099;
	float *x = rnd(n + 1, 1), *r = rnd(n + 1, 1), *y = malloc((n + 1) * 4);
	bf16 *b = malloc((n + 2) * 2);
	for (int off = 0; off < 2; off++) {
		memcpy(y, x, (n + 1) * 4);
		assert_int_equal(gk_add(y + off, r + off, n, 0), 0);
		for (size_t i = 0; i < n + 1; i++)
			assert_true(y[i] == (i < (size_t)off || i >= off + n ? x[i] : x[i] + r[i]));
		assert_int_equal(gk_f32_to_bf16(x + off, b + off, n, 0), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(b[off + i], f32_to_bf16(x[off + i]));
		double part[GK_SUMSQ_BLOCKS], s = 0;
		assert_int_equal(gk_sumsq(x + off, n, part, 0), 0);
		for (int i = 0; i < GK_SUMSQ_BLOCKS; i++)
			s += part[i];
		NEAR(fabs(s - llmt_sumsq_det(x + off, n)) / s, 1e-13);
	}
	free(x); free(r); free(y); free(b);
}

/* one stage (pp_rank of pp) on the emulated GPU vs the CPU model;
 * chunk > 0: attention in query chunks of that many rows */
/* the model tests' attention: chunked (default) or fused */
static int fused_run;
/* a limit: the chunked path's, or the fused path's */
#define LIM(chunked, fused) (fused_run ? (fused) : (chunked))

/* packed: samples packed in each sequence (llmt_model_set_seg: lengths
 * 1, 5, then the rest) with every third target not trained on (-1) */
static void model_vs_cpu_t(int gqa, int pp, int r, int steps, int B, int T, int chunk, int packed)
{
	llmt_config c;
	small_cfg(&c, gqa);
	int M = B * T, d = c.d_model, V = c.vocab_size;
	llmt_par par = {1, 0, pp, r, NULL};
	llmt_model *cm = llmt_model_create(&c, &par, LLMT_BF16, B, T, 1);
	setenv("LLM_TRAIN_GPU", "0", 1);   /* a GPU model's host mirror stays on the CPU */
	setenv("LLM_TRAIN_GPU_ATTN", fused_run ? "fused" : "chunked", 1);
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1);
	setenv("LLM_TRAIN_GPU_ATTN", "chunked", 1);
	unsetenv("LLM_TRAIN_GPU");
	assert_non_null(cm);
	assert_non_null(g);
	if (chunk) {
		assert_int_equal(llmt_gmodel_set_attn_chunk(g, T + 1), -1);
		assert_int_equal(llmt_gmodel_set_attn_chunk(g, chunk), 0);
	}
	llmt_model *h = llmt_gmodel_host(g);
	size_t n = llmt_model_nparams(cm);
	assert_int_equal(n, llmt_model_nparams(h));
	assert_memory_equal(llmt_model_master(cm), llmt_model_master(h), n * 4);
	int32_t tok[64], tgt[64];
	assert_true(M <= 64);
	int32_t seg[64];
	for (int i = 0; i < M; i++) {
		int t = i % T;
		tok[i] = (i * 7 + 3) % V;
		tgt[i] = packed && i % 3 == 0 ? -1 : (i * 5 + 1) % V;
		seg[i] = t < 1 ? 0 : t < 6 ? 1 : 2;
	}
	assert_int_equal(llmt_model_set_seg(cm, 0, packed ? seg : NULL), 0);
	assert_int_equal(llmt_gmodel_set_seg(g, 0, packed ? seg : NULL), 0);
	float *act = rnd((size_t)M * d, 1), *go = rnd((size_t)M * d, 0.01f);
	float *o1 = malloc((size_t)M * d * 4), *o2 = malloc((size_t)M * d * 4);
	float *gi1 = malloc((size_t)M * d * 4), *gi2 = malloc((size_t)M * d * 4);
	float l1 = 0, l2 = 0;
	int first = r == 0, last = r == pp - 1;
	float *mm = calloc(n, 4), *vv = calloc(n, 4);
	for (int step = 0; step < steps; step++) {
		llmt_model_zero_grad(cm);
		assert_int_equal(llmt_gmodel_zero_grad(g), 0);
		assert_int_equal(llmt_model_forward(cm, 0, first ? tok : NULL, first ? NULL : act,
											last ? tgt : NULL, last ? NULL : o2, &l2), 0);
		assert_int_equal(llmt_gmodel_forward(g, 0, first ? tok : NULL, first ? NULL : act,
											 last ? tgt : NULL, last ? NULL : o1, &l1), 0);
		/* the emulated kernels and the CPU model compute the same bf16
		 * products with fp32 sums in another order (blocking, TP/PP
		 * splits): measured loss 0, logits <= 7.2e-8, stage output <=
		 * 6.0e-8, input gradient <= 2.4e-7, per-tensor gradient <= 2.8e-7
		 * (fp32 rounding, ~1 ulp); limits ~10-30x that. Fused (probabilities in fp32, the
		 * bf16 output rounded elsewhere): measured loss <= 9.5e-5, logits
		 * <= 5.9e-3, stage output <= 3.0e-3, gradients <= 1.3e-2 */
		if (last) {
			NEAR(fabs(l1 - l2) / l2, LIM(1e-6, 5e-4));
			float *lg = malloc((size_t)M * V * 4);
			assert_int_equal(llmt_gmodel_logits(g, lg), 0);
			NEAR(relerr(lg, llmt_model_logits(cm, 0), (size_t)M * V), LIM(2e-6, 2e-2));
			free(lg);
		} else {
			NEAR(relerr(o1, o2, (size_t)M * d), LIM(2e-6, 2e-2));
		}
		assert_int_equal(llmt_model_backward(cm, 0, last ? NULL : go, first ? NULL : gi2, 0.5f), 0);
		assert_int_equal(llmt_gmodel_backward(g, 0, last ? NULL : go, first ? NULL : gi1, 0.5f), 0);
		if (!first)
			NEAR(relerr(gi1, gi2, (size_t)M * d), LIM(4e-6, 5e-2));
		assert_int_equal(llmt_gmodel_download_grads(g), 0);
		int np;
		const llmt_param_info *pi = llmt_model_params(cm, &np);
		/* chunked attention (chunk > 0) rescales its running softmax sums
		 * per chunk, the CPU model sums each row once: measured 3.5e-5 */
		double gworst = 0, glim = fused_run ? 4e-2 : chunk > 0 ? 4e-4 : 4e-6;
		for (int t = 0; t < np; t++) {
			double e = relerr(llmt_model_grads(h) + pi[t].offset, llmt_model_grads(cm) + pi[t].offset,
							pi[t].numel);
			gworst = fmax(gworst, e);
			if (!(e <= glim))
				fail_msg("gradient of %s: rel %g", pi[t].name, e);
		}
		NEAR(gworst, glim);
		/* the fused AdamW against optim.c's */
		llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
		float *gg = dup(llmt_model_grads(h), n);
		float *ref = dup(llmt_model_master(h), n);
		for (int t = 0; t < np; t++)
			llmt_adamw_update(ref + pi[t].offset, gg + pi[t].offset, mm + pi[t].offset,
							  vv + pi[t].offset, pi[t].numel, 1e-2, 0.7, &ac, step + 1,
							  !pi[t].no_decay);
		assert_int_equal(llmt_gmodel_adamw(g, 1e-2, 0.7, &ac, step + 1), 0);
		assert_int_equal(llmt_gmodel_download_master(g), 0);
		NEAR(relerr(llmt_model_master(h), ref, n), 1e-6);
		/* both models continue from the GPU's weights: upload path */
		memcpy(llmt_model_master(cm), llmt_model_master(h), n * 4);
		llmt_model_sync_compute(cm);
		memcpy(llmt_model_master(h), ref, n * 4);
		memcpy(llmt_model_master(cm), ref, n * 4);
		llmt_model_sync_compute(cm);
		assert_int_equal(llmt_gmodel_upload(g), 0);
		/* the pinned snapshot copy sees the device master */
		assert_int_equal(llmt_gmodel_snapshot_start(g), 0);
		const float *snap = llmt_gmodel_snapshot_wait(g);
		assert_non_null(snap);
		assert_memory_equal(snap, ref, n * 4);
		free(gg); free(ref);
	}
	free(mm); free(vv);
	if (steps > 1) {    /* the device sum of squares of the gradients */
		double ss;
		assert_int_equal(llmt_gmodel_grad_sumsq(g, &ss), 0);
		/* double sums in another order: measured 9.2e-16 */
		NEAR(fabs(ss - llmt_sumsq_det(llmt_model_grads(h), n)) / ss, 1e-14);
	}
	llmt_gmodel_free(g);
	llmt_model_free(cm);
	free(act); free(go); free(o1); free(o2); free(gi1); free(gi2);
}
static void model_vs_cpu(int gqa, int pp, int r, int steps, int B)
{
	model_vs_cpu_t(gqa, pp, r, steps, B, 6, 0, 0);
}
static void test_model_tied(void **st) { (void)st; model_vs_cpu(0, 1, 0, 1, 2); }
/* causal attention in 4 query chunks of 4 (gattn_chunk; on a GPU from T > 128) */
static void test_model_attn_chunks(void **st) { (void)st; model_vs_cpu_t(1, 1, 0, 2, 2, 16, 4, 0); }
/* packed samples: attention within each, rotary positions restarting,
 * ignored targets; chunked attention, and the first of two stages */
static void test_model_packed(void **st) { (void)st; model_vs_cpu_t(1, 1, 0, 2, 2, 16, 4, 1); }
static void test_model_packed_stage(void **st) { (void)st; model_vs_cpu_t(1, 2, 0, 1, 2, 16, 4, 1); }
static void test_model_gqa_qknorm_zloss(void **st) { (void)st; model_vs_cpu(1, 1, 0, 2, 2); }
static void test_model_pipeline_first(void **st) { (void)st; model_vs_cpu(1, 2, 0, 1, 1); }
static void test_model_pipeline_last(void **st) { (void)st; model_vs_cpu(1, 2, 1, 1, 1); }
/* the fused attention in the whole model: tied, and GQA + QK-norm at T 16 */
static void test_model_fused(void **st)
{
	(void)st;
	fused_run = 1;
	model_vs_cpu(0, 1, 0, 1, 2);
	model_vs_cpu_t(1, 1, 0, 2, 2, 16, 0, 0);
	model_vs_cpu(1, 2, 0, 1, 1);
	fused_run = 0;
}
/* the fused attention with packed samples (their first key as the segment
 * id), a whole model and a pipeline stage */
static void test_model_fused_packed(void **st)
{
	(void)st;
	fused_run = 1;
	model_vs_cpu_t(1, 1, 0, 2, 2, 16, 0, 1);
	model_vs_cpu_t(1, 2, 0, 1, 2, 16, 0, 1);
	fused_run = 0;
}

/* the model.h API routes to the GPU backend when LLM_TRAIN_GPU >= 0: the
 * loop's calls (create, forward, backward, grads, sync, logits, free) on
 * the GPU model match the CPU model */
static void test_bridge(void **st)
{
	(void)st;
	llmt_config c;
	small_cfg(&c, 0);
	llmt_par par = {1, 0, 1, 0, NULL};
	int B = 1, T = 6, M = B * T;
	unsetenv("LLM_TRAIN_GPU");
	llmt_model *cm = llmt_model_create(&c, &par, LLMT_BF16, B, T, 2);
	setenv("LLM_TRAIN_GPU", "0", 1);
	llmt_model *gm = llmt_model_create(&c, &par, LLMT_BF16, B, T, 2);
	assert_null(llmt_model_create(&c, &par, LLMT_FP32, B, T, 2));    /* bf16 only */
	setenv("LLM_TRAIN_GPU", "zero", 1);
	assert_null(llmt_model_create(&c, &par, LLMT_BF16, B, T, 2));    /* bad value */
	unsetenv("LLM_TRAIN_GPU");
	assert_non_null(cm);
	assert_non_null(gm);
	size_t n = llmt_model_nparams(cm);
	int32_t tok[6] = {1, 5, 9, 2, 60, 7}, tgt[6] = {5, 9, 2, 60, 7, 3};
	for (int step = 0; step < 2; step++) {
		llmt_model_zero_grad(cm);
		llmt_model_zero_grad(gm);
		float lc = 0, lg = 0;
		for (int s = 0; s < 2; s++) {     /* two micro-batches in two slots */
			assert_int_equal(llmt_model_forward(cm, s, tok, NULL, tgt, NULL, &lc), 0);
			assert_int_equal(llmt_model_forward(gm, s, tok, NULL, tgt, NULL, &lg), 0);
			/* fp32 sums in another order: measured loss 0, logits
			 * <= 4.9e-8, gradients <= 1.4e-7 */
			NEAR(fabs(lc - lg) / lc, 1e-6);
			NEAR(relerr(llmt_model_logits(gm, s), llmt_model_logits(cm, s), (size_t)M * 64), 2e-6);
		}
		for (int s = 0; s < 2; s++) {
			assert_int_equal(llmt_model_backward(cm, s, NULL, NULL, 0.5f), 0);
			assert_int_equal(llmt_model_backward(gm, s, NULL, NULL, 0.5f), 0);
		}
		NEAR(relerr(llmt_model_grads(gm), llmt_model_grads(cm), n), 4e-6);
		/* a host-side update, then sync: the next step uses it */
		float *wc = llmt_model_master(cm), *wg = llmt_model_master(gm), *g = llmt_model_grads(cm);
		for (size_t i = 0; i < n; i++) {
			wc[i] -= 0.05f * g[i];
			wg[i] = wc[i];
		}
		llmt_model_sync_compute(cm);
		llmt_model_sync_compute(gm);
	}
	llmt_model_free(gm);
	llmt_model_free(cm);
}

/* the ZeRO-1 device path (bucketed reduce-scatter during backward, norm,
 * clip, AdamW on this rank's blocks, all-gather) on a one-rank group
 * equals the plain device optimizer */
static void test_zero1(void **st)
{
	(void)st;
	llmt_config c;
	small_cfg(&c, 0);
	llmt_par par = {1, 0, 1, 0, NULL};
	int B = 1, T = 6;
	llmt_gmodel *g1 = llmt_gmodel_create(&c, &par, B, T, 1);
	llmt_gmodel *g2 = llmt_gmodel_create(&c, &par, B, T, 1);
	assert_non_null(g1);
	assert_non_null(g2);
	llmt_nccl *dp = llmt_nccl_create(NULL, 0);
	assert_int_equal(llmt_gmodel_set_dp(g1, dp, 300), 0);   /* many buckets */
	llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
	int32_t tok[6] = {3, 1, 4, 1, 5, 9}, tgt[6] = {1, 4, 1, 5, 9, 2};
	size_t n = llmt_model_nparams(llmt_gmodel_host(g1));
	for (int step = 1; step <= 2; step++) {
		float l1, l2;
		double norm, ss;
		assert_int_equal(llmt_gmodel_zero_grad(g1), 0);
		assert_int_equal(llmt_gmodel_zero_grad(g2), 0);
		assert_int_equal(llmt_gmodel_forward(g1, 0, tok, NULL, tgt, NULL, &l1), 0);
		assert_int_equal(llmt_gmodel_forward(g2, 0, tok, NULL, tgt, NULL, &l2), 0);
		assert_true(l1 == l2);
		assert_int_equal(llmt_gmodel_backward_dp(g1, 0, NULL, NULL, 1.0f, 1), 0);
		assert_int_equal(llmt_gmodel_dp_wait(g1), 0);
		assert_int_equal(llmt_gmodel_step_dp(g1, 1e-2, 0.5, &ac, step, &norm), 0);
		/* a ZeRO-1 share: an all-gather on g1's stream, before g2's work;
		 * the snapshot of the share (gathered, as gpu_test.c takes it) */
		assert_int_equal(llmt_gmodel_download_master(g1), 0);
		assert_int_equal(llmt_gmodel_snapshot_start(g1), 0);
		const float *snap = llmt_gmodel_snapshot_wait(g1);
		assert_non_null(snap);
		assert_memory_equal(snap, llmt_model_master(llmt_gmodel_host(g1)), n * 4);
		assert_int_equal(llmt_gmodel_backward(g2, 0, NULL, NULL, 1.0f), 0);
		assert_int_equal(llmt_gmodel_grad_sumsq(g2, &ss), 0);
		/* one rank: the same sums and the same update, bit for bit (measured 0) */
		NEAR(fabs(norm - sqrt(ss)) / sqrt(ss), 0);
		assert_true(norm > 0.5);                                 /* the clip acts */
		assert_int_equal(llmt_gmodel_adamw(g2, 1e-2, llmt_clip_scale(sqrt(ss), 0.5), &ac, step), 0);
		assert_int_equal(llmt_gmodel_download_master(g2), 0);
		NEAR(relerr(llmt_model_master(llmt_gmodel_host(g1)), llmt_model_master(llmt_gmodel_host(g2)),
				  n), 0);
	}
	llmt_gmodel_free(g1);
	llmt_gmodel_free(g2);
	llmt_nccl_free(dp);
}

static void test_refusals(void **st)
{
	(void)st;
	llmt_config c;
	small_cfg(&c, 0);
	llmt_par par = {2, 0, 1, 0, NULL};
	assert_null(llmt_gmodel_create(&c, &par, 2, 8, 1));      /* tp > 1, no TP group */
	llmt_par p1 = {1, 0, 1, 0, NULL};
	assert_null(llmt_gmodel_create(&c, &p1, 2, 64, 1));      /* T > max_seq */
	llmt_gmodel *g = llmt_gmodel_create(&c, &p1, 1, 4, 1);
	assert_non_null(g);
	int32_t tok[4] = {1, 2, 99, 3}, tgt[4] = {0};
	float loss;
	assert_int_equal(llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss), -1);  /* vocab */
	int32_t tok2[4] = {1, 2, 3, 4}, tgt2[4] = {1, 64, 2, 3};
	assert_int_equal(llmt_gmodel_forward(g, 0, tok2, NULL, tgt2, NULL, &loss), -1); /* target */
	llmt_gmodel_free(g);
}

/* a checkpoint snapshot in flight on the copy stream while the optimizer
 * writes master on the compute stream: the copy holds the weights from
 * before the update (the update waits for it: gsnap_fence; without that
 * wait the emulation stops at the race, cuda_emu.c) */
static void test_snapshot_overlap(void **st)
{
	(void)st;
	llmt_config c;
	small_cfg(&c, 0);
	llmt_par par = {1, 0, 1, 0, NULL};
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, 1, 4, 1);
	assert_non_null(g);
	llmt_model *h = llmt_gmodel_host(g);
	size_t n = llmt_model_nparams(h);
	float *before = dup(llmt_model_master(h), n), *after;
	llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
	assert_int_equal(llmt_gmodel_zero_grad(g), 0);
	/* the fence of an optimizer step */
	assert_int_equal(llmt_gmodel_snapshot_start(g), 0);
	assert_int_equal(llmt_gmodel_adamw(g, 1e-2, 1.0, &ac, 1), 0);   /* decay moves master */
	const float *snap = llmt_gmodel_snapshot_wait(g);
	assert_non_null(snap);
	assert_memory_equal(snap, before, n * 4);
	assert_int_equal(llmt_gmodel_download_master(g), 0);
	after = dup(llmt_model_master(h), n);
	assert_true(memcmp(after, before, n * 4) != 0);
	/* the fence of an upload (the host master back to before) */
	memcpy(llmt_model_master(h), before, n * 4);
	assert_int_equal(llmt_gmodel_snapshot_start(g), 0);
	assert_int_equal(llmt_gmodel_upload(g), 0);
	snap = llmt_gmodel_snapshot_wait(g);
	assert_non_null(snap);
	assert_memory_equal(snap, after, n * 4);
	free(before);
	free(after);
	llmt_gmodel_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rmsnorm),
		cmocka_unit_test(test_attn_prep),
		cmocka_unit_test(test_attn_prep_qknorm),
		cmocka_unit_test(test_softmax_layout),
		cmocka_unit_test(test_elementwise),
		cmocka_unit_test(test_adamw_sumsq),
		cmocka_unit_test(test_vector_kernels),
		cmocka_unit_test(test_model_tied),
		cmocka_unit_test(test_model_attn_chunks),
		cmocka_unit_test(test_model_packed),
		cmocka_unit_test(test_model_packed_stage),
		cmocka_unit_test(test_model_gqa_qknorm_zloss),
		cmocka_unit_test(test_model_pipeline_first),
		cmocka_unit_test(test_model_pipeline_last),
		cmocka_unit_test(test_model_fused),
		cmocka_unit_test(test_model_fused_packed),
		cmocka_unit_test(test_bridge),
		cmocka_unit_test(test_zero1),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_snapshot_overlap),
	};
	omp_set_num_threads(1);   /* the CPU model's side is tiny: no spinning threads */
	/* every GPU model of these tests, unless a test says fused */
	setenv("LLM_TRAIN_GPU_ATTN", "chunked", 1);
	if (getenv("GPU_EMU_FILTER"))   /* run one test (profiling) */
		cmocka_set_test_filter(getenv("GPU_EMU_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
