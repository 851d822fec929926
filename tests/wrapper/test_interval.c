/* Unit tests of wrapper/interval.c (Young/Daly) and wrapper/goodput.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wrapper/goodput.h"
#include "wrapper/interval.h"

static void near(double got, double want, double tol)
{
	if (fabs(got - want) > tol)
		fail_msg("got %.6g want %.6g (tol %g)", got, want, tol);
}

/* Expected cost per unit of work of interval T (Daly's model, first order
 * restart=0): (T + delta)/T * exp-term; the optimum must beat neighbours. */
static double waste(double T, double d, double M)
{
	return M * exp(0.0) * (exp((T + d) / M) - 1.0) / T;
}

static void test_interval(void **state)
{
	(void)state;
	/* Young: sqrt(2 * 60 s * 3 h) = 1138.4 s */
	near(wr_young_interval(60, 10800), sqrt(2.0 * 60 * 10800), 1e-9);
	/* Daly is close to Young when delta << M, and optimal for its model. */
	double d = wr_daly_interval(60, 10800);
	near(d, 1138.42 * (1 + sqrt(60.0 / 21600) / 3 + 60.0 / 194400) - 60, 0.05);
	assert_true(waste(d, 60, 10800) < waste(d * 0.8, 60, 10800));
	assert_true(waste(d, 60, 10800) < waste(d * 1.25, 60, 10800));
	near(wr_daly_interval(500, 200), 200, 0);        /* delta >= 2M: M */
	near(wr_daly_interval(0, 200), 0, 0);
	near(wr_young_interval(10, 0), 0, 0);
	near(wr_mtbf_estimate(0, 0, 3600), 3600, 0);
	near(wr_mtbf_estimate(7200, 3, 3600), 2700, 1e-9);
	assert_int_equal(wr_interval_steps(100, 0.3), 333);
	assert_int_equal(wr_interval_steps(0.1, 1), 1);
	assert_int_equal(wr_interval_steps(100, 0), 1);
}

static void test_goodput_clean(void **state)
{
	(void)state;
	struct wr_attempt a = { .t_launch = 0, .t_first_step = 10, .t_end = 110, .resume_step = 0,
	                        .last_step = 90, .step_s = 1.0, .ckpt_s = 5, .cls = WR_DONE };
	struct wr_goodput g;
	wr_goodput(&a, 1, 120, 0, &g);
	near(g.useful_s, 90, 1e-9);
	near(g.lost_s[WR_CAUSE_STARTUP], 10, 1e-9);
	near(g.lost_s[WR_CAUSE_CKPT], 5, 1e-9);
	near(g.lost_s[WR_CAUSE_IDLE], 5 + 10, 1e-9);    /* rest of the attempt + after it */
	near(g.ratio, 0.75, 1e-9);
	assert_int_equal(g.restarts, 0);
	assert_int_equal(g.useful_steps, 90);
}

static void test_goodput_failures(void **state)
{
	(void)state;
	/* Attempt 0 reaches step 50, crashes; checkpoint at 40: 10 steps redone.
	 * Attempt 1 (same run) resumes at 40 after a 4 s gap, preempted at 70,
	 * checkpoint at 70. Attempt 2 (after requeue) finishes at 100. */
	struct wr_attempt a[3] = {
		{ 0, 5, 60, 0, 50, 1.0, 0, WR_TRANSIENT, 0 },
		{ 64, 70, 102, 40, 70, 1.0, 2, WR_PREEMPTED, 0 },
		{ 1000, 1003, 1033, 70, 100, 1.0, 0, WR_DONE, 1 },
	};
	struct wr_goodput g;
	wr_goodput(a, 3, 102 + 33, 0, &g);
	assert_int_equal(g.useful_steps, 100);
	near(g.useful_s, 100, 1e-9);
	near(g.lost_s[WR_CAUSE_STARTUP], 5, 1e-9);
	/* transient: 15 s of attempt 0 not kept (55 - 40) + 4 s gap + 6 s startup of attempt 1 */
	near(g.lost_s[WR_TRANSIENT], 15 + 4 + 6, 1e-9);
	/* preempted: 3 s startup after requeue */
	near(g.lost_s[WR_PREEMPTED], 3, 1e-9);
	near(g.lost_s[WR_CAUSE_CKPT], 2, 1e-9);
	double sum = g.useful_s;
	for (int c = 0; c < WR_NCAUSES; c++)
		sum += g.lost_s[c];
	near(sum, g.allocated_s, 1e-9);
	assert_int_equal(g.restarts, 2);
	assert_string_equal(wr_cause_name(WR_CAUSE_CKPT), "checkpoint");
	assert_string_equal(wr_cause_name(WR_NUMERIC), "numerical");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_goodput_clean),
		cmocka_unit_test(test_goodput_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
