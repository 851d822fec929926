/* dev_attn.cu: attention kernels around the cuBLASLt products: input prep
 * (optional QK-norm, rotary, head-major layout, GQA repeat) and its
 * backward (head-major with KV heads repeated for the chunked path, or
 * token-major with KV heads once for the fused one: tm), the causal
 * softmax forward and backward on materialised score rows, and the
 * head/token layout changes. Same arithmetic as kernels.c, except that
 * the fused path's prep reads bf16 (its q/k/v product and gradients). */
#include "dev_common.cuh"

/* TM: token-major q, k, v (the fused attention's layout), qkv bf16; else
 * head-major with KV heads repeated, qkv fp32 */
template <bool TM>
__global__ void k_prep_fwd(const typename gk_io<TM>::t *qkv, gk_bf16 *q, gk_bf16 *k, gk_bf16 *v, int T, int H,
						   int KV, int hd, const float *qw, const float *kw, float *qr, float *kr,
						   float eps, const float *cos_t, const float *sin_t, const int32_t *pos)
{
	GK_DYN_SHARED(float, sv);
	int m = blockIdx.x, hh = blockIdx.y, i = threadIdx.x, h2 = hd / 2;
	int b = m / T, t = m % T, W = (H + 2 * KV) * hd, G = H / KV;
	int rt = pos ? pos[m] : t; /* rotary row: the position in its sample */
	const typename gk_io<TM>::t *row = qkv + (size_t)m * W;
	int isq = hh < H, g = hh - H;
	float val = i < hd ? gk_ld(row, (size_t)hh * hd + i) : 0.f;
	const float *w = isq ? qw : kw;
	if (w) {
		float ss = block_sum(val * val);
		float r = rsqrtf(ss / (float)hd + eps);
		if (i == 0) {
			if (isq)
				qr[(size_t)m * H + hh] = r;
			else
				kr[(size_t)m * KV + g] = r;
		}
		if (i < hd)
			val = val * r * w[i];
	}
	if (i < hd)
		sv[i] = val;
	__syncthreads();
	if (i >= hd)
		return;
	float out;
	if (i < h2) {
		float c = cos_t[(size_t)rt * h2 + i], s = sin_t[(size_t)rt * h2 + i];
		out = sv[i] * c - sv[i + h2] * s;
	} else {
		float c = cos_t[(size_t)rt * h2 + i - h2], s = sin_t[(size_t)rt * h2 + i - h2];
		out = sv[i] * c + sv[i - h2] * s;
	}
	if (isq) {
		st_bf(q, TM ? ((size_t)m * H + hh) * hd + i : (((size_t)b * H + hh) * T + t) * hd + i,
			  out);
		return;
	}
	float vv = gk_ld(row, (size_t)(H + KV + g) * hd + i);
	if (TM) {
		st_bf(k, ((size_t)m * KV + g) * hd + i, out);
		st_bf(v, ((size_t)m * KV + g) * hd + i, vv);
	} else {
		for (int j = 0; j < G; j++) {
			size_t o = (((size_t)b * H + g * G + j) * T + t) * hd + i;
			st_bf(k, o, out);
			st_bf(v, o, vv);
		}
	}
}

extern "C" cudaError_t gk_attn_prep_fwd_tm(const void *qkv, gk_bf16 *q, gk_bf16 *k,
										   gk_bf16 *v, int B, int T, int H, int KV, int hd,
										   const float *qw, const float *kw, float *qr,
										   float *kr, float eps, const float *cos_t,
										   const float *sin_t, const int32_t *pos, int tm,
										   cudaStream_t st)
{
	dim3 g((unsigned)(B * T), (unsigned)(H + KV));
	if (tm)
		GK_LAUNCH(k_prep_fwd<true>, g, gk_row_threads(hd), (size_t)hd * sizeof(float), st)(
			static_cast<const gk_bf16 *>(qkv), q, k, v, T, H, KV, hd, qw, kw, qr, kr, eps, cos_t,
			sin_t, pos);
	else
		GK_LAUNCH(k_prep_fwd<false>, g, gk_row_threads(hd), (size_t)hd * sizeof(float), st)(
			static_cast<const float *>(qkv), q, k, v, T, H, KV, hd, qw, kw, qr, kr, eps, cos_t,
			sin_t, pos);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_attn_prep_fwd(const float *qkv, gk_bf16 *q, gk_bf16 *k, gk_bf16 *v,
										int B, int T, int H, int KV, int hd, const float *qw,
										const float *kw, float *qr, float *kr, float eps,
										const float *cos_t, const float *sin_t, cudaStream_t st)
{
	return gk_attn_prep_fwd_tm(qkv, q, k, v, B, T, H, KV, hd, qw, kw, qr, kr, eps, cos_t, sin_t,
							   NULL, 0, st);
}

/* TM: dq, dk, dv token-major with KV heads once and bf16 as qkv (the
 * fused attention's); else head-major, KV heads repeated, fp32 */
template <bool TM>
__global__ void k_prep_bwd(const typename gk_io<TM>::t *dq, const typename gk_io<TM>::t *dk,
						   const typename gk_io<TM>::t *dv, gk_bf16 *dqkv,
						   const typename gk_io<TM>::t *qkv, int T, int H, int KV, int hd,
						   const float *qw, const float *kw, const float *qr, const float *kr,
						   float *contrib, const float *cos_t, const float *sin_t, int M,
						   const int32_t *pos)
{
	GK_DYN_SHARED(float, sv);
	int m = blockIdx.x, hh = blockIdx.y, i = threadIdx.x, h2 = hd / 2;
	int b = m / T, t = m % T, W = (H + 2 * KV) * hd, G = H / KV;
	int rt = pos ? pos[m] : t;
	int isq = hh < H, g = hh - H;
	float gval = 0.f, gv = 0.f;
	if (i < hd) {
		if (isq) {
			gval = gk_ld(dq, TM ? ((size_t)m * H + hh) * hd + i
							   : (((size_t)b * H + hh) * T + t) * hd + i);
		} else if (TM) {
			gval = gk_ld(dk, ((size_t)m * KV + g) * hd + i);
			gv = gk_ld(dv, ((size_t)m * KV + g) * hd + i);
		} else {
			for (int j = 0; j < G; j++) {
				size_t o = (((size_t)b * H + g * G + j) * T + t) * hd + i;
				gval += gk_ld(dk, o);
				gv += gk_ld(dv, o);
			}
		}
		sv[i] = gval;
	}
	__syncthreads();
	if (i < hd) {
		if (i < h2) {
			float c = cos_t[(size_t)rt * h2 + i], s = sin_t[(size_t)rt * h2 + i];
			gval = sv[i] * c + sv[i + h2] * s;
		} else {
			float c = cos_t[(size_t)rt * h2 + i - h2], s = sin_t[(size_t)rt * h2 + i - h2];
			gval = sv[i] * c - sv[i - h2] * s;
		}
	}
	const float *w = isq ? qw : kw;
	if (w) {
		float x = i < hd ? gk_ld(qkv, (size_t)m * W + (size_t)hh * hd + i) : 0.f;
		float r = isq ? qr[(size_t)m * H + hh] : kr[(size_t)m * KV + g];
		float wi = i < hd ? w[i] : 0.f;
		float dot = block_sum(gval * wi * x);
		if (i < hd) {
			size_t ci = isq ? ((size_t)m * H + hh) * hd + i
							: (size_t)M * H * hd + ((size_t)m * KV + g) * hd + i;
			contrib[ci] = gval * x * r;
			gval = r * (gval * wi - x * (dot * r * r / (float)hd));
		}
	}
	if (i >= hd)
		return;
	st_bf(dqkv, (size_t)m * W + (size_t)hh * hd + i, gval);
	if (!isq)
		st_bf(dqkv, (size_t)m * W + (size_t)(H + KV + g) * hd + i, gv);
}

extern "C" cudaError_t gk_attn_prep_bwd_tm(const void *dq, const void *dk, const void *dv,
										   gk_bf16 *dqkv, const void *qkv, int B, int T, int H,
										   int KV, int hd, const float *qw, const float *kw,
										   const float *qr, const float *kr, float *dqw,
										   float *dkw, float *contrib, float *part,
										   const float *cos_t, const float *sin_t,
										   const int32_t *pos, int tm, cudaStream_t st)
{
	int M = B * T;
	dim3 g((unsigned)M, (unsigned)(H + KV));
	typedef const gk_bf16 *B16;
	typedef const float *F32;
	if (tm)
		GK_LAUNCH(k_prep_bwd<true>, g, gk_row_threads(hd), (size_t)hd * sizeof(float), st)(
			static_cast<B16>(dq), static_cast<B16>(dk), static_cast<B16>(dv), dqkv,
			static_cast<B16>(qkv), T, H, KV, hd, qw, kw, qr, kr, contrib, cos_t, sin_t, M, pos);
	else
		GK_LAUNCH(k_prep_bwd<false>, g, gk_row_threads(hd), (size_t)hd * sizeof(float), st)(
			static_cast<F32>(dq), static_cast<F32>(dk), static_cast<F32>(dv), dqkv,
			static_cast<F32>(qkv), T, H, KV, hd, qw, kw, qr, kr, contrib, cos_t, sin_t, M, pos);
	if (qw) {
		gk_colsum_rows(contrib, M * H, hd, part, dqw, st);
		gk_colsum_rows(contrib + (size_t)M * H * hd, M * KV, hd, part, dkw, st);
	}
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_attn_prep_bwd(const float *dq, const float *dk, const float *dv,
										gk_bf16 *dqkv, const float *qkv, int B, int T, int H,
										int KV, int hd, const float *qw, const float *kw,
										const float *qr, const float *kr, float *dqw, float *dkw,
										float *contrib, float *part, const float *cos_t,
										const float *sin_t, cudaStream_t st)
{
	return gk_attn_prep_bwd_tm(dq, dk, dv, dqkv, qkv, B, T, H, KV, hd, qw, kw, qr, kr, dqw, dkw,
							   contrib, part, cos_t, sin_t, NULL, 0, st);
}

/* Rows of a query chunk: n x C rows of kc scores (stride kc); row r is
 * query r0 + r % C, which sees keys 0 .. r0 + r % C. The full square is
 * C = kc = T, r0 = 0. Packed samples (lo != NULL: [B][T], the first token
 * of each token's sample; matrix bh of n = B*H is sequence bh / H): keys
 * lo .. r0 + r % C only, P 0 before lo (so the backward needs no lo). */
__global__ void k_softmax_fwd(const float *S, gk_bf16 *P, int C, int kc, int r0, int H, int T,
							  const int32_t *lo)
{
	size_t row = blockIdx.x;
	int i = r0 + (int)(row % (size_t)C);
	int j0 = lo ? lo[(row / (size_t)C / (size_t)H) * (size_t)T + (size_t)i] : 0;
	const float *s = S + row * kc;
	float mx = -INFINITY;
	for (int j = j0 + threadIdx.x; j <= i; j += blockDim.x)
		mx = fmaxf(mx, s[j]);
	mx = block_max(mx);
	float sum = 0.f;
	for (int j = j0 + threadIdx.x; j <= i; j += blockDim.x)
		sum += expf(s[j] - mx);
	sum = block_sum(sum);
	float inv = 1.0f / sum;
	for (int j = threadIdx.x; j < kc; j += blockDim.x)
		st_bf(P, row * kc + j, j >= j0 && j <= i ? expf(s[j] - mx) * inv : 0.f);
}

static unsigned softmax_threads(int kc)
{
	return gk_row_threads(kc) > 256 ? 256 : gk_row_threads(kc);
}

extern "C" cudaError_t gk_softmax_seg_chunk_fwd(const float *S, gk_bf16 *P, int n, int C,
												int kc, int r0, int H, int T, const int32_t *lo,
												cudaStream_t st)
{
	GK_LAUNCH(k_softmax_fwd, (unsigned)((size_t)n * C), softmax_threads(kc), 0, st)(
		S, P, C, kc, r0, H, T, lo);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_softmax_chunk_fwd(const float *S, gk_bf16 *P, int n, int C, int kc,
											int r0, cudaStream_t st)
{
	return gk_softmax_seg_chunk_fwd(S, P, n, C, kc, r0, 1, 1, NULL, st);
}

extern "C" cudaError_t gk_softmax_causal_fwd(const float *S, gk_bf16 *P, int n, int T,
											 cudaStream_t st)
{
	return gk_softmax_chunk_fwd(S, P, n, T, T, 0, st);
}

__global__ void k_softmax_bwd(const gk_bf16 *P, const float *dP, gk_bf16 *dS, int C, int kc,
							  int r0)
{
	size_t row = blockIdx.x, o = row * kc;
	int i = r0 + (int)(row % (size_t)C);
	float dot = 0.f;
	for (int j = threadIdx.x; j <= i; j += blockDim.x)
		dot += ld_bf(P, o + j) * dP[o + j];
	dot = block_sum(dot);
	for (int j = threadIdx.x; j < kc; j += blockDim.x)
		st_bf(dS, o + j, j <= i ? ld_bf(P, o + j) * (dP[o + j] - dot) : 0.f);
}

extern "C" cudaError_t gk_softmax_chunk_bwd(const gk_bf16 *P, const float *dP, gk_bf16 *dS,
											int n, int C, int kc, int r0, cudaStream_t st)
{
	GK_LAUNCH(k_softmax_bwd, (unsigned)((size_t)n * C), softmax_threads(kc), 0, st)(P, dP, dS, C,
																				  kc, r0);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_softmax_causal_bwd(const gk_bf16 *P, const float *dP, gk_bf16 *dS,
											 int n, int T, cudaStream_t st)
{
	return gk_softmax_chunk_bwd(P, dP, dS, n, T, T, 0, st);
}

/* e indexes the head-major [B][H][T][hd] tensor */
__global__ void k_h2t(const gk_bf16 *o, gk_bf16 *att, int T, int H, int hd, size_t n)
{
	for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
		 e += (size_t)gridDim.x * blockDim.x) {
		size_t i = e % hd, r = e / hd, t = r % T, bh = r / T, h = bh % H, b = bh / H;
		reinterpret_cast<bf_t *>(att)[((b * T + t) * H + h) * hd + i] =
			reinterpret_cast<const bf_t *>(o)[e];
	}
}

__global__ void k_t2h(const float *datt, gk_bf16 *dO, int T, int H, int hd, size_t n)
{
	for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
		 e += (size_t)gridDim.x * blockDim.x) {
		size_t i = e % hd, r = e / hd, t = r % T, bh = r / T, h = bh % H, b = bh / H;
		st_bf(dO, e, datt[((b * T + t) * H + h) * hd + i]);
	}
}

extern "C" cudaError_t gk_heads_to_tokens(const gk_bf16 *o, gk_bf16 *att, int B, int T, int H,
										  int hd, cudaStream_t st)
{
	size_t n = (size_t)B * T * H * hd;
	GK_LAUNCH(k_h2t, gk_blocks(n, 256), 256, 0, st)(o, att, T, H, hd, n);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_tokens_to_heads(const float *datt, gk_bf16 *dO, int B, int T, int H,
										  int hd, cudaStream_t st)
{
	size_t n = (size_t)B * T * H * hd;
	GK_LAUNCH(k_t2h, gk_blocks(n, 256), 256, 0, st)(datt, dO, T, H, hd, n);
	return GK_LAST_ERROR();
}
