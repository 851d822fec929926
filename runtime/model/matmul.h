/* matmul.h: the matrix products of the model through oneDNN (bf16 or fp32
 * inputs, fp32 or bf16 output, optional accumulate), primitives cached by
 * shape. On CPUs without AVX-512 BF16 (or with LLMT_NO_BF16=1 or
 * LLMT_CPU=generic) bf16 inputs are widened to fp32 and the fp32 product
 * is used instead. */
#ifndef LLMT_MATMUL_H
#define LLMT_MATMUL_H
#include <stddef.h>
#include <stdint.h>

typedef enum { LLMT_DT_F32 = 0, LLMT_DT_BF16 = 1 } llmt_dt;

/* C[b] (= or +=) alpha * op(A[b]) * op(B[b]) for b < batch.
 * op(A) is M x K: A stored row-major as M x K (ta = 0) or K x M (ta = 1);
 * op(B) is K x N: B stored row-major as K x N (tb = 0) or N x K (tb = 1).
 * Matrices are dense: leading dimension = stored row length; batches
 * follow each other densely. C is M x N row-major, dense.
 * at: type of A and B; ct: type of C. accumulate: C += ..., else C = ....
 * Returns 0, -1 on a oneDNN error (message on stderr). */
int llmt_mm(int batch, int M, int N, int K,
            const void *A, int ta, const void *B, int tb, llmt_dt at,
            void *C, llmt_dt ct, float alpha, int accumulate);

/* Fault injection (LLM_TRAIN_FAULT=wrongmath, resilience/faults.h): when
 * on, every later product has one output element perturbed (the middle
 * one of batch 0: its top mantissa bit flipped). */
void llmt_mm_set_perturb(int on);

/* 1 when bf16 products run natively (llmt_cpu_avx512() and not LLMT_NO_BF16). */
int llmt_mm_bf16_native(void);

#endif
