/* dev_mma.cuh: warp-level tensor-core PTX for the mma kernels
 * (dev_flash_mma.cu): ldmatrix x4 (and .trans) from shared memory and
 * mma m16n8k16 bf16 x bf16 + fp32, with the fragment layouts of the PTX
 * ISA (written out in tests/gpu/gk_emu_mma.h, which stands in for them
 * under GK_EMULATE as gk_emu_wmma.h does for wmma). sm_80 and later. */
#ifndef LLMT_GK_DEV_MMA_CUH
#define LLMT_GK_DEV_MMA_CUH
#include "dev_common.cuh"
#ifdef GK_EMULATE
#include "gk_emu_mma.h"
#endif

/* two floats as a bf16x2 register: lo in the low half (the lower index) */
__device__ __forceinline__ unsigned mma_pack(float lo, float hi)
{
	unsigned short l = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
	unsigned short h = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
	return (unsigned)l | (unsigned)h << 16;
}

#ifndef GK_EMULATE
/* ldmatrix OP (x4 or x4.trans) into r[0..3] from the row address p */
#define MMA_LDSM(OP, r, p)                                                                   \
	asm volatile("ldmatrix.sync.aligned.m8n8." OP ".shared.b16 {%0, %1, %2, %3}, [%4];\n" \
				 : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])                    \
				 : "r"((unsigned)__cvta_generic_to_shared(p)))
#endif

/* four 8x8 b16 matrices: lane 8i + j gives the address of row j of
 * matrix i (16-byte aligned, shared memory); r[i] gets row lane/4,
 * elements 2 (lane%4) and +1 of matrix i; TRANS (x4.trans): each matrix
 * transposed, r[i] elements [2 (lane%4)][lane/4] and [2 (lane%4) + 1][lane/4]
 * of matrix i as stored */
template <bool TRANS> __device__ __forceinline__ void mma_ldsm(unsigned r[4], const bf_t *p)
{
#ifdef GK_EMULATE
	gk_emu::ldsm_x4(r, p, TRANS);
#else
	if constexpr (TRANS)
		MMA_LDSM("x4.trans", r, p);
	else
		MMA_LDSM("x4", r, p);
#endif
}

/* d += a b: a the 16x16 A fragment (4 registers), b a 16x8 B fragment (2) */
__device__ __forceinline__ void mma_bf16(float d[4], const unsigned a[4], const unsigned b[2])
{
#ifdef GK_EMULATE
	gk_emu::mma_m16n8k16(d, a, b, d);
#else
	asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		: "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

#endif
