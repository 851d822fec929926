/* Unit tests of the wrapper's readers: srun's task-exit lines, sinfo node
 * states, sdc.json, the ledger folded back into a history, loss points;
 * heartbeats judged on the wrapper's clock whatever the nodes' clocks say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wrapper/hbread.h"
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

/* Heartbeats read as the watch loop reads them (hbread.c, wr_hb_mark,
 * wr_hang_find) on a virtual wrapper clock W = B + tick, the ranks'
 * clocks off by off seconds. A rank beats each tick up to its tick stop
 * (0: never), its record in its rank file or, with node set, in that
 * node's file (the node channel: a stopped rank's record is flushed on by
 * the others, unchanged). Before the launch (the snapshot, at W = B) every
 * rank has a leftover rank file of an earlier attempt 100 s before on a
 * clock in step, and ranks 1 and 4 a leftover record in node_old (newer
 * than rank 1's new ones, which are 600 s behind). Returns the first tick
 * a rank is found hung (*rank, *stale), or 0 when none is within ticks. */
#define SKEW_B 1700000000.0
struct skew_rank {
	double off;
	int stop;
	const char *node;
};

static void skew_line(char *buf, size_t len, long step, double t)
{
	snprintf(buf, len, "%ld %lld train 1.000000 h\n", step, (long long)(t * 1e9));
}

static int skew_run(const char *name, const struct skew_rank *rk, int n, int ticks, int *rank, double *stale)
{
	char dir[400], p[600], line[200], node[2][4096];
	struct wr_hb cur[8], hb[8] = { { 0 } };
	struct wr_hbmark m[8] = { { 0 } };
	struct wr_hbold old[8];
	double first = -1;
	const char *nodes[2] = { "b", "e" };

	assert_true(n <= 8);
	snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
	assert_int_equal(mkdir(dir, 0700), 0);
	for (int r = 0; r < n; r++) {
		snprintf(p, sizeof p, "%s/rank_%05d", dir, r);
		skew_line(line, sizeof line, 40, SKEW_B - 100);
		write_file(p, line);
	}
	snprintf(p, sizeof p, "%s/node_old", dir);
	write_file(p, "node old 1\nr1 41 1699999950000000000 train 1.000000 old\n"
	              "r4 41 1699999950000000000 train 1.000000 old\n");
	assert_int_equal(wr_hb_snapshot(dir, old, n), 0);
	for (int t = 1; t <= ticks; t++) {
		double W = SKEW_B + t;
		for (int k = 0; k < 2; k++)
			snprintf(node[k], sizeof node[k], "node %s 1\n", nodes[k]);
		for (int r = 0; r < n; r++) {
			bool beats = t <= rk[r].stop;
			/* a stopped rank's record stays what it last was */
			skew_line(line, sizeof line, beats ? t : rk[r].stop, SKEW_B + (beats ? t : rk[r].stop) - 0.5 + rk[r].off);
			if (rk[r].node) {
				int k = strcmp(rk[r].node, "b") ? 1 : 0;
				if (rk[r].stop > 0)
					snprintf(node[k] + strlen(node[k]), sizeof node[k] - strlen(node[k]), "r%d %s", r, line);
			} else if (beats) {
				snprintf(p, sizeof p, "%s/rank_%05d", dir, r);
				write_file(p, line);
			}
		}
		for (int k = 0; k < 2; k++) {
			snprintf(p, sizeof p, "%s/node_%s", dir, nodes[k]);
			write_file(p, node[k]);
		}
		assert_int_equal(wr_hb_read_new(dir, cur, n, old, NULL), 0);
		for (int r = 0; r < n; r++) {
			if (!cur[r].valid)
				continue;
			wr_hb_mark(&m[r], &cur[r], W);
			hb[r] = cur[r];
			if (first < 0 || hb[r].time < first)
				first = hb[r].time;
		}
		*rank = wr_hang_find(hb, n, W, first >= 0 ? first : SKEW_B, 5, 30, 60, stale);
		if (*rank >= 0)
			return t;
	}
	return 0;
}

static void test_hb_clock_skew(void **state)
{
	(void)state;
	int rank = -1;
	double stale = 0;
	/* rank 1 on node b 10 min behind, rank 2 10 min ahead, node e 10 min
	 * behind: all beat, none hung */
	struct skew_rank all[6] = { { 0, 99, NULL }, { -600, 99, "b" }, { 600, 99, NULL }, { 0, 99, NULL },
	                            { -600, 99, "e" }, { -600, 99, "e" } };
	assert_int_equal(skew_run("beat", all, 6, 40, &rank, &stale), 0);

	/* rank 4 (node e, 10 min behind) stops after tick 3 while rank 5 on its
	 * node flushes on: found when silent 6 s > 5 s on the wrapper's clock,
	 * the tick a rank with a clock in step is found */
	struct skew_rank quiet[6] = { { 0, 99, NULL }, { -600, 99, "b" }, { 600, 99, NULL }, { 0, 99, NULL },
	                              { -600, 3, "e" }, { -600, 99, "e" } };
	assert_int_equal(skew_run("quiet", quiet, 6, 40, &rank, &stale), 9);
	assert_int_equal(rank, 4);
	assert_true(stale == 6);
	struct skew_rank even[6] = { { 0, 99, NULL }, { 0, 99, "b" }, { 0, 99, NULL }, { 0, 99, NULL },
	                             { 0, 3, "e" }, { 0, 99, "e" } };
	assert_int_equal(skew_run("even", even, 6, 40, &rank, &stale), 9);
	assert_int_equal(rank, 4);
	/* the same with a clock ahead: its record is not fresher than when read */
	struct skew_rank ahead[6] = { { 0, 99, NULL }, { -600, 99, "b" }, { 600, 3, NULL }, { 0, 99, NULL },
	                              { -600, 99, "e" }, { -600, 99, "e" } };
	assert_int_equal(skew_run("ahead", ahead, 6, 40, &rank, &stale), 9);
	assert_int_equal(rank, 2);

	/* rank 3 never beats: its leftover rank file (there before the
	 * launch, never rewritten) is not this attempt's; silent from the
	 * attempt's first heartbeat (tick 1): found at tick 7 */
	struct skew_rank left[6] = { { 0, 99, NULL }, { -600, 99, "b" }, { 600, 99, NULL }, { 0, 0, NULL },
	                             { -600, 99, "e" }, { -600, 99, "e" } };
	assert_int_equal(skew_run("left", left, 6, 40, &rank, &stale), 7);
	assert_int_equal(rank, 3);
	assert_true(stale == 6);
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
		cmocka_unit_test(test_hb_clock_skew),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
