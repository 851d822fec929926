/* Unit tests of wrapper/savewatch.c: the save limit from the longest save
 * seen (factor, floor, cap, none known, off), a rank's save tracked from
 * its heartbeats (begin, a later save, end and its length) and the rank
 * held in a save past the limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "wrapper/savewatch.h"

static void test_limit(void **state)
{
	(void)state;
	struct { double factor, floor_s, cap_s, longest, want; } rows[] = {
		{ 4, 30, 600, -1, 600 },    /* no save known: the pause cap */
		{ 4, 30, 600, 0, 30 },      /* saves too short to time: the floor */
		{ 4, 30, 600, 2, 30 },      /* 8 s: the floor */
		{ 4, 30, 600, 20, 80 },     /* factor x longest */
		{ 4, 30, 600, 500, 600 },   /* the cap */
		{ 0, 30, 600, 20, 600 },    /* factor 0: off */
		{ 2.5, 5, 1e9, 10, 25 },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct wr_save_cfg c = { rows[i].factor, rows[i].floor_s, rows[i].cap_s };
		double got = wr_save_limit(&c, rows[i].longest);
		if (got != rows[i].want)
			fail_msg("row %zu: factor %g floor %g cap %g longest %g: limit %g, want %g", i, rows[i].factor,
			         rows[i].floor_s, rows[i].cap_s, rows[i].longest, got, rows[i].want);
	}
	assert_true(wr_save_longest(-1, -1) < 0);
	assert_true(wr_save_longest(-1, 0) == 0);
	assert_true(wr_save_longest(3, 2) == 3);
	assert_true(wr_save_longest(3, 7) == 7);
}

static struct wr_hb hb(long step, enum wr_phase ph)
{
	return (struct wr_hb){ .valid = true, .step = step, .phase = ph };
}

static void test_track(void **state)
{
	(void)state;
	struct wr_saverank r = { 0 };
	struct wr_hb t4 = hb(4, PH_TRAIN), s4 = hb(4, PH_SAVE), s8 = hb(8, PH_SAVE), t8 = hb(8, PH_TRAIN);
	assert_true(wr_save_track(&r, &t4, 10) < 0);
	assert_false(r.in);
	assert_true(wr_save_track(&r, &s4, 11) < 0);   /* begins */
	assert_true(r.in && r.step == 4 && r.since == 11);
	assert_true(wr_save_track(&r, &s4, 13) < 0);   /* goes on: since kept */
	assert_true(r.since == 11);
	assert_true(wr_save_track(&r, &t4, 14.5) == 3.5);   /* ends: 3.5 s */
	assert_false(r.in);
	/* a save straight after another (step 4's, then step 8's): the first
	 * ends, the second begins now */
	wr_save_track(&r, &s4, 20);
	assert_true(wr_save_track(&r, &s8, 26) == 6);
	assert_true(r.in && r.step == 8 && r.since == 26);
	assert_true(wr_save_track(&r, &t8, 27) == 1);
	/* no heartbeat (invalid) ends a save too */
	wr_save_track(&r, &s8, 30);
	struct wr_hb none = { 0 };
	assert_true(wr_save_track(&r, &none, 31) == 1);
	assert_false(r.in);
}

static void test_find(void **state)
{
	(void)state;
	struct wr_saverank r[4] = {
		{ true, 8, 100 }, { true, 8, 90 }, { false, 8, 10 }, { true, 8, 95 },
	};
	double held = -1;
	assert_int_equal(wr_save_find(r, 4, 110, 30, &held), -1);   /* 20 s at most */
	assert_true(held == 0);
	/* 40, 50 and 45 s in the save: rank 1, in it longest; rank 2 left it
	 * long ago and is not judged */
	assert_int_equal(wr_save_find(r, 4, 140, 30, &held), 1);
	assert_true(held == 50);
	assert_int_equal(wr_save_find(r, 4, 140, 49.5, &held), 1);
	assert_int_equal(wr_save_find(r, 4, 140, 50, &held), -1);   /* not past the limit */
	assert_int_equal(wr_save_find(r, 0, 140, 1, NULL), -1);
	r[1].in = false;
	assert_int_equal(wr_save_find(r, 4, 140, 30, &held), 3);
	assert_true(held == 45);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_track),
		cmocka_unit_test(test_find),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
