/* blas.c: cuBLASLt bf16/fp32 matrix products for the GPU model (see
 * blas.h): one handle and workspace per context, and a cache of
 * (shape, types, alignment) -> descriptors + heuristic algorithm, so the
 * steady state makes one cublasLtMatmul call per product. */
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
} gmm_entry;

struct gmm_ctx {
    cublasLtHandle_t h;
    cudaStream_t st;
    void *ws;
    size_t ws_bytes;
    gmm_entry *e;
    int n, cap;
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
    cublasLtMatmulPreference_t pref;
    if (lt_ok(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate"))
        return NULL;
    uint64_t ws = g->ws_bytes;
    uint32_t aa = (uint32_t)k->ala, ab = (uint32_t)k->alb, ac = (uint32_t)k->alc;
    cublasLtMatmulHeuristicResult_t res;
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
                        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac), "pref al") ||
              lt_ok(cublasLtMatmulAlgoGetHeuristic(g->h, e->desc, e->la, e->lb, e->lc, e->lc,
                                                   pref, 1, &res, &found), "AlgoGetHeuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    if (bad || found < 1) {
        if (!bad)
            fprintf(stderr, "llm-train: cuBLASLt has no algorithm for %dx%dx%d (batch %d)\n",
                    k->M, k->N, k->K, k->batch);
        return NULL;
    }
    e->algo = res.algo;
    g->n++;
    return e;
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
    float beta = accumulate ? 1.0f : 0.0f;
    return lt_ok(cublasLtMatmul(g->h, e->desc, &alpha, B, e->la, A, e->lb, &beta, R, e->lc, C,
                                e->lc, &e->algo, g->ws, g->ws_bytes, g->st), "Matmul");
}
