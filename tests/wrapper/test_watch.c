/* Unit tests of the wrapper's readers: srun's task-exit lines, sinfo node
 * states, sdc.json, the ledger folded back into a history, loss points. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wrapper/ledger.h"
#include "wrapper/report.h"
#include "wrapper/slurm.h"
#include "wrapper/watch.h"

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/llmt-test-watch.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_srun_lines(void **state)
{
	(void)state;
	struct { const char *line; int rc; const char *node; int sig; int code; } rows[] = {
		{ "srun: error: node2: task 1: Killed", 1, "node2", SIGKILL, 0 },
		{ "srun: error: node3: tasks 4-7: Terminated", 1, "node3", SIGTERM, 0 },
		{ "srun: error: n1: tasks 0,2: Aborted (core dumped)", 1, "n1", SIGABRT, 0 },
		{ "srun: error: n1: task 0: Segmentation fault", 1, "n1", SIGSEGV, 0 },
		{ "srun: error: n4: task 3: Out Of Memory", 1, "n4", SIGKILL, 0 },
		{ "srun: error: node1: task 0: Exited with exit code 75", 1, "node1", 0, 75 },
		{ "srun: error: Node failure on node2", 0, "", 0, 0 },
		{ "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", 0, "", 0, 0 },
		{ "srun: error: node1: task x: Killed", 0, "", 0, 0 },
		{ "step 5 loss 3.2", 0, "", 0, 0 },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char node[64] = "";
		int sig = -1, code = -1;
		int rc = wr_srun_task_line(rows[i].line, node, sizeof node, &sig, &code);
		if (rc != rows[i].rc || (rc && (strcmp(node, rows[i].node) || sig != rows[i].sig || code != rows[i].code)))
			fail_msg("'%s': rc %d node %s sig %d code %d", rows[i].line, rc, node, sig, code);
	}
}

static void test_node_states(void **state)
{
	(void)state;
	char text[] = "node1 allocated\nnode2 down*\nnode3 idle*\nnode4 DRAINING\nnode5 mixed\n"
	              "node6 failing\nnode7 completing\nnode8 drained\nnode9 allocated~\n";
	struct wr_nodes bad = { 0 };
	wr_parse_node_states(text, &bad);
	assert_int_equal(bad.n, 6);
	assert_true(wr_nodes_has(&bad, "node2"));
	assert_true(wr_nodes_has(&bad, "node3"));
	assert_true(wr_nodes_has(&bad, "node4"));
	assert_true(wr_nodes_has(&bad, "node6"));
	assert_true(wr_nodes_has(&bad, "node8"));
	assert_false(wr_nodes_has(&bad, "node1"));
	assert_false(wr_nodes_has(&bad, "node7"));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_sdc(void **state)
{
	(void)state;
	char p[400];
	snprintf(p, sizeof p, "%s/sdc.json", tmpdir);
	write_file(p, "{\"step\":40,\"dp\":3,\"checksums\":[\"a\",\"b\",\"a\"],"
	              "\"suspects\":[{\"dp_rank\":1,\"hosts\":[\"node3\",\"node4\"]}]}");
	struct wr_nodes s;
	long step = 0;
	assert_int_equal(wr_sdc_suspects(p, &s, &step), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.name[1], "node4");
	assert_int_equal(step, 40);
	snprintf(p, sizeof p, "%s/nope.json", tmpdir);
	assert_int_equal(wr_sdc_suspects(p, &s, &step), -1);
}

static void test_ledger_roundtrip(void **state)
{
	(void)state;
	struct wr_ledger l;
	char dir[400];
	snprintf(dir, sizeof dir, "%s/run/a", tmpdir);
	assert_int_equal(wr_ledger_open(&l, dir), 0);
	wr_ledger_event(&l, "start", json_pack("{s:i,s:s}", "run", 0, "job", "7"));
	wr_ledger_event(&l, "launch", json_pack("{s:i}", "attempt", 0));
	wr_ledger_event(&l, "attempt", json_pack("{s:i,s:f,s:f,s:f,s:i,s:i,s:f,s:s,s:i}", "attempt", 0, "t_launch", 10.0,
	                "t_first_step", 12.0, "t_end", 30.0, "resume_step", 0, "last_step", 15, "step_s", 1.0,
	                "class", "node_fault", "run", 0));
	wr_ledger_event(&l, "failure", json_pack("{s:s,s:s,s:I}", "class", "node_fault", "node", "n3", "step", (json_int_t)15));
	struct wr_nodes ex = { 0 };
	wr_nodes_add(&ex, "n3");
	wr_ledger_event(&l, "action", json_pack("{s:s,s:o,s:b,s:I,s:I,s:b}", "act", "requeue", "exclude",
	                wr_nodes_json(&ex), "counts", 1, "max_resume_step", (json_int_t)-1,
	                "skip_until_step", (json_int_t)-1, "need_agree", 1));
	wr_ledger_event(&l, "requeue", NULL);
	fputs("this is not json\n", l.f);
	wr_ledger_event(&l, "start", json_pack("{s:i,s:s}", "run", 1, "job", "7"));
	wr_ledger_event(&l, "launch", json_pack("{s:i}", "attempt", 1));
	wr_ledger_event(&l, "ckpt_bad", json_pack("{s:s,s:s}", "path", "/ck/step_9", "rule", "exit_code"));
	wr_ledger_event(&l, "ckpt_bad", json_pack("{s:s,s:s}", "path", "/ck/step_8", "rule", "load_phase"));
	wr_ledger_close(&l);

	struct wr_history h;
	assert_int_equal(wr_ledger_load(l.path, "7", &h), 0);
	assert_int_equal(h.runs, 2);
	assert_int_equal(h.attempts_total, 2);
	assert_int_equal(h.restarts, 1);
	assert_int_equal(h.npast, 1);
	assert_int_equal(h.past[0].cls, WR_NODE_FAULT);
	assert_string_equal(h.past[0].node, "n3");
	assert_int_equal(h.failures, 1);
	assert_true(wr_nodes_has(&h.excluded, "n3"));
	assert_true(h.pending);
	assert_true(h.need_agree);
	assert_int_equal(h.nattempts, 1);
	assert_int_equal(h.attempts[0].last_step, 15);
	assert_true(h.last_run_cut);      /* run 1 has no end yet */
	assert_true(wr_history_is_bad(&h, "/ck/step_9") && wr_history_is_bad(&h, "/ck/step_8"));
	/* Another job in the same run dir: a full restart budget, the rest kept. */
	assert_int_equal(wr_ledger_load(l.path, "8", &h), 0);
	assert_int_equal(h.restarts, 0);
	assert_false(h.pending);
	assert_int_equal(h.attempts_total, 2);
	assert_true(wr_nodes_has(&h.excluded, "n3"));
	/* its checkpoint marked by exit 89 stays bad; the load-phase guess is
	 * this job's to try again */
	assert_true(wr_history_is_bad(&h, "/ck/step_9"));
	assert_false(wr_history_is_bad(&h, "/ck/step_8"));

	snprintf(dir, sizeof dir, "%s/none.jsonl", tmpdir);
	assert_int_equal(wr_ledger_load(dir, NULL, &h), 0);
	assert_int_equal(h.runs, 0);
}

static void test_loss_points(void **state)
{
	(void)state;
	char m[400], d[400];
	snprintf(m, sizeof m, "%s/metrics.jsonl", tmpdir);
	snprintf(d, sizeof d, "%s/loss.dat", tmpdir);
	write_file(m, "{\"step\":1,\"loss\":5.0}\n{\"step\":2,\"loss\":4.0}\n{\"step\":3,\"loss\":9.0}\n"
	              "garbage\n{\"step\":2,\"loss\":4.5}\n{\"step\":3,\"loss\":3.5}\n{\"step\":2000,\"loss\":1.0}\n");
	assert_int_equal(wr_loss_points(m, d), 4);
	FILE *f = fopen(d, "r");
	char buf[256] = "";
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, "1 5\n2 4.5\n3 3.5\n2000 1\n");
	snprintf(m, sizeof m, "%s/absent.jsonl", tmpdir);
	assert_int_equal(wr_loss_points(m, d), -1);
}

static void test_plugin_layout(void **state)
{
	(void)state;
	int tp, pp, dp;
	bool aut;
	unsetenv("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train");
	unsetenv("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_dp");
	wr_plugin_layout(&tp, &pp, &dp, &aut);
	assert_true(tp == 1 && pp == 1 && dp == 0 && !aut);      /* not a plugin job: no shrink */
	setenv("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train", "tp=8,pp=2,ckpt-interval=10", 1);
	wr_plugin_layout(&tp, &pp, &dp, &aut);
	assert_true(tp == 8 && pp == 2 && dp == 0 && aut);       /* dp defaults to auto */
	setenv("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train", "tp=4,pp=1,dp=4", 1);
	wr_plugin_layout(&tp, &pp, &dp, &aut);
	assert_true(tp == 4 && dp == 4 && !aut);
	setenv("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_dp", "auto", 1);   /* overrides the spec */
	wr_plugin_layout(&tp, &pp, &dp, &aut);
	assert_true(tp == 4 && dp == 0 && aut);
	unsetenv("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train");
	unsetenv("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_dp");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srun_lines),
		cmocka_unit_test(test_node_states),
		cmocka_unit_test(test_sdc),
		cmocka_unit_test(test_ledger_roundtrip),
		cmocka_unit_test(test_loss_points),
		cmocka_unit_test(test_plugin_layout),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
