/* test_gpu_emu.h: what the emulation tests test_gpu_emu.c (the kernels)
 * and test_gpu_emu_model.c (the GPU model) share: includes, random
 * inputs, the bf16 error and NEAR. */
#ifndef TESTS_GPU_TEST_GPU_EMU_H
#define TESTS_GPU_TEST_GPU_EMU_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/bf16.h"
#include "gpu/comm_nccl.h"
#include "gpu/dev_kernels.h"
#include "gpu/gmodel.h"
#include "gpu/host_plan.h"
#include "model/kernels.h"
#include "model/model.h"
#include "train/optim.h"
#include "relerr.h"
#include "small_cfg.h"

static uint64_t rs = 12345;
__attribute__((unused))
static float frand(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (float)((rs >> 11) * (1.0 / 9007199254740992.0)) * 2.f - 1.f;
}
__attribute__((unused))
static float *rnd(size_t n, float scale)
{
	float *p = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		p[i] = frand() * scale;
	return p;
}
__attribute__((unused))
static float *dup(const float *x, size_t n)
{
	float *p = malloc(n * 4);
	memcpy(p, x, n * 4);
	return p;
}
__attribute__((unused))
static double relb(const bf16 *a, const bf16 *b, size_t n)
{
	double d = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		double x = bf16_to_f32(a[i]), y = bf16_to_f32(b[i]);
		d = fmax(d, fabs(x - y));
		m = fmax(m, fabs(y));
	}
	return d / (m > 0 ? m : 1);
}
/* NEAR prints each measured error next to its limit (the log is the
 * measurement). relb limits of 8e-3 are one bf16 ulp (2^-7): an fp32
 * difference of one ulp before rounding may flip a bf16 result; measured 0. */
#define NEAR(v, lim) do { double v_ = (v); printf("near %d: %s = %.3g (limit %.3g)\n", __LINE__, #v, v_, (double)(lim)); if (!(v_ <= (lim))) fail_msg("%s = %g > %g", #v, v_, (double)(lim)); } while (0)

#endif
