/* test_memest.c: memest.c's CPU estimate against what llmt_model_create
 * really allocates (glibc mallinfo2 before and after: the bytes in use),
 * for both attention paths: the blocked bf16 kernel (when this CPU runs
 * it), bf16 on oneDNN's full square (head_dim not a multiple of 16) and
 * fp32; first and last pipeline stage, tied and untied, QK-norm. The
 * model's part of the estimate is params + activations + scratch. */
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
#include "model/model.h"
#include "comm/parallel.h"
#include "train/pipeline.h"

static double in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (double)mi.uordblks + (double)mi.hblkhd;
}

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
	llmt_model *m = llmt_model_create(&c, &par, prec, B, T, slots);
	assert_non_null(m);
	double got = in_use() - before;
	if (T == 8) { /* the warm-up */
		llmt_model_free(m);
		return;
	}
	assert_int_equal(llmt_model_blocked_attn(m), want_blocked);
	llmt_memory_estimate(&c, &l, llmt_model_nparams(m), B, T, A, prec == LLMT_BF16, 0,
		want_blocked ? omp_get_max_threads() : 0, &e);
	double est = e.params + e.activations + e.scratch;
	printf("d=%d h=%d qk=%d tied=%d %s pp=%d/%d A=%d T=%d blocked=%d: allocated %.0f, estimate %.0f, ratio %.5f\n",
		d, h, qk, tied, prec == LLMT_BF16 ? "bf16" : "fp32", pp_rank, pp, A, T, want_blocked,
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
