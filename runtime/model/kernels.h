/* kernels.h: the non-matmul work of the model, forward and backward, on
 * rows of activations: RMSNorm, rotary + QK-norm + head layout, causal
 * softmax, SwiGLU, embedding, cross-entropy with z-loss. "Act" buffers are
 * fp32 or bf16 (flag bf) so one kernel serves both precisions; sums and
 * norms are computed in fp32. OpenMP inside each kernel. */
#ifndef LLMT_KERNELS_H
#define LLMT_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include "bf16.h"
#include "cpu.h"

static inline float act_ld(const void *p, size_t i, int bf)
{
    return bf ? bf16_to_f32(((const bf16 *)p)[i]) : ((const float *)p)[i];
}
static inline void act_st(void *p, size_t i, float v, int bf)
{
    if (bf)
        ((bf16 *)p)[i] = f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* out[m] = x[m] * rstd[m] * w, rstd[m] = 1/sqrt(mean(x[m]^2) + eps). */
void k_rmsnorm_fwd(const float *x, const float *w, void *out, float *rstd,
                   int M, int d, float eps, int bf);
/* s = x + r (residual add, s may not alias x or r), then out, rstd =
 * rmsnorm of s as k_rmsnorm_fwd: one pass over memory instead of three. */
void k_add_rmsnorm_fwd(const float *x, const float *r, float *s, const float *w, void *out,
                       float *rstd, int M, int d, float eps, int bf);
/* dx[m] += d(out)/dx . dy[m]; dw += sum_m dy[m] * x[m] * rstd[m]
 * (per-thread partials summed in a fixed order). */
void k_rmsnorm_bwd(const float *x, const float *w, const float *rstd, const float *dy,
                   float *dx, float *dw, int M, int d);
/* k_rmsnorm_bwd that also stores the updated dx as act (bf) in dxact, for
 * the next matrix product (saves a conversion pass). */
void k_rmsnorm_bwd_act(const float *x, const float *w, const float *rstd, const float *dy,
                       float *dx, float *dw, int M, int d, void *dxact, int bf);

/* Attention input prep. qkv: [B*T][(H+2*KV)*hd] fp32 (rows of q heads, k
 * heads, v heads). Writes q, k, v head-major [B][H][T][hd] (k and v
 * repeated over the H/KV query heads of a group), with optional QK-norm
 * (weights qw, kw of hd, rstd saved in qr [B*T*H], kr [B*T*KV]) and rotary
 * (cos/sin tables [T][hd/2]) on q and k. */
void k_attn_prep_fwd(const float *qkv, void *q, void *k, void *v, int B, int T, int H, int KV,
                     int hd, const float *qw, const float *kw, float *qr, float *kr, float eps,
                     const float *cos_t, const float *sin_t, int bf);
/* The same with packed samples (doc/contracts.md): token m = b*T + t
 * takes rotary row pos[m], its position in its sample (NULL: t). */
void k_attn_prep_fwd_at(const float *qkv, void *q, void *k, void *v, int B, int T, int H, int KV,
                        int hd, const float *qw, const float *kw, float *qr, float *kr, float eps,
                        const float *cos_t, const float *sin_t, const int32_t *pos, int bf);
/* Backward of k_attn_prep_fwd: dq, dk, dv fp32 head-major [B][H][T][hd]
 * (dk/dv summed over each group), writes dqkv act [B*T][(H+2KV)*hd] and
 * accumulates dqw, dkw (QK-norm weights) when qw != NULL. */
void k_attn_prep_bwd(const float *dq, const float *dk, const float *dv, void *dqkv,
                     const float *qkv, int B, int T, int H, int KV, int hd, const float *qw,
                     const float *kw, const float *qr, const float *kr, float *dqw, float *dkw,
                     const float *cos_t, const float *sin_t, int bf);
void k_attn_prep_bwd_at(const float *dq, const float *dk, const float *dv, void *dqkv,
                        const float *qkv, int B, int T, int H, int KV, int hd, const float *qw,
                        const float *kw, const float *qr, const float *kr, float *dqw, float *dkw,
                        const float *cos_t, const float *sin_t, const int32_t *pos, int bf);

/* Backward of the QK-norm + rotary of one head vector of token t:
 * g[hd] = dL/d(prepared head) in, dL/d(raw projection) out; x: the raw
 * projection (used with QK-norm weight w and saved rstd r; w NULL: no
 * norm), dw += the weight gradient; c, s: cos/sin row of t [hd/2]. */
void k_head_bwd(float *g, const float *x, int hd, const float *w, float r, float *dw,
                const float *c, const float *s);

/* Causal softmax over rows of S [n][T][T] fp32 -> P act (0 above the
 * diagonal). */
void k_softmax_causal_fwd(const float *S, void *P, int n, int T, int bf);
/* The same within samples: row i of matrix b (of n = B*H, sequence b/H)
 * takes keys lo[(b/H)*T + i] .. i only (lo NULL: 0 .. i); P is 0 elsewhere,
 * so k_softmax_causal_bwd gives 0 there too. */
void k_softmax_seg_fwd(const float *S, void *P, int n, int T, int H, const int32_t *lo, int bf);
/* dS = P * (dP - rowsum(P * dP)), causal part only, zeros above. */
void k_softmax_causal_bwd(const void *P, const float *dP, void *dS, int n, int T, int bf);

/* Head-major [B][H][T][hd] <-> token-major [B*T][H*hd]. */
void k_heads_to_tokens(const void *o, void *att, int B, int T, int H, int hd, int bf);
void k_tokens_to_heads(const float *datt, void *dO, int B, int T, int H, int hd, int bf);

/* gu: [M][2F] act (gate then up); a[m][j] = silu(g) * u. */
void k_swiglu_fwd(const void *gu, void *a, int M, int F, int bf);
/* da fp32 [M][F] -> dgu act [M][2F]. */
void k_swiglu_bwd(const void *gu, const float *da, void *dgu, int M, int F, int bf);

void k_embed_fwd(const float *E, const int32_t *tok, float *x, int M, int d);
/* dE[tok[m]] += dx[m] (deterministic: each thread owns a column range). */
void k_embed_bwd(float *dE, const int32_t *tok, const float *dx, int M, int d);

/* Cross-entropy of logits [M][V] fp32 against targets; returns the sum
 * over M of (CE + z * lse^2) divided by M; writes dlogits (act) = its
 * derivative. A target < 0 (ignore_index) adds nothing: no loss, a zero
 * gradient row (the caller scales by the trained-token count). */
double k_xent_fwd(const float *logits, const int32_t *tgt, void *dlogits, int M, int V,
                  float z, int bf);

/* s = x + r elementwise (fp32), n elements. */
void k_add(float *s, const float *x, const float *r, size_t n);
/* Convert fp32 -> act (copy when !bf). */
void k_to_act(const float *src, void *dst, size_t n, int bf);

#ifndef LLMT_ISA_AVX512
/* the AVX-512 BF16 copies the portable entry points forward to (cpu.h) */
extern __typeof__(k_rmsnorm_fwd) k_rmsnorm_fwd_avx512;
extern __typeof__(k_add_rmsnorm_fwd) k_add_rmsnorm_fwd_avx512;
extern __typeof__(k_rmsnorm_bwd_act) k_rmsnorm_bwd_act_avx512;
extern __typeof__(k_attn_prep_fwd_at) k_attn_prep_fwd_at_avx512;
extern __typeof__(k_attn_prep_bwd_at) k_attn_prep_bwd_at_avx512;
extern __typeof__(k_softmax_seg_fwd) k_softmax_seg_fwd_avx512;
extern __typeof__(k_softmax_causal_bwd) k_softmax_causal_bwd_avx512;
extern __typeof__(k_tokens_to_heads) k_tokens_to_heads_avx512;
extern __typeof__(k_swiglu_fwd) k_swiglu_fwd_avx512;
extern __typeof__(k_swiglu_bwd) k_swiglu_bwd_avx512;
extern __typeof__(k_to_act) k_to_act_avx512;
#endif

#endif
