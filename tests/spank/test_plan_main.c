/* Unit tests of spank/plan_main.c's steps (llm-train-plan), each with
 * plain inputs: the command line into struct plan_run and its starting
 * values, the inputs (no policy, a topology file), the layout and tasks
 * per node, the plan, and the two JSON forms it prints. The source is
 * included with main renamed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define main plan_main
#include "spank/plan_main.c"
#undef main

static void parse(struct plan_run *r, char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	optind = 0;   /* glibc: start getopt afresh */
	plan_run_start(r);
	assert_int_equal(parse_args(argc, argv, r), 0);
}

static void start_and_args(void **st)
{
	(void)st;
	struct plan_run r;
	plan_run_start(&r);
	assert_string_equal(r.tpn_s, "1");
	assert_int_equal(r.job_id, 1);
	assert_int_equal(r.step_id, 0);
	assert_null(r.nodes);
	assert_null(r.plan);
	assert_true(r.cm.hidden > 0);   /* the default model */
	char *argv[] = { "llm-train-plan", "--nodes", "n[1-4]", "--layout", "tp=2,pp=1,dp=auto",
			 "--tasks-per-node", "2(x3),2", "--json", "--hidden", "1024", "--job-id", "7",
			 "--no-policy", NULL };
	parse(&r, argv);
	assert_string_equal(r.nodes, "n[1-4]");
	assert_string_equal(r.layout_s, "tp=2,pp=1,dp=auto");
	assert_string_equal(r.tpn_s, "2(x3),2");
	assert_int_equal(r.json, 1);
	assert_int_equal(r.cjson, 0);
	assert_int_equal(r.nopol, 1);
	assert_int_equal(r.cm.hidden, 1024);
	assert_int_equal(r.job_id, 7);
}

static void plan_from_inputs(void **st)
{
	(void)st;
	char topo[] = "/tmp/test_plan_main.XXXXXX";
	int fd = mkstemp(topo);
	assert_true(fd >= 0);
	const char conf[] = "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\n"
			    "SwitchName=top Switches=s[1-2]\n";
	assert_int_equal(write(fd, conf, sizeof conf - 1), (ssize_t)(sizeof conf - 1));
	close(fd);
	char *argv[] = { "llm-train-plan", "--nodes", "n[1-4]", "--layout", "tp=2,pp=1,dp=auto",
			 "--tasks-per-node", "2(x3),2", "--no-policy", "--topology", topo, NULL };
	struct plan_run r;
	parse(&r, argv);
	load_inputs(&r);
	assert_non_null(r.pol);
	assert_non_null(r.topo);
	plan_layout(&r);
	assert_non_null(r.tpn);
	for (int i = 0; i < 4; i++)
		assert_int_equal(r.tpn[i], 2);
	assert_int_equal(r.L.tp, 2);
	assert_int_equal(r.L.pp, 1);
	assert_int_equal(r.L.dp, 4);   /* auto: 8 tasks / tp 2 */
	build_plan(&r);
	assert_int_equal(r.plan->ntasks, 8);
	assert_int_equal(r.plan->nnodes, 4);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	print_map_json(&r, f);
	fclose(f);
	json_t *a = json_loads(buf, 0, NULL);
	assert_non_null(a);
	assert_int_equal(json_array_size(a), 8);
	for (size_t i = 0; i < 8; i++) {
		json_t *e = json_array_get(a, i);
		assert_int_equal(json_integer_value(json_object_get(e, "rank")), (json_int_t)i);
		/* a TP pair shares its node */
		if (i % 2)
			assert_string_equal(json_string_value(json_object_get(e, "node")),
					    json_string_value(json_object_get(json_array_get(a, i - 1), "node")));
	}
	json_decref(a);
	free(buf);

	f = open_memstream(&buf, &len);
	print_cost_json(&r, f);
	fclose(f);
	json_t *o = json_loads(buf, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "dp")), 4);
	assert_non_null(json_object_get(json_object_get(o, "map"), "all"));
	assert_non_null(json_object_get(o, "slurm"));
	json_decref(o);
	free(buf);
	plan_run_free(&r);
	assert_null(r.plan);
	unlink(topo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(start_and_args),
		cmocka_unit_test(plan_from_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
