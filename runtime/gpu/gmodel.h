/* gmodel.h: the GPU model: the same stage/shard of the same Llama-family
 * decoder as model.h, with every layer on one CUDA device (gk_*.cu
 * kernels, cuBLASLt products, bf16 storage, fp32 accumulation). The
 * parameter table, initialisation and flat-buffer layout are the CPU
 * model's (a host llmt_model mirror holds them), so checkpoints, the
 * optimizer and the loop see the same buffers: upload the master weights
 * after writing them, download the gradients or the master weights when
 * the host needs them. On the device: fp32 gradients, bf16 compute copy,
 * fp32 copies of the embedding and norm weights (the kernels read those
 * in fp32), and once the device optimizer is used the fp32 master and
 * AdamW state: whole, or with data parallelism only this DP rank's ZeRO-1
 * share (gmodel_shard.c; the gradient buffer is scratch between steps).
 * Tensor parallelism as model.h (Megatron: column-parallel q/k/v and
 * gate/up, row-parallel o_proj and down, embedding and LM head
 * replicated): the sums over the TP group are NCCL all-reduces on the
 * compute stream over par->tp_comm (the model owns that communicator;
 * a one-rank tp_comm takes the same path). Pipeline stages work through
 * the host activation buffers of model.h. */
#ifndef LLMT_GMODEL_H
#define LLMT_GMODEL_H
#include <stddef.h>
#include <stdint.h>
#include "model/model.h"
#include "train/optim.h"

typedef struct llmt_gmodel llmt_gmodel;
struct llmt_nccl;

/* 1 when a CUDA device is usable; otherwise 0 and the reason in why. */
int llmt_gpu_available(char *why, size_t len);

/* Select the device from LLM_TRAIN_GPU / LOCAL_RANK; -1 with a message. */
int llmt_gpu_select(void);

/* As llmt_model_create (prec is bf16) on the current device; collective
 * over par->tp_comm when given (the NCCL communicator of the TP group is
 * created here). */
llmt_gmodel *llmt_gmodel_create(const llmt_config *c, const llmt_par *par, int B, int T,
                                int nslots);
/* The same with activation recomputation (llm-train --recompute, model.h
 * llmt_model_create_rc): attn keeps each layer's q, k, v and recomputes
 * the attention (probabilities or logsumexp, output) before its backward;
 * full keeps each layer's input and recomputes the layer. The recomputed
 * activations are one set for every recomputed layer and slot; the same
 * kernels in the same order, so the same bits as without. rc: a mode (all
 * the stage's layers) or a plan of it for the first K (model_config.h
 * LLMT_RC_PLAN); the other layers keep everything. */
llmt_gmodel *llmt_gmodel_create_rc(const llmt_config *c, const llmt_par *par, int B, int T,
                                   int nslots, int rc);
void llmt_gmodel_free(llmt_gmodel *g);
/* 1 while llmt_gmodel_create builds its host mirror (which must be a CPU
 * model whatever LLM_TRAIN_GPU says). */
int llmt_gmodel_building(void);

/* The host mirror: parameter table, init, host master (whole, made when
 * llmt_model_master first asks, with the init's values; dropped once the
 * device optimizer holds the weights, made again by a download) and
 * gradient buffer (on demand: llmt_gmodel_host_grads; the device
 * optimizer needs none). */
llmt_model *llmt_gmodel_host(llmt_gmodel *g);
/* The host gradient buffer (a host optimizer, tests) made if absent, with
 * the master; both page-locked when possible. 0 or -1 (out of memory). */
int llmt_gmodel_host_grads(llmt_gmodel *g);
/* Free the whole host master (the device optimizer holds the weights);
 * kept with a host gradient buffer. A download makes it again. */
void llmt_gmodel_drop_host_master(llmt_gmodel *g);

/* Host master -> device master (+ bf16 copy). Without a whole fp32 master
 * on the device (before the optimizer's first use, or a ZeRO-1 share) the
 * weights are staged in the gradient buffer, which is zeroed. 0 or -1. */
int llmt_gmodel_upload(llmt_gmodel *g);
/* Device gradients / master -> the host mirror's buffers (a ZeRO-1 share:
 * collective over DP, the gradient buffer used as scratch and zeroed).
 * 0 or -1. */
int llmt_gmodel_download_grads(llmt_gmodel *g);
int llmt_gmodel_download_master(llmt_gmodel *g);
/* The bf16 compute copy (whole on every DP replica) widened into the host
 * mirror's master: the replicated weights for a replica comparison when
 * the fp32 master is a ZeRO-1 share. 0 or -1. */
int llmt_gmodel_download_compute(llmt_gmodel *g);
int llmt_gmodel_zero_grad(llmt_gmodel *g);

/* As llmt_model_forward / llmt_model_backward (host buffers in and out). */
int llmt_gmodel_forward(llmt_gmodel *g, int s, const int32_t *tokens, const float *act_in,
                        const int32_t *targets, float *act_out, float *loss_out);
int llmt_gmodel_backward(llmt_gmodel *g, int s, const float *grad_out, float *grad_in,
                         float grad_scale);
/* As llmt_model_set_seg. 0 or -1. */
int llmt_gmodel_set_seg(llmt_gmodel *g, int s, const int32_t *seg);
/* Logits of the last forward (last stage) into host memory (M*V). */
int llmt_gmodel_logits(llmt_gmodel *g, float *out);

/* Data parallelism with ZeRO-1 on the device: after set_dp, a backward
 * with reduce set (the last micro-batch of a step) reduce-scatters each
 * gradient bucket (host_plan.h: gbucket_shard) over dp on a communication
 * stream as soon as backward has finished it, so communication overlaps
 * the rest of backward; dp_wait waits for it (watchdog). step_dp then
 * computes the gradient norm of this pipeline stage (over DP and TP, each
 * element once: gbucket_norm_ranges; the stages' norms are not combined
 * here), clips (clip <= 0: off), applies AdamW to this rank's blocks (its
 * share of master, m and v: ZeRO-1 in memory) and all-gathers the bf16
 * weights on the communication stream, so every replica holds the same
 * bits; the next forward waits for each bucket before its first layer
 * that reads it. -1 on a communication failure (exit 75). */
int llmt_gmodel_set_dp(llmt_gmodel *g, struct llmt_nccl *dp, size_t bucket_elems);
int llmt_gmodel_backward_dp(llmt_gmodel *g, int s, const float *grad_out, float *grad_in,
                            float grad_scale, int reduce);
int llmt_gmodel_dp_wait(llmt_gmodel *g);
int llmt_gmodel_step_dp(llmt_gmodel *g, double lr, double clip, const llmt_adamw_cfg *cfg, long t,
                        double *norm);

/* Sum of squares of this rank's device gradients (fixed order, double):
 * the whole flat buffer, so with tp > 1 replicated tensors are in every TP
 * rank's sum (step_dp's norm counts each element once). */
int llmt_gmodel_grad_sumsq(llmt_gmodel *g, double *out);
/* Fused AdamW on the device over the whole flat buffer (weight decay per
 * tensor as optim.c: not on norm weights), gradient multiplied by gscale
 * (clipping), t 1-based; refreshes the bf16 copy in the same pass. */
int llmt_gmodel_adamw(llmt_gmodel *g, double lr, double gscale, const llmt_adamw_cfg *cfg,
                      long t);
/* The same over the flat range [lo, hi) only. */
int llmt_gmodel_adamw_range(llmt_gmodel *g, size_t lo, size_t hi, double lr, double gscale,
                            const llmt_adamw_cfg *cfg, long t);

/* Checkpoint snapshot: copy the device master into pinned host memory on a
 * copy stream (after the work queued so far) while training goes on;
 * snapshot_wait returns that buffer (n floats) once complete, NULL on error. */
int llmt_gmodel_snapshot_start(llmt_gmodel *g);
const float *llmt_gmodel_snapshot_wait(llmt_gmodel *g);

/* Attention is fused (dev_flash.cu) unless LLM_TRAIN_GPU_ATTN=chunked at
 * creation or the head dim is not one the kernel is built for
 * (host_plan.h gattn_fused). Chunked attention takes query rows C at a
 * time (default host_plan.h's gattn_chunk of T); a shorter C that divides
 * T may be set (tests). 0, or -1 when C does not fit or the model runs
 * the fused attention. */
int llmt_gmodel_set_attn_chunk(llmt_gmodel *g, int C);
/* 1 when the fused attention's forward runs on mma.sync (head dims 64
 * and 128, LLM_TRAIN_GPU_FLASH not wmma, the device's self-check passed:
 * dev_flash_mma.cu), else 0 (wmma, or attention not fused) */
int llmt_gmodel_flash_mma(const llmt_gmodel *g);

/* Wait for all queued work (under the NCCL watchdog when the model has a
 * TP communicator); 0 or -1 (CUDA or NCCL error on stderr). */
int llmt_gmodel_sync(llmt_gmodel *g);

#endif
