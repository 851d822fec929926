/* llm-train-plan: the plugin's rank map offline. Given a node list, a
 * topology.conf, a policy and a layout, prints the map, its traffic per
 * step and the same figures for Slurm's default order (or JSON). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "llmt/exitcodes.h"
#include "hostlist.h"
#include "envgen.h"
#include "opts.h"
#include "plan.h"
#include "policy.h"
#include "topology.h"
#include "autoplan_main.h"

static const char usage[] =
"usage: llm-train-plan --nodes HOSTLIST --layout SPEC [options]\n"
"  --nodes HOSTLIST        the step's nodes, in Slurm's order (e.g. gpu[001-016])\n"
"  --layout SPEC           tp=N,pp=N,dp=N|auto and any other --llm-train key\n"
"                          (ckpt-dir, ckpt-interval, restarts, nccl)\n"
"  --tasks-per-node N      tasks on each node, or Slurm's form such as 8(x3),4 (default 1)\n"
"  --topology FILE         topology.conf (default: what the policy names)\n"
"  --policy FILE           admin policy (default " LLMT_DEFAULT_POLICY " if it exists)\n"
"  --no-policy             use the built-in defaults, not " LLMT_DEFAULT_POLICY "\n"
"  --model-params N --hidden N --layers N --seq N --micro-batch N --micro-batches N\n"
"                          the model the cost is computed for (default: 1.3B GPT)\n"
"  --env                   also print each task's environment\n"
"  --job-id N --step-id N  job and step for MASTER_PORT in --env (default 1, 0)\n"
"  --json                  the map as a JSON array of objects (rank, node,\n"
"                          local_rank, gpu, nic, tp, pp, dp, task[, env])\n"
"  --cost-json             both costs as one JSON object\n"
"  --no-map                text form without the per-rank table\n"
"Prints the plugin's topology-aware rank map, the bytes per step it sends\n"
"across nodes, leaf and spine switches, and the same for Slurm's default\n"
"order (rank = task id). Exit 0, or 64 with one line naming a bad value.\n";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "llm-train-plan: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(LLMT_EXIT_USAGE);
}

static unsigned long long num(const char *opt, const char *s, unsigned long long max)
{
	char *end;
	unsigned long long v;
	if (!s || !*s || *s == '-')
		die("%s needs a positive number", opt);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > max)
		die("%s: bad number '%s'", opt, s);
	return v;
}

static double gib(double b) { return b / (1024.0 * 1024 * 1024); }

static void print_cost(const char *title, const struct llmt_cost *c)
{
	printf("%s (GiB per step)\n", title);
	printf("  %-4s %14s %14s %14s %14s\n", "dim", "total", "cross-node", "cross-leaf", "cross-spine");
	for (int d = 0; d < LLMT_NDIMS; d++)
		printf("  %-4s %14.3f %14.3f %14.3f %14.3f\n", llmt_dim_name(d),
		       gib(c->bytes[d][0]), gib(c->bytes[d][1]), gib(c->bytes[d][2]), gib(c->bytes[d][3]));
	printf("  %-4s %14.3f %14.3f %14.3f %14.3f\n", "all",
	       gib(llmt_cost_level(c, 0)), gib(llmt_cost_level(c, 1)),
	       gib(llmt_cost_level(c, 2)), gib(llmt_cost_level(c, 3)));
}

static json_t *cost_json(const struct llmt_cost *c)
{
	json_t *o = json_object();
	for (int d = 0; d <= LLMT_NDIMS; d++) {
		json_t *x = json_object();
		for (int l = 0; l < LLMT_NLVLS; l++)
			json_object_set_new(x, llmt_lvl_name(l),
					    json_real(d < LLMT_NDIMS ? c->bytes[d][l] : llmt_cost_level(c, l)));
		json_object_set_new(o, d < LLMT_NDIMS ? llmt_dim_name(d) : "all", x);
	}
	return o;
}

/* The environment task t would get (as the plugin's remote context). */
static void task_env(const struct llmt_plan *plan, unsigned t, const struct llmt_opts *o,
		     const struct llmt_policy *pol, uint32_t job_id, uint32_t step_id,
		     struct llmt_env *out)
{
	const struct llmt_rm_task *x = &plan->map->task[t];
	struct llmt_env_input in;
	char err[512];
	memset(&in, 0, sizeof(in));
	in.task = x;
	in.layout = plan->map->layout;
	in.world_size = plan->ntasks;
	in.local_world_size = plan->nodes[x->node].ntasks;
	in.node_gpus = plan->nodes[x->node].gpus;
	in.nic = llmt_plan_nic(plan, t);
	in.master_addr = llmt_plan_master(plan);
	in.job_id = job_id;
	in.step_id = step_id;
	in.opts = o;
	in.policy = pol;
	if (llmt_envgen(&in, out, err, sizeof(err)))
		die("environment of task %u: %s", t, err);
}

static double pct(double ours, double theirs)
{
	return theirs > 0 ? 100.0 * (ours - theirs) / theirs : 0;
}

static int plan_main(int argc, char **argv);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--auto"))
			return llmt_autoplan_main(argc, argv);
	return plan_main(argc, argv);
}

static int plan_main(int argc, char **argv)
{
	enum { O_NODES = 256, O_TOPO, O_POLICY, O_LAYOUT, O_TPN, O_PARAMS, O_HIDDEN, O_LAYERS,
	       O_SEQ, O_MB, O_MBS, O_JSON, O_CJSON, O_NOMAP, O_HELP, O_NOPOL, O_ENV, O_JOB, O_STEP };
	static const struct option lo[] = {
		{ "nodes", required_argument, 0, O_NODES },
		{ "topology", required_argument, 0, O_TOPO },
		{ "policy", required_argument, 0, O_POLICY },
		{ "layout", required_argument, 0, O_LAYOUT },
		{ "tasks-per-node", required_argument, 0, O_TPN },
		{ "model-params", required_argument, 0, O_PARAMS },
		{ "hidden", required_argument, 0, O_HIDDEN },
		{ "layers", required_argument, 0, O_LAYERS },
		{ "seq", required_argument, 0, O_SEQ },
		{ "micro-batch", required_argument, 0, O_MB },
		{ "micro-batches", required_argument, 0, O_MBS },
		{ "json", no_argument, 0, O_JSON },
		{ "cost-json", no_argument, 0, O_CJSON },
		{ "no-map", no_argument, 0, O_NOMAP },
		{ "help", no_argument, 0, O_HELP },
		{ "no-policy", no_argument, 0, O_NOPOL },
		{ "env", no_argument, 0, O_ENV },
		{ "job-id", required_argument, 0, O_JOB },
		{ "step-id", required_argument, 0, O_STEP },
		{ 0, 0, 0, 0 },
	};
	const char *nodes = NULL, *topo_path = NULL, *pol_path = NULL, *layout_s = NULL;
	const char *tpn_s = "1";
	int json = 0, cjson = 0, nomap = 0, nopol = 0, env = 0, c;
	uint32_t job_id = 1, step_id = 0;
	struct llmt_cost_model cm;
	struct llmt_policy *pol = NULL;
	struct llmt_topology *topo = NULL;
	struct llmt_plan *plan = NULL;
	struct llmt_opts o;
	char err[1024];
	unsigned *tpn = NULL, uniform = 0;

	llmt_cost_model_default(&cm);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_NODES: nodes = optarg; break;
		case O_TOPO: topo_path = optarg; break;
		case O_POLICY: pol_path = optarg; break;
		case O_LAYOUT: layout_s = optarg; break;
		case O_TPN: tpn_s = optarg; break;
		case O_PARAMS: cm.params = (double)num("--model-params", optarg, 1ULL << 50); break;
		case O_HIDDEN: cm.hidden = (unsigned)num("--hidden", optarg, 1u << 20); break;
		case O_LAYERS: cm.layers = (unsigned)num("--layers", optarg, 1u << 16); break;
		case O_SEQ: cm.seq = (unsigned)num("--seq", optarg, 1u << 24); break;
		case O_MB: cm.micro_batch = (unsigned)num("--micro-batch", optarg, 1u << 16); break;
		case O_MBS: cm.micro_batches = (unsigned)num("--micro-batches", optarg, 1u << 20); break;
		case O_JSON: json = 1; break;
		case O_CJSON: cjson = 1; break;
		case O_NOMAP: nomap = 1; break;
		case O_HELP: fputs(usage, stdout); return 0;
		case O_NOPOL: nopol = 1; break;
		case O_ENV: env = 1; break;
		case O_JOB: job_id = (uint32_t)num("--job-id", optarg, 0xffffffffULL); break;
		case O_STEP: step_id = (uint32_t)num("--step-id", optarg, 0xffffffffULL) ; break;
		default:
			die("unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (!nodes)
		die("--nodes HOSTLIST is required");
	if (!layout_s)
		die("--layout tp=N,pp=N,dp=N is required");

	if (pol_path && nopol)
		die("--policy and --no-policy exclude each other");
	if (!pol_path && !nopol && access(LLMT_DEFAULT_POLICY, F_OK) == 0)
		pol_path = LLMT_DEFAULT_POLICY;
	if (pol_path) {
		int rc = llmt_policy_load(pol_path, &pol, err, sizeof(err));
		if (rc == LLMT_POLICY_DEFAULTS)
			die("%s: no such policy file", pol_path);
		if (rc != LLMT_POLICY_OK)
			die("%s", err);
	} else {
		pol = malloc(sizeof(*pol));
		if (!pol)
			die("out of memory");
		llmt_policy_defaults(pol);
	}
	char tbuf[LLMT_PATH_MAX];
	if (!topo_path && pol->topology.source != LLMT_TOPO_NONE &&
	    llmt_policy_topology_path(pol, getenv("SLURM_CONF"), tbuf, sizeof(tbuf)) == 0) {
		if (pol->topology.source == LLMT_TOPO_FILE || access(tbuf, F_OK) == 0)
			topo_path = tbuf;
		else
			fprintf(stderr, "llm-train-plan: note: %s not found: no topology (give --topology)\n", tbuf);
	}
	if (topo_path) {
		if (llmt_topology_load(topo_path, &topo, err, sizeof(err)))
			die("%s", err);
	}

	llmt_opts_init(&o);
	if (llmt_opts_parse_spec(&o, layout_s, err, sizeof(err)))
		die("--layout: %s", err);
	llmt_opts_apply_defaults(&o, pol);

	/* Count the nodes to size tasks-per-node. */
	{
		char (*names)[LLMT_HOST_MAX] = NULL;
		int n = llmt_hostlist_expand(nodes, LLMT_MAX_NODES, &names, err, sizeof(err));
		free(names);
		if (n <= 0)
			die("--nodes: %s", n == 0 ? "no nodes" : err);
		if (strspn(tpn_s, "0123456789") == strlen(tpn_s)) {
			uniform = (unsigned)num("--tasks-per-node", tpn_s, LLMT_MAX_TASKS);
		} else {
			tpn = calloc((size_t)n, sizeof(*tpn));
			if (!tpn)
				die("out of memory");
			if (llmt_tasks_per_node_parse(tpn_s, (unsigned)n, tpn, err, sizeof(err)))
				die("--tasks-per-node: %s", err);
		}
		struct llmt_job_info job = { 0 };
		job.nnodes = (unsigned)n;
		if (tpn)
			for (int i = 0; i < n; i++)
				job.ntasks += tpn[i];
		else
			job.ntasks = uniform * (unsigned)n;
		if (llmt_opts_validate(&o, pol, &job, err, sizeof(err)))
			die("%s", err);
	}
	struct llmt_layout L = { o.tp, o.pp, o.dp };
	if (llmt_plan_build(nodes, tpn, uniform, topo, pol, L, &cm, &plan, err, sizeof(err)))
		die("%s", err);

	if (json) {
		json_t *arr = json_array();
		for (unsigned r = 0; r < plan->ntasks; r++) {
			unsigned t = plan->map->task_of_rank[r];
			const struct llmt_rm_task *x = &plan->map->task[t];
			json_t *e = json_pack("{s:I,s:s,s:I,s:I,s:s,s:I,s:I,s:I,s:I}",
					      "rank", (json_int_t)x->rank,
					      "node", plan->names[x->node],
					      "local_rank", (json_int_t)x->local_rank,
					      "gpu", (json_int_t)x->gpu,
					      "nic", llmt_plan_nic(plan, t),
					      "tp", (json_int_t)x->tp_rank,
					      "pp", (json_int_t)x->pp_rank,
					      "dp", (json_int_t)x->dp_rank,
					      "task", (json_int_t)t);
			if (!e)
				die("out of memory");
			if (env) {
				static struct llmt_env ev;
				json_t *eo = json_object();
				task_env(plan, t, &o, pol, job_id, step_id, &ev);
				for (unsigned i = 0; i < ev.n; i++)
					json_object_set_new(eo, ev.var[i].name, json_string(ev.var[i].value));
				json_object_set_new(e, "env", eo);
			}
			if (json_array_append_new(arr, e))
				die("out of memory");
		}
		if (json_dumpf(arr, stdout, JSON_COMPACT) || fputc('\n', stdout) == EOF)
			die("cannot write JSON");
		json_decref(arr);
	} else if (cjson) {
		json_t *obj = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:b}",
					"order", llmt_rm_order_name(plan->map->order),
					"nodes", (json_int_t)plan->nnodes,
					"tasks", (json_int_t)plan->ntasks,
					"tp", (json_int_t)L.tp, "pp", (json_int_t)L.pp, "dp", (json_int_t)L.dp,
					"map", cost_json(&plan->cost),
					"slurm_feasible", plan->slurm_feasible);
		json_object_set_new(obj, "slurm", cost_json(&plan->slurm_cost));
		json_dumpf(obj, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(obj);
	} else {
		printf("llm-train-plan: %u nodes, %u tasks, tp=%u pp=%u dp=%u, order %s, master %s\n",
		       plan->nnodes, plan->ntasks, L.tp, L.pp, L.dp,
		       llmt_rm_order_name(plan->map->order), llmt_plan_master(plan));
		if (!nomap) {
			printf("%8s %-20s %5s %4s %-12s %6s %6s %6s %8s\n", "rank", "node", "local", "gpu",
			       "nic", "tp", "pp", "dp", "task");
			for (unsigned r = 0; r < plan->ntasks; r++) {
				unsigned t = plan->map->task_of_rank[r];
				const struct llmt_rm_task *x = &plan->map->task[t];
				printf("%8u %-20s %5u %4d %-12s %6u %6u %6u %8u\n", x->rank,
				       plan->names[x->node], x->local_rank, (int)x->gpu,
				       *llmt_plan_nic(plan, t) ? llmt_plan_nic(plan, t) : "-",
				       x->tp_rank, x->pp_rank, x->dp_rank, t);
				if (env) {
					static struct llmt_env ev;
					task_env(plan, t, &o, pol, job_id, step_id, &ev);
					for (unsigned i = 0; i < ev.n; i++)
						printf("           %s=%s\n", ev.var[i].name, ev.var[i].value);
				}
			}
		}
		print_cost("this map", &plan->cost);
		if (plan->slurm_feasible) {
			print_cost("Slurm's default order", &plan->slurm_cost);
			printf("change vs Slurm: cross-node %+.1f%%, cross-leaf %+.1f%%, cross-spine %+.1f%%\n",
			       pct(llmt_cost_level(&plan->cost, 1), llmt_cost_level(&plan->slurm_cost, 1)),
			       pct(llmt_cost_level(&plan->cost, 2), llmt_cost_level(&plan->slurm_cost, 2)),
			       pct(llmt_cost_level(&plan->cost, 3), llmt_cost_level(&plan->slurm_cost, 3)));
		} else {
			printf("Slurm's default order is not feasible: it would split a TP group across an NVLink domain\n");
		}
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "llm-train-plan: write error\n");
		return LLMT_EXIT_IO;
	}
	llmt_plan_free(plan);
	llmt_topology_free(topo);
	llmt_policy_free(pol);
	free(tpn);
	return 0;
}
