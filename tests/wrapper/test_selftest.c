/* Unit tests of wrapper/selftest.c: the self-test report (doc/contracts.md)
 * as the preflight reads it (bad nodes from bad_nodes and from verdicts,
 * figures kept as evidence, malformed reports refused) and when the
 * preflight runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "wrapper/selftest.h"

static const char report[] =
	"{\"version\":1,\"size\":\"small\",\"elapsed_s\":2.5,\"median_gflops\":40.0,"
	"\"nodes\":[{\"node\":\"node1\",\"ranks\":[0],\"answers\":\"ok\",\"gflops\":41,\"membw_gbs\":9,"
	"\"compute_s\":0.5,\"slow\":false,\"verdict\":\"ok\"},"
	"{\"node\":\"node2\",\"ranks\":[1],\"answers\":\"ok\",\"gflops\":13,\"membw_gbs\":8,"
	"\"compute_s\":1.5,\"slow\":true,\"verdict\":\"slow\"},"
	"{\"node\":\"node3\",\"ranks\":[2],\"answers\":\"wrong\",\"gflops\":40,\"membw_gbs\":9,"
	"\"compute_s\":0.5,\"slow\":false,\"verdict\":\"wrong\"}],"
	"\"links\":[],\"bad_nodes\":[\"node2\",\"node3\"],\"verdict\":\"bad\"}";

static void parse_report(void **st)
{
	(void)st;
	static struct wr_selftest r;
	char err[200];
	assert_int_equal(wr_selftest_parse(report, &r, err, sizeof err), 0);
	assert_int_equal(r.n, 3);
	assert_false(r.ok);
	assert_int_equal(r.bad.n, 2);
	assert_true(wr_nodes_has(&r.bad, "node2"));
	assert_true(wr_nodes_has(&r.bad, "node3"));
	const struct wr_selftest_node *n = wr_selftest_find(&r, "node3");
	assert_non_null(n);
	assert_true(n->wrong);
	assert_false(n->slow);
	n = wr_selftest_find(&r, "node2");
	assert_true(n->slow);
	assert_false(n->wrong);
	assert_true(n->gflops == 13 && n->compute_s == 1.5);
	assert_true(r.median_gflops == 40);
	assert_null(wr_selftest_find(&r, "node9"));

	/* a verdict not ok counts even when bad_nodes forgot it */
	char t[2048];
	snprintf(t, sizeof t, "%s", report);
	char *b = strstr(t, "[\"node2\",\"node3\"]");
	memcpy(b, "[\"node2\"]        ", 17);
	assert_int_equal(wr_selftest_parse(t, &r, err, sizeof err), 0);
	assert_int_equal(r.bad.n, 2);

	const char *clean = "{\"version\":1,\"nodes\":[{\"node\":\"n1\",\"verdict\":\"ok\"}],\"bad_nodes\":[],"
	                    "\"verdict\":\"ok\"}";
	assert_int_equal(wr_selftest_parse(clean, &r, err, sizeof err), 0);
	assert_true(r.ok);
	assert_int_equal(r.bad.n, 0);
}

static void bad_reports(void **st)
{
	(void)st;
	static struct wr_selftest r;
	char err[200];
	static const char *const bad[] = {
		"", "[1]", "not json", "{\"version\":2,\"nodes\":[],\"bad_nodes\":[],\"verdict\":\"ok\"}",
		"{\"version\":1,\"bad_nodes\":[],\"verdict\":\"ok\"}",
		"{\"version\":1,\"nodes\":[{\"verdict\":\"ok\"}],\"bad_nodes\":[],\"verdict\":\"ok\"}",
		"{\"version\":1,\"nodes\":[],\"bad_nodes\":[3],\"verdict\":\"bad\"}",
		"{\"version\":1,\"nodes\":[],\"bad_nodes\":[]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		if (wr_selftest_parse(bad[i], &r, err, sizeof err) != -1 || !err[0])
			fail_msg("accepted: %s", bad[i]);
	}
}

static void when_wanted(void **st)
{
	(void)st;
	assert_false(wr_preflight_wanted(-1, 0, false));
	assert_true(wr_preflight_wanted(-1, 1, false));
	assert_true(wr_preflight_wanted(-1, 0, true));
	assert_false(wr_preflight_wanted(0, 2, true));   /* --no-preflight wins */
	assert_true(wr_preflight_wanted(1, 0, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_report), cmocka_unit_test(bad_reports), cmocka_unit_test(when_wanted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
