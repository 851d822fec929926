/* attn.h: causal self-attention of one layer in bf16 on the CPU, blocked
 * by 64 queries: query block i meets keys 0..64(i+1)-1 only, so the
 * masked half of the T x T square is never computed, in the softmax and
 * the backward too. Products on tile.c (AVX-512 BF16); attn_ok() says
 * when it applies (else the caller uses the oneDNN full-square path). */
#ifndef LLMT_ATTN_H
#define LLMT_ATTN_H
#include <stdint.h>
#include "bf16.h"

typedef struct attn_ws attn_ws;

/* 1 when this kernel runs here: the AVX-512 BF16 copy in use (cpu.h),
 * llmt_mm_bf16_native, and head_dim hd a multiple of 16. attn_fwd and
 * attn_bwd exist in that copy only. */
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
/* The same with packed samples: query t of sequence b meets keys
 * lo[b*T + t] .. t only (the first token of its sample; lo NULL: 0). Row t
 * of P is 0 before lo, so attn_bwd needs nothing more than pg->pos. */
void attn_fwd_seg(attn_ws *w, const bf16 *q, const bf16 *k, const bf16 *v, bf16 *P, bf16 *att,
				  const int32_t *lo, int B, int H, int T, int hd, float scale);
/* The backward of the attention input preparation (kernels.h's
 * k_attn_prep_fwd: per-head QK-norm and rotary on the raw q/k/v
 * projection), fused into attn_bwd so that dq, dk, dv never go to memory. */
typedef struct {
	int KV;                     /* kv heads (H % KV == 0; k, v repeated per group) */
	const float *cos_t, *sin_t; /* rotary tables [T][hd/2] */
	const float *qkv;           /* raw projection fp32 [B*T][(H+2KV)*hd] (QK-norm only) */
	const float *qw, *kw;       /* QK-norm weights [hd]; NULL: no QK-norm */
	const float *qr, *kr;       /* their saved rstd [B*T*H], [B*T*KV] */
	float *dqw, *dkw;           /* QK-norm weight gradients [hd], added to */
	bf16 *dqkv;                 /* out: dL/d raw projection, bf16 [B*T][(H+2KV)*hd] */
	const int32_t *pos;         /* rotary row of token b*T + t (NULL: t) */
} attn_prep_grad;

/* Backward: datt = dL/d att bf16 token-major [B*T][H*hd]; P from
 * attn_fwd; dS: scratch laid out as P. Writes pg->dqkv (and adds to the
 * QK-norm gradients). One work item per (sequence, kv head), its query
 * heads in order; QK-norm gradients summed per item, then in item order:
 * results do not depend on the thread count. */
void attn_bwd(attn_ws *w, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *P,
			  const bf16 *datt, bf16 *dS, const attn_prep_grad *pg, int B, int H, int T, int hd,
			  float scale);

#endif
