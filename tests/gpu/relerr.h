/* relerr.h: the GPU tests' error measure of a result against its
 * reference: the largest absolute difference over the largest reference
 * magnitude (test_gpu_emu, test_gpu_tp). */
#ifndef LLMT_TESTS_RELERR_H
#define LLMT_TESTS_RELERR_H
#include <math.h>
#include <stddef.h>

/* max |a - b| / max |b| (1 when b is all zeros) */
static inline double relerr(const float *a, const float *b, size_t n)
{
	double d = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		d = fmax(d, fabs((double)a[i] - b[i]));
		m = fmax(m, fabs((double)b[i]));
	}
	return d / (m > 0 ? m : 1);
}

#endif
