/* dev_kernels.h: C entry points of the CUDA kernels of the GPU model (gk_*.cu):
 * every layer's non-matmul forward and backward mirroring kernels.h
 * (bf16 storage, fp32 accumulation), cross-entropy with z-loss, fused
 * AdamW, the master-share check. All launch on the given stream and return
 * cudaGetLastError(). No floating-point atomics: every reduction has a
 * fixed order, so results are the same bits on every run and every
 * data-parallel replica (the share check's integer count is the one atomic:
 * its total does not depend on the order). */
#ifndef LLMT_GK_H
#define LLMT_GK_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "host_plan.h"   /* GK_XXH3_CHUNK, gk_xxh3_scratch_bytes */

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t gk_bf16;   /* bfloat16 bits (device __nv_bfloat16) */

/* Rows of the column-sum scratch used by deterministic weight gradients:
 * callers provide GK_COLSUM_CHUNKS * width floats (RMSNorm), and
 * GK_COLSUM_MAX * head_dim floats for the QK-norm gradient (tall: rows are
 * tokens x heads, so more chunks). */
#define GK_COLSUM_CHUNKS 64
#define GK_COLSUM_MAX 1024

cudaError_t gk_rmsnorm_fwd(const float *x, const float *w, gk_bf16 *out, float *rstd, int M,
                           int d, float eps, cudaStream_t st);
/* dx += ...; dw += sum_m dy*x*rstd, or dw = that when acc is 0 (the
 * first micro-batch writes: no zeroed buffer needed; part:
 * GK_COLSUM_CHUNKS*d scratch) */
cudaError_t gk_rmsnorm_bwd(const float *x, const float *w, const float *rstd, const float *dy,
                           float *dx, float *dw, float *part, int M, int d, int acc,
                           cudaStream_t st);

/* as k_attn_prep_fwd (bf16 q, k, v head-major); qw == NULL: no QK-norm */
cudaError_t gk_attn_prep_fwd(const float *qkv, gk_bf16 *q, gk_bf16 *k, gk_bf16 *v, int B, int T,
                             int H, int KV, int hd, const float *qw, const float *kw, float *qr,
                             float *kr, float eps, const float *cos_t, const float *sin_t,
                             cudaStream_t st);
/* as k_attn_prep_bwd; with QK-norm, contrib is a scratch of M*(H+KV)*hd
 * floats and part one of GK_COLSUM_MAX*hd floats */
cudaError_t gk_attn_prep_bwd(const float *dq, const float *dk, const float *dv, gk_bf16 *dqkv,
                             const float *qkv, int B, int T, int H, int KV, int hd,
                             const float *qw, const float *kw, const float *qr, const float *kr,
                             float *dqw, float *dkw, float *contrib, float *part,
                             const float *cos_t, const float *sin_t, cudaStream_t st);

/* the same with packed samples and a layout: token m takes rotary row
 * pos[m] (device [B*T]; NULL: its position t); tm = 1: token-major q
 * [B*T][H][hd], k and v [B*T][KV][hd] (KV heads once: the fused
 * attention's layout), and the backward reads dq, dk, dv in that layout;
 * then qkv, dq, dk and dv are bf16 (the fused path's). tm = 0: head-major
 * as above, and they are fp32 */
cudaError_t gk_attn_prep_fwd_tm(const void *qkv, gk_bf16 *q, gk_bf16 *k, gk_bf16 *v, int B,
                                int T, int H, int KV, int hd, const float *qw, const float *kw,
                                float *qr, float *kr, float eps, const float *cos_t,
                                const float *sin_t, const int32_t *pos, int tm, cudaStream_t st);
cudaError_t gk_attn_prep_bwd_tm(const void *dq, const void *dk, const void *dv,
                                gk_bf16 *dqkv, const void *qkv, int B, int T, int H, int KV,
                                int hd, const float *qw, const float *kw, const float *qr,
                                const float *kr, float *dqw, float *dkw, float *contrib,
                                float *part, const float *cos_t, const float *sin_t,
                                const int32_t *pos, int tm, cudaStream_t st);

cudaError_t gk_softmax_causal_fwd(const float *S, gk_bf16 *P, int n, int T, cudaStream_t st);
cudaError_t gk_softmax_causal_bwd(const gk_bf16 *P, const float *dP, gk_bf16 *dS, int n, int T,
                                  cudaStream_t st);
/* The same for a chunk of C query rows starting at query r0 against the kc
 * keys they can see (host_plan.h: gattn_chunk): n x C rows of stride kc. */
cudaError_t gk_softmax_chunk_fwd(const float *S, gk_bf16 *P, int n, int C, int kc, int r0,
                                 cudaStream_t st);
/* packed samples: as k_softmax_seg_fwd, lo device [B][T], n = B*H */
cudaError_t gk_softmax_seg_chunk_fwd(const float *S, gk_bf16 *P, int n, int C, int kc, int r0,
                                     int H, int T, const int32_t *lo, cudaStream_t st);
cudaError_t gk_softmax_chunk_bwd(const gk_bf16 *P, const float *dP, gk_bf16 *dS, int n, int C,
                                 int kc, int r0, cudaStream_t st);
cudaError_t gk_heads_to_tokens(const gk_bf16 *o, gk_bf16 *att, int B, int T, int H, int hd,
                               cudaStream_t st);
cudaError_t gk_tokens_to_heads(const float *datt, gk_bf16 *dO, int B, int T, int H, int hd,
                               cudaStream_t st);

/* Fused causal attention (dev_flash.cu; the forward at head dims 64 and
 * 128 on mma.sync: dev_flash_mma.cu), token-major: q, o, dO and dq
 * [B*T][H][hd], k, v, dk, dv [B*T][KV][hd] (KV divides H: query head h
 * reads KV head h / (H/KV)); lse and D [B][H][T] fp32. seg: NULL, or a
 * segment id per position [B*T]: a query sees the keys at or before it
 * with the same id. Scale 1/sqrt(hd). Head dims 8, 16, 32, 64, 128
 * (host_plan.h gattn_fused); others fail with cudaErrorInvalidValue. Backward:
 * D = rowsum(dO o) (scratch), then dk, dv in one pass (query heads of a
 * group summed in order), then dq in its own: no atomics, the same bits in
 * every run. */
cudaError_t gk_flash_fwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o,
                         float *lse, const int *seg, int B, int T, int H, int KV, int hd,
                         cudaStream_t st);
/* the forward on wmma at every head dim (gk_flash_fwd runs it at head
 * dims other than 64 and 128, LLM_TRAIN_GPU_FLASH=wmma always), and on
 * mma.sync at 64 and 128 only (dev_flash_mma.cu; cudaErrorInvalidValue
 * at others): the same contract */
cudaError_t gk_flash_fwd_wmma(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o,
                              float *lse, const int *seg, int B, int T, int H, int KV, int hd,
                              cudaStream_t st);
cudaError_t gk_flash_fwd_mma(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, gk_bf16 *o,
                             float *lse, const int *seg, int B, int T, int H, int KV, int hd,
                             cudaStream_t st);
/* 1 when the mma forward agrees with the wmma one on this device at head
 * dim hd (64 or 128) on a small case, 0 when not, -1 when the check
 * could not run */
int gk_flash_mma_check(int hd, cudaStream_t st);
/* 1 when this device's wmma keeps one element layout for a product's
 * result and a loaded accumulator (what gk_flash_fwd's rescale needs), 0
 * when not, -1 when the check could not run */
int gk_flash_layout_ok(cudaStream_t st);
cudaError_t gk_flash_bwd(const gk_bf16 *q, const gk_bf16 *k, const gk_bf16 *v, const gk_bf16 *o,
                         const gk_bf16 *dO, const float *lse, float *D, const int *seg, gk_bf16 *dq,
                         gk_bf16 *dk, gk_bf16 *dv, int B, int T, int H, int KV, int hd,
                         cudaStream_t st);

cudaError_t gk_swiglu_fwd(const gk_bf16 *gu, gk_bf16 *a, int M, int F, cudaStream_t st);
cudaError_t gk_swiglu_bwd(const gk_bf16 *gu, const float *da, gk_bf16 *dgu, int M, int F,
                          cudaStream_t st);

cudaError_t gk_embed_fwd(const float *E, const int32_t *tok, float *x, int M, int d,
                         cudaStream_t st);
/* dE[uniq[u]] += sum of dx[pos[start[u] .. start[u+1])] in that order
 * (the plan from gembed_plan.h, on the device) */
cudaError_t gk_embed_bwd(float *dE, const int32_t *uniq, const int32_t *start,
                         const int32_t *pos, int nuniq, const float *dx, int d, cudaStream_t st);

/* per row m: loss[m] = lse - l[tgt] + z*lse^2; dlogits (bf16) =
 * d(sum over M / M)/d logits. The caller sums loss[] in order. A target
 * < 0 (not trained on): loss[m] = 0 and a zero dlogits row. */
cudaError_t gk_xent_fwd(const float *logits, const int32_t *tgt, gk_bf16 *dlogits, float *loss,
                        int M, int V, float z, cudaStream_t st);

cudaError_t gk_add(float *x, const float *r, size_t n, cudaStream_t st);
cudaError_t gk_f32_to_bf16(const float *src, gk_bf16 *dst, size_t n, cudaStream_t st);

/* Fused AdamW over n elements (same arithmetic as llmt_adamw_update), also
 * refreshing the bf16 compute copy wc (may be NULL). */
cudaError_t gk_adamw(float *p, const float *g, float *m, float *v, gk_bf16 *wc, size_t n,
                     float gscale, float b1, float b2, float omb1, float omb2, float keep,
                     float step, float bc2s, float eps, cudaStream_t st);

/* The SDC check of a ZeRO-1 master share (dev_elem.cu): *bad += the
 * elements i < n[j] of the nr ranges whose fp32 master m[j][i] no longer
 * gives ref[j][i]: with is_bf16[j], the bf16 weights (gk_bf16), compared with
 * the bf16 rounding gk_adamw writes; else an fp32 copy, compared bit for
 * bit (+0 and -0 alike: such a copy is a sum over DP of its owner's value
 * and zeros). 16-byte loads where master and the reference are aligned
 * alike. *bad is not zeroed here. */
#define GK_SHARE_RANGES 32
typedef struct {
	const float *m[GK_SHARE_RANGES];
	const void *ref[GK_SHARE_RANGES];
	size_t n[GK_SHARE_RANGES];
	int is_bf16[GK_SHARE_RANGES];  /* ref is gk_bf16 (else float) */
	int nr;
} gk_share_ranges;
cudaError_t gk_share_check(const gk_share_ranges *r, unsigned long long *bad, cudaStream_t st);

/* Sum of squares: partial[b] for b < GK_SUMSQ_BLOCKS in double (the host
 * adds them in order): block b sums a fixed range with 16-byte loads
 * (when x is 16-byte aligned), so the result depends on n only. */
#define GK_SUMSQ_BLOCKS 1024
cudaError_t gk_sumsq(const float *x, size_t n, double *partial, cudaStream_t st);

/* XXH3-64 (default secret, seed 0) of len bytes at device x, the same bits
 * as libxxhash's XXH3_64bits (dev_xxh3.cu): *hash (host) once the hash is
 * done (synchronous, unlike the rest: the stream is synchronized). x and
 * scratch 16-byte aligned when len > 240; scratch: gk_xxh3_scratch_bytes(len)
 * bytes of device memory (at most the block sums of GK_XXH3_CHUNK KiB
 * blocks, 4 MiB). No atomics: the same bits in every run. */
cudaError_t gk_xxh3_64(const void *x, size_t len, uint64_t *scratch, uint64_t *hash,
                       cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
