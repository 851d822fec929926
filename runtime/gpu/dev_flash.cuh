/* dev_flash.cuh: what both fused attention forwards share (dev_flash.cu
 * on wmma, dev_flash_mma.cu on mma.sync): the head dim's padding, the
 * causal and segment mask, and the tile load into shared memory. */
#ifndef LLMT_GK_DEV_FLASH_CUH
#define LLMT_GK_DEV_FLASH_CUH
#include "dev_common.cuh"

/* head dim HD padded to P (a multiple of 16, zeros past HD), rows PS
 * apart in shared memory (P + 8: off the 128-byte bank period) */
template <int HD> struct fl_pad {
	static constexpr int P = HD < 16 ? 16 : HD, PS = P + 8;
};

/* may query position tq see key position tk (same batch row b)? */
__device__ __forceinline__ bool fl_sees(const int *seg, int b, int T, int tq, int tk)
{
	return tk <= tq && tq < T && (!seg || seg[(size_t)b * T + tk] == seg[(size_t)b * T + tq]);
}

/* rows r0 .. r0+n-1 of a token-major [B*T][nh][HD] bf16 tensor, head hh,
 * into s[n][PS] (zeros past T and past HD up to P), 16 bytes a load (HD
 * is a multiple of 8, the tensor 16-byte aligned) */
template <int HD>
__device__ __forceinline__ void fl_load(bf_t *s, const gk_bf16 *src, int b, int T, int nh,
										int hh, int r0, int n)
{
	constexpr int PS = fl_pad<HD>::PS, V = fl_pad<HD>::P / 8;
	const bf_t *p = reinterpret_cast<const bf_t *>(src);
	GK_EMU_ALIGNED(p, 16);
	for (int e = threadIdx.x; e < n * V; e += blockDim.x) {
		int r = e / V, i = (e % V) * 8, t = r0 + r;
		uint4 u = make_uint4(0u, 0u, 0u, 0u);
		if (t < T && i < HD) {
			GK_EMU_POINT();
			u = *reinterpret_cast<const uint4 *>(p + (((size_t)b * T + t) * nh + hh) * HD + i);
		}
		*reinterpret_cast<uint4 *>(s + r * PS + i) = u;
	}
}

#endif
