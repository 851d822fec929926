/* test_gpu_tp.h: what the parts of test_gpu_tp share: the check that
 * counts a failure (and the worst values), this process's world rank, the
 * micro-batch, and the memory part (test_gpu_tp_mem.c). */
#ifndef TEST_GPU_TP_H
#define TEST_GPU_TP_H
#include "comm/parallel.h"

#define B 2
#define T 6

void check(const char *what, const char *name, double v, double lim);
extern int world_rank;
void memest_dp(llmt_parallel *p);

#endif
