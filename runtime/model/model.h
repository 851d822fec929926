/* model.h: one pipeline stage of one tensor-parallel shard of a Llama-family
 * decoder (RMSNorm, rotary, GQA attention with optional QK-norm, SwiGLU,
 * tied/untied embeddings, CE + z-loss), forward and backward written out.
 * Parameters live in one flat fp32 master buffer and one flat fp32 gradient
 * buffer (for the optimizer and ZeRO-1); a bf16 copy is used for compute.
 *
 * Layout rules
 * - Layers are split evenly over pp stages (n_layers % pp == 0). The first
 *   stage owns model.embed_tokens.weight, the last stage model.norm.weight
 *   and the LM head. With tie_embeddings and pp > 1 the first AND the last
 *   stage each hold a copy of model.embed_tokens.weight (the last stage's
 *   entry has tied_copy = 1): the loop must all-reduce (sum) the gradients
 *   of the two copies between first and last stage before the optimizer
 *   step, so the copies stay identical; checkpoints store only the entry
 *   with tied_copy == 0.
 * - Tensor parallel, Megatron style: q/k/v and MLP gate/up are column
 *   parallel (rows of the HF [out,in] weight split, heads split: n_heads %
 *   tp == 0 and n_kv_heads % tp == 0, d_ff % tp == 0); o_proj and down_proj
 *   are row parallel (columns split) followed by an fp32 all-reduce of the
 *   output over tp_comm. The input gradient of the column-parallel linears
 *   is all-reduced in backward, so replicated parameters (norms,
 *   embedding, LM head) get identical gradients on every TP rank.
 *   Embedding and LM head are replicated over TP (not vocab-parallel).
 * - Activations passed between stages are fp32, B*T*d_model, row-major
 *   [B][T][d]. Inside a stage the residual stream is fp32; matmul inputs
 *   and weights are bf16 under LLMT_BF16 with fp32 accumulation. */
#ifndef LLMT_MODEL_H
#define LLMT_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "model_config.h"
#include "comm/comm.h"

typedef enum { LLMT_FP32 = 0, LLMT_BF16 = 1 } llmt_prec;


typedef struct llmt_par {
	int tp, tp_rank;      /* tensor-parallel size and this rank in it */
	int pp, pp_rank;      /* pipeline stages and this stage */
	llmt_comm *tp_comm;   /* TP group, NULL when tp == 1 */
} llmt_par;

/* One local tensor. The local shard is the logical tensor restricted to
 * [split_off, split_off + split_len) along split_dim (split_dim = -1: the
 * whole tensor, replicated). Local storage is row-major over the local
 * shape (shape with dim split_dim replaced by split_len). */
typedef struct llmt_param_info {
	char name[96];        /* Hugging Face Llama name, e.g.
						   * model.layers.3.self_attn.q_proj.weight */
	int ndim;             /* 1 or 2 */
	int64_t shape[2];     /* logical (full, unsharded) shape, HF order [out,in] */
	int split_dim;        /* -1, 0 or 1 */
	int64_t split_off, split_len;
	size_t offset;        /* first element in the flat buffers */
	size_t numel;         /* local element count */
	int no_decay;         /* 1 for norm weights (no weight decay) */
	int tied_copy;        /* 1: second copy of a tied tensor (see above) */
} llmt_param_info;

typedef struct llmt_model llmt_model;

/* 0 when the layout divides the model; -1 and a reason in err otherwise
 * (the caller exits 64). llmt_model_check_shape asks no communicator (an
 * offline plan: llm-train memory); llmt_model_check_layout also wants the
 * TP communicator a tp > 1 stage is built with. */
int llmt_model_check_shape(const llmt_config *c, const llmt_par *par,
						   char *err, size_t errlen);
int llmt_model_check_layout(const llmt_config *c, const llmt_par *par,
							char *err, size_t errlen);

/* Build this stage/shard for micro-batches of B sequences of T tokens
 * (T <= max_seq) with nslots activation slots (micro-batches in flight;
 * 1F1B needs up to pp). Parameters are initialised deterministically (see
 * llmt_model_init) and the compute copy is synced. NULL with a message on
 * stderr on failure (bad layout, out of memory). */
llmt_model *llmt_model_create(const llmt_config *c, const llmt_par *par,
							  llmt_prec prec, int B, int T, int nslots);
/* The same with activation recomputation: recompute is a mode
 * (llmt_recompute, every layer) or a plan of the mode for the stage's
 * first K layers (model_config.h LLMT_RC_PLAN). */
llmt_model *llmt_model_create_rc(const llmt_config *c, const llmt_par *par, llmt_prec prec,
								 int B, int T, int nslots, int recompute);
/* The same whose fp32 master weights are only flat elements [lo, hi) of
 * the llmt_model_count elements: a DP rank's ZeRO-1 share (llmt_zero1_range),
 * with the compute copies every replica needs whole: the bf16 weights and
 * fp32 copies of the tensors kernels read in fp32 (embedding, norms).
 * Only a bf16 model on the CPU takes a share; otherwise (fp32, where the
 * master is the compute copy; the GPU backend, whose host mirror is
 * whole; lo = 0 and hi >= n) the master is whole: llmt_model_master_range
 * says which. With a share, the optimizer refreshes the compute copies of
 * the other shares from their owners (the weights of llmt_model_compute_bf16
 * and llmt_model_f32_copies) after llmt_model_sync_compute. */
llmt_model *llmt_model_create_share(const llmt_config *c, const llmt_par *par, llmt_prec prec,
									int B, int T, int nslots, int recompute, size_t lo,
									size_t hi);
/* Pure: the flat parameter count of the stage/shard llmt_model_create
 * would build (its llmt_model_nparams), without building it; 0 when out
 * of memory. The layout must pass llmt_model_check_layout. */
size_t llmt_model_count(const llmt_config *c, const llmt_par *par);
/* Pure: the parameter table llmt_model_create would build (malloc'd into
 * *params, free() it) with its count and flat size. 0, or -1 when out of
 * memory. The layout must pass llmt_model_check_layout. */
int llmt_model_table(const llmt_config *c, const llmt_par *par, llmt_param_info **params, int *count,
					 size_t *nflat);
void llmt_model_free(llmt_model *m);

/* Initialise the master weights: each LOGICAL tensor's element i gets a
 * value from (seed, tensor name, i) through a counter-based generator,
 * then the local slice is taken, so every layout starts from the same
 * weights. Linear and embedding weights ~ N(0, init_std), o_proj and
 * down_proj ~ N(0, init_std / sqrt(2 n_layers)), norm weights = 1.
 * Syncs the compute copy and zeroes the gradients. */
void llmt_model_init(llmt_model *m);

/* Parameter table (local tensors, in flat-buffer order). */
const llmt_param_info *llmt_model_params(const llmt_model *m, int *count);
/* The flat buffers: nparams elements each (tensors may be followed by a
 * few padding elements for alignment: they stay 0 in both buffers). */
size_t llmt_model_nparams(const llmt_model *m);
/* 1 when the CPU model's attention is the blocked bf16 kernel (attn.h; it
 * runs on omp_get_max_threads() threads), 0 for oneDNN's full square. */
int llmt_model_blocked_attn(const llmt_model *m);
/* The fp32 master: flat elements [lo, hi) of llmt_model_master_range
 * (master[0] is element lo; whole: 0, nparams). */
float *llmt_model_master(llmt_model *m);
void llmt_model_master_range(const llmt_model *m, size_t *lo, size_t *hi);
float *llmt_model_grads(llmt_model *m);
/* Refresh the compute copy (bf16) from the master weights: call after
 * every optimizer step or any write into the master buffer. With a share:
 * the compute copies of the share's elements only. */
void llmt_model_sync_compute(llmt_model *m);
/* With a share (else NULL, len 0): the bf16 weights (nparams, flat
 * layout); the fp32 copies, the copied tensors' elements packed in flat
 * order (*len of them), the first copied element at or after flat element
 * f being llmt_model_f32_at(m, f) in them (so a flat range [a, b) holds
 * copies [f32_at(a), f32_at(b))). */
uint16_t *llmt_model_compute_bf16(llmt_model *m);
float *llmt_model_f32_copies(llmt_model *m, size_t *len);
size_t llmt_model_f32_at(const llmt_model *m, size_t flat);
/* The weights as every DP replica holds them, nparams fp32 in flat
 * layout: the master when whole; with a share, the fp32 copies and the
 * bf16 weights widened, written into buf (nparams floats, e.g. the
 * gradient buffer between steps). */
const float *llmt_model_replica_weights(llmt_model *m, float *buf);
/* Fault injection: flip bit `bit` (16..31 reach the bf16 copy) of flat
 * element at: in the master when this rank holds it (the compute copies
 * follow), else in its fp32 copy (the bf16 copy follows) or its bf16 copy. */
void llmt_model_flip_bit(llmt_model *m, size_t at, int bit);
/* a share (llmt_model_create_share): flip bit `bit` of the share's first
 * fp32 master element alone (the bf16 weights and fp32 copies keep the
 * old value: a memory fault at rest); *at its flat index */
int llmt_model_flip_master(llmt_model *m, int bit, size_t *at);
/* a share: the bf16 weights of [mlo, mhi) that are not the rounding of
 * their master element, plus the fp32 copies that are not its bits (both
 * follow from the master after every step); 0 without a share */
size_t llmt_model_share_check(const llmt_model *m);
/* Zero the gradients. The first backward after it writes the gradients of
 * the matrix products instead of adding them to the zeros (the same
 * result without reading the buffer), so nothing else may add to the
 * gradients between the two. */
void llmt_model_zero_grad(llmt_model *m);

const llmt_config *llmt_model_config(const llmt_model *m);

/* Forward one micro-batch in slot s (activations kept for backward).
 * First stage reads tokens (B*T int32 in [0,vocab)), other stages act_in
 * (B*T*d fp32). Last stage reads targets (B*T int32; -1: not trained on)
 * and writes *loss_out = the sum over the trained tokens of cross-entropy +
 * z_loss * logsumexp^2, divided by B*T (the mean when all are trained;
 * backward's grad_scale rescales); other stages write
 * act_out (B*T*d fp32). Returns 0, or -1 on a communication failure. */
int llmt_model_forward(llmt_model *m, int s, const int32_t *tokens,
					   const float *act_in, const int32_t *targets,
					   float *act_out, float *loss_out);

/* Packed samples (doc/contracts.md) for the micro-batch the next forward
 * in slot s runs, and its backward: seg[b*T + t] is the sample of token t
 * of sequence b, in runs (a sample's tokens are consecutive); NULL: each
 * sequence is one sample. A token attends only to the earlier tokens of
 * its run, and its rotary position restarts at 0 with each run. Every
 * stage needs it. 0, or -1 with a message when the backend lacks it. */
int llmt_model_set_seg(llmt_model *m, int s, const int32_t *seg);

/* Backward of the micro-batch in slot s, ACCUMULATING into the gradient
 * buffer. Last stage: the gradient of its loss is grad_scale (e.g.
 * 1/micro-batches); other stages read grad_out (dL/d act_out, already
 * scaled; grad_scale unused). Non-first stages write grad_in (dL/d act_in,
 * B*T*d fp32). Returns 0, or -1 on a communication failure. */
int llmt_model_backward(llmt_model *m, int s, const float *grad_out,
						float *grad_in, float grad_scale);

/* Last stage: the logits (B*T*vocab fp32) of the most recent forward (one
 * buffer shared by all slots; s is ignored), for tests and evaluation;
 * NULL on other stages. */
const float *llmt_model_logits(const llmt_model *m, int s);

#endif
