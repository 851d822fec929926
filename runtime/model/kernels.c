/* kernels.c: element-wise and row kernels of the model (see kernels.h),
 * written by hand because they are fused per row to stay in cache; the
 * matrix products go through oneDNN (matmul.c). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#include "simd.h"

/* 1 / sqrt(mean of x[i]^2 + eps) over n floats, in a fixed order */
static inline float rms_inv(const float *x, int n, float eps)
{
#ifdef LLMT_SIMD
	__m512 acc = _mm512_setzero_ps();
	for (int i = 0; i < n; i += 16) {
		__m512 v = ld_ps(tailmask((size_t)(n - i)), x + i);
		acc = _mm512_fmadd_ps(v, v, acc);
	}
	return 1.0f / sqrtf(_mm512_reduce_add_ps(acc) / (float)n + eps);
#else
	float ss = 0.f;
	for (int i = 0; i < n; i++)
		ss += x[i] * x[i];
	return 1.0f / sqrtf(ss / (float)n + eps);
#endif
}

/* out row = xr * rstd * w; returns rstd */
static inline float norm_row(const float *xr, const float *w, void *out, size_t o, int d,
							 float eps, int bf)
{
	float r = rms_inv(xr, d, eps);
#ifdef LLMT_SIMD
	__m512 vr = _mm512_set1_ps(r);
	for (int i = 0; i < d; i += 16) {
		__mmask16 k = tailmask((size_t)(d - i));
		__m512 v = _mm512_mul_ps(_mm512_mul_ps(ld_ps(k, xr + i), vr),
								 ld_ps(k, w + i));
		v_st(out, o + i, v, k, bf);
	}
#else
	for (int i = 0; i < d; i++)
		act_st(out, o + i, xr[i] * r * w[i], bf);
#endif
	return r;
}

void k_rmsnorm_fwd(const float *x, const float *w, void *out, float *rstd, int M, int d,
				   float eps, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_rmsnorm_fwd, (x, w, out, rstd, M, d, eps, bf));
#pragma omp parallel for schedule(static)
	for (int m = 0; m < M; m++)
		rstd[m] = norm_row(x + (size_t)m * d, w, out, (size_t)m * d, d, eps, bf);
}

void k_add_rmsnorm_fwd(const float *x, const float *r, float *s, const float *w, void *out,
					   float *rstd, int M, int d, float eps, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_add_rmsnorm_fwd, (x, r, s, w, out, rstd, M, d, eps, bf));
#pragma omp parallel for schedule(static)
	for (int m = 0; m < M; m++) {
		size_t o = (size_t)m * d;
		for (int i = 0; i < d; i++)
			s[o + i] = x[o + i] + r[o + i];
		rstd[m] = norm_row(s + o, w, out, o, d, eps, bf);
	}
}

#ifndef LLMT_ISA_AVX512 /* no AVX-512 code: one copy */
void k_rmsnorm_bwd(const float *x, const float *w, const float *rstd, const float *dy,
				   float *dx, float *dw, int M, int d)
{
	k_rmsnorm_bwd_act(x, w, rstd, dy, dx, dw, M, d, NULL, 0);
}

#endif

void k_rmsnorm_bwd_act(const float *x, const float *w, const float *rstd, const float *dy,
					   float *dx, float *dw, int M, int d, void *dxact, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_rmsnorm_bwd_act, (x, w, rstd, dy, dx, dw, M, d, dxact, bf));
	int nt = omp_get_max_threads();
	float *part = calloc((size_t)nt * d, sizeof *part);
#pragma omp parallel num_threads(nt)
	{
		float *pw = part ? part + (size_t)omp_get_thread_num() * d : NULL;
#pragma omp for schedule(static)
		for (int m = 0; m < M; m++) {
			const float *xr = x + (size_t)m * d, *g = dy + (size_t)m * d;
			float *o = dx + (size_t)m * d;
			float r = rstd[m];
#ifdef LLMT_SIMD
			__m512 acc = _mm512_setzero_ps();
			for (int i = 0; i < d; i += 16) {
				__mmask16 k = tailmask((size_t)(d - i));
				acc = _mm512_fmadd_ps(_mm512_mul_ps(ld_ps(k, g + i),
													ld_ps(k, w + i)),
									  ld_ps(k, xr + i), acc);
			}
			float c = _mm512_reduce_add_ps(acc) * r * r / (float)d;
			__m512 vr = _mm512_set1_ps(r), vc = _mm512_set1_ps(c);
			for (int i = 0; i < d; i += 16) {
				__mmask16 k = tailmask((size_t)(d - i));
				__m512 gi = ld_ps(k, g + i), xi = ld_ps(k, xr + i);
				__m512 t = _mm512_fmsub_ps(gi, ld_ps(k, w + i), _mm512_mul_ps(xi, vc));
				__m512 nd = _mm512_fmadd_ps(vr, t, ld_ps(k, o + i));
				st_ps(o + i, k, nd);
				if (dxact)
					v_st(dxact, (size_t)m * d + i, nd, k, bf);
				if (pw)
					st_ps(pw + i, k, _mm512_fmadd_ps(_mm512_mul_ps(gi, xi), vr,
																	 ld_ps(k, pw + i)));
			}
#else
			float dot = 0.f;
			for (int i = 0; i < d; i++)
				dot += g[i] * w[i] * xr[i];
			float c = dot * r * r / (float)d;
			for (int i = 0; i < d; i++) {
				o[i] += r * (g[i] * w[i] - xr[i] * c);
				if (dxact)
					act_st(dxact, (size_t)m * d + i, o[i], bf);
			}
			if (pw)
				for (int i = 0; i < d; i++)
					pw[i] += g[i] * xr[i] * r;
#endif
		}
	}
	if (!part) { /* out of memory: serial, still correct */
		for (int m = 0; m < M; m++)
			for (int i = 0; i < d; i++)
				dw[i] += dy[(size_t)m * d + i] * x[(size_t)m * d + i] * rstd[m];
		return;
	}
	for (int t = 0; t < nt; t++)
		for (int i = 0; i < d; i++)
			dw[i] += part[(size_t)t * d + i];
	free(part);
}

/* n fp32 values into an fp32 or bf16 array at element off */
static inline void put_row(void *dst, size_t off, const float *src, int n, int bf)
{
	if (bf)
		f32_to_bf16_n((bf16 *)dst + off, src, (size_t)n);
	else
		memcpy((float *)dst + off, src, sizeof(float) * (size_t)n);
}

/* normalise (optional) then rotate one head vector v[hd] in place */
static void head_fwd(float *v, int hd, const float *w, float *rs, float eps, const float *c,
					 const float *s)
{
	int h2 = hd / 2;
#ifdef LLMT_SIMD
	if (w) {
		float r = rms_inv(v, hd, eps);
		*rs = r;
		__m512 vr = _mm512_set1_ps(r);
		for (int i = 0; i < hd; i += 16) {
			__mmask16 k = tailmask((size_t)(hd - i));
			__m512 x = _mm512_mul_ps(ld_ps(k, v + i), vr);
			st_ps(v + i, k, _mm512_mul_ps(x, ld_ps(k, w + i)));
		}
	}
	for (int i = 0; i < h2; i += 16) {
		__mmask16 k = tailmask((size_t)(h2 - i));
		__m512 a = ld_ps(k, v + i), b = ld_ps(k, v + h2 + i);
		__m512 cc = ld_ps(k, c + i), ss = ld_ps(k, s + i);
		st_ps(v + i, k, _mm512_fmsub_ps(a, cc, _mm512_mul_ps(b, ss)));
		st_ps(v + h2 + i, k, _mm512_fmadd_ps(b, cc, _mm512_mul_ps(a, ss)));
	}
#else
	if (w) {
		float r = rms_inv(v, hd, eps);
		*rs = r;
		for (int i = 0; i < hd; i++)
			v[i] = v[i] * r * w[i];
	}
	for (int i = 0; i < h2; i++) {
		float a = v[i], b = v[i + h2];
		v[i] = a * c[i] - b * s[i];
		v[i + h2] = b * c[i] + a * s[i];
	}
#endif
}

void k_attn_prep_fwd_at(const float *qkv, void *q, void *k, void *v, int B, int T, int H, int KV,
						int hd, const float *qw, const float *kw, float *qr, float *kr, float eps,
						const float *cos_t, const float *sin_t, const int32_t *pos, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_attn_prep_fwd_at,
						(qkv, q, k, v, B, T, H, KV, hd, qw, kw, qr, kr, eps, cos_t, sin_t, pos, bf));
	int W = (H + 2 * KV) * hd, G = H / KV;
#pragma omp parallel for collapse(2) schedule(static)
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++) {
			float tmp[1024];
			size_t m = (size_t)b * T + t;
			const float *row = qkv + m * W;
			size_t r = (size_t)(pos ? pos[m] : t) * (hd / 2);
			const float *c = cos_t + r, *s = sin_t + r;
			for (int h = 0; h < H; h++) {
				memcpy(tmp, row + (size_t)h * hd, sizeof(float) * hd);
				head_fwd(tmp, hd, qw, qr ? &qr[m * H + h] : NULL, eps, c, s);
				put_row(q, (((size_t)b * H + h) * T + t) * hd, tmp, hd, bf);
			}
			for (int g = 0; g < KV; g++) {
				memcpy(tmp, row + (size_t)(H + g) * hd, sizeof(float) * hd);
				head_fwd(tmp, hd, kw, kr ? &kr[m * KV + g] : NULL, eps, c, s);
				const float *vv = row + (size_t)(H + KV + g) * hd;
				for (int j = 0; j < G; j++) {
					size_t o = (((size_t)b * H + g * G + j) * T + t) * hd;
					put_row(k, o, tmp, hd, bf);
					put_row(v, o, vv, hd, bf);
				}
			}
		}
}

void k_head_bwd(float *g, const float *x, int hd, const float *w, float r, float *dw,
				const float *c, const float *s)
{
	int h2 = hd / 2;
#ifdef LLMT_SIMD
	for (int i = 0; i < h2; i += 16) { /* inverse rotation */
		__mmask16 k = tailmask((size_t)(h2 - i));
		__m512 a = ld_ps(k, g + i), b = ld_ps(k, g + h2 + i);
		__m512 cc = ld_ps(k, c + i), ss = ld_ps(k, s + i);
		st_ps(g + i, k, _mm512_fmadd_ps(a, cc, _mm512_mul_ps(b, ss)));
		st_ps(g + h2 + i, k, _mm512_fmsub_ps(b, cc, _mm512_mul_ps(a, ss)));
	}
	if (w) {
		__m512 acc = _mm512_setzero_ps(), vr = _mm512_set1_ps(r);
		for (int i = 0; i < hd; i += 16) {
			__mmask16 k = tailmask((size_t)(hd - i));
			__m512 gi = ld_ps(k, g + i), xi = ld_ps(k, x + i);
			acc = _mm512_fmadd_ps(_mm512_mul_ps(gi, ld_ps(k, w + i)), xi, acc);
			st_ps(dw + i, k, _mm512_fmadd_ps(_mm512_mul_ps(gi, xi), vr,
															 ld_ps(k, dw + i)));
		}
		__m512 cc = _mm512_set1_ps(_mm512_reduce_add_ps(acc) * r * r / (float)hd);
		for (int i = 0; i < hd; i += 16) {
			__mmask16 k = tailmask((size_t)(hd - i));
			__m512 gi = ld_ps(k, g + i), xi = ld_ps(k, x + i);
			__m512 t = _mm512_fmsub_ps(gi, ld_ps(k, w + i), _mm512_mul_ps(xi, cc));
			st_ps(g + i, k, _mm512_mul_ps(vr, t));
		}
	}
#else
	for (int i = 0; i < h2; i++) { /* inverse rotation */
		float a = g[i], b = g[i + h2];
		g[i] = a * c[i] + b * s[i];
		g[i + h2] = b * c[i] - a * s[i];
	}
	if (w) {
		float dot = 0.f;
		for (int i = 0; i < hd; i++) {
			dot += g[i] * w[i] * x[i];
			dw[i] += g[i] * x[i] * r;
		}
		float cc = dot * r * r / (float)hd;
		for (int i = 0; i < hd; i++)
			g[i] = r * (g[i] * w[i] - x[i] * cc);
	}
#endif
}

/* g[0..n) = sum over j < G of src[j * stride + i] (fixed order) */
static void group_sum(float *g, const float *src, size_t stride, int G, int n)
{
#ifdef LLMT_SIMD
	for (int i = 0; i < n; i += 16) {
		__mmask16 k = tailmask((size_t)(n - i));
		__m512 acc = ld_ps(k, src + i);
		for (int j = 1; j < G; j++)
			acc = _mm512_add_ps(acc, ld_ps(k, src + j * stride + i));
		st_ps(g + i, k, acc);
	}
#else
	memcpy(g, src, sizeof(float) * (size_t)n);
	for (int j = 1; j < G; j++)
		for (int i = 0; i < n; i++)
			g[i] += src[j * stride + i];
#endif
}

void k_attn_prep_bwd_at(const float *dq, const float *dk, const float *dv, void *dqkv,
						const float *qkv, int B, int T, int H, int KV, int hd, const float *qw,
						const float *kw, const float *qr, const float *kr, float *dqw, float *dkw,
						const float *cos_t, const float *sin_t, const int32_t *pos, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_attn_prep_bwd_at, (dq, dk, dv, dqkv, qkv, B, T, H, KV, hd, qw, kw,
												 qr, kr, dqw, dkw, cos_t, sin_t, pos, bf));
	int W = (H + 2 * KV) * hd, G = H / KV;
	int nt = omp_get_max_threads();
	float *part = qw ? calloc((size_t)nt * 2 * hd, sizeof *part) : NULL;
	int qn = qw && part;
#pragma omp parallel num_threads(nt)
	{
		float *pq = qn ? part + (size_t)omp_get_thread_num() * 2 * hd : NULL;
		float *pk = pq ? pq + hd : NULL;
#pragma omp for collapse(2) schedule(static)
		for (int b = 0; b < B; b++)
			for (int t = 0; t < T; t++) {
				float g[1024], gv[1024];
				size_t m = (size_t)b * T + t;
				const float *row = qkv ? qkv + m * W : NULL;
				size_t r = (size_t)(pos ? pos[m] : t) * (hd / 2);
				const float *c = cos_t + r, *s = sin_t + r;
				for (int h = 0; h < H; h++) {
					memcpy(g, dq + (((size_t)b * H + h) * T + t) * hd, sizeof(float) * hd);
					k_head_bwd(g, row ? row + (size_t)h * hd : NULL, hd, qn ? qw : NULL,
							 qn ? qr[m * H + h] : 0.f, pq, c, s);
					put_row(dqkv, m * W + (size_t)h * hd, g, hd, bf);
				}
				for (int kvh = 0; kvh < KV; kvh++) {
					size_t o = (((size_t)b * H + kvh * G) * T + t) * hd;
					group_sum(g, dk + o, (size_t)T * hd, G, hd);
					group_sum(gv, dv + o, (size_t)T * hd, G, hd);
					k_head_bwd(g, row ? row + (size_t)(H + kvh) * hd : NULL, hd, qn ? kw : NULL,
							 qn ? kr[m * KV + kvh] : 0.f, pk, c, s);
					put_row(dqkv, m * W + (size_t)(H + kvh) * hd, g, hd, bf);
					put_row(dqkv, m * W + (size_t)(H + KV + kvh) * hd, gv, hd, bf);
				}
			}
	}
	if (qn) {
		for (int t = 0; t < nt; t++)
			for (int i = 0; i < hd; i++) {
				dqw[i] += part[(size_t)t * 2 * hd + i];
				dkw[i] += part[(size_t)t * 2 * hd + hd + i];
			}
	}
	free(part);
}

void k_softmax_seg_fwd(const float *S, void *P, int n, int T, int H, const int32_t *lo, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_softmax_seg_fwd, (S, P, n, T, H, lo, bf));
#pragma omp parallel for collapse(2) schedule(static)
	for (int b = 0; b < n; b++)
		for (int i = 0; i < T; i++) {
			size_t o = ((size_t)b * T + i) * T;
			const float *s = S + o;
			int len = i + 1, j0 = lo ? lo[(size_t)(b / H) * T + i] : 0;
#ifdef LLMT_SIMD
			float e[4096];
			__m512 vm = _mm512_set1_ps(-INFINITY);
			for (int j = j0; j < len; j += 16)
				vm = _mm512_mask_max_ps(vm, tailmask((size_t)(len - j)), vm, _mm512_loadu_ps(s + j));
			__m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vm)), sum = _mm512_setzero_ps();
			for (int j = j0; j < len; j += 16) {
				__mmask16 k = tailmask((size_t)(len - j));
				__m512 v = _mm512_maskz_mov_ps(k, v_exp(_mm512_sub_ps(ld_ps(k, s + j), mx)));
				_mm512_storeu_ps(e + j, v);
				sum = _mm512_add_ps(sum, v);
			}
			memset(e, 0, sizeof(float) * (size_t)j0); /* keys of earlier samples */
			__m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
			for (int j = 0; j < T; j += 16) {
				__mmask16 k = tailmask((size_t)(T - j));
				__m512 v = j < len ? _mm512_mul_ps(_mm512_loadu_ps(e + j), inv) : _mm512_setzero_ps();
				if (j < len && len - j < 16)
					v = _mm512_maskz_mov_ps(tailmask((size_t)(len - j)), v);
				v_st(P, o + j, v, k, bf);
			}
#else
			float mx = -INFINITY;
			for (int j = j0; j < len; j++)
				mx = s[j] > mx ? s[j] : mx;
			float sum = 0.f;
			float e[4096];
			for (int j = 0; j < len; j++) {
				e[j] = j < j0 ? 0.f : expf(s[j] - mx);
				sum += e[j];
			}
			float inv = 1.0f / sum;
			for (int j = 0; j < T; j++)
				act_st(P, o + j, j < len ? e[j] * inv : 0.f, bf);
#endif
		}
}

void k_softmax_causal_bwd(const void *P, const float *dP, void *dS, int n, int T, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_softmax_causal_bwd, (P, dP, dS, n, T, bf));
#pragma omp parallel for collapse(2) schedule(static)
	for (int b = 0; b < n; b++)
		for (int i = 0; i < T; i++) {
			size_t o = ((size_t)b * T + i) * T;
			int len = i + 1;
#ifdef LLMT_SIMD
			__m512 acc = _mm512_setzero_ps();
			for (int j = 0; j < len; j += 16) {
				__mmask16 k = tailmask((size_t)(len - j));
				acc = _mm512_fmadd_ps(v_ld(P, o + j, k, bf), ld_ps(k, dP + o + j), acc);
			}
			__m512 dot = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
			for (int j = 0; j < T; j += 16) {
				__mmask16 k = tailmask((size_t)(T - j));
				__mmask16 kl = j < len ? tailmask((size_t)(len - j)) : 0;
				__m512 v = _mm512_mul_ps(v_ld(P, o + j, kl, bf),
										 _mm512_sub_ps(ld_ps(kl, dP + o + j), dot));
				v_st(dS, o + j, _mm512_maskz_mov_ps(kl, v), k, bf);
			}
#else
			float dot = 0.f;
			for (int j = 0; j < len; j++)
				dot += act_ld(P, o + j, bf) * dP[o + j];
			for (int j = 0; j < len; j++)
				act_st(dS, o + j, act_ld(P, o + j, bf) * (dP[o + j] - dot), bf);
			for (int j = len; j < T; j++)
				act_st(dS, o + j, 0.f, bf);
#endif
		}
}

#ifndef LLMT_ISA_AVX512 /* no AVX-512 code: one copy */
void k_attn_prep_fwd(const float *qkv, void *q, void *k, void *v, int B, int T, int H, int KV,
					 int hd, const float *qw, const float *kw, float *qr, float *kr, float eps,
					 const float *cos_t, const float *sin_t, int bf)
{
	k_attn_prep_fwd_at(qkv, q, k, v, B, T, H, KV, hd, qw, kw, qr, kr, eps, cos_t, sin_t, NULL, bf);
}

void k_attn_prep_bwd(const float *dq, const float *dk, const float *dv, void *dqkv,
					 const float *qkv, int B, int T, int H, int KV, int hd, const float *qw,
					 const float *kw, const float *qr, const float *kr, float *dqw, float *dkw,
					 const float *cos_t, const float *sin_t, int bf)
{
	k_attn_prep_bwd_at(dq, dk, dv, dqkv, qkv, B, T, H, KV, hd, qw, kw, qr, kr, dqw, dkw, cos_t,
					   sin_t, NULL, bf);
}

void k_softmax_causal_fwd(const float *S, void *P, int n, int T, int bf)
{
	k_softmax_seg_fwd(S, P, n, T, 1, NULL, bf);
}

void k_heads_to_tokens(const void *o, void *att, int B, int T, int H, int hd, int bf)
{
	size_t es = bf ? 2 : 4;
#pragma omp parallel for collapse(2) schedule(static)
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			for (int h = 0; h < H; h++)
				memcpy((char *)att + (((size_t)b * T + t) * H + h) * hd * es,
					   (const char *)o + (((size_t)b * H + h) * T + t) * hd * es, hd * es);
}

#endif

void k_tokens_to_heads(const float *datt, void *dO, int B, int T, int H, int hd, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_tokens_to_heads, (datt, dO, B, T, H, hd, bf));
#pragma omp parallel for collapse(2) schedule(static)
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			for (int h = 0; h < H; h++) {
				const float *src = datt + (((size_t)b * T + t) * H + h) * hd;
				size_t o = (((size_t)b * H + h) * T + t) * hd;
				if (bf)
					f32_to_bf16_n((bf16 *)dO + o, src, hd);
				else
					memcpy((float *)dO + o, src, sizeof(float) * hd);
			}
}

void k_swiglu_fwd(const void *gu, void *a, int M, int F, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_swiglu_fwd, (gu, a, M, F, bf));
#pragma omp parallel for schedule(static)
	for (int m = 0; m < M; m++) {
		size_t ig = (size_t)m * 2 * F, ia = (size_t)m * F;
#ifdef LLMT_SIMD
		for (int j = 0; j < F; j += 16) {
			__mmask16 k = tailmask((size_t)(F - j));
			__m512 g = v_ld(gu, ig + j, k, bf), u = v_ld(gu, ig + F + j, k, bf);
			v_st(a, ia + j, _mm512_mul_ps(_mm512_mul_ps(g, v_sigmoid(g)), u), k, bf);
		}
#else
		for (int j = 0; j < F; j++) {
			float g = act_ld(gu, ig + j, bf), u = act_ld(gu, ig + F + j, bf);
			act_st(a, ia + j, g / (1.0f + expf(-g)) * u, bf);
		}
#endif
	}
}

void k_swiglu_bwd(const void *gu, const float *da, void *dgu, int M, int F, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_swiglu_bwd, (gu, da, dgu, M, F, bf));
#pragma omp parallel for schedule(static)
	for (int m = 0; m < M; m++) {
		size_t ig = (size_t)m * 2 * F, ia = (size_t)m * F;
#ifdef LLMT_SIMD
		const __m512 one = _mm512_set1_ps(1.0f);
		for (int j = 0; j < F; j += 16) {
			__mmask16 k = tailmask((size_t)(F - j));
			__m512 g = v_ld(gu, ig + j, k, bf), u = v_ld(gu, ig + F + j, k, bf);
			__m512 d = ld_ps(k, da + ia + j), sg = v_sigmoid(g);
			__m512 t = _mm512_fmadd_ps(g, _mm512_sub_ps(one, sg), one); /* 1 + g(1-sg) */
			v_st(dgu, ig + j, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(d, u), sg), t), k, bf);
			v_st(dgu, ig + F + j, _mm512_mul_ps(_mm512_mul_ps(d, g), sg), k, bf);
		}
#else
		for (int j = 0; j < F; j++) {
			float g = act_ld(gu, ig + j, bf), u = act_ld(gu, ig + F + j, bf);
			float sg = 1.0f / (1.0f + expf(-g));
			float d = da[ia + j];
			act_st(dgu, ig + j, d * u * sg * (1.0f + g * (1.0f - sg)), bf);
			act_st(dgu, ig + F + j, d * g * sg, bf);
		}
#endif
	}
}

#ifndef LLMT_ISA_AVX512 /* no AVX-512 code: one copy */
void k_embed_fwd(const float *E, const int32_t *tok, float *x, int M, int d)
{
#pragma omp parallel for schedule(static)
	for (int m = 0; m < M; m++)
		memcpy(x + (size_t)m * d, E + (size_t)tok[m] * d, sizeof(float) * d);
}

void k_embed_bwd(float *dE, const int32_t *tok, const float *dx, int M, int d)
{
#pragma omp parallel
	{
		int nt = omp_get_num_threads(), id = omp_get_thread_num();
		int lo = (int)((int64_t)d * id / nt), hi = (int)((int64_t)d * (id + 1) / nt);
		for (int m = 0; m < M; m++) {
			float *dst = dE + (size_t)tok[m] * d;
			const float *src = dx + (size_t)m * d;
			for (int i = lo; i < hi; i++)
				dst[i] += src[i];
		}
	}
}

double k_xent_fwd(const float *logits, const int32_t *tgt, void *dlogits, int M, int V,
				  float z, int bf)
{
	double total = 0.0;
	float invM = 1.0f / (float)M;
#pragma omp parallel for schedule(static) reduction(+ : total)
	for (int m = 0; m < M; m++) {
		const float *l = logits + (size_t)m * V;
		if (tgt[m] < 0) { /* not trained on (doc/contracts.md): no loss, no gradient */
			for (int j = 0; j < V; j++)
				act_st(dlogits, (size_t)m * V + j, 0.f, bf);
			continue;
		}
		float mx = -INFINITY;
		for (int j = 0; j < V; j++)
			mx = l[j] > mx ? l[j] : mx;
		double sum = 0.0;
		for (int j = 0; j < V; j++)
			sum += exp((double)(l[j] - mx));
		double lse = mx + log(sum);
		total += lse - l[tgt[m]] + z * lse * lse;
		float coef = (float)(1.0 + 2.0 * z * lse) * invM;
		for (int j = 0; j < V; j++) {
			float p = (float)exp((double)l[j] - lse);
			float g = p * coef - (j == tgt[m] ? invM : 0.f);
			act_st(dlogits, (size_t)m * V + j, g, bf);
		}
	}
	return total / M;
}

void k_add(float *s, const float *x, const float *r, size_t n)
{
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++)
		s[i] = x[i] + r[i];
}

#endif

void k_to_act(const float *src, void *dst, size_t n, int bf)
{
	LLMT_AVX512_FORWARD(bf, k_to_act, (src, dst, n, bf));
	if (!bf) {
		if (dst != src)
			memcpy(dst, src, n * sizeof(float));
		return;
	}
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i += 4096)
		f32_to_bf16_n((bf16 *)dst + i, src + i, n - i < 4096 ? n - i : 4096);
}
