/* bench_peak.c: this machine's bf16 dot-product peak: _mm512_dpbf16_ps on
 * 12 independent accumulators per thread (OpenMP threads), GFLOP/s
 * (2 flops per bf16 product). Prints "bf16_peak_gflops X
 * cpu_bf16_peak_gflops Y" (Y from process CPU time / threads, for a shared
 * machine), or 0 when the CPU has no AVX-512 BF16. */
#include <omp.h>
#include <stdio.h>
#include <time.h>
#ifdef __AVX512BF16__
#include <immintrin.h>
#endif

int main(void)
{
#ifdef __AVX512BF16__
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512bf16")) {
		printf("bf16_peak_gflops 0 cpu_bf16_peak_gflops 0\n");
		return 0;
	}
	const long iters = 40000000;
	double best = 0, cbest = 0;
	for (int rep = 0; rep < 3; rep++) {
		struct timespec a, b, ca, cb;
		float sink = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
#pragma omp parallel reduction(+ : sink)
		{
			/* twelve named accumulators so they stay in registers */
			__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
			__m512 a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
			__m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3c00);
			for (long it = 0; it < iters / 12; it++) {
				a0 = _mm512_dpbf16_ps(a0, x, y);
				a1 = _mm512_dpbf16_ps(a1, x, y);
				a2 = _mm512_dpbf16_ps(a2, x, y);
				a3 = _mm512_dpbf16_ps(a3, x, y);
				a4 = _mm512_dpbf16_ps(a4, x, y);
				a5 = _mm512_dpbf16_ps(a5, x, y);
				a6 = _mm512_dpbf16_ps(a6, x, y);
				a7 = _mm512_dpbf16_ps(a7, x, y);
				a8 = _mm512_dpbf16_ps(a8, x, y);
				a9 = _mm512_dpbf16_ps(a9, x, y);
				a10 = _mm512_dpbf16_ps(a10, x, y);
				a11 = _mm512_dpbf16_ps(a11, x, y);
				/* opaque to the compiler: keeps the twelve chains apart */
				__asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),
								 "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
			}
			a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
							   _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
			a0 = _mm512_add_ps(a0, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
			sink += _mm512_reduce_add_ps(a0);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
		double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
		double cs = ((cb.tv_sec - ca.tv_sec) + (cb.tv_nsec - ca.tv_nsec) * 1e-9) /
					omp_get_max_threads();
		/* per instruction: 16 lanes x 2 products x 2 flops */
		double gf = (double)(iters / 12) * 12 * 64 * omp_get_max_threads() / s / 1e9;
		if (gf > best)
			best = gf;
		if (gf * s / cs > cbest)
			cbest = gf * s / cs;
		if (sink == 1.2345f)
			printf(" ");
	}
	printf("bf16_peak_gflops %.1f cpu_bf16_peak_gflops %.1f\n", best, cbest);
#else
	printf("bf16_peak_gflops 0 cpu_bf16_peak_gflops 0\n");
#endif
	return 0;
}
