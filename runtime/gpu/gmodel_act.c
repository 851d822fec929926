/* gmodel_act.c: the activations the GPU model keeps between a layer's
 * forward and its backward, allocated from act_plan.c's table (the one
 * the device memory estimate sums): per layer and slot, or, for what
 * backward recomputes (llm-train --recompute), one set for all the
 * recomputed layers (the first rc_layers of the stage). */
#include "gmodel_impl.h"

/* buffer i of the table is p */
static void gact_set(struct glayer_act *a, int i, void *p)
{
	switch (i) {
	case GA_X_MID: a->x_mid = p; break;
	case GA_H1: a->h1 = p; break;
	case GA_H2: a->h2 = p; break;
	case GA_RSTD1: a->rstd1 = p; break;
	case GA_RSTD2: a->rstd2 = p; break;
	case GA_QKV: a->qkv = p; break;
	case GA_QR: a->qr = p; break;
	case GA_KR: a->kr = p; break;
	case GA_Q: a->q = p; break;
	case GA_K: a->k = p; break;
	case GA_V: a->v = p; break;
	case GA_P: a->P = p; break;
	case GA_LSE: a->lse = p; break;
	case GA_ATT: a->att = p; break;
	case GA_GU: a->gu = p; break;
	default: a->a = p; break;
	}
}

/* a's buffers of the table that are shared (or not): *a starts as sh */
static int gact_fill(llmt_gmodel *g, const gact_plan *p, int shared,
					 const struct glayer_act *sh, struct glayer_act *a)
{
	*a = *sh;
	for (int i = 0; i < GA_N; i++) {
		void *b;
		if (!p->bytes[i] || !p->shared[i] != !shared)
			continue;
		if (!(b = gdmem(g, p->bytes[i])))
			return -1;
		gact_set(a, i, b);
	}
	return 0;
}

int gact_alloc(llmt_gmodel *g)
{
	const llmt_model *h = g->h;
	gact_shape s = { (size_t)h->B, (size_t)h->T, (size_t)h->c.d_model, (size_t)h->Hl,
					 (size_t)h->KVl, (size_t)h->hd, (size_t)h->Fl, g->attn_chunk,
					 h->c.qk_norm, g->fused, (int)g->rc };
	gact_plan p, p0;      /* of the recomputed layers, of the others */
	struct glayer_act sh = { 0 };
	gact_plan_make(&s, &p);
	s.recompute = LLMT_RECOMPUTE_NONE;
	gact_plan_make(&s, &p0);
	if (g->rc_layers && gact_fill(g, &p, 1, &sh, &sh))
		return -1;
	for (int k = 0; k < h->nslots; k++)
		for (int l = 0; l < h->nl; l++)
			if (gact_fill(g, l < g->rc_layers ? &p : &p0, 0, &sh, &g->slots[k].la[l]))
				return -1;
	return 0;
}
