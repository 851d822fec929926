/* Unit tests of wrapper/job.c, the recovery loop's pure steps, each with
 * plain inputs: the starting values, the resume point and the rollback's
 * skip, the attempt's environment, the launch and watch settings, which
 * nodes count as down, the record of an attempt, the decision's state,
 * and the action applied to the job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "include/llmt/ckptid.h"
#include "include/llmt/exitcodes.h"
#include "wrapper/job.h"

static char *cmd[] = { "llm-train", NULL };
static struct opts opt;
static struct wr_site site;
static struct wr_history hist;
static struct wr_ledger led = { NULL, "" };   /* no file: events go nowhere */
static char *hosts[] = { "n1", "n2", "n3", "n4" };

static struct wr_job job(void)
{
	opt = (struct opts){ .ckpt_dir = "/ck", .srun = "srun", .ckpt_tool = "llm-train",
	                     .max_restarts = 5, .backoff = 2, .rollback = 10, .skip = 3,
	                     .hang_k = 5, .hang_min = 30, .hang_max = 600, .hang_startup = 900,
	                     .grace = 20, .tick = 1, .node_wait = -1, .shrink = -1,
	                     .requeue = true, .cmd = cmd };
	site = (struct wr_site){ .job = "42", .nodelist = "n[1-4]", .alloc = hosts, .nalloc = 4,
	                         .run = 1, .ntasks_job = 8, .tasks_per_node = 2, .tp = 2, .pp = 1,
	                         .dp = 4, .in_slurm = true, .comm_timeout_s = 300 };
	memset(&hist, 0, sizeof hist);
	return wr_job_start(&opt, &site, &hist, &led, "/run", "/hb", -1, 1000);
}

static void start_values(void **st)
{
	(void)st;
	struct wr_job j = job();
	assert_int_equal(j.nodes_step, 4);
	assert_int_equal(j.ntasks, 0);          /* no spares: srun's default */
	assert_int_equal(j.max_resume, -1);
	assert_int_equal(j.skip_until, -1);
	assert_false(j.need_agree);
	assert_int_equal(j.rollback_from, -1);
	assert_int_equal(j.attempt, 0);
	assert_int_equal(j.pol.max_restarts, 5);
	assert_int_equal(j.pol.window_restarts, 0);
	assert_true(j.pol.requeue);
	assert_int_equal(j.pol.ranks_per_replica, 2);
	assert_true(j.stuck_margin_s > 0);
	assert_string_equal(j.ckpt_tool, "llm-train");

	/* spares, a window, a pending requeue's settings, earlier attempts */
	opt.spares = 1;
	opt.window_s = 3600;
	hist.pending = true;
	hist.max_resume_step = 40;
	hist.skip_until_step = 45;
	hist.need_agree = true;
	hist.attempts_total = 3;
	hist.nattempts = 2;
	hist.attempts[0].step_s = 0.5;
	hist.attempts[1].step_s = 0.7;
	hist.excluded.n = 0;
	wr_nodes_add(&hist.excluded, "n9");
	j = wr_job_start(&opt, &site, &hist, &led, "/run", "/hb", -1, 1000);
	assert_int_equal(j.nodes_step, 3);
	assert_int_equal(j.ntasks, 6);
	assert_int_equal(j.pol.max_restarts, -1);
	assert_int_equal(j.pol.window_restarts, 5);
	assert_int_equal(j.max_resume, 40);
	assert_int_equal(j.skip_until, 45);
	assert_true(j.need_agree);
	assert_int_equal(j.attempt, 3);
	assert_int_equal(j.st.n, 2);
	assert_true(wr_nodes_has(&j.excluded, "n9"));

	/* outside Slurm no requeue */
	site.in_slurm = false;
	j = wr_job_start(&opt, &site, &hist, &led, "/run", "/hb", -1, 1000);
	assert_false(j.pol.requeue);
}

static void pick_resume_point(void **st)
{
	(void)st;
	struct wr_ckpt ck[3] = { { 30, "/ck/step_30", 0 }, { 20, "/ck/step_20", 0 }, { 10, "/ck/step_10", 0 } };
	struct wr_job j = job();
	wr_job_pick(&j, ck, 3);
	assert_string_equal(j.resume, "/ck/step_30");
	assert_int_equal(j.resume_step, 30);
	assert_int_equal(j.skip, 0);

	/* a rollback: at or before 25, data skipped up to step 28 */
	j.max_resume = 25;
	j.skip_until = 28;
	wr_job_pick(&j, ck, 3);
	assert_string_equal(j.resume, "/ck/step_20");
	assert_int_equal(j.skip, 8);
	assert_int_equal(j.rollback_from, 20);
	/* a later checkpoint than the rollback's: the skip is behind it */
	j.max_resume = -1;
	wr_job_pick(&j, ck, 3);
	assert_int_equal(j.resume_step, 30);
	assert_int_equal(j.skip, 0);
	/* none fits: fresh start, the whole skip */
	j.max_resume = 5;
	j.rollback_from = -1;
	wr_job_pick(&j, ck, 3);
	assert_string_equal(j.resume, "");
	assert_int_equal(j.resume_step, 0);
	assert_int_equal(j.skip, 28);
	assert_true(j.fresh_chosen);
	/* no checkpoint at all: nothing chosen */
	j = job();
	wr_job_pick(&j, ck, 0);
	assert_false(j.fresh_chosen);
	/* no checkpoint tool */
	j = job();
	wr_job_pick(&j, NULL, -1);
	assert_string_equal(j.resume, "");
	assert_int_equal(j.skip, 0);
}

/* An attempt that ended: exit code (or the first task's), last step, load phase */
static struct wr_watch_out ended(int code, long last_step, bool in_load)
{
	struct wr_watch_out wo;
	memset(&wo, 0, sizeof wo);
	wo.e.exited = true;
	wo.e.exit_code = code;
	wo.last_step = last_step;
	wo.in_load = in_load;
	return wo;
}

static int judge(struct wr_job *j, struct wr_watch_out wo, struct wr_verdict *v)
{
	char why[160];
	wr_classify(&wo.e, NULL, 0, v);
	int rule = wr_job_ckpt_bad(j, &wo, v, why, sizeof why);
	if (rule) {
		char id[64];
		llmt_ckpt_id(j->resume, id, sizeof id);
		wr_job_mark_bad(j, rule, why, id, v);
	}
	wr_job_record(j, &wo, v);
	return rule;
}

static void bad_checkpoint(void **st)
{
	(void)st;
	struct wr_ckpt ck[3] = { { 30, "/ck/step_30", 0 }, { 20, "/ck/step_20", 0 }, { 10, "/ck/step_10", 0 } };
	struct wr_verdict v;
	struct wr_job j = job();
	wr_job_pick(&j, ck, 3);
	/* llm-train's exit 89 before any step past 30: marked at once, transient */
	assert_int_equal(judge(&j, ended(LLMT_EXIT_BADCKPT, 30, false), &v), 1);
	assert_int_equal(v.cls, WR_TRANSIENT);
	assert_int_equal(j.no_progress, 0);
	assert_true(wr_history_is_bad(&hist, "/ck/step_30"));
	wr_job_pick(&j, ck, 3);
	assert_string_equal(j.resume, "/ck/step_20");
	/* 89 also through the first task's code */
	struct wr_watch_out wo = ended(137, 20, false);
	wo.e.task_exit_code = LLMT_EXIT_BADCKPT;
	assert_int_equal(judge(&j, wo, &v), 1);
	wr_job_pick(&j, ck, 3);
	assert_string_equal(j.resume, "/ck/step_10");
	/* the same checkpoint again: one mark */
	wr_history_bad_id(&hist, "/ck/step_10", true, "");
	wr_history_bad_id(&hist, "/ck/step_10", true, "");
	assert_int_equal(hist.nbad, 3);
	/* none left: stop (89), not a fresh start from random weights */
	assert_int_equal(wr_job_pick(&j, ck, 3), LLMT_EXIT_BADCKPT);
	assert_string_equal(j.resume, "");
	assert_false(j.fresh_chosen);
	/* none marked bad fits a rollback: the fresh start it always was */
	j.max_resume = 5;
	assert_int_equal(wr_job_pick(&j, ck, 3), 0);
	assert_true(j.fresh_chosen);
	j.max_resume = -1;
	/* 89 with no checkpoint chosen (the trainer found one the listing
	 * left out): nothing to mark, and a stop, never a restart that would
	 * start from random weights */
	assert_int_equal(judge(&j, ended(LLMT_EXIT_BADCKPT, 0, true), &v), 0);
	assert_int_equal(v.cls, WR_USER_ERROR);

	/* not the checkpoint's fault: progress past it, a signal, bad data (65) */
	j = job();
	wr_job_pick(&j, ck, 3);
	assert_int_equal(judge(&j, ended(LLMT_EXIT_BADCKPT, 31, false), &v), 0);
	assert_int_equal(judge(&j, ended(128 + 11, 30, true), &v), 0);
	assert_int_equal(judge(&j, ended(LLMT_EXIT_DATA, 30, true), &v), 0);
	assert_int_equal(v.cls, WR_USER_ERROR);
	assert_int_equal(hist.nbad, 0);
}

static void bad_checkpoint_foreign(void **st)
{
	(void)st;
	struct wr_ckpt ck[4] = { { 40, "/ck/s40", 0 }, { 30, "/ck/s30", 0 }, { 20, "/ck/s20", 0 }, { 10, "/ck/s10", 0 } };
	struct wr_verdict v;
	struct wr_job j = job();
	/* llm-train (its own checkpoint tool): only its 89 marks; an exit 70
	 * in its load phase (out of memory) twice is not the checkpoint's */
	wr_job_pick(&j, ck, 4);
	assert_int_equal(judge(&j, ended(LLMT_EXIT_SOFTWARE, 40, true), &v), 0);
	assert_int_equal(judge(&j, ended(LLMT_EXIT_SOFTWARE, 40, true), &v), 0);
	assert_int_equal(hist.nbad, 0);
	j = job();
	j.ckpt_tool = "/usr/bin/llm-train-ckpt-torch";
	wr_job_pick(&j, ck, 4);
	/* exit 1 in phase load: the first time a retry in place, the second marks */
	assert_int_equal(judge(&j, ended(1, 40, true), &v), 0);
	assert_int_equal(v.cls, WR_SOFTWARE);
	assert_int_equal(j.no_progress, 1);
	wr_job_pick(&j, ck, 4);
	assert_string_equal(j.resume, "/ck/s40");
	assert_int_equal(judge(&j, ended(1, 40, true), &v), 2);
	assert_int_equal(v.cls, WR_TRANSIENT);
	assert_int_equal(j.no_progress, 0);   /* so the older checkpoint gets its retry too */
	wr_job_pick(&j, ck, 4);
	assert_string_equal(j.resume, "/ck/s30");
	/* failing after the load phase (no step yet): not the checkpoint's */
	assert_int_equal(judge(&j, ended(1, 30, false), &v), 0);
	assert_int_equal(judge(&j, ended(1, 30, true), &v), 0);   /* the count restarted */
	assert_int_equal(judge(&j, ended(1, 30, true), &v), 2);
	wr_job_pick(&j, ck, 4);
	assert_string_equal(j.resume, "/ck/s20");
	/* WR_BAD_FOREIGN_MAX (2) marked by this rule: no more walking back */
	assert_int_equal(judge(&j, ended(1, 20, true), &v), 0);
	assert_int_equal(judge(&j, ended(1, 20, true), &v), 0);
	assert_int_equal(v.cls, WR_SOFTWARE);
	assert_int_equal(j.no_progress, 2);   /* wr_decide stops: two attempts without progress */
	/* llm-train's 89 is trusted beyond the cap */
	assert_int_equal(judge(&j, ended(LLMT_EXIT_BADCKPT, 20, true), &v), 1);
	assert_int_equal(hist.nbad, 3);
}

static void attempt_env(void **st)
{
	(void)st;
	struct wr_job j = job();
	struct wr_attempt_env e;
	j.skip = 7;
	j.attempt = 2;
	wr_job_env(&j, 0, 2000, &e);
	assert_string_equal(e.skip, "7");
	assert_string_equal(e.attempt, "2");
	assert_string_equal(e.interval, "");
	assert_true(e.set_resume);
	/* the job's first attempt: set with a checkpoint or a fresh start
	 * chosen, else unset (the trainer's rule for CKPT_DIR) */
	j.attempt = 0;
	wr_job_env(&j, 0, 2000, &e);
	assert_false(e.set_resume);
	j.fresh_chosen = true;
	wr_job_env(&j, 0, 2000, &e);
	assert_true(e.set_resume);
	j.fresh_chosen = false;
	snprintf(j.resume, sizeof j.resume, "/ck/step_00000010");
	wr_job_env(&j, 0, 2000, &e);
	assert_true(e.set_resume);
	j.ckpt_tool = "none";
	j.attempt = 2;
	wr_job_env(&j, 0, 2000, &e);
	assert_false(e.set_resume);
	j.resume[0] = '\0';
	/* the marks' identities for the trainer's retention: a ledger line's
	 * id that is not one (a hostile ledger) never reaches the env */
	assert_string_equal(e.ckpt_bad, "");
	wr_history_bad_id(j.h, "/ck/step_00000010", true, "1a2b:1700000000.000000001");
	wr_history_bad_id(j.h, "/ck/step_00000020", true, "x,LD_PRELOAD=/tmp/e");
	wr_history_bad_id(j.h, "/ck/step_00000030", true, "");
	wr_history_bad_id(j.h, "/ck/step_00000040", false, "ff:17.123456789");
	wr_job_env(&j, 0, 2000, &e);
	assert_string_equal(e.ckpt_bad, "1a2b:1700000000.000000001,ff:17.123456789");
	j.h->nbad = 0;

	/* auto interval: no cost measured yet leaves it; a cost gives steps
	 * when step times are known, else seconds */
	site.auto_interval = true;
	wr_job_env(&j, 0, 2000, &e);
	assert_string_equal(e.interval, "");
	assert_true(e.mtbf_s > 0);
	wr_job_env(&j, 10, 2000, &e);
	assert_true(e.interval[strlen(e.interval) - 1] == 's');
	wr_steptimes_add(&j.st, 1.0);
	wr_job_env(&j, 10, 2000, &e);
	assert_true(strlen(e.interval) > 0 && e.interval[strlen(e.interval) - 1] != 's');
	assert_string_equal(j.interval, e.interval);
}

static void launch_and_watch(void **st)
{
	(void)st;
	struct wr_job j = job();
	struct wr_launch lc;
	wr_job_launch_cfg(&j, &lc);
	assert_int_equal(lc.nodes, 0);
	assert_int_equal(lc.ntasks, 0);
	assert_false(lc.direct);
	assert_true(lc.overlap);
	assert_int_equal(wr_job_nranks(&j, &lc, 1), 8);   /* the job's tasks */
	wr_nodes_add(&j.excluded, "n2");
	j.nodes_step = 3;
	wr_job_launch_cfg(&j, &lc);
	assert_int_equal(lc.nodes, 3);
	assert_int_equal(lc.ntasks, 6);
	assert_int_equal(wr_job_nranks(&j, &lc, 1), 6);
	site.in_slurm = false;
	j = job();
	site.in_slurm = false;
	wr_job_launch_cfg(&j, &lc);
	assert_true(lc.direct);
	assert_int_equal(wr_job_nranks(&j, &lc, 3), 3);   /* WORLD_SIZE */
	assert_int_equal(wr_job_nranks(&j, &lc, 0), 1);

	struct wr_watch_cfg wc;
	j.attempt = 4;
	j.resume_step = 30;
	wr_job_watch_cfg(&j, 6, &wc);
	assert_string_equal(wc.hb_dir, "/hb");
	assert_int_equal(wc.nranks, 6);
	assert_int_equal(wc.attempt, 4);
	assert_int_equal(wc.resume_step, 30);
	assert_true(wc.hang.pause_cap_s == 6000);
	assert_true(wc.preempt_grace_s == 20);
	assert_true(wc.ledger == &led);
}

static void down_nodes(void **st)
{
	(void)st;
	struct wr_job j = job();
	struct wr_ending e = { .exited = true };
	assert_false(wr_job_wants_node_states(&j, &e, 0));
	assert_true(wr_job_wants_node_states(&j, &e, 75));
	e.hung = true;
	assert_true(wr_job_wants_node_states(&j, &e, 0));
	assert_false(wr_job_must_wait_nodes(&j, &e));
	e.kill_timeout = true;
	assert_true(wr_job_must_wait_nodes(&j, &e));
	snprintf(e.hung_node, sizeof e.hung_node, "n3");
	assert_false(wr_job_must_wait_nodes(&j, &e));   /* a heartbeat named it */
	e.hung_node[0] = '\0';

	struct wr_nodes bad = { 0 };
	wr_nodes_add(&bad, "n2");
	wr_nodes_add(&bad, "n4");
	wr_nodes_add(&j.excluded, "n4");
	wr_job_add_down(&j, &bad, &e);
	wr_job_add_down(&j, &bad, &e);                  /* no duplicates */
	assert_int_equal(e.down_nodes.n, 1);
	assert_string_equal(e.down_nodes.name[0], "n2");
	assert_false(wr_job_must_wait_nodes(&j, &e));   /* Slurm named one */
	site.in_slurm = false;
	assert_false(wr_job_wants_node_states(&j, &e, 75));
}

static void record_attempt(void **st)
{
	(void)st;
	struct wr_job j = job();
	struct wr_watch_out wo = { .t_launch = 1, .t_end = 9, .last_step = 30, .step_s = 0.5 };
	struct wr_verdict v = { .cls = WR_NUMERIC, .node = "n1" };
	j.resume_step = 20;
	j.no_progress = 2;
	wr_job_record(&j, &wo, &v);
	assert_int_equal(j.no_progress, 0);             /* steps 21..30 were progress */
	assert_int_equal(j.numeric_repeats, 1);
	assert_int_equal(hist.nattempts, 1);
	assert_int_equal(hist.attempts[0].last_step, 30);
	assert_int_equal(hist.npast, 1);
	assert_string_equal(hist.past[0].node, "n1");
	assert_int_equal(hist.failures, 1);
	j.resume_step = 30;
	wr_job_record(&j, &wo, &v);
	assert_int_equal(j.no_progress, 1);
	assert_int_equal(j.numeric_repeats, 2);
	v.cls = WR_PREEMPTED;
	wr_job_record(&j, &wo, &v);
	assert_int_equal(j.numeric_repeats, 0);
	assert_int_equal(hist.npast, 3);
	assert_int_equal(hist.failures, 2);             /* a preemption is no failure */
	v.cls = WR_DONE;
	wr_job_record(&j, &wo, &v);
	assert_int_equal(hist.npast, 3);
	assert_int_equal(hist.nattempts, 4);
}

static void decision_state(void **st)
{
	(void)st;
	struct wr_job j = job();
	struct wr_watch_out wo = { .last_step = 30 };
	struct wr_verdict v = { .cls = WR_TRANSIENT };
	struct wr_state s;
	wr_nodes_add(&j.excluded, "n3");
	wr_nodes_add(&j.excluded, "x9");
	hist.restarts = 2;
	wr_job_state(&j, &v, &wo, 75, -1, 5000, &s);
	assert_int_equal(s.fail_step, 30);
	assert_int_equal(s.exit_code, 75);
	assert_int_equal(s.restarts, 2);
	assert_int_equal(s.nodes_alloc, 4);
	assert_int_equal(s.excluded_in_alloc, 1);
	assert_true(s.now == 5000);
	v.cls = WR_NUMERIC;
	wr_job_state(&j, &v, &wo, 65, -1, 5000, &s);
	assert_int_equal(s.fail_step, 31);              /* the step being computed */
	v.cls = WR_SDC;
	wr_job_state(&j, &v, &wo, 86, 24, 5000, &s);
	assert_int_equal(s.fail_step, 24);              /* sdc.json's step */
	site.nalloc = 0;
	wr_job_state(&j, &v, &wo, 86, -1, 5000, &s);
	assert_int_equal(s.fail_step, 30);
	assert_int_equal(s.nodes_step, 1);
}

static void apply_action(void **st)
{
	(void)st;
	struct wr_job j = job();
	struct wr_verdict v = { .cls = WR_NODE_FAULT };
	struct wr_action a = { .act = ACT_RESTART, .counts = true, .nodes = 3, .ntasks = 6,
	                       .max_resume_step = -1, .skip_until_step = -1 };
	wr_nodes_add(&a.exclude, "n2");
	assert_int_equal(wr_job_apply(&j, &v, &a, 77), WR_NEXT_RESTART);
	assert_int_equal(j.attempt, 1);
	assert_int_equal(hist.restarts, 1);
	assert_true(hist.restart_times[0] == 77);
	assert_int_equal(j.nodes_step, 3);
	assert_int_equal(j.ntasks, 6);
	assert_true(wr_nodes_has(&j.excluded, "n2"));
	assert_int_equal(j.max_resume, -1);             /* newest checkpoint still */

	/* a numerical fault: roll back, skip, look again at the rollback */
	v.cls = WR_NUMERIC;
	a.max_resume_step = 20;
	a.skip_until_step = 25;
	a.need_agree = true;
	j.rollback_from = 20;
	assert_int_equal(wr_job_apply(&j, &v, &a, 78), WR_NEXT_RESTART);
	assert_int_equal(j.max_resume, 20);
	assert_int_equal(j.skip_until, 25);
	assert_int_equal(j.rollback_from, -1);
	assert_true(j.need_agree);

	a.act = ACT_REQUEUE;
	a.counts = false;
	assert_int_equal(wr_job_apply(&j, &v, &a, 79), WR_NEXT_REQUEUE);
	assert_int_equal(hist.restarts, 2);
	a.act = ACT_STOP;
	a.exit_code = 65;
	assert_int_equal(wr_job_apply(&j, &v, &a, 80), WR_NEXT_STOP);
	assert_int_equal(j.exit_code, 65);
	assert_int_equal(j.attempt, 4);

	assert_int_equal(wr_job_requeue_failed_code(0), LLMT_EXIT_SOFTWARE);
	assert_int_equal(wr_job_requeue_failed_code(75), 75);
	assert_int_equal(wr_job_requeue_failed_code(137), LLMT_EXIT_SOFTWARE);
}

/* Elastic shrink: the trainer's --grad-accum read from its command, dp
 * derived when the plugin's is auto, the shrink's dp applied and handed to
 * the next attempt as LLM_TRAIN_DP and LLM_TRAIN_BATCH_DP. */
static void shrink_layout(void **st)
{
	(void)st;
	char *c1[] = { "llm-train", "--micro-batch", "2", "--grad-accum", "3", NULL };
	char *c2[] = { "llm-train", "--grad-accum=5", NULL };
	char *c3[] = { "sh", "-c", "--grad-accum", NULL };
	char *c4[] = { "t", "--", "--grad-accum", "4", NULL };
	assert_int_equal(wr_cmd_opt(c1, "--grad-accum", 1), 3);
	assert_int_equal(wr_cmd_opt(c2, "--grad-accum", 1), 5);
	assert_int_equal(wr_cmd_opt(c3, "--grad-accum", 1), 1);
	assert_int_equal(wr_cmd_opt(c4, "--grad-accum", 1), 1);
	assert_int_equal(wr_cmd_opt(cmd, "--grad-accum", 1), 1);
	char *c5[] = { "llm-train", "--steps", "200", "--steps-x", "3", NULL };
	assert_int_equal(wr_cmd_opt(c5, "--steps", 0), 200);
	assert_int_equal(wr_cmd_opt(c4, "--steps", 0), 0);

	struct wr_job j = job();
	assert_int_equal(j.pol.dp, 4);
	site.dp = 0;                              /* dp=auto: 4 nodes x 2 / tp 2 */
	j = wr_job_start(&opt, &site, &hist, &led, "/run", "/hb", -1, 1000);
	assert_int_equal(j.pol.dp, 4);
	assert_int_equal(j.pol.accum, 1);
	opt.cmd = c1;
	j = wr_job_start(&opt, &site, &hist, &led, "/run", "/hb", -1, 1000);
	assert_int_equal(j.pol.accum, 3);

	struct wr_attempt_env e;
	wr_job_env(&j, 0, 1000, &e);
	assert_string_equal(e.dp, "");            /* full layout: nothing set */
	struct wr_verdict v = { .cls = WR_NODE_FAULT };
	struct wr_action a = { .act = ACT_RESTART, .nodes = 3, .ntasks = 6, .dp = 3, .accum = 4,
	                       .max_resume_step = -1 };
	wr_nodes_add(&a.exclude, "n4");
	assert_int_equal(wr_job_apply(&j, &v, &a, 1000), WR_NEXT_RESTART);
	assert_int_equal(j.dp_now, 3);
	assert_int_equal(j.nodes_step, 3);
	assert_int_equal(j.ntasks, 6);
	wr_job_env(&j, 0, 1000, &e);
	assert_string_equal(e.dp, "3");
	assert_string_equal(e.batch_dp, "4");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(start_values), cmocka_unit_test(pick_resume_point),
		cmocka_unit_test(attempt_env), cmocka_unit_test(launch_and_watch),
		cmocka_unit_test(down_nodes), cmocka_unit_test(record_attempt),
		cmocka_unit_test(decision_state), cmocka_unit_test(apply_action),
		cmocka_unit_test(shrink_layout), cmocka_unit_test(bad_checkpoint),
		cmocka_unit_test(bad_checkpoint_foreign),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
