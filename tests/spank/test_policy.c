/* Unit tests of spank/policy.c: the sample and cluster policies load,
 * malformed YAML gives file:line:column, unknown keys and bad values are
 * refused, a missing file gives the built-in defaults, the stat check. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy.h"

static struct llmt_policy *load_src(const char *rel)
{
	char path[1024], err[512];
	struct llmt_policy *p;
	const char *top = getenv("top_srcdir");
	snprintf(path, sizeof(path), "%s/%s", top ? top : "..", rel);
	int rc = llmt_policy_load(path, &p, err, sizeof(err));
	if (rc != LLMT_POLICY_OK)
		fail_msg("%s: rc %d: %s", path, rc, err);
	return p;
}

static void test_sample(void **s)
{
	struct llmt_policy *p = load_src("etc/llm-train.yaml");
	assert_false(p->builtin);
	assert_int_equal(p->defaults.tp, 1);
	assert_int_equal(p->defaults.dp, 0);
	assert_int_equal(p->defaults.ckpt_interval.kind, LLMT_IVAL_AUTO);
	assert_string_equal(p->defaults.nccl_profile, "ib");
	assert_int_equal(p->limits.max_restarts, 10);
	assert_int_equal(p->limits.nroots, 2);
	assert_string_equal(p->limits.ckpt_roots[1], "/scratch");
	assert_int_equal(p->limits.npartitions, 2);
	assert_int_equal(p->limits.partitions[0].max_gpus, 1024);
	assert_int_equal(p->nnode_types, 3);
	assert_int_equal(p->node_types[0].gpus_per_node, 8);
	assert_int_equal(p->node_types[0].nnics, 8);
	assert_string_equal(p->node_types[0].nics[7], "mlx5_3");
	assert_int_equal(p->node_types[1].nvlink_block, 72);
	assert_int_equal(p->topology.source, LLMT_TOPO_SLURM);
	assert_int_equal(p->nprofiles, 2);
	assert_string_equal(p->profiles[0].vars[0].name, "NCCL_IB_HCA");
	assert_string_equal(p->profiles[0].vars[0].value, "=${nic}:1");
	assert_true(p->health.ckpt_free_space.enabled);
	assert_true(p->health.ckpt_min_free_gib > 499.0);
	assert_int_equal(p->rendezvous.port_lo, 20000);
	assert_int_equal(p->rendezvous.port_hi, 29999);
	const struct llmt_node_type *t = llmt_policy_node_type(p, "nvl017");
	assert_non_null(t);
	assert_string_equal(t->name, "gb200");
	assert_null(llmt_policy_node_type(p, "gpu999"));
	assert_non_null(llmt_policy_profile(p, "tcp"));
	assert_null(llmt_policy_profile(p, "nope"));
	char buf[256];
	assert_int_equal(llmt_policy_topology_path(p, "/x/etc/slurm.conf", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/etc/topology.conf");
	assert_int_equal(llmt_policy_topology_path(p, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/etc/slurm/topology.conf");
	llmt_policy_free(p);
}

static void test_cluster_policy(void **s)
{
	struct llmt_policy *p = load_src("tests/spank/cluster-policy.yaml");
	const struct llmt_node_type *t = llmt_policy_node_type(p, "node3");
	assert_non_null(t);
	assert_int_equal(t->gpus_per_node, 0);
	assert_string_equal(p->defaults.nccl_profile, "cpu");
	int tmp = 0;
	for (unsigned i = 0; i < p->limits.nroots; i++)
		tmp |= !strcmp(p->limits.ckpt_roots[i], "/tmp");
	assert_true(tmp);
	llmt_policy_free(p);
}

static void expect_error(const char *text, const char *must)
{
	struct llmt_policy *p = (void *)1;
	char err[512] = "";
	int rc = llmt_policy_parse(text, strlen(text), "pol.yaml", &p, err, sizeof(err));
	if (rc != LLMT_POLICY_ERROR)
		fail_msg("accepted: %s", text);
	assert_null(p);
	if (!strstr(err, must))
		fail_msg("message '%s' lacks '%s' (policy: %s)", err, must, text);
}

static void test_errors(void **s)
{
	/* malformed YAML: file:line:column */
	expect_error("defaults:\n  tp: [1, 2\n", "pol.yaml:3:");
	expect_error("defaults:\n\ttp: 1\n", "pol.yaml:2:1:");
	/* unknown keys, at their position */
	expect_error("defaults:\n  tpp: 2\n", "pol.yaml:2:3: unknown key 'tpp'");
	expect_error("bogus: 1\n", "pol.yaml:1:1: unknown key 'bogus'");
	expect_error("health:\n  gpu_count: {enabled: true, timeuot: 3}\n", "timeuot");
	/* values */
	expect_error("defaults:\n  tp: 0\n", "pol.yaml:2:7:");
	expect_error("defaults:\n  tp: two\n", "'two'");
	expect_error("defaults:\n  restarts: 99999999999999999999\n", "out of range");
	expect_error("defaults:\n  ckpt_interval: 5x\n", "5x");
	expect_error("defaults: {tp: 1, tp: 2}\n", "given twice");
	expect_error("limits:\n  ckpt_roots: [relative]\n", "relative");
	expect_error("limits:\n  ckpt_roots: [/a/../b]\n", "/a/../b");
	expect_error("limits:\n  ckpt_roots: /a\n", "must be a list");
	expect_error("node_types:\n  - {name: x, nodes: 'n[3-1]'}\n", "node_types.nodes");
	expect_error("node_types:\n  - {name: x}\n", "needs name and nodes");
	expect_error("node_types:\n  - {name: x, nodes: n1, gpus_per_node: 4, nvlink: 6}\n", "multiple");
	expect_error("node_types:\n  - {name: x, nodes: n1}\n  - {name: x, nodes: n2}\n", "twice");
	expect_error("nccl_profiles:\n  a: {IB_HCA: x}\n", "IB_HCA");
	expect_error("nccl_profiles:\n  a: {NCCL_IB_HCA: '${foo}'}\n", "${foo}");
	expect_error("nccl_profiles:\n  a: {NCCL_IB_HCA: '${nic'}\n", "unterminated");
	expect_error("defaults: {nccl_profile: missing}\n", "missing");
	expect_error("defaults: {restarts: 50}\n", "max_restarts");
	expect_error("topology: {source: relative.conf}\n", "topology.source");
	expect_error("health: {ckpt_free_space: {min_gib: 5}}\n", "ckpt_roots");
	expect_error("health: {xid_scan: {timeout: 601}}\n", "601");
	expect_error("- a\n- b\n", "must be a mapping");
	expect_error("rendezvous:\n  fallback_ports: 29999-20000\n", "pol.yaml:2:19: rendezvous.fallback_ports '29999-20000': range 29999-20000 runs backwards");
	expect_error("rendezvous: {fallback_ports: 70000}\n", "'70000'");
	expect_error("rendezvous: {fallback_ports: '20000,20005'}\n", "not a list");
	expect_error("rendezvous: {fallback_ports: [20000]}\n", "LO-HI");
	expect_error("rendezvous: {port: 20000}\n", "unknown key 'port'");
	{
		static char big[16384];
		size_t off = (size_t)snprintf(big, sizeof(big), "nccl_profiles:\n  p:\n");
		for (int i = 0; i < 300; i++)
			off += (size_t)snprintf(big + off, sizeof(big) - off, "    NCCL_X%d: a\n", i);
		expect_error(big, "more than 256 keys");
	}
	expect_error("defaults: {tp: 1}\n---\ndefaults: {tp: 2}\n", "second YAML document");
}

static void test_missing_and_empty(void **s)
{
	struct llmt_policy *p;
	char err[512];
	assert_int_equal(llmt_policy_load("/nonexistent/llm-train.yaml", &p, err, sizeof(err)),
			 LLMT_POLICY_DEFAULTS);
	assert_non_null(p);
	assert_true(p->builtin);
	assert_int_equal(p->defaults.tp, 1);
	assert_int_equal(p->limits.nroots, 0);
	assert_int_equal(p->limits.max_restarts, 10);
	assert_int_equal(p->rendezvous.port_lo, 20000);
	assert_int_equal(p->rendezvous.port_hi, 29999);
	llmt_policy_free(p);
	static const char rv[] = "rendezvous:\n  fallback_ports: 40000-40999\n";
	assert_int_equal(llmt_policy_parse(rv, strlen(rv), "r.yaml", &p, err, sizeof(err)), LLMT_POLICY_OK);
	assert_int_equal(p->rendezvous.port_lo, 40000);
	assert_int_equal(p->rendezvous.port_hi, 40999);
	llmt_policy_free(p);
	assert_int_equal(llmt_policy_parse("", 0, "e.yaml", &p, err, sizeof(err)), LLMT_POLICY_OK);
	assert_false(p->builtin);
	assert_int_equal(p->defaults.restarts, 3);
	llmt_policy_free(p);
	/* a directory is not a policy */
	assert_int_equal(llmt_policy_load("/", &p, err, sizeof(err)), LLMT_POLICY_ERROR);
	assert_null(p);
}

static void test_stat_check(void **s)
{
	struct stat st;
	char err[256];
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFREG | 0644;
	st.st_uid = 0;
	assert_int_equal(llmt_policy_check_stat(&st, "/p", err, sizeof(err)), 0);
	st.st_mode = S_IFREG | 0600;
	assert_int_equal(llmt_policy_check_stat(&st, "/p", err, sizeof(err)), 0);
	st.st_uid = 1000;
	assert_int_equal(llmt_policy_check_stat(&st, "/p", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "1000"));
	st.st_uid = 0;
	st.st_mode = S_IFREG | 0664;
	assert_int_equal(llmt_policy_check_stat(&st, "/p", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0664"));
	st.st_mode = S_IFREG | 0646;
	assert_int_equal(llmt_policy_check_stat(&st, "/p", err, sizeof(err)), -1);
	st.st_mode = S_IFDIR | 0755;
	assert_int_equal(llmt_policy_check_stat(&st, "/p", err, sizeof(err)), -1);
}

/* Issue 14 item 6 (fails on the old code, which accepted this and let
 * the first type silently win for n3 and n4): two node types matching one
 * node are refused naming both types and the file:line of each. */
static void test_overlapping_node_types(void **s)
{
	(void)s;
	expect_error("node_types:\n"
		     "  - {name: small, nodes: 'n[1-4]', gpus_per_node: 4}\n"
		     "  - {name: big, nodes: 'n[3-8]', gpus_per_node: 8}\n",
		     "pol.yaml:3:5: node n3 matches node types 'small' (pol.yaml:2) and 'big' (pol.yaml:3)");
	expect_error("node_types:\n"
		     "  - {name: a, nodes: 'x1,y[1-9]'}\n"
		     "  - {name: b, nodes: 'z1'}\n"
		     "  - {name: c, nodes: 'z[2-3],y9'}\n",
		     "node y9 matches node types 'a' (pol.yaml:2) and 'c' (pol.yaml:4)");
}

/* Issue 17: the wrapper's preflight asked by the policy, and the prolog's
 * self-test (off by default; command an absolute path) */
static void test_selftest_keys(void **state)
{
	(void)state;
	struct llmt_policy *p;
	char err[512];
	const char *y = "defaults: {preflight: true}\n"
			"health: {selftest: {timeout: 45, command: /opt/llm/bin/llm-train}}\n";
	assert_int_equal(llmt_policy_parse(y, strlen(y), "pol.yaml", &p, err, sizeof(err)), LLMT_POLICY_OK);
	assert_true(p->defaults.preflight);
	assert_true(p->health.selftest.enabled);
	assert_int_equal(p->health.selftest.timeout_s, 45);
	assert_string_equal(p->health.selftest_cmd, "/opt/llm/bin/llm-train");
	llmt_policy_free(p);
	assert_int_equal(llmt_policy_parse("", 0, "e.yaml", &p, err, sizeof(err)), LLMT_POLICY_OK);
	assert_false(p->defaults.preflight);
	assert_false(p->health.selftest.enabled);
	assert_int_equal(p->health.selftest.timeout_s, 60);
	llmt_policy_free(p);
	expect_error("health: {selftest: {command: llm-train}}\n", "not an absolute path");
	expect_error("health: {selftest: {command: /opt/../bin/llm-train}}\n", "not an absolute path");
	expect_error("health: {selftest: {timeout: 601}}\n", "timeout");
	expect_error("health: {selftest: {size: full}}\n", "enabled timeout command");
	expect_error("health: {xid_scan: {command: /bin/x}}\n", "enabled timeout");
	expect_error("defaults: {preflight: maybe}\n", "preflight");
}

/* libyaml's scanner is quadratic in the flow depth and its loader in the
 * anchors (a 1 MiB policy of '[' held slurmstepd and sbatch for minutes):
 * both are bounded before the document is loaded, with the place named. */
static void test_deep_and_anchors(void **s)
{
	(void)s;
	size_t n = 3000;
	char *t = malloc(2 * n + 16);
	assert_non_null(t);
	int k = sprintf(t, "defaults: ");
	memset(t + k, '[', n);
	memset(t + k + n, ']', n);
	t[k + 2 * n] = '\0';
	expect_error(t, "pol.yaml:1:");
	expect_error(t, "nested deeper than");
	free(t);
	char *a = malloc(20 * 400 + 64), *e = a;
	e += sprintf(e, "defaults: [");
	for (int i = 0; i < 400; i++)
		e += sprintf(e, "&a%d x, ", i);
	sprintf(e, "x]\n");
	expect_error(a, "more than");
	expect_error(a, "anchors");
	free(a);
	/* the schema's own depth and a few anchors still load */
	struct llmt_policy *p = NULL;
	char err[512];
	const char *deep_ok = "node_types:\n  - {name: a, nodes: \"n[1-2]\", nics: [lo]}\n"
			      "nccl_profiles: {p: &v {NCCL_X: \"1\"}, q: *v}\n";
	assert_int_equal(llmt_policy_parse(deep_ok, strlen(deep_ok), "pol.yaml", &p, err, sizeof(err)),
			 LLMT_POLICY_OK);
	llmt_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlapping_node_types),
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_cluster_policy),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_selftest_keys),
		cmocka_unit_test(test_missing_and_empty),
		cmocka_unit_test(test_stat_check),
		cmocka_unit_test(test_deep_and_anchors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
