/* test_schedule.c: warmup + cosine LR values and the checkpoint interval
 * parser. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "train/schedule.h"
#include "train/train.h"

static void test_lr(void **st)
{
	llmt_schedule s = { 1e-3, 1e-4, 10, 110 };
	(void)st;

	assert_float_equal(llmt_schedule_lr(&s, 0), 1e-4, 1e-15);      /* 1/10 of lr */
	assert_float_equal(llmt_schedule_lr(&s, 4), 5e-4, 1e-15);
	assert_float_equal(llmt_schedule_lr(&s, 9), 1e-3, 1e-15);      /* warmup ends at lr */
	assert_float_equal(llmt_schedule_lr(&s, 10), 1e-3, 1e-15);     /* cosine starts at lr */
	assert_float_equal(llmt_schedule_lr(&s, 60), 5.5e-4, 1e-12);   /* halfway: (lr+min)/2 */
	assert_float_equal(llmt_schedule_lr(&s, 110), 1e-4, 1e-15);    /* end: min_lr */
	assert_float_equal(llmt_schedule_lr(&s, 500), 1e-4, 1e-15);
	for (long i = 11; i <= 110; i++)
		assert_true(llmt_schedule_lr(&s, i) < llmt_schedule_lr(&s, i - 1));
	s.warmup = 0;
	assert_float_equal(llmt_schedule_lr(&s, 0), 1e-3, 1e-15);
}

static void test_interval(void **st)
{
	llmt_train_opts o;
	(void)st;

	llmt_train_defaults(&o);
	assert_int_equal(llmt_parse_interval("50", &o), 0);
	assert_int_equal(o.ckpt_steps, 50);
	assert_int_equal(llmt_parse_interval("90s", &o), 0);
	assert_int_equal(o.ckpt_steps, 0);
	assert_float_equal(o.ckpt_seconds, 90, 0);
	assert_int_equal(llmt_parse_interval("2m", &o), 0);
	assert_float_equal(o.ckpt_seconds, 120, 0);
	assert_int_equal(llmt_parse_interval("1.5h", &o), 0);
	assert_float_equal(o.ckpt_seconds, 5400, 0);
	assert_int_equal(llmt_parse_interval("auto", &o), 0);
	assert_int_equal(o.ckpt_auto, 1);
	assert_int_equal(llmt_parse_interval("10x", &o), -1);
	assert_int_equal(llmt_parse_interval("1.5", &o), -1);
	assert_int_equal(llmt_parse_interval("-3", &o), -1);
	assert_int_equal(llmt_parse_interval("", &o), -1);
	assert_int_equal(llmt_parse_interval("0s", &o), -1);
}

static void test_auto_interval(void **st)
{
	(void)st;
	assert_float_equal(llmt_auto_interval(0, 0, 14400), 600, 0);            /* nothing measured */
	assert_float_equal(llmt_auto_interval(0.5, 1, 14400), 120, 1e-9);       /* sqrt(2*0.5*14400) */
	assert_float_equal(llmt_auto_interval(0.5, 100, 14400), 200, 1e-9);     /* writes must not queue */
	assert_true(llmt_auto_interval(2, 0, 14400) > llmt_auto_interval(0.5, 0, 14400));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lr),
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_auto_interval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
