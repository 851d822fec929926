/* Unit tests of spank/envgen.c and plan.c: every contract variable of a
 * task, MASTER_PORT range and spread, CUDA_VISIBLE_DEVICES only on GPU
 * nodes, NCCL profile substitution, bounded values; tasks-per-node. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envgen.h"
#include "subst.h"
#include "plan.h"

static const char pol_text[] =
	"defaults: {restarts: 4, heartbeat_timeout: 300}\n"
	"limits: {restart_window: 7200}\n"
	"node_types:\n"
	"  - {name: g, nodes: 'g[1-4]', gpus_per_node: 4, nics: [mlx5_0, mlx5_1]}\n"
	"nccl_profiles:\n"
	"  ib: {NCCL_IB_HCA: '=${nic}:1', NCCL_DEBUG_FILE: '/tmp/nccl.${rank}.${local_rank}.${gpu}.${local_world_size}'}\n";

static struct llmt_policy *pol(void)
{
	struct llmt_policy *p;
	char err[512];
	if (llmt_policy_parse(pol_text, strlen(pol_text), "t.yaml", &p, err, sizeof(err)))
		fail_msg("%s", err);
	return p;
}

static void test_master_port(void **s)
{
	for (uint32_t j = 0; j < 5000; j += 7)
		for (uint32_t st = 0; st < 40; st += 3) {
			unsigned p = llmt_master_port(j, st);
			assert_true(p >= 20000 && p <= 29999);
		}
	/* neighbouring jobs and steps differ */
	assert_int_not_equal(llmt_master_port(100, 0), llmt_master_port(101, 0));
	assert_int_not_equal(llmt_master_port(100, 0), llmt_master_port(100, 1));
	assert_int_not_equal(llmt_master_port(100, 0xfffffffb), llmt_master_port(100, 0));
	/* 625 consecutive jobs x 16 steps: all distinct */
	static unsigned char seen[10000];
	for (uint32_t j = 1000; j < 1625; j++)
		for (uint32_t st = 0; st < 16; st++) {
			unsigned p = llmt_master_port(j, st) - 20000;
			assert_false(seen[p]);
			seen[p] = 1;
		}
}

static void test_task_env(void **s)
{
	struct llmt_policy *p = pol();
	struct llmt_topology *topo;
	struct llmt_plan *plan;
	char err[512];
	const char *tc = "SwitchName=a Nodes=g[1,3]\nSwitchName=b Nodes=g[2,4]\nSwitchName=t Switches=a,b\n";
	assert_int_equal(llmt_topology_parse(tc, strlen(tc), "t.conf", &topo, err, sizeof(err)), 0);
	struct llmt_layout L = { 2, 2, 4 };
	if (llmt_plan_build("g[1-4]", NULL, 4, topo, p, L, NULL, &plan, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(plan->ntasks, 16);

	struct llmt_opts o;
	llmt_opts_init(&o);
	assert_int_equal(llmt_opts_parse_spec(&o, "tp=2,pp=2,ckpt-dir=/ck/run,nccl=ib,ckpt-interval=90s",
					      err, sizeof(err)), 0);
	llmt_opts_apply_defaults(&o, p);
	unsigned seen_rank[16] = { 0 };
	for (unsigned t = 0; t < plan->ntasks; t++) {
		const struct llmt_rm_task *x = &plan->map->task[t];
		struct llmt_env_input in = {
			.task = x, .layout = L, .world_size = 16, .local_world_size = 4,
			.node_gpus = 4, .nic = llmt_plan_nic(plan, t),
			.master_addr = llmt_plan_master(plan), .job_id = 1234, .step_id = 2,
			.opts = &o, .policy = p,
		};
		struct llmt_env env;
		char want[128];
		assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), 0);
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN"), "1");
		unsigned rank = (unsigned)atoi(llmt_env_get(&env, "RANK"));
		assert_int_equal(rank, x->rank);
		seen_rank[rank]++;
		assert_string_equal(llmt_env_get(&env, "WORLD_SIZE"), "16");
		snprintf(want, sizeof(want), "%u", t % 4);
		assert_string_equal(llmt_env_get(&env, "LOCAL_RANK"), want);   /* block distribution */
		assert_string_equal(llmt_env_get(&env, "LOCAL_WORLD_SIZE"), "4");
		assert_string_equal(llmt_env_get(&env, "MASTER_ADDR"), llmt_plan_master(plan));
		snprintf(want, sizeof(want), "%u", llmt_master_port(1234, 2));
		assert_string_equal(llmt_env_get(&env, "MASTER_PORT"), want);
		unsigned tp = (unsigned)atoi(llmt_env_get(&env, "LLM_TRAIN_TP_RANK"));
		unsigned pp = (unsigned)atoi(llmt_env_get(&env, "LLM_TRAIN_PP_RANK"));
		unsigned dp = (unsigned)atoi(llmt_env_get(&env, "LLM_TRAIN_DP_RANK"));
		assert_int_equal(rank, tp + dp * 2 + pp * 2 * 4);
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_TP"), "2");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_PP"), "2");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_DP"), "4");
		snprintf(want, sizeof(want), "%u", t % 4);
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_GPU"), want);
		assert_string_equal(llmt_env_get(&env, "CUDA_VISIBLE_DEVICES"), "0,1,2,3");
		const char *nic = (t % 4) < 2 ? "mlx5_0" : "mlx5_1";
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_NIC"), nic);
		snprintf(want, sizeof(want), "=%s:1", nic);
		assert_string_equal(llmt_env_get(&env, "NCCL_IB_HCA"), want);
		snprintf(want, sizeof(want), "/tmp/nccl.%u.%u.%u.4", rank, t % 4, t % 4);
		assert_string_equal(llmt_env_get(&env, "NCCL_DEBUG_FILE"), want);
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_NCCL_PROFILE"), "ib");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_CKPT_DIR"), "/ck/run");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_HEARTBEAT_DIR"), "/ck/run/heartbeat");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_CKPT_INTERVAL"), "90s");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_RESTARTS"), "4");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_RESTART_WINDOW"), "7200");
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_HEARTBEAT_TIMEOUT"), "300");
	}
	for (unsigned r = 0; r < 16; r++)
		assert_int_equal(seen_rank[r], 1);
	/* topology-aware: rank 0..7 (stage 0) under one leaf */
	int leaf0 = plan->nodes[plan->map->task[plan->map->task_of_rank[0]].node].leaf;
	for (unsigned r = 0; r < 8; r++)
		assert_int_equal(plan->nodes[plan->map->task[plan->map->task_of_rank[r]].node].leaf, leaf0);
	llmt_plan_free(plan);
	llmt_topology_free(topo);
	llmt_policy_free(p);
}

static void test_cpu_node_env(void **s)
{
	struct llmt_policy p;
	struct llmt_opts o;
	struct llmt_env env;
	char err[256];
	llmt_policy_defaults(&p);
	llmt_opts_init(&o);
	llmt_opts_apply_defaults(&o, &p);
	struct llmt_rm_task x = { .rank = 3, .local_rank = 1, .gpu = -1, .nic = -1 };
	struct llmt_env_input in = { .task = &x, .layout = { 1, 1, 4 }, .world_size = 4,
				     .local_world_size = 2, .master_addr = "node1", .opts = &o, .policy = &p };
	assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), 0);
	assert_null(llmt_env_get(&env, "CUDA_VISIBLE_DEVICES"));
	assert_null(llmt_env_get(&env, "LLM_TRAIN_CKPT_DIR"));
	assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_GPU"), "-1");
	assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_NIC"), "");
	assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_CKPT_INTERVAL"), "auto");
	assert_string_equal(llmt_env_get(&env, "LLM_TRAIN_NCCL_PROFILE"), "");
	/* no master: refused */
	in.master_addr = "";
	assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), -1);
	/* unknown profile: refused */
	in.master_addr = "node1";
	snprintf(o.nccl_profile, sizeof(o.nccl_profile), "nope");
	assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nope"));
}

static void test_subst(void **s)
{
	char buf[16], err[256];
	struct llmt_rm_task x = { .rank = 12345, .local_rank = 1, .gpu = 1 };
	struct llmt_env_input in = { .task = &x, .nic = "mlx5_1", .local_world_size = 8 };
	assert_int_equal(llmt_env_subst("a${nic}b", &in, buf, sizeof(buf), err, sizeof(err)), 0);
	assert_string_equal(buf, "amlx5_1b");
	assert_int_equal(llmt_env_subst("$x${gpu}$", &in, buf, sizeof(buf), err, sizeof(err)), 0);
	assert_string_equal(buf, "$x1$");
	/* too long for the buffer: refused, never truncated */
	assert_int_equal(llmt_env_subst("${rank}${rank}${rank}${rank}", &in, buf, sizeof(buf), err,
					sizeof(err)), -1);
	assert_int_equal(llmt_subst_check("${bad}", err, sizeof(err)), -1);
	assert_int_equal(llmt_subst_check("${nic", err, sizeof(err)), -1);
	assert_int_equal(llmt_subst_check("plain", err, sizeof(err)), 0);
}

static void test_tasks_per_node(void **s)
{
	unsigned out[6];
	char err[256];
	assert_int_equal(llmt_tasks_per_node_parse("4(x3),2,1(x2)", 6, out, err, sizeof(err)), 0);
	assert_int_equal(out[0], 4);
	assert_int_equal(out[2], 4);
	assert_int_equal(out[3], 2);
	assert_int_equal(out[5], 1);
	assert_int_equal(llmt_tasks_per_node_parse("4(x3)", 6, out, err, sizeof(err)), -1);
	assert_int_equal(llmt_tasks_per_node_parse("4(x7)", 6, out, err, sizeof(err)), -1);
	assert_int_equal(llmt_tasks_per_node_parse("4(3)", 6, out, err, sizeof(err)), -1);
	assert_int_equal(llmt_tasks_per_node_parse("0(x6)", 6, out, err, sizeof(err)), -1);
	assert_int_equal(llmt_tasks_per_node_parse("a", 6, out, err, sizeof(err)), -1);
	assert_int_equal(llmt_tasks_per_node_parse("", 6, out, err, sizeof(err)), -1);
	assert_int_equal(llmt_tasks_per_node_parse("1(x99999999999)", 6, out, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_master_port),
		cmocka_unit_test(test_task_env),
		cmocka_unit_test(test_cpu_node_env),
		cmocka_unit_test(test_subst),
		cmocka_unit_test(test_tasks_per_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
