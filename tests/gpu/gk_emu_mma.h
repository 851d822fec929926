/* gk_emu_mma.h: the warp-level PTX the mma kernels use (runtime/gpu/dev_mma.cuh)
 * for the emulation (gk_emu.h): ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16
 * and mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, each register
 * holding the elements the PTX ISA assigns to its lane (not a layout of
 * the emulation's own, unlike gk_emu_wmma.h: these layouts are documented,
 * and the kernels rely on them). From the PTX ISA (docs.nvidia.com/cuda/
 * parallel-thread-execution), "Warp-level matrix load instruction:
 * ldmatrix" and "Matrix Fragments for mma.m16n8k16 with floating point
 * type", with lane = %laneid, g = lane >> 2 (groupID), t = lane % 4
 * (threadID_in_group):
 * - ldmatrix: lanes 8i..8i+7 give the row addresses of matrix i (rows of
 *   8 b16, 16 bytes, 16-byte aligned, in shared memory); register i of a
 *   lane holds row g, elements 2t and 2t+1 of matrix i (.trans: elements
 *   [2t][g] and [2t+1][g] of it as stored);
 * - A (16x16, row): a0,a1 (row g, cols 2t,2t+1), a2,a3 (row g+8), a4,a5
 *   (row g, cols 2t+8,2t+9), a6,a7 (row g+8, cols 2t+8,2t+9), two a
 *   register, the lower index in the low half;
 * - B (16x8, col): b0,b1 (rows 2t,2t+1, col g), b2,b3 (rows 2t+8,2t+9);
 * - C, D (16x8 fp32): c0,c1 (row g, cols 2t,2t+1), c2,c3 (row g+8).
 * Both are warp-collective as the ISA states (.sync.aligned): every lane
 * of the warp reaches the same instruction (the warp barrier; a lane at
 * another collective call or returned stops the program); ldmatrix's
 * addresses 16-byte aligned and in the block's shared memory. The
 * product sums in fp32 fused multiply-adds in k order. */
#ifndef LLMT_GK_EMU_MMA_H
#define LLMT_GK_EMU_MMA_H
#include <cuda_bf16.h>

namespace gk_emu {

/* tags a lane leaves in its slot's ldm: the warp's lanes at one call */
enum { MMA_LDSM = 0x6d6d0001u, MMA_LDSM_T = 0x6d6d0002u, MMA_MMA = 0x6d6d0003u };

inline float mma_lo(unsigned r)
{
	return __bfloat162float(__ushort_as_bfloat16((unsigned short)(r & 0xffffu)));
}
inline float mma_hi(unsigned r) { return mma_lo(r >> 16); }

/* every lane of the warp at the call tagged tag, p its address (or null) */
inline void mma_enter(const char *op, const void *p, unsigned tag)
{
	char why[200];
	S.wm[S.cur] = wmma_slot{p, tag};
	warp_sync(op);
	for (unsigned l = S.cur / 32 * 32; l < S.cur / 32 * 32 + 32; l++)
		if (S.wm[l].ldm != tag) {
			snprintf(why, sizeof why, "%s: lane %u of the warp is at another warp-collective call",
					 op, l % 32);
			fail(why);
		}
}

/* a row address of ldmatrix: 16-byte aligned, inside shared memory */
inline void ldsm_check(const char *op, const void *p)
{
	uintptr_t a = (uintptr_t)p, d0 = (uintptr_t)S.dyn.data();
	uintptr_t d1 = d0 + S.dyn.size() * sizeof(dyn_piece);
	uintptr_t s0 = (uintptr_t)__start_gk_emu_shared, s1 = (uintptr_t)__stop_gk_emu_shared;
	bool in = (a >= d0 && a + 16 <= d1) || (s0 && a >= s0 && a + 16 <= s1);
	if (a % 16 || !in) {
		char why[200];
		snprintf(why, sizeof why, "%s: row address %p not 16-byte aligned or not in shared memory",
				 op, p);
		fail(why);
	}
}

/* ldmatrix x4: r[i] of this lane from the rows lanes 8i.. gave */
inline void ldsm_x4(unsigned r[4], const void *p, bool trans)
{
	const char *op = trans ? "ldmatrix.x4.trans" : "ldmatrix.x4";
	ldsm_check(op, p);
	mma_enter(op, p, trans ? MMA_LDSM_T : MMA_LDSM);
	unsigned w0 = S.cur / 32 * 32, lane = S.cur % 32, g = lane >> 2, t = lane & 3;
	for (int i = 0; i < 4; i++) {
		unsigned short e[2];
		for (int j = 0; j < 2; j++) {
			/* element [row][col] of matrix i as stored */
			unsigned row = trans ? 2 * t + j : g, col = trans ? g : 2 * t + j;
			const unsigned short *rp = (const unsigned short *)S.wm[w0 + 8 * i + row].p;
			e[j] = rp[col];
		}
		r[i] = (unsigned)e[0] | (unsigned)e[1] << 16;
	}
	warp_sync(op);     /* all have read the addresses */
}

/* d = a b + c, m16n8k16: the warp's operands meet in S.wma ([16][16]) and
 * S.wmb ([16][8]) */
inline void mma_m16n8k16(float d[4], const unsigned a[4], const unsigned b[2], const float c[4])
{
	const char *op = "mma.m16n8k16";
	unsigned lane = S.cur % 32, g = lane >> 2, t = lane & 3;
	float *A = &S.wma[S.cur / 32 * 256], *B = &S.wmb[S.cur / 32 * 256];
	for (int i = 0; i < 4; i++) {
		unsigned row = g + 8 * (i & 1), col = 2 * t + 8 * (i >> 1);
		A[row * 16 + col] = mma_lo(a[i]);
		A[row * 16 + col + 1] = mma_hi(a[i]);
	}
	for (int i = 0; i < 2; i++) {
		B[(2 * t + 8 * i) * 8 + g] = mma_lo(b[i]);
		B[(2 * t + 8 * i + 1) * 8 + g] = mma_hi(b[i]);
	}
	mma_enter(op, nullptr, MMA_MMA);
	float out[4];
	for (int i = 0; i < 4; i++) {
		unsigned m = g + 8 * (i >> 1), n = 2 * t + (i & 1);
		float s = c[i];
		for (int k = 0; k < 16; k++)
			s = fmaf(A[m * 16 + k], B[k * 8 + n], s);
		out[i] = s;
	}
	warp_sync(op);     /* all have read A and B */
	for (int i = 0; i < 4; i++)
		d[i] = out[i];
}

} // namespace gk_emu

#endif
