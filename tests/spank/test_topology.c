/* Unit tests of spank/topology.c: tree and block lines, levels, parents,
 * comments and continuation lines, and every malformed case refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"

static struct llmt_topology *parse(const char *text)
{
	struct llmt_topology *t;
	char err[512];
	if (llmt_topology_parse(text, strlen(text), "t.conf", &t, err, sizeof(err)))
		fail_msg("%s", err);
	return t;
}

static void test_tree(void **s)
{
	struct llmt_topology *t = parse(
		"# a three-level tree; leaves hold interleaved names\n"
		"SwitchName=leaf0 Nodes=n[1,3,5,7] LinkSpeed=100\n"
		"SwitchName=leaf1 Nodes=n[2,4,6,8]\n"
		"SwitchName=leaf2 Nodes=m[01-04]\n"
		"switchname=spine0 Switches=leaf[0-1]\n"
		"SwitchName=spine1 \\\n   Switches=leaf2\n"
		"SwitchName=core Switches=spine[0-1]   # the top\n");
	assert_int_equal(t->nnodes, 12);
	assert_int_equal(t->nswitches, 6);
	const struct llmt_topo_node *a = llmt_topology_find(t, "n3"), *b = llmt_topology_find(t, "n4"),
		*c = llmt_topology_find(t, "m02");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_string_equal(t->switches[a->leaf].name, "leaf0");
	assert_string_equal(t->switches[b->leaf].name, "leaf1");
	assert_int_equal(a->spine, b->spine);
	assert_string_equal(t->switches[a->spine].name, "spine0");
	assert_string_equal(t->switches[c->spine].name, "spine1");
	assert_int_equal(a->block, -1);
	assert_int_equal(t->switches[a->leaf].level, 0);
	assert_int_equal(t->switches[a->spine].level, 1);
	assert_int_equal(t->switches[5].level, 2);
	assert_int_equal(t->switches[5].parent, -1);
	assert_null(llmt_topology_find(t, "n9"));
	/* names sorted for lookup */
	for (unsigned i = 1; i < t->nnodes; i++)
		assert_true(strcmp(t->nodes[i - 1].name, t->nodes[i].name) < 0);
	llmt_topology_free(t);
}

static void test_blocks(void **s)
{
	struct llmt_topology *t = parse(
		"BlockName=rack1 Nodes=nvl[01-04]\n"
		"BlockName=rack2 Nodes=nvl[05-08]\n"
		"BlockSizes=4,8\n"
		"SwitchName=s1 Nodes=nvl[01-08]\n");
	const struct llmt_topo_node *x = llmt_topology_find(t, "nvl06");
	assert_non_null(x);
	assert_int_equal(t->nblocks, 2);
	assert_string_equal(t->blocks[x->block], "rack2");
	assert_string_equal(t->switches[x->leaf].name, "s1");
	assert_int_equal(x->spine, -1);
	llmt_topology_free(t);
}

static void expect_error(const char *text, const char *must)
{
	struct llmt_topology *t = (void *)1;
	char err[512] = "";
	if (llmt_topology_parse(text, strlen(text), "t.conf", &t, err, sizeof(err)) != -1)
		fail_msg("accepted: %s", text);
	assert_null(t);
	if (!strstr(err, must))
		fail_msg("message '%s' lacks '%s'", err, must);
}

static void test_errors(void **s)
{
	expect_error("SwitchName=a Nodes=n1\nFoo=1\n", "t.conf:2: unknown key 'Foo'");
	expect_error("SwitchName=a Nodes=n1 junk\n", "junk");
	expect_error("SwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n", "n1 is already under switch a");
	expect_error("BlockName=a Nodes=n1\nBlockName=b Nodes=n[0-1]\n", "already in block a");
	expect_error("SwitchName=a Switches=zz\n", "unknown switch 'zz'");
	expect_error("SwitchName=a Nodes=n1\nSwitchName=b Switches=a\nSwitchName=c Switches=a\n", "two parents");
	expect_error("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "cycle");
	expect_error("SwitchName=a Nodes=n[3-1]\n", "t.conf:1:");
	expect_error("SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n", "defined twice");
	expect_error("SwitchName=a/b Nodes=n1\n", "bad switch name");
	expect_error("Nodes=n1\n", "without SwitchName");
	expect_error("SwitchName=a BlockName=b Nodes=n1\n", "on one line");
	expect_error("BlockName=b\n", "no Nodes");
}

static void test_load(void **s)
{
	struct llmt_topology *t;
	char err[512];
	assert_int_equal(llmt_topology_load("/nonexistent/topology.conf", &t, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/topology.conf"));
	t = llmt_topology_empty();
	assert_null(llmt_topology_find(t, "n1"));
	llmt_topology_free(t);
}

/* Issue 14 item 2: the cycle check and the levels are one linear pass
 * (the old per-switch walk up was quadratic: 4.6 s of root CPU for a
 * 65,536-switch chain, which a user could hand slurmstepd, against 0.15 s
 * now); the result is the same: levels along the chain, and a cycle on
 * top of it refused. 4096 switches keep the test quick under ASan (each
 * Switches= goes through libslurm's hostlist). */
static void test_long_chain(void **s)
{
	(void)s;
	unsigned n = 4096;
	size_t cap = (size_t)n * 40 + 64;
	char *text = malloc(cap);
	assert_non_null(text);
	size_t k = (size_t)snprintf(text, cap, "SwitchName=s0 Nodes=n1\n");
	for (unsigned i = 1; i < n; i++)
		k += (size_t)snprintf(text + k, cap - k, "SwitchName=s%u Switches=s%u\n", i, i - 1);
	struct llmt_topology *t = parse(text);
	assert_int_equal(t->nswitches, n);
	assert_int_equal(t->switches[0].level, 0);
	assert_int_equal(t->switches[n - 1].level, (int)n - 1);
	llmt_topology_free(t);
	/* close the chain into a cycle: s1 under the top as well */
	snprintf(text, cap, "SwitchName=s0 Nodes=n1\nSwitchName=s1 Switches=s0,s%u\n", n - 1);
	k = strlen(text);
	for (unsigned i = 2; i < n; i++)
		k += (size_t)snprintf(text + k, cap - k, "SwitchName=s%u Switches=s%u\n", i, i - 1);
	char err[512];
	assert_int_not_equal(llmt_topology_parse(text, k, "t.conf", &t, err, sizeof(err)), 0);
	if (!strstr(err, "cycle"))
		fail_msg("%s", err);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_chain),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
