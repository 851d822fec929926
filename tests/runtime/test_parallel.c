/* test_parallel.c: the layout from the environment's values (defaults,
 * dp=auto, Megatron order, every bad value named) and the 1F1B order. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "parallel.h"
#include "pipeline.h"

static void test_defaults(void **st)
{
	llmt_layout l;
	char err[256];
	(void)st;

	assert_int_equal(llmt_layout_from_values(&l, 4, 2, NULL, NULL, NULL, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(l.tp, 1);
	assert_int_equal(l.pp, 1);
	assert_int_equal(l.dp, 4);
	assert_int_equal(l.rank, 2);
	assert_int_equal(l.dp_rank, 2);
	assert_int_equal(llmt_layout_from_values(&l, 8, 0, "2", "2", "auto", NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(l.dp, 2);
}

static void test_order(void **st)
{
	llmt_layout l;
	char err[256];
	(void)st;

	/* RANK decides, not the backend rank; rank = tp + dp*TP + pp*TP*DP */
	assert_int_equal(llmt_layout_from_values(&l, 8, 0, "2", "2", "2", "7", "8", err, sizeof(err)), 0);
	assert_int_equal(l.rank, 7);
	assert_int_equal(l.tp_rank, 1);
	assert_int_equal(l.dp_rank, 1);
	assert_int_equal(l.pp_rank, 1);
	assert_int_equal(llmt_layout_from_values(&l, 8, 0, "2", "2", "2", "5", NULL, err, sizeof(err)), 0);
	assert_int_equal(l.tp_rank, 1);
	assert_int_equal(l.dp_rank, 0);
	assert_int_equal(l.pp_rank, 1);
	for (int r = 0; r < 8; r++) {
		char s[8];
		snprintf(s, sizeof(s), "%d", r);
		assert_int_equal(llmt_layout_from_values(&l, 8, 0, "2", "2", "2", s, NULL, err, sizeof(err)), 0);
		assert_int_equal(llmt_layout_rank(&l, l.tp_rank, l.pp_rank, l.dp_rank), r);
	}
}

static void test_bad(void **st)
{
	llmt_layout l;
	char err[256];
	(void)st;

	assert_int_equal(llmt_layout_from_values(&l, 8, 0, "2", "2", "4", NULL, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "tp=2 pp=2 dp=4 needs 16 ranks"));
	assert_int_equal(llmt_layout_from_values(&l, 6, 0, "4", NULL, NULL, NULL, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "does not divide"));
	assert_int_equal(llmt_layout_from_values(&l, 4, 0, "two", NULL, NULL, NULL, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "LLM_TRAIN_TP=two"));
	assert_int_equal(llmt_layout_from_values(&l, 4, 0, "0", NULL, NULL, NULL, NULL, err, sizeof(err)), -1);
	assert_int_equal(llmt_layout_from_values(&l, 4, 0, NULL, NULL, NULL, "4", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "RANK=4"));
	assert_int_equal(llmt_layout_from_values(&l, 4, 0, NULL, NULL, NULL, NULL, "8", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "WORLD_SIZE=8"));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_1f1b),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
