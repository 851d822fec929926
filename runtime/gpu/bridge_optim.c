/* bridge_optim.c: the training loop's optimizer for a model on a GPU (the
 * optim.h interface, made by llmt_dev_optim): ZeRO-1 over NCCL on device
 * buffers (the reduce-scatter overlaps the step's last backward, gmodel.h),
 * norm partials, clipping and fused AdamW on the device and the weight
 * all-gather (gmodel_opt.h), the share's SDC check; only scalars (the
 * norm, the share check's count), the tied embedding
 * gradient (pp > 1) and checkpoint snapshots cross to the host. The
 * checkpoint layout is the host optimizer's (AdamW state over this DP
 * rank's llmt_zero1_range), so GPU and CPU runs resume each other. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "comm_nccl.h"
#include "bridge_int.h"
#include "gmodel_impl.h"
#include "gmodel_opt.h"
#include "llmt/clock.h"
#include "train/sdc.h"

typedef struct {
	llmt_trainopt base;
	llmt_bridge *b;
	llmt_gmodel *g;
	llmt_gopt *go;
	struct llmt_nccl *dp;
	llmt_opt_env e;
	llmt_adamw_cfg cfg;
	size_t n, ck_lo, ck_hi;       /* flat length; checkpoint range of m, v */
	const llmt_param_info *tied;  /* this stage's tied embedding copy, or NULL */
	float *tied_h;                /* its gradient on the host for the exchange */
	float *ld_w, *ld_m, *ld_v;    /* resume: master (dp > 1), m and v over [ck_lo, ck_hi) */
} dev_opt;

static int d_finish(llmt_trainopt *o, double *norm)
{
	dev_opt *d = (dev_opt *)o;
	double t0 = llmt_mono_s(), ss;
	/* the reduce-scatter launched during backward, then the tied copies:
	 * both stages make the copy whole over DP and add the other's */
	if (llmt_gmodel_dp_wait(d->g))
		return -1;
	if (d->tied) {
		size_t at = d->tied->offset, k = d->tied->numel;
		if (llmt_gopt_grads_whole(d->go, at, at + k) ||
			llmt_gopt_get(d->go, LLMT_GBUF_GRADS, at, k, d->tied_h) ||
			llmt_tied_sum(d->e.pp_comm, d->e.pp, d->e.pp_rank, d->tied_h, k) ||
			llmt_gopt_put(d->go, LLMT_GBUF_GRADS, at, k, d->tied_h))
			return -1;
	}
	o->comm_s = llmt_mono_s() - t0;     /* waiting for the reduction, tied exchange */
	if (llmt_gopt_sumsq(d->go, &ss))
		return -1;
	t0 = llmt_mono_s();
	if (d->e.all && llmt_comm_size(d->e.all) > 1 && llmt_comm_allreduce_sum_f64(d->e.all, &ss, 1))
		return -1;
	o->comm_s += llmt_mono_s() - t0;
	*norm = sqrt(ss);
	return 0;
}

static int d_step(llmt_trainopt *o, double lr, double norm)
{
	dev_opt *d = (dev_opt *)o;
	double t0 = llmt_mono_s();
	o->t++;
	int rc = llmt_gopt_update(d->go, lr, llmt_clip_scale(norm, d->cfg.grad_clip), &d->cfg, o->t);
	o->comm_s += llmt_mono_s() - t0;    /* the update waits for the weight all-gather */
	return rc;
}

/* host buffers of the device optimizer: HOST_CHUNK floats (4 MiB) */
#define HOST_CHUNK ((size_t)1 << 20)

/* the reduced gradients x1000, a host buffer at a time */
static int spike(dev_opt *d)
{
	float *b = malloc(sizeof(float) * HOST_CHUNK);
	int rc = b && !llmt_gmodel_dp_wait(d->g) ? 0 : -1;
	for (size_t at = 0; !rc && at < d->n; at += HOST_CHUNK) {
		size_t k = d->n - at < HOST_CHUNK ? d->n - at : HOST_CHUNK;
		rc = llmt_gopt_get(d->go, LLMT_GBUF_GRADS, at, k, b);
		for (size_t i = 0; !rc && i < k; i++)
			b[i] *= 1000;
		rc = rc || llmt_gopt_put(d->go, LLMT_GBUF_GRADS, at, k, b);
	}
	free(b);
	return rc;
}

static int d_poke(llmt_trainopt *o, llmt_poke what, size_t *at)
{
	dev_opt *d = (dev_opt *)o;
	llmt_model *h = d->g->h;
	float x;
	uint32_t bits;
	int np;
	*at = 0;
	switch (what) {
	case LLMT_POKE_NAN:     /* in this rank's share, so the norm sees it */
		*at = llmt_gopt_first(d->go);
		x = (float)NAN;
		return llmt_gmodel_dp_wait(d->g) ||
			   (*at < d->n && llmt_gopt_put(d->go, LLMT_GBUF_GRADS, *at, 1, &x)) ? -1 : 0;
	case LLMT_POKE_SPIKE:
		return spike(d);
	case LLMT_POKE_BITFLIP:
		*at = llmt_model_params(h, &np)[0].offset;
		if (llmt_gopt_get(d->go, LLMT_GBUF_MASTER, *at, 1, &x))
			return -1;
		memcpy(&bits, &x, 4);
		bits ^= 1u << 22;
		memcpy(&x, &bits, 4);
		return llmt_gopt_put(d->go, LLMT_GBUF_MASTER, *at, 1, &x);
	case LLMT_POKE_MASTERFLIP:  /* this rank's fp32 share alone: a fault at rest */
		*at = llmt_gopt_first(d->go);
		if (!d->dp || *at >= d->n || llmt_gmodel_dp_wait(d->g) ||
			llmt_gopt_get(d->go, LLMT_GBUF_SHARE, *at, 1, &x))
			return -1;
		memcpy(&bits, &x, 4);
		bits ^= 1u << 30;
		memcpy(&x, &bits, 4);
		return llmt_gopt_put(d->go, LLMT_GBUF_SHARE, *at, 1, &x);
	}
	return -1;
}

/* the ZeRO-1 share against the weights it gave the replicas (a share
 * only with dp > 1) */
static int d_share_check(llmt_trainopt *o, size_t *bad)
{
	dev_opt *d = (dev_opt *)o;
	*bad = 0;
	return d->dp ? llmt_gopt_share_check(d->go, bad) : 0;
}

static int d_snapshot(llmt_trainopt *o)
{
	return llmt_gopt_snapshot(((dev_opt *)o)->go);
}

static int d_saved(llmt_trainopt *o, llmt_opt_state *s)
{
	dev_opt *d = (dev_opt *)o;
	const float *w, *m, *v;
	uint64_t hash;
	if (llmt_gopt_snapshot_wait(d->go, &w, &m, &v, &hash))
		return -1;
	/* dp > 1: the part of the master this rank writes, and the whole's
	 * replica hash */
	s->master_part = d->dp != NULL;
	s->master_hash = hash;
	/* the writer only reads them */
	s->master = (float *)(uintptr_t)w;
	s->m = (float *)(uintptr_t)m;
	s->v = (float *)(uintptr_t)v;
	s->n = d->n;
	s->lo = d->ck_lo;
	s->hi = d->ck_hi;
	return 0;
}

static void drop_load(dev_opt *d)
{
	free(d->ld_w);
	free(d->ld_m);
	free(d->ld_v);
	d->ld_w = d->ld_m = d->ld_v = NULL;
}

/* each rank loads the checkpoint's ZeRO-1 range of master, m and v (its
 * device share, bucket blocks, is not one range: loaded() gathers the
 * ranges on the device); dp = 1: the range is the whole buffer, the
 * master the host mirror's */
static int d_load_into(llmt_trainopt *o, int with_state, llmt_opt_state *s)
{
	dev_opt *d = (dev_opt *)o;
	size_t k = d->ck_hi - d->ck_lo;
	drop_load(d);
	if ((d->dp ? !(d->ld_w = calloc(k ? k : 1, 4)) : ghost_master(d->g) != 0) ||
		(with_state && (!(d->ld_m = calloc(k ? k : 1, 4)) || !(d->ld_v = calloc(k ? k : 1, 4))))) {
		drop_load(d);
		return -1;
	}
	s->master = d->dp ? d->ld_w : d->g->h->master;
	s->master_share = d->dp != NULL;
	s->n = d->n;
	s->m = d->ld_m;
	s->v = d->ld_v;
	s->lo = d->ck_lo;
	s->hi = d->ck_hi;
	return 0;
}

static int d_loaded(llmt_trainopt *o, long t, int with_state)
{
	dev_opt *d = (dev_opt *)o;
	int rc = llmt_gopt_restore_range(d->go, d->dp ? d->ld_w : d->g->h->master,
									 with_state ? d->ld_m : NULL, with_state ? d->ld_v : NULL);
	drop_load(d);
	llmt_gmodel_drop_host_master(d->g);
	if (with_state)
		o->t = t;
	return rc;
}

static void d_free(llmt_trainopt *o)
{
	dev_opt *d = (dev_opt *)o;
	if (!d)
		return;
	llmt_gopt_free(d->go);
	if (d->g) {
		gag_finish(d->g);       /* the last step's weight all-gather */
		llmt_gmodel_sync(d->g);
	}
	if (d->dp) {
		d->g->dp = NULL;        /* the model no longer reduces */
		llmt_nccl_free(d->dp);
	}
	if (d->b)
		d->b->A = 0;
	drop_load(d);
	free(d->tied_h);
	free(d);
}

/* the weights the replicas hold alike a piece at a time (gopt_get: the
 * bf16 copy widened with dp > 1, else the master) through a host buffer
 * of HOST_CHUNK */
static int d_weights_sum(llmt_trainopt *o, uint64_t *sum)
{
	dev_opt *d = (dev_opt *)o;
	float *b = malloc(sizeof(float) * HOST_CHUNK);
	uint64_t h = llmt_checksum_start(d->n);
	int rc = b ? 0 : -1;
	for (size_t at = 0; !rc && at < d->n; at += HOST_CHUNK) {
		size_t k = d->n - at < HOST_CHUNK ? d->n - at : HOST_CHUNK;
		rc = llmt_gopt_get(d->go, LLMT_GBUF_MASTER, at, k, b);
		h = rc ? h : llmt_checksum_add(h, b, k);
	}
	free(b);
	*sum = llmt_checksum_end(h);
	return rc;
}

static const struct llmt_trainopt_ops dev_ops = {
	d_finish, d_step, d_poke, d_snapshot, d_saved, d_load_into, d_loaded, d_free,
	d_share_check, d_weights_sum,
};

/* The norm runs: consecutive tensors counted in the global norm (as the
 * host optimizer: tied copies once, TP-replicated tensors on tp_rank 0). */
static int norm_runs(const llmt_param_info *pi, int np, size_t n, int tp_rank, size_t *lo,
					 size_t *hi)
{
	int nr = 0;
	for (int i = 0; i < np; i++) {
		int in = !pi[i].tied_copy && (pi[i].split_dim >= 0 || tp_rank == 0);
		size_t a = pi[i].offset, b = i + 1 < np ? pi[i + 1].offset : n;
		if (!in)
			continue;
		if (nr && hi[nr - 1] == a)
			hi[nr - 1] = b;
		else {
			lo[nr] = a;
			hi[nr] = b;
			nr++;
		}
	}
	return nr;
}

int llmt_dev_optim(llmt_model *m, const llmt_opt_env *e, llmt_trainopt **out)
{
	if (!llmt_dev_model(m))
		return 0;
	*out = NULL;
	int np, last = e->pp_rank == e->pp - 1, nr;
	size_t ck_lo, ck_hi;
	const llmt_param_info *pi = llmt_model_params(m, &np);
	dev_opt *d = calloc(1, sizeof *d);
	size_t *lo = malloc(sizeof(size_t) * (size_t)(np + 1)), *hi = malloc(sizeof(size_t) * (size_t)(np + 1));
	if (!d || !lo || !hi) {
		fprintf(stderr, "llm-train: out of memory for the GPU optimizer\n");
		goto fail;
	}
	d->b = (llmt_bridge *)m->devctx;
	d->g = d->b->g;
	d->cfg = *e->cfg;
	d->e = *e;
	d->e.cfg = &d->cfg;
	d->n = llmt_model_nparams(m);
	for (int i = 0; e->tied && (e->pp_rank == 0 || last) && i < np; i++)
		if (!strcmp(pi[i].name, "model.embed_tokens.weight") && pi[i].tied_copy == last)
			d->tied = &pi[i];
	if (e->tied && (e->pp_rank == 0 || last) &&
		(!d->tied || !(d->tied_h = malloc(sizeof(float) * d->tied->numel)))) {
		fprintf(stderr, "llm-train: tied embedding not found or out of memory\n");
		goto fail;
	}
	if (e->dp_comm && llmt_comm_size(e->dp_comm) > 1) {
		if (!(d->dp = llmt_nccl_create(e->dp_comm, 0)) ||
			llmt_gmodel_set_dp(d->g, d->dp, gbucket_target(d->n)))
			goto fail;
	}
	/* checkpoints hold the host optimizer's ZeRO-1 range of m and v */
	llmt_zero1_range(d->n, d->dp ? llmt_nccl_size(d->dp) : 1, d->dp ? llmt_nccl_rank(d->dp) : 0,
					 &ck_lo, &ck_hi);
	nr = norm_runs(pi, np, d->n, e->tp_rank, lo, hi);
	d->ck_lo = ck_lo;
	d->ck_hi = ck_hi;
	if (!(d->go = llmt_gopt_create(d->g, &d->cfg, lo, hi, nr, ck_lo, ck_hi)))
		goto fail;
	/* the device holds the weights now (llmt_gopt_create made its master
	 * from the host's): no whole fp32 master stays on the host */
	llmt_gmodel_drop_host_master(d->g);
	free(lo);
	free(hi);
	d->b->A = e->A;
	d->b->nback = 0;
	d->base.ops = &dev_ops;
	d->base.where = "device";
	d->base.async = 1;
	d->base.stable = 1;     /* the pinned snapshot changes at the next one only */
	*out = &d->base;
	return 1;
fail:
	free(lo);
	free(hi);
	d_free(d ? &d->base : NULL);
	return 1;
}
