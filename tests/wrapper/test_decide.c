/* Unit tests of wrapper/decide.c: actions per class, budget, backoff,
 * placement on spares / smaller layouts / requeue, rollback targets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "wrapper/decide.h"

static struct wr_policy pol(void)
{
	struct wr_policy p = {
		.max_restarts = 5, .window_restarts = 0, .window_s = 0,
		.backoff_s = 2, .backoff_max_s = 60, .rollback_steps = 10, .skip_batches = 3,
		.requeue = true, .shrink = false, .tasks_per_node = 4, .ranks_per_replica = 4, .dp = 4,
	};
	return p;
}

static struct wr_state st(void)
{
	struct wr_state s = { .now = 1000, .restarts = 0, .no_progress = 0, .numeric_repeats = 0,
	                      .fail_step = 50, .exit_code = 1, .nodes_alloc = 4, .nodes_step = 4 };
	return s;
}

static struct wr_verdict verdict(enum wr_class c, const char *node)
{
	struct wr_verdict v;
	memset(&v, 0, sizeof v);
	v.cls = c;
	wr_nodes_add(&v.nodes, node);
	snprintf(v.why, sizeof v.why, "test %s", wr_class_name(c));
	return v;
}

struct row {
	const char *name;
	enum wr_class cls;
	const char *node;
	int spares;          /* nodes_alloc - nodes_step */
	bool shrink, requeue;
	int restarts, no_progress, numeric_repeats, code;
	enum wr_act want;
	int want_exit, want_nodes, want_ntasks;
	long want_max_resume, want_skip_until;
	double want_delay;
};

static const struct row rows[] = {
	{ "done", WR_DONE, 0, 0, 0, 1, 0, 0, 0, 0, ACT_STOP, 0, 4, 16, -1, -1, 0 },
	{ "user error keeps the code", WR_USER_ERROR, 0, 0, 0, 1, 0, 0, 0, 66, ACT_STOP, 66, 4, 16, -1, -1, 0 },
	{ "user error never retried with budget left", WR_USER_ERROR, 0, 0, 0, 1, 0, 0, 0, 64, ACT_STOP, 64, 4, 16, -1, -1, 0 },
	{ "transient restarts at once", WR_TRANSIENT, 0, 0, 0, 1, 0, 0, 0, 75, ACT_RESTART, 0, 4, 16, -1, -1, 0 },
	{ "transient, no progress: backoff 2", WR_TRANSIENT, 0, 0, 0, 1, 1, 1, 0, 75, ACT_RESTART, 0, 4, 16, -1, -1, 2 },
	{ "transient, 3rd no progress: backoff 8", WR_TRANSIENT, 0, 0, 0, 1, 2, 3, 0, 75, ACT_RESTART, 0, 4, 16, -1, -1, 8 },
	{ "backoff capped", WR_TRANSIENT, 0, 0, 0, 1, 2, 20, 0, 75, ACT_RESTART, 0, 4, 16, -1, -1, 60 },
	{ "budget spent", WR_TRANSIENT, 0, 0, 0, 1, 5, 0, 0, 75, ACT_STOP, 70, 4, 16, -1, -1, 0 },
	{ "software once", WR_SOFTWARE, 0, 0, 0, 1, 0, 1, 0, 1, ACT_RESTART, 0, 4, 16, -1, -1, 2 },
	{ "software loop", WR_SOFTWARE, 0, 0, 0, 1, 1, 2, 0, 1, ACT_STOP, 70, 4, 16, -1, -1, 0 },
	{ "preempted requeues", WR_PREEMPTED, 0, 0, 0, 1, 5, 0, 0, 87, ACT_REQUEUE, 0, 4, 16, -1, -1, 0 },
	{ "preempted, no requeue", WR_PREEMPTED, 0, 0, 0, 0, 0, 0, 0, 87, ACT_STOP, 87, 4, 16, -1, -1, 0 },
	{ "numerical rollback", WR_NUMERIC, 0, 0, 0, 1, 0, 0, 1, 85, ACT_RESTART, 0, 4, 16, 40, 53, 0 },
	{ "numerical again: further", WR_NUMERIC, 0, 0, 0, 1, 1, 0, 2, 85, ACT_RESTART, 0, 4, 16, 30, 53, 0 },
	{ "numerical floor at 0", WR_NUMERIC, 0, 0, 0, 1, 1, 0, 9, 85, ACT_RESTART, 0, 4, 16, 0, 53, 0 },
	{ "node fault, spare fits", WR_NODE_FAULT, "n2", 1, 0, 1, 0, 0, 0, 137, ACT_RESTART, 0, 4, 16, -1, -1, 0 },
	{ "node fault, no spare: requeue", WR_NODE_FAULT, "n2", 0, 0, 1, 0, 0, 0, 137, ACT_REQUEUE, 0, 4, 16, -1, -1, 0 },
	{ "node fault, no spare, no requeue", WR_NODE_FAULT, "n2", 0, 0, 0, 0, 0, 0, 137, ACT_STOP, 70, 4, 16, -1, -1, 0 },
	{ "node fault, dp shrinks 4->2", WR_NODE_FAULT, "n2", 0, 1, 1, 0, 0, 0, 137, ACT_RESTART, 0, 2, 8, -1, -1, 0 },
	{ "node fault, budget spent", WR_NODE_FAULT, "n2", 1, 0, 1, 5, 0, 0, 137, ACT_STOP, 70, 4, 16, -1, -1, 0 },
	{ "sdc with suspect, spare", WR_SDC, "n3", 1, 0, 1, 0, 0, 0, 86, ACT_RESTART, 0, 4, 16, -1, -1, 0 },
	{ "sdc, suspect unknown: in place", WR_SDC, 0, 0, 0, 1, 0, 0, 0, 86, ACT_RESTART, 0, 4, 16, -1, -1, 0 },
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct wr_policy p = pol();
		p.shrink = r->shrink;
		p.requeue = r->requeue;
		struct wr_state s = st();
		s.nodes_alloc = 4 + r->spares;
		s.restarts = r->restarts;
		s.no_progress = r->no_progress;
		s.numeric_repeats = r->numeric_repeats;
		s.exit_code = r->code;
		struct wr_verdict v = verdict(r->cls, r->node);
		struct wr_action a;
		wr_decide(&v, &p, &s, &a);
		if (a.act != r->want || (a.act == ACT_STOP && a.exit_code != r->want_exit) ||
		    (a.act == ACT_RESTART && (a.nodes != r->want_nodes || a.ntasks != r->want_ntasks)) ||
		    a.max_resume_step != r->want_max_resume || a.skip_until_step != r->want_skip_until ||
		    a.delay_s != r->want_delay)
			fail_msg("row '%s': act %d exit %d N %d n %d resume<=%ld skip<=%ld delay %g (%s)", r->name,
			         a.act, a.exit_code, a.nodes, a.ntasks, a.max_resume_step, a.skip_until_step,
			         a.delay_s, a.why);
		if (r->node && a.act != ACT_STOP && (r->cls == WR_NODE_FAULT || r->cls == WR_SDC))
			assert_true(wr_nodes_has(&a.exclude, r->node));
		if (r->cls == WR_SDC)
			assert_true(a.need_agree);
		assert_true(a.why[0]);
		/* Only failures use the budget. */
		assert_int_equal(a.counts, a.act != ACT_STOP && r->cls != WR_PREEMPTED);
	}
}

static void test_window(void **state)
{
	(void)state;
	struct wr_policy p = pol();
	p.max_restarts = -1;
	p.window_restarts = 2;
	p.window_s = 100;
	double times[] = { 850, 950, 990 };
	struct wr_state s = st();
	s.restart_times = times;
	s.nrestart_times = 3;
	s.restarts = 3;
	char why[120];
	assert_false(wr_budget_ok(&p, &s, why, sizeof why));   /* 950, 990 in (900, 1000] */
	assert_non_null(strstr(why, "last 100 s"));
	s.now = 1051;                                          /* only 990 left */
	assert_true(wr_budget_ok(&p, &s, why, sizeof why));
	p.max_restarts = 3;
	assert_false(wr_budget_ok(&p, &s, why, sizeof why));    /* per-job cap */
	assert_non_null(strstr(why, "per job"));
}

static void test_excluded_accumulate(void **state)
{
	(void)state;
	struct wr_policy p = pol();
	struct wr_state s = st();
	struct wr_nodes old = { 0 };
	wr_nodes_add(&old, "n1");
	s.excluded = &old;
	s.excluded_in_alloc = 1;
	s.nodes_alloc = 6;     /* 4 used, n1 already out, one spare left */
	struct wr_verdict v = verdict(WR_NODE_FAULT, "n2");
	struct wr_action a;
	wr_decide(&v, &p, &s, &a);
	assert_int_equal(a.act, ACT_RESTART);
	assert_int_equal(a.exclude.n, 2);
	v = verdict(WR_NODE_FAULT, "n3");
	s.excluded = &a.exclude;
	s.excluded_in_alloc = 2;
	struct wr_action b;
	wr_decide(&v, &p, &s, &b);
	assert_int_equal(b.act, ACT_REQUEUE);   /* 6 - 3 < 4 */
	assert_int_equal(b.exclude.n, 3);
}

static void test_shrink_divisor(void **state)
{
	(void)state;
	struct wr_policy p = pol();
	p.shrink = true;
	p.dp = 6;
	p.tasks_per_node = 2;
	p.ranks_per_replica = 2;          /* 6 nodes x 2 = dp 6 */
	struct wr_state s = st();
	s.nodes_alloc = 6;
	s.nodes_step = 6;
	struct wr_verdict v = verdict(WR_NODE_FAULT, "n5");
	struct wr_action a;
	wr_decide(&v, &p, &s, &a);
	/* 5 nodes hold dp 5, which does not divide 6: dp 3 on 3 nodes. */
	assert_int_equal(a.act, ACT_RESTART);
	assert_int_equal(a.ntasks, 6);
	assert_int_equal(a.nodes, 3);
	assert_int_equal(a.dp, 3);
	assert_int_equal(a.accum, 2);
}

/* The global batch is dp x micro-batch x accum: with accum 3 at dp 4, three
 * nodes run dp 3 at accum 4; with accum 1, dp 2 at accum 2. One replica of
 * tp x pp = 16 ranks no longer fitting on the three 4-rank nodes left: requeue. */
static void test_shrink_accum(void **state)
{
	(void)state;
	struct wr_policy p = pol();
	p.shrink = true;
	p.tasks_per_node = 1;
	p.ranks_per_replica = 1;
	p.accum = 3;
	struct wr_state s = st();
	struct wr_verdict v = verdict(WR_NODE_FAULT, "n3");
	struct wr_action a;
	wr_decide(&v, &p, &s, &a);
	assert_int_equal(a.act, ACT_RESTART);
	assert_int_equal(a.dp, 3);
	assert_int_equal(a.accum, 4);
	assert_int_equal(a.ntasks, 3);
	assert_int_equal(a.nodes, 3);
	assert_non_null(strstr(a.why, "dp 4 -> 3, grad-accum 3 -> 4"));
	p.accum = 1;
	wr_decide(&v, &p, &s, &a);
	assert_int_equal(a.dp, 2);
	assert_int_equal(a.accum, 2);
	assert_int_equal(a.nodes, 2);
	p.dp = 0;                         /* layout unknown: no shrink */
	wr_decide(&v, &p, &s, &a);
	assert_int_equal(a.act, ACT_REQUEUE);
	p = pol();
	p.shrink = true;
	p.dp = 1;
	p.ranks_per_replica = 16;         /* 1 replica of 16 ranks on 4 nodes of 4 */
	wr_decide(&v, &p, &s, &a);
	assert_int_equal(a.act, ACT_REQUEUE);
	assert_int_equal(a.dp, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_excluded_accumulate),
		cmocka_unit_test(test_shrink_divisor),
		cmocka_unit_test(test_shrink_accum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
