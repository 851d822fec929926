/* cublaslt_emu.c: the cuBLASLt calls of runtime/gpu/blas.c on the host, for
 * the emulation builds: descriptors and layouts as plain structs, a
 * heuristic whose answers a test sets (how many algorithms, which of them
 * fail, the largest alignment hint it serves, each one's cost on the
 * emulated clock), and cublasLtMatmul as a column-major product with fp32
 * accumulation (the same bits for every algorithm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cublasLt.h>
#include "model/bf16.h"
#include "cublaslt_emu.h"

int llmt_emu_lt_algos = 1;
unsigned llmt_emu_lt_fail_mask;
unsigned llmt_emu_lt_max_align = 256;
double llmt_emu_lt_cost_ms[LLMT_EMU_LT_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
long llmt_emu_lt_heuristics, llmt_emu_lt_matmuls;
int llmt_emu_lt_last_algo = -1;
unsigned llmt_emu_lt_last_align;

typedef struct { cublasOperation_t op[2]; } lt_desc;
typedef struct {
	cudaDataType_t t;
	uint64_t rows, cols;
	int64_t ld, stride;
	int32_t batch;
} lt_layout;
typedef struct { uint32_t al[4]; } lt_pref;
/* an algorithm: its index and the alignment hints (A, B, C, D) it was
 * found for */
typedef struct { int idx; uint32_t al[4]; } lt_algo;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
	static char ctx;
	*h = (cublasLtHandle_t)(void *)&ctx;
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { (void)h; return CUBLAS_STATUS_SUCCESS; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
										cudaDataType_t s)
{
	lt_desc *x = calloc(1, sizeof *x);
	if (!x || c != CUBLAS_COMPUTE_32F || s != CUDA_R_32F) {
		free(x);
		return CUBLAS_STATUS_NOT_SUPPORTED;
	}
	*d = (cublasLtMatmulDesc_t)(void *)x;
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
											  cublasLtMatmulDescAttributes_t a, const void *b,
											  size_t n)
{
	lt_desc *x = (lt_desc *)(void *)d;
	if (n != sizeof(cublasOperation_t) ||
		(a != CUBLASLT_MATMUL_DESC_TRANSA && a != CUBLASLT_MATMUL_DESC_TRANSB))
		return CUBLAS_STATUS_INVALID_VALUE;
	memcpy(&x->op[a == CUBLASLT_MATMUL_DESC_TRANSB], b, n);
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
	free(d);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t r,
										  uint64_t c, int64_t ld)
{
	lt_layout *x = calloc(1, sizeof *x);
	if (!x)
		return CUBLAS_STATUS_ALLOC_FAILED;
	*x = (lt_layout){t, r, c, ld, 0, 1};
	*l = (cublasLtMatrixLayout_t)(void *)x;
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
												cublasLtMatrixLayoutAttribute_t a, const void *b,
												size_t n)
{
	lt_layout *x = (lt_layout *)(void *)l;
	if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && n == sizeof x->batch)
		memcpy(&x->batch, b, n);
	else if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && n == sizeof x->stride)
		memcpy(&x->stride, b, n);
	else
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
	free(l);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
	lt_pref *x = calloc(1, sizeof *x);
	if (!x)
		return CUBLAS_STATUS_ALLOC_FAILED;
	*p = (cublasLtMatmulPreference_t)(void *)x;
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
													cublasLtMatmulPreferenceAttributes_t a,
													const void *b, size_t n)
{
	lt_pref *x = (lt_pref *)(void *)p;
	int i = a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES   ? 0
			: a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ? 1
			: a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ? 2
			: a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES ? 3 : -1;
	if (i >= 0 && n == sizeof(uint32_t))
		memcpy(&x->al[i], b, n);
	else if (a != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES || n != sizeof(uint64_t))
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
	free(p);
	return CUBLAS_STATUS_SUCCESS;
}

/* llmt_emu_lt_algos answers (at most the count asked for), none when a
 * hint is above llmt_emu_lt_max_align */
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
											  cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
											  cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
											  cublasLtMatmulPreference_t p, int want,
											  cublasLtMatmulHeuristicResult_t res[], int *got)
{
	(void)h; (void)d; (void)A; (void)B; (void)C; (void)D;
	const lt_pref *x = (const lt_pref *)(const void *)p;
	uint32_t al = 0;
	llmt_emu_lt_heuristics++;
	*got = 0;
	for (int i = 0; i < 4; i++)
		al = x->al[i] > al ? x->al[i] : al;
	if (al > llmt_emu_lt_max_align)
		return CUBLAS_STATUS_NOT_SUPPORTED;   /* as cuBLASLt: no algorithm */
	int n = llmt_emu_lt_algos < want ? llmt_emu_lt_algos : want;
	n = n < LLMT_EMU_LT_MAX ? n : LLMT_EMU_LT_MAX;
	for (int i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof res[i]);
		lt_algo a = {i, {x->al[0], x->al[1], x->al[2], x->al[3]}};
		memcpy(res[i].algo.data, &a, sizeof a);
		res[i].state = CUBLAS_STATUS_SUCCESS;
		res[i].wavesCount = 1.0f;
	}
	*got = n;
	return n ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

static float ld(const void *p, size_t i, cudaDataType_t t)
{
	return t == CUDA_R_16BF ? bf16_to_f32(((const bf16 *)p)[i]) : ((const float *)p)[i];
}

void llmt_emu_stream_use(cudaStream_t st);
extern double llmt_emu_clock_ms;

/* D = alpha op(A) op(B) + beta C, column-major, fp32 accumulation */
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t cd, const void *alpha,
							  const void *A, cublasLtMatrixLayout_t Ad, const void *B,
							  cublasLtMatrixLayout_t Bd, const void *beta, const void *C,
							  cublasLtMatrixLayout_t Cd, void *D, cublasLtMatrixLayout_t Dd,
							  const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsb,
							  cudaStream_t st)
{
	(void)h; (void)ws; (void)wsb;
	const lt_desc *x = (const lt_desc *)(const void *)cd;
	const lt_layout *la = (const void *)Ad, *lb = (const void *)Bd, *lc = (const void *)Cd,
					*lo = (const void *)Dd;
	lt_algo a;
	memcpy(&a, algo->data, sizeof a);
	llmt_emu_stream_use(st);
	if (a.idx < 0 || a.idx >= LLMT_EMU_LT_MAX || (llmt_emu_lt_fail_mask >> a.idx) & 1)
		return CUBLAS_STATUS_EXECUTION_FAILED;
	/* an algorithm found for a larger alignment than a pointer has */
	const void *ptr[4] = {A, B, C, D};
	for (int i = 0; i < 4; i++)
		if (a.al[i] && (uintptr_t)ptr[i] % a.al[i]) {
			fprintf(stderr, "cublaslt_emu: an algorithm for %u-byte alignment run on %p\n",
					a.al[i], ptr[i]);
			abort();
		}
	llmt_emu_lt_matmuls++;
	llmt_emu_lt_last_algo = a.idx;
	unsigned top = 0;
	for (int i = 0; i < 4; i++)
		top = a.al[i] > top ? a.al[i] : top;
	llmt_emu_lt_last_align = top;
	llmt_emu_clock_ms += llmt_emu_lt_cost_ms[a.idx];
	int ta = x->op[0] == CUBLAS_OP_T, tb = x->op[1] == CUBLAS_OP_T;
	size_t m = lo->rows, n = lo->cols, k = ta ? la->rows : la->cols;
	float al = *(const float *)alpha, be = *(const float *)beta;
	for (int32_t b = 0; b < lo->batch; b++) {
		size_t oa = (size_t)b * (size_t)la->stride, ob = (size_t)b * (size_t)lb->stride;
		size_t oc = (size_t)b * (size_t)lc->stride, od = (size_t)b * (size_t)lo->stride;
		for (size_t i = 0; i < m; i++)
			for (size_t j = 0; j < n; j++) {
				float s = 0.f;
				for (size_t kk = 0; kk < k; kk++) {
					size_t ia = ta ? kk + i * (size_t)la->ld : i + kk * (size_t)la->ld;
					size_t ib = tb ? j + kk * (size_t)lb->ld : kk + j * (size_t)lb->ld;
					s += ld(A, oa + ia, la->t) * ld(B, ob + ib, lb->t);
				}
				float v = al * s;
				if (be != 0.f)
					v += be * ld(C, oc + i + j * (size_t)lc->ld, lc->t);
				size_t io = od + i + j * (size_t)lo->ld;
				if (lo->t == CUDA_R_16BF)
					((bf16 *)D)[io] = f32_to_bf16(v);
				else
					((float *)D)[io] = v;
			}
	}
	return CUBLAS_STATUS_SUCCESS;
}
