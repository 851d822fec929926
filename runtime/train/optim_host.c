/* optim_host.c: the training loop's optimizer on the host (optim.h
 * interface): ZeRO-1 AdamW of optim.c over the model's host master and
 * gradient buffers, with the tied-embedding gradient exchange between the
 * first and last pipeline stage. A bf16 model with dp > 1 keeps only this
 * rank's share of the fp32 master (llmt_model_create_share): after a step
 * the bf16 weights are all-gathered and the fp32 copies the kernels read
 * broadcast from their owners, instead of the fp32 master. The device
 * implementation is gpu/bridge_optim.c. */
#include "optim.h"
#include "sdc.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/model.h"
#include "llmt/clock.h"

typedef struct {
	llmt_trainopt base;
	llmt_optim o;
	llmt_model *m;
	llmt_opt_env e;
	const llmt_param_info *tied;   /* this stage's copy of the tied embedding, or NULL */
	int share;                     /* the model's master is this rank's ZeRO-1 share */
} host_opt;

enum { TAG_TIED_UP = 201, TAG_TIED_DOWN = 202 };

int llmt_tied_sum(llmt_comm *pp_comm, int pp, int pp_rank, float *g, size_t n)
{
	size_t bytes = sizeof(float) * n;
	float *tmp = malloc(bytes ? bytes : 1);
	int rc;

	if (!tmp)
		return -1;
	/* first stage sends then receives, last receives then sends */
	if (pp_rank == 0)
		rc = llmt_comm_send_bytes(pp_comm, g, bytes, pp - 1, TAG_TIED_UP) ||
		     llmt_comm_recv_bytes(pp_comm, tmp, bytes, pp - 1, TAG_TIED_DOWN);
	else
		rc = llmt_comm_recv_bytes(pp_comm, tmp, bytes, 0, TAG_TIED_UP) ||
		     llmt_comm_send_bytes(pp_comm, g, bytes, 0, TAG_TIED_DOWN);
	if (!rc)
		for (size_t k = 0; k < n; k++)
			g[k] += tmp[k];
	free(tmp);
	return rc ? -1 : 0;
}

static int h_finish(llmt_trainopt *b, double *norm)
{
	host_opt *h = (host_opt *)b;
	int rc;

	if (h->tied && llmt_tied_sum(h->e.pp_comm, h->e.pp, h->e.pp_rank,
			llmt_model_grads(h->m) + h->tied->offset, h->tied->numel))
		return -1;
	rc = llmt_optim_reduce(&h->o, llmt_model_grads(h->m), norm);
	b->comm_s = h->o.comm_s;
	return rc;
}

/* A share's weights to every replica: this rank's compute copies
 * refreshed, the bf16 blocks all-gathered (staged in the reduced gradient,
 * free after the step; the n % dp tail from the last rank), each rank's
 * part of the fp32 copies broadcast from it. 0 or -1. */
static int spread(host_opt *h)
{
	llmt_optim *o = &h->o;
	uint16_t *wc = llmt_model_compute_bf16(h->m);
	size_t nf, rest = o->n - o->block * (size_t)o->dp;
	float *wf = llmt_model_f32_copies(h->m, &nf);

	llmt_model_sync_compute(h->m);
	memcpy(o->g, wc + o->lo, o->block * sizeof(*wc));
	if (llmt_comm_allgather_bytes(o->dp_comm, o->g, wc, o->block * sizeof(*wc)))
		return -1;
	if (rest && llmt_comm_bcast_bytes(o->dp_comm, wc + o->block * (size_t)o->dp,
			rest * sizeof(*wc), o->dp - 1))
		return -1;
	for (int r = 0; r < o->dp; r++) {
		size_t lo, hi, a, z;
		llmt_zero1_range(o->n, o->dp, r, &lo, &hi);
		a = llmt_model_f32_at(h->m, lo);
		z = llmt_model_f32_at(h->m, hi);
		if (z > a && llmt_comm_bcast_bytes(o->dp_comm, wf + a, (z - a) * sizeof(float), r))
			return -1;
	}
	return 0;
}

static int h_step(llmt_trainopt *b, double lr, double norm)
{
	host_opt *h = (host_opt *)b;
	int rc = llmt_optim_step(&h->o, llmt_model_master(h->m), lr, norm);
	double t0 = llmt_mono_s();

	b->t = h->o.t;
	if (!rc && h->share) {
		rc = spread(h);
		h->o.comm_s += llmt_mono_s() - t0;
	} else if (!rc) {
		llmt_model_sync_compute(h->m);
	}
	b->comm_s = h->o.comm_s;
	return rc;
}

static int h_poke(llmt_trainopt *b, llmt_poke what, size_t *at)
{
	host_opt *h = (host_opt *)b;
	int np;
	const llmt_param_info *pi = llmt_model_params(h->m, &np);
	float *g = llmt_model_grads(h->m);
	size_t n = llmt_model_nparams(h->m);

	*at = 0;
	switch (what) {
	case LLMT_POKE_NAN:
		g[0] = (float)NAN;
		break;
	case LLMT_POKE_SPIKE:
		for (size_t i = 0; i < n; i++)
			g[i] *= 1000;
		break;
	case LLMT_POKE_BITFLIP:
		*at = np ? pi[0].offset : 0;
		llmt_model_flip_bit(h->m, *at, 22);
		break;
	case LLMT_POKE_MASTERFLIP:
		return h->share ? llmt_model_flip_master(h->m, 30, at) : -1;
	}
	return 0;
}

static int h_share_check(llmt_trainopt *b, size_t *bad)
{
	host_opt *h = (host_opt *)b;

	*bad = h->share ? llmt_model_share_check(h->m) : 0;
	return 0;
}

/* the weights the replicas hold alike: the master, or with a share the
 * bf16 weights widened into the gradient buffer (free between steps) */
static const float *replica_weights(llmt_trainopt *b)
{
	host_opt *h = (host_opt *)b;

	return h->share ? llmt_model_replica_weights(h->m, llmt_model_grads(h->m))
	                : llmt_model_master(h->m);
}

/* the checkpoint writer copies the live buffers itself */
static int h_snapshot(llmt_trainopt *b)
{
	(void)b;
	return 0;
}

static int h_state(llmt_trainopt *b, int with_state, llmt_opt_state *s)
{
	host_opt *h = (host_opt *)b;

	s->master = llmt_model_master(h->m);
	s->n = llmt_model_nparams(h->m);
	s->m = with_state ? h->o.m : NULL;
	s->v = with_state ? h->o.v : NULL;
	s->lo = h->o.lo;
	s->hi = h->o.hi;
	s->master_share = h->share;
	return 0;
}

static int h_saved(llmt_trainopt *b, llmt_opt_state *s)
{
	return h_state(b, 1, s);
}

static int h_loaded(llmt_trainopt *b, long t, int with_state)
{
	host_opt *h = (host_opt *)b;

	if (with_state)
		h->o.t = b->t = t;
	if (h->share)
		return spread(h);
	llmt_model_sync_compute(h->m);
	return 0;
}

static void h_free(llmt_trainopt *b)
{
	host_opt *h = (host_opt *)b;

	if (!h)
		return;
	llmt_optim_free(&h->o);
	free(h);
}

static int h_weights_sum(llmt_trainopt *b, uint64_t *sum)
{
	host_opt *h = (host_opt *)b;

	*sum = llmt_checksum_f32(replica_weights(b), llmt_model_nparams(h->m));
	return 0;
}

static const struct llmt_trainopt_ops host_ops = {
	h_finish, h_step, h_poke, h_snapshot, h_saved, h_state, h_loaded, h_free,
	h_share_check, h_weights_sum,
};

llmt_trainopt *llmt_trainopt_host(llmt_model *m, const llmt_opt_env *e)
{
	int np;
	const llmt_param_info *pi = llmt_model_params(m, &np);
	llmt_optim_seg *segs = calloc((size_t)np + 1, sizeof(*segs));
	host_opt *h = calloc(1, sizeof(*h));
	int last = e->pp_rank == e->pp - 1;
	size_t mlo, mhi;

	if (!segs || !h) {
		fprintf(stderr, "llm-train: out of memory for the optimizer\n");
		free(segs);
		free(h);
		return NULL;
	}
	for (int i = 0; i < np; i++) {
		segs[i].offset = pi[i].offset;
		segs[i].numel = pi[i].numel;
		segs[i].decay = !pi[i].no_decay;
		segs[i].in_norm = !pi[i].tied_copy && (pi[i].split_dim >= 0 || e->tp_rank == 0);
		if (e->tied && !strcmp(pi[i].name, "model.embed_tokens.weight") &&
		    pi[i].tied_copy == last && (e->pp_rank == 0 || last))
			h->tied = &pi[i];
	}
	llmt_model_master_range(m, &mlo, &mhi);
	h->share = mlo > 0 || mhi < llmt_model_nparams(m);
	if (llmt_optim_init_share(&h->o, e->cfg, llmt_model_nparams(m), segs, np, e->dp_comm, e->all,
			h->share)) {
		free(segs);
		free(h);
		return NULL;
	}
	free(segs);
	if (h->share && (mlo != h->o.lo || mhi != h->o.hi)) {
		fprintf(stderr, "llm-train: internal error: the model's master share [%zu, %zu) is not "
			"this rank's ZeRO-1 range [%zu, %zu)\n", mlo, mhi, h->o.lo, h->o.hi);
		h_free(&h->base);
		return NULL;
	}
	if (e->tied && (e->pp_rank == 0 || last) && !h->tied) {
		fprintf(stderr, "llm-train: tied embedding not found in the parameter table\n");
		h_free(&h->base);
		return NULL;
	}
	h->m = m;
	h->e = *e;
	h->base.ops = &host_ops;
	h->base.where = "host";
	return &h->base;
}
