/* attn.c: causal attention in 64-query blocks (see attn.h): the scratch,
 * and the forward, one head per work item so that its packed operands
 * and P stay in the thread's cache: K^T and V packed; per query block
 * S = Q K^T over the keys up to the block's end, the softmax of each row
 * into P, and the output rows P V. Each output is written by one item:
 * results do not depend on the thread count. Backward: attn_bwd.c. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"
#include "matmul.h"
#include "simd.h"
#include "attn_int.h"

/* carve slice i (or, with w->mem NULL, just measure: returns bytes) */
static size_t carve(const attn_ws *w, int i, struct slice *s)
{
	size_t off = 0, pk = (size_t)w->Tp * (w->hd / 2) * 4;
	uint8_t *base = w->mem ? w->mem + (size_t)i * w->per : NULL;
#define TAKE(field, bytes)                                                                      \
	do {                                                                                        \
		s->field = base ? (void *)(base + off) : NULL;                                          \
		off += ((bytes) + 63) / 64 * 64;                                                        \
	} while (0)
	TAKE(kt, pk);
	TAKE(kp, pk);
	TAKE(qp, pk);
	TAKE(dop, pk);
	TAKE(tile, (size_t)QB * w->Tp * 4);
	TAKE(at, (size_t)(w->Tp / 2) * QB * 4);
	TAKE(dkg, (size_t)w->T * w->hd * 4);
	TAKE(dvg, (size_t)w->T * w->hd * 4);
#undef TAKE
	return off;
}

#ifndef LLMT_ISA_AVX512 /* the scratch: in the portable copy */
void attn_slice(const attn_ws *w, int i, struct slice *s) { carve(w, i, s); }

int attn_ld(int T) { return (T + QB - 1) / QB * QB; }

int attn_ok(int hd)
{
	return hd > 0 && hd % 16 == 0 && llmt_cpu_avx512() && llmt_mm_bf16_native();
}

attn_ws *attn_ws_new(int BH, int T, int hd, int nt)
{
	attn_ws *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	struct slice sl;
	w->BH = BH, w->T = T, w->Tp = attn_ld(T), w->hd = hd, w->nt = nt < 1 ? 1 : nt;
	w->per = carve(w, 0, &sl);
	void *p = NULL, *q = NULL;
	if (posix_memalign(&p, 64, w->per * w->nt) ||
		posix_memalign(&q, 64, (size_t)BH * 2 * hd * sizeof(float))) {
		free(p);
		free(w);
		return NULL;
	}
	w->mem = p;
	w->dwp = q;
	return w;
}

void attn_ws_free(attn_ws *w)
{
	if (!w)
		return;
	free(w->mem);
	free(w->dwp);
	free(w);
}
#endif

#ifdef LLMT_TILE
static void zero_bf16(bf16 *p, int from, int to)
{
	if (to > from)
		memset(p + from, 0, sizeof(bf16) * (size_t)(to - from));
}

/* p[lo..len) = softmax(s[lo..len)) (s overwritten with the exponentials),
 * zeros in p[0..lo) (keys of an earlier sample) and p[len..zend) */
static void softmax_row(float *s, int lo, int len, bf16 *p, int zend)
{
	zero_bf16(p, 0, lo);
	s += lo, p += lo, len -= lo, zend -= lo;
	__m512 vm = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
	for (int j = 0; j < len; j += 16) {
		__mmask16 k = tailmask((size_t)(len - j));
		vm = _mm512_mask_max_ps(vm, k, vm, ld_ps(k, s + j));
	}
	__m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vm));
	for (int j = 0; j < len; j += 16) {
		__mmask16 k = tailmask((size_t)(len - j));
		__m512 e = _mm512_maskz_mov_ps(k, v_exp(_mm512_sub_ps(ld_ps(k, s + j), mx)));
		st_ps(s + j, k, e);
		sum = _mm512_add_ps(sum, e);
	}
	__m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
	for (int j = 0; j < len; j += 16) {
		__mmask16 k = tailmask((size_t)(len - j));
		v_st(p, (size_t)j, _mm512_mul_ps(ld_ps(k, s + j), inv), k, 1);
	}
	zero_bf16(p, len, zend);
}

void attn_fwd(attn_ws *w, const bf16 *q, const bf16 *k, const bf16 *v, bf16 *P, bf16 *att,
			  int B, int H, int T, int hd, float scale)
{
	attn_fwd_seg(w, q, k, v, P, att, NULL, B, H, T, hd, scale);
}

void attn_fwd_seg(attn_ws *w, const bf16 *q, const bf16 *k, const bf16 *v, bf16 *P, bf16 *att,
				  const int32_t *lo, int B, int H, int T, int hd, float scale)
{
	int BH = B * H, Tp = w->Tp, hp = hd / 2, nb = Tp / QB;
#pragma omp parallel for schedule(dynamic, 1) num_threads(w->nt)
	for (int bh = 0; bh < BH; bh++) {
		struct slice x;
		carve(w, omp_get_thread_num(), &x);
		size_t hq = (size_t)bh * T * hd; /* this head in q, k, v */
		prefetch_rows(q + hq, (size_t)T * hd * 2, 1, 0, 0);
		tile_pack_kt(x.kt, Tp, k + hq, hd, T, hd);
		tile_pack_pairs(x.kp, hd, v + hq, hd, T, hd);
		int b = bh / H, h = bh % H;
		for (int i = 0; i < nb; i++) {
			int q0 = i * QB, mq = imin(QB, T - q0), L = imin(q0 + QB, T), zend = (L + 1) & ~1;
			bf16 *Pi = P + ((size_t)bh * T + q0) * Tp;
			prefetch_rows(Pi, (size_t)zend * 2, mq, (size_t)Tp * 2, 1);
			prefetch_rows(att + (((size_t)b * T + q0) * H + h) * hd, (size_t)hd * 2, mq,
						  (size_t)H * hd * 2, 1);
			tile_args s = targs(mq, L, hp, q + hq + (size_t)q0 * hd, hp, 1, x.kt, Tp, x.tile, Tp,
								scale);
			s.nhi = q0;
			tile_mm(&s);
			for (int r = 0; r < mq; r++)
				softmax_row(x.tile + (size_t)r * Tp, lo ? lo[(size_t)b * T + q0 + r] : 0,
							q0 + r + 1, Pi + (size_t)r * Tp, zend);
			tile_args o = targs(mq, hd, zend / 2, Pi, Tp / 2, 1, x.kp, hd, x.tile, hd, 1.0f);
			o.khi = q0;
			tile_mm(&o);
			for (int r = 0; r < mq; r++)
				f32_to_bf16_n(att + (((size_t)b * T + q0 + r) * H + h) * hd,
							  x.tile + (size_t)r * hd, (size_t)hd);
		}
	}
}
#endif
