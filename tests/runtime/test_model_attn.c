/* test_model_attn.c: attn.h's blocked causal attention against a float64
 * reference computed from the same bf16 inputs (q, k, v made from a raw
 * projection by kernels.c's k_attn_prep_fwd): P and the output; and the
 * backward with the prep backward fused in against the float64 dq, dk, dv
 * passed through kernels.c's k_attn_prep_bwd: the projection gradient and
 * the QK-norm weight gradients. Shapes with T a multiple of the 64-block
 * and not (1, 63, 100, 130), head_dim 16/32/48/64, GQA and QK-norm on and
 * off; P is zero past the diagonal; results are bit-identical on 1 and 3
 * threads. Packed samples: the prep forward and backward with per-token
 * rotary rows (pos) equal the prep of the same vector at that position
 * (fp32, portable copy; this part runs on any CPU). Skips (77) without
 * AVX-512 BF16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/attn.h"
#include "model/kernels.h"

static int fails;

static void expect(int ok, const char *what, double got, double lim)
{
	if (!ok) {
		fprintf(stderr, "FAIL: %s: %.3g (limit %.3g)\n", what, got, lim);
		fails++;
	}
}

static unsigned rng = 12345;
static float urand(void) /* [-1, 1) */
{
	rng = rng * 1664525u + 1013904223u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void *xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(99);
	}
	return p;
}

/* max |a - ref| / max |ref| over n (a fp32 or bf16) */
static double relerr(const void *a, int abf, const double *ref, size_t n)
{
	double e = 0, mx = 1e-30;
	for (size_t i = 0; i < n; i++) {
		double v = abf ? bf16_to_f32(((const bf16 *)a)[i]) : ((const float *)a)[i];
		e = fmax(e, fabs(v - ref[i]));
		mx = fmax(mx, fabs(ref[i]));
	}
	return e / mx;
}

/* the same over columns [c0, c0 + w) of rows of W (a bf16, ref fp32) */
static double relcols(const bf16 *a, const float *ref, size_t rows, int W, int c0, int w)
{
	double e = 0, mx = 1e-30;
	for (size_t r = 0; r < rows; r++)
		for (int c = c0; c < c0 + w; c++) {
			double v = bf16_to_f32(a[r * W + c]), x = ref[r * W + c];
			e = fmax(e, fabs(v - x));
			mx = fmax(mx, fabs(x));
		}
	return e / mx;
}

struct prep { /* the layer's prep: raw projection, rotary, QK-norm */
	int KV, W, qkn;
	float *qkv, *cs, *sn, *qw, *kw, *qr, *kr;
};

struct run {
	bf16 *P, *att, *dS, *dqkv;
	float dqw[64], dkw[64];
};

static void run_attn(struct run *r, int nt, const bf16 *q, const bf16 *k, const bf16 *v,
					 const bf16 *datt, const struct prep *pp, int B, int H, int T, int hd)
{
	int BH = B * H, ld = attn_ld(T);
	size_t nq = (size_t)BH * T * hd, np = (size_t)BH * T * ld;
	r->P = xalloc(np * 2), r->dS = xalloc(np * 2), r->att = xalloc(nq * 2);
	r->dqkv = xalloc((size_t)B * T * pp->W * 2);
	memset(r->dqw, 0, sizeof r->dqw);
	memset(r->dkw, 0, sizeof r->dkw);
	attn_ws *w = attn_ws_new(BH, T, hd, nt);
	if (!w) {
		fprintf(stderr, "out of memory\n");
		exit(99);
	}
	float sc = 1.0f / sqrtf((float)hd);
	attn_prep_grad pg = { pp->KV, pp->cs, pp->sn, pp->qkn ? pp->qkv : NULL,
						  pp->qkn ? pp->qw : NULL, pp->qkn ? pp->kw : NULL, pp->qr, pp->kr,
						  r->dqw, r->dkw, r->dqkv, NULL };
	attn_fwd(w, q, k, v, r->P, r->att, B, H, T, hd, sc);
	attn_bwd(w, q, k, v, r->P, datt, r->dS, &pg, B, H, T, hd, sc);
	attn_ws_free(w);
}

static void free_run(struct run *r)
{
	free(r->P), free(r->dS), free(r->att), free(r->dqkv);
}

/* random inputs of the prep: qkv, the rotary tables, the QK-norm weights */
static void fill_prep(struct prep *pp, size_t M, int T, int hd)
{
	int h2 = hd / 2;
	for (size_t i = 0; i < M * pp->W; i++) /* scores of a few units: peaked rows */
		pp->qkv[i] = 2.0f * urand();
	for (int t = 0; t < T; t++)
		for (int i = 0; i < h2; i++) {
			double f = pow(10000.0, -2.0 * i / hd);
			pp->cs[t * h2 + i] = (float)cos(t * f);
			pp->sn[t * h2 + i] = (float)sin(t * f);
		}
	for (int i = 0; i < hd; i++) {
		pp->qw[i] = 1.5f + urand();
		pp->kw[i] = 1.5f + urand();
	}
}

/* float64 reference of attention forward and backward */
struct ref {
	double *P, *dP, *rP, *rO;
	float *rdq, *rdk, *rdv;
};

/* head by head; P, O token-major like the kernel. Returns the largest
 * magnitude of the kernel's P (kP, rows ld apart) above the diagonal */
static double reference(struct ref *rf, const bf16 *q, const bf16 *k, const bf16 *v,
						const bf16 *datt, const bf16 *kP, int B, int H, int T, int hd)
{
	int BH = B * H, ld = attn_ld(T);
	double sc = 1.0 / sqrt((double)hd);
	double *P = rf->P, *dP = rf->dP, *rP = rf->rP, *rO = rf->rO;
	float *rdq = rf->rdq, *rdk = rf->rdk, *rdv = rf->rdv;
	double zero_bad = 0;
	for (int bh = 0; bh < BH; bh++) {
		int b = bh / H, h = bh % H;
		const bf16 *Q = q + (size_t)bh * T * hd, *K = k + (size_t)bh * T * hd;
		const bf16 *V = v + (size_t)bh * T * hd;
#define X(p, i) ((double)bf16_to_f32((p)[i]))
#define DO(t, c) X(datt, (((size_t)b * T + (t)) * H + h) * hd + (c))
		for (int i = 0; i < T; i++) {
			double mx = -INFINITY, sum = 0;
			for (int j = 0; j <= i; j++) {
				double s = 0;
				for (int c = 0; c < hd; c++)
					s += X(Q, (size_t)i * hd + c) * X(K, (size_t)j * hd + c);
				P[(size_t)i * T + j] = s * sc;
				mx = fmax(mx, s * sc);
			}
			for (int j = 0; j <= i; j++)
				sum += (P[(size_t)i * T + j] = exp(P[(size_t)i * T + j] - mx));
			for (int j = 0; j < T; j++) {
				P[(size_t)i * T + j] = j <= i ? P[(size_t)i * T + j] / sum : 0.0;
				rP[((size_t)bh * T + i) * T + j] = P[(size_t)i * T + j];
			}
			/* the kernel's P: zeros from the diagonal to its written end */
			int zend = (((i / 64 + 1) * 64 < T ? (i / 64 + 1) * 64 : T) + 1) & ~1;
			for (int j = i + 1; j < zend; j++)
				zero_bad = fmax(zero_bad, fabs(bf16_to_f32(kP[((size_t)bh * T + i) * ld + j])));
			for (int c = 0; c < hd; c++) {
				double o = 0;
				for (int j = 0; j <= i; j++)
					o += P[(size_t)i * T + j] * X(V, (size_t)j * hd + c);
				rO[(((size_t)b * T + i) * H + h) * hd + c] = o;
			}
		}
		for (int i = 0; i < T; i++) {
			double dot = 0;
			for (int j = 0; j <= i; j++) {
				double s = 0;
				for (int c = 0; c < hd; c++)
					s += DO(i, c) * X(V, (size_t)j * hd + c);
				dP[(size_t)i * T + j] = s;
				dot += s * P[(size_t)i * T + j];
			}
			for (int j = 0; j <= i; j++) /* dS */
				dP[(size_t)i * T + j] = P[(size_t)i * T + j] * (dP[(size_t)i * T + j] - dot);
		}
		for (int t = 0; t < T; t++)
			for (int c = 0; c < hd; c++) {
				double gq = 0, gk = 0, gv = 0;
				for (int j = 0; j <= t; j++)
					gq += dP[(size_t)t * T + j] * X(K, (size_t)j * hd + c);
				for (int i = t; i < T; i++) {
					gk += dP[(size_t)i * T + t] * X(Q, (size_t)i * hd + c);
					gv += P[(size_t)i * T + t] * DO(i, c);
				}
				size_t o = ((size_t)bh * T + t) * hd + c;
				rdq[o] = (float)(gq * sc), rdk[o] = (float)(gk * sc), rdv[o] = (float)gv;
			}
#undef X
#undef DO
	}
	return zero_bad;
}

static void check(int B, int H, int KV, int T, int hd, int qkn)
{
	int BH = B * H, ld = attn_ld(T), W = (H + 2 * KV) * hd, h2 = hd / 2;
	size_t nq = (size_t)BH * T * hd, M = (size_t)B * T;
	char tag[96];
	struct prep pp = { KV, W, qkn, xalloc(M * W * 4), xalloc((size_t)T * h2 * 4),
					   xalloc((size_t)T * h2 * 4), xalloc(hd * 4), xalloc(hd * 4),
					   xalloc(M * H * 4), xalloc(M * KV * 4) };
	fill_prep(&pp, M, T, hd);
	bf16 *q = xalloc(nq * 2), *k = xalloc(nq * 2), *v = xalloc(nq * 2);
	bf16 *datt = xalloc(nq * 2);
	k_attn_prep_fwd(pp.qkv, q, k, v, B, T, H, KV, hd, qkn ? pp.qw : NULL, qkn ? pp.kw : NULL,
					pp.qr, pp.kr, 1e-5f, pp.cs, pp.sn, 1);
	for (size_t i = 0; i < nq; i++)
		datt[i] = f32_to_bf16(urand());
	struct run r1, r3;
	run_attn(&r1, 1, q, k, v, datt, &pp, B, H, T, hd);
	run_attn(&r3, 3, q, k, v, datt, &pp, B, H, T, hd);

	/* float64 reference */
	struct ref rf = { xalloc((size_t)T * T * 8), xalloc((size_t)T * T * 8),
					  xalloc((size_t)BH * T * T * 8), xalloc(nq * 8), xalloc(nq * 4),
					  xalloc(nq * 4), xalloc(nq * 4) };
	double *rP = rf.rP, *rO = rf.rO;
	double zero_bad = reference(&rf, q, k, v, datt, r1.P, B, H, T, hd);
	/* the prep backward of the reference gradients */
	float *rdqkv = xalloc(M * W * 4), rdqw[64] = { 0 }, rdkw[64] = { 0 };
	k_attn_prep_bwd(rf.rdq, rf.rdk, rf.rdv, rdqkv, qkn ? pp.qkv : NULL, B, T, H, KV, hd,
					qkn ? pp.qw : NULL, qkn ? pp.kw : NULL, pp.qr, pp.kr, rdqw, rdkw, pp.cs, pp.sn,
					0);
	/* compare P row by row (the kernel's rows are ld apart) */
	double pe = 0;
	for (size_t row = 0; row < (size_t)BH * T; row++)
		for (int j = 0; j <= (int)(row % T); j++)
			pe = fmax(pe, fabs(bf16_to_f32(r1.P[row * ld + j]) - rP[row * T + j]));
	snprintf(tag, sizeof tag, "B=%d H=%d KV=%d T=%d hd=%d%s", B, H, KV, T, hd,
			 qkn ? " qk-norm" : "");
	char what[160];
#define CHK(cond, name, val, lim)                                                              \
	do {                                                                                       \
		snprintf(what, sizeof what, "%s: %s", tag, name);                                      \
		expect(cond, what, val, lim);                                                          \
	} while (0)
	/* bf16 storage of P: half an ulp at 1 is 2^-9 */
	CHK(pe <= 4e-3, "P error", pe, 4e-3);
	CHK(zero_bad == 0, "P nonzero above the diagonal", zero_bad, 0);
	double eo = relerr(r1.att, 1, rO, nq);
	CHK(eo <= 1e-2, "output error", eo, 1e-2);
	double eq = relcols(r1.dqkv, rdqkv, M, W, 0, H * hd);
	double ek = relcols(r1.dqkv, rdqkv, M, W, H * hd, KV * hd);
	double ev = relcols(r1.dqkv, rdqkv, M, W, (H + KV) * hd, KV * hd);
	CHK(eq <= 2e-2, "d q_proj error", eq, 2e-2);
	CHK(ek <= 2e-2, "d k_proj error", ek, 2e-2);
	CHK(ev <= 2e-2, "d v_proj error", ev, 2e-2);
	double ew = 0, mw = 1e-30;
	for (int i = 0; qkn && i < hd; i++) {
		ew = fmax(ew, fmax(fabs(r1.dqw[i] - rdqw[i]), fabs(r1.dkw[i] - rdkw[i])));
		mw = fmax(mw, fmax(fabs(rdqw[i]), fabs(rdkw[i])));
	}
	CHK(ew / mw <= 2e-2, "QK-norm weight gradient error", ew / mw, 2e-2);
	int same = !memcmp(r1.att, r3.att, nq * 2) && !memcmp(r1.dqkv, r3.dqkv, M * W * 2) &&
			   !memcmp(r1.dqw, r3.dqw, sizeof r1.dqw) && !memcmp(r1.dkw, r3.dkw, sizeof r1.dkw);
	for (size_t row = 0; same && row < (size_t)BH * T; row++)
		same = !memcmp(r1.P + row * ld, r3.P + row * ld, 2 * (row % T + 1));
	CHK(same, "1 and 3 threads differ", 1, 0);
#undef CHK
	printf("%s: P %.2e, out %.2e, dq %.2e, dk %.2e, dv %.2e, dw %.2e\n", tag, pe, eo, eq, ek, ev,
		   ew / mw);
	free_run(&r1), free_run(&r3);
	free(q), free(k), free(v), free(datt), free(rf.P), free(rf.dP), free(rP), free(rO);
	free(rf.rdq), free(rf.rdk), free(rf.rdv), free(rdqkv);
	free(pp.qkv), free(pp.cs), free(pp.sn), free(pp.qw), free(pp.kw), free(pp.qr), free(pp.kr);
}

/* k_attn_prep_fwd_at / _bwd_at with positions restarting per sample:
 * token t of the packed row must be prepared (and its gradient taken) as
 * the same raw vector at position pos[t] of an unpacked sequence */
static void check_pos(void)
{
	enum { T = 8, hd = 16, W = 3 * hd };
	static const int32_t pos[T] = { 0, 1, 2, 0, 1, 0, 1, 2 };
	float cs[T * hd / 2], sn[T * hd / 2], qkv[T * W], x[T * W], g[T * hd];
	float q[T * hd], k[T * hd], v[T * hd], q1[T * hd], k1[T * hd], v1[T * hd];
	float d[T * W], d1[T * W];
	for (int t = 0; t < T; t++)
		for (int i = 0; i < hd / 2; i++) {
			double f = pow(10000.0, -2.0 * i / hd);
			cs[t * hd / 2 + i] = (float)cos(t * f), sn[t * hd / 2 + i] = (float)sin(t * f);
		}
	for (int i = 0; i < T * W; i++)
		qkv[i] = urand();
	for (int i = 0; i < T * hd; i++)
		g[i] = urand();
	k_attn_prep_fwd_at(qkv, q, k, v, 1, T, 1, 1, hd, NULL, NULL, NULL, NULL, 1e-5f, cs, sn, pos, 0);
	k_attn_prep_bwd_at(g, g, g, d, NULL, 1, T, 1, 1, hd, NULL, NULL, NULL, NULL, NULL, NULL, cs,
					   sn, pos, 0);
	double worst = 0;
	for (int t = 0; t < T; t++) { /* row t alone at row pos[t], others zero */
		float gg[T * hd];
		memset(x, 0, sizeof x);
		memset(gg, 0, sizeof gg);
		memcpy(x + pos[t] * W, qkv + t * W, sizeof(float) * W);
		memcpy(gg + pos[t] * hd, g + t * hd, sizeof(float) * hd);
		k_attn_prep_fwd(x, q1, k1, v1, 1, T, 1, 1, hd, NULL, NULL, NULL, NULL, 1e-5f, cs, sn, 0);
		k_attn_prep_bwd(gg, gg, gg, d1, NULL, 1, T, 1, 1, hd, NULL, NULL, NULL, NULL, NULL, NULL,
						cs, sn, 0);
		for (int i = 0; i < hd; i++) {
			worst = fmax(worst, fabs(q[t * hd + i] - q1[pos[t] * hd + i]));
			worst = fmax(worst, fabs(k[t * hd + i] - k1[pos[t] * hd + i]));
		}
		for (int i = 0; i < W; i++)
			worst = fmax(worst, fabs(d[t * W + i] - d1[pos[t] * W + i]));
	}
	expect(worst == 0, "packed rotary positions (prep forward and backward)", worst, 0);
}

int main(void)
{
	check_pos();
	if (fails)
		return 1;
	if (!attn_ok(16)) {
		printf("SKIP: no AVX-512 BF16 on this CPU (or LLMT_NO_BF16): blocked attention not used\n");
		return 77;
	}
	check(1, 2, 2, 64, 16, 0);
	check(2, 3, 3, 100, 32, 1);
	check(1, 4, 2, 130, 64, 0);
	check(1, 1, 1, 1, 16, 1);
	check(2, 2, 1, 63, 48, 1);
	check(1, 6, 2, 256, 64, 1);
	check(1, 2, 2, 256, 64, 0);
	if (fails)
		fprintf(stderr, "%d check(s) failed\n", fails);
	return fails ? 1 : 0;
}
