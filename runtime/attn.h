/* attn.h: causal self-attention of one layer in bf16 on the CPU, blocked
 * by 64 queries: query block i meets keys 0..64(i+1)-1 only, so the
 * masked half of the T x T square is never computed, in the softmax and
 * the backward too. Products on tile.c (AVX-512 BF16); attn_ok() says
 * when it applies (else the caller uses the oneDNN full-square path). */
#ifndef LLMT_ATTN_H
#define LLMT_ATTN_H
#include "bf16.h"

typedef struct attn_ws attn_ws;

/* 1 when this kernel runs here: built for and running on AVX-512 BF16
 * (llmt_mm_bf16_native) and head_dim hd a multiple of 16. */
int attn_ok(int hd);
/* Row stride of P and dS: T rounded up to 64. */
int attn_ld(int T);
/* Scratch for BH heads of T tokens, hd wide, on up to nt threads (the
 * kernels run on exactly nt threads). NULL when out of memory. */
attn_ws *attn_ws_new(int BH, int T, int hd, int nt);
void attn_ws_free(attn_ws *w);

/* q, k, v: bf16 head-major [B][H][T][hd] (k and v repeated over GQA
 * groups). Writes P = softmax(scale q k^T) (bf16 [B*H][T][attn_ld(T)]:
 * row t holds keys 0..t, then zeros to an even index at or past the end
 * of its 64-block; nothing further is written) and att = P v as bf16
 * token-major [B*T][H*hd]. Deterministic (no reduction depends on the
 * thread count). */
void attn_fwd(attn_ws *w, const bf16 *q, const bf16 *k, const bf16 *v, bf16 *P, bf16 *att,
              int B, int H, int T, int hd, float scale);
/* Backward: datt = dL/d att bf16 token-major [B*T][H*hd]; P from
 * attn_fwd; dS: scratch laid out as P. Writes dq, dk, dv: fp32 head-major
 * [B][H][T][hd] (dk, dv per query head, not yet summed over a group). */
void attn_bwd(attn_ws *w, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *P,
              const bf16 *datt, bf16 *dS, float *dq, float *dk, float *dv, int B, int H, int T,
              int hd, float scale);

#endif
