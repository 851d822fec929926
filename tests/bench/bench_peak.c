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
            __m512 acc[12];
            for (int i = 0; i < 12; i++)
                acc[i] = _mm512_set1_ps(0.f);
            __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3c00);
            for (long it = 0; it < iters / 12; it++) {
                for (int i = 0; i < 12; i++)
                    acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
                __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]),
                                 "+v"(acc[4]), "+v"(acc[5]), "+v"(acc[6]), "+v"(acc[7]),
                                 "+v"(acc[8]), "+v"(acc[9]), "+v"(acc[10]), "+v"(acc[11]));
            }
            for (int i = 1; i < 12; i++)
                acc[0] = _mm512_add_ps(acc[0], acc[i]);
            sink += _mm512_reduce_add_ps(acc[0]);
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
