/* test_optim.c: AdamW against hand-computed values (PyTorch's update),
 * weight decay only where asked, ZeRO-1 range math, deterministic sum of
 * squares, clipping, and the single-process reduce/step path. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/optim.h"

static const llmt_adamw_cfg cfg = { 0.9, 0.999, 1e-8, 0.01, 0 };

static void test_adamw_hand(void **st)
{
	/* p=1, g = 0.5, -0.25, 2.0, lr 0.1: worked by hand (t=1: p*(1-lr*wd)
	 * = 0.999, m = 0.05, v = 0.00025, step = lr/(1-b1) = 1, denom =
	 * sqrt(v)/sqrt(1-b2) + eps = 0.5 + 1e-8, p = 0.999 - 0.05/0.5 = 0.899) */
	const float gs[3] = { 0.5f, -0.25f, 2.0f };
	const double want_p[3] = { 0.899000002, 0.8714672987058463, 0.8035310672284472 };
	const double want_m[3] = { 0.05, 0.02, 0.218 };
	const double want_v[3] = { 0.00025, 0.00031225, 0.00431193775 };
	float p = 1, m = 0, v = 0;
	(void)st;

	for (int t = 1; t <= 3; t++) {
		llmt_adamw_update(&p, &gs[t - 1], &m, &v, 1, 0.1, 1.0, &cfg, t, 1);
		assert_float_equal(p, want_p[t - 1], 2e-6);
		assert_float_equal(m, want_m[t - 1], 1e-7);
		assert_float_equal(v, want_v[t - 1], 1e-9);
	}
}

static void test_adamw_nodecay_scale(void **st)
{
	/* no decay: p = 1 - 0.1 * 0.05/(0.5+1e-8); gscale 0.5 on g = 1 is g = 0.5 */
	float p = 1, m = 0, v = 0, g = 1.0f;
	(void)st;
	llmt_adamw_update(&p, &g, &m, &v, 1, 0.1, 0.5, &cfg, 1, 0);
	assert_float_equal(p, 0.9, 1e-6);
	assert_float_equal(m, 0.05, 1e-7);
}

static void test_zero1_ranges(void **st)
{
	(void)st;
	for (size_t n = 7; n < 200; n += 13)
		for (int dp = 1; dp <= 7 && (size_t)dp <= n; dp++) {
			size_t next = 0, lo, hi;
			for (int r = 0; r < dp; r++) {
				llmt_zero1_range(n, dp, r, &lo, &hi);
				assert_int_equal(lo, next);      /* contiguous, disjoint */
				assert_true(hi > lo);
				if (r < dp - 1)
					assert_int_equal(hi - lo, n / (size_t)dp); /* equal blocks */
				next = hi;
			}
			assert_int_equal(next, n);           /* covers all */
		}
}

static void test_sharded_equals_full(void **st)
{
	/* ZeRO-1 is exact: updating each DP rank's range with its own state
	 * gives the bits of one full update */
	enum { N = 103, DP = 4 };
	float p1[N], p2[N], g[N], m1[N] = { 0 }, v1[N] = { 0 }, m2[N] = { 0 }, v2[N] = { 0 };
	(void)st;

	for (int i = 0; i < N; i++) {
		p1[i] = p2[i] = sinf((float)i);
		g[i] = cosf((float)i * 0.3f);
	}
	for (int t = 1; t <= 3; t++) {
		llmt_adamw_update(p1, g, m1, v1, N, 1e-2, 0.7, &cfg, t, 1);
		for (int r = 0; r < DP; r++) {
			size_t lo, hi;
			llmt_zero1_range(N, DP, r, &lo, &hi);
			llmt_adamw_update(p2 + lo, g + lo, m2 + lo, v2 + lo, hi - lo, 1e-2, 0.7, &cfg, t, 1);
		}
	}
	assert_memory_equal(p1, p2, sizeof(p1));
	assert_memory_equal(v1, v2, sizeof(v1));
}

static void test_sumsq_clip(void **st)
{
	size_t n = 100003;
	float *x = malloc(sizeof(float) * n);
	double ref = 0, a, b;
	(void)st;

	for (size_t i = 0; i < n; i++) {
		x[i] = (float)((i % 17) - 8) * 0.01f;
		ref += (double)x[i] * x[i];
	}
	a = llmt_sumsq_det(x, n);
	b = llmt_sumsq_det(x, n);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_float_equal(a, ref, 1e-9 * ref);
	free(x);
	assert_float_equal(llmt_clip_scale(2.0, 1.0), 1.0 / (2.0 + 1e-6), 1e-12);
	assert_float_equal(llmt_clip_scale(0.5, 1.0), 1.0, 0);
	assert_float_equal(llmt_clip_scale(5.0, 0), 1.0, 0);
	assert_float_equal(llmt_clip_scale(NAN, 1.0), 1.0, 0);
}

static void test_optim_single(void **st)
{
	/* two segments: [0,4) decayed and counted, [4,6) neither; element 6
	 * is padding: never updated */
	llmt_optim_seg segs[2] = { { 0, 4, 1, 1 }, { 4, 2, 0, 0 } };
	llmt_adamw_cfg c = cfg;
	llmt_optim o;
	float master[7] = { 1, 1, 1, 1, 1, 1, 0 }, grads[7] = { 3, 4, 0, 0, 100, 100, 0 };
	double norm;
	(void)st;

	c.grad_clip = 1.0;
	assert_int_equal(llmt_optim_init(&o, &c, 7, segs, 2, NULL, NULL), 0);
	assert_int_equal(o.lo, 0);
	assert_int_equal(o.hi, 7);
	assert_int_equal(llmt_optim_reduce(&o, grads, &norm), 0);
	assert_float_equal(norm, 5.0, 1e-12); /* only the counted segment */
	assert_int_equal(llmt_optim_step(&o, master, 0.1, norm), 0);
	assert_int_equal(o.t, 1);
	/* Adam's first step moves each element by ~lr whatever the scale;
	 * decay applies to [0,4) only; zero gradient: decay only */
	assert_float_equal(master[0], 0.999 - 0.1, 1e-6);
	assert_float_equal(master[2], 0.999, 1e-7);
	assert_float_equal(master[4], 0.9, 1e-6);
	assert_float_equal(master[6], 0, 0);
	/* the clip scale reached the state: m = 0.1 * 3 / 5 */
	assert_float_equal(o.m[0], 0.1 * 3 / (5 + 1e-6), 1e-7);
	llmt_optim_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_adamw_hand),
		cmocka_unit_test(test_adamw_nodecay_scale),
		cmocka_unit_test(test_zero1_ranges),
		cmocka_unit_test(test_sharded_equals_full),
		cmocka_unit_test(test_sumsq_clip),
		cmocka_unit_test(test_optim_single),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
