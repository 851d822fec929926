/* st_golden.h: the golden checksums of the self-test's known-answer test,
 * one per compute path (ISA path, oneDNN version and ISA) and size, kept
 * in st_golden.c; pure lookup and comparison. */
#ifndef LLMT_ST_GOLDEN_H
#define LLMT_ST_GOLDEN_H
#include <stdint.h>

typedef struct {
	const char *path;   /* e.g. "avx512-bf16 dnnl-2.6.3 isa-0x..." (st_kat.h) */
	const char *size;   /* "small" "full" */
	uint64_t hash;      /* bit-exact part: products, logits, loss, 2-D gradients */
	double norm1d;      /* the 1-D gradients' sum of squares (thread-count dependent sums) */
} llmt_st_golden;

/* Relative tolerance of norm1d (per-thread partial sums of the norm
 * weights' gradients are added in an order that depends on the thread
 * count: the last bits differ, nothing more). */
#define LLMT_ST_NORM1D_RTOL 1e-4

/* The golden for path and size, or NULL. */
const llmt_st_golden *llmt_st_golden_find(const char *path, const char *size);
/* 1 when hash and norm1d match g, -1 when not, 0 when g is NULL. */
int llmt_st_golden_check(const llmt_st_golden *g, uint64_t hash, double norm1d);
/* Whether two norm1d values agree within LLMT_ST_NORM1D_RTOL. */
int llmt_st_norm1d_close(double a, double b);

#endif
