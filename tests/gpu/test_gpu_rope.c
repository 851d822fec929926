/* test_gpu_rope.c: the GPU model with Llama 3.1's rope_scaling (llama3)
 * through the emulation against the CPU model: its rotary tables
 * (gmodel.c, from llmt_rope_inv_freq) had never run with the scaling set.
 * The small config with factor 8, low 1, high 4, theta 500000 and an
 * original context of 64 positions, so that of head_dim 8's four
 * frequencies (wavelengths 6.3, 167, 4443, 1.2e5) the three above 64 are
 * divided by 8: loss, logits and every gradient, of two steps (the same
 * new weights on both between them) with chunked attention (four chunks:
 * the CPU model's arithmetic), GQA and QK-norm, of one step of a tied
 * model in one chunk, of two with the fused attention, at
 * test_gpu_emu_model.c's limits. Red with the scaling dropped on the GPU
 * side (the tables of rope_scaling none): loss 9.0e-4, 1.7e-4 and 9.1e-4
 * relative against 1e-6, 1e-6 and 5e-4. */
#include "test_gpu_emu.h"

enum { B = 2, T = 16, M = B * T };

static void one(int gqa, int fused, int chunk, int steps)
{
	llmt_config c;
	char err[200];
	small_cfg(&c, gqa);
	c.rope_theta = 500000;
	c.rope_scaling = LLMT_ROPE_LLAMA3;
	c.rope_factor = 8;
	c.rope_low_freq_factor = 1;
	c.rope_high_freq_factor = 4;
	c.rope_original_max = 64;
	assert_int_equal(llmt_config_validate_rope(&c, err, sizeof err), 0);
	int V = c.vocab_size;
	llmt_par par = {1, 0, 1, 0, NULL};
	llmt_model *cm = llmt_model_create(&c, &par, LLMT_BF16, B, T, 1);
	setenv("LLM_TRAIN_GPU", "0", 1);   /* the GPU model's host mirror stays on the CPU */
	setenv("LLM_TRAIN_GPU_ATTN", fused ? "fused" : "chunked", 1);
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1);
	unsetenv("LLM_TRAIN_GPU_ATTN");
	unsetenv("LLM_TRAIN_GPU");
	assert_non_null(cm);
	assert_non_null(g);
	if (chunk)
		assert_int_equal(llmt_gmodel_set_attn_chunk(g, chunk), 0);
	llmt_model *h = llmt_gmodel_host(g);
	size_t n = llmt_model_nparams(cm);
	int np;
	const llmt_param_info *pi = llmt_model_params(cm, &np);
	int32_t tok[M], tgt[M];
	for (int i = 0; i < M; i++) {
		tok[i] = (i * 7 + 3) % V;
		tgt[i] = (i * 5 + 1) % V;
	}
	float *lg = malloc((size_t)M * V * 4);
	for (int step = 0; step < steps; step++) {
		float l1 = 0, l2 = 0;
		llmt_model_zero_grad(cm);
		assert_int_equal(llmt_gmodel_zero_grad(g), 0);
		assert_int_equal(llmt_model_forward(cm, 0, tok, NULL, tgt, NULL, &l2), 0);
		assert_int_equal(llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &l1), 0);
		/* test_gpu_emu_model.c's limits, chunked / fused (measured: loss
		 * <= 7.2e-8, logits <= 7.1e-8, gradients <= 1.1e-5 / loss 2.3e-5,
		 * logits 6.9e-3) */
		NEAR(fabs(l1 - l2) / l2, fused ? 5e-4 : 1e-6);
		assert_int_equal(llmt_gmodel_logits(g, lg), 0);
		NEAR(relerr(lg, llmt_model_logits(cm, 0), (size_t)M * V), fused ? 2e-2 : 2e-6);
		assert_int_equal(llmt_model_backward(cm, 0, NULL, NULL, 0.5f), 0);
		assert_int_equal(llmt_gmodel_backward(g, 0, NULL, NULL, 0.5f), 0);
		assert_int_equal(llmt_gmodel_download_grads(g), 0);
		double gw = 0, glim = fused ? 4e-2 : chunk ? 4e-4 : 4e-6;
		for (int t = 0; t < np; t++)
			gw = fmax(gw, relerr(llmt_model_grads(h) + pi[t].offset,
								 llmt_model_grads(cm) + pi[t].offset, pi[t].numel));
		NEAR(gw, glim);
		/* both models take the same new weights (an SGD step of the CPU
		 * gradients) */
		float *w = dup(llmt_model_master(cm), n);
		for (size_t i = 0; i < n; i++)
			w[i] -= 0.05f * llmt_model_grads(cm)[i];
		memcpy(llmt_model_master(cm), w, n * 4);
		llmt_model_sync_compute(cm);
		memcpy(llmt_model_master(h), w, n * 4);
		assert_int_equal(llmt_gmodel_upload(g), 0);
		free(w);
	}
	free(lg);
	llmt_gmodel_free(g);
	llmt_model_free(cm);
}

static void test_chunked_gqa(void **st) { (void)st; one(1, 0, 4, 2); }
static void test_tied(void **st) { (void)st; one(0, 0, 0, 1); }
static void test_fused(void **st) { (void)st; one(1, 1, 0, 2); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunked_gqa),
		cmocka_unit_test(test_tied),
		cmocka_unit_test(test_fused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
