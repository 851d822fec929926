/* llm-train-plan: the plugin's rank map offline. Given a node list, a
 * topology.conf, a policy and a layout, prints the map, its traffic per
 * step and the same figures for Slurm's default order (or JSON). main
 * runs named steps on one struct plan_run whose starting values are in
 * one initializer (plan_run_start); tests/spank/test_plan_main.c runs
 * each step with plain inputs. */
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
"  --job-id N --step-id N  job and step for MASTER_PORT in --env (default 1, 0):\n"
"                          the fallback hash (a step with reserved ports takes its last)\n"
"  --json                  the map as a JSON array of objects (rank, node,\n"
"                          local_rank, gpu, nic, tp, pp, dp, task[, env])\n"
"  --cost-json             both costs as one JSON object\n"
"  --no-map                text form without the per-rank table\n"
"llm-train-plan --auto --help: the automatic layout for a model and an allocation.\n"
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
	struct llmt_env_input in;
	char err[512];
	llmt_plan_env_input(plan, t, o, pol, job_id, step_id, &in);
	if (llmt_envgen(&in, out, err, sizeof(err)))
		die("environment of task %u: %s", t, err);
}

static double pct(double ours, double theirs)
{
	return theirs > 0 ? 100.0 * (ours - theirs) / theirs : 0;
}

/* Everything one run of the command carries */
struct plan_run {
	/* the command line */
	const char *nodes, *topo_path, *pol_path, *layout_s, *tpn_s;
	int json, cjson, nomap, nopol, env;
	uint32_t job_id, step_id;
	struct llmt_cost_model cm;
	/* what the steps load and build */
	struct llmt_policy *pol;
	struct llmt_topology *topo;
	char tbuf[LLMT_PATH_MAX];     /* the policy's topology path */
	struct llmt_opts o;
	unsigned *tpn, uniform;       /* tasks per node: per node, or the same on each */
	struct llmt_layout L;
	struct llmt_plan *plan;
};

static void plan_run_start(struct plan_run *r)
{
	*r = (struct plan_run){
		.nodes = NULL, .topo_path = NULL, .pol_path = NULL, .layout_s = NULL, .tpn_s = "1",
		.json = 0, .cjson = 0, .nomap = 0, .nopol = 0, .env = 0, .job_id = 1, .step_id = 0,
		.pol = NULL, .topo = NULL, .tbuf = "", .tpn = NULL, .uniform = 0, .plan = NULL,
	};
	llmt_cost_model_default(&r->cm);
}

/* The command line into r. Returns 1 after --help, else 0; a bad
 * option exits 64. */
static int parse_args(int argc, char **argv, struct plan_run *r)
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
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_NODES: r->nodes = optarg; break;
		case O_TOPO: r->topo_path = optarg; break;
		case O_POLICY: r->pol_path = optarg; break;
		case O_LAYOUT: r->layout_s = optarg; break;
		case O_TPN: r->tpn_s = optarg; break;
		case O_PARAMS: r->cm.params = (double)num("--model-params", optarg, 1ULL << 50); break;
		case O_HIDDEN: r->cm.hidden = (unsigned)num("--hidden", optarg, 1u << 20); break;
		case O_LAYERS: r->cm.layers = (unsigned)num("--layers", optarg, 1u << 16); break;
		case O_SEQ: r->cm.seq = (unsigned)num("--seq", optarg, 1u << 24); break;
		case O_MB: r->cm.micro_batch = (unsigned)num("--micro-batch", optarg, 1u << 16); break;
		case O_MBS: r->cm.micro_batches = (unsigned)num("--micro-batches", optarg, 1u << 20); break;
		case O_JSON: r->json = 1; break;
		case O_CJSON: r->cjson = 1; break;
		case O_NOMAP: r->nomap = 1; break;
		case O_HELP: fputs(usage, stdout); return 1;
		case O_NOPOL: r->nopol = 1; break;
		case O_ENV: r->env = 1; break;
		case O_JOB: r->job_id = (uint32_t)num("--job-id", optarg, 0xffffffffULL); break;
		case O_STEP: r->step_id = (uint32_t)num("--step-id", optarg, 0xffffffffULL) ; break;
		default:
			die("unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (!r->nodes)
		die("--nodes HOSTLIST is required");
	if (!r->layout_s)
		die("--layout tp=N,pp=N,dp=N is required");
	if (r->pol_path && r->nopol)
		die("--policy and --no-policy exclude each other");
	return 0;
}

/* The policy (the default file when it exists, unless --no-policy), then
 * the topology it names unless --topology gave one. */
static void load_inputs(struct plan_run *r)
{
	char err[1024];
	if (!r->pol_path && !r->nopol && access(LLMT_DEFAULT_POLICY, F_OK) == 0)
		r->pol_path = LLMT_DEFAULT_POLICY;
	if (r->pol_path) {
		int rc = llmt_policy_load(r->pol_path, &r->pol, err, sizeof(err));
		if (rc == LLMT_POLICY_DEFAULTS)
			die("%s: no such policy file", r->pol_path);
		if (rc != LLMT_POLICY_OK)
			die("%s", err);
	} else {
		r->pol = malloc(sizeof(*r->pol));
		if (!r->pol)
			die("out of memory");
		llmt_policy_defaults(r->pol);
	}
	const struct llmt_policy *pol = r->pol;
	if (!r->topo_path && pol->topology.source != LLMT_TOPO_NONE &&
	    llmt_policy_topology_path(pol, getenv("SLURM_CONF"), r->tbuf, sizeof(r->tbuf)) == 0) {
		if (pol->topology.source == LLMT_TOPO_FILE || access(r->tbuf, F_OK) == 0)
			r->topo_path = r->tbuf;
		else
			fprintf(stderr, "llm-train-plan: note: %s not found: no topology (give --topology)\n", r->tbuf);
	}
	if (r->topo_path && llmt_topology_load(r->topo_path, &r->topo, err, sizeof(err)))
		die("%s", err);
}

/* The layout from --layout and the policy, tasks per node sized by the
 * node count, the whole validated as the plugin would. */
static void plan_layout(struct plan_run *r)
{
	char err[1024];
	llmt_opts_init(&r->o);
	if (llmt_opts_parse_spec(&r->o, r->layout_s, err, sizeof(err)))
		die("--layout: %s", err);
	llmt_opts_apply_defaults(&r->o, r->pol);

	char (*names)[LLMT_HOST_MAX] = NULL;
	int n = llmt_hostlist_expand(r->nodes, LLMT_MAX_NODES, &names, err, sizeof(err));
	free(names);
	if (n <= 0)
		die("--nodes: %s", n == 0 ? "no nodes" : err);
	if (strspn(r->tpn_s, "0123456789") == strlen(r->tpn_s)) {
		r->uniform = (unsigned)num("--tasks-per-node", r->tpn_s, LLMT_MAX_TASKS);
	} else {
		r->tpn = calloc((size_t)n, sizeof(*r->tpn));
		if (!r->tpn)
			die("out of memory");
		if (llmt_tasks_per_node_parse(r->tpn_s, (unsigned)n, r->tpn, err, sizeof(err)))
			die("--tasks-per-node: %s", err);
	}
	struct llmt_job_info job = { 0 };
	job.nnodes = (unsigned)n;
	if (r->tpn)
		for (int i = 0; i < n; i++)
			job.ntasks += r->tpn[i];
	else
		job.ntasks = r->uniform * (unsigned)n;
	if (llmt_opts_validate(&r->o, r->pol, &job, err, sizeof(err)))
		die("%s", err);
	r->L = (struct llmt_layout){ r->o.tp, r->o.pp, r->o.dp };
}

static void build_plan(struct plan_run *r)
{
	char err[1024];
	if (llmt_plan_build(r->nodes, r->tpn, r->uniform, r->topo, r->pol, r->L, &r->cm, &r->plan,
			    err, sizeof(err)))
		die("%s", err);
}

/* --json: the map as an array of objects, one per rank */
static void print_map_json(const struct plan_run *r, FILE *out)
{
	const struct llmt_plan *plan = r->plan;
	json_t *arr = json_array();
	for (unsigned k = 0; k < plan->ntasks; k++) {
		unsigned t = plan->map->task_of_rank[k];
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
		if (r->env) {
			static struct llmt_env ev;
			json_t *eo = json_object();
			task_env(plan, t, &r->o, r->pol, r->job_id, r->step_id, &ev);
			for (unsigned i = 0; i < ev.n; i++)
				json_object_set_new(eo, ev.var[i].name, json_string(ev.var[i].value));
			json_object_set_new(e, "env", eo);
		}
		if (json_array_append_new(arr, e))
			die("out of memory");
	}
	if (json_dumpf(arr, out, JSON_COMPACT) || fputc('\n', out) == EOF)
		die("cannot write JSON");
	json_decref(arr);
}

/* --cost-json: both costs as one object */
static void print_cost_json(const struct plan_run *r, FILE *out)
{
	const struct llmt_plan *plan = r->plan;
	json_t *obj = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:b}",
				"order", llmt_rm_order_name(plan->map->order),
				"nodes", (json_int_t)plan->nnodes,
				"tasks", (json_int_t)plan->ntasks,
				"tp", (json_int_t)r->L.tp, "pp", (json_int_t)r->L.pp, "dp", (json_int_t)r->L.dp,
				"map", cost_json(&plan->cost),
				"slurm_feasible", plan->slurm_feasible);
	json_object_set_new(obj, "slurm", cost_json(&plan->slurm_cost));
	json_dumpf(obj, out, JSON_COMPACT);
	fputc('\n', out);
	json_decref(obj);
}

/* the text form: the header line, the map (unless --no-map), the costs */
static void print_text(const struct plan_run *r)
{
	const struct llmt_plan *plan = r->plan;
	printf("llm-train-plan: %u nodes, %u tasks, tp=%u pp=%u dp=%u, order %s, master %s\n",
	       plan->nnodes, plan->ntasks, r->L.tp, r->L.pp, r->L.dp,
	       llmt_rm_order_name(plan->map->order), llmt_plan_master(plan));
	if (!r->nomap) {
		printf("%8s %-20s %5s %4s %-12s %6s %6s %6s %8s\n", "rank", "node", "local", "gpu",
		       "nic", "tp", "pp", "dp", "task");
		for (unsigned k = 0; k < plan->ntasks; k++) {
			unsigned t = plan->map->task_of_rank[k];
			const struct llmt_rm_task *x = &plan->map->task[t];
			printf("%8u %-20s %5u %4d %-12s %6u %6u %6u %8u\n", x->rank,
			       plan->names[x->node], x->local_rank, (int)x->gpu,
			       *llmt_plan_nic(plan, t) ? llmt_plan_nic(plan, t) : "-",
			       x->tp_rank, x->pp_rank, x->dp_rank, t);
			if (r->env) {
				static struct llmt_env ev;
				task_env(plan, t, &r->o, r->pol, r->job_id, r->step_id, &ev);
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

static void plan_run_free(struct plan_run *r)
{
	llmt_plan_free(r->plan);
	llmt_topology_free(r->topo);
	llmt_policy_free(r->pol);
	free(r->tpn);
	r->plan = NULL, r->topo = NULL, r->pol = NULL, r->tpn = NULL;
}

int main(int argc, char **argv)
{
	static struct plan_run r;
	for (int i = 1; i < argc; i++) /* the automatic layout: autoplan_main.c */
		if (!strcmp(argv[i], "--auto"))
			return llmt_autoplan_main(argc, argv);
	plan_run_start(&r);
	if (parse_args(argc, argv, &r))
		return 0;
	load_inputs(&r);
	plan_layout(&r);
	build_plan(&r);
	if (r.json)
		print_map_json(&r, stdout);
	else if (r.cjson)
		print_cost_json(&r, stdout);
	else
		print_text(&r);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "llm-train-plan: write error\n");
		return LLMT_EXIT_IO;
	}
	plan_run_free(&r);
	return 0;
}
