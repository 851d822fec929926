/* test_gplan.c: unit tests of the GPU backend's host-side logic (runs
 * without a GPU): device choice, the NCCL watchdog's verdicts and exit
 * codes, the gradient bucket plan and the norm ranges of each rank, the
 * deterministic embedding plan, and
 * the row-major -> cuBLASLt column-major mapping (checked by running the
 * mapped problem through a plain column-major product). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "gpu/bridge.h"
#include "gpu/host_plan.h"
#include "llmt/exitcodes.h"

static void test_pick(void **st)
{
	(void)st;
	char err[200];
	assert_int_equal(gpick_device(0, NULL, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "no CUDA device"));
	assert_int_equal(gpick_device(1, "3", "5", err, sizeof err), 0);   /* narrowed by plugin */
	assert_int_equal(gpick_device(8, "3", "5", err, sizeof err), 3);
	assert_int_equal(gpick_device(8, NULL, "5", err, sizeof err), 5);
	assert_int_equal(gpick_device(4, NULL, "5", err, sizeof err), 1);
	assert_int_equal(gpick_device(4, "-1", "2", err, sizeof err), 2);
	assert_int_equal(gpick_device(4, NULL, NULL, err, sizeof err), 0);
	assert_int_equal(gpick_device(4, "9", NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "LLM_TRAIN_GPU=9"));
	assert_int_equal(gpick_device(4, "x", NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "'x'"));
	assert_int_equal(gpick_device(4, NULL, "-2", err, sizeof err), -1);
	assert_non_null(strstr(err, "LOCAL_RANK"));
}

static void test_wanted(void **st)
{
	(void)st;
	char err[160];
	assert_int_equal(llmt_dev_wanted(NULL, 1, err, sizeof err), 0);
	assert_int_equal(llmt_dev_wanted("", 1, err, sizeof err), 0);
	assert_int_equal(llmt_dev_wanted("-1", 1, err, sizeof err), 0);
	assert_int_equal(llmt_dev_wanted("0", 1, err, sizeof err), 1);
	assert_int_equal(llmt_dev_wanted("3", 1, err, sizeof err), 1);
	assert_int_equal(llmt_dev_wanted("3", 0, err, sizeof err), 0);   /* no CUDA in the build */
	assert_int_equal(llmt_dev_wanted("gpu0", 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "'gpu0'"));
	assert_int_equal(llmt_dev_wanted("-2", 1, err, sizeof err), -1);
}

static void test_watch(void **st)
{
	(void)st;
	gwatch w;
	char err[160];
	gwatch_arm(&w, 100.0, 5.0);
	assert_int_equal(gwatch_poll(&w, 101.0, 0, GW_ASYNC_OK), GW_PENDING);
	assert_int_equal(gwatch_poll(&w, 101.0, 1, GW_ASYNC_OK), GW_OK);
	assert_int_equal(gwatch_poll(&w, 101.0, 1, GW_ASYNC_IN_PROGRESS), GW_PENDING);
	assert_int_equal(gwatch_poll(&w, 101.0, 1, GW_ASYNC_ERROR), GW_ERROR);
	assert_int_equal(gwatch_poll(&w, 105.5, 0, GW_ASYNC_OK), GW_TIMEOUT);
	assert_int_equal(gwatch_poll(&w, 105.5, 0, GW_ASYNC_ERROR), GW_ERROR);
	assert_int_equal(gwatch_poll(&w, 105.5, 1, GW_ASYNC_OK), GW_OK);   /* done wins over late */
	gwatch_arm(&w, 0.0, 0.0);                                          /* no deadline */
	assert_int_equal(gwatch_poll(&w, 1e9, 0, GW_ASYNC_OK), GW_PENDING);
	assert_int_equal(gwatch_exit_code(GW_OK), 0);
	assert_int_equal(gwatch_exit_code(GW_ERROR), LLMT_EXIT_TRANSIENT);
	assert_int_equal(gwatch_exit_code(GW_TIMEOUT), 75);
	assert_int_equal(gwatch_backoff_us(0), 0);
	assert_true(gwatch_backoff_us(5000) >= gwatch_backoff_us(500));
	assert_true(gwatch_backoff_us(5000) <= 1000);
	assert_true(gwatch_timeout_from(NULL, 300, err, sizeof err) == 300.0);
	assert_true(gwatch_timeout_from("12.5", 300, err, sizeof err) == 12.5);
	assert_true(gwatch_timeout_from("0", 300, err, sizeof err) < 0);
	assert_true(gwatch_timeout_from("ten", 300, err, sizeof err) < 0);
	assert_non_null(strstr(err, "'ten'"));
}

static void test_buckets(void **st)
{
	(void)st;
	/* 6 tensors: sizes 10, 2, 30, 2, 30, 5 at consecutive offsets */
	size_t num[6] = {10, 2, 30, 2, 30, 5}, off[6];
	size_t o = 0;
	for (int i = 0; i < 6; i++) {
		off[i] = o;
		o += num[i];
	}
	gbucket b[8];
	int nb = gbucket_plan(off, num, 6, o, 32, b, 8);
	/* from the top: [5] + [30] = 35 >= 32 -> bucket 0 = tensors 4..5 */
	assert_int_equal(nb, 3);
	assert_int_equal(b[0].first_tensor, 4);
	assert_int_equal(b[0].hi, o);
	assert_int_equal(b[0].lo, off[4]);
	assert_int_equal(b[1].first_tensor, 2);   /* 2 + 30 = 32 */
	assert_int_equal(b[1].hi, off[4]);
	assert_int_equal(b[2].first_tensor, 0);   /* the rest: 12 < 32, lowest */
	assert_int_equal(b[2].lo, 0);
	assert_int_equal(b[2].hi, off[2]);
	/* buckets tile [0, n) exactly */
	size_t covered = 0;
	for (int i = 0; i < nb; i++)
		covered += b[i].hi - b[i].lo;
	assert_int_equal(covered, o);
	assert_int_equal(gbucket_ready(b, nb, 5), 0);
	assert_int_equal(gbucket_ready(b, nb, 4), 1);
	assert_int_equal(gbucket_ready(b, nb, 3), 1);
	assert_int_equal(gbucket_ready(b, nb, 2), 2);
	assert_int_equal(gbucket_ready(b, nb, 0), 3);
	/* one huge target: one bucket; tiny target: one per tensor */
	assert_int_equal(gbucket_plan(off, num, 6, o, 1000, b, 8), 1);
	assert_int_equal(gbucket_plan(off, num, 6, o, 1, b, 8), 6);
	assert_int_equal(gbucket_plan(off, num, 6, o, 1, b, 5), -1);       /* cap too small */
	size_t bad[6] = {0, 12, 10, 42, 44, 74};                            /* overlap */
	assert_int_equal(gbucket_plan(bad, num, 6, o, 32, b, 8), -1);
	/* ZeRO-1 shares: dp blocks + a tail tile the bucket exactly */
	gbucket bk = {100, 135, 0};
	gshard s0, s2;
	gbucket_shard(&bk, 4, 0, &s0);
	gbucket_shard(&bk, 4, 2, &s2);
	assert_int_equal(s0.blk, 8);
	assert_int_equal(s0.own_lo, 100);
	assert_int_equal(s0.own_hi, 108);
	assert_int_equal(s2.own_lo, 116);
	assert_int_equal(s2.own_hi, 124);
	assert_int_equal(s2.tail_lo, 132);
	assert_int_equal(s2.hi, 135);
	gbucket tiny = {0, 3, 0};                                           /* shorter than dp */
	gbucket_shard(&tiny, 4, 3, &s0);
	assert_int_equal(s0.blk, 0);
	assert_int_equal(s0.own_lo, s0.own_hi);
	assert_int_equal(s0.tail_lo, 0);
	gbucket_shard(&bk, 1, 0, &s0);                                      /* one rank: all */
	assert_int_equal(s0.own_lo, 100);
	assert_int_equal(s0.own_hi, 135);
	assert_int_equal(s0.tail_lo, 135);
}

/* the norm ranges of all DP ranks count every in-norm element once and
 * nothing else, for any bucket size, dp and mask */
static void test_norm_ranges(void **st)
{
	(void)st;
	size_t num[6] = {10, 2, 30, 2, 30, 5}, off[6], o = 0;
	for (int i = 0; i < 6; i++) {
		off[i] = o;
		o += num[i] + (i == 2);      /* one padding element after tensor 2 */
	}
	const int masks[3][6] = {{1, 1, 1, 1, 1, 1}, {0, 1, 1, 0, 1, 0}, {1, 0, 0, 0, 0, 1}};
	const size_t targets[3] = {1, 32, 1000};
	gbucket b[8];
	size_t r[32][2];
	for (int k = 0; k < 3; k++)
		for (int m = 0; m < 3; m++)
			for (int dp = 1; dp <= 4; dp++) {
				int nb = gbucket_plan(off, num, 6, o, targets[k], b, 8);
				assert_true(nb > 0);
				int seen[90] = {0};
				for (int rk = 0; rk < dp; rk++) {
					int n = gbucket_norm_ranges(b, nb, dp, rk, off, masks[m], 6, o, r, 32);
					assert_true(n >= 0 && n <= 2 * (nb + 6));
					for (int i = 0; i < n; i++) {
						assert_true(r[i][0] < r[i][1]);
						if (i)
							assert_true(r[i - 1][1] < r[i][0]);   /* sorted, merged */
						for (size_t e = r[i][0]; e < r[i][1]; e++)
							seen[e]++;
					}
				}
				for (int t = 0; t < 6; t++) {
					size_t end = t < 5 ? off[t + 1] : o;
					for (size_t e = off[t]; e < end; e++)
						if (seen[e] != masks[m][t])
							fail_msg("target %zu mask %d dp %d: element %zu counted %d times",
									 targets[k], m, dp, e, seen[e]);
				}
			}
	/* one rank, everything in the norm: one range over the whole buffer */
	int nb = gbucket_plan(off, num, 6, o, 1, b, 8);
	assert_int_equal(gbucket_norm_ranges(b, nb, 1, 0, off, masks[0], 6, o, r, 32), 1);
	assert_int_equal(r[0][0], 0);
	assert_int_equal(r[0][1], o);
	/* cap too small */
	assert_int_equal(gbucket_norm_ranges(b, nb, 1, 0, off, masks[1], 6, o, r, 1), -1);
}

static void test_embed(void **st)
{
	(void)st;
	int32_t tok[8] = {5, 2, 5, 7, 2, 5, 0, 7}, u[8], s[9], p[8];
	int nu = gembed_plan(tok, 8, 8, u, s, p);
	assert_int_equal(nu, 4);
	int32_t eu[4] = {0, 2, 5, 7}, es[5] = {0, 1, 3, 6, 8}, ep[8] = {6, 1, 4, 0, 2, 5, 3, 7};
	assert_memory_equal(u, eu, sizeof eu);
	assert_memory_equal(s, es, sizeof es);
	assert_memory_equal(p, ep, sizeof ep);
	tok[3] = 8;
	assert_int_equal(gembed_plan(tok, 8, 8, u, s, p), -1);
	tok[3] = -1;
	assert_int_equal(gembed_plan(tok, 8, 8, u, s, p), -1);
	assert_int_equal(gembed_plan(tok, 0, 8, u, s, p), 0);
	assert_int_equal(s[0], 0);
}

/* column-major D[m x n] = op(A') op(B'), as cuBLASLt computes it */
static void colmajor_gemm(const gmm_colmajor *p, const float *A, const float *B, float *D)
{
	for (int i = 0; i < p->m; i++)
		for (int j = 0; j < p->n; j++) {
			double s = 0;
			for (int k = 0; k < p->k; k++) {
				float a = p->trans_a ? A[k + (size_t)i * p->lda] : A[i + (size_t)k * p->lda];
				float b = p->trans_b ? B[j + (size_t)k * p->ldb] : B[k + (size_t)j * p->ldb];
				s += (double)a * b;
			}
			D[i + (size_t)j * p->ldc] = (float)s;
		}
}

static void test_mm_plan(void **st)
{
	(void)st;
	enum { M = 3, N = 4, K = 5 };
	float A[M * K], B[K * N], C[M * N], D[M * N];
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			for (int i = 0; i < M * K; i++)
				A[i] = (float)((i * 7 + ta) % 11) - 5;
			for (int i = 0; i < K * N; i++)
				B[i] = (float)((i * 5 + tb) % 13) - 6;
			/* row-major reference C = op(A) op(B) */
			for (int i = 0; i < M; i++)
				for (int j = 0; j < N; j++) {
					double s = 0;
					for (int k = 0; k < K; k++)
						s += (double)(ta ? A[k * M + i] : A[i * K + k]) *
							 (tb ? B[j * K + k] : B[k * N + j]);
					C[i * N + j] = (float)s;
				}
			gmm_colmajor p;
			gmm_plan(M, N, K, ta, tb, &p);
			assert_int_equal(p.m, N);
			assert_int_equal(p.n, M);
			assert_int_equal(p.stride_c, M * N);
			colmajor_gemm(&p, B, A, D);   /* A' is our B, B' our A */
			assert_memory_equal(C, D, sizeof C);
		}
	/* sub-blocks: rows 2..4 of each of 2 batch members of a 6 x 4 A
	 * (ld 4, batch stride 24) times the first 3 columns of a 4 x 5 B
	 * (ld 5, stride 20) into a 3 x 3 block of a 3 x 7 C (ld 7, stride 21) */
	{
		float As[48], Bs[40], Cs[42], Ds[42];
		for (int i = 0; i < 48; i++)
			As[i] = (float)((i * 3) % 7) - 3;
		for (int i = 0; i < 40; i++)
			Bs[i] = (float)((i * 5) % 9) - 4;
		memset(Ds, 0, sizeof Ds);
		gmm_colmajor p;
		gmm_plan_ld(3, 3, 4, 0, 0, 4, 24, 5, 20, 7, 21, &p);
		assert_int_equal(p.lda, 5);
		assert_int_equal(p.ldb, 4);
		assert_int_equal(p.ldc, 7);
		assert_int_equal(p.stride_a, 20);
		assert_int_equal(p.stride_b, 24);
		for (int b = 0; b < 2; b++) {
			colmajor_gemm(&p, Bs + 20 * b, As + 24 * b + 2 * 4, Ds + 21 * b);
			for (int i = 0; i < 3; i++)
				for (int j = 0; j < 3; j++) {
					double s = 0;
					for (int k = 0; k < 4; k++)
						s += (double)As[24 * b + (2 + i) * 4 + k] * Bs[20 * b + k * 5 + j];
					Cs[21 * b + i * 7 + j] = (float)s;
					assert_true(Ds[21 * b + i * 7 + j] == Cs[21 * b + i * 7 + j]);
				}
		}
	}
	assert_int_equal(gmm_align((void *)(uintptr_t)0x1000), 256);
	assert_int_equal(gmm_align((void *)(uintptr_t)0x1010), 16);
	assert_int_equal(gmm_align((void *)(uintptr_t)0x1002), 2);
}

static void test_attn_chunks(void **st)
{
	(void)st;
	assert_int_equal(gattn_chunk(64), 64);
	assert_int_equal(gattn_chunk(128), 128);
	assert_int_equal(gattn_chunk(1024), 128);
	assert_int_equal(gattn_chunk(192), 64);
	assert_int_equal(gattn_chunk(160), 32);
	assert_int_equal(gattn_chunk(131), 131);     /* no divisor: the square */
	/* chunks of C x C, C x 2C, ... per head: T (T + C) / 2 in all */
	assert_int_equal(gattn_p_offset(3, 4, 0), 0);
	assert_int_equal(gattn_p_offset(3, 4, 1), 3 * 16);
	assert_int_equal(gattn_p_offset(3, 4, 2), 3 * (16 + 32));
	assert_int_equal(gattn_p_elems(3, 16, 4), 3 * 16 * 20 / 2);
	assert_int_equal(gattn_p_elems(5, 1024, 128), (size_t)5 * 1024 * 1152 / 2);
	assert_int_equal(gattn_p_elems(2, 64, 64), 2 * 64 * 64);
	/* fused unless asked for chunks or the head dim is not built */
	assert_int_equal(gattn_fused(64, NULL), 1);
	assert_int_equal(gattn_fused(128, ""), 1);
	assert_int_equal(gattn_fused(8, "fused"), 1);
	assert_int_equal(gattn_fused(64, "chunked"), 0);
	assert_int_equal(gattn_fused(80, NULL), 0);
	assert_int_equal(gattn_fused(96, "fused"), 0);
	assert_int_equal(gattn_fused(64, "flash"), -1);
}

/* the layer activation table (act_plan.c): none keeps all per layer, attn
 * shares the attention core (P or the logsumexp, the output), full all */
static void test_act_plan(void **st)
{
	(void)st;
	for (int fused = 0; fused < 2; fused++)
		for (int rc = 0; rc < 3; rc++) {
			gact_shape s = { 2, 16, 32, 4, 2, 8, 48, 4, 1, fused, rc };
			gact_plan p;
			gact_plan_make(&s, &p);
			size_t all = gact_bytes(&p, 0) + gact_bytes(&p, 1), core = p.bytes[GA_ATT];
			assert_int_equal(p.bytes[GA_P] > 0, !fused);
			assert_int_equal(p.bytes[GA_LSE] > 0, fused);
			assert_int_equal(p.bytes[GA_ATT], 2 * 16 * 4 * 8 * 2);
			/* QK-norm: the q/k/v product, bf16 on the fused path */
			assert_int_equal(p.bytes[GA_QKV], 2 * 16 * (4 + 2 * 2) * 8 * (fused ? 2 : 4));
			core += fused ? p.bytes[GA_LSE] : p.bytes[GA_P];
			assert_int_equal(gact_bytes(&p, 1), rc == 0 ? 0 : rc == 1 ? core : all);
			for (int i = 0; i < GA_N; i++)
				assert_int_equal(p.shared[i], rc == 2 || (rc == 1 && (i == GA_P || i == GA_LSE ||
																	  i == GA_ATT)));
		}
}

/* The bucket target (at most GBUCKET_MAX_BYTES of fp32 gradients) and
 * the wait points, then what they give at 1.5B (tests/gpu/gpu-1.5b.yaml,
 * one stage, tied) over dp = 8: buckets of tens of MB and the NCCL calls
 * and launches of a step, reduce-scatters grouped per layer as backward
 * issues them (gmodel_step.c's dp_launch), weight all-gathers grouped per
 * layer as the forward waits for them (gmodel_shard.c). */
static void test_bucket_scale(void **st)
{
	(void)st;
	assert_int_equal(gbucket_target(0), 1);
	assert_int_equal(gbucket_target(800), 100);
	assert_int_equal(gbucket_target((size_t)1 << 40), GBUCKET_MAX_BYTES / 4);
	gbucket b3[2] = {{40, 60, 3}, {0, 40, 0}};
	size_t w[3] = {10, 40, 60};      /* layers' first tensors, then the end */
	assert_int_equal(gbucket_wait_point(&b3[0], w, 3), 2);
	assert_int_equal(gbucket_wait_point(&b3[1], w, 3), 0);
	assert_int_equal(gbucket_wait_point(&b3[0], w, 2), 2);   /* none above */
	enum { L = 48, NT = 1 + 9 * L + 1 };
	const size_t d = 1600, F = 4352, V = 50304;
	static size_t off[NT], num[NT], wp[L + 1];
	static gbucket b[NT];
	int t = 0, t0[L];
	num[t++] = V * d;
	for (int l = 0; l < L; l++) {
		const size_t sz[9] = {d, d * d, d * d, d * d, d * d, d, F * d, F * d, d * F};
		t0[l] = t;
		for (int i = 0; i < 9; i++)
			num[t++] = sz[i];
	}
	num[t++] = d;
	size_t n = 0, big = 0;
	for (int i = 0; i < NT; i++) {
		off[i] = n;
		n += num[i];
		big = num[i] > big ? num[i] : big;
	}
	for (int l = 0; l < L; l++)
		wp[l] = off[t0[l]];
	wp[L] = n;
	size_t target = gbucket_target(n);
	int nb = gbucket_plan(off, num, NT, n, target, b, NT);
	assert_true(nb > 0);
	int tails = 0, rs_launch = 0, ag_launch = 0, sent = 0;
	size_t lo = n, hi = 0;
	for (int k = 0; k < nb; k++) {
		size_t len = b[k].hi - b[k].lo;
		/* at least the target (but the lowest), at most it plus a tensor */
		assert_true(k == nb - 1 || len >= target);
		assert_true(len < target + big);
		lo = len < lo ? len : lo;
		hi = len > hi ? len : hi;
		tails += len % 8 != 0;
		ag_launch += k == 0 || gbucket_wait_point(&b[k], wp, L + 1) !=
								   gbucket_wait_point(&b[k - 1], wp, L + 1);
	}
	for (int l = L; l >= 0; l--) {    /* dp_launch after each layer, then the last */
		int ready = gbucket_ready(b, nb, l == 0 ? 0 : t0[l - 1]);
		rs_launch += ready > sent;
		sent = ready;
	}
	assert_int_equal(sent, nb);
	assert_true(rs_launch <= L + 1 && ag_launch <= L + 1);
	assert_true(4 * hi >= (size_t)10 << 20);     /* tens of MB */
	printf("1.5B at dp=8: %zu parameters, target %zu elements (%zu MiB fp32), %d buckets of "
		   "%.1f-%.1f MiB fp32; per step %d reduce-scatters and %d tail all-reduces in %d "
		   "launches, %d weight all-gathers in %d launches (ungrouped: %d)\n",
		   n, target, target * 4 >> 20, nb, lo * 4.0 / (1 << 20), hi * 4.0 / (1 << 20), nb,
		   tails, rs_launch, nb, ag_launch, nb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),    cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_buckets), cmocka_unit_test(test_norm_ranges),
		cmocka_unit_test(test_bucket_scale),
		cmocka_unit_test(test_embed),
		cmocka_unit_test(test_mm_plan), cmocka_unit_test(test_attn_chunks),
		cmocka_unit_test(test_act_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
