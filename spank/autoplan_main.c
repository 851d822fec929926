/* autoplan_main.c: llm-train-plan --auto: the automatic parallel layout
 * of runtime/memory/autoplan.h for a model config and an allocation,
 * printed as the top candidates (memory, predicted step time), why the
 * rest were left out, and the choice as --llm-train and llm-train options;
 * or the smallest allocation that fits when nothing does (exit 64). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "llmt/exitcodes.h"
#include "autoplan_main.h"
#include "hostlist.h"
#include "memory/autoplan.h"

static const char usage[] =
"usage: llm-train-plan --auto --model CFG.yaml --nodes N|HOSTLIST --tasks-per-node N\n"
"         --mem-per-rank GIB [options]\n"
"  --tp-domain N           TP stays inside N tasks (NVLink domain; default: the node)\n"
"  --global-batch G        sequences per optimizer step (default: one per rank)\n"
"  --seq T                 sequence length (default: the model's max_seq)\n"
"  --micro-batch B|auto    (default auto: 1, 2, 4, 8, 16)\n"
"  --tp N --pp N --dp N    only layouts with that size (default: any)\n"
"  --recompute none|attn|full|auto   (default auto)\n"
"  --device cpu|gpu        which memory model sizes a rank (default cpu)\n"
"  --overhead MIB          runtime memory outside the estimate (default 320 CPU, 1024 GPU)\n"
"  --margin F              keep estimate + overhead under F x the limit (default 0.9)\n"
"  --gflops X              achieved GFLOP/s per rank (default 50 CPU, 400000 GPU)\n"
"  --intra-gbps X --inter-gbps X   GB/s per rank inside / across nodes\n"
"                          (default 10 and 1 CPU, 150 and 25 GPU)\n"
"  --latency-us X          seconds per collective or send, in microseconds\n"
"                          (default 5 GPU, 100 CPU; an oversubscribed CPU: ms)\n"
"  --top K                 candidates printed (default 5)\n"
"  --json                  one JSON object\n";

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "llm-train-plan: %s %s: %s\n", opt, val ? val : "", why);
	return LLMT_EXIT_USAGE;
}

static int pos(const char *opt, const char *s, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0))
		return bad(opt, s, "want a positive number");
	if (v > max) {
		char why[64];
		snprintf(why, sizeof(why), "want a positive number up to %.15g", max);
		return bad(opt, s, why);
	}
	*out = v;
	return 0;
}

/* pos, and at least lo (a figure the planner divides by) */
static int pos_min(const char *opt, const char *s, double max, double lo, double *out)
{
	int rc = pos(opt, s, max, out);
	if (!rc && *out < lo) {
		char why[64];
		snprintf(why, sizeof(why), "below %.15g", lo);
		rc = bad(opt, s, why);
	}
	return rc;
}

/* a whole number in [1, max] */
static int whole(const char *opt, const char *s, double max, int *out)
{
	double v;
	if (pos(opt, s, max, &v))
		return LLMT_EXIT_USAGE;
	if (v != (double)(long)v)
		return bad(opt, s, "want a whole number");
	*out = (int)v;
	return 0;
}

static int cmp_host(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* a node count, or a host list's distinct hosts */
static int nodes_of(const char *s, int *n)
{
	char err[256], (*names)[LLMT_HOST_MAX] = NULL;
	if (strspn(s, "0123456789") == strlen(s))
		return whole("--nodes", s, 1 << 20, n);
	int k = llmt_hostlist_expand(s, 1 << 16, &names, err, sizeof(err));
	if (k < 1) {
		free(names);
		return bad("--nodes", s, k < 0 ? err : "no hosts");
	}
	qsort(names, (size_t)k, sizeof(*names), cmp_host);
	*n = 1;
	for (int i = 1; i < k; i++)
		*n += strcmp(names[i], names[i - 1]) != 0;
	free(names);
	return 0;
}

static json_t *cand_json(const llmt_autoplan_cand *x)
{
	json_t *j = json_pack("{s:i,s:i,s:i,s:i,s:i,s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "tp", x->tp,
		"pp", x->pp, "dp", x->dp, "micro_batch", x->B, "grad_accum", x->A, "recompute",
		llmt_recompute_name((llmt_recompute)x->recompute), "recompute_layers", x->rc_layers,
		"memory_bytes", x->mem, "step_s",
		x->step_s, "tokens_per_s", x->tokens_per_s, "compute_s", x->compute_s, "tp_s", x->tp_s,
		"pp_s", x->pp_s, "dp_s", x->dp_s, "bubble", x->bubble);
	if (!j) { /* a time that is not a finite number: the inputs are absurd */
		fprintf(stderr, "llm-train-plan: a candidate's figures are not finite numbers (check --gflops and "
			"the link speeds)\n");
		exit(LLMT_EXIT_SOFTWARE);
	}
	return j;
}

static void print_json(const char *model, const llmt_autoplan_in *in, const llmt_autoplan_cand *c,
	int shown, int n, const llmt_autoplan_rejects *rj, int min_nodes)
{
	json_t *o = json_object(), *a = json_array(), *r = json_array();
	for (int i = 0; i < shown; i++)
		json_array_append_new(a, cand_json(&c[i]));
	for (int i = 0; i < LLMT_AP_NREASONS; i++)
		if (rj->count[i])
			json_array_append_new(r, json_pack("{s:s,s:I,s:s}", "reason", llmt_autoplan_reason(i),
				"count", (json_int_t)rj->count[i], "example", rj->example[i]));
	json_object_set_new(o, "model", json_string(model) ? json_string(model) : json_string("(not UTF-8)"));
	json_object_set_new(o, "nodes", json_integer(in->nodes));
	json_object_set_new(o, "tasks_per_node", json_integer(in->tasks_per_node));
	json_object_set_new(o, "feasible", json_integer(n));
	json_object_set_new(o, "candidates", a);
	json_object_set_new(o, "rejected", r);
	json_object_set_new(o, "chosen", shown ? cand_json(&c[0]) : json_null());
	if (!shown)
		json_object_set_new(o, "min_nodes", min_nodes ? json_integer(min_nodes) : json_null());
	char *s = json_dumps(o, JSON_COMPACT);
	if (s)
		puts(s);
	free(s);
	json_decref(o);
}

static void print_text(const char *model, const llmt_autoplan_in *in, const llmt_autoplan_cand *c,
	int shown, int n, const llmt_autoplan_rejects *rj)
{
	printf("llm-train-plan --auto: %s on %d nodes x %d tasks, global batch %ld x seq %d, "
	       "%.2f GiB per rank (margin %.0f%%, %.0f MiB overhead)\n", model, in->nodes,
	       in->tasks_per_node, in->global_batch, in->T, in->mem_limit / 1073741824.0,
	       in->margin * 100, in->overhead / 1048576.0);
	printf("%d feasible layouts; the fastest %d:\n", n, shown);
	printf("  %-3s %4s %4s %5s %6s %5s %-9s %10s %9s %11s  %s\n", "#", "tp", "pp", "dp", "micro",
	       "accum", "recompute", "memory_GiB", "step_s", "tokens/s", "compute/tp/pp/dp s, bubble");
	char rt[24];
	for (int i = 0; i < shown; i++)
		printf("  %-3d %4d %4d %5d %6d %5d %-9s %10.3f %9.4f %11.0f  %.4f/%.4f/%.4f/%.4f, %.0f%%\n",
		       i + 1, c[i].tp, c[i].pp, c[i].dp, c[i].B, c[i].A,
		       llmt_autoplan_rc_text(&c[i], rt, sizeof rt), c[i].mem / 1073741824.0,
		       c[i].step_s, c[i].tokens_per_s, c[i].compute_s, c[i].tp_s, c[i].pp_s, c[i].dp_s,
		       c[i].bubble * 100);
	for (int i = 0; i < LLMT_AP_NREASONS; i++)
		if (rj->count[i])
			printf("rejected %ld: %s (e.g. %s)\n", rj->count[i], llmt_autoplan_reason(i),
			       rj->example[i]);
	if (shown) {
		snprintf(rt, sizeof rt, " --recompute-layers %d", c[0].rc_layers);
		printf("chosen: --llm-train=tp=%d,pp=%d,dp=%d and llm-train --micro-batch %d --grad-accum %d "
		       "--recompute %s%s\n", c[0].tp, c[0].pp, c[0].dp, c[0].B, c[0].A,
		       llmt_recompute_name((llmt_recompute)c[0].recompute), c[0].rc_layers ? rt : "");
	}
}

/* the options into in; 0, or an exit code after one message */
static int parse(int argc, char **argv, llmt_autoplan_in *in, const char **model, int *top, int *json,
	double *ovh_mib, double *gflops, double *gbps)
{
	enum { O_AUTO = 1, O_MODEL, O_NODES, O_TPN, O_DOM, O_GB, O_SEQ, O_MB, O_RC, O_DEV, O_MEM,
	       O_OVH, O_MARGIN, O_GF, O_INTRA, O_INTER, O_TOP, O_JSON, O_HELP, O_TP, O_PP, O_DP, O_LAT };
	static const struct option lo[] = {
		{ "auto", no_argument, 0, O_AUTO }, { "model", required_argument, 0, O_MODEL },
		{ "nodes", required_argument, 0, O_NODES }, { "tasks-per-node", required_argument, 0, O_TPN },
		{ "tp-domain", required_argument, 0, O_DOM }, { "global-batch", required_argument, 0, O_GB },
		{ "seq", required_argument, 0, O_SEQ }, { "micro-batch", required_argument, 0, O_MB },
		{ "recompute", required_argument, 0, O_RC }, { "device", required_argument, 0, O_DEV },
		{ "mem-per-rank", required_argument, 0, O_MEM }, { "overhead", required_argument, 0, O_OVH },
		{ "margin", required_argument, 0, O_MARGIN }, { "gflops", required_argument, 0, O_GF },
		{ "intra-gbps", required_argument, 0, O_INTRA }, { "inter-gbps", required_argument, 0, O_INTER },
		{ "top", required_argument, 0, O_TOP }, { "json", no_argument, 0, O_JSON },
		{ "help", no_argument, 0, O_HELP }, { "tp", required_argument, 0, O_TP },
		{ "pp", required_argument, 0, O_PP }, { "dp", required_argument, 0, O_DP },
		{ "latency-us", required_argument, 0, O_LAT }, { 0, 0, 0, 0 },
	};
	double v;
	int o, rc = 0, k = 0;

	optind = 1;
	opterr = 0;
	while (!rc && (o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case O_AUTO: break;
		case O_MODEL: *model = optarg; break;
		case O_NODES: rc = nodes_of(optarg, &in->nodes); break;
		case O_TPN: rc = whole("--tasks-per-node", optarg, 1 << 16, &in->tasks_per_node); break;
		case O_DOM: rc = whole("--tp-domain", optarg, 1 << 16, &in->tp_domain); break;
		case O_GB: rc = whole("--global-batch", optarg, 1 << 30, &k); in->global_batch = k; break;
		case O_SEQ: rc = whole("--seq", optarg, 1 << 20, &in->T); break;
		case O_MB:
			if (strcmp(optarg, "auto"))
				rc = whole("--micro-batch", optarg, 1 << 16, &in->B);
			break;
		case O_RC: {
			llmt_recompute r;
			if (!strcmp(optarg, "auto"))
				in->recompute = -1;
			else if (llmt_recompute_from(optarg, &r))
				rc = bad("--recompute", optarg, "want none, attn, full or auto");
			else
				in->recompute = (int)r;
			break;
		}
		case O_DEV:
			if (strcmp(optarg, "cpu") && strcmp(optarg, "gpu"))
				rc = bad("--device", optarg, "want cpu or gpu");
			in->gpu = !strcmp(optarg, "gpu");
			break;
		case O_MEM: rc = pos("--mem-per-rank", optarg, 1 << 20, &v); in->mem_limit = v * 1073741824.0; break;
		case O_OVH: rc = pos("--overhead", optarg, 1 << 24, ovh_mib); break;
		case O_MARGIN: rc = pos("--margin", optarg, 1, &in->margin); break;
		case O_GF: rc = pos_min("--gflops", optarg, 1e9, 1e-3, gflops); break;
		case O_INTRA: rc = pos_min("--intra-gbps", optarg, 1e6, 1e-3, &gbps[0]); break;
		case O_INTER: rc = pos_min("--inter-gbps", optarg, 1e6, 1e-3, &gbps[1]); break;
		case O_TOP: rc = whole("--top", optarg, 1000, top); break;
		case O_TP: rc = whole("--tp", optarg, 1 << 24, &in->fix_tp); break;
		case O_PP: rc = whole("--pp", optarg, 1 << 24, &in->fix_pp); break;
		case O_DP: rc = whole("--dp", optarg, 1 << 24, &in->fix_dp); break;
		case O_LAT: rc = pos("--latency-us", optarg, 1e7, &v); in->lat = v * 1e-6; break;
		case O_JSON: *json = 1; break;
		case O_HELP: fputs(usage, stdout); return -1;
		default:
			fprintf(stderr, "llm-train-plan: unknown option or missing value: %s\n%s",
				argv[optind - 1], usage);
			return LLMT_EXIT_USAGE;
		}
	}
	if (!rc && optind < argc)
		rc = bad("unexpected argument", argv[optind], "llm-train-plan --auto --help");
	if (!rc && !*model)
		rc = bad("--auto", "", "needs --model CFG.yaml (the planner sizes that model)");
	if (!rc && (!in->nodes || !in->tasks_per_node))
		rc = bad("--auto", "", "needs --nodes and --tasks-per-node (the allocation)");
	if (!rc && !in->mem_limit)
		rc = bad("--auto", "", "needs --mem-per-rank GIB (the memory of one rank; the plugin takes "
			"it from the policy's node types)");
	if (!rc && (long long)in->nodes * in->tasks_per_node > LLMT_AUTOPLAN_MAX_RANKS)
		fprintf(stderr, "llm-train-plan: --nodes %d x --tasks-per-node %d is more than 16,777,216 ranks\n",
			in->nodes, in->tasks_per_node), rc = LLMT_EXIT_USAGE;
	if (!rc && in->tp_domain && in->tasks_per_node % in->tp_domain && in->tp_domain % in->tasks_per_node)
		fprintf(stderr, "llm-train-plan: --tp-domain %d must divide --tasks-per-node %d, or be a multiple "
			"of it (a multi-node NVLink domain)\n", in->tp_domain, in->tasks_per_node), rc = LLMT_EXIT_USAGE;
	return rc;
}

int llmt_autoplan_main(int argc, char **argv)
{
	llmt_autoplan_in in = { .recompute = -1, .margin = 0.9 };
	const char *model = NULL;
	int top = 5, json = 0, n = 0;
	double ovh = 0, gflops = 0, gbps[2] = { 0, 0 };
	char err[512];
	llmt_config c;

	int rc = parse(argc, argv, &in, &model, &top, &json, &ovh, &gflops, gbps);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (llmt_config_load(model, &c, err, sizeof(err)) || llmt_config_validate(&c, err, sizeof(err)))
		return bad("--model", model, err);
	if (!in.T)
		in.T = c.max_seq;
	if (in.T > c.max_seq)
		return bad("--seq", "", "exceeds the model's max_seq");
	if (!in.tp_domain)
		in.tp_domain = in.tasks_per_node;
	if (!in.global_batch)
		in.global_batch = (long)in.nodes * in.tasks_per_node;
	in.overhead = (ovh ? ovh : in.gpu ? 1024 : 320) * 1048576.0;
	in.flops = (gflops ? gflops : in.gpu ? 400000 : 50) * 1e9;
	in.bw_intra = (gbps[0] ? gbps[0] : in.gpu ? 150 : 10) * 1e9;
	in.bw_inter = (gbps[1] ? gbps[1] : in.gpu ? 25 : 1) * 1e9;
	if (!in.lat) /* CPU ranks: an MPI collective costs the ranks' skew too */
		in.lat = in.gpu ? LLMT_AUTOPLAN_LAT_GPU : LLMT_AUTOPLAN_LAT_CPU;

	llmt_autoplan_cand *cand = calloc((size_t)top, sizeof(*cand));
	llmt_autoplan_rejects rj;
	if (!cand)
		return bad("--top", "", "out of memory");
	llmt_autoplan(&c, &in, cand, top, &n, &rj);
	int shown = n < top ? n : top, min_nodes = 0;
	if (!n)
		min_nodes = llmt_autoplan_min_nodes(&c, &in, in.nodes * 64 > 1 << 20 ? 1 << 20 : in.nodes * 64);
	if (json)
		print_json(model, &in, cand, shown, n, &rj, min_nodes);
	else
		print_text(model, &in, cand, shown, n, &rj);
	free(cand);
	if (n)
		return 0;
	if (in.overhead >= in.margin * in.mem_limit)
		fprintf(stderr, "llm-train-plan: %s: the runtime overhead alone (%.0f MiB, --overhead) is over "
			"%.0f%% of %.2f GiB per rank: no allocation fits\n", model, in.overhead / 1048576.0,
			in.margin * 100, in.mem_limit / 1073741824.0);
	else if (min_nodes)
		fprintf(stderr, "llm-train-plan: %s: no layout of %d nodes x %d tasks is feasible (%.2f GiB "
			"per rank; rejections above); the smallest allocation that fits: %d nodes x %d tasks\n",
			model, in.nodes, in.tasks_per_node, in.mem_limit / 1073741824.0, min_nodes,
			in.tasks_per_node);
	else
		fprintf(stderr, "llm-train-plan: %s: no layout of %d nodes x %d tasks is feasible (%.2f GiB "
			"per rank; rejections above), nor of up to 64 times as many nodes\n", model, in.nodes,
			in.tasks_per_node, in.mem_limit / 1073741824.0);
	return LLMT_EXIT_USAGE;
}
