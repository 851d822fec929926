/* dev_flash_mma.cu: the fused attention's forward at head dims 64 and 128
 * on mma.sync m16n8k16 with ldmatrix (dev_mma.cuh), the FlashAttention-2
 * way: a warp's Q fragments stay in registers, S = QK^T and the online
 * softmax stay in the accumulators (their layout is the PTX ISA's, so a
 * lane knows its rows and keys), P goes from them to A fragments without
 * shared memory, O += PV accumulates in registers; the logsumexp is kept
 * for backward (dev_flash.cu). gk_flash_fwd (the default forward) runs it
 * at those head dims and the wmma forward at the others;
 * gk_flash_mma_check compares the two on the device at hand. */
#include "dev_flash.cuh"
#include "dev_mma.cuh"

#define MK 32           /* keys a tile */
#define MW 4            /* warps a block, 16 query rows each */

/* q [R][PS], k and v [MK][PS] (bf16, rows P + 8 apart: the 8 rows of
 * an ldmatrix matrix fall in distinct banks) */
template <int HD> struct fm_shape {
	static_assert(HD == 64 || HD == 128, "the mma forward has head dims 64 and 128");
	static constexpr int P = HD, PS = fl_pad<HD>::PS, R = 16 * MW;
	static constexpr size_t shm = (size_t)(R + 2 * MK) * PS * 2;
	static_assert(shm <= 48 * 1024, "mma flash tiles beyond 48 KiB of shared memory");
};

/* s[n] = the C fragment of a warp's 16 query rows (A fragments qa)
 * against keys 8n..8n+7 of sk [MK][PS]; lane's ldmatrix row: key
 * 8 (lane/16) + lane%8, dims 8 ((lane/8)%2) on (B of keys 16np.. and
 * 16np+8.. in one x4) */
template <int P>
__device__ __forceinline__ void fm_scores(float s[MK / 8][4], const unsigned qa[P / 16][4],
										  const bf_t *sk, int lane)
{
	constexpr int PS = P + 8;
	for (int n = 0; n < MK / 8; n++)
		for (int i = 0; i < 4; i++)
			s[n][i] = 0.f;
	const bf_t *kp = sk + ((lane >> 4) * 8 + (lane & 7)) * PS + ((lane >> 3) & 1) * 8;
	for (int kc = 0; kc < P / 16; kc++)
		for (int np = 0; np < MK / 16; np++) {
			unsigned bk[4];
			mma_ldsm<false>(bk, kp + np * 16 * PS + kc * 16);
			mma_bf16(s[2 * np], qa[kc], bk);
			mma_bf16(s[2 * np + 1], qa[kc], bk + 2);
		}
}

/* the online softmax of a warp's scores s (element i of s[n]: row
 * t0 + 8 (i/2), key k0 + 8n + 2 (lane%4) + i%2), masked and scaled,
 * turned into probabilities in place; m and l a row's running max and
 * sum (over the row's 4 lanes), acc (NO C fragments) rescaled */
template <int NO>
__device__ __forceinline__ void fm_softmax(float s[MK / 8][4], float m[2], float l[2],
										   float acc[NO][4], const int *seg, int b, int T,
										   int t0, int k0, float scale, int lane)
{
	float mx[2] = {-INFINITY, -INFINITY}, al[2], ps[2] = {0.f, 0.f};
	for (int n = 0; n < MK / 8; n++)
		for (int i = 0; i < 4; i++) {
			int tk = k0 + 8 * n + 2 * (lane & 3) + (i & 1);
			float x = fl_sees(seg, b, T, t0 + 8 * (i >> 1), tk) ? scale * s[n][i] : -INFINITY;
			s[n][i] = x;
			mx[i >> 1] = fmaxf(mx[i >> 1], x);
		}
	for (int r = 0; r < 2; r++) {
		mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
		mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
		float mnew = fmaxf(m[r], mx[r]);
		al[r] = mnew == -INFINITY ? 1.f : expf(m[r] - mnew);
		m[r] = mnew;
	}
	for (int n = 0; n < MK / 8; n++)
		for (int i = 0; i < 4; i++) {
			float p = s[n][i] == -INFINITY ? 0.f : expf(s[n][i] - m[i >> 1]);
			s[n][i] = p;
			ps[i >> 1] += p;
		}
	for (int r = 0; r < 2; r++) {
		ps[r] += __shfl_xor_sync(0xffffffffu, ps[r], 1);
		ps[r] += __shfl_xor_sync(0xffffffffu, ps[r], 2);
		l[r] = l[r] * al[r] + ps[r];
	}
	for (int n = 0; n < NO; n++)
		for (int i = 0; i < 4; i++)
			acc[n][i] *= al[i >> 1];
}

/* acc += P V: P from the probabilities' C fragments (keys 16kc.. are
 * s[2kc] and s[2kc+1]: the A fragment's four registers, rounded to
 * bf16), V^T's B fragments by ldmatrix.trans from vp (this lane's row
 * of sv [MK][PS]: key 8 ((lane/8)%2) + lane%8, dims 8 (lane/16) on) */
template <int P>
__device__ __forceinline__ void fm_pv(float acc[P / 8][4], const float p[MK / 8][4],
									  const bf_t *vp)
{
	constexpr int PS = P + 8;
	for (int kc = 0; kc < MK / 16; kc++) {
		const float *lo = p[2 * kc], *hi = p[2 * kc + 1];
		unsigned a[4] = {mma_pack(lo[0], lo[1]), mma_pack(lo[2], lo[3]), mma_pack(hi[0], hi[1]),
						 mma_pack(hi[2], hi[3])};
		for (int np = 0; np < P / 16; np++) {
			unsigned bv[4];
			mma_ldsm<true>(bv, vp + kc * 16 * PS + np * 16);
			mma_bf16(acc[2 * np], a, bv);
			mma_bf16(acc[2 * np + 1], a, bv + 2);
		}
	}
}

/* one block: query tile qt (R rows) of head h of batch row b; warp w
 * owns rows 16w..16w+15, lane the rows t0 and t0 + 8 and columns
 * 8n + 2 (lane%4) + {0,1} of their output */
template <int HD>
__global__ void __launch_bounds__(32 * MW)
	k_flash_fwd_mma(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o, float *lse,
					const int *seg, int T, int H, int KV, float scale)
{
	typedef fm_shape<HD> F;
	constexpr int P = F::P, PS = F::PS, R = F::R;
	GK_DYN_SHARED_AL(unsigned char, sh);
	bf_t *sq = reinterpret_cast<bf_t *>(sh), *sk = sq + R * PS, *sv = sk + MK * PS;
	int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z; /* long tiles first */
	int g = h / (H / KV), w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int q0 = qt * R, wr = 16 * w, t0 = q0 + wr + (lane >> 2);
	/* this lane's ldmatrix row of an A fragment (and of V^T's x4): row
	 * 8 ((lane/8)%2) + lane%8, columns 8 (lane/16) on */
	int fo = (((lane >> 3) & 1) * 8 + (lane & 7)) * PS + (lane >> 4) * 8;
	fl_load<HD>(sq, q, b, T, H, h, q0, R);
	__syncthreads();
	unsigned qa[P / 16][4];
	for (int kc = 0; kc < P / 16; kc++)
		mma_ldsm<false>(qa[kc], sq + wr * PS + fo + kc * 16);
	float acc[P / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
	for (int n = 0; n < P / 8; n++)
		for (int i = 0; i < 4; i++)
			acc[n][i] = 0.f;
	int nkt = (min(q0 + R, T) + MK - 1) / MK;
	for (int kt = 0; kt < nkt; kt++) {
		int k0 = kt * MK;
		__syncthreads();        /* sk, sv free */
		fl_load<HD>(sk, k, b, T, KV, g, k0, MK);
		fl_load<HD>(sv, v, b, T, KV, g, k0, MK);
		__syncthreads();
		if (k0 > q0 + wr + 15)
			continue;           /* no row of this warp sees these keys */
		float s[MK / 8][4];
		fm_scores<P>(s, qa, sk, lane);
		fm_softmax<P / 8>(s, m, l, acc, seg, b, T, t0, k0, scale, lane);
		fm_pv<P>(acc, s, sv + fo);
	}
	for (int r = 0; r < 2; r++) {
		int t = t0 + 8 * r;
		if (t >= T)
			continue;
		float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
		size_t base = (((size_t)b * T + t) * H + h) * HD + 2 * (lane & 3);
		for (int n = 0; n < P / 8; n++) {
			st_bf(o, base + 8 * n, acc[n][2 * r] * inv);
			st_bf(o, base + 8 * n + 1, acc[n][2 * r + 1] * inv);
		}
		if (!(lane & 3))
			lse[((size_t)b * H + h) * T + t] = m[r] + logf(l[r]);
	}
}

template <int HD>
static cudaError_t flash_fwd_mma(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
								 gk_bf16 *o, float *lse, const int *seg, int B, int T, int H,
								 int KV, cudaStream_t st)
{
	typedef fm_shape<HD> F;
	dim3 grid((unsigned)((T + F::R - 1) / F::R), (unsigned)H, (unsigned)B);
	GK_LAUNCH(k_flash_fwd_mma<HD>, grid, 32 * MW, F::shm, st)(q, k, v, o, lse, seg, T, H, KV,
															   1.0f / sqrtf((float)HD));
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_flash_fwd_mma(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
										gk_bf16 *o, float *lse, const int *seg, int B, int T,
										int H, int KV, int hd, cudaStream_t st)
{
	if (B < 1 || T < 1 || KV < 1 || H % KV)
		return cudaErrorInvalidValue;
	if (hd == 64)
		return flash_fwd_mma<64>(q, k, v, o, lse, seg, B, T, H, KV, st);
	if (hd == 128)
		return flash_fwd_mma<128>(q, k, v, o, lse, seg, B, T, H, KV, st);
	return cudaErrorInvalidValue;
}

extern "C" cudaError_t gk_flash_fwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
									gk_bf16 *o, float *lse, const int *seg, int B, int T, int H,
									int KV, int hd, cudaStream_t st)
{
	if (hd == 64 || hd == 128)
		return gk_flash_fwd_mma(q, k, v, o, lse, seg, B, T, H, KV, hd, st);
	return gk_flash_fwd_wmma(q, k, v, o, lse, seg, B, T, H, KV, hd, st);
}

/* The mma forward against the wmma one on this device: B 1, T 40 (a
 * partial second key tile), H 2 on one KV head, the causal mask. Inputs
 * are multiples of 1/64 below 2 (exact in bf16), the keys of the second
 * tile 4 times larger (the online softmax must rescale); a layout the device
 * does not share with the PTX ISA's moves outputs by their whole size,
 * the two roundings by about a bf16 ulp (3.9e-3 measured through the
 * emulation): the output must agree to 2e-2 of its largest magnitude,
 * the logsumexp to 1e-3. */
extern "C" int gk_flash_mma_check(int hd, cudaStream_t st)
{
	enum { T = 40, H = 2 };
	if (hd != 64 && hd != 128)
		return -1;
	size_t nq = (size_t)T * H * hd, nk = (size_t)T * hd, nb = nq + 2 * nk;
	size_t bytes = (nb + 2 * nq) * 2 + 2 * T * H * 4;
	gk_bf16 *hin = (gk_bf16 *)malloc(nb * 2), *hout = (gk_bf16 *)malloc(2 * nq * 2);
	float hl[2 * T * H];
	unsigned char *d = NULL;
	int ok = -1;
	if (!hin || !hout || cudaMalloc((void **)&d, bytes) != cudaSuccess)
		goto out;
	for (size_t i = 0; i < nb; i++) {
		float f = (float)((int)((i * 2654435761u) >> 20 & 255) - 128) / 64.f;
		if (i >= nq && i < nq + nk && (i - nq) / hd >= 32)
			f *= 4.f;   /* the second key tile's scores larger: rows rescale */
		unsigned u;
		memcpy(&u, &f, 4);
		hin[i] = (gk_bf16)(u >> 16);
	}
	{
		gk_bf16 *q = (gk_bf16 *)d, *k = q + nq, *v = k + nk, *o1 = v + nk, *o2 = o1 + nq;
		float *l1 = (float *)(o2 + nq), *l2 = l1 + T * H;
		cudaError_t e = cudaMemcpyAsync(d, hin, nb * 2, cudaMemcpyHostToDevice, st);
		if (e == cudaSuccess)
			e = gk_flash_fwd_mma(q, k, v, o1, l1, NULL, 1, T, H, 1, hd, st);
		if (e == cudaSuccess)
			e = gk_flash_fwd_wmma(q, k, v, o2, l2, NULL, 1, T, H, 1, hd, st);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(hout, o1, 2 * nq * 2, cudaMemcpyDeviceToHost, st);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(hl, l1, sizeof hl, cudaMemcpyDeviceToHost, st);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(st);
		if (e != cudaSuccess)
			goto out;
	}
	{
		float dmax = 0.f, omax = 0.f, lmax = 0.f;
		for (size_t i = 0; i < nq; i++) {
			unsigned a = (unsigned)hout[i] << 16, c = (unsigned)hout[nq + i] << 16;
			float fa, fc;
			memcpy(&fa, &a, 4);
			memcpy(&fc, &c, 4);
			dmax = fmaxf(dmax, fabsf(fa - fc));
			omax = fmaxf(omax, fabsf(fc));
			if (fa != fa)
				dmax = INFINITY;
		}
		for (int i = 0; i < T * H; i++)
			lmax = fmaxf(lmax, hl[i] == hl[i] ? fabsf(hl[i] - hl[T * H + i]) : INFINITY);
		ok = dmax <= 2e-2f * omax && lmax <= 1e-3f;
	}
out:
	cudaFree(d);
	free(hin);
	free(hout);
	return ok;
}
