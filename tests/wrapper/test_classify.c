/* Unit tests of wrapper/classify.c: one table row per kind of step ending. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "wrapper/classify.h"
#include "wrapper/decide.h"

struct row {
	const char *name;
	bool exited;
	int code, term_sig, wrapper_sig;
	bool hung;
	bool kill_timeout;
	const char *hung_node;
	int task_sig;
	int task_code;             /* first task's exit code per srun */
	const char *sig_node;      /* srun names this node for a signal death */
	const char *down_node;     /* Slurm says this node is down */
	const char *sdc_node;      /* sdc.json suspect */
	const char *past_node;     /* one earlier crash on this node */
	enum wr_class want;
	const char *want_node;     /* first node in verdict.nodes, or NULL for none */
};

static const struct row rows[] = {
	{ "done", true, 0, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_DONE, NULL },
	{ "usage", true, 64, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_USER_ERROR, NULL },
	{ "bad data", true, 65, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_USER_ERROR, NULL },
	{ "missing input", true, 66, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_USER_ERROR, NULL },
	{ "usage on a crashing node still stops", true, 64, 0, 0, false, false, 0, 0, 0, 0, 0, 0, "n1", WR_USER_ERROR, NULL },
	{ "transient", true, 75, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_TRANSIENT, NULL },
	{ "io error", true, 74, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_TRANSIENT, NULL },
	{ "internal bug", true, 70, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_SOFTWARE, NULL },
	{ "python exception", true, 1, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_SOFTWARE, NULL },
	{ "numerical", true, 85, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_NUMERIC, NULL },
	{ "sdc with suspect", true, 86, 0, 0, false, false, 0, 0, 0, 0, 0, "n3", 0, WR_SDC, "n3" },
	{ "sdc without suspect", true, 86, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_SDC, NULL },
	{ "preempted by exit", true, 87, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_PREEMPTED, NULL },
	{ "wrapper got USR1", true, 87, 0, SIGUSR1, false, false, 0, 0, 0, 0, 0, 0, 0, WR_PREEMPTED, NULL },
	{ "wrapper got TERM, step killed", true, 143, 0, SIGTERM, false, false, 0, SIGTERM, 0, "n1", 0, 0, 0, WR_PREEMPTED, NULL },
	{ "wrapper got USR1 but step done", true, 0, 0, SIGUSR1, false, false, 0, 0, 0, 0, 0, 0, 0, WR_DONE, NULL },
	{ "first kill -9 on a node", true, 137, 0, 0, false, false, 0, SIGKILL, 0, "n2", 0, 0, 0, WR_TRANSIENT, NULL },
	{ "second crash on the node", true, 137, 0, 0, false, false, 0, SIGSEGV, 0, "n2", 0, 0, "n2", WR_NODE_FAULT, "n2" },
	{ "crash elsewhere than before", true, 134, 0, 0, false, false, 0, SIGABRT, 0, "n2", 0, 0, "n1", WR_TRANSIENT, NULL },
	{ "signal death seen only in exit code", true, 139, 0, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_TRANSIENT, NULL },
	{ "srun itself killed", false, 0, SIGKILL, 0, false, false, 0, 0, 0, 0, 0, 0, 0, WR_TRANSIENT, NULL },
	{ "node down beats exit code", true, 75, 0, 0, false, false, 0, 0, 0, 0, "n4", 0, 0, WR_NODE_FAULT, "n4" },
	{ "node down beats user error", true, 64, 0, 0, false, false, 0, 0, 0, 0, "n4", 0, 0, WR_NODE_FAULT, "n4" },
	{ "first hang on a node", true, 137, 0, 0, true, false, "n3", 0, 0, 0, 0, 0, 0, WR_TRANSIENT, NULL },
	{ "hang again on the node", true, 137, 0, 0, true, false, "n3", 0, 0, 0, 0, 0, "n3", WR_NODE_FAULT, "n3" },
	{ "hang, node unknown", true, 137, 0, 0, true, false, "", 0, 0, 0, 0, 0, "n3", WR_TRANSIENT, NULL },
	{ "task exit 75, rest killed by -K", true, 137, 0, 0, false, false, 0, 0, 75, 0, 0, 0, 0, WR_TRANSIENT, NULL },
	{ "task exit 64, rest killed by -K", true, 137, 0, 0, false, false, 0, 0, 64, 0, 0, 0, 0, WR_USER_ERROR, NULL },
	{ "task crash then wrapper saw hang", true, 137, 0, 0, true, false, "n3", SIGABRT, 0, "n2", 0, 0, 0, WR_TRANSIENT, NULL },
	{ "task crash then hang, repeat on node", true, 137, 0, 0, true, false, "n3", SIGABRT, 0, "n2", 0, 0, "n2", WR_NODE_FAULT, "n2" },
	{ "hang, step could not be ended", true, 137, 0, 0, true, true, "n3", 0, 0, 0, 0, 0, 0, WR_NODE_FAULT, "n3" },
	{ "hang, could not be ended, node unknown", true, 137, 0, 0, true, true, "", 0, 0, 0, 0, 0, 0, WR_TRANSIENT, NULL },
	{ "hang while node goes down", true, 137, 0, 0, true, false, "n3", 0, 0, 0, "n1", 0, 0, WR_NODE_FAULT, "n1" },
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct wr_ending e;
		memset(&e, 0, sizeof e);
		e.exited = r->exited;
		e.exit_code = r->code;
		e.term_signal = r->term_sig;
		e.wrapper_signal = r->wrapper_sig;
		e.hung = r->hung;
		e.kill_timeout = r->kill_timeout;
		if (r->hung_node)
			strcpy(e.hung_node, r->hung_node);
		e.task_signal = r->task_sig;
		e.task_exit_code = r->task_code;
		wr_nodes_add(&e.signal_nodes, r->sig_node);
		wr_nodes_add(&e.down_nodes, r->down_node);
		wr_nodes_add(&e.sdc_suspects, r->sdc_node);
		struct wr_past past = { WR_TRANSIENT, "", false };
		if (r->past_node)
			strcpy(past.node, r->past_node);
		struct wr_verdict v;
		wr_classify(&e, &past, r->past_node ? 1 : 0, &v);
		if (v.cls != r->want || (r->want_node ? v.nodes.n < 1 || strcmp(v.nodes.name[0], r->want_node)
		                                      : v.nodes.n != 0))
			fail_msg("row '%s': got %s (%d nodes, %s) want %s %s: %s", r->name, wr_class_name(v.cls),
			         v.nodes.n, v.nodes.n ? v.nodes.name[0] : "-", wr_class_name(r->want),
			         r->want_node ? r->want_node : "-", v.why);
		assert_true(v.why[0] != '\0');
	}
}

static void test_nodes_set(void **state)
{
	(void)state;
	struct wr_nodes s = { 0 };
	wr_nodes_add(&s, "a");
	wr_nodes_add(&s, "a");
	wr_nodes_add(&s, "");
	wr_nodes_add(&s, NULL);
	wr_nodes_add(&s, "b");
	assert_int_equal(s.n, 2);
	assert_true(wr_nodes_has(&s, "b"));
	assert_false(wr_nodes_has(&s, "c"));
	for (int i = 0; i < 2 * WR_MAX_NODES; i++) {
		char n[16];
		snprintf(n, sizeof n, "x%d", i);
		wr_nodes_add(&s, n);
	}
	assert_int_equal(s.n, WR_MAX_NODES);
	assert_string_equal(wr_class_name(WR_NODE_FAULT), "node_fault");
	assert_string_equal(wr_class_name((enum wr_class)99), "unknown");
}

/* Exit 75 with the node of the rank that stalled its peers into the
 * communication watchdog (watch.c's heartbeat judgement), or without. */
static void test_stuck_peer(void **state)
{
	(void)state;
	struct {
		const char *name;
		int code, task_code;       /* srun's code, the first task's per srun */
		const char *stuck, *past, *down;
		enum wr_class past_cls;
		enum wr_class want;
		const char *want_node;     /* the verdict's node */
		bool excluded;             /* verdict.nodes holds it */
		const char *why;           /* in verdict.why */
	} cases[] = {
		{ "first time: transient naming the node", 75, 75, "n2", NULL, NULL, WR_TRANSIENT,
		  WR_TRANSIENT, "n2", false, "peer stalled the communication watchdog on n2 (first time)" },
		{ "srun's code only", 75, 0, "n2", NULL, NULL, WR_TRANSIENT,
		  WR_TRANSIENT, "n2", false, "on n2 (first time)" },
		{ "task exit 75, the rest killed by -K", 137, 75, "n2", NULL, NULL, WR_TRANSIENT,
		  WR_TRANSIENT, "n2", false, "stalled the communication watchdog on n2" },
		{ "again on the node: node fault", 75, 75, "n2", "n2", NULL, WR_TRANSIENT,
		  WR_NODE_FAULT, "n2", true, "on n2, 1 time(s) before: node fault" },
		{ "after a hang on the node: node fault", 137, 75, "n2", "n2", NULL, WR_TRANSIENT,
		  WR_NODE_FAULT, "n2", true, "node fault" },
		{ "after a crash elsewhere: transient", 75, 75, "n2", "n1", NULL, WR_TRANSIENT,
		  WR_TRANSIENT, "n2", false, "(first time)" },
		{ "an earlier numerical fault does not count", 75, 75, "n2", "n2", NULL, WR_NUMERIC,
		  WR_TRANSIENT, "n2", false, "(first time)" },
		{ "no rank stood out: as before", 75, 75, "", "n2", NULL, WR_TRANSIENT,
		  WR_TRANSIENT, "", false, "exit 75: transient, restart" },
		{ "Slurm's down node first", 75, 75, "n2", NULL, "n4", WR_TRANSIENT,
		  WR_NODE_FAULT, "n4", true, "unusable" },
		{ "the first task's code decides", 137, 64, "n2", "n2", NULL, WR_TRANSIENT,
		  WR_USER_ERROR, "", false, "exit 64" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct wr_ending e;
		memset(&e, 0, sizeof e);
		e.exited = true;
		e.exit_code = cases[i].code;
		e.task_exit_code = cases[i].task_code;
		strcpy(e.stuck_node, cases[i].stuck);
		wr_nodes_add(&e.down_nodes, cases[i].down);
		struct wr_past past = { cases[i].past_cls, "", false };
		if (cases[i].past)
			strcpy(past.node, cases[i].past);
		struct wr_verdict v;
		wr_classify(&e, &past, cases[i].past ? 1 : 0, &v);
		bool has = wr_nodes_has(&v.nodes, cases[i].want_node);
		if (v.cls != cases[i].want || strcmp(v.node, cases[i].want_node) || has != cases[i].excluded ||
		    (!cases[i].excluded && v.nodes.n) || !strstr(v.why, cases[i].why))
			fail_msg("row '%s': got %s node '%s' (%d to exclude): %s", cases[i].name, wr_class_name(v.cls),
			         v.node, v.nodes.n, v.why);
	}
}

/* The watcher ended the step to replace a straggler: a node fault on its
 * node, whatever srun's code after the kill */
static void test_straggler_replaced(void **state)
{
	(void)state;
	struct wr_ending e;
	memset(&e, 0, sizeof e);
	e.exited = true;
	e.exit_code = 143;
	e.task_signal = 15;
	wr_nodes_add(&e.signal_nodes, "node1");
	snprintf(e.straggler_node, sizeof e.straggler_node, "node3");
	struct wr_verdict v;
	wr_classify(&e, NULL, 0, &v);
	assert_int_equal(v.cls, WR_NODE_FAULT);
	assert_string_equal(v.node, "node3");
	assert_int_equal(v.nodes.n, 1);
	assert_string_equal(v.nodes.name[0], "node3");
}

/* A hang no rank was singled out for (every rank stopped beating within
 * WR_HANG_TOGETHER_S, hang.c): transient with no node, after hangs on
 * that node and with its tasks not ended alike, whatever node the stalest
 * rank was on; the policy restarts in place and excludes nothing. */
static void test_hang_together(void **state)
{
	(void)state;
	struct wr_past past[2] = { { WR_TRANSIENT, "n3", true }, { WR_TRANSIENT, "n3", true } };
	for (int kill = 0; kill < 2; kill++) {
		struct wr_ending e;
		memset(&e, 0, sizeof e);
		e.exited = true;
		e.exit_code = 143;
		e.hung = true;
		e.kill_timeout = kill;
		e.hung_together = 4;
		e.hung_spread = 0.4;
		strcpy(e.hung_node, "n3");   /* the stalest rank's node, which proves nothing */
		struct wr_verdict v;
		wr_classify(&e, past, 2, &v);
		assert_int_equal(v.cls, WR_TRANSIENT);
		assert_int_equal(v.nodes.n, 0);
		assert_string_equal(v.node, "");
		assert_non_null(strstr(v.why, "all 4 ranks stopped beating within 0.4 s: no rank singled out"));
		struct wr_policy p = { .max_restarts = 5, .tasks_per_node = 1, .requeue = true };
		struct wr_state s = { .now = 100, .nodes_alloc = 4, .nodes_step = 4, .fail_step = -1 };
		struct wr_action a;
		wr_decide(&v, &p, &s, &a);
		assert_int_equal(a.act, ACT_RESTART);
		assert_int_equal(a.exclude.n, 0);
		assert_non_null(strstr(a.why, "restart in place"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_nodes_set),
		cmocka_unit_test(test_stuck_peer),
		cmocka_unit_test(test_straggler_replaced),
		cmocka_unit_test(test_hang_together),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
