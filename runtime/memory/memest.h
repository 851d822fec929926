/* memest.h: the analytic memory estimate of one rank (bytes): parameter
 * state, ZeRO-1 optimizer shard, the activations 1F1B keeps in flight,
 * kernel scratch, pipeline buffers, communication scratch and the
 * checkpoint snapshot; the device memory of a GPU model; and the
 * measured peak (VmHWM) to hold it against. Library and runtime overhead
 * (MPI, oneDNN, code) is not in the estimate. */
#ifndef LLMT_MEMEST_H
#define LLMT_MEMEST_H
#include <stddef.h>
#include "model/model_config.h"
#include "comm/parallel.h"

typedef struct {
	double params;       /* fp32 master (bf16, dp > 1: the ZeRO-1 share and fp32
	                      * copies of embedding and norms) + fp32 grads + bf16 copy */
	double optimizer;    /* AdamW m, v, reduced gradient shard, staging */
	double activations;  /* kept for backward, all slots in flight */
	double scratch;      /* per-layer work buffers shared by slots */
	double pipeline;     /* stage-to-stage buffers */
	double comm;         /* reduce-scatter receive scratch of comm_mpi.c (dp > 1) */
	double snapshot;     /* host copy of an asynchronous checkpoint */
	double total;
} llmt_memest;

/* Pure. nflat: this rank's flat parameter count (llmt_model_nparams).
 * attn_nt: 0 when the model runs the oneDNN full-square attention (fp32,
 * LLMT_NO_BF16, head_dim or CPU unsuited), else the thread count of the
 * blocked bf16 kernel (attn.h: P and dS rows padded to 64, per-thread
 * scratch); llmt_model_blocked_attn says which. recompute: a mode or a
 * plan (model_config.h LLMT_RC_PLAN). */
void llmt_memory_estimate(const llmt_config *c, const llmt_grid *l, size_t nflat,
	int B, int T, int A, int bf16, int ckpt, int attn_nt, int recompute, llmt_memest *e);

/* Device memory of a rank whose model is on a GPU (runtime/gpu/gmodel.c
 * alloc_dev, gmodel_opt.c): bf16 compute, the fused attention (no score
 * buffers) or, with LLM_TRAIN_GPU_ATTN=chunked or a head dim the fused
 * kernel lacks, causal query chunks (host_plan.h gattn_fused,
 * gattn_chunk): the estimate reads that variable as the model does. Host
 * memory is not counted. */
typedef struct {
	double params;       /* fp32 grads + bf16 copy, rotary tables, fp32 copies of
	                      * the embedding and norm weights */
	double optimizer;    /* ZeRO-1 share of the fp32 master and AdamW m, v; norm scratch */
	double activations;  /* kept for backward, all slots in flight */
	double scratch;      /* per-layer work buffers, column-sum partials */
	double workspace;    /* the cuBLASLt workspace (gmm_create) */
	double total;
} llmt_memest_gpu;

/* Pure but for LLM_TRAIN_GPU_ATTN (fused or chunked attention). devopt:
 * the training loop's optimizer runs on the device (llmt_dev_optim: fp32
 * master, m and v of this DP rank's ZeRO-1 share; without it no fp32
 * master is on the device). recompute: a mode or plan (what backward
 * recomputes is kept once, not per recomputed layer and slot: gpu/act_plan.c). */
void llmt_memory_estimate_gpu(const llmt_config *c, const llmt_grid *l, size_t nflat,
	int B, int T, int A, int devopt, int recompute, llmt_memest_gpu *e);
/* Host memory of a rank whose model is on a GPU (gpu/bridge*.c,
 * gmodel*.c): the host mirror (the CPU model built for one token, without
 * its bf16 copy; with the host optimizer also the fp32 master, gradients
 * and AdamW state; with the device optimizer no whole fp32 master: the
 * init goes to the device a piece at a time), the pinned checkpoint
 * snapshot (the checkpoint writer writes it in place), the master and
 * AdamW state read on a resume (this rank's ZeRO-1 range; freed before
 * the first snapshot) and the staging buffers. Runtime overhead (CUDA, MPI, NCCL) is not counted. */
typedef struct {
	double mirror;       /* the host model kept: parameter table, one-token buffers
	                      * (host optimizer: master, gradients, AdamW state) */
	double init;         /* device optimizer: the host buffer the init's weights
	                      * go to the device through (16 MiB at most) */
	double snapshot;     /* pinned: this rank's m and v share, the master whole
	                      * (dp = 1) or the part this DP rank writes */
	double writer;       /* the writer's copy of the share: host optimizer only */
	double load;         /* a resume's master, m and v of this rank's ZeRO-1 range
	                      * (dp = 1: whole), freed before a snapshot */
	double staging;      /* tokens, pinned loss row, tied embedding copy */
	double total;        /* mirror + staging + the largest of init, load,
	                      * snapshot + writer: the peak */
} llmt_memest_host;

/* Pure. ckpt: checkpoints are written (the snapshot is allocated at the
 * first one); resume: the run starts from a checkpoint with its state.
 * devopt as above; without it the host optimizer's terms of
 * llmt_memory_estimate are counted instead (no pinned snapshot). */
void llmt_memory_estimate_gpu_host(const llmt_config *c, const llmt_grid *l, size_t nflat,
	int B, int T, int devopt, int ckpt, int resume, llmt_memest_host *e);

/* Peak resident set of this process (VmHWM) in bytes; 0 if unknown. */
double llmt_memory_peak(void);

#endif
