/* test_gpu_recompute.c: activation recomputation of the GPU model
 * (llm-train --recompute) through the emulation: three training steps of
 * two micro-batches in two slots (packed samples, the device ZeRO-1 step
 * over a one-rank DP group, whose bucketed reduce-scatter runs during
 * backward) with none, attn and full give the same losses, input
 * gradients, gradient norms and weights bit for bit, with the fused
 * attention and the chunked one (four chunks), for a whole model and both
 * stages of pp = 2 (a stage's input and output cross the host); and in
 * only the first K of 4 layers (--recompute-layers: K = 1 and 2, a plan
 * int, model_config.h LLMT_RC_PLAN), which failed before gmodel_act.c and
 * gmodel_step.c honoured K. Fails on the old code: model.c refused
 * --recompute on the GPU backend and gmodel.c had no llmt_gmodel_create_rc. */
#include "test_gpu_emu.h"
#include "gpu/bridge.h"

enum { B = 2, T = 16, M = B * T, STEPS = 3 };

/* what one run leaves: per step the losses and norm, the input gradients
 * of its last micro-batch, and the final weights */
typedef struct {
	float loss[STEPS][2];
	double norm[STEPS];
	float *gin, *w;
	size_t n;
} result;

static int nlayers; /* the model's layers when set, else small_cfg's */

static void train(int gqa, int fused, int pp, int r, int rc, result *out)
{
	llmt_config c;
	memset(out, 0, sizeof *out);    /* no loss before the last stage */
	small_cfg(&c, gqa);
	if (nlayers)
		c.n_layers = nlayers;
	c.max_seq = T;
	int d = c.d_model, V = c.vocab_size, first = r == 0, last = r == pp - 1;
	llmt_par par = {1, 0, pp, r, NULL};
	setenv("LLM_TRAIN_GPU_ATTN", fused ? "fused" : "chunked", 1);
	llmt_gmodel *g = llmt_gmodel_create_rc(&c, &par, B, T, 2, rc);
	unsetenv("LLM_TRAIN_GPU_ATTN");
	assert_non_null(g);
	if (!fused)
		assert_int_equal(llmt_gmodel_set_attn_chunk(g, 4), 0);
	llmt_nccl *dp = llmt_nccl_create(NULL, 0);
	assert_int_equal(llmt_gmodel_set_dp(g, dp, 300), 0);     /* many buckets */
	llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
	int32_t tok[2][M], tgt[2][M], seg[M];
	for (int i = 0; i < M; i++) {
		int t = i % T;
		seg[i] = t < 3 ? 0 : t < 9 ? 1 : 2;
		for (int s = 0; s < 2; s++) {
			tok[s][i] = (i * 7 + 3 + 11 * s) % V;
			tgt[s][i] = i % 5 == 0 ? -1 : (i * 5 + 1 + s) % V;
		}
	}
	rs = 99;      /* the same stage inputs and output gradients every run */
	float *act = rnd((size_t)2 * M * d, 1), *go = rnd((size_t)2 * M * d, 0.01f);
	float *ao = malloc((size_t)M * d * 4);
	size_t n = llmt_model_nparams(llmt_gmodel_host(g));
	out->gin = calloc((size_t)M * d, 4);
	out->w = malloc(n * 4);
	for (int step = 0; step < STEPS; step++) {
		assert_int_equal(llmt_gmodel_zero_grad(g), 0);
		for (int s = 0; s < 2; s++) {
			assert_int_equal(llmt_gmodel_set_seg(g, s, s ? seg : NULL), 0);
			assert_int_equal(llmt_gmodel_forward(g, s, first ? tok[s] : NULL,
												 first ? NULL : act + (size_t)s * M * d,
												 last ? tgt[s] : NULL, last ? NULL : ao,
												 &out->loss[step][s]), 0);
		}
		for (int s = 0; s < 2; s++)
			assert_int_equal(llmt_gmodel_backward_dp(g, s, last ? NULL : go + (size_t)s * M * d,
													 first ? NULL : out->gin, 0.5f, s == 1), 0);
		assert_int_equal(llmt_gmodel_dp_wait(g), 0);
		assert_int_equal(llmt_gmodel_step_dp(g, 1e-2, 1.0, &ac, step + 1, &out->norm[step]), 0);
	}
	assert_int_equal(llmt_gmodel_download_master(g), 0);
	memcpy(out->w, llmt_model_master(llmt_gmodel_host(g)), n * 4);
	llmt_gmodel_free(g);
	llmt_nccl_free(dp);
	free(act); free(go); free(ao);
	out->n = n;
}

/* the plans (modes, or modes in the first K layers) against none, bit for
 * bit (the loss only exists on the last stage, the input gradient only
 * past the first) */
static void same_plans(int gqa, int fused, int pp, int r, const int *plan, int np)
{
	result run[4];
	train(gqa, fused, pp, r, LLMT_RECOMPUTE_NONE, &run[0]);
	for (int i = 0; i < np; i++)
		train(gqa, fused, pp, r, plan[i], &run[i + 1]);
	for (int rc = 1; rc <= np; rc++) {
		const result *a = &run[0], *b = &run[rc];
		printf("gqa=%d %s stage %d/%d, --recompute %s in %d layers vs none: ", gqa,
			   fused ? "fused" : "chunked", r, pp, llmt_recompute_name(llmt_rc_mode(plan[rc - 1])),
			   llmt_rc_layers(plan[rc - 1], (nlayers ? nlayers : 2) / pp));
		assert_int_equal(a->n, b->n);
		assert_memory_equal(a->loss, b->loss, sizeof a->loss);
		assert_memory_equal(a->norm, b->norm, sizeof a->norm);
		assert_memory_equal(a->gin, b->gin, (size_t)M * 32 * 4 /* d_model */);
		assert_memory_equal(a->w, b->w, a->n * 4);
		printf("the same bits (final loss %.6f, norm %.6f)\n", (double)b->loss[STEPS - 1][1],
			   b->norm[STEPS - 1]);
	}
	for (int rc = 0; rc <= np; rc++) {
		free(run[rc].gin);
		free(run[rc].w);
	}
	/* training moved the weights: the comparison is not of untouched ones */
	assert_true(run[0].norm[0] > 0);
}

static void same_bits(int gqa, int fused, int pp, int r)
{
	const int modes[] = { LLMT_RECOMPUTE_ATTN, LLMT_RECOMPUTE_FULL };
	same_plans(gqa, fused, pp, r, modes, 2);
}

/* 4 layers: full in the first 1 and 2 (L/2), attn in 1 (the others keep
 * theirs); and of a 2-layer stage of pp = 2 full in 1 */
static void test_layers(void **st)
{
	(void)st;
	const int plan[] = { LLMT_RC_PLAN(LLMT_RECOMPUTE_FULL, 1), LLMT_RC_PLAN(LLMT_RECOMPUTE_FULL, 2),
						 LLMT_RC_PLAN(LLMT_RECOMPUTE_ATTN, 1) };
	nlayers = 4;
	same_plans(1, 1, 1, 0, plan, 3);
	same_plans(0, 0, 1, 0, plan, 3);
	same_plans(1, 1, 2, 1, plan, 1);
	nlayers = 0;
}

/* GQA with QK-norm, z-loss, untied head; and plain MHA, tied */
static void test_fused(void **st) { (void)st; same_bits(1, 1, 1, 0); }
static void test_chunked(void **st) { (void)st; same_bits(0, 0, 1, 0); }
/* stage inputs from the host, input gradients to it */
static void test_stages(void **st) { (void)st; same_bits(1, 1, 2, 0); same_bits(1, 0, 2, 1); }

/* llm-train's route: model.c builds a GPU model with recomputation (it
 * refused attn and full before) */
static void test_bridge(void **st)
{
	(void)st;
	llmt_config c;
	small_cfg(&c, 0);
	llmt_par par = {1, 0, 1, 0, NULL};
	setenv("LLM_TRAIN_GPU", "0", 1);
	for (int rc = 1; rc < 3; rc++) {
		llmt_model *m = llmt_model_create_rc(&c, &par, LLMT_BF16, 1, 6, 1, (llmt_recompute)rc);
		assert_non_null(m);
		assert_true(llmt_dev_model(m));
		llmt_model_free(m);
	}
	unsetenv("LLM_TRAIN_GPU");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fused),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_stages),
		cmocka_unit_test(test_layers),
		cmocka_unit_test(test_bridge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
