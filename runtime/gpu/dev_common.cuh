/* dev_common.cuh: device helpers shared by the gk_*.cu kernels: bf16 loads and
 * stores, fixed-order block reductions (warp shuffles, then warp 0), grid
 * sizing, and the launch macros. Under GK_EMULATE (tests/gpu/gk_emu.h) the
 * same kernel source is built by the host C++ compiler and run on CPU
 * threads, so the kernels' logic is tested on machines without a GPU. */
#ifndef LLMT_GK_DEV_CUH
#define LLMT_GK_DEV_CUH
#include <cuda_bf16.h>
#ifdef GK_EMULATE
#include "gk_emu.h"
#else
#include <cuda_runtime.h>
#define GK_LAUNCH(k, grid, block, shmem, st) k<<<(grid), (block), (shmem), (st)>>>
#define GK_DYN_SHARED(T, name) extern __shared__ T name[]
/* the same, aligned for wmma's loads and stores (32 bytes at least) */
#define GK_DYN_SHARED_AL(T, name) extern __shared__ __align__(128) T name[]
#define GK_LAST_ERROR() cudaGetLastError()
#define GK_EMU_POINT() ((void)0)
#define GK_EMU_ALIGNED(p, n) ((void)0)
#endif
#include "dev_kernels.h"

typedef __nv_bfloat16 bf_t;

__device__ __forceinline__ float ld_bf(const gk_bf16 *p, size_t i)
{
	GK_EMU_POINT();     /* the emulation's shuffle order may switch threads here */
	return __bfloat162float(reinterpret_cast<const bf_t *>(p)[i]);
}
__device__ __forceinline__ void st_bf(gk_bf16 *p, size_t i, float v)
{
	GK_EMU_POINT();
	reinterpret_cast<bf_t *>(p)[i] = __float2bfloat16_rn(v);
}

/* a tensor read as fp32 from fp32 or bf16 storage; gk_io<bf>::t the
 * storage type of a kernel built for either */
__device__ __forceinline__ float gk_ld(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float gk_ld(const gk_bf16 *p, size_t i) { return ld_bf(p, i); }
template <bool BF> struct gk_io {
	typedef float t;
};
template <> struct gk_io<true> {
	typedef gk_bf16 t;
};

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the result. The order is fixed by the thread layout. */
__device__ __forceinline__ float block_sum(float v)
{
	__shared__ float red[32];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (l == 0)
		red[w] = v;
	__syncthreads();
	float s = l < nw ? red[l] : 0.f;
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	return s;
}

__device__ __forceinline__ float block_max(float v)
{
	__shared__ float red[32];
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;
	__syncthreads();
	if (l == 0)
		red[w] = v;
	__syncthreads();
	float s = l < nw ? red[l] : -INFINITY;
	for (int o = 16; o > 0; o >>= 1)
		s = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, o));
	return s;
}

static inline unsigned gk_blocks(size_t n, unsigned per)
{
	size_t b = (n + per - 1) / per;
	return (unsigned)(b > 65535u * 32u ? 65535u * 32u : (b ? b : 1));
}

/* threads for a row kernel over width w: a multiple of 32, 32..1024 */
static inline unsigned gk_row_threads(int w)
{
	unsigned t = (unsigned)((w + 31) / 32 * 32);
	return t > 1024u ? 1024u : (t < 32u ? 32u : t);
}

/* out[j] += (acc) or = (!acc) the sum over chunks c (in order) of
 * part[c][j] (dev_norm.cu) */
void gk_colsum(const float *part, float *out, int w, int chunks, int acc, cudaStream_t st);
/* out[j] += sum over r < nrows of rows[r][j], through part (GK_COLSUM_MAX
 * x w floats; fixed order) */
void gk_colsum_rows(const float *rows, int nrows, int w, float *part, float *out,
					cudaStream_t st);

#endif
