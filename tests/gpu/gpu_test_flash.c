/* gpu_test_flash.c: the fused attention's forward on mma.sync
 * (gk_flash_fwd_mma, dev_flash_mma.cu) against the one on wmma
 * (gk_flash_fwd_wmma) on one attention shape: the time of each (best of
 * 3 runs of 5, after one untimed) and how far their outputs differ. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "gpu/dev_kernels.h"
#include "gpu_test_flash.h"

typedef cudaError_t (*fwd_fn)(const gk_bf16 *, const gk_bf16 *, const gk_bf16 *, gk_bf16 *,
							  float *, const int *, int, int, int, int, int, cudaStream_t);

/* the best time of 3 x 5 calls in ms, -1 on a CUDA error */
static double time_fwd(fwd_fn f, gk_bf16 *q, gk_bf16 *k, gk_bf16 *v, gk_bf16 *o, float *lse,
					   int B, int T, int H, int KV, int hd)
{
	double best = -1;
	if (f(q, k, v, o, lse, NULL, B, T, H, KV, hd, 0) || cudaDeviceSynchronize())
		return -1;
	for (int r = 0; r < 3; r++) {
		double t0 = now_s();
		for (int i = 0; i < 5; i++)
			if (f(q, k, v, o, lse, NULL, B, T, H, KV, hd, 0))
				return -1;
		if (cudaDeviceSynchronize())
			return -1;
		double ms = (now_s() - t0) * 1e3 / 5;
		best = best < 0 || ms < best ? ms : best;
	}
	return best;
}

/* the largest |a - b| over the largest |b| (bf16 as its upper 16 bits) */
static double diff_bf16(const uint16_t *a, const uint16_t *b, size_t n)
{
	double d = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t ua = (uint32_t)a[i] << 16, ub = (uint32_t)b[i] << 16;
		float fa, fb;
		memcpy(&fa, &ua, 4);
		memcpy(&fb, &ub, 4);
		d = fa == fa ? fmax(d, fabs((double)fa - fb)) : INFINITY;
		m = fmax(m, fabs(fb));
	}
	return m > 0 ? d / m : d;
}

int gpu_test_flash(const llmt_config *c, int B, int T)
{
	int H = c->n_heads, KV = c->n_kv_heads, hd = llmt_config_head_dim(c);
	if (hd != 64 && hd != 128)
		hd = 64;
	size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * KV * hd, nl = (size_t)B * H * T;
	gk_bf16 *d = NULL;
	float *l = NULL;
	uint16_t *h = malloc(2 * nq * 2);
	int bad = !h || cudaMalloc((void **)&d, (3 * nq + 2 * nk) * 2) ||
			  cudaMalloc((void **)&l, 2 * nl * 4) || random_bf16(d, nq + 2 * nk, 7);
	gk_bf16 *q = d, *k = q + nq, *v = k + nk, *o1 = v + nk, *o2 = o1 + nq;
	double tm = bad ? -1 : time_fwd(gk_flash_fwd_mma, q, k, v, o1, l, B, T, H, KV, hd);
	double tw = bad ? -1 : time_fwd(gk_flash_fwd_wmma, q, k, v, o2, l + nl, B, T, H, KV, hd);
	bad = bad || tm < 0 || tw < 0 || cudaMemcpy(h, o1, 2 * nq * 2, cudaMemcpyDeviceToHost);
	double e = bad ? INFINITY : diff_bf16(h, h + nq, nq);
	/* two bf16 roundings of the same sums: an ulp apart (emulation:
	 * <= 3.9e-3); a layout mismatch moves the output by its whole size */
	bad = bad || !(e <= 2e-2);
	/* bench-*: tests/gpu/check keeps the line with ours' results */
	printf("bench-flash-fwd mma vs wmma: hd %d, B=%d T=%d H=%d KV=%d: mma %.3f ms, wmma %.3f ms "
		   "(%.2fx); outputs differ %.2g of the largest (limit 2e-2)%s\n", hd, B, T, H, KV, tm,
		   tw, tm > 0 ? tw / tm : 0, e, bad ? ": FAIL" : "");
	cudaFree(d);
	cudaFree(l);
	free(h);
	return bad;
}
