/* bench_attn.c: one layer's causal attention, forward + backward (through
 * the backward of the rotary prep to the q/k/v projection gradient), of
 * the bench model's shape (default B=8, H=12, T=256, hd=64): attn.h's
 * blocked bf16 kernel against the oneDNN full-square path it replaced
 * (batched products through llmt_mm, kernels.c's masked softmax, layout
 * passes and k_attn_prep_bwd; its gradient input fp32 as that path had
 * it, bf16 for the new one),
 * timed side by side in this run, best of REPS. Prints milliseconds per
 * layer (wall and CPU time / threads) and the ratios; no thresholds.
 * usage: bench_attn [B H T hd [REPS]] */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "model/attn.h"
#include "model/kernels.h"
#include "model/matmul.h"

static double now(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *alloc(size_t bytes)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, bytes ? bytes : 64)) {
		fprintf(stderr, "bench_attn: out of memory\n");
		exit(70);
	}
	return p;
}

static void fill(bf16 *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = f32_to_bf16((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f);
	}
}

int main(int argc, char **argv)
{
	int B = argc > 4 ? atoi(argv[1]) : 8, H = argc > 4 ? atoi(argv[2]) : 12;
	int T = argc > 4 ? atoi(argv[3]) : 256, hd = argc > 4 ? atoi(argv[4]) : 64;
	int reps = argc > 5 ? atoi(argv[5]) : 10;
	if (B < 1 || H < 1 || T < 1 || hd < 1 || reps < 1) {
		fprintf(stderr, "usage: bench_attn [B H T hd [REPS]]\n");
		return 64;
	}
	if (!attn_ok(hd)) {
		printf("SKIP: no AVX-512 BF16 here (or hd %% 16 != 0): nothing to compare\n");
		return 0;
	}
	int BH = B * H, Tp = attn_ld(T), nt = omp_get_max_threads();
	size_t nq = (size_t)BH * T * hd, np = (size_t)BH * T * Tp;
	bf16 *q = alloc(nq * 2), *k = alloc(nq * 2), *v = alloc(nq * 2), *att = alloc(nq * 2);
	bf16 *P = alloc(np * 2), *dS = alloc(np * 2), *O = alloc(nq * 2), *dO = alloc(nq * 2);
	bf16 *dattb = alloc(nq * 2);
	float *datt = alloc(nq * 4), *dq = alloc(nq * 4), *dk = alloc(nq * 4), *dv = alloc(nq * 4);
	float *S = alloc((size_t)BH * T * T * 4), *dP = alloc((size_t)BH * T * T * 4);
	int h2 = hd / 2;
	bf16 *dqkv = alloc((size_t)B * T * 3 * H * hd * 2);
	float *cs = alloc((size_t)T * h2 * 4), *sn = alloc((size_t)T * h2 * 4);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < h2; i++) {
			cs[t * h2 + i] = cosf(t * powf(1e4f, -2.0f * i / hd));
			sn[t * h2 + i] = sinf(t * powf(1e4f, -2.0f * i / hd));
		}
	attn_prep_grad pg = { H, cs, sn, NULL, NULL, NULL, NULL, NULL, NULL, NULL, dqkv, NULL };
	fill(q, nq, 1);
	fill(k, nq, 2);
	fill(v, nq, 3);
	fill(O, nq, 4);
	for (size_t i = 0; i < nq; i++) {
		datt[i] = bf16_to_f32(O[i]) * 1e-3f;
		dattb[i] = f32_to_bf16(datt[i]);
	}
	attn_ws *w = attn_ws_new(BH, T, hd, nt);
	if (!w)
		return 70;
	float sc = 1.0f / sqrtf((float)hd);
	double best[2][2] = { { 1e30, 1e30 }, { 1e30, 1e30 } };
	for (int r = 0; r <= reps; r++)
		for (int path = 0; path < 2; path++) {
			double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
			if (path == 0) {
				attn_fwd(w, q, k, v, P, att, B, H, T, hd, sc);
				attn_bwd(w, q, k, v, P, dattb, dS, &pg, B, H, T, hd, sc);
			} else {
				int bad = llmt_mm(BH, T, T, hd, q, 0, k, 1, LLMT_DT_BF16, S, LLMT_DT_F32, sc, 0);
				k_softmax_causal_fwd(S, P, BH, T, 1);
				bad |= llmt_mm(BH, T, hd, T, P, 0, v, 0, LLMT_DT_BF16, O, LLMT_DT_BF16, 1.0f, 0);
				k_heads_to_tokens(O, att, B, T, H, hd, 1);
				k_tokens_to_heads(datt, dO, B, T, H, hd, 1);
				bad |= llmt_mm(BH, T, T, hd, dO, 0, v, 1, LLMT_DT_BF16, dP, LLMT_DT_F32, 1.0f, 0);
				bad |= llmt_mm(BH, T, hd, T, P, 1, dO, 0, LLMT_DT_BF16, dv, LLMT_DT_F32, 1.0f, 0);
				k_softmax_causal_bwd(P, dP, dS, BH, T, 1);
				bad |= llmt_mm(BH, T, hd, T, dS, 0, k, 0, LLMT_DT_BF16, dq, LLMT_DT_F32, sc, 0);
				bad |= llmt_mm(BH, T, hd, T, dS, 1, q, 0, LLMT_DT_BF16, dk, LLMT_DT_F32, sc, 0);
				k_attn_prep_bwd(dq, dk, dv, dqkv, NULL, B, T, H, H, hd, NULL, NULL, NULL, NULL,
								NULL, NULL, cs, sn, 1);
				if (bad)
					return 70;
			}
			double wt = now(CLOCK_MONOTONIC) - t0, ct = (now(CLOCK_PROCESS_CPUTIME_ID) - c0) / nt;
			if (r > 0) { /* the first round warms up (primitive creation, page faults) */
				best[path][0] = wt < best[path][0] ? wt : best[path][0];
				best[path][1] = ct < best[path][1] ? ct : best[path][1];
			}
		}
	/* causal FLOPs, as the model's 6LTd counts them: six products (two
	 * forward, four backward) of 2 T^2 hd each on the full square, half
	 * of it below the diagonal */
	double fl = 6.0 * BH * (double)T * T * hd;
	printf("attention B=%d H=%d T=%d hd=%d threads %d, best of %d\n", B, H, T, hd, nt, reps);
	printf("blocked %.3f ms (cpu %.3f ms, %.0f causal GFLOP/s by cpu)\n", best[0][0] * 1e3,
		   best[0][1] * 1e3, fl / best[0][1] / 1e9);
	printf("full    %.3f ms (cpu %.3f ms, %.0f causal GFLOP/s by cpu)\n", best[1][0] * 1e3,
		   best[1][1] * 1e3, fl / best[1][1] / 1e9);
	printf("full / blocked = %.2f (wall %.2f)\n", best[1][1] / best[0][1], best[1][0] / best[0][0]);
	attn_ws_free(w);
	return 0;
}
