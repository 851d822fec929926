/* blas_plan.c: pure host logic of the cuBLASLt wrapper: mapping a row-major
 * product onto cuBLASLt's column-major one, and pointer alignment classes.
 * No CUDA call here, so it is unit-tested on machines without a GPU. */
#include <stdint.h>
#include "host_plan.h"

void gmm_plan(int M, int N, int K, int ta, int tb, gmm_colmajor *p)
{
	/* packed row-major operands: A is M x K (K x M when ta), B is K x N
	 * (N x K when tb), C is M x N */
	gmm_plan_ld(M, N, K, ta, tb, ta ? M : K, (long long)M * K, tb ? K : N, (long long)N * K, N,
				(long long)M * N, p);
}

void gmm_plan_ld(int M, int N, int K, int ta, int tb, int lda, long long sa, int ldb,
				 long long sb, int ldc, long long sc, gmm_colmajor *p)
{
	/* A row-major r x c matrix is a column-major c x r one (ld = c).
	 * Row-major C[M][N] is column-major C^T (N x M): C^T = op(B)^T op(A)^T. */
	p->m = N;
	p->n = M;
	p->k = K;
	/* A' = our B. tb = 0: B is K x N row-major = column-major N x K =
	 * op(B)^T already (no transpose). tb = 1: B is N x K row-major =
	 * column-major K x N = op(B); transpose it. */
	p->trans_a = tb;
	p->rows_a = tb ? K : N;
	p->cols_a = tb ? N : K;
	p->lda = ldb;          /* a row-major row stride is the column-major ld */
	/* B' = our A. ta = 0: A is M x K row-major = column-major K x M =
	 * op(A)^T. ta = 1: A is K x M row-major = column-major M x K = op(A). */
	p->trans_b = ta;
	p->rows_b = ta ? M : K;
	p->cols_b = ta ? K : M;
	p->ldb = lda;
	p->ldc = ldc;
	p->stride_a = sb;
	p->stride_b = sa;
	p->stride_c = sc;
}

int gmm_align(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	int al = 256;
	while (al > 1 && (a % (uintptr_t)al))
		al >>= 1;
	return al;
}
