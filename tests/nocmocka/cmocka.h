/* nocmocka/cmocka.h: stands in for cmocka.h when configure found no
 * cmocka: the unit tests still compile, and each one prints one SKIP line
 * naming the missing package and exits 77 (skip) without running. */
#ifndef LLMT_NOCMOCKA_H
#define LLMT_NOCMOCKA_H
#include <stdio.h>
#include <string.h>

struct CMUnitTest {
	const char *name;
	void (*test_func)(void **state);
	int (*setup_func)(void **state);
	int (*teardown_func)(void **state);
};

#define cmocka_unit_test(f) { #f, f, NULL, NULL }
#define cmocka_unit_test_setup_teardown(f, s, t) { #f, f, s, t }
#define cmocka_run_group_tests(tests, setup, teardown)                                    \
	((void)(tests), (void)(setup), (void)(teardown),                                      \
	 printf("SKIP: built without cmocka (install libcmocka-dev, run configure again)\n"), \
	 77)
#define cmocka_set_test_filter(f) ((void)(f))
#define print_message(...) printf(__VA_ARGS__)
#define skip() return
#define fail_msg(...) ((void)printf(__VA_ARGS__))
#define assert_true(c) ((void)(c))
#define assert_false(c) ((void)(c))
#define assert_null(c) ((void)(c))
#define assert_non_null(c) ((void)(c))
#define assert_int_equal(a, b) ((void)(a), (void)(b))
#define assert_int_not_equal(a, b) ((void)(a), (void)(b))
#define assert_string_equal(a, b) ((void)(a), (void)(b))
#define assert_string_not_equal(a, b) ((void)(a), (void)(b))
#define assert_float_equal(a, b, e) ((void)(a), (void)(b), (void)(e))
#define assert_memory_equal(a, b, n) ((void)(a), (void)(b), (void)(n))
#endif
