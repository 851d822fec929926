/* dev_flash.cu: fused causal attention (flash attention, forward and
 * backward) on token-major bf16 q, k, v with GQA and optional segments,
 * on tensor cores (wmma m16n16k16: bf16 operands, fp32 accumulation).
 * Each warp owns 16 rows of its block's tile; the scores and the
 * probabilities of a warp pass through its own shared memory, where an
 * online softmax in fp32 keeps the logsumexp for backward (dK and dV at
 * head dim 128: two warps a 16-row tile, each with half of its columns
 * and of its scores, shared by the two). Backward
 * recomputes P: dK and dV in one pass over the query tiles (every query
 * head of the group in order), dQ in its own pass over the key tiles.
 * No atomics: every output element has one writer and a fixed order, so
 * results are the same bits run to run. Written by hand on the wmma API
 * rather than on CUTLASS or cuDNN's fused attention: the kernels must run
 * in the CPU emulation (tests/gpu/gk_emu_wmma.h) to be tested here. The
 * forward here is gk_flash_fwd_wmma: gk_flash_fwd runs dev_flash_mma.cu's
 * (mma.sync) at head dims 64 and 128. */
#include "dev_flash.cuh"
#ifndef GK_EMULATE
#include <mma.h>
#endif
using namespace nvcuda;

#define FB 32           /* dsum: rows a block */
#define FT (FB * 8)     /* dsum: threads, 8 a row */
#define FK 32           /* the inner tile: keys (forward, dQ) or queries (dK, dV) */
/* row strides in shared memory, padded off the 128-byte bank period (wmma
 * reads 8 rows at once: unpadded, they share 4 banks): bf16 tiles P + 8,
 * fp32 scores SL, bf16 probabilities PL (legal ldm: 16-byte multiples) */
#define SL (FK + 4)
#define PL (FK + 8)

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf_t, wmma::row_major> fa_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf_t, wmma::row_major> fb_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf_t, wmma::col_major> fb_col;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> facc;

/* the head dim padded (fl_pad, dev_flash.cuh); 16-row tiles a block forward (NF) and backward (NB), as many as
 * 48 KiB of shared memory hold (no opt-in needed): a warp each, but dK/dV
 * gives each of its NB key tiles NS warps, each owning P / NS of the
 * columns of its dK and dV accumulators (NS 2 at head dim 128: the 16
 * accumulator fragments of both did not fit one warp's registers) and
 * FK / NS of the query columns of its scores */
template <int HD> struct fl_shape : fl_pad<HD> {
	using fl_pad<HD>::P;
	using fl_pad<HD>::PS;
	static constexpr int NF = P > 64 ? 2 : 4;
	static constexpr int NB = P > 32 ? 2 : 4;
	static constexpr int NS = P > 64 ? 2 : 1;
	static_assert(FK % (16 * NS) == 0 && P % (16 * NS) == 0,
				  "a dK/dV warp's columns are whole fragments");
	/* forward: q [16NF][PS], k and v [FK][PS] (bf16); s [16NF][SL] (fp32);
	 * p [16NF][PL] (bf16); row numbers [16][16] and a factor a row (fp32) */
	static constexpr size_t fwd_shm = (size_t)16 * NF * PS * 2 + 2 * FK * PS * 2 +
									  16 * NF * (SL * 4 + PL * 2) + 256 * 4 + 16 * NF * 4;
	/* dK, dV: k and v [16NB][PS], q and dO [FK][PS]; per key tile (its NS
	 * warps) two [16][SL] fp32 and two [16][PL] bf16 */
	static constexpr size_t kv_shm = (size_t)2 * 16 * NB * PS * 2 + 2 * FK * PS * 2 +
									 (size_t)NB * 16 * (2 * SL * 4 + 2 * PL * 2);
	/* dQ: q and dO [16NB][PS], k and v [FK][PS]; per warp two [16][SL]
	 * fp32 and one [16][PL] bf16 */
	static constexpr size_t q_shm = (size_t)2 * 16 * NB * PS * 2 + 2 * FK * PS * 2 +
									(size_t)NB * 16 * (2 * SL * 4 + PL * 2);
	static_assert(fwd_shm <= 48 * 1024 && kv_shm <= 48 * 1024 && q_shm <= 48 * 1024,
				  "flash tiles beyond 48 KiB of shared memory");
};

/* sum over the 8 threads of a row (lanes differing in bits 0-2) */
__device__ __forceinline__ float fl_sum8(float v)
{
	for (int o = 4; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* out [16][N] fp32 (ld SL) = a [16][P] times the transpose of b [N][P]
 * (both ld P + 8: a warp's scores, its 16 rows against N rows of the
 * other side); each fragment of a loaded once */
template <int P, int N = FK>
__device__ __forceinline__ void fl_scores(float *out, const bf_t *a, const bf_t *b)
{
	facc c[N / 16];
	for (int n = 0; n < N / 16; n++)
		wmma::fill_fragment(c[n], 0.f);
	for (int kc = 0; kc < P / 16; kc++) {
		fa_row fa;
		wmma::load_matrix_sync(fa, a + kc * 16, P + 8);
		for (int n = 0; n < N / 16; n++) {
			fb_col fb;
			wmma::load_matrix_sync(fb, b + n * 16 * (P + 8) + kc * 16, P + 8);
			wmma::mma_sync(c[n], fa, fb, c[n]);
		}
	}
	for (int n = 0; n < N / 16; n++)
		wmma::store_matrix_sync(out + n * 16, c[n], SL, wmma::mem_row_major);
}

/* acc[n] += a [16][FK] (bf16, ld PL) times b [FK][N] (ld P + 8), n over
 * N/16; a loaded once */
template <int P, int N = P>
__device__ __forceinline__ void fl_accum(facc *acc, const bf_t *a, const bf_t *b)
{
	fa_row fa[FK / 16];
	for (int kc = 0; kc < FK / 16; kc++)
		wmma::load_matrix_sync(fa[kc], a + kc * 16, PL);
	for (int n = 0; n < N / 16; n++)
		for (int kc = 0; kc < FK / 16; kc++) {
			fb_row fb;
			wmma::load_matrix_sync(fb, b + (size_t)kc * 16 * (P + 8) + n * 16, P + 8);
			wmma::mma_sync(acc[n], fa[kc], fb, acc[n]);
		}
}

/* acc[n] *= f[row] for each element, its row from rowof (an accumulator
 * loaded from a [16][16] matrix of row numbers: wmma's element layout is
 * opaque, but the same in every accumulator of one type) */
template <int P>
__device__ __forceinline__ void fl_rowscale(facc *acc, const facc &rowof, const float *f)
{
	for (int n = 0; n < P / 16; n++)
		for (int i = 0; i < facc::num_elements; i++)
			acc[n].x[i] *= f[(int)rowof.x[i]];
}

__device__ __forceinline__ void fl_put(float *d, size_t i, float v) { d[i] = v; }
__device__ __forceinline__ void fl_put(gk_bf16 *d, size_t i, float v) { st_bf(d, i, v); }

/* write a warp's [16][N] accumulators (rows t0.., columns c0.., scaled
 * by sc) to the token-major [B*T][nh][HD] tensor dst (fp32 or bf16),
 * through stage (16 x 16 fp32) */
template <int HD, int N, class O>
__device__ __forceinline__ void fl_store(O *dst, const facc *acc, float *stage, float sc, int b,
										 int T, int nh, int hh, int t0, int c0)
{
	int lane = threadIdx.x & 31;
	for (int n = 0; n < N / 16; n++) {
		wmma::store_matrix_sync(stage, acc[n], 16, wmma::mem_row_major);
		__syncwarp();
		for (int e = lane; e < 256; e += 32) {
			int r = e / 16, i = c0 + n * 16 + e % 16, t = t0 + r;
			if (t < T && i < HD)
				fl_put(dst, (((size_t)b * T + t) * nh + hh) * HD + i, stage[e] * sc);
		}
		__syncwarp();
	}
}

/* one block: query tile qt (16 NF rows) of head h of batch row b; warp w
 * owns rows 16w..16w+15 and their output (in registers), lane l row l/2
 * and half l%2 of the columns of the softmax */
template <int HD>
__global__ void k_flash_fwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o,
							float *lse, const int *seg, int T, int H, int KV, float scale)
{
	constexpr int P = fl_shape<HD>::P, PS = fl_shape<HD>::PS, R = 16 * fl_shape<HD>::NF;
	GK_DYN_SHARED_AL(unsigned char, sh);
	bf_t *sq = reinterpret_cast<bf_t *>(sh);             /* [R][PS] */
	bf_t *sk = sq + R * PS, *sv = sk + FK * PS;           /* [FK][PS] */
	float *ss = reinterpret_cast<float *>(sv + FK * PS);  /* [R][SL] scores, then staging */
	bf_t *sp = reinterpret_cast<bf_t *>(ss + R * SL);     /* [R][PL] probabilities */
	float *sidx = reinterpret_cast<float *>(sp + R * PL); /* [16][16] row numbers */
	float *srow = sidx + 256;                           /* [R] a factor a row */
	int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z; /* long tiles first */
	int g = h / (H / KV), w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int q0 = qt * R, wr = 16 * w, rr = wr + (lane >> 1), half = lane & 1, tq = q0 + rr;
	float mrow = -INFINITY, lrow = 0.f;
	facc acc[P / 16], rowof;
	for (int n = 0; n < P / 16; n++)
		wmma::fill_fragment(acc[n], 0.f);
	fl_load<HD>(sq, q, b, T, H, h, q0, R);
	for (int e = threadIdx.x; e < 256; e += blockDim.x)
		sidx[e] = (float)(e / 16);
	__syncthreads();
	wmma::load_matrix_sync(rowof, sidx, 16, wmma::mem_row_major);
	int nkt = (min(q0 + R, T) + FK - 1) / FK;
	for (int kt = 0; kt < nkt; kt++) {
		int k0 = kt * FK;
		__syncthreads();        /* sk, sv, sp, srow free */
		fl_load<HD>(sk, k, b, T, KV, g, k0, FK);
		fl_load<HD>(sv, v, b, T, KV, g, k0, FK);
		__syncthreads();
		if (k0 > q0 + wr + 15)
			continue;           /* no row of this warp sees these keys */
		fl_scores<P>(ss + wr * SL, sq + wr * PS, sk);
		__syncwarp();
		float s[FK / 2], mx = -INFINITY;
		for (int j = 0; j < FK / 2; j++) {
			int c = half * (FK / 2) + j;
			s[j] = fl_sees(seg, b, T, tq, k0 + c) ? scale * ss[rr * SL + c] : -INFINITY;
			mx = fmaxf(mx, s[j]);
		}
		float mnew = fmaxf(mrow, fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1)));
		float alpha = mnew == -INFINITY ? 1.f : expf(mrow - mnew), ps = 0.f;
		for (int j = 0; j < FK / 2; j++) {
			float p = s[j] == -INFINITY ? 0.f : expf(s[j] - mnew);
			sp[rr * PL + half * (FK / 2) + j] = __float2bfloat16_rn(p);
			ps += p;
		}
		lrow = lrow * alpha + (ps + __shfl_xor_sync(0xffffffffu, ps, 1));
		mrow = mnew;
		if (!half)
			srow[rr] = alpha;
		__syncwarp();
		fl_rowscale<P>(acc, rowof, srow + wr);
		fl_accum<P>(acc, sp + wr * PL, sv);
	}
	__syncwarp();               /* the last tile's srow is read */
	if (!half)
		srow[rr] = lrow > 0.f ? 1.f / lrow : 0.f;
	__syncwarp();
	fl_rowscale<P>(acc, rowof, srow + wr);
	fl_store<HD, P>(o, acc, ss + wr * SL, 1.f, b, T, H, h, q0 + wr, 0);
	if (!half && tq < T)
		lse[((size_t)b * H + h) * T + tq] = mrow + logf(lrow);
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

/* one block: key tile (16 NB keys) of KV head g of batch row b; key
 * tile j (16 keys) has warps j NS .. j NS + NS-1, warp c of them columns
 * c P/NS.. of the tile's dK and dV (in registers) and query columns
 * c FK/NS.. of its S^T, dP^T, P^T and dS^T. Query heads of the group, then
 * query tiles, in order: a fixed order. */
template <int HD>
__device__ __forceinline__ void fl_bwd_kv(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
										  const gk_bf16 *dO, const float *lse, const float *D,
										  const int *seg, gk_bf16 *dk, gk_bf16 *dv, int T, int H,
										  int KV, float scale)
{
	typedef fl_shape<HD> F;
	constexpr int P = F::P, PS = F::PS, R = 16 * F::NB, NS = F::NS;
	constexpr int PW = P / NS, QW = FK / NS; /* a warp's dK/dV and score columns */
	GK_DYN_SHARED_AL(unsigned char, sh);
	bf_t *sk = reinterpret_cast<bf_t *>(sh), *sv = sk + R * PS;  /* [R][PS] */
	bf_t *sq = sv + R * PS, *sdo = sq + FK * PS;                   /* [FK][PS] */
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31, j = w / NS, c = w % NS;
	float *f32 = reinterpret_cast<float *>(sdo + FK * PS);         /* per key tile: */
	float *sst = f32 + j * 2 * 16 * SL, *sdpt = sst + 16 * SL;      /* S^T, dP^T [16][SL] */
	bf_t *b16 = reinterpret_cast<bf_t *>(f32 + F::NB * 2 * 16 * SL);
	bf_t *spt = b16 + j * 2 * 16 * PL, *sdst = spt + 16 * PL;       /* P^T, dS^T [16][PL] */
	int kt = blockIdx.x, g = blockIdx.y, b = blockIdx.z, G = H / KV; /* key tile 0 has most work */
	int k0 = kt * R, wk = 16 * j, kr = lane >> 1, half = lane & 1;
	facc ak[PW / 16], av[PW / 16];
	for (int n = 0; n < PW / 16; n++) {
		wmma::fill_fragment(ak[n], 0.f);
		wmma::fill_fragment(av[n], 0.f);
	}
	fl_load<HD>(sk, k, b, T, KV, g, k0, R);
	fl_load<HD>(sv, v, b, T, KV, g, k0, R);
	int nqt = (T + FK - 1) / FK;
	for (int hh = g * G; hh < (g + 1) * G; hh++)
		for (int qt = k0 / FK; qt < nqt; qt++) {
			int q0 = qt * FK;
			__syncthreads(); /* sq, sdo, spt, sdst free */
			fl_load<HD>(sq, q, b, T, H, hh, q0, FK);
			fl_load<HD>(sdo, dO, b, T, H, hh, q0, FK);
			__syncthreads();
			/* does a query of the tile see the key tile's keys? (the same
			 * for its NS warps) */
			bool live = k0 + wk <= q0 + FK - 1;
			if (NS == 1 && !live)
				continue;
			if (live) {
				fl_scores<P, QW>(sst + c * QW, sk + wk * PS, sq + c * QW * PS);
				fl_scores<P, QW>(sdpt + c * QW, sv + wk * PS, sdo + c * QW * PS);
				__syncwarp();
				/* lse and D of the lane's queries: cached reads (no room in
				 * shared memory at head dim 128) */
				const float *lq = lse + ((size_t)b * H + hh) * T, *dq0 = D + ((size_t)b * H + hh) * T;
				for (int i = 0; i < QW / 2; i++) {
					int cq = c * QW + half * (QW / 2) + i, e = kr * SL + cq, e2 = kr * PL + cq;
					bool see = fl_sees(seg, b, T, q0 + cq, k0 + wk + kr);
					float p = see ? expf(scale * sst[e] - lq[q0 + cq]) : 0.f;
					spt[e2] = __float2bfloat16_rn(p);
					sdst[e2] = __float2bfloat16_rn(see ? p * (sdpt[e] - dq0[q0 + cq]) : 0.f);
				}
			}
			/* P^T and dS^T whole: the key tile's NS warps wrote them */
			if (NS > 1)
				__syncthreads();
			else
				__syncwarp();
			if (live) {
				fl_accum<P, PW>(av, spt, sdo + c * PW);
				fl_accum<P, PW>(ak, sdst, sq + c * PW);
			}
		}
	/* staging: warp c of a key tile stages through its S^T (c 0) or dP^T
	 * (c 1), each warp of the tile done with both at the loop's last
	 * barrier */
	float *stage = sst + c * 16 * SL;
	fl_store<HD, PW>(dk, ak, stage, scale, b, T, KV, g, k0 + wk, c * PW);
	fl_store<HD, PW>(dv, av, stage, 1.f, b, T, KV, g, k0 + wk, c * PW);
}

#define FL_KV_ARGS                                                                              \
	const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, const gk_bf16 *dO, const float *lse, \
		const float *D, const int *seg, gk_bf16 *dk, gk_bf16 *dv, int T, int H, int KV, float scale
/* dK and dV, one warp a key tile (NS 1) */
template <int HD> __global__ void k_flash_bwd_kv(FL_KV_ARGS)
{
	fl_bwd_kv<HD>(q, k, v, dO, lse, D, seg, dk, dv, T, H, KV, scale);
}
/* NS warps a key tile (head dim 128). On sm_90 bound to the registers
 * that let as many blocks share an SM as its shared memory holds, 4 of
 * 48 KiB (of 228 KiB): 64K / (4 x 128 threads) = 128 (unbounded, ptxas
 * of CUDA 13.0 takes 132: 3 blocks). Unbounded elsewhere: sm_80 holds 3
 * (164 KiB), and there ptxas takes 128 unbounded but 160 with a bound of
 * 128 threads alone. tests/gpu/ptxas_spill.sh checks that none spills. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define FL_KV_SPLIT_BOUNDS(threads) __launch_bounds__(threads, 4)
#else
#define FL_KV_SPLIT_BOUNDS(threads)
#endif
template <int HD>
__global__ void FL_KV_SPLIT_BOUNDS(32 * fl_shape<HD>::NB * fl_shape<HD>::NS)
	k_flash_bwd_kv_split(FL_KV_ARGS)
{
	fl_bwd_kv<HD>(q, k, v, dO, lse, D, seg, dk, dv, T, H, KV, scale);
}
#undef FL_KV_ARGS
#undef FL_KV_SPLIT_BOUNDS

/* one block: query tile (16 NB queries) of head h of batch row b; warp w
 * owns queries 16w..16w+15 and their dQ (in registers); key tiles in
 * order */
template <int HD>
__global__ void k_flash_bwd_q(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
							  const gk_bf16 *dO, const float *lse, const float *D,
							  const int *seg, gk_bf16 *dq, int T, int H, int KV, float scale)
{
	constexpr int P = fl_shape<HD>::P, PS = fl_shape<HD>::PS, R = 16 * fl_shape<HD>::NB;
	GK_DYN_SHARED_AL(unsigned char, sh);
	bf_t *sq = reinterpret_cast<bf_t *>(sh), *sdo = sq + R * PS; /* [R][PS] */
	bf_t *sk = sdo + R * PS, *sv = sk + FK * PS;                  /* [FK][PS] */
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31, NB = fl_shape<HD>::NB;
	float *f32 = reinterpret_cast<float *>(sv + FK * PS);           /* per warp: */
	float *ss = f32 + w * 2 * 16 * SL, *sdp = ss + 16 * SL;         /* S, dP [16][SL] */
	bf_t *sds = reinterpret_cast<bf_t *>(f32 + NB * 2 * 16 * SL) + w * 16 * PL; /* dS [16][PL] */
	int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z; /* long tiles first */
	int g = h / (H / KV), q0 = qt * R, wq = 16 * w, rr = lane >> 1, half = lane & 1;
	int t = q0 + wq + rr;
	size_t ri = ((size_t)b * H + h) * T + t;
	float lr = t < T ? lse[ri] : 0.f, Dr = t < T ? D[ri] : 0.f;
	facc acc[P / 16];
	for (int n = 0; n < P / 16; n++)
		wmma::fill_fragment(acc[n], 0.f);
	fl_load<HD>(sq, q, b, T, H, h, q0, R);
	fl_load<HD>(sdo, dO, b, T, H, h, q0, R);
	int nkt = (min(q0 + R, T) + FK - 1) / FK;
	for (int kt = 0; kt < nkt; kt++) {
		int k0 = kt * FK;
		__syncthreads();        /* sk, sv free */
		fl_load<HD>(sk, k, b, T, KV, g, k0, FK);
		fl_load<HD>(sv, v, b, T, KV, g, k0, FK);
		__syncthreads();
		if (k0 > q0 + wq + 15)
			continue;
		fl_scores<P>(ss, sq + wq * PS, sk);
		fl_scores<P>(sdp, sdo + wq * PS, sv);
		__syncwarp();
		for (int j = 0; j < FK / 2; j++) {
			int c = half * (FK / 2) + j, e = rr * SL + c;
			bool see = fl_sees(seg, b, T, t, k0 + c);
			float p = see ? expf(scale * ss[e] - lr) : 0.f;
			sds[rr * PL + c] = __float2bfloat16_rn(see ? p * (sdp[e] - Dr) : 0.f);
		}
		__syncwarp();
		fl_accum<P>(acc, sds, sk);
	}
	fl_store<HD, P>(dq, acc, ss, scale, b, T, H, h, q0 + wq, 0);
}

/* The forward's per-row rescale (fl_rowscale) takes each accumulator
 * element's row from an accumulator loaded from a matrix of row numbers:
 * right only if a product's result and a loaded accumulator share wmma's
 * (opaque) element layout, as on sm_90 with CUDA 13 (read off its
 * machine code). One warp checks it on the device at hand: a product
 * whose result is each element's row number (A[m][0] = m, B[0][n] = 1)
 * against the loaded matrix; lane l writes its mismatches to bad[l]. */
__global__ void k_flash_layout(int *bad)
{
	GK_DYN_SHARED_AL(unsigned char, sh);
	float *sidx = reinterpret_cast<float *>(sh);        /* [16][16] */
	bf_t *sa = reinterpret_cast<bf_t *>(sidx + 256), *sb = sa + 256;
	int l = threadIdx.x, mism = 0;
	for (int e = l; e < 256; e += 32) {
		sidx[e] = (float)(e / 16);
		sa[e] = __float2bfloat16_rn(e % 16 == 0 ? (float)(e / 16) : 0.f);
		sb[e] = __float2bfloat16_rn(e / 16 == 0 ? 1.f : 0.f);
	}
	__syncwarp();
	facc rowof, c;
	fa_row fa;
	fb_row fb;
	wmma::load_matrix_sync(rowof, sidx, 16, wmma::mem_row_major);
	wmma::load_matrix_sync(fa, sa, 16);
	wmma::load_matrix_sync(fb, sb, 16);
	wmma::fill_fragment(c, 0.f);
	wmma::mma_sync(c, fa, fb, c);
	for (int i = 0; i < facc::num_elements; i++)
		mism += c.x[i] != rowof.x[i];
	bad[l] = mism;
}

extern "C" int gk_flash_layout_ok(cudaStream_t st)
{
	int *d = NULL, h[32];
	if (cudaMalloc((void **)&d, sizeof h) != cudaSuccess)
		return -1;
	GK_LAUNCH(k_flash_layout, 1, 32, 1024 + 2 * 512, st)(d);
	cudaError_t e = GK_LAST_ERROR();
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, st);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(st);
	cudaFree(d);
	if (e != cudaSuccess)
		return -1;
	for (int i = 0; i < 32; i++)
		if (h[i])
			return 0;
	return 1;
}

template <int HD>
static cudaError_t flash_fwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o,
							 float *lse, const int *seg, int B, int T, int H, int KV,
							 cudaStream_t st)
{
	typedef fl_shape<HD> F;
	dim3 grid((unsigned)((T + 16 * F::NF - 1) / (16 * F::NF)), (unsigned)H, (unsigned)B);
	GK_LAUNCH(k_flash_fwd<HD>, grid, 32 * F::NF, F::fwd_shm, st)(q, k, v, o, lse, seg, T, H, KV,
																  1.0f / sqrtf((float)HD));
	return GK_LAST_ERROR();
}

template <int HD>
static cudaError_t flash_bwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
							 const gk_bf16 *o, const gk_bf16 *dO, const float *lse, float *D,
							 const int *seg, gk_bf16 *dq, gk_bf16 *dk, gk_bf16 *dv, int B, int T,
							 int H, int KV, cudaStream_t st)
{
	typedef fl_shape<HD> F;
	unsigned nd = (unsigned)((T + FB - 1) / FB), nt = (unsigned)((T + 16 * F::NB - 1) / (16 * F::NB));
	float sc = 1.0f / sqrtf((float)HD);
	GK_LAUNCH(k_flash_dsum<HD>, dim3(nd, (unsigned)H, (unsigned)B), FT, 0, st)(o, dO, D, T, H);
	dim3 gkv(nt, (unsigned)KV, (unsigned)B);
	if constexpr (F::NS > 1)
		GK_LAUNCH(k_flash_bwd_kv_split<HD>, gkv, 32 * F::NB * F::NS, F::kv_shm, st)(
			q, k, v, dO, lse, D, seg, dk, dv, T, H, KV, sc);
	else
		GK_LAUNCH(k_flash_bwd_kv<HD>, gkv, 32 * F::NB, F::kv_shm, st)(
			q, k, v, dO, lse, D, seg, dk, dv, T, H, KV, sc);
	GK_LAUNCH(k_flash_bwd_q<HD>, dim3(nt, (unsigned)H, (unsigned)B), 32 * F::NB, F::q_shm, st)(
		q, k, v, dO, lse, D, seg, dq, T, H, KV, sc);
	return GK_LAST_ERROR();
}

extern "C" cudaError_t gk_flash_fwd_wmma(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v,
										 gk_bf16 *o, float *lse, const int *seg, int B, int T,
										 int H, int KV, int hd, cudaStream_t st)
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
									float *D, const int *seg, gk_bf16 *dq, gk_bf16 *dk, gk_bf16 *dv,
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
