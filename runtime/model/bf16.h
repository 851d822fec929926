/* bf16.h: bfloat16 storage type and conversions (round to nearest even,
 * NaN kept quiet), scalar and bulk (AVX-512 BF16 when compiled for it). */
#ifndef LLMT_BF16_H
#define LLMT_BF16_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX512BF16__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

typedef uint16_t bf16;

static inline float bf16_to_f32(bf16 h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline bf16 f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)      /* NaN: keep it a quiet NaN */
		return (bf16)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1u);          /* round to nearest even */
	return (bf16)(u >> 16);
}

/* Bulk conversions (no threading inside; callers split work). */
static inline void f32_to_bf16_n(bf16 *dst, const float *src, size_t n)
{
	size_t i = 0;
#ifdef __AVX512BF16__
	for (; i + 16 <= n; i += 16) {
		__m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
		_mm256_storeu_si256((__m256i *)(dst + i), (__m256i)v);
	}
#endif
	for (; i < n; i++)
		dst[i] = f32_to_bf16(src[i]);
}

static inline void bf16_to_f32_n(float *dst, const bf16 *src, size_t n)
{
	size_t i = 0;
#ifdef __AVX512F__
	for (; i + 16 <= n; i += 16) {
		__m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
		_mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
	}
#endif
	for (; i < n; i++)
		dst[i] = bf16_to_f32(src[i]);
}

#endif
