/* small_cfg.h: the small model configuration the GPU emulation tests
 * (test_gpu_emu, test_gpu_tp) run: 2 layers of 32, 4 heads; gqa: 2 KV
 * heads, QK-norm, z-loss and an untied head, else tied and plain. */
#ifndef LLMT_TESTS_SMALL_CFG_H
#define LLMT_TESTS_SMALL_CFG_H
#include "model/model.h"     /* llmt_config (runtime/model/model_config.h) */

static inline void small_cfg(llmt_config *c, int gqa)
{
	llmt_config_defaults(c);
	c->vocab_size = 64;
	c->d_model = 32;
	c->n_layers = 2;
	c->n_heads = 4;
	c->n_kv_heads = gqa ? 2 : 4;
	c->d_ff = 48;
	c->max_seq = 16;
	c->qk_norm = gqa;
	c->tie_embeddings = !gqa;
	c->z_loss = gqa ? 1e-3 : 0;
	c->init_std = 0.1;
	c->seed = 7;
}

#endif
