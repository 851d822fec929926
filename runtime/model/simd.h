/* simd.h: small AVX-512 helpers for the row kernels: 16-lane load/store of
 * fp32 or bf16 with tail masks, exp, sigmoid. Only used when the
 * compiler targets AVX-512 (LLMT_SIMD); kernels keep a scalar path. */
#ifndef LLMT_SIMD_H
#define LLMT_SIMD_H
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define LLMT_SIMD 1
#include <immintrin.h>
#include <stddef.h>
#include "bf16.h"

static inline __mmask16 tailmask(size_t left)
{
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* Masked fp32 load and store, plain when the mask is full: a masked
 * store does not forward to a later load of the same bytes on this CPU
 * (the load waits until the store reaches the cache), and row kernels
 * store and reload vectors on every row. */
static inline __m512 ld_ps(__mmask16 k, const float *p)
{
	return k == 0xffff ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(k, p);
}
static inline void st_ps(float *p, __mmask16 k, __m512 v)
{
	if (k == 0xffff)
		_mm512_storeu_ps(p, v);
	else
		_mm512_mask_storeu_ps(p, k, v);
}
/* 16 (or fewer, masked) elements at index i of an fp32 or bf16 array */
static inline __m512 v_ld(const void *p, size_t i, __mmask16 k, int bf)
{
	if (bf) {
		const bf16 *q = (const bf16 *)p + i;
		__m256i h = k == 0xffff ? _mm256_loadu_si256((const __m256i *)q)
								: _mm256_maskz_loadu_epi16(k, q);
		return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
	}
	return ld_ps(k, (const float *)p + i);
}

/* fp32 -> bf16 round to nearest even (NaN kept quiet) in integer ops, so it
 * works without AVX512-BF16 too */
static inline __m256i v_bf16(__m512 v)
{
#ifdef __AVX512BF16__
	return (__m256i)_mm512_cvtneps_pbh(v);
#else
	__m512i u = _mm512_castps_si512(v);
	__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
	__m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
	__mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
	r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000));
	return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
#endif
}

static inline void v_st(void *p, size_t i, __m512 v, __mmask16 k, int bf)
{
	if (bf && k == 0xffff)
		_mm256_storeu_si256((__m256i *)((bf16 *)p + i), v_bf16(v));
	else if (bf)
		_mm256_mask_storeu_epi16((bf16 *)p + i, k, v_bf16(v));
	else
		st_ps((float *)p + i, k, v);
}

/* e^x, about 2 ulp over the float range (Cody-Waite reduction, degree-6
 * Taylor polynomial, scalef for 2^n) */
static inline __m512 v_exp(__m512 x)
{
	x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.7f)), _mm512_set1_ps(-104.0f));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504089f)),
									_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
	__m512 p = _mm512_set1_ps(1.0f / 720);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}

/* 1 / (1 + e^-x) */
static inline __m512 v_sigmoid(__m512 x)
{
	__m512 e = v_exp(_mm512_sub_ps(_mm512_setzero_ps(), x));
	return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}
#endif
#endif
