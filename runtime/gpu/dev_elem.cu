/* dev_elem.cu: element-wise and row kernels of the GPU model: SwiGLU,
 * embedding (deterministic backward from a sorted plan), cross-entropy
 * fused with z-loss, residual add, bf16 conversion, the fused AdamW
 * (fp32 master and state, bf16 compute copy refreshed in the same pass)
 * and the SDC check of a ZeRO-1 master share against the weights it gave
 * the replicas. */
#include "dev_common.cuh"

#define GRID_LOOP(e, n) \
	for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < (n); \
		 e += (size_t)gridDim.x * blockDim.x)

__global__ void k_swiglu_fwd(const gk_bf16 *gu, gk_bf16 *a, int F, size_t n)
{
	GRID_LOOP(e, n) {
		size_t m = e / F, j = e % F;
		float g = ld_bf(gu, m * 2 * F + j), u = ld_bf(gu, m * 2 * F + F + j);
		st_bf(a, e, g / (1.0f + expf(-g)) * u);
	}
}

__global__ void k_swiglu_bwd(const gk_bf16 *gu, const float *da, gk_bf16 *dgu, int F, size_t n)
{
	GRID_LOOP(e, n) {
		size_t m = e / F, j = e % F, ig = m * 2 * F + j, iu = ig + F;
		float g = ld_bf(gu, ig), u = ld_bf(gu, iu);
		float sg = 1.0f / (1.0f + expf(-g)), d = da[e];
		st_bf(dgu, ig, d * u * sg * (1.0f + g * (1.0f - sg)));
		st_bf(dgu, iu, d * g * sg);
	}
}

extern "C" cudaError_t gk_swiglu_fwd(const gk_bf16 *gu, gk_bf16 *a, int M, int F, cudaStream_t st)
{
	size_t n = (size_t)M * F;
	GK_LAUNCH(k_swiglu_fwd, gk_blocks(n, 256), 256, 0, st)(gu, a, F, n);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_swiglu_bwd(const gk_bf16 *gu, const float *da, gk_bf16 *dgu, int M,
									 int F, cudaStream_t st)
{
	size_t n = (size_t)M * F;
	GK_LAUNCH(k_swiglu_bwd, gk_blocks(n, 256), 256, 0, st)(gu, da, dgu, F, n);
	return GK_LAST_ERROR();
}

__global__ void k_embed_fwd(const float *E, const int32_t *tok, float *x, int d, size_t n)
{
	GRID_LOOP(e, n) {
		size_t m = e / d, j = e % d;
		x[e] = E[(size_t)tok[m] * d + j];
	}
}

extern "C" cudaError_t gk_embed_fwd(const float *E, const int32_t *tok, float *x, int M, int d,
									cudaStream_t st)
{
	size_t n = (size_t)M * d;
	GK_LAUNCH(k_embed_fwd, gk_blocks(n, 256), 256, 0, st)(E, tok, x, d, n);
	return GK_LAST_ERROR();
}

/* block (u, column tile): one token's rows summed in position order */
__global__ void k_embed_bwd(float *dE, const int32_t *uniq, const int32_t *start,
							const int32_t *pos, const float *dx, int d)
{
	int u = blockIdx.x, j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= d)
		return;
	float s = 0.f;
	for (int p = start[u]; p < start[u + 1]; p++)
		s += dx[(size_t)pos[p] * d + j];
	dE[(size_t)uniq[u] * d + j] += s;
}

extern "C" cudaError_t gk_embed_bwd(float *dE, const int32_t *uniq, const int32_t *start,
									const int32_t *pos, int nuniq, const float *dx, int d,
									cudaStream_t st)
{
	if (nuniq == 0)
		return cudaSuccess;
	dim3 g((unsigned)nuniq, (unsigned)((d + 127) / 128));
	GK_LAUNCH(k_embed_bwd, g, 128, 0, st)(dE, uniq, start, pos, dx, d);
	return GK_LAST_ERROR();
}

__global__ void k_xent(const float *logits, const int32_t *tgt, gk_bf16 *dlog, float *loss, int V,
					   float z, float invM)
{
	size_t m = blockIdx.x;
	const float *l = logits + m * V;
	if (tgt[m] < 0) { /* not trained on: no loss, no gradient (uniform per block) */
		if (threadIdx.x == 0)
			loss[m] = 0.f;
		for (int j = threadIdx.x; j < V; j += blockDim.x)
			st_bf(dlog, m * V + j, 0.f);
		return;
	}
	float mx = -INFINITY;
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		mx = fmaxf(mx, l[j]);
	mx = block_max(mx);
	float sum = 0.f;
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		sum += expf(l[j] - mx);
	sum = block_sum(sum);
	float lse = mx + logf(sum);
	int t = tgt[m];
	if (threadIdx.x == 0)
		loss[m] = lse - l[t] + z * lse * lse;
	float coef = (1.0f + 2.0f * z * lse) * invM;
	for (int j = threadIdx.x; j < V; j += blockDim.x)
		st_bf(dlog, m * V + j, expf(l[j] - lse) * coef - (j == t ? invM : 0.f));
}

extern "C" cudaError_t gk_xent_fwd(const float *logits, const int32_t *tgt, gk_bf16 *dlogits,
								   float *loss, int M, int V, float z, cudaStream_t st)
{
	GK_LAUNCH(k_xent, (unsigned)M, 512, 0, st)(logits, tgt, dlogits, loss, V, z, 1.0f / (float)M);
	return GK_LAST_ERROR();
}

/* vec: every pointer 16-byte aligned (8 for bf16): groups of 4 elements
 * through 16-byte loads (8-byte bf16 stores), the n % 4 tail one by one */
__global__ void k_add(float *x, const float *r, size_t n, int vec)
{
	size_t n4 = vec ? n / 4 : 0;
	GRID_LOOP(e, n4) {
		float4 a = reinterpret_cast<float4 *>(x)[e], b = reinterpret_cast<const float4 *>(r)[e];
		a.x += b.x;
		a.y += b.y;
		a.z += b.z;
		a.w += b.w;
		reinterpret_cast<float4 *>(x)[e] = a;
	}
	GRID_LOOP(e, n - 4 * n4) x[4 * n4 + e] += r[4 * n4 + e];
}

__global__ void k_to_bf16(const float *s, gk_bf16 *d, size_t n, int vec)
{
	size_t n4 = vec ? n / 4 : 0;
	GRID_LOOP(e, n4) {
		float4 a = reinterpret_cast<const float4 *>(s)[e];
		__nv_bfloat162 lo = __floats2bfloat162_rn(a.x, a.y), hi = __floats2bfloat162_rn(a.z, a.w);
		GK_EMU_POINT();
		reinterpret_cast<__nv_bfloat162 *>(d)[2 * e] = lo;
		reinterpret_cast<__nv_bfloat162 *>(d)[2 * e + 1] = hi;
	}
	GRID_LOOP(e, n - 4 * n4) st_bf(d, 4 * n4 + e, s[4 * n4 + e]);
}

static int al16(const void *p) { return ((uintptr_t)p & 15) == 0; }

extern "C" cudaError_t gk_add(float *x, const float *r, size_t n, cudaStream_t st)
{
	int vec = al16(x) && al16(r);
	GK_LAUNCH(k_add, gk_blocks(vec ? n / 4 + 1 : n, 256), 256, 0, st)(x, r, n, vec);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_f32_to_bf16(const float *src, gk_bf16 *dst, size_t n, cudaStream_t st)
{
	int vec = al16(src) && ((uintptr_t)dst & 7) == 0;
	GK_LAUNCH(k_to_bf16, gk_blocks(vec ? n / 4 + 1 : n, 256), 256, 0, st)(src, dst, n, vec);
	return GK_LAST_ERROR();
}

/* the arithmetic of llmt_adamw_update for one element: p, m, v updated,
 * the new p returned */
__device__ __forceinline__ float adamw1(float &p, float g, float &m, float &v, float gs,
										int scale, float b1, float b2, float omb1, float omb2,
										float keep, float step, float bc2s, float eps)
{
	float gi = scale ? g * gs : g;
	float pi = p * keep;
	float mi = m * b1 + gi * omb1;
	float vi = v * b2 + gi * gi * omb2;
	float denom = sqrtf(vi) / bc2s + eps;
	m = mi;
	v = vi;
	p = pi + (-step) * (mi / denom);
	return p;
}

/* element by element; vec (p, g, m, v 16-byte and wc 8-byte aligned):
 * groups of 4 through 16-byte loads, the tail one by one */
__global__ void k_adamw(float *p, const float *g, float *m, float *v, gk_bf16 *wc, size_t n,
						float gs, int scale, float b1, float b2, float omb1, float omb2,
						float keep, float step, float bc2s, float eps, int vec)
{
	size_t n4 = vec ? n / 4 : 0;
	GRID_LOOP(e, n4) {
		float4 P = reinterpret_cast<float4 *>(p)[e], G = reinterpret_cast<const float4 *>(g)[e];
		float4 Mv = reinterpret_cast<float4 *>(m)[e], Vv = reinterpret_cast<float4 *>(v)[e];
		adamw1(P.x, G.x, Mv.x, Vv.x, gs, scale, b1, b2, omb1, omb2, keep, step, bc2s, eps);
		adamw1(P.y, G.y, Mv.y, Vv.y, gs, scale, b1, b2, omb1, omb2, keep, step, bc2s, eps);
		adamw1(P.z, G.z, Mv.z, Vv.z, gs, scale, b1, b2, omb1, omb2, keep, step, bc2s, eps);
		adamw1(P.w, G.w, Mv.w, Vv.w, gs, scale, b1, b2, omb1, omb2, keep, step, bc2s, eps);
		reinterpret_cast<float4 *>(p)[e] = P;
		reinterpret_cast<float4 *>(m)[e] = Mv;
		reinterpret_cast<float4 *>(v)[e] = Vv;
		if (wc) {
			GK_EMU_POINT();
			reinterpret_cast<__nv_bfloat162 *>(wc)[2 * e] = __floats2bfloat162_rn(P.x, P.y);
			reinterpret_cast<__nv_bfloat162 *>(wc)[2 * e + 1] = __floats2bfloat162_rn(P.z, P.w);
		}
	}
	GRID_LOOP(e, n - 4 * n4) {
		size_t i = 4 * n4 + e;
		float np = adamw1(p[i], g[i], m[i], v[i], gs, scale, b1, b2, omb1, omb2, keep, step, bc2s,
						  eps);
		if (wc)
			st_bf(wc, i, np);
	}
}

extern "C" cudaError_t gk_adamw(float *p, const float *g, float *m, float *v, gk_bf16 *wc,
								size_t n, float gscale, float b1, float b2, float omb1,
								float omb2, float keep, float step, float bc2s, float eps,
								cudaStream_t st)
{
	if (n == 0)
		return cudaSuccess;
	int vec = al16(p) && al16(g) && al16(m) && al16(v) && ((uintptr_t)wc & 7) == 0;
	GK_LAUNCH(k_adamw, gk_blocks(vec ? n / 4 + 1 : n, 256), 256, 0, st)(
		p, g, m, v, wc, n, gscale, gscale != 1.0f, b1, b2, omb1, omb2, keep, step, bc2s, eps, vec);
	return GK_LAST_ERROR();
}

/* bits of the bf16 roundings the update writes (k_adamw: __floats2bfloat162_rn
 * in groups, __float2bfloat16_rn one by one: the same rounding) */
__device__ __forceinline__ unsigned short bf_bits(float x)
{
	return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

/* an fp32 copy against master: the same bits, +0 and -0 alike (a copy is
 * a sum over DP of the owner's value and zeros, where -0 + 0 is +0) */
__device__ __forceinline__ unsigned f32_bad(float m, float c)
{
	unsigned a, b;
	memcpy(&a, &m, 4);
	memcpy(&b, &c, 4);
	return a != b && ((a | b) & 0x7fffffffu) != 0;
}

/* four elements from 16-byte (master, fp32 copy) and 8-byte (bf16) loads */
__device__ __forceinline__ unsigned share_bad4(const float *m, const void *ref, int bf, size_t e)
{
	GK_EMU_ALIGNED(m + 4 * e, 16);
	float4 a = reinterpret_cast<const float4 *>(m)[e];
	if (!bf) {
		GK_EMU_ALIGNED(reinterpret_cast<const float *>(ref) + 4 * e, 16);
		float4 c = reinterpret_cast<const float4 *>(ref)[e];
		return f32_bad(a.x, c.x) + f32_bad(a.y, c.y) + f32_bad(a.z, c.z) + f32_bad(a.w, c.w);
	}
	GK_EMU_ALIGNED(reinterpret_cast<const gk_bf16 *>(ref) + 4 * e, 8);
	ushort4 w = reinterpret_cast<const ushort4 *>(ref)[e];
	__nv_bfloat162 lo = __floats2bfloat162_rn(a.x, a.y), hi = __floats2bfloat162_rn(a.z, a.w);
	return (__bfloat16_as_ushort(lo.x) != w.x) + (__bfloat16_as_ushort(lo.y) != w.y) +
		   (__bfloat16_as_ushort(hi.x) != w.z) + (__bfloat16_as_ushort(hi.y) != w.w);
}

/* block (x, j): range j, grid-stride; the elements before master's first
 * 16-byte boundary and the n % 4 tail one by one, groups of 4 between
 * when the reference is aligned there too (else all one by one). A thread
 * that found mismatches adds its count: an integer atomic, none at all in
 * a healthy share, a total that does not depend on the order */
__global__ void k_share_check(gk_share_ranges r, unsigned long long *bad)
{
	int j = blockIdx.y, bf = r.is_bf16[j];
	const float *m = r.m[j];
	const void *ref = r.ref[j];
	size_t n = r.n[j], h = ((16 - ((uintptr_t)m & 15)) & 15) / 4;
	h = h < n ? h : n;
	const char *rh = reinterpret_cast<const char *>(ref) + h * (bf ? 2 : 4);
	size_t n4 = ((uintptr_t)rh & (bf ? 7 : 15)) == 0 ? (n - h) / 4 : 0;
	if (!n4)
		h = 0;
	unsigned long long c = 0;
	GRID_LOOP(e, n4) c += share_bad4(m + h, rh, bf, e);
	/* one by one: [0, h) and [h + 4 n4, n) */
	GRID_LOOP(k, n - 4 * n4) {
		size_t i = k < h ? k : 4 * n4 + k;
		c += bf ? bf_bits(m[i]) != reinterpret_cast<const gk_bf16 *>(ref)[i]
				: f32_bad(m[i], reinterpret_cast<const float *>(ref)[i]);
	}
	if (c) {
		GK_EMU_POINT();
		atomicAdd(bad, c);
	}
}

extern "C" cudaError_t gk_share_check(const gk_share_ranges *r, unsigned long long *bad,
									  cudaStream_t st)
{
	size_t mx = 0;
	for (int j = 0; j < r->nr; j++)
		mx = r->n[j] > mx ? r->n[j] : mx;
	if (!mx)
		return cudaSuccess;
	dim3 g(gk_blocks(mx / 4 + 1, 256), (unsigned)r->nr);
	GK_LAUNCH(k_share_check, g, 256, 0, st)(*r, bad);
	return GK_LAST_ERROR();
}
