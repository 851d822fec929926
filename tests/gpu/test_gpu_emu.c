/* test_gpu_emu.c: the GPU backend's kernels run on the CPU (kernels
 * through gk_emu.h, CUDA runtime and cuBLASLt mapping through cuda_emu.c)
 * against the CPU model: every gk_* kernel against its kernels.c twin;
 * whole GPU-model steps are test_gpu_emu_model.c. This checks logic on
 * machines without a GPU; speed and real-device behaviour are checked by
 * tests/gpu/check on a GPU. */
#include "test_gpu_emu.h"

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
	assert_int_equal(gk_rmsnorm_bwd(x, w, r2, dy, dx1, dw1, part, M, d, 1, 0), 0);
	k_rmsnorm_bwd(x, w, r2, dy, dx2, dw2, M, d);
	NEAR(relerr(dx1, dx2, (size_t)M * d), 1e-5);
	NEAR(relerr(dw1, dw2, d), 1e-5);
	/* acc 0 writes dw (what was there is not read): the sum onto zeros */
	float *dw3 = rnd(d, 1), *dw4 = calloc((size_t)d, 4);
	assert_int_equal(gk_rmsnorm_bwd(x, w, r2, dy, dx1, dw3, part, M, d, 0, 0), 0);
	assert_int_equal(gk_rmsnorm_bwd(x, w, r2, dy, dx2, dw4, part, M, d, 1, 0), 0);
	for (int j = 0; j < d; j++)
		assert_true(dw3[j] == dw4[j]);
	free(dw3); free(dw4);
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

/* one bit of x flipped */
static void flip32(float *x, int bit)
{
	uint32_t u;
	memcpy(&u, x, 4);
	u ^= 1u << bit;
	memcpy(x, &u, 4);
}

/* the master-share check (gk_share_check) over 16 ranges of 37 elements,
 * master and reference at every pair of offsets 0..3 elements from
 * 16-byte boundaries (the 16-byte groups where both line up, one by one
 * where not), and one range of 100,003 elements (many blocks): a
 * consistent share counts 0; bit 30 flipped at the same element of every
 * range counts each once, wherever it falls (head, groups, tail); the
 * lowest mantissa bit counts against an fp32 copy (bit for bit) and not
 * against a bf16 weight whose rounding it leaves alone (the element is
 * kept away from a rounding tie; such a flip changes no weight a replica
 * computes with); -0 against a +0 copy is no mismatch (a copy is a sum
 * over DP); the count adds to what *bad held */
static void share_ranges(int bf, size_t big, float **mb, void **rb, gk_share_ranges *r)
{
	r->nr = 17;
	for (int j = 0; j < r->nr; j++) {
		size_t n = j < 16 ? 37 : big, om = j < 16 ? (size_t)(j % 4) : 0, orr = j < 16 ? (size_t)(j / 4) : 1;
		mb[j] = aligned_alloc(64, (n + 4 + 15) / 16 * 64);
		rb[j] = aligned_alloc(64, (n + 4 + 15) / 16 * 64);
		float *m = mb[j] + om;
		for (size_t i = 0; i < n; i++) {
			uint32_t u;
			do {        /* away from a rounding tie (low 16 bits near 0x8000) */
				m[i] = frand();
				memcpy(&u, &m[i], 4);
			} while ((u & 0xffffu) - 0x7ff0u < 0x20u);
		}
		r->m[j] = m;
		r->n[j] = n;
		r->is_bf16[j] = bf;
		if (bf) {
			bf16 *w = (bf16 *)rb[j] + orr;
			assert_int_equal(gk_f32_to_bf16(m, w, n, 0), 0);   /* the device's rounding */
			for (size_t i = 0; i < n; i++)
				assert_int_equal(w[i], f32_to_bf16(m[i]));
			r->ref[j] = w;
		} else {
			memcpy((float *)rb[j] + orr, m, n * 4);
			r->ref[j] = (float *)rb[j] + orr;
		}
	}
}

static unsigned long long share_count(const gk_share_ranges *r)
{
	unsigned long long bad = 0;
	assert_int_equal(gk_share_check(r, &bad, 0), 0);
	return bad;
}

static void test_share_check(void **st)
{
	(void)st;
	float *mb[GK_SHARE_RANGES + 1];
	void *rb[GK_SHARE_RANGES + 1];
	gk_share_ranges r;
	assert_true(GK_SHARE_RANGES >= 17);
	for (int bf = 0; bf < 2; bf++) {
		share_ranges(bf, 100003, mb, rb, &r);
		assert_int_equal(share_count(&r), 0);
		for (size_t i = 0; i < 37; i++) {
			size_t at[2] = {i, 100003 - 37 + i};          /* and the big range's end */
			for (int j = 0; j < r.nr; j++)
				flip32((float *)r.m[j] + at[j == 16], 30);
			assert_int_equal(share_count(&r), 17);
			for (int j = 0; j < r.nr; j++)
				flip32((float *)r.m[j] + at[j == 16], 30);
		}
		for (int j = 0; j < r.nr; j++)
			flip32((float *)r.m[j] + 5, 0);
		assert_int_equal(share_count(&r), bf ? 0 : 17);
		for (int j = 0; j < r.nr; j++)
			flip32((float *)r.m[j] + 5, 0);
		unsigned long long bad = 5;
		assert_int_equal(gk_share_check(&r, &bad, 0), 0);
		assert_int_equal(bad, 5);
		for (int j = 0; j < r.nr; j++) {
			free(mb[j]);
			free(rb[j]);
		}
	}
	float z = -0.0f, pz = 0.0f;
	gk_share_ranges zr = {{&z}, {&pz}, {1}, {0}, 1};
	assert_int_equal(share_count(&zr), 0);
	pz = 1.0f;
	assert_int_equal(share_count(&zr), 1);
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
		cmocka_unit_test(test_share_check),
	};
	omp_set_num_threads(1);   /* the CPU model's side is tiny: no spinning threads */
	/* every GPU model of these tests, unless a test says fused */
	setenv("LLM_TRAIN_GPU_ATTN", "chunked", 1);
	if (getenv("GPU_EMU_FILTER"))   /* run one test (profiling) */
		cmocka_set_test_filter(getenv("GPU_EMU_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
