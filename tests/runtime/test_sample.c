/* test_sample.c: the next-token choice of generate (runtime/gen/sample.c):
 * greedy is the argmax (first of equal ones), temperature sampling follows
 * softmax(logits / T), top-p keeps the smallest most-likely set whose mass
 * reaches p and renormalises it, and a seed repeats its draws. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "gen/sample.h"

#define DRAWS 40000

/* frequencies of DRAWS samples of logits log(p) (so T = 1 gives p) */
static void freq(const double *p, int n, double T, double top_p, uint64_t seed, double *f)
{
	float lg[8];
	llmt_sampler s;

	for (int i = 0; i < n; i++) {
		lg[i] = (float)log(p[i]);
		f[i] = 0;
	}
	assert_int_equal(llmt_sampler_init(&s, n, T, top_p, seed), 0);
	for (int k = 0; k < DRAWS; k++)
		f[llmt_sample(&s, lg, n)] += 1.0 / DRAWS;
	llmt_sampler_free(&s);
}

static void test_greedy(void **st)
{
	float lg[5] = { 0.5f, 2.0f, -1.0f, 2.0f, 1.9f };
	llmt_sampler s;
	(void)st;

	assert_int_equal(llmt_argmax(lg, 5), 1);
	assert_int_equal(llmt_sampler_init(&s, 5, 0, 1, 9), 0);
	for (int k = 0; k < 100; k++)
		assert_int_equal(llmt_sample(&s, lg, 5), 1);
	llmt_sampler_free(&s);
}

static void test_temperature(void **st)
{
	const double p[4] = { 0.4, 0.3, 0.2, 0.1 };
	double f[4], z = 0, q[4];
	(void)st;

	freq(p, 4, 1.0, 1.0, 1, f);
	for (int i = 0; i < 4; i++)   /* 4 sigma of a binomial at 40000 draws is < 0.01 */
		assert_true(fabs(f[i] - p[i]) < 0.01);
	freq(p, 4, 0.5, 1.0, 2, f);   /* T = 0.5: p^2 renormalised */
	for (int i = 0; i < 4; i++)
		z += p[i] * p[i];
	for (int i = 0; i < 4; i++) {
		q[i] = p[i] * p[i] / z;
		assert_true(fabs(f[i] - q[i]) < 0.01);
	}
}

static void test_top_p(void **st)
{
	const double p[4] = { 0.2, 0.5, 0.1, 0.2 };
	double f[4];
	(void)st;

	/* 0.5 < 0.6, 0.5 + 0.2 >= 0.6: token 1 and the first 0.2 (token 0) stay */
	freq(p, 4, 1.0, 0.6, 3, f);
	assert_true(fabs(f[1] - 0.5 / 0.7) < 0.01);
	assert_true(fabs(f[0] - 0.2 / 0.7) < 0.01);
	assert_true(f[2] == 0 && f[3] == 0);
	freq(p, 4, 1.0, 0.45, 4, f);  /* mass 0.45 reached by token 1 alone */
	assert_true(f[0] == 0 && f[2] == 0 && f[3] == 0);
	freq(p, 4, 1.0, 1.0, 5, f);   /* top-p 1 keeps every token */
	assert_true(f[2] > 0.08 && f[3] > 0.18);
}

static void test_seed(void **st)
{
	float lg[6] = { 0, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f };
	llmt_sampler a, b, c;
	int same = 1, other = 1;
	(void)st;

	assert_int_equal(llmt_sampler_init(&a, 6, 1, 0.9, 42), 0);
	assert_int_equal(llmt_sampler_init(&b, 6, 1, 0.9, 42), 0);
	assert_int_equal(llmt_sampler_init(&c, 6, 1, 0.9, 43), 0);
	for (int k = 0; k < 64; k++) {
		int x = llmt_sample(&a, lg, 6);
		same &= x == llmt_sample(&b, lg, 6);
		other &= x == llmt_sample(&c, lg, 6);
	}
	assert_true(same);
	assert_false(other);
	llmt_sampler_free(&a);
	llmt_sampler_free(&b);
	llmt_sampler_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_temperature),
		cmocka_unit_test(test_top_p),
		cmocka_unit_test(test_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
