/* tile.c: the bf16 tile product of tile.h: a register-blocked kernel of up
 * to 6 rows x 64 columns (24 fp32 accumulators, vdpbf16ps on a broadcast
 * A pair and four B vectors), specialised for each row and column count
 * at compile time; and the operand packings. */
#include "tile.h"
#ifdef LLMT_TILE
#include <immintrin.h>
#include "simd.h"

#define MR 6

static inline __attribute__((always_inline)) void
uk(const int mr, const int nv, int p0, int p1, const uint32_t *a, long am, long ap,
   const uint32_t *b, long bp, float *c, long ldc, int ncol, float alpha, int acc)
{
	__m512 s[MR][4];
#pragma GCC unroll 6
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < nv; v++)
			s[r][v] = _mm512_setzero_ps();
	for (int p = p0; p < p1; p++) {
		const uint32_t *bb = b + (long)p * bp;
		const uint32_t *ap_ = a + (long)p * ap;
		__m512bh bv[4];
#pragma GCC unroll 4
		for (int v = 0; v < nv; v++)
			bv[v] = (__m512bh)_mm512_loadu_si512(bb + 16 * v);
#pragma GCC unroll 6
		for (int r = 0; r < mr; r++) {
			__m512bh av = (__m512bh)_mm512_set1_epi32((int)ap_[r * am]);
#pragma GCC unroll 4
			for (int v = 0; v < nv; v++)
				s[r][v] = _mm512_dpbf16_ps(s[r][v], av, bv[v]);
		}
	}
	__m512 al = _mm512_set1_ps(alpha);
#pragma GCC unroll 6
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < nv; v++) {
			__mmask16 k = tailmask((size_t)(ncol - 16 * v));
			float *cp = c + r * ldc + 16 * v;
			__m512 x = _mm512_mul_ps(s[r][v], al);
			if (acc)
				x = _mm512_add_ps(x, ld_ps(k, cp));
			st_ps(cp, k, x);
		}
}

#define UK(R, V)                                                                           \
	case R * 8 + V:                                                                        \
		uk(R, V, p0, p1, a, am, ap, b, bp, c, ldc, ncol, alpha, acc);                      \
		break
#define UK4(R) UK(R, 1); UK(R, 2); UK(R, 3); UK(R, 4)

static void dispatch(int mr, int nv, int p0, int p1, const uint32_t *a, long am, long ap,
					 const uint32_t *b, long bp, float *c, long ldc, int ncol, float alpha,
					 int acc)
{
	switch (mr * 8 + nv) {
		UK4(1);
		UK4(2);
		UK4(3);
		UK4(4);
		UK4(5);
		UK4(6);
	default:
		break;
	}
}

void tile_mm(const tile_args *t)
{
	for (int n0 = 0; n0 < t->N; n0 += 64)
		for (int m0 = 0; m0 < t->M; m0 += MR) {
			int mr = t->M - m0 < MR ? t->M - m0 : MR;
			int nend = t->N;
			if (t->nhi != TILE_NOTRIM && m0 + mr + t->nhi < nend)
				nend = m0 + mr + t->nhi;
			if (nend <= n0)
				continue;
			int ncol = nend - n0 < 64 ? nend - n0 : 64;
			int p0 = 0, p1 = t->np;
			if (t->klo != TILE_NOTRIM && m0 + t->klo > 0)
				p0 = (m0 + t->klo) / 2;
			if (t->khi != TILE_NOTRIM && (m0 + mr + t->khi + 1) / 2 < p1)
				p1 = (m0 + mr + t->khi + 1) / 2;
			if (p1 < p0)
				p1 = p0;
			dispatch(mr, (ncol + 15) / 16, p0, p1, t->a + m0 * t->am, t->am, t->ap, t->b + n0,
					 t->bp, t->c + m0 * t->ldc + n0, t->ldc, ncol, t->alpha, t->acc);
		}
}

/* 16 pairs (lo, hi) from two rows of 16 fp32 lanes holding bf16 bits */
static inline __m512i pairs16(__m512i lo, __m512i hi)
{
	return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

void tile_pack_pairs(uint32_t *dst, long ldd, const bf16 *src, long ld, int R, int C)
{
	for (int p = 0; p < (R + 1) / 2; p++) {
		const bf16 *r0 = src + 2L * p * ld, *r1 = r0 + ld;
		int odd = 2 * p + 1 >= R;
		for (long c = 0; c < ldd; c += 16) {
			__mmask16 k = c < C ? tailmask((size_t)(C - c)) : 0;
			__m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, r0 + c));
			__m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(odd ? 0 : k, r1 + c));
			_mm512_storeu_si512(dst + p * ldd + c, pairs16(lo, hi));
		}
	}
}

/* 16 x 16 transpose of 32-bit elements: r[i] row i in, column i out */
static inline void transpose16(__m512i r[16])
{
	__m512i t[16], u[16];
	for (int i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	/* u[4g + c], lane L: rows 4g..4g+3 at column 4L + c */
	for (int g = 0; g < 4; g++) {
		u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
		u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
		u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
		u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
	}
	for (int c = 0; c < 4; c++) { /* 4 x 4 transpose of 128-bit lanes */
		__m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
		__m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
		__m512i x2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
		__m512i x3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
		r[c] = _mm512_shuffle_i32x4(x0, x2, 0x88);
		r[4 + c] = _mm512_shuffle_i32x4(x0, x2, 0xdd);
		r[8 + c] = _mm512_shuffle_i32x4(x1, x3, 0x88);
		r[12 + c] = _mm512_shuffle_i32x4(x1, x3, 0xdd);
	}
}

void tile_pack_kt(uint32_t *dst, long ldd, const bf16 *src, long ld, int R, int C)
{
	int P = C / 2, R16 = (R + 15) / 16 * 16;
	for (int t = 0; t < R16; t += 16)
		for (int p = 0; p < P; p += 16) {
			__mmask16 k = tailmask((size_t)(P - p));
			__m512i r[16];
			for (int i = 0; i < 16; i++)
				r[i] = t + i < R ? _mm512_maskz_loadu_epi32(k, src + (t + i) * ld + 2 * p)
								 : _mm512_setzero_si512();
			transpose16(r);
			for (int i = 0; i < 16 && p + i < P; i++)
				_mm512_storeu_si512(dst + (p + i) * ldd + t, r[i]);
		}
}
#endif
