/* blas.h: the GPU model's matrix products through cuBLASLt with the same
 * row-major contract as llmt_mm (matmul.h): bf16 or fp32 inputs, fp32 or
 * bf16 output, optional accumulate, strided batches. Descriptors, layouts
 * and the algorithm chosen at first use are cached per shape and pointer
 * alignment; one workspace per context. The choice: of several heuristic
 * results, the first that works (LLMT_GMM_TUNE=first, the default: the
 * same on every run and replica) or the fastest, timed once
 * (LLMT_GMM_TUNE=time; gmm_set_tune); when none works, the same at a lower
 * alignment hint. */
#ifndef LLMT_GMM_H
#define LLMT_GMM_H
#include <cuda_runtime_api.h>
#include "model/matmul.h"
#include "host_plan.h"

typedef struct gmm_ctx gmm_ctx;

/* NULL with a message on stderr when cuBLASLt cannot start. */
gmm_ctx *gmm_create(cudaStream_t st, size_t workspace_bytes);
void gmm_free(gmm_ctx *g);
/* cuBLASLt calls run on this stream from now on. */
void gmm_set_stream(gmm_ctx *g, cudaStream_t st);
/* 1: time the heuristic's candidates at first use and keep the fastest
 * (runs and DP replicas may then choose differently: not bit-identical);
 * 0: keep the first that works. Set from LLMT_GMM_TUNE at creation. */
void gmm_set_tune(gmm_ctx *g, int time_them);

/* C = alpha op(A) op(B) (+ C) over sub-blocks: lda, ldb, ldc are the
 * row-major row strides of A, B and C, sa, sb, sc their batch strides
 * (elements; gmm_plan_ld). Device pointers. 0 or -1 (message on stderr). */
int gmm_ld(gmm_ctx *g, int batch, int M, int N, int K, const void *A, int lda, long long sa,
           int ta, const void *B, int ldb, long long sb, int tb, llmt_dt at, void *C, int ldc,
           long long sc, llmt_dt ct, float alpha, int accumulate);
/* The same with a separate input R of C's type and layout (cuBLASLt's C,
 * C being its D): C = alpha op(A) op(B) + R, the residual add in the
 * product's epilogue (accumulate ignored). R NULL: as gmm_ld. */
int gmm_ld_res(gmm_ctx *g, int batch, int M, int N, int K, const void *A, int lda, long long sa,
               int ta, const void *B, int ldb, long long sb, int tb, llmt_dt at, const void *R,
               void *C, int ldc, long long sc, llmt_dt ct, float alpha, int accumulate);

/* As llmt_mm (packed operands), with device pointers. */
static inline int gmm(gmm_ctx *g, int batch, int M, int N, int K, const void *A, int ta,
                      const void *B, int tb, llmt_dt at, void *C, llmt_dt ct, float alpha,
                      int accumulate)
{
    return gmm_ld(g, batch, M, N, K, A, ta ? M : K, (long long)M * K, ta, B, tb ? K : N,
                  (long long)N * K, tb, at, C, N, (long long)M * N, ct, alpha, accumulate);
}

/* As gmm with R (packed, one batch): C[M][N] = alpha op(A) op(B) + R. */
static inline int gmm_res(gmm_ctx *g, int M, int N, int K, const void *A, int ta, const void *B,
                          int tb, llmt_dt at, const void *R, void *C, llmt_dt ct, float alpha)
{
    return gmm_ld_res(g, 1, M, N, K, A, ta ? M : K, (long long)M * K, ta, B, tb ? K : N,
                      (long long)N * K, tb, at, R, C, N, (long long)M * N, ct, alpha, 0);
}

#endif
