/* bridge.c: llmt_dev_create of a build with CUDA: the GPU model behind
 * the model.h API (see bridge.h; its training optimizer: bridge_optim.c).
 * CUDA failures inside operations that model.h declares void (upload,
 * zero) end the process with the transient exit code: a failed GPU is a
 * reason to restart elsewhere. */
#include <stdio.h>
#include <stdlib.h>
#include "llmt/exitcodes.h"
#include "bridge_int.h"
#include "gmodel_impl.h"
#include "llmt/env.h"

typedef llmt_bridge bridge;

static bridge *ctx(llmt_model *m) { return (bridge *)m->devctx; }

static void fatal(const char *what)
{
	fprintf(stderr, "llm-train: GPU %s failed: exiting for a restart\n", what);
	exit(LLMT_EXIT_TRANSIENT);
}

static int b_forward(llmt_model *m, int s, const int32_t *tokens, const float *act_in,
					 const int32_t *targets, float *act_out, float *loss_out)
{
	return llmt_gmodel_forward(ctx(m)->g, s, tokens, act_in, targets, act_out, loss_out);
}

static int b_backward(llmt_model *m, int s, const float *grad_out, float *grad_in,
					  float grad_scale)
{
	bridge *b = ctx(m);
	b->grads_dirty = 1;
	/* the step's last micro-batch launches the DP reduction (gmodel.h) */
	int reduce = b->A > 0 && ++b->nback == b->A;
	return llmt_gmodel_backward_dp(b->g, s, grad_out, grad_in, grad_scale, reduce);
}

static void b_sync_compute(llmt_model *m)
{
	if (llmt_gmodel_upload(ctx(m)->g))
		fatal("weight upload");
}

static void b_zero_grad(llmt_model *m)
{
	if (llmt_gmodel_zero_grad(ctx(m)->g))
		fatal("gradient reset");
	ctx(m)->grads_dirty = 1;    /* zeros on the device, not on the host */
	ctx(m)->nback = 0;
}

static void b_fetch_grads(llmt_model *m)
{
	if (llmt_gmodel_host_grads(ctx(m)->g))
		fatal("host gradient buffer");
	if (!ctx(m)->grads_dirty)
		return;
	if (llmt_gmodel_download_grads(ctx(m)->g))
		fatal("gradient download");
	ctx(m)->grads_dirty = 0;
}

static const float *b_logits(llmt_model *m, int s)
{
	(void)s;
	bridge *b = ctx(m);
	if (!m->last)
		return NULL;
	if (!b->logits && !(b->logits = malloc(sizeof(float) * (size_t)m->M * m->c.vocab_size)))
		return NULL;
	return llmt_gmodel_logits(b->g, b->logits) ? NULL : b->logits;
}

static void b_destroy(llmt_model *m)
{
	bridge *b = ctx(m);
	m->dev = NULL;          /* llmt_gmodel_free frees the mirror on the CPU path */
	free(b->logits);
	llmt_gmodel_free(b->g);
	free(b);
}

static int b_set_seg(llmt_model *m, int s, const int32_t *seg)
{
	return llmt_gmodel_set_seg(ctx(m)->g, s, seg);
}

static const struct llmt_devops ops = {
	b_forward, b_backward, b_sync_compute, b_zero_grad, b_fetch_grads, b_logits, b_destroy,
	b_set_seg,
};

int llmt_dev_create(const llmt_config *c, const llmt_par *par, llmt_prec prec, int B, int T,
					int nslots, int rc, llmt_model **out)
{
	char err[200];
	if (llmt_gmodel_building())
		return 0;
	int want = llmt_dev_wanted(getenv(LLMT_ENV_GPU), 1, err, sizeof err);
	if (want == 0)
		return 0;
	*out = NULL;
	if (want < 0) {
		fprintf(stderr, "llm-train: %s\n", err);
		return 1;
	}
	if (prec != LLMT_BF16) {
		fprintf(stderr, "llm-train: the GPU backend computes in bf16 (fp32 master weights): "
						"use --precision bf16 or LLM_TRAIN_GPU=-1 for the CPU\n");
		return 1;
	}
	if (llmt_gpu_select() < 0)
		return 1;
	bridge *b = calloc(1, sizeof *b);
	if (!b) {
		fprintf(stderr, "llm-train: out of memory\n");
		return 1;
	}
	b->g = llmt_gmodel_create_rc(c, par, B, T, nslots, rc);
	if (!b->g) {
		free(b);
		return 1;
	}
	llmt_model *m = llmt_gmodel_host(b->g);
	m->dev = &ops;
	m->devctx = b;
	*out = m;
	return 1;
}

int llmt_dev_model(const llmt_model *m)
{
	return m->dev == &ops;
}
