/* tile.h: small bf16 matrix products for one thread on AVX-512 BF16
 * (vdpbf16ps, fp32 accumulation), with the causal trims the attention
 * kernels need, and the operand packings they use. Only built when the
 * compiler targets AVX-512 BF16 (LLMT_TILE); callers check tile_ok(). */
#ifndef LLMT_TILE_H
#define LLMT_TILE_H
#include <stddef.h>
#include <stdint.h>
#include "bf16.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define LLMT_TILE 1
#endif

#define TILE_NOTRIM (-0x40000000)

/* C[M][N] (= or +=) alpha * A . B, K a multiple of 2 here counted in
 * pairs np = K/2 (odd K: the caller zero-pads one element).
 * A: the bf16 pair (A[m][2p], A[m][2p+1]) is the uint32 a[m*am + p*ap]
 * (row-major A: am = lda/2, ap = 1; a pair-interleaved transpose: am = 1).
 * B: packed panel, pair row p, column n at b[p*bp + n] (uint32 holding
 * B[2p][n], B[2p+1][n]); columns up to N rounded up to 16 must be readable
 * (zeros past N). C: fp32, row stride ldc; only columns < N are written.
 * Causal trims, per group of rows m0..m0+mr-1 (TILE_NOTRIM: none):
 *   klo: pairs start at (m0 + klo) / 2 (A is zero before element m0 + klo);
 *   khi: pairs end at ceil((m0 + mr + khi) / 2) (A is zero from there);
 *   nhi: columns end at m0 + mr + nhi (the caller ignores the rest). */
typedef struct {
	int M, N, np;
	const uint32_t *a;
	long am, ap;
	const uint32_t *b;
	long bp;
	float *c;
	long ldc;
	float alpha;
	int acc;
	int klo, khi, nhi;
} tile_args;

void tile_mm(const tile_args *t);

/* dst[p*ldd + c] = (src[2p][c], src[2p+1][c]) for p < ceil(R/2), c < C:
 * rows t of a bf16 matrix (row stride ld) interleaved in pairs; a missing
 * odd last row and columns C..ldd-1 are zero. ldd >= C, multiple of 16. */
void tile_pack_pairs(uint32_t *dst, long ldd, const bf16 *src, long ld, int R, int C);
/* dst[p*ldd + t] = (src[t][2p], src[t][2p+1]) for t < R, p < C/2 (C even):
 * the pair-transpose of R bf16 rows (row stride ld); columns t in
 * R..roundup(R,16)-1 are zero. ldd >= roundup(R, 16). */
void tile_pack_kt(uint32_t *dst, long ldd, const bf16 *src, long ld, int R, int C);

#endif
