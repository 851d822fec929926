/* attn_bwd.c: the backward of attn.c's blocked causal attention, with the
 * backward of the QK-norm and rotary fused in (see attn.h). One work item
 * per (sequence, kv head): V^T and K packed once; per query head of the
 * group, per query block dP = dO V^T, dS = P (dP - rowsum(P dP)),
 * dQ = dS K (then its prep backward, out as bf16); per key block
 * dV = P^T dO and dK = dS^T Q over the queries from that block on, summed
 * over the group's heads in order; then the prep backward of dK, and dV,
 * out as bf16. */
#include <omp.h>
#include <string.h>
#include "attn_int.h"
#include "kernels.h"
#include "simd.h"

#ifdef LLMT_TILE
/* ds[0..len) = p (dp - sum(p dp)), zeros in ds[len..zend) */
static void softmax_bwd_row(const bf16 *p, const float *dp, int len, bf16 *ds, int zend)
{
	__m512 acc = _mm512_setzero_ps();
	for (int j = 0; j < len; j += 16) {
		__mmask16 k = tailmask((size_t)(len - j));
		acc = _mm512_fmadd_ps(v_ld(p, (size_t)j, k, 1), ld_ps(k, dp + j), acc);
	}
	__m512 dot = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
	for (int j = 0; j < len; j += 16) {
		__mmask16 k = tailmask((size_t)(len - j));
		__m512 v = _mm512_mul_ps(v_ld(p, (size_t)j, k, 1),
								 _mm512_sub_ps(ld_ps(k, dp + j), dot));
		v_st(ds, (size_t)j, v, k, 1);
	}
	if (zend > len)
		memset(ds + len, 0, sizeof(bf16) * (size_t)(zend - len));
}

/* offset of token m's (position t's) rotary row in the tables */
static inline size_t rot_row(const attn_prep_grad *pg, size_t m, int t, int hp)
{
	return (size_t)(pg->pos ? pg->pos[m] : t) * (size_t)hp;
}

struct bctx { /* what every work item reads */
	const bf16 *q, *P, *datt;
	bf16 *dS;
	const attn_prep_grad *pg;
	int H, T, hd;
	float scale;
};

/* query head h of sequence b: dQ (through the prep backward into dqkv, QK
 * norm gradient into pq), and dK, dV of its keys into x->dkg, x->dvg
 * (added when acc) */
static void head_bwd(const struct bctx *c, struct slice *x, int b, int h, float *pq, int acc)
{
	const attn_prep_grad *pg = c->pg;
	int H = c->H, T = c->T, hd = c->hd, hp = hd / 2, Tp = attn_ld(T), nb = Tp / QB;
	int ldo = H * hd, W = (H + 2 * pg->KV) * hd;
	size_t bh = (size_t)b * H + h, hq = bh * T * hd;
	const bf16 *dO = c->datt + (size_t)b * T * ldo + (size_t)h * hd; /* rows ldo apart */
	tile_pack_pairs(x->qp, hd, c->q + hq, hd, T, hd);
	tile_pack_pairs(x->dop, hd, dO, ldo, T, hd);
	for (int i = 0; i < nb; i++) { /* query blocks */
		int q0 = i * QB, mq = imin(QB, T - q0), L = imin(q0 + QB, T), zend = (L + 1) & ~1;
		size_t row0 = (bh * T + q0) * Tp;
		prefetch_rows(c->P + row0, (size_t)zend * 2, mq, (size_t)Tp * 2, 0);
		prefetch_rows(c->dS + row0, (size_t)zend * 2, mq, (size_t)Tp * 2, 1);
		prefetch_rows(pg->dqkv + ((size_t)b * T + q0) * W + (size_t)h * hd, (size_t)hd * 2, mq,
					  (size_t)W * 2, 1);
		tile_args s = targs(mq, L, hp, dO + (size_t)q0 * ldo, ldo / 2, 1, x->kt, Tp, x->tile, Tp,
							1.0f);
		s.nhi = q0;
		tile_mm(&s);
		for (int r = 0; r < mq; r++)
			softmax_bwd_row(c->P + row0 + (size_t)r * Tp, x->tile + (size_t)r * Tp, q0 + r + 1,
							c->dS + row0 + (size_t)r * Tp, zend);
		tile_args g = targs(mq, hd, zend / 2, c->dS + row0, Tp / 2, 1, x->kp, hd, x->tile, hd,
							c->scale);
		g.khi = q0;
		tile_mm(&g);
		for (int r = 0; r < mq; r++) {
			int t = q0 + r;
			size_t m = (size_t)b * T + t;
			float *gq = x->tile + (size_t)r * hd;
			k_head_bwd(gq, pg->qkv ? pg->qkv + m * W + (size_t)h * hd : NULL, hd, pg->qw,
					   pg->qw ? pg->qr[m * H + h] : 0.f, pq, pg->cos_t + rot_row(pg, m, t, hp),
					   pg->sin_t + rot_row(pg, m, t, hp));
			f32_to_bf16_n(pg->dqkv + m * W + (size_t)h * hd, gq, (size_t)hd);
		}
	}
	for (int j = 0; j < nb; j++) { /* key blocks */
		int j0 = j * QB, mk = imin(QB, T - j0), R = T - j0;
		size_t blk = (bh * T + j0) * Tp + j0, pr = (size_t)(j0 / 2) * hd;
		tile_pack_pairs(x->at, QB, c->P + blk, Tp, R, mk);
		tile_args a = targs(mk, hd, (R + 1) / 2, x->at, 1, QB, x->dop + pr, hd,
							x->dvg + (size_t)j0 * hd, hd, 1.0f);
		a.klo = 0;
		a.acc = acc;
		tile_mm(&a);
		tile_pack_pairs(x->at, QB, c->dS + blk, Tp, R, mk);
		a = targs(mk, hd, (R + 1) / 2, x->at, 1, QB, x->qp + pr, hd, x->dkg + (size_t)j0 * hd,
				  hd, c->scale);
		a.klo = 0;
		a.acc = acc;
		tile_mm(&a);
	}
}

void attn_bwd(attn_ws *w, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *P,
			  const bf16 *datt, bf16 *dS, const attn_prep_grad *pg, int B, int H, int T, int hd,
			  float scale)
{
	struct bctx c = { q, P, datt, dS, pg, H, T, hd, scale };
	int KV = pg->KV, G = H / KV, Tp = w->Tp, hp = hd / 2, W = (H + 2 * KV) * hd;
#pragma omp parallel for schedule(dynamic, 1) num_threads(w->nt)
	for (int it = 0; it < B * KV; it++) {
		int b = it / KV, kvh = it % KV;
		struct slice x;
		attn_slice(w, omp_get_thread_num(), &x);
		float *pq = w->dwp + (size_t)it * 2 * hd, *pk = pq + hd;
		memset(pq, 0, sizeof(float) * 2 * (size_t)hd);
		size_t hk = ((size_t)b * H + (size_t)kvh * G) * T * hd; /* the group's k, v copy */
		prefetch_rows(pg->dqkv + (size_t)b * T * W + (size_t)(H + kvh) * hd, (size_t)hd * 2, T,
					  (size_t)W * 2, 1);
		prefetch_rows(pg->dqkv + (size_t)b * T * W + (size_t)(H + KV + kvh) * hd,
					  (size_t)hd * 2, T, (size_t)W * 2, 1);
		tile_pack_kt(x.kt, Tp, v + hk, hd, T, hd);
		tile_pack_pairs(x.kp, hd, k + hk, hd, T, hd);
		for (int j = 0; j < G; j++)
			head_bwd(&c, &x, b, kvh * G + j, pq, j > 0);
		for (int t = 0; t < T; t++) {
			size_t m = (size_t)b * T + t, o = m * W + (size_t)(H + kvh) * hd;
			float *gk = x.dkg + (size_t)t * hd;
			k_head_bwd(gk, pg->qkv ? pg->qkv + o : NULL, hd, pg->kw,
					   pg->kw ? pg->kr[m * KV + kvh] : 0.f, pk, pg->cos_t + rot_row(pg, m, t, hp),
					   pg->sin_t + rot_row(pg, m, t, hp));
			f32_to_bf16_n(pg->dqkv + o, gk, (size_t)hd);
			f32_to_bf16_n(pg->dqkv + o + (size_t)KV * hd, x.dvg + (size_t)t * hd, (size_t)hd);
		}
	}
	for (int it = 0; pg->qw && it < B * KV; it++) /* fixed order */
		for (int i = 0; i < hd; i++) {
			pg->dqw[i] += w->dwp[(size_t)it * 2 * hd + i];
			pg->dkw[i] += w->dwp[(size_t)it * 2 * hd + hd + i];
		}
}
#endif
