/* gk_emu_wmma.h: nvcuda::wmma for the emulation (gk_emu.h): m16n16k16,
 * bf16 operands and fp32 accumulators, the tensor-core calls the kernels
 * use. A fragment holds its lane's 8 of the tile's 256 elements (element
 * e of lane L is the tile's element 32e + L in row-major order: a layout
 * of the emulation's own, as the API leaves it opaque, so a kernel that
 * assumes the hardware's shows here). Load, store and mma are
 * warp-collective and checked as the CUDA guide states their rules:
 * every lane of the warp reaches them (the warp barrier), with the same
 * pointer and ldm; the pointer 32-byte aligned, ldm a multiple of 16
 * bytes. A store writes only after the whole warp has arrived, so a lane
 * that reads another lane's part without __syncwarp reads the poison. The
 * products are fp32 fused multiply-adds in k order. */
#ifndef LLMT_GK_EMU_WMMA_H
#define LLMT_GK_EMU_WMMA_H
#include <cuda_bf16.h>
#include <type_traits>

namespace gk_emu {

/* every lane of the warp at op with p and ldm (elements of esz bytes) */
inline void wmma_enter(const char *op, const void *p, unsigned ldm, unsigned esz)
{
	char why[200];
	if ((uintptr_t)p % 32 || (ldm * esz) % 16) {
		snprintf(why, sizeof why, "%s: pointer %p not 32-byte aligned or ldm %u not a multiple of %u",
				 op, p, ldm, 16 / esz);
		fail(why);
	}
	S.wm[S.cur] = wmma_slot{p, ldm};
	warp_sync(op);
	const wmma_slot &l0 = S.wm[S.cur / 32 * 32];
	if (l0.p != p || l0.ldm != ldm) {
		snprintf(why, sizeof why, "%s: lanes of one warp gave different pointers or ldm", op);
		fail(why);
	}
	warp_sync(op);     /* no lane reuses its slot before all have checked */
}

/* the tile offset of a lane's element e at leading dimension ldm */
inline size_t wmma_at(int e, unsigned ldm, bool col)
{
	unsigned f = 32u * (unsigned)e + S.cur % 32, r = f / 16, c = f % 16;
	return col ? (size_t)c * ldm + r : (size_t)r * ldm + c;
}

} // namespace gk_emu

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
	static_assert(M == 16 && N == 16 && K == 16, "the emulation knows m16n16k16 only");
	enum { num_elements = 8 };
	T x[8];
};

template <class Use, class T, class L>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, T v)
{
	for (auto &e : f.x)
		e = v;
}

/* matrix_a or matrix_b from bf16 memory in the fragment's layout */
template <class Use, class L>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, L> &f,
							 const __nv_bfloat16 *p, unsigned ldm)
{
	gk_emu::wmma_enter("wmma::load_matrix_sync", p, ldm, 2);
	for (int e = 0; e < 8; e++)
		f.x[e] = p[gk_emu::wmma_at(e, ldm, std::is_same<L, col_major>::value)];
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
							 unsigned ldm, layout_t l)
{
	gk_emu::wmma_enter("wmma::load_matrix_sync", p, ldm, 4);
	for (int e = 0; e < 8; e++)
		f.x[e] = p[gk_emu::wmma_at(e, ldm, l == mem_col_major)];
}

inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
							  unsigned ldm, layout_t l)
{
	gk_emu::wmma_enter("wmma::store_matrix_sync", p, ldm, 4);
	for (int e = 0; e < 8; e++)
		p[gk_emu::wmma_at(e, ldm, l == mem_col_major)] = f.x[e];
}

/* d = a b + c: the warp's operands meet in S.wma and S.wmb */
template <class LA, class LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
					 const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
					 const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
					 const fragment<accumulator, 16, 16, 16, float> &c)
{
	using gk_emu::S;
	unsigned lane = S.cur % 32;
	float *A = &S.wma[S.cur / 32 * 256], *B = &S.wmb[S.cur / 32 * 256];
	for (int e = 0; e < 8; e++) {
		A[32 * e + lane] = __bfloat162float(a.x[e]);
		B[32 * e + lane] = __bfloat162float(b.x[e]);
	}
	gk_emu::warp_sync("wmma::mma_sync");
	float out[8];
	for (int e = 0; e < 8; e++) {
		unsigned f = 32u * (unsigned)e + lane, m = f / 16, n = f % 16;
		float s = c.x[e];
		for (int k = 0; k < 16; k++)
			s = fmaf(A[m * 16 + k], B[k * 16 + n], s);
		out[e] = s;
	}
	gk_emu::warp_sync("wmma::mma_sync");     /* all have read A and B */
	for (int e = 0; e < 8; e++)
		d.x[e] = out[e];
}

} // namespace wmma
} // namespace nvcuda

#endif
