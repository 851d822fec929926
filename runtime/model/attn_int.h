/* attn_int.h: what attn.c (workspace, forward) and attn_bwd.c share: the
 * block size, the per-thread scratch and small helpers. */
#ifndef LLMT_ATTN_INT_H
#define LLMT_ATTN_INT_H
#include <stdint.h>
#include "attn.h"
#include "tile.h"

#define QB 64 /* queries (and keys) per block */

struct attn_ws {
	int BH, T, Tp, hd, nt;
	uint8_t *mem;  /* nt slices of per bytes */
	size_t per;
	float *dwp;    /* [BH][2 hd]: per work item QK-norm weight gradients */
};

struct slice {     /* one thread's scratch for one work item */
	uint32_t *kt;  /* [hd/2][Tp]: K^T (forward), V^T (backward) */
	uint32_t *kp;  /* [Tp/2][hd]: V pairs (forward), K pairs (backward) */
	uint32_t *qp;  /* [Tp/2][hd]: Q pairs (backward) */
	uint32_t *dop; /* [Tp/2][hd]: dO pairs (backward) */
	float *tile;   /* [QB][Tp]: S, dP or output rows */
	uint32_t *at;  /* [Tp/2][QB]: P^T or dS^T of one key block */
	float *dkg, *dvg; /* [T][hd]: dK, dV summed over a GQA group (backward) */
};

/* thread i's slice of w */
void attn_slice(const attn_ws *w, int i, struct slice *s);

static inline int imin(int a, int b) { return a < b ? a : b; }

/* start loading rows of bytes each, stride bytes apart, into the cache
 * (for writing when w): the inputs of a block come from memory while the
 * previous block computes */
static inline void prefetch_rows(const void *p, size_t bytes, int rows, size_t stride, int w)
{
	for (int r = 0; r < rows; r++)
		for (size_t o = 0; o < bytes; o += 64) {
			const char *a = (const char *)p + r * stride + o;
			if (w)
				__builtin_prefetch(a, 1, 3);
			else
				__builtin_prefetch(a, 0, 3);
		}
}

static inline tile_args targs(int M, int N, int np, const void *a, long am, long ap,
							  const uint32_t *b, long bp, float *c, long ldc, float alpha)
{
	tile_args t = { M, N, np, (const uint32_t *)a, am, ap, b, bp, c, ldc, alpha, 0,
					TILE_NOTRIM, TILE_NOTRIM, TILE_NOTRIM };
	return t;
}

#endif
