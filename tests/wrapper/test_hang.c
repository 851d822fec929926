/* Unit tests of wrapper/hang.c: heartbeat lines, the derived timeout,
 * the stalled rank (pauses in load/save), stragglers, the rank that
 * stalled its peers into the communication watchdog. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wrapper/hang.h"

static void test_parse(void **state)
{
	(void)state;
	struct { const char *line; int rc; long step; enum wr_phase ph; const char *host; } rows[] = {
		{ "12 1700000000000000000 train 0.25\n", 0, 12, PH_TRAIN, "" },
		{ "0 1700000000500000000 init 0", 0, 0, PH_INIT, "" },
		{ "100 1700000000000000000 save 1.5 node3\n", 0, 100, PH_SAVE, "node3" },
		{ "7 1700000000000000000 load 0 n1", 0, 7, PH_LOAD, "n1" },
		{ "7 1700000000000000000 done 0.1", 0, 7, PH_DONE, "" },
		{ "7 1700000000000000000 dancing 0.1", -1, 0, PH_NONE, "" },
		{ "7 1700000000000000000 train", -1, 0, PH_NONE, "" },
		{ "-1 1700000000000000000 train 0.1", -1, 0, PH_NONE, "" },
		{ "", -1, 0, PH_NONE, "" },
		{ "x y z w", -1, 0, PH_NONE, "" },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct wr_hb hb;
		int rc = wr_hb_parse(rows[i].line, &hb);
		if (rc != rows[i].rc || hb.valid != (rc == 0) ||
		    (rc == 0 && (hb.step != rows[i].step || hb.phase != rows[i].ph || strcmp(hb.host, rows[i].host))))
			fail_msg("line '%s': rc %d step %ld phase %s host '%s'", rows[i].line, rc, hb.step,
			         wr_phase_name(hb.phase), hb.host);
	}
	struct wr_hb hb;
	wr_hb_parse("3 1700000000250000000 train 0.5", &hb);
	assert_true(hb.time > 1700000000.2 && hb.time < 1700000000.3);
	assert_true(hb.last_step_s == 0.5);
}

static void test_timeout(void **state)
{
	(void)state;
	struct wr_hang_cfg c = { .k = 10, .floor_s = 5, .cap_s = 600, .pause_cap_s = 3600 };
	struct wr_steptimes st = { 0 };
	assert_true(wr_hang_timeout(&c, &st) == 600);          /* nothing known: the cap */
	c.startup_s = 900;
	assert_true(wr_hang_timeout(&c, &st) == 900);          /* ... or the startup timeout */
	c.startup_s = 0;
	wr_steptimes_add(&st, 0.1);
	assert_true(wr_hang_timeout(&c, &st) == 5);            /* 1 s < floor */
	wr_steptimes_add(&st, 2);
	wr_steptimes_add(&st, 3);
	assert_true(wr_hang_timeout(&c, &st) == 20);           /* median 2 */
	wr_steptimes_add(&st, 0);                              /* ignored */
	wr_steptimes_add(&st, -1);
	assert_int_equal(st.n, 3);
	for (int i = 0; i < 3 * WR_STEPTIMES; i++)
		wr_steptimes_add(&st, 100);
	assert_int_equal(st.n, WR_STEPTIMES);
	assert_true(wr_hang_timeout(&c, &st) == 600);          /* 1000 > cap */
	double v[] = { 5, 1, 3, 2 };
	assert_true(wr_median(v, 4) == 2.5);
	assert_true(v[0] == 5);                                /* not reordered */
	assert_true(wr_median(v, 0) == 0);
}

static struct wr_hb hb(long step, double t, enum wr_phase ph, double last)
{
	struct wr_hb h = { .valid = true, .step = step, .time = t, .phase = ph, .last_step_s = last };
	return h;
}

static void test_find(void **state)
{
	(void)state;
	double stale = 0;
	struct wr_hb r[4] = { hb(10, 100, PH_TRAIN, 1), hb(10, 101, PH_TRAIN, 1),
	                      hb(9, 90, PH_TRAIN, 1), hb(10, 100, PH_TRAIN, 1) };
	assert_int_equal(wr_hang_find(r, 4, 105, 0, 20, 50, 600, &stale), -1);
	assert_int_equal(wr_hang_find(r, 4, 115, 0, 20, 50, 600, &stale), 2);   /* silent 25 s */
	assert_true(stale == 25);
	assert_int_equal(wr_hang_find(r, 4, 125, 0, 20, 50, 600, &stale), 2);   /* all over: the oldest */
	r[2].phase = PH_SAVE;                          /* behind the others: stuck, not paused */
	assert_int_equal(wr_hang_find(r, 4, 115, 0, 20, 50, 600, &stale), 2);
	r[2].step = 10;                                                      /* paused */
	assert_int_equal(wr_hang_find(r, 4, 115, 0, 20, 50, 600, &stale), -1);
	assert_int_equal(wr_hang_find(r, 4, 691, 0, 20, 50, 600, &stale), 2);   /* stuck save */
	/* peers paused at the same step beat on (their tickers run): a
	 * paused rank silent 20 s (the timeout) longer than the freshest is
	 * stopped; with a short timeout, WR_PAUSE_BEHIND_S (10 s) instead */
	r[0].phase = r[1].phase = r[3].phase = PH_SAVE;
	r[0].time = r[1].time = 118;
	r[2].time = 100;
	assert_int_equal(wr_hang_find(r, 4, 119, 0, 20, 50, 600, &stale), -1);   /* 18 s behind */
	r[1].time = 121;
	assert_int_equal(wr_hang_find(r, 4, 122, 0, 20, 50, 600, &stale), 2);    /* 21 s behind */
	assert_true(stale == 22);
	assert_int_equal(wr_hang_find(r, 4, 122, 0, 2, 50, 600, &stale), 2);     /* 21 > 10 */
	r[0].time = r[1].time = 109;
	assert_int_equal(wr_hang_find(r, 4, 119, 0, 2, 50, 600, &stale), -1);    /* 9 s behind */
	r[1].time = 121;
	r[1].step = 9;                                    /* behind: no evidence for step 10 */
	r[0].time = 118;
	assert_int_equal(wr_hang_find(r, 4, 122, 0, 20, 50, 600, &stale), -1);
	r[2].phase = PH_DONE;
	assert_int_equal(wr_hang_find(r, 4, 115, 0, 20, 50, 600, &stale), -1);
	/* Old heartbeats from an earlier attempt count from the launch. */
	struct wr_hb o[2] = { hb(10, 50, PH_TRAIN, 1), hb(3, 205, PH_TRAIN, 1) };
	assert_int_equal(wr_hang_find(o, 2, 210, 200, 20, 50, 600, &stale), -1);
	assert_int_equal(wr_hang_find(o, 2, 221, 200, 20, 50, 600, &stale), 0);
	/* No heartbeat at all: nothing to judge. A missing one among others
	 * counts from `since`. */
	struct wr_hb z[2];
	memset(z, 0, sizeof z);
	assert_int_equal(wr_hang_find(z, 2, 1000, 0, 20, 50, 600, &stale), -1);
	z[0] = hb(1, 990, PH_TRAIN, 1);
	assert_int_equal(wr_hang_find(z, 2, 1000, 0, 20, 50, 600, &stale), 1);
	/* ... counted from the attempt's first heartbeat, with the startup
	 * limit while no rank has finished a step (the peer is in its first) */
	z[0].time = 1025;
	z[0].last_step_s = 0;
	assert_int_equal(wr_hang_find(z, 2, 1030, 990, 20, 50, 600, &stale), -1);
	assert_int_equal(wr_hang_find(z, 2, 1041, 990, 20, 50, 600, &stale), 1);
	/* a rank still in init gets the startup limit too */
	z[1] = hb(0, 1000, PH_INIT, 0);
	z[0].time = 1040;
	assert_int_equal(wr_hang_find(z, 2, 1045, 990, 20, 50, 600, &stale), -1);
	assert_int_equal(wr_hang_find(z, 2, 1051, 990, 20, 50, 600, &stale), 1);
	/* once a peer has finished a step every rank is past init: one shown
	 * in init is news not flushed (then frozen), with the training limit */
	z[0].last_step_s = 0.5;
	assert_int_equal(wr_hang_find(z, 2, 1021, 990, 20, 50, 600, &stale), 1);
	z[0].time = 980;    /* a step of an earlier attempt: rank 1 keeps startup_s, the peer is the silent one */
	assert_int_equal(wr_hang_find(z, 2, 1021, 990, 20, 50, 600, &stale), 0);
}

static void test_straggler(void **state)
{
	(void)state;
	double ratio = 0;
	struct wr_hb r[4] = { hb(10, 1, PH_TRAIN, 1.0), hb(10, 1, PH_TRAIN, 1.1),
	                      hb(10, 1, PH_TRAIN, 0.9), hb(10, 1, PH_TRAIN, 1.0) };
	assert_int_equal(wr_straggler(r, 4, 1.5, 0.05, &ratio), -1);
	r[1].last_step_s = 3.0;
	assert_int_equal(wr_straggler(r, 4, 1.5, 0.05, &ratio), 1);
	assert_true(ratio == 3.0);
	assert_int_equal(wr_straggler(r, 4, 1.5, 5.0, &ratio), -1);      /* not slower by min_s */
	assert_int_equal(wr_straggler(r, 2, 1.5, 0.05, &ratio), -1);     /* two ranks: no verdict */
}

static void test_stuck(void **state)
{
	(void)state;
	double silent = -1, gap = -1;
	/* The watchdog fired 8 s into a step: the waiting ranks' heartbeats
	 * were vouched for (at most 2.5 s old), rank 2's was not. */
	struct wr_hb r[4] = { hb(10, 106.5, PH_TRAIN, 1), hb(10, 107, PH_TRAIN, 1),
	                      hb(10, 100, PH_TRAIN, 1), hb(10, 105.8, PH_TRAIN, 1) };
	double m = wr_stuck_margin(8);
	assert_true(m == 4);
	assert_int_equal(wr_stuck_find(r, 4, 108.5, m, &silent, &gap), 2);
	assert_true(silent == 8.5);
	assert_true(gap > 5.79 && gap < 5.81);              /* against rank 3, the next oldest */
	/* Not by more than the margin: nobody stands out. */
	assert_int_equal(wr_stuck_find(r, 4, 108.5, 6, &silent, &gap), -1);
	assert_true(silent == 0 && gap == 0);
	/* The same heartbeats under the default deadline (300 s: margin 150 s):
	 * ranks merely out of step are not blamed. */
	assert_true(wr_stuck_margin(300) == 150);
	assert_int_equal(wr_stuck_find(r, 4, 108.5, wr_stuck_margin(300), &silent, &gap), -1);
	/* Watchdog off: its exit 75 came from elsewhere, nothing is vouched for. */
	assert_true(wr_stuck_margin(0) == 0);
	assert_int_equal(wr_stuck_find(r, 4, 108.5, wr_stuck_margin(0), &silent, &gap), -1);
	assert_true(wr_stuck_margin(2) == WR_STUCK_FLOOR_S);
	/* Two stale ranks (equally, or within the margin of each other):
	 * nobody stands out, whatever the fresh ones say. */
	r[0].time = 100.5;
	assert_int_equal(wr_stuck_find(r, 4, 108.5, m, &silent, &gap), -1);
	/* All equally stale, or all fresh. */
	struct wr_hb e[3] = { hb(4, 50, PH_TRAIN, 1), hb(4, 50, PH_TRAIN, 1), hb(4, 50, PH_TRAIN, 1) };
	assert_int_equal(wr_stuck_find(e, 3, 500, m, &silent, &gap), -1);
	assert_int_equal(wr_stuck_find(e, 3, 50.1, m, &silent, &gap), -1);
	/* The stuck one may be any rank, also the last; two ranks are enough. */
	e[2].time = 40;
	assert_int_equal(wr_stuck_find(e, 3, 55, m, &silent, &gap), 2);
	assert_true(silent == 15 && gap == 10);
	assert_int_equal(wr_stuck_find(e + 1, 2, 55, m, &silent, &gap), 1);
	assert_int_equal(wr_stuck_find(e + 2, 1, 55, m, &silent, &gap), -1);   /* one rank: no peers */
	/* A rank that finished is left out; a rank without a heartbeat of
	 * this attempt leaves nothing to judge from. */
	e[1].phase = PH_DONE;
	assert_int_equal(wr_stuck_find(e, 3, 55, m, &silent, &gap), 2);
	e[0].phase = PH_DONE;
	assert_int_equal(wr_stuck_find(e, 3, 55, m, &silent, &gap), -1);
	e[0].phase = e[1].phase = PH_TRAIN;
	e[1].valid = false;
	assert_int_equal(wr_stuck_find(e, 3, 55, m, &silent, &gap), -1);
	struct wr_hb z[2];
	memset(z, 0, sizeof z);
	assert_int_equal(wr_stuck_find(z, 2, 55, m, &silent, &gap), -1);        /* no heartbeats */
	/* The stalest found wherever it sits relative to the second-stalest. */
	struct wr_hb o[4] = { hb(1, 30, PH_TRAIN, 1), hb(1, 20, PH_TRAIN, 1), hb(1, 10, PH_TRAIN, 1),
	                      hb(1, 29, PH_TRAIN, 1) };
	assert_int_equal(wr_stuck_find(o, 4, 31, m, &silent, &gap), 2);
	assert_true(gap == 10);
}

/* wr_hb_mark: a heartbeat's time becomes when the wrapper first read its
 * content, whatever the writer's clock; the timing line's first step is
 * moved onto the wrapper's clock */
static void test_mark(void **state)
{
	(void)state;
	struct { double off; } clocks[] = { { -600 }, { 600 }, { 0 } };
	for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
		double off = clocks[i].off;
		struct wr_hbmark m = { 0 };
		struct wr_hb h = { .valid = true, .step = 5, .time = 1000 + off, .phase = PH_TRAIN,
		                   .t = { .valid = true, .steps = 5, .first = 990 + off } };
		struct wr_hb again = h, next = h;
		assert_true(wr_hb_mark(&m, &h, 1000.2));
		assert_true(h.time == 1000.2);
		assert_true(fabs(h.t.first - 990.2) < 1e-6);
		/* the same content read later: not fresher */
		assert_false(wr_hb_mark(&m, &again, 1003));
		assert_true(again.time == 1000.2);
		/* a new beat read sooner after it was written: the better offset */
		next.step = 6;
		next.time = 1004 + off;
		assert_true(wr_hb_mark(&m, &next, 1004.05));
		assert_true(next.time == 1004.05);
		assert_true(fabs(next.t.first - 990.05) < 1e-6);
		/* a new line with the same step and phase (a refresh) is a beat */
		struct wr_hb ref = next;
		ref.time = 1006 + off;
		ref.t.first = 990 + off;
		assert_true(wr_hb_mark(&m, &ref, 1006.5));
		assert_true(ref.time == 1006.5);
	}
}

/* A hang no rank is singled out for: every rank not done at one step, its
 * last beat within WR_HANG_TOGETHER_S (3 s) of the others'. Red when the
 * stalest of ranks that stopped together is blamed. */
static void test_together(void **state)
{
	(void)state;
	int m = 0;
	double spread = -1, stale = 0;
	/* rank 1 stopped before the step's all-reduce, ranks 0, 2, 3 wait in
	 * it unmarked: all last beat step 10 within 0.4 s */
	struct wr_hb r[4] = { hb(10, 100.0, PH_TRAIN, 1), hb(10, 100.3, PH_TRAIN, 1),
	                      hb(10, 100.1, PH_TRAIN, 1), hb(10, 100.4, PH_TRAIN, 1) };
	assert_int_equal(wr_hang_find(r, 4, 121, 0, 20, 50, 600, &stale), 0);   /* the stalest... */
	assert_true(wr_hang_together(r, 4, 0, 121, WR_HANG_TOGETHER_S, &m, &spread)); /* ...but not singled out */
	assert_int_equal(m, 4);
	assert_true(fabs(spread - 0.4) < 1e-9);
	/* a rank done is left out; the rest still together */
	r[2].phase = PH_DONE;
	r[2].time = 50;
	assert_true(wr_hang_together(r, 4, 0, 121, WR_HANG_TOGETHER_S, &m, &spread));
	assert_int_equal(m, 3);
	/* the waiting ranks beat on (ddp_hook, job.collective()): rank 0 is 3.5 s behind */
	r[1].time = r[3].time = 103.5;
	assert_false(wr_hang_together(r, 4, 0, 121, WR_HANG_TOGETHER_S, &m, &spread));
	assert_true(fabs(spread - 3.5) < 1e-9);
	/* exactly the window apart: still together */
	r[1].time = r[3].time = 100 + WR_HANG_TOGETHER_S;
	assert_true(wr_hang_together(r, 4, 0, 121, WR_HANG_TOGETHER_S, &m, &spread));
	/* a rank a step behind is singled out however close in time */
	r[1].time = r[3].time = 100.2;
	r[3].step = 11;
	assert_false(wr_hang_together(r, 4, 0, 121, WR_HANG_TOGETHER_S, &m, &spread));
	/* a rank without a heartbeat while others have one: behind */
	r[3] = (struct wr_hb){ 0 };
	assert_false(wr_hang_together(r, 4, 0, 121, WR_HANG_TOGETHER_S, &m, &spread));
	/* none has one (all silent since the launch at 90): together */
	struct wr_hb none[2] = { { 0 }, { 0 } };
	assert_true(wr_hang_together(none, 2, 90, 121, WR_HANG_TOGETHER_S, &m, &spread));
	assert_true(spread == 0);
	/* a leftover beat before `since` counts from since */
	struct wr_hb old[2] = { hb(10, 10, PH_TRAIN, 1), hb(10, 90.5, PH_TRAIN, 1) };
	assert_true(wr_hang_together(old, 2, 90, 121, WR_HANG_TOGETHER_S, &m, &spread));
	assert_true(fabs(spread - 0.5) < 1e-9);
	/* the newest beat 2.5 s old or less: that rank beats on (a marked
	 * wait), the stalest is singled out, however close (a 4 s timeout) */
	struct wr_hb live[2] = { hb(10, 100.0, PH_TRAIN, 1), hb(10, 101.6, PH_TRAIN, 1) };
	assert_true(wr_hang_together(live, 2, 0, 104.2, WR_HANG_TOGETHER_S, &m, &spread));
	assert_false(wr_hang_together(live, 2, 0, 104.0, WR_HANG_TOGETHER_S, &m, &spread));
	/* one rank: nothing to tell it from */
	assert_false(wr_hang_together(r, 1, 0, 121, WR_HANG_TOGETHER_S, &m, &spread));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_straggler),
		cmocka_unit_test(test_stuck),
		cmocka_unit_test(test_mark),
		cmocka_unit_test(test_together),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
