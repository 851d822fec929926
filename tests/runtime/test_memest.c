/* test_memest.c: memest.c's CPU estimate against what llmt_model_create
 * really allocates (glibc mallinfo2 before and after: the bytes in use),
 * for both attention paths: the blocked bf16 kernel (when this CPU runs
 * it), bf16 on oneDNN's full square (head_dim not a multiple of 16) and
 * fp32; first and last pipeline stage, tied and untied, QK-norm. The
 * model's part of the estimate is params + activations + scratch; and the
 * same with each activation recomputation mode (--recompute attn, full),
 * in all layers and in the first K (--recompute-layers); and a model holding a DP rank's ZeRO-1 share of the fp32 master. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <malloc.h>
#include <omp.h>
#include <stdio.h>
#include "model/attn.h"
#include "memory/memest.h"
#include "memory/autoplan.h"
#include "model/model.h"
#include "comm/parallel.h"
#include "train/optim.h"
#include "train/pipeline.h"

static double in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (double)mi.uordblks + (double)mi.hblkhd;
}

static int mode; /* the recomputation (mode or plan) of the models check builds */

/* one model: d_model d, heads h, precision, stage pp_rank of pp, A micro-batches */
static void check(int d, int h, int qk, int tied, llmt_prec prec, int pp, int pp_rank, int A,
	int T, int want_blocked)
{
	llmt_config c;
	llmt_grid l;
	llmt_memest e;
	char err[256], pps[8];

	llmt_config_defaults(&c);
	c.vocab_size = 512, c.d_model = d, c.n_layers = 4, c.n_heads = h, c.n_kv_heads = h % 2 ? h : h / 2;
	c.d_ff = 2 * d, c.max_seq = 512, c.qk_norm = qk, c.tie_embeddings = tied;
	snprintf(pps, sizeof(pps), "%d", pp);
	assert_int_equal(llmt_grid_from_values(&l, pp, pp_rank, NULL, pps, NULL, NULL, NULL, err,
		sizeof(err)), 0);
	llmt_par par = { 1, 0, pp, pp_rank, NULL };
	int B = 2, slots = llmt_pipeline_slots(pp, A);
	double before = in_use();
	llmt_model *m = llmt_model_create_rc(&c, &par, prec, B, T, slots, mode);
	assert_non_null(m);
	double got = in_use() - before;
	if (T == 8) { /* the warm-up */
		llmt_model_free(m);
		return;
	}
	assert_int_equal(llmt_model_blocked_attn(m), want_blocked);
	llmt_memory_estimate(&c, &l, llmt_model_nparams(m), B, T, A, prec == LLMT_BF16, 0,
		want_blocked ? omp_get_max_threads() : 0, mode, &e);
	double est = e.params + e.activations + e.scratch;
	printf("recompute %s in %d layers d=%d h=%d qk=%d tied=%d %s pp=%d/%d A=%d T=%d blocked=%d: allocated %.0f, estimate %.0f, ratio %.5f\n",
		llmt_recompute_name(llmt_rc_mode(mode)), llmt_rc_layers(mode, c.n_layers / pp), d, h, qk, tied, prec == LLMT_BF16 ? "bf16" : "fp32", pp_rank, pp, A, T, want_blocked,
		got, est, got / est);
	/* the rest: parameter table, pointer arrays, allocator rounding (pages) */
	assert_true(got >= est && got < est * 1.01);
	llmt_model_free(m);
}

static void test_paths(void **st)
{
	(void)st;
	/* the first model starts the OpenMP threads (their team's memory): off the books */
	check(128, 4, 0, 1, LLMT_FP32, 1, 0, 1, 8, 0);
	check(128, 4, 0, 1, LLMT_FP32, 1, 0, 1, 200, 0);            /* oneDNN, fp32 */
	check(120, 5, 1, 0, LLMT_BF16, 1, 0, 1, 200, 0);            /* head_dim 24: oneDNN */
	if (!attn_ok(32)) {
		printf("note: no AVX-512 BF16 here: the blocked kernel is not checked\n");
		return;
	}
	check(128, 4, 0, 1, LLMT_BF16, 1, 0, 1, 200, 1);            /* T not a multiple of 64 */
	check(128, 4, 1, 0, LLMT_BF16, 2, 0, 4, 256, 1);            /* first stage, 2 slots */
	check(128, 4, 1, 1, LLMT_BF16, 2, 1, 4, 130, 1);            /* last stage, tied copy */
}

/* recomputation keeps less: the estimate follows what is allocated */
static void test_recompute(void **st)
{
	(void)st;
	for (mode = LLMT_RECOMPUTE_ATTN; mode <= LLMT_RECOMPUTE_FULL; mode++)
		test_paths(st);
	mode = LLMT_RECOMPUTE_NONE;
}

/* the first K layers recomputed: the allocation follows the estimate, and
 * the estimate lies between none (K = 0, and K = 1 of one slot: its one
 * shared set is one layer's) and every layer (K = the stage's layers),
 * falling with K (fails where K is ignored) */
static void test_recompute_layers(void **st)
{
	llmt_config c;
	llmt_grid l;
	char err[256];

	llmt_config_defaults(&c);
	c.vocab_size = 512, c.d_model = 128, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2;
	c.d_ff = 256, c.max_seq = 512;
	assert_int_equal(llmt_grid_from_values(&l, 1, 0, NULL, NULL, NULL, NULL, NULL, err,
		sizeof(err)), 0);
	for (int r = LLMT_RECOMPUTE_ATTN; r <= LLMT_RECOMPUTE_FULL; r++) {
		double prev = 0;
		for (int k = 0; k <= 4; k++) {
			llmt_memest e, w;
			llmt_memory_estimate(&c, &l, 1000, 2, 64, 1, 1, 0, 0, LLMT_RC_PLAN(r, k), &e);
			llmt_memory_estimate(&c, &l, 1000, 2, 64, 1, 1, 0, 0, k ? r : LLMT_RECOMPUTE_NONE, &w);
			if (k == 0 || k == 4)
				assert_true(e.activations == w.activations);
			else if (k == 1)
				assert_true(e.activations == prev);
			else
				assert_true(e.activations < prev && e.activations > w.activations);
			prev = e.activations;
		}
	}
	/* attn in 3 (a 2-layer stage: all), full in 1 of the layers */
	mode = LLMT_RC_PLAN(LLMT_RECOMPUTE_ATTN, 3);
	test_paths(st);
	mode = LLMT_RC_PLAN(LLMT_RECOMPUTE_FULL, 1);
	test_paths(st);
	mode = LLMT_RECOMPUTE_NONE;
}

/* ZeRO-1 in memory: a bf16 model holding DP rank r's share of the fp32
 * master (and fp32 copies of the embedding and norms) allocates what the
 * estimate at that dp and rank says, and less than the whole-master model
 * by the master it leaves out (fails on a model that keeps it whole) */
static void share_case(int qk, int tied, int pp, int pp_rank, int dp, int r)
{
	llmt_config c;
	llmt_grid l;
	llmt_memest e;
	char err[256], v[2][8];
	size_t lo, hi;

	llmt_config_defaults(&c);
	c.vocab_size = 512, c.d_model = 128, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2;
	c.d_ff = 256, c.max_seq = 512, c.qk_norm = qk, c.tie_embeddings = tied;
	snprintf(v[0], sizeof(v[0]), "%d", pp);
	snprintf(v[1], sizeof(v[1]), "%d", dp);
	assert_int_equal(llmt_grid_from_values(&l, pp * dp, pp_rank * dp + r, NULL, v[0], v[1], NULL,
		NULL, err, sizeof(err)), 0);
	assert_int_equal(l.dp_rank, r);
	llmt_par par = { 1, 0, pp, pp_rank, NULL };
	size_t n = llmt_model_count(&c, &par);
	llmt_zero1_range(n, dp, r, &lo, &hi);
	double before = in_use();
	llmt_model *m = llmt_model_create_share(&c, &par, LLMT_BF16, 2, 64, 1, LLMT_RECOMPUTE_NONE, lo, hi);
	assert_non_null(m);
	double got = in_use() - before;
	size_t mlo, mhi, nf;
	llmt_model_master_range(m, &mlo, &mhi);
	assert_true(mlo == lo && mhi == hi);
	llmt_model_f32_copies(m, &nf);
	llmt_memory_estimate(&c, &l, n, 2, 64, 1, 1, 0, llmt_model_blocked_attn(m) ? omp_get_max_threads() : 0,
		LLMT_RECOMPUTE_NONE, &e);
	double est = e.params + e.activations + e.scratch;
	llmt_model_free(m);
	before = in_use();
	m = llmt_model_create_rc(&c, &par, LLMT_BF16, 2, 64, 1, LLMT_RECOMPUTE_NONE);
	double whole = in_use() - before;
	llmt_model_free(m);
	double saved = ((double)n - (double)(hi - lo) - (double)nf) * 4;
	printf("share pp=%d/%d dp rank %d/%d qk=%d tied=%d: allocated %.0f, estimate %.0f (ratio %.5f); whole master %.0f: %.0f less, the master left out %.0f\n",
		pp_rank, pp, r, dp, qk, tied, got, est, got / est, whole, whole - got, saved);
	assert_true(got >= est && got < est * 1.01);
	assert_true(whole - got > 0.99 * saved && whole - got < 1.01 * saved);
}

static void test_share(void **st)
{
	(void)st;
	share_case(0, 1, 1, 0, 2, 0);
	share_case(0, 1, 1, 0, 2, 1);
	share_case(1, 0, 2, 0, 3, 2);     /* first stage: the embedding's fp32 copy */
	share_case(1, 1, 2, 1, 4, 1);     /* last stage, tied copy (bf16 only) */
}

/* the planner's analytic count of a stage's parameters is model.c's table */
static void test_stage_params(void **st)
{
	(void)st;
	llmt_config c;
	llmt_config_defaults(&c);
	c.vocab_size = 512, c.d_model = 96, c.n_layers = 4, c.n_heads = 4, c.d_ff = 192, c.max_seq = 64;
	for (int v = 0; v < 4; v++) {
		c.n_kv_heads = v & 1 ? 2 : 4, c.qk_norm = v >> 1 & 1, c.tie_embeddings = v & 1;
		for (int tp = 1; tp <= 2; tp++)
			for (int pp = 1; pp <= 4; pp *= 2)
				for (int s = 0; s < pp; s++) {
					llmt_par par = { tp, 0, pp, s, NULL };
					assert_int_equal(llmt_autoplan_stage_params(&c, tp, pp, s),
						llmt_model_count(&c, &par));
				}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_recompute),
		cmocka_unit_test(test_recompute_layers),
		cmocka_unit_test(test_stage_params),
		cmocka_unit_test(test_share),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
