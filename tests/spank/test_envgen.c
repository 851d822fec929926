/* Unit tests of spank/envgen.c and plan.c: every contract variable of a
 * task, MASTER_PORT (ports.c: Slurm's reserved ports read strictly, the
 * fallback hash's spread), CUDA_VISIBLE_DEVICES only on GPU
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

#define HASH(j, st) llmt_port_hash((j), (st), LLMT_FALLBACK_PORT_LO, LLMT_FALLBACK_PORT_HI)

/* The fallback: a hash of (job, step) over the whole range. */
static void test_master_port(void **s)
{
	for (uint32_t j = 0; j < 5000; j += 7)
		for (uint32_t st = 0; st < 40; st += 3) {
			unsigned p = HASH(j, st);
			assert_true(p >= 20000 && p <= 29999);
		}
	/* neighbouring jobs and steps differ */
	assert_int_not_equal(HASH(100, 0), HASH(101, 0));
	assert_int_not_equal(HASH(100, 0), HASH(100, 1));
	assert_int_not_equal(HASH(100, 0xfffffffb), HASH(100, 0));
	/* jobs 625 apart and steps 16 apart: the old formula made every such
	 * pair collide (20000 of 20000); a hash as often as chance, 1 in
	 * 10000 (about 2 here) */
	unsigned same_job = 0, same_step = 0;
	for (uint32_t j = 0; j < 20000; j++) {
		same_job += HASH(1000 + j, 0) == HASH(1000 + j + 625, 0);
		same_step += HASH(777, j) == HASH(777, j + 16);
	}
	assert_true(same_job <= 10);
	assert_true(same_step <= 10);
	/* a job array of 1000 consecutive ids: ports as distinct as chance
	 * gives (expected ~952; the old formula: 625) */
	static unsigned char seen[10000];
	unsigned distinct = 0;
	memset(seen, 0, sizeof(seen));
	for (uint32_t j = 5000; j < 6000; j++) {
		unsigned p = HASH(j, 0) - 20000;
		distinct += !seen[p];
		seen[p] = 1;
	}
	assert_true(distinct >= 920);
	/* spread: 100 buckets of 100 ports each, three regular id patterns
	 * (consecutive jobs, jobs 625 apart, steps of one job), 40000 each:
	 * chi-square with 99 degrees of freedom (mean 99, sd 14) */
	for (int pat = 0; pat < 3; pat++) {
		static unsigned b[100];
		memset(b, 0, sizeof(b));
		for (uint32_t i = 0; i < 40000; i++) {
			unsigned p = pat == 0 ? HASH(i, 0) : pat == 1 ? HASH(i * 625, 3) : HASH(4242, i);
			b[(p - 20000) / 100]++;
		}
		double chi = 0;
		for (int k = 0; k < 100; k++)
			chi += (b[k] - 400.0) * (b[k] - 400.0) / 400.0;
		if (chi > 160)
			fail_msg("pattern %d: chi-square %.1f over 100 buckets", pat, chi);
	}
	/* a range the policy sets */
	for (uint32_t j = 0; j < 1000; j++) {
		unsigned p = llmt_port_hash(j, 1, 40000, 40009);
		assert_true(p >= 40000 && p <= 40009);
	}
	assert_int_equal(llmt_port_hash(9, 9, 29500, 29500), 29500);
}

/* Slurm's port list, read strictly: accepted forms. */
/* text parses to first..last, count ports in items ranges */
static void parses_to(const char *text, int first, int last, int count, int items)
{
	struct llmt_ports r;
	char err[256];
	assert_int_equal(llmt_ports_parse(text, &r, err, sizeof(err)), 0);
	assert_int_equal(r.first, first);
	assert_int_equal(r.last, last);
	assert_int_equal(r.count, count);
	assert_int_equal(r.items, items);
}

static void test_resv_ports_parse(void **s)
{
	struct llmt_ports r;
	char err[256];
	parses_to("12000-12003", 12000, 12003, 4, 1);
	parses_to("12000", 12000, 12000, 1, 1);
	parses_to("12000,12005-12006,12010", 12000, 12010, 4, 3);
	assert_int_equal(llmt_ports_parse("1024-65535", &r, err, sizeof(err)), 0);
	assert_int_equal(r.count, 64512);
	/* a long list that still fits: 146 ports, 7 bytes each */
	char list[LLMT_RESV_PORTS_MAX + 64];
	size_t off = 0;
	for (unsigned i = 0; i < 146; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%u", i ? "," : "", 20000 + 2 * i);
	assert_true(off <= LLMT_RESV_PORTS_MAX);
	assert_int_equal(llmt_ports_parse(list, &r, err, sizeof(err)), 0);
	assert_int_equal(r.last, 20290);
	assert_int_equal(r.items, 146);
}

/* Hostile values: refused with the value quoted in printable bytes. */
static void test_resv_ports_hostile(void **s)
{
	static const struct { const char *v, *must; } bad[] = {
		{ "", "empty" }, { "abc", "'abc'" }, { "70000", "'70000'" },
		{ "12000-11999", "runs backwards" }, { "0", "'0'" }, { "1023", "'1023'" },
		{ "012000", "'012000'" }, { "+12000", "'+12000'" }, { "123456", "'123456'" },
		{ "99999999999999999999", "not a port" }, { " 12000", "not a port" },
		{ "12000 ", "unexpected ' '" }, { "12000,", "unexpected ','" }, { ",12000", "not a port" },
		{ "12000-", "after '-'" }, { "-12000", "not a port" }, { "12000--12001", "after '-'" },
		{ "12000-12003x", "unexpected 'x'" }, { "12000,abc", "'abc'" }, { "12000;12001", "unexpected ';'" },
		{ "12000,11000", "does not follow" }, { "12000,12000", "does not follow" },
		{ "12000-12005,12003", "does not follow" }, { "12000\n", "unexpected '?'" },
		{ "\x1b[31m12000", "'?[31m12000'" }, { "12000-12003-12004", "unexpected '-'" },
		{ "0x3000", "not a port" }, { "1e4", "not a port" }, { "12000e4", "unexpected 'e'" },
	};
	struct llmt_ports r;
	char err[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (llmt_ports_parse(bad[i].v, &r, err, sizeof(err)) != -1)
			fail_msg("accepted '%s'", bad[i].v);
		if (!strstr(err, bad[i].must))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].v, err, bad[i].must);
		for (const char *c = err; *c; c++)
			assert_true(*c >= 0x20 && *c < 0x7f);
	}
	/* huge lists: one over the limit, one of 100000 ports, one range of
	 * junk bytes; never read past the limit */
	static char huge[700000];
	size_t off = 0;
	for (unsigned i = 0; i < 100000; i++)
		off += (size_t)snprintf(huge + off, sizeof(huge) - off, "%s%u", i ? "," : "", 1024 + i % 60000);
	assert_int_equal(llmt_ports_parse(huge, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "longer than 1024 bytes"));
	memset(huge, '7', LLMT_RESV_PORTS_MAX + 1);
	huge[LLMT_RESV_PORTS_MAX + 1] = 0;
	assert_int_equal(llmt_ports_parse(huge, &r, err, sizeof(err)), -1);
	huge[LLMT_RESV_PORTS_MAX] = 0;
	assert_int_equal(llmt_ports_parse(huge, &r, err, sizeof(err)), -1);   /* 1024 sevens */
	assert_non_null(strstr(err, "not a port"));
}

/* Random strings over the list's own alphabet (and a few bytes beside
 * it): never a crash (the sanitizer build runs this too), and what is
 * accepted holds together. */
static void test_resv_ports_random(void **s)
{
	static const char abc[] = "0123456789012345678901234567890123456789,,,---1x \n\xff";
	uint64_t x = 88172645463325252ull;
	unsigned accepted = 0;
	for (int n = 0; n < 200000; n++) {
		char v[48], err[256];
		struct llmt_ports r;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t len = (size_t)(x % 40);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			v[i] = abc[x % (sizeof(abc) - 1)];
		}
		v[len] = '\0';
		if (llmt_ports_parse(v, &r, err, sizeof(err)) != 0)
			continue;
		accepted++;
		assert_true(strspn(v, "0123456789,-") == len);
		assert_true(r.first >= LLMT_PORT_MIN && r.last <= LLMT_PORT_MAX && r.first <= r.last);
		assert_true(r.items >= 1 && r.count >= r.items && r.count <= r.last - r.first + 1);
	}
	assert_true(accepted > 100);   /* the generator does reach valid lists */
}

/* MASTER_PORT: the last reserved port, else the hash; a bad value says so. */
static void test_master_port_resv(void **s)
{
	char note[320];
	assert_int_equal(llmt_master_port("30641-30643", 5, 1, 20000, 29999, note, sizeof(note)), 30643);
	assert_string_equal(note, "");
	assert_int_equal(llmt_master_port("30641,30650-30651", 5, 1, 20000, 29999, note, sizeof(note)), 30651);
	assert_int_equal(llmt_master_port("31000", 5, 1, 20000, 29999, note, sizeof(note)), 31000);
	assert_int_equal(llmt_master_port(NULL, 5, 1, 20000, 29999, note, sizeof(note)), HASH(5, 1));
	assert_string_equal(note, "");
	static const char *bad[] = { "", "abc", "70000", "12000-11999", "12000,x", "\x1b]0;pwn\x07" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(llmt_master_port(bad[i], 5, 1, 20000, 29999, note, sizeof(note)), HASH(5, 1));
		assert_non_null(strstr(note, "SLURM_STEP_RESV_PORTS"));
		assert_non_null(strstr(note, "from the job and step ids"));
		for (const char *c = note; *c; c++)
			assert_true(*c >= 0x20 && *c < 0x7f);
	}
	/* no note buffer: still a port */
	assert_int_equal(llmt_master_port("abc", 5, 1, 20000, 29999, NULL, 0), HASH(5, 1));
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
			.group_rank = llmt_rankmap_group_rank(plan->map, x->node), .group_world_size = 4,
		};
		struct llmt_env env;
		char want[128];
		assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), 0);
		assert_string_equal(llmt_env_get(&env, "LLM_TRAIN"), "1");
		/* torchrun's node rank: node-contiguous ranks here, 4 a node */
		snprintf(want, sizeof(want), "%u", x->rank / 4);
		assert_string_equal(llmt_env_get(&env, "GROUP_RANK"), want);
		assert_string_equal(llmt_env_get(&env, "GROUP_WORLD_SIZE"), "4");
		snprintf(want, sizeof(want), "%u", x->rank);
		assert_string_equal(llmt_env_get(&env, "ROLE_RANK"), want);
		assert_string_equal(llmt_env_get(&env, "ROLE_WORLD_SIZE"), "16");
		assert_string_equal(llmt_env_get(&env, "ROLE_NAME"), "default");
		unsigned rank = (unsigned)atoi(llmt_env_get(&env, "RANK"));
		assert_int_equal(rank, x->rank);
		seen_rank[rank]++;
		assert_string_equal(llmt_env_get(&env, "WORLD_SIZE"), "16");
		snprintf(want, sizeof(want), "%u", t % 4);
		assert_string_equal(llmt_env_get(&env, "LOCAL_RANK"), want);   /* block distribution */
		assert_string_equal(llmt_env_get(&env, "LOCAL_WORLD_SIZE"), "4");
		assert_string_equal(llmt_env_get(&env, "MASTER_ADDR"), llmt_plan_master(plan));
		snprintf(want, sizeof(want), "%u", HASH(1234, 2));
		assert_string_equal(llmt_env_get(&env, "MASTER_PORT"), want);
		assert_string_equal(env.note, "");
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
	/* Slurm's reserved ports: the last; a bad value: the hash and a note */
	in.resv_ports = "30100-30102";
	assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), 0);
	assert_string_equal(llmt_env_get(&env, "MASTER_PORT"), "30102");
	assert_string_equal(env.note, "");
	in.resv_ports = "30102-30100";
	assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), 0);
	char want[32];
	snprintf(want, sizeof(want), "%u", HASH(0, 0));
	assert_string_equal(llmt_env_get(&env, "MASTER_PORT"), want);
	assert_non_null(strstr(env.note, "30102-30100"));
	/* the policy's fallback range */
	p.rendezvous.port_lo = p.rendezvous.port_hi = 29500;
	in.resv_ports = NULL;
	assert_int_equal(llmt_envgen(&in, &env, err, sizeof(err)), 0);
	assert_string_equal(llmt_env_get(&env, "MASTER_PORT"), "29500");
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
	/* a task with no NIC (its node in no node type, or the type lists no
	 * nics): refused, not an empty name (the sample policy's ib profile
	 * gave NCCL_IB_HCA==:1 on such a node) */
	in.nic = NULL;
	assert_int_equal(llmt_env_subst("=${nic}:1", &in, buf, sizeof(buf), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no NIC"));
	in.nic = "";
	assert_int_equal(llmt_env_subst("${nic}", &in, buf, sizeof(buf), err, sizeof(err)), -1);
	assert_int_equal(llmt_env_subst("${gpu}", &in, buf, sizeof(buf), err, sizeof(err)), 0);
	assert_int_equal(llmt_subst_check("=${nic}:1", err, sizeof(err)), 0);
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
		cmocka_unit_test(test_resv_ports_parse),
		cmocka_unit_test(test_resv_ports_hostile),
		cmocka_unit_test(test_resv_ports_random),
		cmocka_unit_test(test_master_port_resv),
		cmocka_unit_test(test_task_env),
		cmocka_unit_test(test_cpu_node_env),
		cmocka_unit_test(test_subst),
		cmocka_unit_test(test_tasks_per_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
