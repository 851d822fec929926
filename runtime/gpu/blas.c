/* blas.c: cuBLASLt bf16/fp32 matrix products for the GPU model (see
 * blas.h): one handle and workspace per context, and a cache of
 * (shape, types, alignment) -> descriptors + the algorithm chosen at first
 * use (choose(): several heuristic results, the first that works or the
 * fastest, a lower alignment hint when none works), so the steady state
 * makes one cublasLtMatmul call per product. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include "blas.h"

typedef struct {
	int batch, M, N, K, ta, tb, at, ct, acc, ala, alb, alc, lda, ldb, ldc, pad;
	long long sa, sb, sc;
} gmm_key;

typedef struct {
	gmm_key key;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
	int ready;                 /* algo chosen and seen to work */
} gmm_entry;

#define GMM_ALGOS 8            /* heuristic results asked for per shape */

struct gmm_ctx {
	cublasLtHandle_t h;
	cudaStream_t st;
	void *ws;
	size_t ws_bytes;
	gmm_entry *e;
	int n, cap;
	int tune;                  /* 1: time the candidates (LLMT_GMM_TUNE=time) */
};

static int lt_ok(cublasStatus_t s, const char *what)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	fprintf(stderr, "llm-train: cuBLASLt %s failed: status %d\n", what, (int)s);
	return -1;
}

gmm_ctx *gmm_create(cudaStream_t st, size_t workspace_bytes)
{
	gmm_ctx *g = calloc(1, sizeof *g);
	if (!g) {
		fprintf(stderr, "llm-train: out of memory creating the cuBLASLt context\n");
		return NULL;
	}
	g->st = st;
	const char *t = getenv("LLMT_GMM_TUNE");
	if (t && *t && strcmp(t, "first") && strcmp(t, "time"))
		fprintf(stderr, "llm-train: LLMT_GMM_TUNE='%s' is neither 'first' nor 'time': "
				"using 'first'\n", t);
	g->tune = t && !strcmp(t, "time");
	if (lt_ok(cublasLtCreate(&g->h), "cublasLtCreate")) {
		free(g);
		return NULL;
	}
	g->ws_bytes = workspace_bytes;
	if (workspace_bytes && cudaMalloc(&g->ws, workspace_bytes) != cudaSuccess) {
		fprintf(stderr, "llm-train: cannot allocate a %zu-byte cuBLASLt workspace\n",
				workspace_bytes);
		cublasLtDestroy(g->h);
		free(g);
		return NULL;
	}
	return g;
}

void gmm_set_stream(gmm_ctx *g, cudaStream_t st) { g->st = st; }
void gmm_set_tune(gmm_ctx *g, int time_them) { g->tune = time_them != 0; }

void gmm_free(gmm_ctx *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n; i++) {
		cublasLtMatrixLayoutDestroy(g->e[i].la);
		cublasLtMatrixLayoutDestroy(g->e[i].lb);
		cublasLtMatrixLayoutDestroy(g->e[i].lc);
		cublasLtMatmulDescDestroy(g->e[i].desc);
	}
	free(g->e);
	cudaFree(g->ws);
	cublasLtDestroy(g->h);
	free(g);
}

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int rows, int cols, int ld,
				  int batch, long long stride)
{
	if (lt_ok(cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld),
			  "MatrixLayoutCreate"))
		return -1;
	if (batch > 1) {
		int32_t b = batch;
		int64_t s = stride;
		if (lt_ok(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b,
												   sizeof b), "layout batch") ||
			lt_ok(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
												   &s, sizeof s), "layout stride"))
			return -1;
	}
	return 0;
}

static gmm_entry *plan(gmm_ctx *g, const gmm_key *k)
{
	for (int i = 0; i < g->n; i++)
		if (!memcmp(&g->e[i].key, k, sizeof *k))
			return &g->e[i];
	if (g->n == g->cap) {
		int nc = g->cap ? 2 * g->cap : 32;
		gmm_entry *ne = realloc(g->e, sizeof *ne * (size_t)nc);
		if (!ne) {
			fprintf(stderr, "llm-train: out of memory in the cuBLASLt plan cache\n");
			return NULL;
		}
		g->e = ne;
		g->cap = nc;
	}
	gmm_entry *e = &g->e[g->n];
	memset(e, 0, sizeof *e);
	e->key = *k;
	gmm_colmajor p;
	gmm_plan_ld(k->M, k->N, k->K, k->ta, k->tb, k->lda, k->sa, k->ldb, k->sb, k->ldc, k->sc, &p);
	cudaDataType_t in = k->at == LLMT_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	cudaDataType_t out = k->ct == LLMT_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	cublasOperation_t opa = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t opb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (lt_ok(cublasLtMatmulDescCreate(&e->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "DescCreate") ||
		lt_ok(cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa,
											 sizeof opa), "TRANSA") ||
		lt_ok(cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb,
											 sizeof opb), "TRANSB") ||
		layout(&e->la, in, p.rows_a, p.cols_a, p.lda, k->batch, p.stride_a) ||
		layout(&e->lb, in, p.rows_b, p.cols_b, p.ldb, k->batch, p.stride_b) ||
		layout(&e->lc, out, p.m, p.n, p.ldc, k->batch, p.stride_c))
		return NULL;
	g->n++;
	return e;
}

/* up to GMM_ALGOS candidates for e with every alignment hint capped at cap
 * bytes (a pointer aligned to more is aligned to less): how many, 0 when
 * the heuristic has none, -1 on an error */
static int heuristic(gmm_ctx *g, const gmm_entry *e, uint32_t cap,
					 cublasLtMatmulHeuristicResult_t *res)
{
	const gmm_key *k = &e->key;
	cublasLtMatmulPreference_t pref;
	if (lt_ok(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate"))
		return -1;
	uint64_t ws = g->ws_bytes;
	uint32_t aa = (uint32_t)k->ala, ab = (uint32_t)k->alb, ac = (uint32_t)k->alc;
	aa = aa < cap ? aa : cap;
	ab = ab < cap ? ab : cap;
	ac = ac < cap ? ac : cap;
	int found = 0;
	int bad = lt_ok(cublasLtMatmulPreferenceSetAttribute(pref,
						CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "pref ws") ||
			  lt_ok(cublasLtMatmulPreferenceSetAttribute(pref,
						CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa), "pref al") ||
			  lt_ok(cublasLtMatmulPreferenceSetAttribute(pref,
						CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab), "pref al") ||
			  lt_ok(cublasLtMatmulPreferenceSetAttribute(pref,
						CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac), "pref al") ||
			  lt_ok(cublasLtMatmulPreferenceSetAttribute(pref,
						CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac), "pref al");
	/* no algorithm for these hints is an answer here, not an error */
	if (!bad && cublasLtMatmulAlgoGetHeuristic(g->h, e->desc, e->la, e->lb, e->lc, e->lc, pref,
											   GMM_ALGOS, res, &found) != CUBLAS_STATUS_SUCCESS)
		found = 0;
	cublasLtMatmulPreferenceDestroy(pref);
	return bad ? -1 : found;
}

typedef struct {
	const void *A, *B;
	const void *R;   /* cuBLASLt's C input (beta on it): C itself, or a separate residual */
	void *C;         /* cuBLASLt's D output */
	float alpha, beta;
} gmm_args;

static cublasStatus_t matmul(gmm_ctx *g, const gmm_entry *e, const cublasLtMatmulAlgo_t *algo,
							 const gmm_args *x)
{
	/* A' of cuBLASLt is our B (gmm_plan_ld) */
	return cublasLtMatmul(g->h, e->desc, &x->alpha, x->B, e->la, x->A, e->lb, &x->beta, x->R,
						  e->lc, x->C, e->lc, algo, g->ws, g->ws_bytes, g->st);
}

/* milliseconds of 3 runs of algo (into C: only for products that do not
 * accumulate), or -1 when it fails */
static float time_algo(gmm_ctx *g, const gmm_entry *e, const cublasLtMatmulAlgo_t *algo,
					   const gmm_args *x)
{
	cudaEvent_t t0, t1;
	float ms = -1;
	if (cudaEventCreateWithFlags(&t0, cudaEventDefault) != cudaSuccess)
		return -1;
	if (cudaEventCreateWithFlags(&t1, cudaEventDefault) != cudaSuccess) {
		cudaEventDestroy(t0);
		return -1;
	}
	int ok = matmul(g, e, algo, x) == CUBLAS_STATUS_SUCCESS &&   /* warm-up */
			 cudaEventRecord(t0, g->st) == cudaSuccess;
	for (int r = 0; ok && r < 3; r++)
		ok = matmul(g, e, algo, x) == CUBLAS_STATUS_SUCCESS;
	ok = ok && cudaEventRecord(t1, g->st) == cudaSuccess &&
		 cudaEventSynchronize(t1) == cudaSuccess && cudaEventElapsedTime(&ms, t0, t1) == cudaSuccess;
	cudaEventDestroy(t0);
	cudaEventDestroy(t1);
	if (!ok)
		(void)cudaGetLastError();   /* a failed candidate's launch error is handled here */
	return ok ? ms : -1;
}

/* the first use of a shape: the heuristic's candidates at the pointers'
 * alignment, then at lower alignment hints while none is returned or none
 * works; of the candidates that work, the fastest (g->tune, products
 * without accumulation: timed once here) or else the first in the
 * heuristic's order (the same choice on every run and every replica).
 * Runs the product; 0, or -1 with a message when no hint gives a working
 * algorithm. */
static int choose(gmm_ctx *g, gmm_entry *e, const gmm_args *x)
{
	const gmm_key *k = &e->key;
	uint32_t top = (uint32_t)k->ala;
	top = (uint32_t)k->alb > top ? (uint32_t)k->alb : top;
	top = (uint32_t)k->alc > top ? (uint32_t)k->alc : top;
	uint32_t floor = k->at == LLMT_DT_BF16 || k->ct == LLMT_DT_BF16 ? 2 : 4;
	cublasLtMatmulHeuristicResult_t res[GMM_ALGOS];
	for (uint32_t cap = top; cap >= floor; cap >>= 1) {
		int n = heuristic(g, e, cap, res);
		if (n < 0)
			return -1;
		int best = -1;
		if (g->tune && !k->acc && n > 1) {
			float best_ms = 0;
			for (int i = 0; i < n; i++) {
				float ms = time_algo(g, e, &res[i].algo, x);
				if (ms >= 0 && (best < 0 || ms < best_ms)) {
					best = i;
					best_ms = ms;
				}
			}
			if (best >= 0 && matmul(g, e, &res[best].algo, x) != CUBLAS_STATUS_SUCCESS)
				best = -1;
		} else {
			for (int i = 0; i < n && best < 0; i++)
				if (matmul(g, e, &res[i].algo, x) == CUBLAS_STATUS_SUCCESS)
					best = i;
				else
					(void)cudaGetLastError();
		}
		if (best >= 0) {
			e->algo = res[best].algo;
			e->ready = 1;
			if (cap < top)
				fprintf(stderr, "llm-train: cuBLASLt: %dx%dx%d (batch %d) runs with a %u-byte "
						"alignment hint (none worked at %u)\n", k->M, k->N, k->K, k->batch, cap,
						top);
			return 0;
		}
	}
	fprintf(stderr, "llm-train: cuBLASLt has no working algorithm for %dx%dx%d (batch %d) at "
			"any alignment hint from %u down to %u bytes\n", k->M, k->N, k->K, k->batch, top,
			floor);
	return -1;
}

int gmm_ld(gmm_ctx *g, int batch, int M, int N, int K, const void *A, int lda, long long sa,
		   int ta, const void *B, int ldb, long long sb, int tb, llmt_dt at, void *C, int ldc,
		   long long sc, llmt_dt ct, float alpha, int accumulate)
{
	return gmm_ld_res(g, batch, M, N, K, A, lda, sa, ta, B, ldb, sb, tb, at, NULL, C, ldc, sc, ct,
					  alpha, accumulate);
}

int gmm_ld_res(gmm_ctx *g, int batch, int M, int N, int K, const void *A, int lda, long long sa,
			   int ta, const void *B, int ldb, long long sb, int tb, llmt_dt at, const void *R,
			   void *C, int ldc, long long sc, llmt_dt ct, float alpha, int accumulate)
{
	if (R)                     /* beta = 1 on R, the product into C */
		accumulate = 1;
	else
		R = C;
	gmm_key k;
	memset(&k, 0, sizeof k);   /* padding-free, but keep memcmp exact */
	k.batch = batch;
	k.M = M;
	k.N = N;
	k.K = K;
	k.ta = ta;
	k.tb = tb;
	k.at = (int)at;
	k.ct = (int)ct;
	k.acc = accumulate;
	k.ala = gmm_align(B);      /* A' of cuBLASLt is our B */
	k.alb = gmm_align(A);
	k.alc = gmm_align(C) < gmm_align(R) ? gmm_align(C) : gmm_align(R);
	k.lda = lda;
	k.ldb = ldb;
	k.ldc = ldc;
	k.sa = batch > 1 ? sa : 0;
	k.sb = batch > 1 ? sb : 0;
	k.sc = batch > 1 ? sc : 0;
	gmm_entry *e = plan(g, &k);
	if (!e)
		return -1;
	gmm_args x = {A, B, R, C, alpha, accumulate ? 1.0f : 0.0f};
	if (e->ready) {
		if (matmul(g, e, &e->algo, &x) == CUBLAS_STATUS_SUCCESS)
			return 0;
		/* the algorithm in use failed: choose again */
		e->ready = 0;
		(void)cudaGetLastError();
	}
	return choose(g, e, &x);
}
