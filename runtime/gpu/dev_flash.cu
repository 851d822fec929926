/* dev_flash.cu: fused causal attention (flash attention, forward and
 * backward) on token-major bf16 q, k, v with GQA and optional segments:
 * tiles of 32 queries x 32 keys in shared memory, an online softmax in
 * fp32, the logsumexp kept for backward; backward recomputes P, dK and dV
 * in one pass over the query tiles (every query head of the group in
 * order), dQ in its own pass over the key tiles. No atomics: every output
 * element is written by one thread in a fixed order. */
#include "dev_common.cuh"

#define FB 32           /* queries and keys per tile */
#define FT (FB * 8)     /* threads: 8 per tile row */

/* may query position tq see key position tk (same batch row b)? */
__device__ __forceinline__ bool fl_sees(const int *seg, int b, int T, int tq, int tk)
{
	return tk <= tq && tq < T && (!seg || seg[(size_t)b * T + tk] == seg[(size_t)b * T + tq]);
}

/* rows r0 .. r0+FB-1 of a token-major [B*T][nh][HD] bf16 tensor, head hh,
 * into s[FB][HD] (zeros past T); raw bf16 copies */
template <int HD>
__device__ __forceinline__ void fl_load(bf_t *s, const gk_bf16 *src, int b, int T, int nh,
										int hh, int r0)
{
	const bf_t *p = reinterpret_cast<const bf_t *>(src);
	for (int e = threadIdx.x; e < FB * HD; e += FT) {
		int r = e / HD, i = e % HD, t = r0 + r;
		s[e] = t < T ? p[(((size_t)b * T + t) * nh + hh) * HD + i] : __float2bfloat16_rn(0.f);
	}
}

/* sum / max over the 8 threads of a tile row (lanes differing in bits 0-2) */
__device__ __forceinline__ float fl_sum8(float v)
{
	for (int o = 4; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ __forceinline__ float fl_max8(float v)
{
	for (int o = 4; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

template <int HD>
__device__ __forceinline__ float fl_dot(const bf_t *a, const bf_t *b)
{
	float s = 0.f;
	for (int i = 0; i < HD; i++)
		s += __bfloat162float(a[i]) * __bfloat162float(b[i]);
	return s;
}

/* one block: query tile qt of head h of batch row b. Thread t owns row
 * r = t / 8 and columns (keys in S, features in O) l, l+8, ... (l = t % 8). */
template <int HD>
__global__ void k_flash_fwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o,
							float *lse, const int *seg, int T, int H, int KV, float scale)
{
	GK_DYN_SHARED(float, sh);
	float *sp = sh;                                     /* [FB][FB] probabilities */
	bf_t *sq = reinterpret_cast<bf_t *>(sp + FB * FB);  /* [FB][HD] each */
	bf_t *sk = sq + FB * HD, *sv = sk + FB * HD;
	int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z; /* long tiles first */
	int g = h / (H / KV), r = threadIdx.x >> 3, l = threadIdx.x & 7, q0 = qt * FB;
	float acc[HD / 8], mrow = -INFINITY, lrow = 0.f;
	for (int j = 0; j < HD / 8; j++)
		acc[j] = 0.f;
	fl_load<HD>(sq, q, b, T, H, h, q0);
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * FB;
		fl_load<HD>(sk, k, b, T, KV, g, k0);
		fl_load<HD>(sv, v, b, T, KV, g, k0);
		__syncthreads();
		float s[FB / 8], mx = -INFINITY;
		for (int j = 0; j < FB / 8; j++) {
			int c = l + 8 * j;
			s[j] = fl_sees(seg, b, T, q0 + r, k0 + c)
					   ? scale * fl_dot<HD>(sq + r * HD, sk + c * HD) : -INFINITY;
			mx = fmaxf(mx, s[j]);
		}
		float mnew = fmaxf(mrow, fl_max8(mx));
		float alpha = mnew == -INFINITY ? 1.f : expf(mrow - mnew), ps = 0.f;
		for (int j = 0; j < FB / 8; j++) {
			float p = s[j] == -INFINITY ? 0.f : expf(s[j] - mnew);
			sp[r * FB + l + 8 * j] = p;
			ps += p;
		}
		lrow = lrow * alpha + fl_sum8(ps);
		mrow = mnew;
		__syncthreads();
		for (int j = 0; j < HD / 8; j++) {
			int i = l + 8 * j;
			float a = acc[j] * alpha;
			for (int c = 0; c < FB; c++)
				a += sp[r * FB + c] * __bfloat162float(sv[c * HD + i]);
			acc[j] = a;
		}
		__syncthreads();        /* sk, sv, sp are refilled */
	}
	int t = q0 + r;
	if (t >= T)
		return;
	float inv = lrow > 0.f ? 1.f / lrow : 0.f;
	for (int j = 0; j < HD / 8; j++)
		st_bf(o, (((size_t)b * T + t) * H + h) * HD + l + 8 * j, acc[j] * inv);
	if (l == 0)
		lse[((size_t)b * H + h) * T + t] = mrow + logf(lrow);
}

/* D[b][h][t] = sum_i dO * O (fp32, 8 threads a row in a fixed order) */
template <int HD>
__global__ void k_flash_dsum(const gk_bf16 *o, const gk_bf16 *dO, float *D, int T, int H)
{
	int h = blockIdx.y, b = blockIdx.z, r = threadIdx.x >> 3, l = threadIdx.x & 7;
	int t = blockIdx.x * FB + r;
	float s = 0.f;
	if (t < T) {
		size_t base = (((size_t)b * T + t) * H + h) * HD;
		for (int i = l; i < HD; i += 8)
			s += ld_bf(o, base + i) * ld_bf(dO, base + i);
	}
	s = fl_sum8(s);
	if (t < T && l == 0)
		D[((size_t)b * H + h) * T + t] = s;
}

/* P and dS = P (dP - D) of query row r against keys l + 8j of the tile;
 * sq, sdo hold the query tile, sk, sv the key tile */
template <int HD>
__device__ __forceinline__ void fl_pds(const bf_t *sq, const bf_t *sdo, const bf_t *sk,
									   const bf_t *sv, float lse, float Dr, bool *see, int r,
									   int l, float scale, float *p, float *ds)
{
	for (int j = 0; j < FB / 8; j++) {
		int c = l + 8 * j;
		p[j] = see[j] ? expf(scale * fl_dot<HD>(sq + r * HD, sk + c * HD) - lse) : 0.f;
		ds[j] = see[j] ? p[j] * (fl_dot<HD>(sdo + r * HD, sv + c * HD) - Dr) : 0.f;
	}
}

/* one block: key tile kt of KV head g of batch row b; thread t owns key
 * row t / 8 of dK and dV. Query heads of the group, then query tiles, in
 * order: a fixed summation order. */
template <int HD>
__global__ void k_flash_bwd_kv(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
							   const gk_bf16 *dO, const float *lse, const float *D,
							   const int *seg, float *dk, float *dv, int T, int H, int KV,
							   float scale)
{
	GK_DYN_SHARED(float, sh);
	float *sp = sh, *sds = sp + FB * FB, *sl = sds + FB * FB, *sd = sl + FB;
	bf_t *sq = reinterpret_cast<bf_t *>(sd + FB);
	bf_t *sdo = sq + FB * HD, *sk = sdo + FB * HD, *sv = sk + FB * HD;
	int nqt = gridDim.x, kt = nqt - 1 - blockIdx.x, g = blockIdx.y, b = blockIdx.z;
	int G = H / KV, r = threadIdx.x >> 3, l = threadIdx.x & 7, k0 = kt * FB;
	float ak[HD / 8], av[HD / 8];
	for (int j = 0; j < HD / 8; j++)
		ak[j] = av[j] = 0.f;
	fl_load<HD>(sk, k, b, T, KV, g, k0);
	fl_load<HD>(sv, v, b, T, KV, g, k0);
	for (int hh = g * G; hh < (g + 1) * G; hh++)
		for (int qt = kt; qt < nqt; qt++) {
			int q0 = qt * FB;
			fl_load<HD>(sq, q, b, T, H, hh, q0);
			fl_load<HD>(sdo, dO, b, T, H, hh, q0);
			if (threadIdx.x < FB) {
				int t = q0 + threadIdx.x;
				size_t ri = ((size_t)b * H + hh) * T + t;
				sl[threadIdx.x] = t < T ? lse[ri] : 0.f;
				sd[threadIdx.x] = t < T ? D[ri] : 0.f;
			}
			__syncthreads();
			bool see[FB / 8];
			for (int j = 0; j < FB / 8; j++)
				see[j] = fl_sees(seg, b, T, q0 + r, k0 + l + 8 * j);
			float p[FB / 8], ds[FB / 8];
			fl_pds<HD>(sq, sdo, sk, sv, sl[r], sd[r], see, r, l, scale, p, ds);
			for (int j = 0; j < FB / 8; j++) {
				sp[r * FB + l + 8 * j] = p[j];
				sds[r * FB + l + 8 * j] = ds[j];
			}
			__syncthreads();
			for (int j = 0; j < HD / 8; j++) {
				int i = l + 8 * j;
				float a = av[j], c = ak[j];
				for (int qr = 0; qr < FB; qr++) {
					a += sp[qr * FB + r] * __bfloat162float(sdo[qr * HD + i]);
					c += sds[qr * FB + r] * __bfloat162float(sq[qr * HD + i]);
				}
				av[j] = a;
				ak[j] = c;
			}
			__syncthreads();
		}
	int t = k0 + r;
	if (t >= T)
		return;
	for (int j = 0; j < HD / 8; j++) {
		size_t e = (((size_t)b * T + t) * KV + g) * HD + l + 8 * j;
		dk[e] = ak[j] * scale;
		dv[e] = av[j];
	}
}

/* one block: query tile qt of head h of batch row b; thread t owns query
 * row t / 8 of dQ; key tiles in order */
template <int HD>
__global__ void k_flash_bwd_q(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
							  const gk_bf16 *dO, const float *lse, const float *D,
							  const int *seg, float *dq, int T, int H, int KV, float scale)
{
	GK_DYN_SHARED(float, sh);
	float *sds = sh;
	bf_t *sq = reinterpret_cast<bf_t *>(sds + FB * FB);
	bf_t *sdo = sq + FB * HD, *sk = sdo + FB * HD, *sv = sk + FB * HD;
	int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	int g = h / (H / KV), r = threadIdx.x >> 3, l = threadIdx.x & 7, q0 = qt * FB, t = q0 + r;
	float acc[HD / 8];
	for (int j = 0; j < HD / 8; j++)
		acc[j] = 0.f;
	size_t ri = ((size_t)b * H + h) * T + t;
	float lr = t < T ? lse[ri] : 0.f, Dr = t < T ? D[ri] : 0.f;
	fl_load<HD>(sq, q, b, T, H, h, q0);
	fl_load<HD>(sdo, dO, b, T, H, h, q0);
	for (int kt = 0; kt <= qt; kt++) {
		int k0 = kt * FB;
		fl_load<HD>(sk, k, b, T, KV, g, k0);
		fl_load<HD>(sv, v, b, T, KV, g, k0);
		__syncthreads();
		bool see[FB / 8];
		for (int j = 0; j < FB / 8; j++)
			see[j] = fl_sees(seg, b, T, t, k0 + l + 8 * j);
		float p[FB / 8], ds[FB / 8];
		fl_pds<HD>(sq, sdo, sk, sv, lr, Dr, see, r, l, scale, p, ds);
		for (int j = 0; j < FB / 8; j++)
			sds[r * FB + l + 8 * j] = ds[j];
		__syncthreads();
		for (int j = 0; j < HD / 8; j++) {
			int i = l + 8 * j;
			float a = acc[j];
			for (int c = 0; c < FB; c++)
				a += sds[r * FB + c] * __bfloat162float(sk[c * HD + i]);
			acc[j] = a;
		}
		__syncthreads();
	}
	if (t >= T)
		return;
	for (int j = 0; j < HD / 8; j++)
		dq[(((size_t)b * T + t) * H + h) * HD + l + 8 * j] = acc[j] * scale;
}

template <int HD>
static cudaError_t flash_fwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o,
							 float *lse, const int *seg, int B, int T, int H, int KV,
							 cudaStream_t st)
{
	dim3 grid((unsigned)((T + FB - 1) / FB), (unsigned)H, (unsigned)B);
	size_t shm = FB * FB * 4 + 3 * FB * HD * 2;
	GK_LAUNCH(k_flash_fwd<HD>, grid, FT, shm, st)(q, k, v, o, lse, seg, T, H, KV,
												   1.0f / sqrtf((float)HD));
	return GK_LAST_ERROR();
}

template <int HD>
static cudaError_t flash_bwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
							 const gk_bf16 *o, const gk_bf16 *dO, const float *lse, float *D,
							 const int *seg, float *dq, float *dk, float *dv, int B, int T,
							 int H, int KV, cudaStream_t st)
{
	unsigned nt = (unsigned)((T + FB - 1) / FB);
	float sc = 1.0f / sqrtf((float)HD);
	GK_LAUNCH(k_flash_dsum<HD>, dim3(nt, (unsigned)H, (unsigned)B), FT, 0, st)(o, dO, D, T, H);
	size_t shkv = 2 * FB * FB * 4 + 2 * FB * 4 + 4 * FB * HD * 2;
	GK_LAUNCH(k_flash_bwd_kv<HD>, dim3(nt, (unsigned)KV, (unsigned)B), FT, shkv, st)(
		q, k, v, dO, lse, D, seg, dk, dv, T, H, KV, sc);
	size_t shq = FB * FB * 4 + 4 * FB * HD * 2;
	GK_LAUNCH(k_flash_bwd_q<HD>, dim3(nt, (unsigned)H, (unsigned)B), FT, shq, st)(
		q, k, v, dO, lse, D, seg, dq, T, H, KV, sc);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_flash_fwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
									gk_bf16 *o, float *lse, const int *seg, int B, int T, int H,
									int KV, int hd, cudaStream_t st)
{
	if (B < 1 || T < 1 || KV < 1 || H % KV)
		return cudaErrorInvalidValue;
#define FL_F(HD) flash_fwd<HD>(q, k, v, o, lse, seg, B, T, H, KV, st)
	switch (hd) {
	case 8: return FL_F(8);
	case 16: return FL_F(16);
	case 32: return FL_F(32);
	case 64: return FL_F(64);
	case 128: return FL_F(128);
	default: return cudaErrorInvalidValue;
	}
#undef FL_F
}

extern "C" cudaError_t gk_flash_bwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
									const gk_bf16 *o, const gk_bf16 *dO, const float *lse,
									float *D, const int *seg, float *dq, float *dk, float *dv,
									int B, int T, int H, int KV, int hd, cudaStream_t st)
{
	if (B < 1 || T < 1 || KV < 1 || H % KV)
		return cudaErrorInvalidValue;
#define FL_B(HD) flash_bwd<HD>(q, k, v, o, dO, lse, D, seg, dq, dk, dv, B, T, H, KV, st)
	switch (hd) {
	case 8: return FL_B(8);
	case 16: return FL_B(16);
	case 32: return FL_B(32);
	case 64: return FL_B(64);
	case 128: return FL_B(128);
	default: return cudaErrorInvalidValue;
	}
#undef FL_B
}
