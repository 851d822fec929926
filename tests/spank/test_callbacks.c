#define _GNU_SOURCE
/* test_callbacks.c: the slurm_spank_* callbacks of llm_train.so in the
 * allocator and local contexts against the fake spank_* of fake_spank.c:
 * option registration, options and policy errors, explain mode,
 * idempotency. Remote: test_cb_remote.c; job script: test_cb_script.c. */
#include "cb_harness.h"

static void test_init_registers_options_everywhere(void **state)
{
	(void)state;
	spank_context_t ctxs[] = { S_CTX_ALLOCATOR, S_CTX_LOCAL, S_CTX_REMOTE, S_CTX_JOB_SCRIPT };
	for (unsigned i = 0; i < 4; i++) {
		start(ctxs[i]);
		assert_int_equal(fake.nopts, LLMT_NOPTS);
		assert_string_equal(fake.opts[0].name, "llm-train");
		assert_int_equal(fake.opts[0].has_arg, 2);
		assert_string_equal(fake.opts[LLMT_OPT_EXPLAIN].name, "llm-explain");
	}
	/* slurmd itself: nothing registered, nothing fails */
	fake_reset(S_CTX_SLURMD);
	assert_int_equal(slurm_spank_init(FAKE_SP, 0, NULL), 0);
	assert_int_equal(fake.nopts, 0);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, 0, NULL), 0);
	assert_int_equal(slurm_spank_exit(FAKE_SP, 0, NULL), 0);
}

/* A typo in the plugstack arguments: init failed (-1) in every context,
 * so with "required" every job of every user failed, and a batch job's
 * slurmstepd drained its node ("batch job complete failure", seen on the
 * emulated cluster with a plain `sbatch --wrap 'echo hi'`). Now init
 * succeeds with one line naming the argument, jobs without --llm-*
 * options run, and training jobs are refused with that line (srun and
 * sbatch at submit; slurmstepd in task_init, which drains nothing). */
static void bad_arg_init(spank_context_t ctx, const char *arg, const char *must)
{
	char *av[] = { (char *)arg };
	llmt_remote_exit(NULL, 0, NULL);
	llmt_raw_reset();
	fake_reset(ctx);
	assert_int_equal(slurm_spank_init(FAKE_SP, 1, av), 0);
	assert_int_equal(fake.nopts, LLMT_NOPTS);
	if (!fake_log_has(must)) {
		fake_log_dump();
		fail_msg("no line naming '%s'", must);
	}
}

static void test_bad_plugstack_arg(void **state)
{
	(void)state;
	char *av[] = { (char *)"polcy=/x" };
	const char *must = "llm_train: unknown plugstack argument 'polcy=/x'";
	spank_context_t ctxs[] = { S_CTX_ALLOCATOR, S_CTX_LOCAL, S_CTX_REMOTE };
	for (int i = 0; i < 3; i++)
		bad_arg_init(ctxs[i], av[0], must);
	bad_arg_init(S_CTX_ALLOCATOR, "policy=relative.yaml", "need an absolute path");
	/* no --llm-* option: nothing refused */
	bad_arg_init(S_CTX_ALLOCATOR, av[0], must);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, 1, av), 0);
	/* a training job: refused at submit, naming the argument */
	bad_arg_init(S_CTX_ALLOCATOR, av[0], must);
	fake_log_clear();
	assert_int_equal(fake_give_option("llm-train", "tp=1"), 0);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, 1, av), -1);
	assert_true(fake_log_has("polcy=/x"));
	/* and in slurmstepd: user_init passes, the task is refused */
	bad_arg_init(S_CTX_REMOTE, av[0], must);
	fake.item.nnodes = 1;
	fake.item.local_tasks = 1;
	fake.item.total_tasks = 1;
	fake_env_set("SLURM_STEP_NODELIST", "n1");
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", "1");
	fake_give_option("llm-train", "tp=1");
	assert_int_equal(slurm_spank_user_init(FAKE_SP, 1, av), 0);
	fake.item.in_task = 1;
	fake_log_clear();
	assert_int_equal(slurm_spank_task_init(FAKE_SP, 1, av), -1);
	assert_true(fake_log_has("task refused") && fake_log_has("polcy=/x"));
}

static void test_allocator_no_options_is_noop(void **state)
{
	(void)state;
	start(S_CTX_ALLOCATOR);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
	assert_null(fake_ctl_get("LLM_TRAIN"));
	assert_int_equal(fake.nlog, 0);
}

static void test_allocator_good_options_twice(void **state)
{
	(void)state;
	start(S_CTX_ALLOCATOR);
	assert_int_equal(fake_give_option("llm-train", "tp=1,pp=1,ckpt-dir=/tmp/run1"), 0);
	assert_int_equal(fake_give_option("llm-restarts", "3"), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
		assert_non_null(fake_ctl_get("LLM_TRAIN"));
		assert_string_equal(fake_ctl_get("LLM_TRAIN"), "1");
	}
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
}

static void expect_refused(spank_context_t ctx, const char *opt, const char *val, const char *needle)
{
	start(ctx);
	assert_int_equal(fake_give_option(opt, val), 0);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
	if (!fake_log_has(needle) || !fake_log_has("llm_train: ")) {
		fake_log_dump();
		fail_msg("expected a message with '%s'", needle);
	}
	assert_null(fake_ctl_get("LLM_TRAIN"));
}

static void test_bad_options_refused(void **state)
{
	(void)state;
	spank_context_t ctxs[] = { S_CTX_ALLOCATOR, S_CTX_LOCAL };
	for (int i = 0; i < 2; i++) {
		expect_refused(ctxs[i], "llm-tp", "abc", "abc");
		expect_refused(ctxs[i], "llm-tp", "99999999999999999999", "99999999999999999999");
		expect_refused(ctxs[i], "llm-train", "tp=2,bogus=1", "bogus");
		expect_refused(ctxs[i], "llm-restarts", "50", "50");
		expect_refused(ctxs[i], "llm-nccl-profile", "nosuch", "nosuch");
		expect_refused(ctxs[i], "llm-ckpt-dir", "/etc/llm", "/etc/llm");
		expect_refused(ctxs[i], "llm-ckpt-interval", "10x", "10x");
	}
}

/* Issue 14 items 5 and 6 (fail on the old code, which logged the
 * newline through slurm_error, i.e. a forged line in slurmd's log, and
 * accepted tp=1,tp=2): refused with one clean line naming the key. */
static void test_control_chars_and_duplicates_refused(void **state)
{
	(void)state;
	const struct { const char *opt, *val, *must; } c[] = {
		{ "llm-train", "tp=1\nerror: llm_train: prolog on node1: draining: Xid 79", "tp holds a control character" },
		{ "llm-nccl-profile", "ib\rforged", "nccl-profile holds a control character" },
		{ "llm-train", "tp=1,tp=2", "key 'tp' given twice" },
	};
	for (int i = 0; i < 3; i++) {
		start(S_CTX_ALLOCATOR);
		fake_give_option(c[i].opt, c[i].val);
		assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
		assert_int_equal(fake.nlog, 1);
		if (!fake_log_has(c[i].must)) {
			fake_log_dump();
			fail_msg("no refusal naming '%s'", c[i].must);
		}
		for (const char *p = fake.log[0]; *p; p++)
			assert_true((unsigned char)*p >= 0x20);
		assert_null(strstr(fake.log[0], "forged"));
	}
}

static void test_overlong_option_refused(void **state)
{
	(void)state;
	char *big = malloc(LLMT_SPEC_MAX + 100);
	assert_non_null(big);
	memset(big, 'a', LLMT_SPEC_MAX + 99);
	big[LLMT_SPEC_MAX + 99] = '\0';
	start(S_CTX_ALLOCATOR);
	assert_int_equal(fake_give_option("llm-train", big), 0);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("longer than"));
	free(big);
}

static void test_broken_policy(void **state)
{
	(void)state;
	write_file(policy_path, "defaults:\n  tp: [1\n", 0644);
	start(S_CTX_ALLOCATOR);
	fake_give_option("llm-train", NULL);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
	if (!fake_log_has("llm-train.yaml:")) {
		fake_log_dump();
		fail_msg("no file:line in the message");
	}

	/* Remote: user_init postpones, task_init refuses (never crashes). */
	start(S_CTX_REMOTE);
	fake.item.step_id = 3;
	fake.item.nnodes = 1;
	fake.item.total_tasks = 1;
	fake_env_set("SLURM_STEP_NODELIST", "n1");
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", "1");
	fake_give_option("llm-train", NULL);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("llm-train.yaml:"));
	assert_null(fake_env_get("RANK"));
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);

	/* A policy others can write is refused too. */
	write_file(policy_path, good_policy, 0666);
	start(S_CTX_ALLOCATOR);
	fake_give_option("llm-train", NULL);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("llm_train: "));
	write_file(policy_path, good_policy, 0644);

	/* A symlinked policy is refused, not followed. */
	char link[600];
	snprintf(link, sizeof(link), "%s/link.yaml", tmpdir);
	assert_int_equal(symlink(policy_path, link), 0);
	llmt_raw_reset();
	fake_reset(S_CTX_ALLOCATOR);
	char pol[700];
	snprintf(pol, sizeof(pol), "policy=%s", link);
	char *av[] = { pol };
	assert_int_equal(slurm_spank_init(FAKE_SP, 1, av), 0);
	fake_give_option("llm-train", NULL);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, 1, av), -1);
	assert_true(fake_log_has("symbolic link"));
}

static void test_missing_policy_uses_defaults(void **state)
{
	(void)state;
	llmt_raw_reset();
	fake_reset(S_CTX_ALLOCATOR);
	char *av[] = { (char *)"policy=/nonexistent/llm-train.yaml" };
	assert_int_equal(slurm_spank_init(FAKE_SP, 1, av), 0);
	fake_give_option("llm-tp", "1");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, 1, av), 0);
	/* said, not silent: a mistyped policy= path drops every limit (srun
	 * and sbatch at verbose level, slurmd's log at info) */
	assert_true(fake_log_has("verbose: llm_train: policy /nonexistent/llm-train.yaml not found: "
				 "built-in defaults"));
}

static void test_allocator_explain(void **state)
{
	(void)state;
	start(S_CTX_ALLOCATOR);
	fake_give_option("llm-train", "tp=1,ckpt-dir=/tmp/x");
	fake_give_option("llm-explain", NULL);
	fflush(stdout);
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("explain mode: job not submitted"));
	assert_null(fake_ctl_get("LLM_TRAIN"));
}

static void test_local_user_init_checks_task_count(void **state)
{
	(void)state;
	start(S_CTX_LOCAL);
	fake_give_option("llm-train", "tp=1,pp=2,dp=2");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
	fake.item.total_tasks = 4;
	fake.item.nnodes = 2;
	assert_int_equal(slurm_spank_local_user_init(FAKE_SP, AC, AV), 0);
	assert_int_equal(slurm_spank_local_user_init(FAKE_SP, AC, AV), 0);
	assert_null(getenv("SLURM_SPANK_LLM_TRAIN_REFUSED"));
	/* refused: one line, and the step marked for the nodes instead of a
	 * failed callback (that leaves Slurm 22.05's step allocated) */
	fake.item.total_tasks = 6;
	assert_int_equal(slurm_spank_local_user_init(FAKE_SP, AC, AV), 0);
	assert_true(fake_log_has("llm_train: "));
	assert_string_equal(getenv("SLURM_SPANK_LLM_TRAIN_REFUSED"), "1234.0");
	/* a good step never passes a mark on (one inherited included) */
	fake.item.total_tasks = 4;
	assert_int_equal(slurm_spank_local_user_init(FAKE_SP, AC, AV), 0);
	assert_null(getenv("SLURM_SPANK_LLM_TRAIN_REFUSED"));
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
}

static void test_local_explain_prints_map(void **state)
{
	(void)state;
	setenv("SLURM_JOB_NODELIST", "n[1-2]", 1);
	setenv("SLURM_JOB_NUM_NODES", "2", 1);
	start(S_CTX_LOCAL);
	fake_give_option("llm-train", "tp=2,explain");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
	fake.item.total_tasks = 4;
	fake.item.nnodes = 2;
	char out[600];
	snprintf(out, sizeof(out), "%s/explain.out", tmpdir);
	fflush(stdout);
	int saved = dup(1);
	FILE *f = freopen(out, "w", stdout);
	assert_non_null(f);
	int rc = slurm_spank_local_user_init(FAKE_SP, AC, AV);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	assert_int_equal(rc, 0);
	assert_true(fake_log_has("explain mode: step not launched"));
	assert_string_equal(getenv("SLURM_SPANK_LLM_TRAIN_REFUSED"), "1234.0");
	unsetenv("SLURM_SPANK_LLM_TRAIN_REFUSED");
	char buf[16384];
	FILE *r = fopen(out, "r");
	assert_non_null(r);
	size_t n = fread(buf, 1, sizeof(buf) - 1, r);
	fclose(r);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "environment of task 3"));
	assert_non_null(strstr(buf, "RANK="));
	assert_non_null(strstr(buf, "LLM_TRAIN_TP=2"));
	unsetenv("SLURM_JOB_NODELIST");
	unsetenv("SLURM_JOB_NUM_NODES");
}

/* Runs one slurmstepd of a step: node nodeid of nodes, tasks ids
 * first..first+ntasks-1; returns each task's env value of names in vals. */

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_registers_options_everywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_plugstack_arg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allocator_no_options_is_noop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allocator_good_options_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_options_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_chars_and_duplicates_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlong_option_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_policy_uses_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allocator_explain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_user_init_checks_task_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_explain_prints_map, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
