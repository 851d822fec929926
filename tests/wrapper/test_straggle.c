/* Unit tests of wrapper/straggle.c: a rank over factor x the median of
 * the ranks' compute per step for k steps in a row (reset by a step under
 * it, counted in steps across ticks that skip some), and the replacement's
 * arithmetic (slowdown over the steps left against restart + lost work). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "wrapper/straggle.h"

static struct wr_strag_rank rk[4];
static struct wr_strag sg;

/* one tick: every rank did `steps` more steps of compute c[r] each */
static int tick(long steps, const double *c, double *med, double *ratio)
{
	for (int r = 0; r < 4; r++)
		wr_strag_feed(&sg, r, rk[r].steps + steps, rk[r].compute + c[r] * (double)steps);
	return wr_strag_judge(&sg, med, ratio);
}

static void k_steps(void **st)
{
	(void)st;
	memset(rk, 0, sizeof rk);
	sg = (struct wr_strag){ .n = 4, .r = rk, .factor = 1.5, .k = 5 };
	const double even[4] = { 0.10, 0.11, 0.10, 0.10 }, slow[4] = { 0.10, 0.10, 0.30, 0.10 };
	double med, ratio;
	assert_int_equal(tick(3, even, &med, &ratio), -1);
	for (int i = 0; i < 4; i++)               /* 4 steps over: not yet */
		assert_int_equal(tick(1, slow, &med, &ratio), -1);
	assert_int_equal(tick(1, even, &med, &ratio), -1);   /* back under: starts over */
	for (int i = 0; i < 4; i++)
		assert_int_equal(tick(1, slow, &med, &ratio), -1);
	assert_int_equal(tick(1, slow, &med, &ratio), 2);    /* the 5th in a row */
	assert_true(med > 0.099 && med < 0.101);
	assert_true(ratio > 2.99 && ratio < 3.01);
	assert_int_equal(rk[2].over, 5);

	/* one tick may hold several steps: 5 of them count as 5 */
	memset(rk, 0, sizeof rk);
	assert_int_equal(tick(2, even, &med, &ratio), -1);
	assert_int_equal(tick(5, slow, &med, &ratio), 2);

	/* 1.4x is not over 1.5x; a rank without new steps is not judged */
	memset(rk, 0, sizeof rk);
	const double mild[4] = { 0.10, 0.10, 0.14, 0.10 };
	assert_int_equal(tick(9, mild, &med, &ratio), -1);
	assert_int_equal(rk[2].over, 0);

	/* two ranks with figures: no median to judge by */
	memset(rk, 0, sizeof rk);
	sg.n = 2;
	assert_int_equal(tick(9, slow, &med, &ratio), -1);
	sg.n = 4;
}

static void cost(void **st)
{
	(void)st;
	struct wr_strag_cost c = { .slow_s = 0.3, .median_s = 0.1, .step = 20, .total_steps = 220,
	                           .ckpt_step = 16, .step_s = 0.35, .restart_s = 3.0, .spare = true };
	wr_strag_cost(&c);
	/* 0.2 x 200 = 40 s > 3 + 4 x 0.35 = 4.4 s */
	assert_true(c.slowdown_s > 39.99 && c.slowdown_s < 40.01);
	assert_true(c.lost_s > 1.39 && c.lost_s < 1.41);
	assert_true(c.restart_cost_s > 4.39 && c.restart_cost_s < 4.41);
	assert_true(c.replace);
	assert_non_null(strstr(c.why, "x 200 steps left = 40.0 s > restart 3.0 s + lost work 4 steps"));
	assert_non_null(strstr(c.why, "replace by a spare"));

	c.spare = false;                          /* worth it, but nothing to replace it with */
	wr_strag_cost(&c);
	assert_false(c.replace);
	assert_non_null(strstr(c.why, "no spare"));

	c.spare = true;
	c.total_steps = 30;                       /* 0.2 x 10 = 2 s <= 4.4 s */
	wr_strag_cost(&c);
	assert_false(c.replace);
	assert_non_null(strstr(c.why, "<= restart"));

	c.total_steps = 0;                        /* steps left unknown */
	wr_strag_cost(&c);
	assert_false(c.replace);
	assert_non_null(strstr(c.why, "unknown"));
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(k_steps), cmocka_unit_test(cost) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
