/* host_plan.h: pure host-side logic of the GPU backend (no CUDA or NCCL call,
 * unit-tested on machines without a GPU): device choice from the
 * environment contract, the watchdog that turns a stuck or failed NCCL
 * operation into the transient exit code, the bucket plan of the
 * data-parallel gradient all-reduce that overlaps backward, and the sorted
 * plan of the deterministic embedding backward, the column-major form of a
 * row-major matrix product. */
#ifndef LLMT_GPLAN_H
#define LLMT_GPLAN_H
#include <stddef.h>
#include <stdint.h>

/* The device's weights are initialised GINIT_CHUNK floats at a time
 * through a host buffer (gmodel_shard.c ginit_weights; memest.c counts
 * it). */
#define GINIT_CHUNK ((size_t)1 << 22)

/* The replica hash's device scratch (dev_xxh3.cu gk_xxh3_64; gmodel_opt.c
 * allocates it, memest.c counts it): the 8 lane sums of each 1 KiB block
 * of one chunk of GK_XXH3_CHUNK blocks (reused chunk after chunk), and 16
 * words more; len bytes hashed. */
#define GK_XXH3_CHUNK ((size_t)1 << 16)
static inline size_t gk_xxh3_scratch_bytes(size_t len)
{
	size_t nb = len ? (len - 1) / 1024 : 0;
	return (16 + 8 * (nb < GK_XXH3_CHUNK ? nb : GK_XXH3_CHUNK)) * sizeof(uint64_t);
}

/* ---- device choice (device_pick.c) -------------------------------------------
 * ndev visible devices. One visible device (the plugin narrowed
 * CUDA_VISIBLE_DEVICES): 0. Else LLM_TRAIN_GPU when set and >= 0, else
 * LOCAL_RANK % ndev, else 0. NULL values are absent. Returns the index, or
 * -1 with one line in err naming the bad value (no device, not a number,
 * out of range). */
int gpick_device(int ndev, const char *llm_train_gpu, const char *local_rank, char *err,
				 size_t errlen);

/* ---- watchdog (nccl_watchdog.c) -----------------------------------------------
 * One NCCL operation (or communicator init) is watched from `start`; each
 * poll reports whether the stream work is done and the communicator's
 * asynchronous state. */
typedef enum { GW_OK = 0, GW_PENDING = 1, GW_ERROR = 2, GW_TIMEOUT = 3 } gw_state;
typedef enum { GW_ASYNC_OK = 0, GW_ASYNC_IN_PROGRESS = 1, GW_ASYNC_ERROR = 2 } gw_async;
typedef struct {
	double start, timeout_s;  /* timeout_s <= 0: no deadline (never used by default) */
} gwatch;
void gwatch_arm(gwatch *w, double now, double timeout_s);
/* Verdict of one poll: an asynchronous error wins, then completion, then
 * the deadline. */
gw_state gwatch_poll(const gwatch *w, double now, int done, gw_async async);
/* Sleep before the next poll in microseconds: short at first, growing to
 * 1 ms (so a fast collective is not slowed and a slow one costs no CPU). */
unsigned gwatch_backoff_us(int polls);
/* Exit code for a verdict: 0 for GW_OK, 75 (transient) for error/timeout. */
int gwatch_exit_code(gw_state s);
/* Timeout from LLM_TRAIN_NCCL_TIMEOUT (seconds, > 0) or the default;
 * -1.0 with a message in err when the value is bad. */
double gwatch_timeout_from(const char *value, double dflt, char *err, size_t errlen);

/* ---- gradient buckets (dp_buckets.c) --------------------------------------
 * The flat gradient buffer is all-reduced over data parallelism in
 * buckets, each launched on the communication stream as soon as backward
 * has finished every tensor in it. Tensors are given in flat-buffer order
 * (offset, numel); backward produces them from the end of the buffer to
 * the start, so buckets are cut from the end: bucket 0 is the highest
 * range. A bucket holds whole tensors and at least target elements
 * (except the lowest one); it ends at a tensor boundary. */
typedef struct {
	size_t lo, hi;        /* flat range [lo, hi) */
	int first_tensor;     /* lowest tensor index inside */
} gbucket;
/* Writes up to cap buckets; returns the count, or -1 when cap is too
 * small or the tensors are not contiguous and in order. */
int gbucket_plan(const size_t *offset, const size_t *numel, int ntensors, size_t nflat,
				 size_t target, gbucket *out, int cap);
/* Buckets completed once backward has produced every tensor with index >=
 * first_done (tensors below it still pending): the count of leading
 * buckets whose first_tensor >= first_done. */
int gbucket_ready(const gbucket *b, int nb, int first_done);
/* The target of a flat buffer of n elements (fp32 gradients): about n/8,
 * so that the reduction of the late layers overlaps the backward of the
 * early ones, and at most GBUCKET_MAX_BYTES of gradients (a bf16 weight
 * all-gather of half that), so that each NCCL call moves tens of MB; at
 * least 1. */
#define GBUCKET_MAX_BYTES ((size_t)64 << 20)
size_t gbucket_target(size_t n);
/* Where the forward first needs bucket b's weights: the index of the
 * first of the ascending flat offsets w[0 .. nw) above its lo (each
 * layer's first tensor, then the end of the buffer), nw when none is. The
 * weight all-gather issues the buckets of one wait point as one group. */
int gbucket_wait_point(const gbucket *b, const size_t *w, int nw);

/* ZeRO-1 over dp ranks inside one bucket [lo, hi): the reduce-scatter
 * leaves rank r the sum of the block [own_lo, own_hi) = lo + r*blk ..
 * lo + (r+1)*blk, blk = (hi - lo) / dp; the tail [tail_lo, hi) (fewer
 * than dp elements) is all-reduced and updated alike on every rank. */
typedef struct {
	size_t blk, own_lo, own_hi, tail_lo, hi;
} gshard;
void gbucket_shard(const gbucket *b, int dp, int r, gshard *s);

/* The flat ranges whose squares this rank adds to the global gradient
 * norm after the ZeRO-1 reduce-scatter: in each bucket its own block, and
 * the tail on DP rank 0 only, cut to the tensors with in_norm[t] set (the
 * host optimizer's rule: a TP-sharded tensor on every TP rank, a
 * replicated one on TP rank 0 only, a tied second copy never; tensor t
 * runs to the next offset, padding included). Summed over DP and TP, each
 * element of a stage counts once. Up to cap [lo, hi) ranges in increasing
 * order, touching ones merged; returns the count, -1 when cap is too
 * small (2 * (nb + ntensors) always suffices). */
int gbucket_norm_ranges(const gbucket *b, int nb, int dp, int r, const size_t *offset,
						const int *in_norm, int ntensors, size_t nflat, size_t (*out)[2],
						int cap);

/* ---- embedding backward plan (embed_sort.c) --------------------------------
 * For tokens tok[M]: the distinct tokens in increasing order (uniq[nuniq]),
 * and for each the positions where it occurs, increasing
 * (pos[start[u] .. start[u+1])). Summing in that order makes the gradient
 * independent of thread scheduling. uniq and pos hold M, start M + 1.
 * Returns nuniq, or -1 for a token outside [0, vocab). */
int gembed_plan(const int32_t *tok, int M, int vocab, int32_t *uniq, int32_t *start,
				int32_t *pos);

/* ---- cuBLASLt problem mapping (blas_plan.c) -----------------------------
 * The column-major problem cuBLASLt solves for the row-major
 * C[M][N] = op(A) op(B): C^T = op(B)^T op(A)^T (used by blas.c). */
typedef struct {
	int m, n, k;            /* column-major sizes of D = op(A') op(B') */
	int trans_a, trans_b;   /* of A' (our B) and B' (our A) */
	int rows_a, cols_a, lda;
	int rows_b, cols_b, ldb;
	int ldc;
	long long stride_a, stride_b, stride_c;
} gmm_colmajor;
void gmm_plan(int M, int N, int K, int ta, int tb, gmm_colmajor *p);
/* The same with explicit row-major leading dimensions (elements between
 * rows of A, B, C) and batch strides (elements between batch members):
 * products over sub-blocks of larger tensors, such as a chunk of query
 * rows of every head. */
void gmm_plan_ld(int M, int N, int K, int ta, int tb, int lda, long long sa, int ldb,
				 long long sb, int ldc, long long sc, gmm_colmajor *p);
/* Largest power of two (<= 256) dividing the address: the alignment the
 * heuristic is told about. */
int gmm_align(const void *p);

/* ---- causal attention in query chunks (attn_plan.c) -------------------
 * Query rows are taken C at a time; chunk c (rows cC .. cC+C-1) only meets
 * keys 0 .. (c+1)C-1, so the products, the softmax and the stored
 * probabilities skip the blocks above the diagonal: about half the work
 * and memory of the full T x T square at long T. P is stored chunk after
 * chunk, chunk c as [BH][C][(c+1)C]. */
/* Chunk length for sequence length T: T itself up to 128 (one chunk, the
 * square), else the largest of 128, 64 or 32 that divides T (T if none). */
int gattn_chunk(int T);
/* Elements before chunk c in the stored P (BH heads, chunk length C). */
size_t gattn_p_offset(size_t BH, int C, int c);
/* Elements of the whole stored P for sequence length T. */
size_t gattn_p_elems(size_t BH, int T, int C);
/* The fused attention (dev_flash.cu: no score buffers, token-major q/k/v
 * with KV heads once) or the chunked one: mode is LLM_TRAIN_GPU_ATTN
 * (NULL or "" or "fused": fused when the head dim is one it is built for,
 * 8, 16, 32, 64 or 128, else chunked; "chunked": chunked). 1 fused, 0
 * chunked, -1 for another mode. */
int gattn_fused(int hd, const char *mode);

/* ---- the activations one layer keeps (act_plan.c) ----------------------
 * The buffers of one layer of the GPU model between its forward and its
 * backward (gmodel.c allocates from this table, memest.c sums it), and
 * which of them are one buffer shared by every layer and slot because
 * backward recomputes them (llm-train --recompute): attn keeps q, k, v
 * and recomputes the attention core (probabilities or logsumexp, the
 * attention output); full keeps only the layer's input (the residual
 * stream, not in this table) and recomputes the layer. */
enum {
	GA_X_MID, GA_H1, GA_H2, GA_RSTD1, GA_RSTD2, GA_QKV, GA_QR, GA_KR, GA_Q, GA_K, GA_V,
	GA_P, GA_LSE, GA_ATT, GA_GU, GA_A, GA_N
};
typedef struct {
	size_t B, T, d, Hl, KVl, hd, Fl;   /* this rank's heads, KV heads and d_ff */
	int C;                             /* query chunk (chunked attention) */
	int qk_norm, fused;
	int recompute;                     /* model_config.h llmt_recompute: 0 none, 1 attn, 2 full
	                                    * (of a recomputed layer; the others: 0) */
} gact_shape;
typedef struct {
	size_t bytes[GA_N];                /* 0: not allocated */
	unsigned char shared[GA_N];        /* one buffer for every layer and slot */
} gact_plan;
void gact_plan_make(const gact_shape *s, gact_plan *p);
/* Bytes of the buffers kept per layer and slot (shared 0), or of the
 * shared ones, allocated once (shared 1). */
size_t gact_bytes(const gact_plan *p, int shared);

#endif
