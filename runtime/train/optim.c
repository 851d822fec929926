/* optim.c: ZeRO-1 AdamW. Each DP rank owns one contiguous range so its
 * state maps onto logical tensor ranges for checkpoints; the n % dp tail is
 * all-reduced (a few elements) so the reduce-scatter blocks stay equal. */
#include "optim.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "llmt/clock.h"

/* Fixed chunks summed in a fixed order: the same bits for any thread
 * count or timing (an OpenMP reduction combines in arrival order), which
 * bit-exact resume needs. */
double llmt_sumsq_det(const float *x, size_t n)
{
	enum { CHUNK = 8192 };
	size_t nc = (n + CHUNK - 1) / CHUNK;
	double stackp[64], *part = nc <= 64 ? stackp : malloc(sizeof(double) * nc), s = 0;

	if (!part) { /* out of memory: the sequential sum is just as exact */
		for (size_t i = 0; i < n; i++)
			s += (double)x[i] * (double)x[i];
		return s;
	}
#pragma omp parallel for schedule(static)
	for (size_t c = 0; c < nc; c++) {
		size_t e = (c + 1) * CHUNK < n ? (c + 1) * CHUNK : n;
		double p = 0;
		for (size_t i = c * CHUNK; i < e; i++)
			p += (double)x[i] * (double)x[i];
		part[c] = p;
	}
	for (size_t c = 0; c < nc; c++)
		s += part[c];
	if (part != stackp)
		free(part);
	return s;
}

double llmt_clip_scale(double norm, double clip)
{
	if (clip <= 0 || !isfinite(norm) || norm <= clip)
		return 1.0;
	return clip / (norm + 1e-6);
}

void llmt_adamw_update(float *p, const float *g, float *m, float *v, size_t n,
	double lr, double gscale, const llmt_adamw_cfg *cfg, long t, int decay)
{
	const float b1 = (float)cfg->beta1, b2 = (float)cfg->beta2;
	const float omb1 = (float)(1.0 - cfg->beta1), omb2 = (float)(1.0 - cfg->beta2);
	const float keep = decay ? (float)(1.0 - lr * cfg->weight_decay) : 1.0f;
	const double bc1 = 1.0 - pow(cfg->beta1, (double)t);
	const double bc2 = 1.0 - pow(cfg->beta2, (double)t);
	const float step = (float)(lr / bc1), bc2s = (float)sqrt(bc2), eps = (float)cfg->eps;
	const float gs = (float)gscale;

#pragma omp parallel for simd schedule(static)
	for (size_t i = 0; i < n; i++) {
		float gi = gscale == 1.0 ? g[i] : g[i] * gs;
		float pi = p[i] * keep;
		float mi = m[i] * b1 + gi * omb1;
		float vi = v[i] * b2 + gi * gi * omb2;
		float denom = sqrtf(vi) / bc2s + eps;
		m[i] = mi;
		v[i] = vi;
		p[i] = pi + (-step) * (mi / denom);
	}
}

int llmt_optim_init(llmt_optim *o, const llmt_adamw_cfg *cfg, size_t n,
	const llmt_optim_seg *segs, int nsegs, llmt_comm *dp_comm, llmt_comm *norm_comm)
{
	return llmt_optim_init_share(o, cfg, n, segs, nsegs, dp_comm, norm_comm, 0);
}

int llmt_optim_init_share(llmt_optim *o, const llmt_adamw_cfg *cfg, size_t n,
	const llmt_optim_seg *segs, int nsegs, llmt_comm *dp_comm, llmt_comm *norm_comm,
	int master_share)
{
	size_t len;

	memset(o, 0, sizeof(*o));
	o->master_share = master_share;
	o->cfg = *cfg;
	o->n = n;
	o->dp_comm = dp_comm;
	o->norm_comm = norm_comm;
	o->dp = dp_comm ? llmt_comm_size(dp_comm) : 1;
	o->dp_rank = dp_comm ? llmt_comm_rank(dp_comm) : 0;
	if (n < (size_t)o->dp) {
		fprintf(stderr, "llm-train: data parallelism %d too large for %zu parameters\n", o->dp, n);
		return -1;
	}
	o->block = n / (size_t)o->dp;
	llmt_zero1_range(n, o->dp, o->dp_rank, &o->lo, &o->hi);
	len = o->hi - o->lo;
	o->m = calloc(len, sizeof(float));
	o->v = calloc(len, sizeof(float));
	if (o->dp > 1) { /* one process: the model's gradient buffer is used as is */
		o->g = calloc(len, sizeof(float));
		if (!master_share)
			o->tmp = calloc(o->block, sizeof(float));
	}
	o->tail = calloc((size_t)o->dp, sizeof(float));
	o->segs = malloc(sizeof(*segs) * (size_t)(nsegs ? nsegs : 1));
	if (!o->m || !o->v || (o->dp > 1 && (!o->g || (!master_share && !o->tmp))) || !o->tail ||
	    !o->segs) {
		fprintf(stderr, "llm-train: out of memory for the optimizer state (%zu elements)\n", len);
		llmt_optim_free(o);
		return -1;
	}
	memcpy(o->segs, segs, sizeof(*segs) * (size_t)nsegs);
	o->nsegs = nsegs;
	return 0;
}

void llmt_optim_free(llmt_optim *o)
{
	free(o->m);
	free(o->v);
	free(o->g);
	free(o->tmp);
	free(o->tail);
	free(o->segs);
	memset(o, 0, sizeof(*o));
}

int llmt_optim_reduce(llmt_optim *o, const float *grads, double *norm)
{
	size_t rest = o->n - o->block * (size_t)o->dp;
	double ss = 0, t0 = llmt_mono_s();

	o->comm_s = 0;
	if (o->dp == 1) {
		o->gv = grads;
	} else {
		o->gv = o->g;
		if (llmt_comm_reduce_scatter_sum_f32(o->dp_comm, grads, o->g, o->block))
			return -1;
		if (rest) {
			memcpy(o->tail, grads + o->block * (size_t)o->dp, sizeof(float) * rest);
			if (llmt_comm_allreduce_sum_f32(o->dp_comm, o->tail, rest))
				return -1;
			if (o->dp_rank == o->dp - 1)
				memcpy(o->g + o->block, o->tail, sizeof(float) * rest);
		}
		o->comm_s += llmt_mono_s() - t0;
	}
	for (int s = 0; s < o->nsegs; s++) {
		const llmt_optim_seg *sg = &o->segs[s];
		size_t a = sg->offset > o->lo ? sg->offset : o->lo;
		size_t b = sg->offset + sg->numel < o->hi ? sg->offset + sg->numel : o->hi;
		if (!sg->in_norm || a >= b)
			continue;
		ss += llmt_sumsq_det(o->gv + (a - o->lo), b - a);
	}
	t0 = llmt_mono_s();
	if (o->norm_comm && llmt_comm_size(o->norm_comm) > 1 &&
	    llmt_comm_allreduce_sum_f64(o->norm_comm, &ss, 1))
		return -1;
	o->comm_s += llmt_mono_s() - t0;
	*norm = sqrt(ss);
	return 0;
}

int llmt_optim_step(llmt_optim *o, float *master, double lr, double norm)
{
	double scale = llmt_clip_scale(norm, o->cfg.grad_clip);
	size_t rest = o->n - o->block * (size_t)o->dp, mb = o->master_share ? o->lo : 0;
	double t0;

	o->t++;
	for (int s = 0; s < o->nsegs; s++) {
		const llmt_optim_seg *sg = &o->segs[s];
		size_t a = sg->offset > o->lo ? sg->offset : o->lo;
		size_t b = sg->offset + sg->numel < o->hi ? sg->offset + sg->numel : o->hi;
		if (a >= b)
			continue;
		llmt_adamw_update(master + (a - mb), o->gv + (a - o->lo), o->m + (a - o->lo),
			o->v + (a - o->lo), b - a, lr, scale, &o->cfg, o->t, sg->decay);
	}
	if (o->dp == 1 || o->master_share)
		return 0;
	t0 = llmt_mono_s();
	memcpy(o->tmp, master + o->lo, sizeof(float) * o->block);
	if (llmt_comm_allgather_f32(o->dp_comm, o->tmp, master, o->block))
		return -1;
	if (rest && llmt_comm_bcast_bytes(o->dp_comm, master + o->block * (size_t)o->dp,
			sizeof(float) * rest, o->dp - 1))
		return -1;
	o->comm_s += llmt_mono_s() - t0;
	return 0;
}
