#define _GNU_SOURCE
/* test_cb_remote.c: the plugin's remote context (slurmstepd) against the
 * fake spank_*: every task's environment, batch-step leaks, bad layouts,
 * host counts, the topology never taken from the job's environment,
 * MASTER_PORT from Slurm's reserved ports. */
#include "cb_harness.h"

struct task_env {
	char rank[16], world[16], local[16], lws[16], addr[64], port[16], tp[16], tpr[16], dpr[16];
	char ckpt[256];
};

static void copy(char *dst, size_t n, const char *v)
{
	snprintf(dst, n, "%s", v ? v : "");
}

static const char *run_stepd_addrs;   /* NodeAddrs the fake slurmctld gives */
static const char *run_stepd_resv;    /* SLURM_STEP_RESV_PORTS in the job env */

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
	if (run_stepd_resv)
		fake_env_set("SLURM_STEP_RESV_PORTS", run_stepd_resv);
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
		if (!run_stepd_resv)
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

/* log lines of the last run_stepd holding needle */
static int log_count(const char *needle)
{
	int n = 0;
	for (int i = 0; i < fake.nlog; i++)
		n += strstr(fake.log[i], needle) != NULL;
	return n;
}

/* MASTER_PORT is the last port Slurm reserved for the step, on every
 * node; a malformed or overlong SLURM_STEP_RESV_PORTS (the job's
 * environment) gives the fallback hash, said once, by rank 0 only, in
 * printable bytes. (Red on the old code: its port ignored the variable.) */
static void test_remote_master_port_resv_ports(void **state)
{
	(void)state;
	struct task_env e[8];
	static char huge[4000];
	memset(huge, '1', sizeof(huge) - 1);
	static const struct { const char *v, *port, *note; } cases[] = {
		{ "30641-30643", "30643", NULL },
		{ "30641,30650-30651", "30651", NULL },
		{ "12000-11999", NULL, "SLURM_STEP_RESV_PORTS '12000-11999': range 12000-11999 runs backwards" },
		{ "abc\n\x1b[2J", NULL, "SLURM_STEP_RESV_PORTS 'abc??[2J'" },
		{ "", NULL, "SLURM_STEP_RESV_PORTS '' is empty" },
		{ huge, NULL, "SLURM_STEP_RESV_PORTS longer than 1024 bytes" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int notes = 0, named = 0;
		memset(e, 0, sizeof(e));
		run_stepd_resv = cases[c].v;
		for (uint32_t node = 0; node < 2; node++) {
			run_stepd("tp=2", "n[1-2]", "2(x2)", 2, node, node * 2, 2, 4, e, 0);
			notes += log_count("SLURM_STEP_RESV_PORTS");
			for (int i = 0; i < fake.nlog; i++)
				for (const char *ch = fake.log[i]; *ch; ch++)
					assert_true(*ch >= 0x20 && *ch < 0x7f);
			if (cases[c].note)
				named += log_count(cases[c].note);
		}
		if (cases[c].note && !named)
			fail_msg("case %zu: no note '%s...'", c, cases[c].note);
		check_step(e, 4, 2, 2);
		if (cases[c].port) {
			assert_string_equal(e[0].port, cases[c].port);
			assert_int_equal(notes, 0);
		} else {
			assert_true(atoi(e[0].port) >= 20000 && atoi(e[0].port) <= 29999);
			assert_int_equal(notes, 1);
		}
	}
	run_stepd_resv = NULL;
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

/* A step srun refused (and said why): every task refused without a line;
 * a mark naming another step changes nothing (the step runs and logs its
 * layout in one line). */
static void test_remote_srun_refused_step(void **state)
{
	(void)state;
	const char *marks[] = { "1234.3", "1234.30", "4321.3", "" };
	for (unsigned i = 0; i < 4; i++) {
		start(S_CTX_REMOTE);
		fake.item.step_id = 3;
		fake.item.nnodes = 1;
		fake.item.local_tasks = 2;
		fake.item.total_tasks = 2;
		fake_env_set("SLURM_STEP_NODELIST", "n1");
		fake_env_set("SLURM_STEP_TASKS_PER_NODE", "2");
		fake_env_set("SLURM_SPANK_LLM_TRAIN_REFUSED", marks[i]);
		fake_give_option("llm-train", "tp=2");
		assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
		fake.item.in_task = 1;
		for (int k = 0; k < 2; k++) {
			fake.item.task_id = k;
			fake.item.task_global_id = (uint32_t)k;
			assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), i == 0 ? -1 : 0);
		}
		/* refused: no line at all; else only the step's info line */
		assert_false(fake_log_has(i == 0 ? "llm_train: " : "refused"));
		if (i != 0) {
			assert_string_equal(fake_env_get("LLM_TRAIN_TP"), "2");
			assert_true(fake_log_has("llm_train: step 1234.3: tp=2 pp=1 dp=1, 2 tasks on 1 nodes (n1)"));
		}
		assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
	}
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

/* A client built on libslurm (or srun with a preloaded shim that edits
 * the launch environment) sends what it likes as SLURM_STEP_NODELIST and
 * SLURM_STEP_TASKS_PER_NODE; the refusal quotes them, and slurmstepd logs
 * it: fails on the old code, whose message carried the user's newline
 * into slurmd's log as a line of their own ("error: ... FORGED"). */
static void test_remote_env_control_chars_never_logged(void **state)
{
	(void)state;
	const char *bad[][2] = { { "n1", "1\nerror: llm_train: FORGED" },
				 { "n1\nerror: llm_train: FORGED", "1" },
				 { "n[1-2]", "1,1\r\033[2Kerror: FORGED" } };
	for (int i = 0; i < 3; i++) {
		uint32_t nn = i == 2 ? 2 : 1;
		start_step(nn, nn, 1, bad[i][0], bad[i][1], "llm-train", NULL);
		assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
		fake.item.in_task = 1;
		assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
		assert_true(fake_log_has("task refused: "));
		for (int k = 0; k < fake.nlog; k++)
			for (const char *c = fake.log[k]; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == 0x7f) {
					fake_log_dump();
					fail_msg("case %d: control byte 0x%02x logged", i, (unsigned char)*c);
				}
	}
}

/* The policy's account and partition caps hold against the job's
 * environment (fails on the old code, which read SLURM_JOB_ACCOUNT and
 * SLURM_JOB_PARTITION there: srun passes a user's `export
 * SLURM_JOB_ACCOUNT=x` to the step untouched, and on the emulated cluster
 * a 2-node step of an account capped at 1 node ran). slurmctld's answer
 * decides; no answer refuses the step. */
static void test_remote_caps_never_from_job_env(void **state)
{
	(void)state;
	const char *caps = "  partitions:\n    small: {max_nodes: 1}\n"
			   "  accounts:\n    students: {max_nodes: 1}\n";
	char *pol = malloc(strlen(good_policy) + 200);
	assert_non_null(pol);
	const char *at = strstr(good_policy, "node_types:");
	snprintf(pol, strlen(good_policy) + 200, "%.*s%s%s", (int)(at - good_policy), good_policy, caps, at);
	/* a policy without caps never asks slurmctld */
	start_step(1, 1, 1, "n1", "1", "llm-train", NULL);
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	assert_int_equal(fake.job_queries, 0);
	assert_int_equal(slurm_spank_exit(FAKE_SP, AC, AV), 0);
	write_file(policy_path, pol, 0644);
	free(pol);
	const char *who[][2] = { { "debug", "students" }, { "small", "" } };
	for (int i = 0; i < 2; i++) {
		start_step(2, 2, 1, "n[1-2]", "1(x2)", "llm-train", NULL);
		snprintf(fake.job_partition, sizeof(fake.job_partition), "%s", who[i][0]);
		snprintf(fake.job_account, sizeof(fake.job_account), "%s", who[i][1]);
		fake_env_set("SLURM_JOB_PARTITION", "debug");
		fake_env_set("SLURM_JOB_ACCOUNT", "other");
		assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
		assert_int_equal(fake.job_queries, 1);
		fake.item.in_task = 1;
		assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
		if (!fake_log_has(i ? "exceed the partition 'small' limit of 1 nodes" :
				      "exceed the account 'students' limit of 1 nodes")) {
			fake_log_dump();
			fail_msg("caps of %s/%s not applied", who[i][0], who[i][1]);
		}
		assert_null(fake_env_get("RANK"));
	}
	/* within the caps: runs; slurmctld busy for two queries: the third
	 * answers, runs; unreachable throughout: refused, one line */
	start_step(1, 1, 1, "n1", "1", "llm-train", NULL);
	snprintf(fake.job_account, sizeof(fake.job_account), "students");
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), 0);
	assert_string_equal(fake_env_get("RANK"), "0");
	start_step(1, 1, 1, "n1", "1", "llm-train", NULL);
	fake.fail_load_job = 2;
	fake.job_queries = 0;
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	assert_int_equal(fake.job_queries, 3);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), 0);
	assert_string_equal(fake_env_get("RANK"), "0");
	start_step(1, 1, 1, "n1", "1", "llm-train", NULL);
	fake.fail_load_job = 1000;
	assert_int_equal(slurm_spank_user_init(FAKE_SP, AC, AV), 0);
	fake.item.in_task = 1;
	assert_int_equal(slurm_spank_task_init(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("cannot read job 1234's partition and account from slurmctld (3 tries)"));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_remote_every_task_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_master_addr_is_node_addr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_master_port_resv_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_overwrites_batch_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_srun_refused_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_gpu_node_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_batch_step_settings_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_not_training_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_bad_layout_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_setenv_failure_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_host_count_mismatch_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_topology_never_from_job_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_caps_never_from_job_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_env_control_chars_never_logged, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
