/* test_parallel.c: the layout from the environment's values (defaults,
 * dp=auto, Megatron order, every bad value named) and the 1F1B order. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "memory/memest.h"
#include "comm/parallel.h"
#include "train/pipeline.h"

static void test_defaults(void **st)
{
	llmt_grid l;
	char err[256];
	(void)st;

	assert_int_equal(llmt_grid_from_values(&l, 4, 2, NULL, NULL, NULL, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(l.tp, 1);
	assert_int_equal(l.pp, 1);
	assert_int_equal(l.dp, 4);
	assert_int_equal(l.rank, 2);
	assert_int_equal(l.dp_rank, 2);
	assert_int_equal(llmt_grid_from_values(&l, 8, 0, "2", "2", "auto", NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(l.dp, 2);
}

/* elastic shrink: batch options given for dp=4 (LLM_TRAIN_BATCH_DP) keep
 * the global batch on a smaller dp by more accumulation, or refuse */
static void test_batch_accum(void **st)
{
	char err[256];
	int A = 0;
	(void)st;

	assert_int_equal(llmt_grid_batch_accum(3, NULL, 4, &A, err, sizeof(err)), 0);
	assert_int_equal(A, 3);
	assert_int_equal(llmt_grid_batch_accum(3, "", 4, &A, err, sizeof(err)), 0);
	assert_int_equal(A, 3);
	assert_int_equal(llmt_grid_batch_accum(3, "4", 3, &A, err, sizeof(err)), 0);
	assert_int_equal(A, 4);
	assert_int_equal(llmt_grid_batch_accum(1, "4", 2, &A, err, sizeof(err)), 0);
	assert_int_equal(A, 2);
	assert_int_equal(llmt_grid_batch_accum(1, "4", 3, &A, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "dp=3"));
	assert_int_equal(llmt_grid_batch_accum(1, "x4", 2, &A, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "LLM_TRAIN_BATCH_DP=x4"));
}

static void test_order(void **st)
{
	llmt_grid l;
	char err[256];
	(void)st;

	/* RANK decides, not the backend rank; rank = tp + dp*TP + pp*TP*DP */
	assert_int_equal(llmt_grid_from_values(&l, 8, 0, "2", "2", "2", "7", "8", err, sizeof(err)), 0);
	assert_int_equal(l.rank, 7);
	assert_int_equal(l.tp_rank, 1);
	assert_int_equal(l.dp_rank, 1);
	assert_int_equal(l.pp_rank, 1);
	assert_int_equal(llmt_grid_from_values(&l, 8, 0, "2", "2", "2", "5", NULL, err, sizeof(err)), 0);
	assert_int_equal(l.tp_rank, 1);
	assert_int_equal(l.dp_rank, 0);
	assert_int_equal(l.pp_rank, 1);
	for (int r = 0; r < 8; r++) {
		char s[8];
		snprintf(s, sizeof(s), "%d", r);
		assert_int_equal(llmt_grid_from_values(&l, 8, 0, "2", "2", "2", s, NULL, err, sizeof(err)), 0);
		assert_int_equal(llmt_grid_rank(&l, l.tp_rank, l.pp_rank, l.dp_rank), r);
	}
}

static void test_bad(void **st)
{
	llmt_grid l;
	char err[256];
	(void)st;

	assert_int_equal(llmt_grid_from_values(&l, 8, 0, "2", "2", "4", NULL, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "tp=2 pp=2 dp=4 needs 16 ranks"));
	assert_int_equal(llmt_grid_from_values(&l, 6, 0, "4", NULL, NULL, NULL, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "does not divide"));
	assert_int_equal(llmt_grid_from_values(&l, 4, 0, "two", NULL, NULL, NULL, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "LLM_TRAIN_TP=two"));
	assert_int_equal(llmt_grid_from_values(&l, 4, 0, "0", NULL, NULL, NULL, NULL, err, sizeof(err)), -1);
	assert_int_equal(llmt_grid_from_values(&l, 4, 0, NULL, NULL, NULL, "4", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "RANK=4"));
	assert_int_equal(llmt_grid_from_values(&l, 4, 0, NULL, NULL, NULL, NULL, "8", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "WORLD_SIZE=8"));
}

static void test_coords(void **st)
{
	llmt_grid l;
	char err[256];
	(void)st;

	assert_int_equal(llmt_grid_from_values(&l, 8, 0, "2", "2", "2", "6", NULL, err, sizeof(err)), 0);
	/* rank 6 = tp 0 + dp 1*2 + pp 1*4 */
	assert_int_equal(llmt_grid_check_coords(&l, "0", "1", "1", err, sizeof(err)), 0);
	assert_int_equal(llmt_grid_check_coords(&l, NULL, "", NULL, err, sizeof(err)), 0);
	assert_int_equal(llmt_grid_check_coords(&l, "0", "1", "0", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "LLM_TRAIN_DP_RANK=0"));
	assert_int_equal(llmt_grid_check_coords(&l, "x", NULL, NULL, err, sizeof(err)), -1);
}

static void test_1f1b(void **st)
{
	char b[64];
	(void)st;

	llmt_1f1b_order(1, 0, 3, b);
	assert_string_equal(b, "FBFBFB");          /* pp=1: gradient accumulation */
	llmt_1f1b_order(2, 0, 4, b);
	assert_string_equal(b, "FFBFBFBB");
	llmt_1f1b_order(2, 1, 4, b);
	assert_string_equal(b, "FBFBFBFB");
	llmt_1f1b_order(4, 0, 6, b);
	assert_string_equal(b, "FFFFBFBFBBBB");   /* 3 warmup, 3 steady, 3 cooldown */
	llmt_1f1b_order(4, 0, 2, b);
	assert_string_equal(b, "FFBB");            /* fewer micro-batches than stages */
	assert_int_equal(llmt_pipeline_slots(4, 2), 2);
	assert_int_equal(llmt_pipeline_slots(2, 8), 2);
}

static void test_memest(void **st)
{
	llmt_config c;
	llmt_grid l1, l4, p2;
	llmt_memest a, b, e;
	char err[256];
	(void)st;

	llmt_config_defaults(&c);
	c.vocab_size = 256, c.d_model = 64, c.n_layers = 2, c.n_heads = 4, c.d_ff = 128, c.max_seq = 64;
	c.n_kv_heads = 4;
	assert_int_equal(llmt_grid_from_values(&l1, 1, 0, NULL, NULL, NULL, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(llmt_grid_from_values(&l4, 4, 0, NULL, NULL, NULL, NULL, NULL, err, sizeof(err)), 0);
	/* state: 10 bytes a parameter in bf16 (fp32 master + grads + bf16 copy);
	 * AdamW m+v 8 bytes, sharded 1/dp with gradient shard and staging */
	llmt_memory_estimate(&c, &l1, 1000, 2, 16, 1, 1, 0, 0, 0, &a);
	assert_float_equal(a.params, 10000, 0);
	assert_float_equal(a.optimizer, 8000, 0);
	assert_float_equal(a.snapshot, 0, 0);
	llmt_memory_estimate(&c, &l4, 1000, 2, 16, 1, 1, 1, 0, 0, &b);
	/* bf16 at dp > 1: this rank's share of the fp32 master (model.h
	 * llmt_model_create_share), so no all-gather staging: m, v and the
	 * reduced gradient */
	assert_float_equal(b.optimizer, 1000.0 / 4 * 12, 0);
	assert_float_equal(b.snapshot, 1000.0 / 4 * 12, 0);
	assert_float_equal(b.comm, 4000, 0);                     /* reduce-scatter scratch */
	assert_float_equal(a.comm, 0, 0);
	assert_float_equal(b.activations, a.activations, 0);   /* DP does not cut activations */
	/* residual streams alone: (layers+1) x B*T*d fp32 per slot, a lower bound */
	assert_true(a.activations > 3 * 2 * 16 * 64 * 4);
	/* 1F1B on the first of 2 stages keeps 2 micro-batches of its 1 layer */
	assert_int_equal(llmt_grid_from_values(&p2, 2, 0, NULL, "2", NULL, NULL, NULL, err, sizeof(err)), 0);
	llmt_memory_estimate(&c, &p2, 1000, 2, 16, 4, 1, 0, 0, 0, &e);
	assert_true(e.pipeline > 0);
	assert_true(e.activations > a.activations * 0.9 && e.activations < a.activations * 1.1);
	assert_float_equal(e.total, e.params + e.optimizer + e.activations + e.scratch + e.pipeline + e.comm + e.snapshot, 1e-6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_batch_accum),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_coords),
		cmocka_unit_test(test_1f1b),
		cmocka_unit_test(test_memest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
