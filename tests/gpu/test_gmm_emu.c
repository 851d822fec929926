/* test_gmm_emu.c: runtime/gpu/blas.c's choice of cuBLASLt algorithm over
 * the emulated cuBLASLt (cublaslt_emu.c): several heuristic results (the
 * first that works kept, or the fastest on the emulated clock when tuned),
 * no result at the pointers' alignment (a lower hint taken), a chosen
 * algorithm that fails later (chosen again), none at all (an error, not a
 * crash); the product's bits are those of the single-algorithm run every
 * time. On the old blas.c (one heuristic result, no fallback) every test
 * here but test_none fails. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/blas.h"
#include "model/bf16.h"
#include "cublaslt_emu.h"

enum { M = 5, N = 7, K = 9 };
static bf16 *A, *B;
static float *C, *ref, *ref_acc;

static void knobs_default(void)
{
	llmt_emu_lt_algos = 1;
	llmt_emu_lt_fail_mask = 0;
	llmt_emu_lt_max_align = 256;
	for (int i = 0; i < LLMT_EMU_LT_MAX; i++)
		llmt_emu_lt_cost_ms[i] = 1;
}

/* C = A B (+ C when acc, C starting at 0.5 everywhere) */
static int product(gmm_ctx *g, int acc)
{
	for (int i = 0; i < M * N; i++)
		C[i] = 0.5f;
	return gmm(g, 1, M, N, K, A, 0, B, 0, LLMT_DT_BF16, C, LLMT_DT_F32, 1.0f, acc);
}

static int setup(void **st)
{
	(void)st;
	/* 256-byte aligned: the alignment hints start at 256 */
	A = aligned_alloc(256, 256 * 2);
	B = aligned_alloc(256, 256 * 2);
	C = aligned_alloc(256, 256 * 4);
	ref = malloc(M * N * sizeof *ref);
	ref_acc = malloc(M * N * sizeof *ref);
	for (int i = 0; i < M * K; i++)
		A[i] = f32_to_bf16((float)((i * 37) % 11) / 7.0f - 0.6f);
	for (int i = 0; i < K * N; i++)
		B[i] = f32_to_bf16((float)((i * 53) % 13) / 9.0f - 0.5f);
	knobs_default();
	gmm_ctx *g = gmm_create(0, 1 << 20);
	if (!g || product(g, 0))
		return -1;
	memcpy(ref, C, M * N * sizeof *ref);
	if (product(g, 1))
		return -1;
	memcpy(ref_acc, C, M * N * sizeof *ref);
	gmm_free(g);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	free(A); free(B); free(C); free(ref); free(ref_acc);
	return 0;
}

static void same(const float *want)
{
	assert_memory_equal(C, want, M * N * sizeof *C);
}

static void test_first_working(void **st)
{
	(void)st;
	knobs_default();
	llmt_emu_lt_algos = 4;
	llmt_emu_lt_fail_mask = 0x3;          /* the heuristic's two first fail */
	gmm_ctx *g = gmm_create(0, 1 << 20);
	assert_non_null(g);
	long h0 = llmt_emu_lt_heuristics;
	assert_int_equal(product(g, 0), 0);
	assert_int_equal(llmt_emu_lt_last_algo, 2);
	same(ref);
	assert_int_equal(product(g, 0), 0);   /* cached: no second heuristic call */
	assert_int_equal(llmt_emu_lt_heuristics, h0 + 1);
	assert_int_equal(llmt_emu_lt_last_algo, 2);
	same(ref);
	gmm_free(g);
}

static void test_tuned_fastest(void **st)
{
	(void)st;
	knobs_default();
	llmt_emu_lt_algos = 4;
	double cost[4] = {5, 3, 1, 4};
	memcpy(llmt_emu_lt_cost_ms, cost, sizeof cost);
	gmm_ctx *g = gmm_create(0, 1 << 20);
	assert_non_null(g);
	gmm_set_tune(g, 1);
	assert_int_equal(product(g, 0), 0);
	assert_int_equal(llmt_emu_lt_last_algo, 2);   /* the fastest */
	same(ref);
	/* an accumulating product is not timed (it would add up in C): the
	 * first that works, and the bits of one accumulation */
	assert_int_equal(product(g, 1), 0);
	assert_int_equal(llmt_emu_lt_last_algo, 0);
	same(ref_acc);
	gmm_free(g);
}

static void test_lower_alignment(void **st)
{
	(void)st;
	knobs_default();
	llmt_emu_lt_algos = 2;
	llmt_emu_lt_max_align = 16;          /* nothing for hints of 32 bytes and up */
	gmm_ctx *g = gmm_create(0, 1 << 20);
	assert_non_null(g);
	assert_int_equal(product(g, 0), 0);
	assert_int_equal(llmt_emu_lt_last_align, 16);
	same(ref);
	assert_int_equal(product(g, 1), 0);
	same(ref_acc);
	gmm_free(g);
}

static void test_fails_later(void **st)
{
	(void)st;
	knobs_default();
	llmt_emu_lt_algos = 3;
	gmm_ctx *g = gmm_create(0, 1 << 20);
	assert_non_null(g);
	assert_int_equal(product(g, 1), 0);
	assert_int_equal(llmt_emu_lt_last_algo, 0);
	llmt_emu_lt_fail_mask = 0x1;          /* the one in use now fails */
	assert_int_equal(product(g, 1), 0);
	assert_int_equal(llmt_emu_lt_last_algo, 1);
	same(ref_acc);                        /* the failed call added nothing */
	gmm_free(g);
}

static void test_none(void **st)
{
	(void)st;
	knobs_default();
	llmt_emu_lt_algos = 0;
	gmm_ctx *g = gmm_create(0, 1 << 20);
	assert_non_null(g);
	assert_int_equal(product(g, 0), -1);
	llmt_emu_lt_algos = 2;
	llmt_emu_lt_fail_mask = 0x3;
	gmm_ctx *h = gmm_create(0, 1 << 20);
	assert_int_equal(product(h, 0), -1);
	gmm_free(g);
	gmm_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_working),
		cmocka_unit_test(test_tuned_fastest),
		cmocka_unit_test(test_lower_alignment),
		cmocka_unit_test(test_fails_later),
		cmocka_unit_test(test_none),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
