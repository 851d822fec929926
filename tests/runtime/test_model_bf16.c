/* test_model_bf16.c: bf16 conversions (bf16.h): round to nearest even,
 * NaN/Inf kept, bulk (AVX-512) conversions equal to the scalar ones. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "model/bf16.h"

static float bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void rounding(void **st)
{
	(void)st;
	assert_int_equal(f32_to_bf16(1.0f), 0x3f80);
	/* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to even (1.0) */
	assert_int_equal(f32_to_bf16(bits(0x3f808000)), 0x3f80);
	/* 1 + 3*2^-8: halfway between 0x3f81 and 0x3f82: even is 0x3f82 */
	assert_int_equal(f32_to_bf16(bits(0x3f818000)), 0x3f82);
	/* just above halfway rounds up */
	assert_int_equal(f32_to_bf16(bits(0x3f808001)), 0x3f81);
	assert_int_equal(f32_to_bf16(-2.0f), 0xc000);
	assert_true(bf16_to_f32(0x3f81) == 1.0078125f);
}

static void specials(void **st)
{
	(void)st;
	assert_int_equal(f32_to_bf16(INFINITY), 0x7f80);
	assert_int_equal(f32_to_bf16(-INFINITY), 0xff80);
	assert_true(isnan(bf16_to_f32(f32_to_bf16(NAN))));
	/* a NaN whose payload is only in the low bits must stay NaN */
	assert_true(isnan(bf16_to_f32(f32_to_bf16(bits(0x7f800001)))));
	/* the largest float rounds to infinity */
	assert_int_equal(f32_to_bf16(bits(0x7f7fffff)), 0x7f80);
}

static void bulk(void **st)
{
	(void)st;
	float src[100], back[100];
	bf16 h[100];
	uint32_t x = 12345;
	for (int i = 0; i < 100; i++) {
		x = x * 1664525u + 1013904223u;
		src[i] = bits((x & 0x807fffffu) | 0x3e000000u); /* random mantissas */
	}
	src[7] = NAN;
	f32_to_bf16_n(h, src, 100);
	for (int i = 0; i < 100; i++)
		if (i != 7)
			assert_int_equal(h[i], f32_to_bf16(src[i]));
	assert_true(isnan(bf16_to_f32(h[7])));
	bf16_to_f32_n(back, h, 100);
	for (int i = 0; i < 100; i++)
		if (i != 7)
			assert_true(back[i] == bf16_to_f32(h[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rounding), cmocka_unit_test(specials), cmocka_unit_test(bulk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
