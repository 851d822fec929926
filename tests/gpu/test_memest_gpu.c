/* test_memest_gpu.c: memest.c's device-memory estimate against the bytes
 * the emulated CUDA runtime (cuda_emu.c) hands out: a GPU model built
 * through llmt_model_create (LLM_TRAIN_GPU=0) must allocate exactly the
 * estimate's params + activations + scratch + the cuBLASLt workspace
 * (blas.c runs over the emulated cuBLASLt), and the device optimizer
 * (llmt_dev_optim) exactly its optimizer term. One process: tp = dp = 1, whole model
 * and both stages of pp = 2, tied and untied, QK-norm and GQA, one
 * attention chunk (T <= 128) and several (T = 256, 192), fused attention
 * and chunked (LLM_TRAIN_GPU_ATTN), each without recomputation and with
 * --recompute attn and full (llmt_model_create_rc: less device memory,
 * and exactly the estimate's), also in only the first K layers
 * (--recompute-layers: between none and all). The host
 * estimate's pinned part (loss row, checkpoint snapshot) against the
 * emulation's cudaMallocHost bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu/bridge.h"
#include "memory/memest.h"
#include "model/model.h"
#include "train/optim.h"
#include "comm/parallel.h"
#include "train/pipeline.h"
#include "small_cfg.h"

size_t llmt_emu_dev_bytes(size_t *peak);   /* cuda_emu.c */
size_t llmt_emu_pinned_bytes(void);

static int nlayers; /* the model's layers when set, else small_cfg's */

static double check_rc(int gqa, int tied, int pp, int pp_rank, int A, int B, int T, int rc)
{
	llmt_config c;
	llmt_grid l;
	llmt_memest_gpu e;
	char err[256], pps[8];

	small_cfg(&c, gqa);
	if (nlayers)
		c.n_layers = nlayers;
	c.tie_embeddings = tied;
	c.max_seq = 256;
	snprintf(pps, sizeof(pps), "%d", pp);
	assert_int_equal(llmt_grid_from_values(&l, pp, pp_rank, NULL, pps, NULL, NULL, NULL, err,
		sizeof(err)), 0);
	llmt_par par = { 1, 0, pp, pp_rank, NULL };
	size_t before = llmt_emu_dev_bytes(NULL), pin0 = llmt_emu_pinned_bytes();
	setenv("LLM_TRAIN_GPU", "0", 1);
	llmt_model *m = llmt_model_create_rc(&c, &par, LLMT_BF16, B, T, llmt_pipeline_slots(pp, A),
		rc);
	unsetenv("LLM_TRAIN_GPU");
	assert_non_null(m);
	assert_true(llmt_dev_model(m));
	assert_int_equal(llmt_emu_pinned_bytes() - pin0, (size_t)B * T * 4);   /* the loss row */
	double model = (double)(llmt_emu_dev_bytes(NULL) - before);
	llmt_adamw_cfg ac = { 0.9, 0.95, 1e-8, 0.1, 0 };
	llmt_opt_env oe = { &ac, A, 0, pp, pp_rank, tied && pp > 1, NULL, NULL, NULL };
	llmt_trainopt *o = NULL;
	assert_int_equal(llmt_dev_optim(m, &oe, &o), 1);
	assert_non_null(o);
	double opt = (double)(llmt_emu_dev_bytes(NULL) - before) - model;
	llmt_memory_estimate_gpu(&c, &l, llmt_model_nparams(m), B, T, A, 1, rc, &e);
	printf("gqa=%d tied=%d stage %d/%d A=%d B=%d T=%d recompute %s in %d layers: model %.0f "
		"(estimate %.0f, activations %.0f), optimizer %.0f (estimate %.0f)\n", gqa, tied, pp_rank,
		pp, A, B, T, llmt_recompute_name(llmt_rc_mode(rc)), llmt_rc_layers(rc, c.n_layers / pp), model, e.params + e.activations + e.scratch + e.workspace,
		e.activations, opt, e.optimizer);
	assert_float_equal(model, e.params + e.activations + e.scratch + e.workspace, 0);
	assert_float_equal(opt, e.optimizer, 0);
	assert_float_equal(e.total, e.params + e.optimizer + e.activations + e.scratch + e.workspace, 1);
	/* host side: the pinned checkpoint snapshot, allocated by the first one */
	llmt_memest_host h;
	llmt_memory_estimate_gpu_host(&c, &l, llmt_model_nparams(m), B, T, 1, 1, 0, &h);
	size_t pin1 = llmt_emu_pinned_bytes();
	assert_int_equal(o->ops->snapshot(o), 0);
	llmt_opt_state os;
	assert_int_equal(o->ops->saved(o, &os), 0);
	printf("  host: pinned snapshot %zu (estimate %.0f), mirror estimate %.0f, total %.0f\n",
		llmt_emu_pinned_bytes() - pin1, h.snapshot, h.mirror, h.total);
	assert_float_equal((double)(llmt_emu_pinned_bytes() - pin1), h.snapshot, 0);
	assert_float_equal(h.total, h.mirror + h.staging + h.snapshot + h.writer, 1);
	assert_float_equal(h.writer, 0, 0);   /* the writer borrows the pinned snapshot */
	llmt_memory_estimate_gpu_host(&c, &l, llmt_model_nparams(m), B, T, 1, 0, 1, &h);
	assert_float_equal(h.snapshot, 0, 0);
	assert_float_equal(h.load, (double)llmt_model_nparams(m) * 8, 0);
	o->ops->free(o);
	llmt_model_free(m);
	assert_int_equal(llmt_emu_pinned_bytes(), pin0);
	assert_int_equal(llmt_emu_dev_bytes(NULL), before);   /* all given back */
	return model;
}

/* none, attn, full: each exactly its estimate, and each keeps less */
static void check(int gqa, int tied, int pp, int pp_rank, int A, int B, int T)
{
	double none = check_rc(gqa, tied, pp, pp_rank, A, B, T, LLMT_RECOMPUTE_NONE);
	double attn = check_rc(gqa, tied, pp, pp_rank, A, B, T, LLMT_RECOMPUTE_ATTN);
	double full = check_rc(gqa, tied, pp, pp_rank, A, B, T, LLMT_RECOMPUTE_FULL);
	assert_true(attn < none);
	assert_true(full < attn);
}

static void test_estimate(void **st)
{
	(void)st;
	/* the fused attention (the default: no score buffers), then the
	 * chunked one */
	for (int chunked = 0; chunked < 2; chunked++) {
		setenv("LLM_TRAIN_GPU_ATTN", chunked ? "chunked" : "fused", 1);
		printf("%s attention\n", chunked ? "chunked" : "fused");
		check(0, 1, 1, 0, 2, 2, 16);      /* tied, one chunk */
		check(1, 0, 1, 0, 1, 1, 256);     /* QK-norm, GQA, untied, chunks of 128 */
		check(1, 0, 2, 0, 4, 1, 192);     /* first stage, 2 slots, chunks of 64 */
		check(0, 1, 2, 1, 4, 2, 100);     /* last stage with the tied copy */
	}
	unsetenv("LLM_TRAIN_GPU_ATTN");
}

/* 4 layers: attn and full in the first K (2 of 4; 1 of a stage's 2 in two
 * slots) exactly their estimates, strictly between none and all layers
 * (fails where the allocation or the estimate ignores K) */
static void layers_case(int gqa, int pp, int A, int k)
{
	for (int r = LLMT_RECOMPUTE_ATTN; r <= LLMT_RECOMPUTE_FULL; r++) {
		double none = check_rc(gqa, 0, pp, 0, A, 2, 64, LLMT_RECOMPUTE_NONE);
		double all = check_rc(gqa, 0, pp, 0, A, 2, 64, r);
		double some = check_rc(gqa, 0, pp, 0, A, 2, 64, LLMT_RC_PLAN(r, k));
		assert_true(some < none && some > all);
	}
}

static void test_layers(void **st)
{
	(void)st;
	nlayers = 4;
	setenv("LLM_TRAIN_GPU_ATTN", "chunked", 1);
	layers_case(0, 1, 1, 2);
	unsetenv("LLM_TRAIN_GPU_ATTN");
	layers_case(1, 2, 4, 1);
	nlayers = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate),
		cmocka_unit_test(test_layers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
