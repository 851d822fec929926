/* test_memest_gpu.c: memest.c's device-memory estimate against the bytes
 * the emulated CUDA runtime (cuda_emu.c) hands out: a GPU model built
 * through llmt_model_create (LLM_TRAIN_GPU=0) must allocate exactly the
 * estimate's params + activations + scratch + the cuBLASLt workspace
 * (blas.c runs over the emulated cuBLASLt), and the device optimizer
 * (llmt_dev_optim) exactly its optimizer term. One process: tp = dp = 1, whole model
 * and both stages of pp = 2, tied and untied, QK-norm and GQA, one
 * attention chunk (T <= 128) and several (T = 256, 192), fused attention
 * and chunked (LLM_TRAIN_GPU_ATTN), each without recomputation and with
 * --recompute attn and full (llmt_model_create_rc: less device memory,
 * and exactly the estimate's), also in only the first K layers
 * (--recompute-layers: between none and all). The host
 * estimate's pinned part (loss row, checkpoint snapshot) against the
 * emulation's cudaMallocHost bytes; its other terms (the mirror kept: no
 * whole fp32 master or gradients; the resume's master, m and v) against
 * the host heap (glibc mallinfo2, less the emulated
 * device and pinned blocks), model by model, optimizer call by call. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu/bridge.h"
#include "memory/memest.h"
#include "model/bf16.h"
#include "model/model.h"
#include "model/model_impl.h"
#include "train/optim.h"
#include "train/sdc.h"
#include "comm/parallel.h"
#include "train/pipeline.h"
#include "small_cfg.h"

size_t llmt_emu_dev_bytes(size_t *peak);   /* cuda_emu.c */
size_t llmt_emu_pinned_bytes(void);
unsigned long long llmt_emu_h2d_bytes(void);

static int nlayers; /* the model's layers when set, else small_cfg's */

static double check_rc(int gqa, int tied, int pp, int pp_rank, int A, int B, int T, int rc)
{
	llmt_config c;
	llmt_grid l;
	llmt_memest_gpu e;
	char err[256], pps[8];

	small_cfg(&c, gqa);
	if (nlayers)
		c.n_layers = nlayers;
	c.tie_embeddings = tied;
	c.max_seq = 256;
	snprintf(pps, sizeof(pps), "%d", pp);
	assert_int_equal(llmt_grid_from_values(&l, pp, pp_rank, NULL, pps, NULL, NULL, NULL, err,
		sizeof(err)), 0);
	llmt_par par = { 1, 0, pp, pp_rank, NULL };
	size_t before = llmt_emu_dev_bytes(NULL), pin0 = llmt_emu_pinned_bytes();
	setenv("LLM_TRAIN_GPU", "0", 1);
	llmt_model *m = llmt_model_create_rc(&c, &par, LLMT_BF16, B, T, llmt_pipeline_slots(pp, A),
		rc);
	unsetenv("LLM_TRAIN_GPU");
	assert_non_null(m);
	assert_true(llmt_dev_model(m));
	assert_int_equal(llmt_emu_pinned_bytes() - pin0, (size_t)B * T * 4);   /* the loss row */
	double model = (double)(llmt_emu_dev_bytes(NULL) - before);
	llmt_adamw_cfg ac = { 0.9, 0.95, 1e-8, 0.1, 0 };
	llmt_opt_env oe = { &ac, A, 0, pp, pp_rank, tied && pp > 1, NULL, NULL, NULL };
	llmt_trainopt *o = NULL;
	assert_int_equal(llmt_dev_optim(m, &oe, &o), 1);
	assert_non_null(o);
	double opt = (double)(llmt_emu_dev_bytes(NULL) - before) - model;
	llmt_memory_estimate_gpu(&c, &l, llmt_model_nparams(m), B, T, A, 1, rc, &e);
	printf("gqa=%d tied=%d stage %d/%d A=%d B=%d T=%d recompute %s in %d layers: model %.0f "
		"(estimate %.0f, activations %.0f), optimizer %.0f (estimate %.0f)\n", gqa, tied, pp_rank,
		pp, A, B, T, llmt_recompute_name(llmt_rc_mode(rc)), llmt_rc_layers(rc, c.n_layers / pp), model, e.params + e.activations + e.scratch + e.workspace,
		e.activations, opt, e.optimizer);
	assert_float_equal(model, e.params + e.activations + e.scratch + e.workspace, 0);
	assert_float_equal(opt, e.optimizer, 0);
	assert_float_equal(e.total, e.params + e.optimizer + e.activations + e.scratch + e.workspace, 1);
	/* host side: the pinned checkpoint snapshot, allocated by the first one */
	llmt_memest_host h;
	llmt_memory_estimate_gpu_host(&c, &l, llmt_model_nparams(m), B, T, 1, 1, 0, &h);
	size_t pin1 = llmt_emu_pinned_bytes();
	assert_int_equal(o->ops->snapshot(o), 0);
	llmt_opt_state os;
	assert_int_equal(o->ops->saved(o, &os), 0);
	printf("  host: pinned snapshot %zu (estimate %.0f), mirror estimate %.0f, total %.0f\n",
		llmt_emu_pinned_bytes() - pin1, h.snapshot, h.mirror, h.total);
	assert_float_equal((double)(llmt_emu_pinned_bytes() - pin1), h.snapshot, 0);
	assert_float_equal(h.total, h.mirror + h.staging + fmax(h.init, h.snapshot + h.writer), 1);
	assert_float_equal(h.writer, 0, 0);   /* the writer borrows the pinned snapshot */
	llmt_memory_estimate_gpu_host(&c, &l, llmt_model_nparams(m), B, T, 1, 0, 1, &h);
	assert_float_equal(h.snapshot, 0, 0);
	assert_float_equal(h.load, (double)llmt_model_nparams(m) * 12, 0);
	o->ops->free(o);
	llmt_model_free(m);
	assert_int_equal(llmt_emu_pinned_bytes(), pin0);
	assert_int_equal(llmt_emu_dev_bytes(NULL), before);   /* all given back */
	return model;
}

/* none, attn, full: each exactly its estimate, and each keeps less */
static void check(int gqa, int tied, int pp, int pp_rank, int A, int B, int T)
{
	double none = check_rc(gqa, tied, pp, pp_rank, A, B, T, LLMT_RECOMPUTE_NONE);
	double attn = check_rc(gqa, tied, pp, pp_rank, A, B, T, LLMT_RECOMPUTE_ATTN);
	double full = check_rc(gqa, tied, pp, pp_rank, A, B, T, LLMT_RECOMPUTE_FULL);
	assert_true(attn < none);
	assert_true(full < attn);
}

static void test_estimate(void **st)
{
	(void)st;
	/* the fused attention (the default: no score buffers), then the
	 * chunked one */
	for (int chunked = 0; chunked < 2; chunked++) {
		setenv("LLM_TRAIN_GPU_ATTN", chunked ? "chunked" : "fused", 1);
		printf("%s attention\n", chunked ? "chunked" : "fused");
		check(0, 1, 1, 0, 2, 2, 16);      /* tied, one chunk */
		check(1, 0, 1, 0, 1, 1, 256);     /* QK-norm, GQA, untied, chunks of 128 */
		check(1, 0, 2, 0, 4, 1, 192);     /* first stage, 2 slots, chunks of 64 */
		check(0, 1, 2, 1, 4, 2, 100);     /* last stage with the tied copy */
	}
	unsetenv("LLM_TRAIN_GPU_ATTN");
}

/* 4 layers: attn and full in the first K (2 of 4; 1 of a stage's 2 in two
 * slots) exactly their estimates, strictly between none and all layers
 * (fails where the allocation or the estimate ignores K) */
static void layers_case(int gqa, int pp, int A, int k)
{
	for (int r = LLMT_RECOMPUTE_ATTN; r <= LLMT_RECOMPUTE_FULL; r++) {
		double none = check_rc(gqa, 0, pp, 0, A, 2, 64, LLMT_RECOMPUTE_NONE);
		double all = check_rc(gqa, 0, pp, 0, A, 2, 64, r);
		double some = check_rc(gqa, 0, pp, 0, A, 2, 64, LLMT_RC_PLAN(r, k));
		assert_true(some < none && some > all);
	}
}

static void test_layers(void **st)
{
	(void)st;
	nlayers = 4;
	setenv("LLM_TRAIN_GPU_ATTN", "chunked", 1);
	layers_case(0, 1, 1, 2);
	unsetenv("LLM_TRAIN_GPU_ATTN");
	layers_case(1, 2, 4, 1);
	nlayers = 0;
}

/* host heap bytes now: glibc's in-use chunks (mallinfo2), less the
 * emulation's device memory (cudaMalloc blocks and their DEV_HDR headers:
 * cuda_emu.c) and its pinned cudaMallocHost blocks */
static double host_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (double)(mi.uordblks + mi.hblkhd) - (double)llmt_emu_dev_bytes(NULL) -
		(double)llmt_emu_pinned_bytes();
}

/* what the heap holds beyond the estimate: the parameter table, the
 * emulation's per-block headers and bookkeeping, malloc's chunk headers
 * (measured 47 to 56 KB); a term of n x 2 (the bf16 copy, 1.4 to 2.6 MB here)
 * or more left out on either side is far beyond it */
#define HOST_SLACK (96.0 * 1024)

static void host_case(int tied, int pp, int pp_rank)
{
	llmt_config c;
	llmt_grid l;
	char err[256], pps[8];
	small_cfg(&c, !tied);
	c.vocab_size = 2048;
	c.d_model = 128;
	c.d_ff = 384;
	c.n_layers = 4;
	c.tie_embeddings = tied;
	snprintf(pps, sizeof(pps), "%d", pp);
	assert_int_equal(llmt_grid_from_values(&l, pp, pp_rank, NULL, pps, NULL, NULL, NULL, err,
		sizeof(err)), 0);
	llmt_par par = { 1, 0, pp, pp_rank, NULL };
	int B = 1, T = 16, A = 2;
	double h0 = host_bytes();
	unsigned long long up0 = llmt_emu_h2d_bytes();
	setenv("LLM_TRAIN_GPU", "0", 1);
	llmt_model *m = llmt_model_create(&c, &par, LLMT_BF16, B, T, llmt_pipeline_slots(pp, A));
	unsetenv("LLM_TRAIN_GPU");
	assert_non_null(m);
	size_t n = llmt_model_nparams(m);
	float *ref = malloc(n * 4);     /* the init's weights (measured before h0) */
	assert_non_null(ref);
	llmt_model_init_range(m, 0, n, ref);
	uint64_t ref_sum = llmt_checksum_f32(ref, n);
	free(ref);
	llmt_memest_host e, eh;
	llmt_memory_estimate_gpu_host(&c, &l, n, B, T, 1, 1, 1, &e);
	llmt_memory_estimate_gpu_host(&c, &l, n, B, T, 0, 1, 1, &eh);
	/* the tied copy's host buffer is the optimizer's */
	double tied_h = tied && pp > 1 ? (double)c.vocab_size * c.d_model * 4 : 0;
	double base = e.mirror + e.staging - tied_h, at = host_bytes() - h0;
	printf("host, tied=%d stage %d/%d, %zu parameters: model %.0f bytes (estimate: mirror %.0f + "
		"staging %.0f; no whole master: %.0f)\n", tied, pp_rank, pp, n, at, e.mirror,
		e.staging - tied_h, (double)n * 4);
	assert_float_equal(e.init, (double)n * 4 + 4, 0);    /* n < GINIT_CHUNK: freed already */
	assert_float_equal(at, base, HOST_SLACK);
	llmt_adamw_cfg ac = { 0.9, 0.95, 1e-8, 0.1, 0 };
	llmt_opt_env oe = { &ac, A, 0, pp, pp_rank, tied && pp > 1, NULL, NULL, NULL };
	llmt_trainopt *o = NULL;
	assert_int_equal(llmt_dev_optim(m, &oe, &o), 1);
	assert_non_null(o);
	at = host_bytes() - h0;
	printf("  with the device optimizer %.0f (estimate %.0f: no gradients)\n", at, base + tied_h);
	assert_float_equal(at, base + tied_h, HOST_SLACK);
	/* the init made once: its n floats went up once (staged in the
	 * gradient buffer, the master made from there), not again for the
	 * master; the rest is the rotary tables */
	double up = (double)(llmt_emu_h2d_bytes() - up0), tables = (double)T * (c.d_model / c.n_heads) * 4;
	printf("  host to device %.0f bytes (the init's %.0f, rotary tables %.0f)\n", up,
		(double)n * 4, tables);
	assert_float_equal(up, (double)n * 4 + tables, 0);
	/* an SDC check: the replicas' weights summed a piece at a time, no
	 * whole copy kept; before any step they are the init's, bit for bit
	 * (the device master made from the init kept in grads) */
	uint64_t sum;
	assert_int_equal(o->ops->weights_sum(o, &sum), 0);
	assert_float_equal(host_bytes() - h0, base + tied_h, HOST_SLACK);
	assert_true(sum == ref_sum);
	/* a resume (dp = 1): the whole master, m and v while loading, then
	 * none */
	llmt_opt_state os = { 0 };
	assert_float_equal(e.load, (double)n * 12, 0);
	assert_int_equal(o->ops->load_into(o, 1, &os), 0);
	at = host_bytes() - h0;
	printf("  loading a checkpoint %.0f (estimate %.0f)\n", at, base + tied_h + e.load);
	assert_float_equal(at, base + tied_h + e.load, HOST_SLACK);
	assert_int_equal(o->ops->loaded(o, 1, 1), 0);
	assert_float_equal(host_bytes() - h0, base + tied_h, HOST_SLACK);
	/* the snapshot is pinned (check_rc counts it), nothing else */
	assert_int_equal(o->ops->snapshot(o), 0);
	assert_int_equal(o->ops->saved(o, &os), 0);
	assert_float_equal(host_bytes() - h0, base + tied_h, HOST_SLACK);
	assert_float_equal(e.total, base + tied_h + fmax(fmax(e.init, e.load), e.snapshot), 1);
	o->ops->free(o);
	llmt_model_free(m);
	/* a host optimizer's model: master and gradients on the host (the
	 * gradient buffer made at the first read), the estimate's mirror
	 * less the host optimizer's state */
	h0 = host_bytes();
	setenv("LLM_TRAIN_GPU", "0", 1);
	m = llmt_model_create(&c, &par, LLMT_BF16, B, T, llmt_pipeline_slots(pp, A));
	unsetenv("LLM_TRAIN_GPU");
	assert_non_null(m);
	assert_non_null(llmt_model_grads(m));
	/* its host master: the init's, downloaded (kept in grads since the
	 * model was made), not made again on the host */
	assert_true(llmt_checksum_f32(llmt_model_master(m), n) == ref_sum);
	llmt_memest hm;
	llmt_memory_estimate(&c, &l, n, B, T, 1, 0, 1, 0, LLMT_RECOMPUTE_NONE, &hm);
	at = host_bytes() - h0;
	printf("  host optimizer's model %.0f (estimate %.0f)\n", at,
		eh.mirror - hm.optimizer - hm.comm + eh.staging);
	assert_float_equal(at, eh.mirror - hm.optimizer - hm.comm + eh.staging, HOST_SLACK);
	llmt_model_free(m);
}

static void test_host(void **st)
{
	(void)st;
	/* the emulation's own first-use buffers (streams, kernel fibers)
	 * made before the measured cases */
	host_case(1, 1, 0);
	host_case(1, 1, 0);
	host_case(0, 1, 0);
	host_case(1, 2, 1);     /* the last stage with the tied copy */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate),
		cmocka_unit_test(test_layers),
		cmocka_unit_test(test_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
