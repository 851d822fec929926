/* bridge.h: how the model API of model.h hands a model to the GPU
 * backend, so the training loop, pipeline, optimizer and checkpoints run
 * unchanged on a GPU. llmt_model_create asks llmt_dev_create first; a model
 * the GPU backend built is the host mirror (parameter table; a host master
 * and gradient buffer only when asked for: gmodel.h) carrying a table of
 * device operations that model.c
 * and model_step.c call instead of the CPU code. In training the device
 * holds the authoritative weights and optimizer state (llmt_dev_optim);
 * outside it (tests, tools) the host master can drive the device:
 * llmt_model_sync_compute uploads it, llmt_model_grads fetches the device
 * gradients after a backward. */
#ifndef LLMT_GBRIDGE_H
#define LLMT_GBRIDGE_H
#include <stddef.h>
#include <stdint.h>
#include "model/model.h"
#include "train/optim.h"

struct llmt_devops {
	int (*forward)(llmt_model *m, int s, const int32_t *tokens, const float *act_in,
				   const int32_t *targets, float *act_out, float *loss_out);
	int (*backward)(llmt_model *m, int s, const float *grad_out, float *grad_in,
					float grad_scale);
	void (*sync_compute)(llmt_model *m);
	void (*zero_grad)(llmt_model *m);
	void (*fetch_grads)(llmt_model *m);
	const float *(*logits)(llmt_model *m, int s);
	void (*destroy)(llmt_model *m);
	/* packed samples (model.h's llmt_model_set_seg); NULL: not supported */
	int (*set_seg)(llmt_model *m, int s, const int32_t *seg);
};

/* Pure: does this process want the GPU backend? LLM_TRAIN_GPU (the local
 * GPU index the plugin sets, -1 or absent on nodes without one) >= 0 in a
 * build with CUDA. 1 yes, 0 no, -1 with a reason in err for a bad value. */
int llmt_dev_wanted(const char *llm_train_gpu, int have_cuda, char *err, size_t errlen);

/* 1 when the GPU backend takes this model (rc: llm-train --recompute, a
 * mode or a plan, model_config.h LLMT_RC_PLAN;
 * gmodel.h llmt_gmodel_create_rc): *out is its model, or NULL
 * after a message on stderr (no device, fp32, out of memory);
 * 0 when the model is built on the CPU. */
int llmt_dev_create(const llmt_config *c, const llmt_par *par, llmt_prec prec, int B, int T,
					int nslots, int rc, llmt_model **out);

/* 1 when m is a model the GPU backend built (its buffers on a device). */
int llmt_dev_model(const llmt_model *m);

/* The training loop's optimizer for a model on a device (optim.h
 * interface; bridge_optim.c): gradients reduced over DP with NCCL during
 * backward, norm, clipping and AdamW on the device, weights all-gathered;
 * no per-step transfer to the host. Collective over e's groups. 1 when m
 * is on a device (*out: the optimizer, or NULL after a message), 0 when it
 * is not (the caller uses llmt_trainopt_host). */
int llmt_dev_optim(llmt_model *m, const llmt_opt_env *e, llmt_trainopt **out);

#endif
