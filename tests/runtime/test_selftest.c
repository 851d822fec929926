/* test_selftest.c: the self-test's pure logic: medians, the node and link
 * verdicts (slow against the median and the expected figures, links
 * attributed to the node they come from), the golden comparison and the
 * JSON report (parsed back with jansson) and per-node line. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "selftest/st_golden.h"
#include "selftest/st_report.h"

static void test_median(void **st)
{
	double a[] = { 5, 1, 3 }, b[] = { 4, 1, 3, 2 }, c[] = { 7 };

	(void)st;
	assert_true(llmt_st_median(a, 3) == 3);
	assert_true(a[0] == 5 && a[1] == 1);                  /* not reordered */
	assert_true(llmt_st_median(b, 4) == 2.5);
	assert_true(llmt_st_median(c, 1) == 7);
	assert_true(llmt_st_median(NULL, 0) == 0);
}

/* four nodes with the given compute times, every node 100 GFLOP/s-ish */
static void four(llmt_st_report *r, llmt_st_node *n, const double *compute)
{
	memset(r, 0, sizeof(*r));
	memset(n, 0, sizeof(*n) * 4);
	for (int i = 0; i < 4; i++) {
		snprintf(n[i].node, sizeof(n[i].node), "node%d", i + 1);
		n[i].ranks[0] = i;
		n[i].nranks = 1;
		n[i].compute_s = compute[i];
		n[i].gflops = 10 / compute[i];
		n[i].membw_gbs = 30;
		n[i].golden = 1;
		snprintf(n[i].path, sizeof(n[i].path), "avx512-bf16");
	}
	r->nodes = n;
	r->nnodes = 4;
	r->slow_factor = 1.5;
	r->link_factor = 4;
	r->size = "small";
}

static void test_judge_compute(void **st)
{
	llmt_st_report r;
	llmt_st_node n[4];
	double even[] = { 0.10, 0.11, 0.12, 0.13 }, one[] = { 0.10, 0.10, 0.16, 0.10 },
		edge[] = { 0.10, 0.10, 0.149, 0.10 };

	(void)st;
	four(&r, n, even);
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 0);
	for (int i = 0; i < 4; i++)
		assert_string_equal(n[i].verdict, "ok");
	four(&r, n, one);                                     /* 1.6 x the median: slow */
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 1);
	assert_true(n[2].slow);
	assert_string_equal(n[2].verdict, "slow");
	assert_true(r.median_compute_s == 0.10);
	four(&r, n, edge);                                    /* 1.49 x: not slow */
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 0);
	r.slow_factor = 1.4;                                  /* --slow-factor */
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 1);
	/* expected figures: every node below 1/F of them */
	four(&r, n, even);
	r.expect_gflops = 200;
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 4);
	r.expect_gflops = 0;
	n[1].membw_gbs = 5;                                   /* memory: the expected figure only */
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 0);
	r.expect_membw = 20;
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 1);
	assert_string_equal(n[1].verdict, "slow");
	/* wrong answers win over slow */
	n[1].wrong = 1;
	llmt_st_judge(&r);
	assert_string_equal(n[1].verdict, "wrong");
}

static void test_judge_links(void **st)
{
	llmt_st_report r;
	llmt_st_node n[4];
	llmt_st_link l[16];
	double even[] = { 0.1, 0.1, 0.1, 0.1 };
	int k = 0;

	(void)st;
	four(&r, n, even);
	/* every directed pair, then the ring; links from node 4 (index 3) slow */
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 4; b++)
			if (a != b)
				l[k++] = (llmt_st_link){ a, b, 0, a == 3 ? 0.5 : 40 + a + b, 8, 0 };
	for (int a = 0; a < 4; a++) /* ring: into node 4 also paced by its delay */
		l[k++] = (llmt_st_link){ a, (a + 1) % 4, 1, a == 3 || a == 2 ? 0.4 : 30, 10, 0 };
	r.links = l;
	r.nlinks = k;
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 1);
	assert_true(n[3].links_slow);
	assert_false(n[3].slow);
	assert_string_equal(n[3].verdict, "slow");
	assert_false(n[2].links_slow);                        /* 1 of its 4 links: not most */
	assert_true(l[14].slow);                              /* ring 3 -> 4 */
	assert_false(l[0].slow);
	/* a link at a third of the median is not slow with the default factor 4 */
	for (int i = 0; i < k; i++)
		l[i].gbps = l[i].from == 3 && !l[i].ring ? 15 : 45;
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 0);
	r.link_factor = 2;
	llmt_st_judge(&r);
	assert_int_equal(r.nbad, 1);
	assert_true(n[3].links_slow);
	/* two nodes: only the link from the bad one is slow, its ring link too */
	r.nnodes = 2;
	l[0] = (llmt_st_link){ 0, 1, 0, 40, 8, 0 };
	l[1] = (llmt_st_link){ 1, 0, 0, 0.3, 8, 0 };
	l[2] = (llmt_st_link){ 1, 0, 1, 0.3, 8, 0 };
	l[3] = (llmt_st_link){ 0, 1, 1, 0.3, 8, 0 };
	r.nlinks = 4;
	r.link_factor = 4;
	llmt_st_judge(&r);
	assert_false(n[0].links_slow);
	assert_true(n[1].links_slow);
	assert_int_equal(r.nbad, 1);
}

static void test_golden(void **st)
{
	llmt_st_golden g = { "p", "small", 0x1234, 1e-3 };

	(void)st;
	assert_int_equal(llmt_st_golden_check(NULL, 1, 1), 0);
	assert_int_equal(llmt_st_golden_check(&g, 0x1234, 1e-3), 1);
	assert_int_equal(llmt_st_golden_check(&g, 0x1234, 1e-3 * (1 + 5e-5)), 1);  /* within 1e-4 */
	assert_int_equal(llmt_st_golden_check(&g, 0x1234, 1e-3 * (1 + 2e-4)), -1);
	assert_int_equal(llmt_st_golden_check(&g, 0x1235, 1e-3), -1);             /* one bit */
	assert_null(llmt_st_golden_find("no such path", "small"));
	/* the table holds this machine's paths, both sizes */
	assert_non_null(llmt_st_golden_find("avx512-bf16 dnnl-2.6.3 isa-0xe7", "small"));
	assert_non_null(llmt_st_golden_find("generic dnnl-2.6.3 isa-0xe7", "full"));
}

static void test_json(void **st)
{
	llmt_st_report r;
	llmt_st_node n[4];
	llmt_st_link l[2];
	double one[] = { 0.10, 0.10, 0.30, 0.10 };
	char *buf = NULL, line[512];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_error_t e;
	json_t *o, *nodes, *bad;

	(void)st;
	four(&r, n, one);
	snprintf(n[1].node, sizeof(n[1].node), "we\"ird\\name");
	n[0].wrong = 1;
	n[0].golden = -1;
	l[0] = (llmt_st_link){ 0, 1, 0, 40, 8.5, 0 };
	l[1] = (llmt_st_link){ 1, 0, 1, 41, 9.5, 0 };
	r.links = l;
	r.nlinks = 2;
	r.elapsed_s = 3.5;
	llmt_st_judge(&r);
	assert_int_equal(llmt_st_json(&r, f), 0);
	fclose(f);
	o = json_loads(buf, 0, &e);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "version")), 1);
	assert_string_equal(json_string_value(json_object_get(o, "size")), "small");
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "bad");
	assert_true(json_real_value(json_object_get(o, "elapsed_s")) == 3.5);
	nodes = json_object_get(o, "nodes");
	assert_int_equal(json_array_size(nodes), 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 1), "node")), "we\"ird\\name");
	assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0), "answers")), "wrong");
	assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0), "golden")), "mismatch");
	assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 2), "verdict")), "slow");
	assert_true(json_is_true(json_object_get(json_array_get(nodes, 2), "slow")));
	assert_int_equal(json_integer_value(json_array_get(json_object_get(json_array_get(nodes, 3), "ranks"), 0)), 3);
	bad = json_object_get(o, "bad_nodes");
	assert_int_equal(json_array_size(bad), 2);
	assert_string_equal(json_string_value(json_array_get(bad, 0)), "node1");
	assert_string_equal(json_string_value(json_array_get(bad, 1)), "node3");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "links"), 1), "test")), "ring");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "links"), 0), "to")),
		"we\"ird\\name");
	json_decref(o);
	free(buf);
	llmt_st_line(&r, 2, line, sizeof(line));
	assert_non_null(strstr(line, "node node3: slow"));
	assert_non_null(strstr(line, "3.00 x median"));
	/* all ok */
	four(&r, n, (double[]){ 0.1, 0.1, 0.1, 0.1 });
	llmt_st_judge(&r);
	f = open_memstream(&buf, &len);
	assert_int_equal(llmt_st_json(&r, f), 0);
	fclose(f);
	o = json_loads(buf, 0, &e);
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "ok");
	assert_int_equal(json_array_size(json_object_get(o, "bad_nodes")), 0);
	json_decref(o);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_judge_compute),
		cmocka_unit_test(test_judge_links),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
