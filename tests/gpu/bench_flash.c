/* bench_flash.c: device benchmark of the fused attention (dev_flash.cu;
 * at head dims 64 and 128 gk_flash_fwd is dev_flash_mma.cu's, mma.sync):
 * `bench_flash kernel B T H KV HD REPS` times gk_flash_fwd and gk_flash_bwd
 * on random bf16 data (ms, causal TFLOPS) and checks that a rerun gives
 * the same bits; `bench_flash model CFG B T STEPS` times forward+backward
 * of the GPU model with the fused and with the chunked attention
 * (LLM_TRAIN_GPU_ATTN) on the same tokens. A GPU only: SKIP (77) without
 * one. Lines start with "bench-flash" (tests/gpu/check collects them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>
#include "gpu/dev_kernels.h"
#include "gpu/gmodel.h"
#include "model/model.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (uint32_t)(rs >> 32);
}

/* n random bf16 values in [-1, 1) on the device */
static gk_bf16 *dev_rand(size_t n)
{
	gk_bf16 *h = malloc(n * 2), *d = NULL;
	if (!h)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		float f = (float)(rnd() >> 8) / 8388608.0f - 1.0f;
		uint32_t u;
		memcpy(&u, &f, 4);
		h[i] = (gk_bf16)(u >> 16);
	}
	if (cudaMalloc((void **)&d, n * 2) || cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice))
		d = NULL;
	free(h);
	return d;
}

static int kernel(int B, int T, int H, int KV, int hd, int reps)
{
	size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * KV * hd, nr = (size_t)B * H * T;
	gk_bf16 *q = dev_rand(nq), *k = dev_rand(nk), *v = dev_rand(nk), *dO = dev_rand(nq), *o;
	float *lse, *D;
	gk_bf16 *dq, *dk, *dv;
	if (!q || !k || !v || !dO || cudaMalloc((void **)&o, nq * 2) ||
	    cudaMalloc((void **)&lse, nr * 4) || cudaMalloc((void **)&D, nr * 4) ||
	    cudaMalloc((void **)&dq, nq * 2) || cudaMalloc((void **)&dk, nk * 2) ||
	    cudaMalloc((void **)&dv, nk * 2)) {
		fprintf(stderr, "bench_flash: out of device memory\n");
		return 1;
	}
	gk_bf16 *dq1 = malloc(nq * 2), *dq2 = malloc(nq * 2);
	double tf = 0, tb = 0;
	for (int r = 0; r <= reps; r++) {       /* r = 0 warms up */
		cudaDeviceSynchronize();
		double t0 = now_s();
		if (gk_flash_fwd(q, k, v, o, lse, NULL, B, T, H, KV, hd, 0))
			return 1;
		cudaDeviceSynchronize();
		double t1 = now_s();
		if (gk_flash_bwd(q, k, v, o, dO, lse, D, NULL, dq, dk, dv, B, T, H, KV, hd, 0))
			return 1;
		cudaDeviceSynchronize();
		if (r) {
			tf += t1 - t0;
			tb += now_s() - t1;
		}
		if (r < 2)
			cudaMemcpy(r ? dq2 : dq1, dq, nq * 2, cudaMemcpyDeviceToHost);
	}
	if (cudaGetLastError() != cudaSuccess)
		return 1;
	/* causal: half the T x T square; forward 2 products, backward 5 */
	double fl = 2.0 * B * H * (double)T * T * hd;
	int same = !memcmp(dq1, dq2, nq * 2);
	int lay = gk_flash_layout_ok(0), mc = gk_flash_mma_check(hd, 0);
	printf("bench-flash kernel B=%d T=%d H=%d KV=%d hd=%d: forward %.3f ms (%.1f TFLOPS), "
	       "backward %.3f ms (%.1f TFLOPS); rerun dq bits %s; wmma layout check %s; "
	       "mma forward self-check %s\n", B, T, H,
	       KV, hd, 1e3 * tf / reps, fl / (tf / reps) / 1e12, 1e3 * tb / reps,
	       2.5 * fl / (tb / reps) / 1e12, same ? "identical" : "DIFFER",
	       lay == 1 ? "ok" : lay == 0 ? "FAILED (the fused attention would fall back)" : "not run",
	       mc == 1 ? "ok" : mc == 0 ? "FAILED (the model would run wmma)" : "not run (head dim)");
	cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(dO); cudaFree(o); cudaFree(lse);
	cudaFree(D); cudaFree(dq); cudaFree(dk); cudaFree(dv);
	free(dq1);
	free(dq2);
	return same ? 0 : 1;
}

/* ms per forward+backward of the model with attention mode `mode` */
static double model_ms(const llmt_config *c, int B, int T, int steps, const char *mode)
{
	llmt_par par = {1, 0, 1, 0, NULL};
	setenv("LLM_TRAIN_GPU_ATTN", mode, 1);
	llmt_gmodel *g = llmt_gmodel_create(c, &par, B, T, 1);
	if (!g)
		return -1;
	int M = B * T;
	int32_t *tok = malloc(sizeof *tok * M), *tgt = malloc(sizeof *tgt * M);
	double t = 0;
	for (int i = 0; tok && tgt && i < M; i++) {
		tok[i] = (int32_t)(rnd() % (uint32_t)c->vocab_size);
		tgt[i] = (int32_t)(rnd() % (uint32_t)c->vocab_size);
	}
	for (int s = 0; tok && tgt && s <= steps; s++) {
		double t0 = now_s();
		float loss;
		if (llmt_gmodel_zero_grad(g) || llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss) ||
		    llmt_gmodel_backward(g, 0, NULL, NULL, 1.0f) || llmt_gmodel_sync(g)) {
			t = -1;
			break;
		}
		if (s)
			t += now_s() - t0;
	}
	llmt_gmodel_free(g);
	free(tok);
	free(tgt);
	return t < 0 || !steps ? -1 : 1e3 * t / steps;
}

static int model(const char *cfg, int B, int T, int steps)
{
	llmt_config c;
	char err[512];
	if (llmt_config_load(cfg, &c, err, sizeof err)) {
		fprintf(stderr, "bench_flash: %s\n", err);
		return 64;
	}
	double f = model_ms(&c, B, T, steps, "fused"), ch = model_ms(&c, B, T, steps, "chunked");
	printf("bench-flash model %s B=%d T=%d: forward+backward %.2f ms fused, %.2f ms chunked "
	       "(%.2fx)\n", cfg, B, T, f, ch, f > 0 ? ch / f : 0);
	return f > 0 && ch > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	char why[200];
	if (argc < 2) {
		fprintf(stderr, "usage: bench_flash kernel B T H KV HD REPS | model CFG B T STEPS\n");
		return 64;
	}
	if (!llmt_gpu_available(why, sizeof why)) {
		printf("SKIP: no NVIDIA GPU (%s)\n", why);
		return 77;
	}
	if (llmt_gpu_select() < 0)
		return 1;
	if (!strcmp(argv[1], "kernel") && argc == 8)
		return kernel(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
			      atoi(argv[6]), atoi(argv[7]));
	if (!strcmp(argv[1], "model") && argc == 6)
		return model(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr, "bench_flash: bad arguments for '%s'\n", argv[1]);
	return 64;
}
