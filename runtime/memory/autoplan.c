/* autoplan.c: the automatic parallel layout (autoplan.h): enumeration,
 * memory by memest.c, and a step-time model: compute at the rank's FLOP
 * rate, ring all-reduces for TP (inside the TP domain) and DP, point to
 * point sends between pipeline stages, and the 1F1B bubble. */
#include "autoplan.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/parallel.h"
#include "memory/memest.h"

static const char *const reasons[LLMT_AP_NREASONS] = {
	"tp does not divide the heads, kv heads and d_ff",
	"pp does not divide the layers",
	"tp does not fit the TP domain (NVLink domain / node)",
	"the global batch is not a multiple of dp x micro-batch",
	"over the memory limit",
};

const char *llmt_autoplan_reason(int r)
{
	return r >= 0 && r < LLMT_AP_NREASONS ? reasons[r] : "?";
}

size_t llmt_autoplan_stage_params(const llmt_config *c, int tp, int pp, int s)
{
	size_t d = (size_t)c->d_model, V = (size_t)c->vocab_size, F = (size_t)c->d_ff;
	size_t H = (size_t)c->n_heads, KV = (size_t)(c->n_kv_heads ? c->n_kv_heads : c->n_heads);
	size_t hd = d / H, nl = (size_t)(c->n_layers / pp), n = 0;
	size_t layer = 2 * d + (H + 2 * KV) / tp * hd * d + d * (H / tp) * hd + 3 * (F / tp) * d +
		(c->qk_norm ? 2 * hd : 0);

	if (s == 0)
		n += V * d;
	n += nl * layer;
	if (s == pp - 1)
		n += d + (!c->tie_embeddings || s > 0 ? V * d : 0);
	return n;
}

int llmt_autoplan_rc_plan(const llmt_autoplan_cand *x)
{
	return LLMT_RC_PLAN(x->recompute, x->rc_layers > 0 ? x->rc_layers : -1);
}

const char *llmt_autoplan_rc_text(const llmt_autoplan_cand *x, char *buf, size_t len)
{
	const char *m = llmt_recompute_name((llmt_recompute)x->recompute);
	if (x->rc_layers > 0 && x->recompute != LLMT_RECOMPUTE_NONE)
		snprintf(buf, len, "%s:%d", m, x->rc_layers);
	else
		snprintf(buf, len, "%s", m);
	return buf;
}

/* ring all-reduce of `bytes` over k ranks */
static double allreduce_s(double bytes, int k, double bw, double lat)
{
	return k > 1 ? 2.0 * (k - 1) / k * bytes / bw + 2.0 * (k - 1) * lat : 0;
}

/* one rank of stage s: its memory (bytes) */
static double stage_mem(const llmt_config *c, const llmt_autoplan_in *in, const llmt_autoplan_cand *x,
	int s)
{
	llmt_grid l = { 0, x->tp * x->pp * x->dp, x->tp, x->pp, x->dp, 0, s, 0 };
	size_t n = llmt_autoplan_stage_params(c, x->tp, x->pp, s);

	if (in->gpu) {
		llmt_memest_gpu g;
		llmt_memory_estimate_gpu(c, &l, n, x->B, in->T, x->A, 1, llmt_autoplan_rc_plan(x), &g);
		return g.total;
	}
	llmt_memest e;
	/* attn_nt 0: oneDNN's full-square scratch, the larger of the two paths */
	llmt_memory_estimate(c, &l, n, x->B, in->T, x->A, 1, 1, 0, llmt_autoplan_rc_plan(x), &e);
	return e.total;
}

/* one micro-batch's forward and backward on stage s, with its TP traffic */
static double micro_s(const llmt_config *c, const llmt_autoplan_in *in, llmt_autoplan_cand *x,
	int s, double *tp_s)
{
	double d = c->d_model, V = c->vocab_size, F = c->d_ff, H = c->n_heads;
	double KV = c->n_kv_heads ? c->n_kv_heads : c->n_heads, hd = d / H, T = in->T;
	double M = (double)x->B * T, nl = (double)c->n_layers / x->pp, tp = x->tp;
	double mm = nl * ((H + 2 * KV) / tp * hd * d + d * H / tp * hd + 3 * F / tp * d) +
		(s == x->pp - 1 ? V * d : 0);
	double fwd = 2 * M * mm, attn_fwd = nl * 2.0 * x->B * (H / tp) * T * T * hd;
	double flops = 3 * (fwd + attn_fwd), ar = 4 * nl;
	/* the recomputed share of the layers' forward */
	double f = llmt_rc_layers(llmt_autoplan_rc_plan(x), (int)nl) / nl;

	if (x->recompute == LLMT_RECOMPUTE_FULL)
		flops += f * (fwd + attn_fwd), ar += 2 * f * nl;
	else if (x->recompute == LLMT_RECOMPUTE_ATTN)
		flops += f * attn_fwd;
	*tp_s = ar * allreduce_s(M * d * 4, x->tp, in->bw_intra, in->lat);
	return flops / in->flops + *tp_s;
}

int llmt_autoplan_price(const llmt_config *c, const llmt_autoplan_in *in, llmt_autoplan_cand *x)
{
	double worst = 0, tp_worst = 0, M = (double)x->B * in->T, dpmax = 0;
	int stages[3] = { 0, 1, x->pp - 1 };

	x->mem = 0;
	for (int i = 0; i < 3; i++) {
		int s = stages[i];
		if (s >= x->pp)
			continue;
		double m = stage_mem(c, in, x, s), t, tps;
		if (m > x->mem)
			x->mem = m;
		t = micro_s(c, in, x, s, &tps);
		if (t > worst)
			worst = t, tp_worst = tps;
		size_t n = llmt_autoplan_stage_params(c, x->tp, x->pp, s);
		double bw = in->nodes > 1 ? in->bw_inter : in->bw_intra;
		double dps = allreduce_s((double)n * 4, x->dp, bw, in->lat);
		if (dps > dpmax)
			dpmax = dps;
	}
	double slots = x->A + x->pp - 1;
	x->pp_s = x->pp > 1 ? slots * 2 * (M * c->d_model * 4 / (in->nodes > 1 ? in->bw_inter : in->bw_intra) +
		in->lat) : 0;
	x->tp_s = slots * tp_worst;
	x->compute_s = slots * (worst - tp_worst);
	x->dp_s = dpmax;
	x->bubble = (x->pp - 1) / slots;
	x->step_s = slots * worst + x->pp_s + x->dp_s;
	x->tokens_per_s = (double)in->global_batch * in->T / x->step_s;
	x->mem += in->overhead;
	return x->mem > in->margin * in->mem_limit;
}

static void reject(llmt_autoplan_rejects *rj, int why, const llmt_autoplan_cand *x, const char *more)
{
	if (!rj)
		return;
	if (rj->count[why]++)
		return;
	int k = snprintf(rj->example[why], sizeof(rj->example[why]), "tp=%d pp=%d dp=%d", x->tp, x->pp,
		x->dp);
	if (x->B && k > 0 && (size_t)k < sizeof(rj->example[why]))
		snprintf(rj->example[why] + k, sizeof(rj->example[why]) - (size_t)k, " micro-batch %d%s",
			x->B, more);
}

/* x fits with full recomputation in all of each stage's layers: in the
 * fewest that fit instead (the memory falls as they grow: a bisection),
 * priced into x; 0 (x as it was) when only all of them fit */
static int fewest_layers(const llmt_config *c, const llmt_autoplan_in *in, llmt_autoplan_cand *x)
{
	llmt_autoplan_cand y = *x;
	int lo = 1, hi = c->n_layers / x->pp;  /* hi fits */
	while (lo < hi) {
		y.rc_layers = lo + (hi - lo) / 2;
		if (llmt_autoplan_price(c, in, &y))
			lo = y.rc_layers + 1;
		else
			hi = y.rc_layers;
	}
	if (hi == c->n_layers / x->pp)
		return 0;
	y.rc_layers = hi;
	llmt_autoplan_price(c, in, &y);
	*x = y;
	return 1;
}

static int faster(const void *a, const void *b)
{
	const llmt_autoplan_cand *x = a, *y = b;
	if (x->step_s != y->step_s)
		return x->step_s < y->step_s ? -1 : 1;
	return (x->mem > y->mem) - (x->mem < y->mem);
}

/* keep the cap fastest in out[0..*kept) */
static void keep(llmt_autoplan_cand *out, int cap, int *kept, const llmt_autoplan_cand *x)
{
	if (*kept < cap) {
		out[(*kept)++] = *x;
	} else if (cap > 0 && faster(x, &out[cap - 1]) < 0) {
		out[cap - 1] = *x;
	} else {
		return;
	}
	qsort(out, (size_t)*kept, sizeof(*out), faster);
}

void llmt_autoplan(const llmt_config *c, const llmt_autoplan_in *in, llmt_autoplan_cand *out,
	int cap, int *n, llmt_autoplan_rejects *rj)
{
	static const int Bs[] = { 1, 2, 4, 8, 16 };
	int world = in->nodes * in->tasks_per_node, kept = 0;
	int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
	int nB = in->B ? 1 : (int)(sizeof(Bs) / sizeof(Bs[0]));
	int r0 = in->recompute < 0 ? 0 : in->recompute;
	int r1 = in->recompute < 0 ? 2 : in->recompute;

	if (rj)
		memset(rj, 0, sizeof(*rj));
	*n = 0;
	/* tp inside the TP domain, pp at most the layers: the loops stay short
	 * whatever the allocation */
	for (int tp = 1; tp <= world && tp <= in->tp_domain; tp++) {
		if (world % tp || (in->fix_tp && tp != in->fix_tp))
			continue;
		for (int pp = 1; pp <= world / tp && pp <= c->n_layers; pp++) {
			if ((world / tp) % pp || (in->fix_pp && pp != in->fix_pp) ||
			    (in->fix_dp && world / tp / pp != in->fix_dp))
				continue;
			llmt_autoplan_cand x = { tp, pp, world / tp / pp, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
			if (c->n_heads % tp || kv % tp || c->d_ff % tp) {
				reject(rj, LLMT_AP_HEADS, &x, "");
				continue;
			}
			if (c->n_layers % pp) {
				reject(rj, LLMT_AP_LAYERS, &x, "");
				continue;
			}
			if (in->tp_domain % tp) {
				reject(rj, LLMT_AP_DOMAIN, &x, "");
				continue;
			}
			for (int b = 0; b < nB; b++) {
				x.B = in->B ? in->B : Bs[b];
				if (in->global_batch % ((long)x.dp * x.B)) {
					reject(rj, LLMT_AP_BATCH, &x, "");
					continue;
				}
				x.A = (int)(in->global_batch / ((long)x.dp * x.B));
				int none_fits = 0;
				for (int r = r0; r <= r1; r++) {
					char more[64];
					x.recompute = r;
					x.rc_layers = 0;
					if (llmt_autoplan_price(c, in, &x)) {
						snprintf(more, sizeof(more), " recompute %s: %.2f GiB",
							llmt_recompute_name((llmt_recompute)r), x.mem / 1073741824.0);
						reject(rj, LLMT_AP_MEMORY, &x, more);
						continue;
					}
					none_fits |= r == LLMT_RECOMPUTE_NONE;
					(*n)++;
					keep(out, cap, &kept, &x);
					if (r == LLMT_RECOMPUTE_FULL && in->recompute < 0 && !none_fits &&
					    fewest_layers(c, in, &x)) {
						(*n)++;
						keep(out, cap, &kept, &x);
					}
				}
			}
		}
	}
}

int llmt_autoplan_min_nodes(const llmt_config *c, const llmt_autoplan_in *in, int max_nodes)
{
	llmt_autoplan_in more = *in;
	llmt_autoplan_cand best;
	int n;

	if (in->overhead >= in->margin * in->mem_limit)
		return 0;
	for (long k = in->nodes; k <= max_nodes; k += k - in->nodes < 64 ? 1 : (k / 64 > 1 ? k / 64 : 1)) {
		if (k * in->tasks_per_node > LLMT_AUTOPLAN_MAX_RANKS)
			break;
		more.nodes = (int)k;
		llmt_autoplan(c, &more, &best, 1, &n, NULL);
		if (n)
			return more.nodes;
	}
	return 0;
}
