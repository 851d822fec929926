/* gpu_test.c: the GPU checks (run by the tests/gpu scripts and tests/gpu/check):
 *   probe                       exit 0 with a device, else SKIP + 77
 *   ref CONFIG bf16 B T STEPS TEXT OUTDIR
 *                               the reference driver protocol of
 *                               tests/reference/ref_model.c, on the GPU
 *   compare CONFIG TEXT         GPU vs CPU model (same seed, same data):
 *                               loss, logits, every gradient, 5 AdamW
 *                               steps; and run-to-run bit-identity
 *   nccl CONFIG TEXT            NCCL communicators for the TP, PP and DP
 *                               groups (world size 1 each): collectives,
 *                               bucketed DP reduce-scatter overlapping
 *                               backward, ZeRO-1 step, snapshot copy
 *   tp CONFIG TEXT              tensor parallelism with a one-rank TP
 *                               group (NCCL all-reduces on one GPU): the
 *                               same bits as without a group over 3
 *                               steps, and the TP-aware ZeRO-1 norm
 *   bench CONFIG B T STEPS      tokens/s and MFU of full training steps,
 *                               the measured cuBLASLt bf16 peak, and the
 *                               flash forward on mma.sync vs on wmma
 *                               (gpu_test_flash.c)
 *   hash                        the device XXH3 against libxxhash
 *                               (gpu_test_hash.c)
 * Exit: 0 pass, 1 fail, 77 no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>
#include "gpu/comm_nccl.h"
#include "gpu/blas.h"
#include "gpu/gmodel.h"
#include "model/bf16.h"
#include "model/matmul.h"
#include "model/model.h"
#include "train/optim.h"
#include "comm/parallel.h"
#include "ref_dump.h"
#include "gpu_test_hash.h"
#include "gpu_test_flash.h"

static int failures;

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(const char *what, double v, double limit)
{
	int ok = v <= limit && !isnan(v);
	printf("%-4s %-48s %.3e (limit %.1e)\n", ok ? "ok" : "FAIL", what, v, limit);
	if (!ok)
		failures++;
}

/* max |a - b| / max |b| */
static double rel(const float *a, const float *b, size_t n)
{
	double d = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		d = fmax(d, fabs((double)a[i] - b[i]));
		m = fmax(m, fabs((double)b[i]));
	}
	return d / (m > 1e-30 ? m : 1e-30);
}

static int need_gpu(void)
{
	char why[200];
	if (!llmt_gpu_available(why, sizeof why)) {
		printf("SKIP: no NVIDIA GPU (%s)\n", why);
		return 77;
	}
	if (llmt_gpu_select() < 0)
		return 1;
	return 0;
}

static unsigned char *read_text(const char *path, size_t need)
{
	FILE *f = fopen(path, "rb");
	unsigned char *t = malloc(need);
	if (!f || !t || fread(t, 1, need, f) != need) {
		fprintf(stderr, "gpu_test: cannot read %zu bytes of %s\n", need, path);
		exit(66);
	}
	fclose(f);
	return t;
}

static void batch(const unsigned char *text, int s, int M, int32_t *tok, int32_t *tgt, int V)
{
	for (int i = 0; i < M; i++) {
		tok[i] = text[(size_t)s * M + i] % V;
		tgt[i] = text[(size_t)s * M + i + 1] % V;
	}
}

static int load_cfg(const char *path, llmt_config *c)
{
	char err[512];
	if (llmt_config_load(path, c, err, sizeof err)) {
		fprintf(stderr, "gpu_test: %s\n", err);
		return -1;
	}
	return 0;
}

static const llmt_adamw_cfg ADAMW = {0.9, 0.95, 1e-8, 0.1, 0.0};

/* ref: same outputs as tests/reference/ref_model.c, computed on the GPU */
static int cmd_ref(char **a)
{
	llmt_config c;
	if (load_cfg(a[0], &c))
		return 64;
	int B = atoi(a[2]), T = atoi(a[3]), steps = atoi(a[4]), M = B * T;
	const char *out = a[6];
	unsigned char *text = read_text(a[5], (size_t)(steps + 1) * M + 1);
	llmt_par par = {1, 0, 1, 0, NULL};
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1);
	if (!g)
		return 70;
	llmt_model *h = llmt_gmodel_host(g);
	if (ref_dump_params("gpu_test", h, out))
		return 74;
	char path[4096];
	int32_t *tok = malloc(sizeof *tok * M), *tgt = malloc(sizeof *tgt * M);
	float *logits = malloc(sizeof *logits * (size_t)M * c.vocab_size);
	snprintf(path, sizeof path, "%s/losses.txt", out);
	FILE *lf = fopen(path, "w");
	if (!tok || !tgt || !logits || !lf)
		return 70;
	for (int s = 0; s <= steps; s++) {
		batch(text, s, M, tok, tgt, c.vocab_size);
		float loss;
		if (llmt_gmodel_zero_grad(g) || llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss) ||
			llmt_gmodel_backward(g, 0, NULL, NULL, 1.0f))
			return 70;
		fprintf(lf, "%.9g\n", loss);
		if (s == 0) {
			if (llmt_gmodel_logits(g, logits) || llmt_gmodel_download_grads(g) ||
				ref_dump_step0("gpu_test", h, out, tok, tgt, logits, M, c.vocab_size))
				return 74;
		}
		if (s < steps && llmt_gmodel_adamw(g, 1e-3, 1.0, &ADAMW, s + 1))
			return 70;
	}
	fclose(lf);
	llmt_gmodel_free(g);
	free(tok);
	free(tgt);
	free(logits);
	free(text);
	return 0;
}

/* compare: CPU bf16 model and GPU model from the same init and data */
static int cmd_compare(char **a)
{
	llmt_config c;
	if (load_cfg(a[0], &c))
		return 64;
	const int B = 2, T = 64, M = B * T, steps = 5;
	unsigned char *text = read_text(a[1], (size_t)(steps + 1) * M + 1);
	llmt_par par = {1, 0, 1, 0, NULL};
	llmt_model *cm = llmt_model_create(&c, &par, LLMT_BF16, B, T, 1);
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1);
	if (!cm || !g)
		return 1;
	llmt_model *h = llmt_gmodel_host(g);
	size_t n = llmt_model_nparams(cm);
	int np;
	const llmt_param_info *pi = llmt_model_params(cm, &np);
	if (n != llmt_model_nparams(h) || memcmp(llmt_model_master(cm), llmt_model_master(h), n * 4)) {
		printf("FAIL GPU and CPU models do not start from the same weights\n");
		return 1;
	}
	int32_t tok[M], tgt[M];
	float *lg = malloc((size_t)M * c.vocab_size * 4), *g1 = malloc(n * 4);
	float *cmv = calloc(n, 4), *cvv = calloc(n, 4), *cgr = malloc(n * 4);
	if (!lg || !g1 || !cmv || !cvv || !cgr)
		return 1;
	for (int s = 0; s <= steps; s++) {
		batch(text, s, M, tok, tgt, c.vocab_size);
		float lc, lgpu;
		llmt_model_zero_grad(cm);
		if (llmt_model_forward(cm, 0, tok, NULL, tgt, NULL, &lc) ||
			llmt_model_backward(cm, 0, NULL, NULL, 1.0f) || llmt_gmodel_zero_grad(g) ||
			llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &lgpu) ||
			llmt_gmodel_backward(g, 0, NULL, NULL, 1.0f) || llmt_gmodel_download_grads(g))
			return 1;
		char what[160];
		snprintf(what, sizeof what, "step %d loss |gpu-cpu|/cpu (%.5f vs %.5f)", s, lgpu, lc);
		check(what, fabs(lgpu - lc) / fabs(lc), 0.02);
		if (s == 0) {
			if (llmt_gmodel_logits(g, lg))
				return 1;
			check("logits max rel", rel(lg, llmt_model_logits(cm, 0), (size_t)M * c.vocab_size),
				  0.05);
			double worst = 0;
			const char *wn = "";
			for (int t = 0; t < np; t++) {
				double r = rel(llmt_model_grads(h) + pi[t].offset,
							   llmt_model_grads(cm) + pi[t].offset, pi[t].numel);
				if (r > worst) {
					worst = r;
					wn = pi[t].name;
				}
			}
			snprintf(what, sizeof what, "worst gradient rel (%s)", wn);
			check(what, worst, 0.1);
			/* determinism: the same step again gives the same bits */
			memcpy(g1, llmt_model_grads(h), n * 4);
			float l2;
			if (llmt_gmodel_zero_grad(g) || llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &l2) ||
				llmt_gmodel_backward(g, 0, NULL, NULL, 1.0f) || llmt_gmodel_download_grads(g))
				return 1;
			check("rerun: gradient bits that differ", (double)(memcmp(g1, llmt_model_grads(h),
				  n * 4) != 0) + (l2 != lgpu), 0);
		}
		if (s == steps)
			break;
		memcpy(cgr, llmt_model_grads(cm), n * 4);
		for (int t = 0; t < np; t++)
			llmt_adamw_update(llmt_model_master(cm) + pi[t].offset, cgr + pi[t].offset,
							  cmv + pi[t].offset, cvv + pi[t].offset, pi[t].numel, 1e-3, 1.0,
							  &ADAMW, s + 1, !pi[t].no_decay);
		llmt_model_sync_compute(cm);
		if (llmt_gmodel_adamw(g, 1e-3, 1.0, &ADAMW, s + 1))
			return 1;
	}
	if (llmt_gmodel_download_master(g))
		return 1;
	check("master weights after 5 AdamW steps, max rel",
		  rel(llmt_model_master(h), llmt_model_master(cm), n), 0.05);
	/* the fused AdamW against optim.c's on identical inputs: same bits
	 * except for fused multiply-adds (tiny) */
	llmt_gmodel_free(g);
	llmt_model_free(cm);
	free(lg); free(g1); free(cmv); free(cvv); free(cgr); free(text);
	return failures ? 1 : 0;
}

/* nccl: the NCCL path with one rank per group */
static int cmd_nccl(char **a, int *argc, char ***argv)
{
	llmt_comm *world = llmt_comm_world(argc, argv);
	llmt_parallel p;
	if (!world || llmt_parallel_init(&p, world))
		return 1;
	llmt_nccl *tp = llmt_nccl_create(p.tp_comm, 0), *pp = llmt_nccl_create(p.pp_comm, 0);
	llmt_nccl *dp = llmt_nccl_create(p.dp_comm, 0);
	check("NCCL communicators created (TP, PP, DP)", (tp == NULL) + (pp == NULL) + (dp == NULL), 0);
	if (!tp || !pp || !dp)
		return 1;
	cudaStream_t st;
	cudaStreamCreate(&st);
	const size_t n = 1 << 20;
	float *d, *e, *hbuf = malloc(n * 4), *hb2 = malloc(n * 4);
	cudaMalloc((void **)&d, n * 4);
	cudaMalloc((void **)&e, n * 4);
	for (size_t i = 0; i < n; i++)
		hbuf[i] = (float)(i % 1000) * 0.5f;
	cudaMemcpy(d, hbuf, n * 4, cudaMemcpyHostToDevice);
	int bad = llmt_nccl_allreduce_sum_f32(tp, d, d, n, st) ||
			  llmt_nccl_reduce_scatter_sum_f32(dp, d, e, n, st) ||
			  llmt_nccl_allgather_f32(dp, e, d, n, st) ||
			  llmt_nccl_bcast_bytes(pp, d, n * 4, 0, st) || llmt_nccl_wait(tp, st);
	check("collectives enqueued and completed under the watchdog", bad, 0);
	cudaMemcpy(hb2, d, n * 4, cudaMemcpyDeviceToHost);
	check("world-size-1 all-reduce/reduce-scatter/all-gather/bcast keep values",
		  memcmp(hbuf, hb2, n * 4) != 0, 0);
	/* DP-bucketed backward equals plain backward (sum over one replica) */
	llmt_config c;
	if (load_cfg(a[0], &c))
		return 64;
	const int B = 2, T = 64, M = B * T;
	unsigned char *text = read_text(a[1], (size_t)M + 1);
	int32_t tok[M], tgt[M];
	batch(text, 0, M, tok, tgt, c.vocab_size);
	llmt_par par = {1, 0, 1, 0, NULL};
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1);
	if (!g)
		return 1;
	llmt_model *h = llmt_gmodel_host(g);
	size_t np = llmt_model_nparams(h);
	float *g0 = malloc(np * 4), loss;
	if (llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss) ||
		llmt_gmodel_backward(g, 0, NULL, NULL, 1.0f) || llmt_gmodel_download_grads(g))
		return 1;
	memcpy(g0, llmt_model_grads(h), np * 4);
	bad = llmt_gmodel_set_dp(g, dp, 4096) || llmt_gmodel_zero_grad(g) ||
		  llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss) ||
		  llmt_gmodel_backward_dp(g, 0, NULL, NULL, 1.0f, 1) || llmt_gmodel_dp_wait(g) ||
		  llmt_gmodel_download_grads(g);
	check("bucketed DP reduce-scatter during backward ran", bad, 0);
	check("DP-reduced gradients equal the local ones (bits)",
		  memcmp(g0, llmt_model_grads(h), np * 4) != 0, 0);
	/* ZeRO-1 step: norm over the reduced blocks, AdamW, all-gather */
	double norm = -1, ref = sqrt(llmt_sumsq_det(g0, np));
	bad = llmt_gmodel_step_dp(g, 1e-3, 1.0, &ADAMW, 1, &norm) || llmt_gmodel_download_master(g);
	check("ZeRO-1 step (norm, AdamW, all-gather) ran", bad, 0);
	check("ZeRO-1 global gradient norm vs host, rel", fabs(norm - ref) / ref, 1e-9);
	/* asynchronous snapshot equals the master weights */
	const float *snap = NULL;
	bad = llmt_gmodel_snapshot_start(g) || !(snap = llmt_gmodel_snapshot_wait(g)) ||
		  llmt_gmodel_download_master(g);
	check("pinned async snapshot equals master", bad || memcmp(snap, llmt_model_master(h), np * 4),
		  0);
	llmt_gmodel_free(g);
	llmt_nccl_free(tp);
	llmt_nccl_free(pp);
	llmt_nccl_free(dp);
	cudaFree(d);
	cudaFree(e);
	free(hbuf); free(hb2); free(g0); free(text);
	llmt_parallel_free(&p);
	llmt_comm_finalize(world);
	return failures ? 1 : 0;
}

/* tp: the tensor-parallel code path of the GPU model on one GPU. A real
 * TP group needs one GPU per rank (NCCL refuses two ranks on one device),
 * so here the TP group has one rank: the model built with it issues every
 * TP all-reduce (and the norm's all-gather) through NCCL and must give the
 * bits of the model built without a group (a one-rank sum is a copy). */
static int cmd_tp(char **a, int *argc, char ***argv)
{
	llmt_comm *world = llmt_comm_world(argc, argv);
	llmt_parallel p;
	if (!world || llmt_parallel_init(&p, world))
		return 1;
	llmt_config c;
	if (load_cfg(a[0], &c))
		return 64;
	const int B = 2, T = 64, M = B * T, steps = 3;
	unsigned char *text = read_text(a[1], (size_t)(steps + 1) * M + 1);
	llmt_par with = {1, 0, 1, 0, p.tp_comm}, without = {1, 0, 1, 0, NULL};
	llmt_gmodel *ga = llmt_gmodel_create(&c, &with, B, T, 1);
	llmt_gmodel *gb = llmt_gmodel_create(&c, &without, B, T, 1);
	check("GPU models built with and without a one-rank TP group", !ga + !gb, 0);
	if (!ga || !gb)
		return 1;
	llmt_model *ha = llmt_gmodel_host(ga), *hb = llmt_gmodel_host(gb);
	size_t n = llmt_model_nparams(ha), nl = (size_t)M * c.vocab_size;
	int32_t tok[M], tgt[M];
	float *la = malloc(nl * 4), *lb = malloc(nl * 4), *ga0 = malloc(n * 4);
	double ta = 0, tb = 0;
	for (int s = 0; s <= steps; s++) {
		batch(text, s, M, tok, tgt, c.vocab_size);
		float lossa, lossb;
		double t0 = now_s();
		int bad = llmt_gmodel_zero_grad(ga) ||
				  llmt_gmodel_forward(ga, 0, tok, NULL, tgt, NULL, &lossa) ||
				  llmt_gmodel_backward(ga, 0, NULL, NULL, 1.0f) || llmt_gmodel_sync(ga);
		double t1 = now_s();
		bad |= llmt_gmodel_zero_grad(gb) ||
			   llmt_gmodel_forward(gb, 0, tok, NULL, tgt, NULL, &lossb) ||
			   llmt_gmodel_backward(gb, 0, NULL, NULL, 1.0f) || llmt_gmodel_sync(gb);
		if (s > 0) {        /* step 0 warms up */
			ta += t1 - t0;
			tb += now_s() - t1;
		}
		bad |= llmt_gmodel_logits(ga, la) || llmt_gmodel_logits(gb, lb) ||
			   llmt_gmodel_download_grads(ga) || llmt_gmodel_download_grads(gb);
		char what[160];
		snprintf(what, sizeof what, "step %d: TP path ran (loss %.5f)", s, lossa);
		check(what, bad, 0);
		if (bad)
			return 1;
		snprintf(what, sizeof what, "step %d: loss, logits, gradient bits that differ", s);
		check(what, (double)(lossa != lossb) + (memcmp(la, lb, nl * 4) != 0) +
					(memcmp(llmt_model_grads(ha), llmt_model_grads(hb), n * 4) != 0), 0);
		if (s == steps)
			break;
		if (llmt_gmodel_adamw(ga, 1e-3, 1.0, &ADAMW, s + 1) ||
			llmt_gmodel_adamw(gb, 1e-3, 1.0, &ADAMW, s + 1) || llmt_gmodel_download_master(ga) ||
			llmt_gmodel_download_master(gb))
			return 1;
		snprintf(what, sizeof what, "step %d: weight bits after device AdamW that differ", s);
		check(what, memcmp(llmt_model_master(ha), llmt_model_master(hb), n * 4) != 0, 0);
	}
	printf("info forward+backward with the one-rank TP group %.2f ms, without %.2f ms\n",
		   1e3 * ta / steps, 1e3 * tb / steps);
	/* ZeRO-1 step with the TP-aware norm (one DP, one TP rank): the norm
	 * of the gradients, as on the host */
	/* a fresh model: ZeRO-1 shares are planned before any optimizer state */
	llmt_nccl *dp = llmt_nccl_create(p.dp_comm, 0);
	llmt_gmodel *gz = llmt_gmodel_create(&c, &with, B, T, 1);
	llmt_model *hz = gz ? llmt_gmodel_host(gz) : NULL;
	double norm = -1;
	int bad = !dp || !gz || llmt_gmodel_set_dp(gz, dp, 4096) || llmt_gmodel_zero_grad(gz) ||
			  llmt_gmodel_forward(gz, 0, tok, NULL, tgt, NULL, &(float){0}) ||
			  llmt_gmodel_backward_dp(gz, 0, NULL, NULL, 1.0f, 1) || llmt_gmodel_dp_wait(gz) ||
			  llmt_gmodel_download_grads(gz);
	if (!bad)
		memcpy(ga0, llmt_model_grads(hz), n * 4);
	bad = bad || llmt_gmodel_step_dp(gz, 1e-3, 1.0, &ADAMW, steps + 1, &norm);
	check("ZeRO-1 step with the TP group ran", bad, 0);
	if (!bad) {
		double ref = sqrt(llmt_sumsq_det(ga0, n));
		check("ZeRO-1 norm (DP sum, TP all-gather) vs host, rel", fabs(norm - ref) / ref, 1e-9);
	}
	llmt_gmodel_free(ga);
	llmt_gmodel_free(gb);
	if (gz)
		llmt_gmodel_free(gz);
	llmt_nccl_free(dp);
	free(la); free(lb); free(ga0); free(text);
	llmt_parallel_free(&p);
	llmt_comm_finalize(world);
	return failures ? 1 : 0;
}

/* n bf16 values, uniform in [-1, 1), to device memory at d */
int random_bf16(void *d, size_t n, uint64_t seed)
{
	bf16 *h = malloc(n * sizeof *h);
	if (!h)
		return -1;
	uint64_t r = seed | 1;
	for (size_t i = 0; i < n; i++) {
		r ^= r << 13; r ^= r >> 7; r ^= r << 17;
		h[i] = f32_to_bf16((float)(r >> 40) / (float)(1u << 23) - 1.0f);
	}
	int rc = cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
	free(h);
	return rc;
}

/* measured peak: a large bf16 product through the same cuBLASLt path, on
 * random operands (zeros would flatter it: less power, higher clocks).
 * LLMT_GPU_PEAK_N sets the size (default 8192; the emulation's check uses
 * a small one). */
static double mm_peak_tflops(void)
{
	const char *e = getenv("LLMT_GPU_PEAK_N");
	const int N = e && atoi(e) > 0 ? atoi(e) : 8192;
	size_t nn = (size_t)N * N;
	void *A = NULL, *B = NULL, *C = NULL;
	double best = 0;
	if (cudaMalloc(&A, nn * 2) || cudaMalloc(&B, nn * 2) || cudaMalloc(&C, nn * 2) ||
		random_bf16(A, nn, 88172645463325252ull) || random_bf16(B, nn, 1181783497276652981ull)) {
		cudaFree(A); cudaFree(B); cudaFree(C);
		return 0;
	}
	cudaStream_t st;
	cudaStreamCreate(&st);
	gmm_ctx *mm = gmm_create(st, 64u << 20);
	/* the first call chooses the algorithm (not timed) */
	int bad = !mm || gmm(mm, 1, N, N, N, A, 0, B, 1, LLMT_DT_BF16, C, LLMT_DT_BF16, 1.0f, 0);
	for (int r = 0; r < 3 && !bad; r++) {
		cudaStreamSynchronize(st);
		double t0 = now_s();
		for (int i = 0; i < 10 && !bad; i++)
			bad = gmm(mm, 1, N, N, N, A, 0, B, 1, LLMT_DT_BF16, C, LLMT_DT_BF16, 1.0f, 0);
		cudaStreamSynchronize(st);
		double tf = 10 * 2.0 * N * (double)N * N / (now_s() - t0) / 1e12;
		best = !bad && tf > best ? tf : best;
	}
	gmm_free(mm);
	cudaFree(A); cudaFree(B); cudaFree(C);
	cudaStreamDestroy(st);
	return bad ? 0 : best;
}

static int cmd_bench(char **a)
{
	llmt_config c;
	if (load_cfg(a[0], &c))
		return 64;
	int B = atoi(a[1]), T = atoi(a[2]), steps = atoi(a[3]), M = B * T;
	llmt_par par = {1, 0, 1, 0, NULL};
	double t0 = now_s();
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1);
	if (!g)
		return 1;
	double tbuild = now_s() - t0;
	int32_t *tok = malloc(sizeof *tok * M), *tgt = malloc(sizeof *tgt * M);
	uint64_t r = 88172645463325252ull;
	for (int i = 0; i < M; i++) {     /* xorshift tokens: speed does not depend on them */
		r ^= r << 13; r ^= r >> 7; r ^= r << 17;
		tok[i] = (int32_t)(r % (uint64_t)c.vocab_size);
		tgt[i] = (int32_t)((r >> 20) % (uint64_t)c.vocab_size);
	}
	double tsum = 0, loss0 = 0, lossN = 0;
	for (int s = 0; s < steps + 1; s++) {   /* step 0 warms up (plans, caches) */
		double ts = now_s();
		float loss;
		double ss;
		if (llmt_gmodel_zero_grad(g) || llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss) ||
			llmt_gmodel_backward(g, 0, NULL, NULL, 1.0f) || llmt_gmodel_grad_sumsq(g, &ss) ||
			llmt_gmodel_adamw(g, 3e-4, 1.0, &ADAMW, s + 1) || llmt_gmodel_sync(g))
			return 1;
		if (s == 0)
			loss0 = loss;
		else
			tsum += now_s() - ts;
		lossN = loss;
	}
	size_t mfree = 0, mtotal = 0;
	cudaMemGetInfo(&mfree, &mtotal);
	double tps = (double)M * steps / tsum;
	double fpt = llmt_config_flops_per_token(&c, T);
	double peak = mm_peak_tflops();
	const double nominal = 989.4;   /* H100/H200 SXM dense bf16 TFLOPS */
	struct cudaDeviceProp prop;
	cudaGetDeviceProperties(&prop, 0);
	printf("bench %s: %s, params %.1fM, B=%d T=%d: %.0f tokens/s, %.1f TFLOPS, MFU %.1f%% of "
		   "%.0f nominal, %.1f%% of measured cuBLASLt peak %.0f TFLOPS; loss %.3f -> %.3f "
		   "(same batch); build %.1f s; device memory in use %.1f of %.1f GiB\n",
		   a[0], prop.name, llmt_config_n_params(&c) / 1e6, B, T, tps, tps * fpt / 1e12,
		   100 * tps * fpt / 1e12 / nominal, nominal, peak > 0 ? 100 * tps * fpt / 1e12 / peak : 0,
		   peak, loss0, lossN, tbuild, (double)(mtotal - mfree) / (1u << 30),
		   (double)mtotal / (1u << 30));
	llmt_gmodel_free(g);
	free(tok);
	free(tgt);
	if (gpu_test_flash(&c, B, T))   /* the fused forward on mma.sync against wmma */
		return 1;
	return lossN < loss0 ? 0 : 1;   /* training the same batch must lower its loss */
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gpu_test probe|ref|compare|nccl|tp|bench|hash ...\n");
		return 64;
	}
	/* the CPU model here is the CPU model, whatever the job environment
	 * says (LLM_TRAIN_GPU would route llmt_model_create to the GPU) */
	unsetenv("LLM_TRAIN_GPU");
	int rc = need_gpu();
	if (rc)
		return rc;
	const char *cmd = argv[1];
	if (!strcmp(cmd, "probe"))
		return 0;
	if (!strcmp(cmd, "ref") && argc == 9)
		return cmd_ref(argv + 2);
	if (!strcmp(cmd, "compare") && argc == 4)
		return cmd_compare(argv + 2);
	if (!strcmp(cmd, "nccl") && argc == 4)
		return cmd_nccl(argv + 2, &argc, &argv);
	if (!strcmp(cmd, "tp") && argc == 4)
		return cmd_tp(argv + 2, &argc, &argv);
	if (!strcmp(cmd, "bench") && argc == 6)
		return cmd_bench(argv + 2);
	if (!strcmp(cmd, "hash") && argc == 2)
		return gpu_test_hash();
	fprintf(stderr, "gpu_test: bad arguments for '%s'\n", cmd);
	return 64;
}
