#define _GNU_SOURCE
/* test_callbacks.c: every slurm_spank_* callback of llm_train.so in every
 * context (allocator, local, remote, job script, slurmd) against the fake
 * spank_* of fake_spank.c: options, policy errors, explain mode,
 * idempotency, per-task environment, batch-step leaks, prolog health. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fake_spank.h"
#include <slurm/slurm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The harness includes the plugin's entry file: the callbacks run exactly
 * as Slurm calls them, the context files come from libllmtglue. */
#include "spank/llm_train.c"
#include "health_io.h"

static char tmpdir[256];
static char policy_path[512];
static char *av_buf[8];
static int ac_n;

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void set_args(const char *a0, const char *a1, const char *a2, const char *a3)
{
	for (int i = 0; i < 8; i++) {
		free(av_buf[i]);
		av_buf[i] = NULL;
	}
	ac_n = 0;
	const char *a[] = { a0, a1, a2, a3 };
	for (int i = 0; i < 4; i++)
		if (a[i])
			av_buf[ac_n++] = strdup(a[i]);
}

#define AC ac_n
#define AV av_buf

static const char *good_policy =
	"defaults:\n"
	"  tp: 1\n"
	"  pp: 1\n"
	"  dp: auto\n"
	"  ckpt_interval: 100\n"
	"  restarts: 2\n"
	"limits:\n"
	"  max_restarts: 5\n"
	"  ckpt_roots: [/tmp]\n"
	"node_types:\n"
	"  - name: cpu\n"
	"    nodes: n[1-4]\n"
	"    gpus_per_node: 0\n"
	"  - name: gpu\n"
	"    nodes: g[1-2]\n"
	"    gpus_per_node: 4\n"
	"    nics: [mlx5_0, mlx5_1]\n"
	"topology:\n"
	"  source: none\n"
	"nccl_profiles:\n"
	"  ib:\n"
	"    NCCL_IB_HCA: \"${nic}\"\n"
	"    NCCL_SOCKET_IFNAME: lo\n"
	"health:\n"
	"  xid_scan: {timeout: 5}\n"
	"  gpu_count: {timeout: 5}\n";

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/llmt-cb-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(policy_path, sizeof(policy_path), "%s/llm-train.yaml", tmpdir);
	write_file(policy_path, good_policy, 0644);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fake_free();
	set_args(NULL, NULL, NULL, NULL);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Start a context the way Slurm does: init with the plugstack args. */
static void start(spank_context_t ctx)
{
	char pol[600];
	snprintf(pol, sizeof(pol), "policy=%s", policy_path);
	set_args(pol, NULL, NULL, NULL);
	llmt_remote_exit(NULL, 0, NULL);   /* each slurmstepd is a new process */
	llmt_raw_reset();
	fake_reset(ctx);
	assert_int_equal(slurm_spank_init(FAKE_SP, AC, AV), 0);
}

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

static void test_bad_plugstack_arg(void **state)
{
	(void)state;
	llmt_raw_reset();
	fake_reset(S_CTX_ALLOCATOR);
	char *av[] = { (char *)"polcy=/x" };
	assert_int_equal(slurm_spank_init(FAKE_SP, 1, av), -1);
	assert_true(fake_log_has("llm_train: unknown plugstack argument 'polcy=/x'"));
	fake_reset(S_CTX_ALLOCATOR);
	char *av2[] = { (char *)"policy=relative.yaml" };
	assert_int_equal(slurm_spank_init(FAKE_SP, 1, av2), -1);
	assert_true(fake_log_has("need an absolute path"));
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
	fake.item.total_tasks = 6;
	assert_int_equal(slurm_spank_local_user_init(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("llm_train: "));
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
	assert_int_equal(rc, -1);
	assert_true(fake_log_has("explain mode: step not launched"));
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
struct task_env {
	char rank[16], world[16], local[16], lws[16], addr[64], port[16], tp[16], tpr[16], dpr[16];
	char ckpt[256];
};

static void copy(char *dst, size_t n, const char *v)
{
	snprintf(dst, n, "%s", v ? v : "");
}

static const char *run_stepd_addrs;   /* NodeAddrs the fake slurmctld gives */

static void run_stepd(const char *spec, const char *nodelist, const char *tpn, uint32_t nnodes,
		      uint32_t nodeid, uint32_t first, uint32_t ntasks, uint32_t total,
		      struct task_env *out, int leak)
{
	start(S_CTX_REMOTE);
	if (run_stepd_addrs)
		snprintf(fake.node_addrs, sizeof(fake.node_addrs), "%s", run_stepd_addrs);
	fake.item.step_id = 2;
	fake.item.nnodes = nnodes;
	fake.item.node_id = nodeid;
	fake.item.local_tasks = ntasks;
	fake.item.total_tasks = total;
	fake_env_set("SLURM_STEP_NODELIST", nodelist);
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", tpn);
	fake_env_set("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train", spec);
	if (leak) {   /* what a batch step or the user's shell left behind */
		fake_env_set("RANK", "99");
		fake_env_set("LLM_TRAIN_TP_RANK", "7");
		fake_env_set("LLM_TRAIN_NIC", "bogus0");
		fake_env_set("MASTER_ADDR", "elsewhere");
	}
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
	/* Slurm calls remote callbacks more than once: same result. */
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	for (uint32_t k = 0; k < ntasks; k++) {
		fake.item.in_task = 1;
		fake.item.task_id = (int)k;
		fake.item.task_global_id = first + k;
		for (int rep = 0; rep < 2; rep++) {
			int rc = slurm_spank_task_init(FAKE_SP, AC, AV);
			if (rc != 0)
				fake_log_dump();
			assert_int_equal(rc, 0);
		}
		struct task_env *e = &out[first + k];
		copy(e->rank, sizeof(e->rank), fake_env_get("RANK"));
		copy(e->world, sizeof(e->world), fake_env_get("WORLD_SIZE"));
		copy(e->local, sizeof(e->local), fake_env_get("LOCAL_RANK"));
		copy(e->lws, sizeof(e->lws), fake_env_get("LOCAL_WORLD_SIZE"));
		copy(e->addr, sizeof(e->addr), fake_env_get("MASTER_ADDR"));
		copy(e->port, sizeof(e->port), fake_env_get("MASTER_PORT"));
		copy(e->tp, sizeof(e->tp), fake_env_get("LLM_TRAIN_TP"));
		copy(e->tpr, sizeof(e->tpr), fake_env_get("LLM_TRAIN_TP_RANK"));
		copy(e->dpr, sizeof(e->dpr), fake_env_get("LLM_TRAIN_DP_RANK"));
		copy(e->ckpt, sizeof(e->ckpt), fake_env_get("LLM_TRAIN_CKPT_DIR"));
		if (leak)
			assert_null(fake_env_get("LLM_TRAIN_NIC") && strcmp(fake_env_get("LLM_TRAIN_NIC"), "bogus0") == 0
				    ? "leaked" : NULL);
	}
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
}

static void check_step(struct task_env *e, unsigned total, unsigned per_node, unsigned tp)
{
	int seen[64] = { 0 };
	for (unsigned t = 0; t < total; t++) {
		int r = atoi(e[t].rank);
		assert_true(e[t].rank[0] != '\0');
		assert_true(r >= 0 && r < (int)total);
		assert_int_equal(seen[r], 0);
		seen[r] = 1;
		assert_int_equal(atoi(e[t].world), (int)total);
		assert_int_equal(atoi(e[t].local), (int)(t % per_node));
		assert_int_equal(atoi(e[t].lws), (int)per_node);
		assert_string_equal(e[t].addr, e[0].addr);
		assert_string_equal(e[t].port, e[0].port);
		assert_true(atoi(e[t].port) >= 20000 && atoi(e[t].port) <= 29999);
		assert_int_equal(atoi(e[t].tp), (int)tp);
		assert_int_equal(atoi(e[t].tpr), r % (int)tp);
		assert_string_not_equal(e[t].addr, "elsewhere");
	}
}

static void test_remote_every_task_env(void **state)
{
	(void)state;
	struct task_env e[8];
	memset(e, 0, sizeof(e));
	for (uint32_t node = 0; node < 2; node++)
		run_stepd("tp=2,ckpt-dir=/tmp/run9", "n[1-2]", "2(x2)", 2, node, node * 2, 2, 4, e, 0);
	check_step(e, 4, 2, 2);
	assert_string_equal(e[0].ckpt, "/tmp/run9");
}

/* Issue 14 item 7 (fails on the old code, whose MASTER_ADDR was always
 * the node name, which need not resolve): the rank-0 node's NodeAddr
 * where Slurm has one that differs from the name; the name where it does
 * not. run_stepd starts each node afresh, so the address is set there. */
static void test_remote_master_addr_is_node_addr(void **state)
{
	(void)state;
	struct task_env e[8];
	memset(e, 0, sizeof(e));
	for (uint32_t node = 0; node < 2; node++) {
		run_stepd_addrs = "n1=127.0.0.1,n2=10.1.2.3";
		run_stepd("tp=1", "n[1-2]", "2(x2)", 2, node, node * 2, 2, 4, e, 0);
	}
	check_step(e, 4, 2, 1);
	assert_string_equal(e[0].addr, "127.0.0.1");
	assert_true(fake.node_queries >= 1);
	/* NodeAddr = name (a site whose names resolve): the name */
	memset(e, 0, sizeof(e));
	for (uint32_t node = 0; node < 2; node++) {
		run_stepd_addrs = "";
		run_stepd("tp=1", "n[1-2]", "2(x2)", 2, node, node * 2, 2, 4, e, 0);
	}
	assert_string_equal(e[0].addr, "n1");
	run_stepd_addrs = NULL;
}

static void test_remote_overwrites_batch_env(void **state)
{
	(void)state;
	struct task_env e[8];
	memset(e, 0, sizeof(e));
	for (uint32_t node = 0; node < 4; node++)
		run_stepd("tp=1,dp=auto", "n[1-4]", "2(x4)", 4, node, node * 2, 2, 8, e, 1);
	check_step(e, 8, 2, 1);
}

/* GPU nodes: local GPU, CUDA_VISIBLE_DEVICES, the GPU's NIC and the NCCL
 * profile substituted per rank. */
static void test_remote_gpu_node_env(void **state)
{
	(void)state;
	start(S_CTX_REMOTE);
	fake.item.step_id = 5;
	fake.item.nnodes = 2;
	fake.item.node_id = 1;
	fake.item.local_tasks = 4;
	fake.item.total_tasks = 8;
	fake_env_set("SLURM_STEP_NODELIST", "g[1-2]");
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", "4(x2)");
	fake_give_option("llm-train", "tp=4,nccl=ib");
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	for (int k = 0; k < 4; k++) {
		fake.item.task_id = k;
		fake.item.task_global_id = 4 + (uint32_t)k;
		if (slurm_spank_task_init(FAKE_SP, AC, AV) != 0) {
			fake_log_dump();
			fail_msg("task_init on a GPU node");
		}
		char want[16];
		snprintf(want, sizeof(want), "%d", k);
		assert_string_equal(fake_env_get("LLM_TRAIN_GPU"), want);
		assert_string_equal(fake_env_get("LOCAL_RANK"), want);
		assert_string_equal(fake_env_get("CUDA_VISIBLE_DEVICES"), "0,1,2,3");
		const char *nic = k < 2 ? "mlx5_0" : "mlx5_1";   /* 2 NICs shared by 4 GPUs */
		assert_string_equal(fake_env_get("LLM_TRAIN_NIC"), nic);
		assert_string_equal(fake_env_get("NCCL_IB_HCA"), nic);
		assert_string_equal(fake_env_get("NCCL_SOCKET_IFNAME"), "lo");
		assert_string_equal(fake_env_get("LLM_TRAIN_NCCL_PROFILE"), "ib");
		assert_int_equal(atoi(fake_env_get("LLM_TRAIN_TP_RANK")), atoi(fake_env_get("RANK")) % 4);
	}
	/* 5 tasks on a 4-GPU node: refused before anything starts */
	start(S_CTX_REMOTE);
	fake.item.step_id = 6;
	fake.item.nnodes = 1;
	fake.item.local_tasks = 5;
	fake.item.total_tasks = 5;
	fake_env_set("SLURM_STEP_NODELIST", "g1");
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", "5");
	fake_give_option("llm-train", NULL);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("task refused"));
}

static void test_remote_batch_step_settings_only(void **state)
{
	(void)state;
	start(S_CTX_REMOTE);
	fake.item.step_id = SLURM_BATCH_SCRIPT;
	fake_env_set("RANK", "5");
	fake_env_set("LOCAL_RANK", "1");
	fake_env_set("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train", "tp=4,ckpt-dir=/tmp/b");
	fake_env_set("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_restarts", "4");
	for (int i = 0; i < 2; i++) {
		assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
		fake.item.in_task = 1;
		assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), 0);
		fake.item.in_task = 0;
	}
	assert_null(fake_env_get("RANK"));
	assert_null(fake_env_get("LOCAL_RANK"));
	assert_null(fake_env_get("MASTER_PORT"));
	assert_non_null(fake_env_get("LLM_TRAIN"));
	assert_string_equal(fake_env_get("LLM_TRAIN_CKPT_DIR"), "/tmp/b");
	assert_string_equal(fake_env_get("LLM_TRAIN_RESTARTS"), "4");
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
}

static void test_remote_not_training_untouched(void **state)
{
	(void)state;
	start(S_CTX_REMOTE);
	fake.item.step_id = 0;
	fake_env_set("RANK", "5");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), 0);
	assert_string_equal(fake_env_get("RANK"), "5");
	assert_int_equal(fake.setenv_calls, 0);
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
}

/* A remote context for step 1 of nnodes nodes and total tasks (local
 * on this node) on nodelist with tpn, started with the option given. */
static void start_step(uint32_t nnodes, uint32_t total, uint32_t local, const char *nodelist,
		       const char *tpn, const char *opt, const char *val)
{
	start(S_CTX_REMOTE);
	fake.item.step_id = 1;
	fake.item.nnodes = nnodes;
	fake.item.total_tasks = total;
	fake.item.local_tasks = local;
	fake_env_set("SLURM_STEP_NODELIST", nodelist);
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", tpn);
	fake_give_option(opt, val);
}

static void test_remote_bad_layout_refused(void **state)
{
	(void)state;
	start_step(1, 3, 3, "n1", "3", "llm-tp", "2");
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("llm_train: "));
	assert_null(fake_env_get("RANK"));
	/* a wrong distribution (task not where the map puts it) is refused */
	start_step(2, 4, 2, "n[1-2]", "2(x2)", "llm-train", NULL);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	fake.item.node_id = 0;
	fake.item.task_id = 1;
	fake.item.task_global_id = 2;    /* cyclic: task 2 on node 0 */
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("-m block"));
	fake.item.task_global_id = 400; /* outside the map */
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
}

/* Issue 14 item 3 (fails on the old code: ASan reports a heap overflow,
 * the map being sized by the node count while the build walked every host
 * of the list): a step whose host list disagrees with its node count is
 * refused before any map is built. */
static void test_remote_host_count_mismatch_refused(void **state)
{
	(void)state;
	const char *lists[] = { "n[1-4000]", "n1" };
	for (int i = 0; i < 2; i++) {
		start_step(2, 2, 1, lists[i], "1(x2)", "llm-train", NULL);
		assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
		fake.item.in_task = 1;
		assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
		if (!fake_log_has("SLURM_STEP_NODELIST does not hold the step's 2 nodes")) {
			fake_log_dump();
			fail_msg("no refusal for %s", lists[i]);
		}
		assert_null(fake_env_get("RANK"));
	}
}

/* Issue 14 item 2 (fails on the old code, which took SLURM_CONF from the
 * job's environment when slurmstepd had none, as on a site whose slurmd
 * reads the default /etc/slurm/slurm.conf, and fopen'ed a FIFO the user
 * put at dirname/topology.conf: user_init blocked forever). Here user_init
 * runs in a child with a 20 s alarm; slurmstepd's own environment has no
 * SLURM_CONF, the job's names the user's directory. Then an admin
 * topology path that is a FIFO (topology.source: file) is refused at once. */
static void run_user_init_bounded(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);
		slurm_spank_user_init(FAKE_SP, AC, AV);
		fake.item.in_task = 1;
		int rc = slurm_spank_task_init(FAKE_SP, AC, AV);
		for (int i = 0; i < fake.nlog; i++)
			fprintf(stderr, "child log: %s\n", fake.log[i]);
		_exit(rc == 0 ? 0 : 3);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("user_init hung (killed by signal %d)", WTERMSIG(st));
	assert_true(WIFEXITED(st));
}

static void test_remote_topology_never_from_job_env(void **state)
{
	(void)state;
	char evil[600], fifo[700], conf[700], pol[1200];
	snprintf(evil, sizeof(evil), "%s/user", tmpdir);
	assert_int_equal(mkdir(evil, 0755), 0);
	snprintf(fifo, sizeof(fifo), "%s/topology.conf", evil);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	snprintf(conf, sizeof(conf), "%s/slurm.conf", evil);
	write_file(conf, "", 0644);
	char *saved = getenv("SLURM_CONF") ? strdup(getenv("SLURM_CONF")) : NULL;
	unsetenv("SLURM_CONF");
	write_file(policy_path, "topology:\n  source: slurm\n", 0644);
	start_step(1, 1, 1, "n1", "1", "llm-train", NULL);
	fake_env_set("SLURM_CONF", conf);
	run_user_init_bounded();
	/* an admin path that is a FIFO: refused, not opened blocking */
	snprintf(pol, sizeof(pol), "topology:\n  source: %s\n", fifo);
	write_file(policy_path, pol, 0644);
	start_step(1, 1, 1, "n1", "1", "llm-train", NULL);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
	if (!fake_log_has("topology.conf: not a regular file")) {
		fake_log_dump();
		fail_msg("FIFO topology not refused");
	}
	if (saved) {
		setenv("SLURM_CONF", saved, 1);
		free(saved);
	}
}

static void test_remote_setenv_failure_reported(void **state)
{
	(void)state;
	start(S_CTX_REMOTE);
	fake.item.step_id = 1;
	fake_env_set("SLURM_STEP_NODELIST", "n1");
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", "1");
	fake_give_option("llm-train", NULL);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	fake.fail_setenv = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("spank_setenv"));
}

/* ---- job script (prolog/epilog) ---------------------------------------- */

static char scontrol_log[600];

static void start_script(const char *klog, const char *devdir)
{
	char pol[600], kl[600], st[600], sc[600], dv[600];
	snprintf(pol, sizeof(pol), "policy=%s", policy_path);
	snprintf(kl, sizeof(kl), "kernel_log=%s", klog);
	snprintf(st, sizeof(st), "state_dir=%s/state", tmpdir);
	snprintf(sc, sizeof(sc), "scontrol=%s/scontrol", tmpdir);
	snprintf(dv, sizeof(dv), "dev_dir=%s", devdir);
	llmt_raw_reset();
	fake_reset(S_CTX_JOB_SCRIPT);
	char *av[] = { pol, kl, st, sc, dv };
	assert_int_equal(slurm_spank_init(FAKE_SP, 5, av), 0);
	/* keep the arguments for the callbacks */
	set_args(pol, kl, st, sc);
	free(av_buf[4]);
	av_buf[4] = strdup(dv);
	ac_n = 5;
	snprintf(scontrol_log, sizeof(scontrol_log), "%s/scontrol.log", tmpdir);
	unlink(scontrol_log);
	char sc_path[600], script[1400];
	snprintf(sc_path, sizeof(sc_path), "%s/scontrol", tmpdir);
	snprintf(script, sizeof(script), "#!/bin/sh\nprintf '%%s|' \"$@\" >> '%s'\necho >> '%s'\n",
		 scontrol_log, scontrol_log);
	write_file(sc_path, script, 0755);
}

static int read_text(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = '\0';
	fclose(f);
	return 0;
}

static void test_prolog_not_training_noop(void **state)
{
	(void)state;
	char klog[600];
	snprintf(klog, sizeof(klog), "%s/kmsg", tmpdir);
	write_file(klog, "6,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n", 0644);
	start_script(klog, "/dev");
	unsetenv("SPANK_LLM_TRAIN");
	setenv("SLURMD_NODENAME", "n1", 1);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
}

/* A kmsg record of the kernel stamped us after now on the log's clock. */
static void kmsg_line(char *buf, size_t n, int prio, long long after_us, const char *msg)
{
	snprintf(buf, n, "%d,1,%lld,-;%s\n", prio, (long long)llmt_monotonic_us() + after_us, msg);
}

static void test_prolog_xid_drains(void **state)
{
	(void)state;
	char klog[600], buf[4096], l1[300], l2[300], l3[300], text[1000];
	snprintf(klog, sizeof(klog), "%s/kmsg.%%n", tmpdir);
	char klog_n1[600];
	snprintf(klog_n1, sizeof(klog_n1), "%s/kmsg.n1", tmpdir);
	write_file(klog_n1, "", 0644);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n1", 1);
	setenv("SLURM_JOB_ID", "77", 1);
	/* a first check on a clean log sets the node's mark; the errors come
	 * after it (between two jobs) */
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	usleep(1000);
	kmsg_line(l1, sizeof(l1), 6, 0, "usb 1-1: new device");
	kmsg_line(l2, sizeof(l2), 4, 0, "NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception");
	kmsg_line(l3, sizeof(l3), 3, 0, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.");
	snprintf(text, sizeof(text), "%s%s%s", l1, l2, l3);
	write_file(klog_n1, text, 0644);
	usleep(1000);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("Xid 79"));
	assert_int_equal(read_text(scontrol_log, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "update|NodeName=n1|State=DRAIN|Reason=llm_train: kernel log: Xid 79"));
	assert_non_null(strstr(buf, "update|JobId=1234|Comment=prolog: node n1 drained"));
	/* the mark moved past the error: an epilog after it is clean */
	unlink(scontrol_log);
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), 0);
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	/* an error during the job (newer than the mark): the epilog drains,
	 * without touching the completing job */
	FILE *f = fopen(klog_n1, "a");
	assert_non_null(f);
	fprintf(f, "3,9,%lld,-;NVRM: Xid (PCI:0000:3b:00): 48, DBE\n", (long long)llmt_monotonic_us() + 1000000);
	fclose(f);
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), -1);
	assert_int_equal(read_text(scontrol_log, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "update|NodeName=n1|State=DRAIN|Reason=llm_train: kernel log: Xid 48"));
	assert_null(strstr(buf, "JobId="));
	unsetenv("SPANK_LLM_TRAIN");
}

/* Issue 14 item 1 (fails on the old code, which drained on each of these
 * and scanned from the oldest record on): a node's kernel log (kmsg format,
 * kernel_log=) holding what an unprivileged user can put there (a task
 * named "NVRM: Xid" or "PCIe Bus Error" that segfaulted, a user-space
 * record) and a genuine Xid from before the job drains nothing. */
static void test_prolog_spoofs_do_not_drain(void **state)
{
	(void)state;
	char klog[600], l[4][300], text[1400];
	snprintf(klog, sizeof(klog), "%s/kmsg.spoof", tmpdir);
	kmsg_line(l[0], sizeof(l[0]), 6, 1000000,
		  "NVRM: Xid[31250]: segfault at 0 ip 0000000000401136 sp 00007ffc error 6 in a[401000+1000]");
	kmsg_line(l[1], sizeof(l[1]), 6, 1000000,
		  "PCIe Bus Error[31251]: segfault at 0 ip 0 sp 0 error 6 in severity=Uncorrected[401000+1000]");
	kmsg_line(l[2], sizeof(l[2]), 11, 1000000, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.");
	/* genuine, but long before the job (the ring buffer's start) */
	snprintf(l[3], sizeof(l[3]), "3,2,100,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, old.\n");
	snprintf(text, sizeof(text), "%s%s%s%s", l[3], l[0], l[1], l[2]);
	write_file(klog, text, 0644);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n2", 1);
	if (slurm_spank_job_prolog(FAKE_SP, AC, AV) != 0) {
		fake_log_dump();
		fail_msg("a spoofed kernel log drained the node");
	}
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), 0);
	unsetenv("SPANK_LLM_TRAIN");
}

static void test_prolog_gpu_count(void **state)
{
	(void)state;
	char dev[600], f[700], klog[600];
	snprintf(dev, sizeof(dev), "%s/dev", tmpdir);
	assert_int_equal(mkdir(dev, 0755), 0);
	const char *names[] = { "nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm" };
	for (int i = 0; i < 5; i++) {
		snprintf(f, sizeof(f), "%s/%s", dev, names[i]);
		write_file(f, "", 0644);
	}
	snprintf(klog, sizeof(klog), "%s/empty", tmpdir);
	write_file(klog, "", 0644);
	start_script(klog, dev);
	setenv("SPANK_LLM_TRAIN", "1", 1);
	/* CPU node type: no GPU check */
	setenv("SLURMD_NODENAME", "n2", 1);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	/* gpu node type wants 4, 3 present */
	setenv("SLURMD_NODENAME", "g1", 1);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("3 GPUs visible, node type gpu has 4"));
	snprintf(f, sizeof(f), "%s/nvidia3", dev);
	write_file(f, "", 0644);
	fake_log_clear();
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), 0);
	unsetenv("SPANK_LLM_TRAIN");
}

static void test_prolog_option_via_getopt(void **state)
{
	(void)state;
	char klog[600];
	snprintf(klog, sizeof(klog), "%s/kmsg2", tmpdir);
	char mce[300];
	kmsg_line(mce, sizeof(mce), 2, 1000000, "mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 4");
	write_file(klog, mce, 0644);
	start_script(klog, "/dev");
	unsetenv("SPANK_LLM_TRAIN");
	setenv("SLURMD_NODENAME", "n3", 1);
	fake_give_option("llm-train", "tp=1");
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("machine check"));
}

static void test_prolog_refuses_symlinked_log(void **state)
{
	(void)state;
	char klog[600], target[600];
	snprintf(target, sizeof(target), "%s/real", tmpdir);
	write_file(target, "6,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79, x\n", 0644);
	snprintf(klog, sizeof(klog), "%s/linked", tmpdir);
	assert_int_equal(symlink(target, klog), 0);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n4", 1);
	/* not followed: check skipped with a message, node not drained */
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	assert_true(fake_log_has("kernel log check skipped"));
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	unsetenv("SPANK_LLM_TRAIN");
}

/* Issue 14 item 4 (fails on the old code, which drained every node that
 * started a training job while a shared root was low): low space on the
 * checkpoint root refuses the job at submit with one line, and the prolog
 * drains no node for it. */
static void test_low_space_refused_at_submit(void **state)
{
	(void)state;
	char klog[600];
	snprintf(klog, sizeof(klog), "%s/empty", tmpdir);
	write_file(klog, "", 0644);
	/* the admin's root (/tmp) cannot have a million GiB free; the user's
	 * own --llm-ckpt-dir is never looked at as root */
	write_file(policy_path, "limits:\n  ckpt_roots: [/tmp]\nhealth:\n"
		   "  ckpt_free_space: {min_gib: 1000000, timeout: 5}\n", 0644);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n1", 1);
	fake_give_option("llm-ckpt-dir", "/tmp/user/run");
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	unsetenv("SPANK_LLM_TRAIN");

	start(S_CTX_ALLOCATOR);
	fake_give_option("llm-ckpt-dir", "/tmp/user/run");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
	if (!fake_log_has("llm_train: checkpoint root /tmp has ") ||
	    !fake_log_has("GiB free, the policy needs 1000000.0 GiB: job not submitted")) {
		fake_log_dump();
		fail_msg("no one-line refusal");
	}
	assert_int_equal(fake.nlog, 1);
	/* a root with room, and a job without a checkpoint dir: accepted */
	write_file(policy_path, "limits:\n  ckpt_roots: [/tmp]\nhealth:\n"
		   "  ckpt_free_space: {min_gib: 0.000001, timeout: 5}\n", 0644);
	start(S_CTX_ALLOCATOR);
	fake_give_option("llm-ckpt-dir", "/tmp/user/run");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
}

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
		cmocka_unit_test_setup_teardown(test_remote_every_task_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_master_addr_is_node_addr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_overwrites_batch_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_gpu_node_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_batch_step_settings_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_not_training_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_bad_layout_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_setenv_failure_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_host_count_mismatch_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_topology_never_from_job_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_not_training_noop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_xid_drains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_gpu_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_option_via_getopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_refuses_symlinked_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_spoofs_do_not_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_low_space_refused_at_submit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
