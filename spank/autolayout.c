/* autolayout.c: tp/pp/micro-batch=auto (autolayout.h): the planner's
 * input from the node types of the nodes in the step (the smallest memory
 * and the slowest FLOP rate bound every rank), the choice into llmt_opts,
 * and the candidates printed for --llm-explain. Pure. */
#include "autolayout.h"

#include <stdio.h>
#include <string.h>

#include "hostlist.h"

#include "llmt/err.h"

#define GIB 1073741824.0

struct in_ctx {
	const struct llmt_policy *p;
	unsigned tpn;
	double mem, flops;     /* per rank: the least over the nodes */
	unsigned domain;       /* smallest TP domain, in tasks */
	int gpu, cpu;          /* node kinds seen */
	char err[256];
};

static int visit(const char *host, void *arg)
{
	struct in_ctx *x = arg;
	const struct llmt_node_type *t = llmt_policy_node_type(x->p, host);
	double mem, fl;
	unsigned dom;

	if (!t) {
		snprintf(x->err, sizeof(x->err), "node %.64s has no node type in the policy%s: tp=auto needs "
			 "its memory (node_types: memory_gib, gpu_memory_gib)", host,
			 x->p->builtin ? " (built-in defaults)" : "");
		return -1;
	}
	if (t->gpus_per_node) {
		if (!(t->gpu_memory_gib > 0)) {
			snprintf(x->err, sizeof(x->err), "node type %s (GPUs) declares no gpu_memory_gib in the "
				 "policy: tp=auto cannot size its ranks", t->name);
			return -1;
		}
		mem = t->gpu_memory_gib * GIB;
		fl = t->gflops > 0 ? t->gflops * 1e9 / t->gpus_per_node : 400e12;
		dom = t->nvlink_block ? t->nvlink_block : t->gpus_per_node;
		x->gpu = 1;
	} else {
		if (!(t->memory_gib > 0)) {
			snprintf(x->err, sizeof(x->err), "node type %s declares no memory_gib in the policy: "
				 "tp=auto cannot size its ranks", t->name);
			return -1;
		}
		mem = t->memory_gib * GIB / x->tpn;
		fl = t->gflops > 0 ? t->gflops * 1e9 / x->tpn : 50e9;
		dom = x->tpn;
		x->cpu = 1;
	}
	if (!x->mem || mem < x->mem)
		x->mem = mem;
	if (!x->flops || fl < x->flops)
		x->flops = fl;
	if (!x->domain || dom < x->domain)
		x->domain = dom;
	return 0;
}

int llmt_auto_input(const struct llmt_opts *o, const struct llmt_policy *p, const llmt_config *c,
		    const char *nodelist, unsigned nnodes, unsigned tasks_per_node,
		    llmt_autoplan_in *in, char *err, size_t errlen)
{
	struct in_ctx x;
	memset(&x, 0, sizeof(x));
	x.p = p;
	x.tpn = tasks_per_node;
	memset(in, 0, sizeof(*in));
	if (!tasks_per_node || !nnodes) {
		SET_ERR("tp=auto: the step has no tasks");
		return -1;
	}
	if ((unsigned long long)nnodes * tasks_per_node > LLMT_AUTOPLAN_MAX_RANKS) {
		SET_ERR("tp=auto: %u nodes x %u tasks is too large for the planner", nnodes, tasks_per_node);
		return -1;
	}
	if (llmt_hostlist_foreach(nodelist, nnodes, visit, &x, err, errlen) < 0) {
		if (x.err[0])
			SET_ERR("%s", x.err);
		return -1;
	}
	if (x.gpu && x.cpu) {
		SET_ERR("tp=auto: the step mixes GPU and CPU node types (one memory model sizes the ranks)");
		return -1;
	}
	if (x.gpu && tasks_per_node % x.domain && x.domain % tasks_per_node) {
		SET_ERR("tp=auto: %u tasks per node do not tile the NVLink domain of %u GPUs", tasks_per_node,
			x.domain);
		return -1;
	}
	in->nodes = (int)nnodes;
	in->tasks_per_node = (int)tasks_per_node;
	in->tp_domain = (int)x.domain;
	in->global_batch = o->global_batch ? (long)o->global_batch : (long)nnodes * tasks_per_node;
	in->T = o->seq ? (int)o->seq : c->max_seq;
	in->B = o->mb_auto ? 0 : (int)o->micro_batch;
	in->gpu = x.gpu;
	in->recompute = -1;               /* try none, attn and full */
	in->mem_limit = x.mem;
	in->margin = 0.9;
	in->flops = x.flops;
	in->bw_intra = x.gpu ? 150e9 : 10e9;
	in->bw_inter = x.gpu ? 25e9 : 1e9;
	in->lat = x.gpu ? LLMT_AUTOPLAN_LAT_GPU : LLMT_AUTOPLAN_LAT_CPU;
	in->overhead = (x.gpu ? 1024 : 320) * 1048576.0;
	in->fix_tp = o->tp_auto ? 0 : (int)o->tp;
	in->fix_pp = o->pp_auto ? 0 : (int)o->pp;
	in->fix_dp = o->dp_auto ? 0 : (int)o->dp;
	if (in->T > c->max_seq) {
		SET_ERR("--llm-train: seq=%d exceeds the model's max_seq %d", in->T, c->max_seq);
		return -1;
	}
	return 0;
}

int llmt_auto_decide(struct llmt_opts *o, const struct llmt_policy *p, const llmt_config *c,
		     const char *nodelist, const unsigned *tpn, unsigned nnodes,
		     struct llmt_auto_out *out, char *err, size_t errlen)
{
	for (unsigned i = 1; i < nnodes; i++)
		if (tpn[i] != tpn[0]) {
			SET_ERR("tp=auto needs the same task count on every node (node 0 has %u, node %u has %u)",
				tpn[0], i, tpn[i]);
			return -1;
		}
	memset(out, 0, sizeof(*out));
	if (llmt_auto_input(o, p, c, nodelist, nnodes, tpn[0], &out->in, err, errlen))
		return -1;
	llmt_autoplan(c, &out->in, out->cand, LLMT_AUTO_TOP, &out->n, &out->rj);
	out->shown = out->n < LLMT_AUTO_TOP ? out->n : LLMT_AUTO_TOP;
	const llmt_autoplan_in *in = &out->in;
	if (!out->n) {
		long most = (long)in->nodes * 64 > 1 << 20 ? 1 << 20 : (long)in->nodes * 64;
		out->min_nodes = llmt_autoplan_min_nodes(c, in, (int)most);
		if (out->min_nodes)
			SET_ERR("no layout of %d nodes x %d tasks fits the model %s (%.2f GiB per rank, margin "
				"%.0f%%): the smallest allocation that fits is %d nodes x %d tasks", in->nodes,
				in->tasks_per_node, o->model, in->mem_limit / GIB, in->margin * 100,
				out->min_nodes, in->tasks_per_node);
		else
			SET_ERR("no layout of %d nodes x %d tasks fits the model %s (%.2f GiB per rank, margin "
				"%.0f%%), nor of up to 64 times as many nodes", in->nodes, in->tasks_per_node,
				o->model, in->mem_limit / GIB, in->margin * 100);
		return -1;
	}
	const llmt_autoplan_cand *x = &out->cand[0];
	o->tp = (unsigned)x->tp;
	o->pp = (unsigned)x->pp;
	o->dp = (unsigned)x->dp;
	o->dp_auto = 0;
	o->choice.done = 1;
	o->choice.micro_batch = (unsigned)x->B;
	o->choice.grad_accum = (unsigned)x->A;
	o->choice.seq = (unsigned)in->T;
	o->choice.recompute = x->recompute;
	o->choice.recompute_layers = (unsigned)x->rc_layers;
	o->choice.candidates = out->n;
	o->choice.step_s = x->step_s;
	o->choice.mem_bytes = x->mem;
	o->choice.mem_limit = in->mem_limit;
	return 0;
}

void llmt_auto_print(FILE *f, const char *prefix, const struct llmt_auto_out *out)
{
	const llmt_autoplan_in *in = &out->in;
	fprintf(f, "%splanner: %d nodes x %d tasks, %.2f GiB per rank (keep %.0f%% incl. %.0f MiB "
		"overhead), %.0f GFLOP/s per rank, global batch %ld x seq %d: %d feasible layouts\n",
		prefix, in->nodes, in->tasks_per_node, in->mem_limit / GIB, in->margin * 100,
		in->overhead / 1048576.0, in->flops / 1e9, in->global_batch, in->T, out->n);
	if (out->shown)
		fprintf(f, "%s  %-3s %4s %4s %5s %6s %5s %-9s %10s %9s %11s\n", prefix, "#", "tp", "pp", "dp",
			"micro", "accum", "recompute", "memory_GiB", "step_s", "tokens/s");
	for (int i = 0; i < out->shown; i++) {
		const llmt_autoplan_cand *x = &out->cand[i];
		char rt[24];
		fprintf(f, "%s  %-3d %4d %4d %5d %6d %5d %-9s %10.3f %9.4f %11.0f%s\n", prefix, i + 1, x->tp,
			x->pp, x->dp, x->B, x->A, llmt_autoplan_rc_text(x, rt, sizeof rt),
			x->mem / GIB, x->step_s, x->tokens_per_s, i ? "" : "  <- chosen");
	}
	for (int i = 0; i < LLMT_AP_NREASONS; i++)
		if (out->rj.count[i])
			fprintf(f, "%srejected %ld: %s (e.g. %s)\n", prefix, out->rj.count[i],
				llmt_autoplan_reason(i), out->rj.example[i]);
}

int llmt_auto_summary(const struct llmt_opts *o, char *buf, size_t len)
{
	const struct llmt_auto_choice *ch = &o->choice;
	int w = snprintf(buf, len, "tp=%u pp=%u dp=%u micro_batch=%u grad_accum=%u recompute=%s seq=%u "
			 "candidates=%d step_s=%.6g memory_bytes=%.0f limit_bytes=%.0f", o->tp, o->pp, o->dp,
			 ch->micro_batch, ch->grad_accum, llmt_recompute_name((llmt_recompute)ch->recompute),
			 ch->seq, ch->candidates, ch->step_s, ch->mem_bytes, ch->mem_limit);
	if (w >= 0 && (size_t)w < len && ch->recompute_layers)
		w += snprintf(buf + w, len - (size_t)w, " recompute_layers=%u", ch->recompute_layers);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}
