/* act_plan.c: the table of the activations one layer of the GPU model
 * keeps for backward under each recomputation mode (host_plan.h): the
 * bytes of each buffer and whether it is kept per layer or shared. No
 * CUDA here: gmodel.c allocates from it, memest.c sums it. */
#include <stddef.h>
#include <string.h>
#include "host_plan.h"

void gact_plan_make(const gact_shape *s, gact_plan *p)
{
	size_t M = s->B * s->T, d = s->d, hd = s->hd, Fl = s->Fl, BH = s->B * s->Hl;
	size_t Wq = (s->Hl + 2 * s->KVl) * hd, es = 2;
	memset(p, 0, sizeof *p);
	p->bytes[GA_X_MID] = M * d * 4;
	p->bytes[GA_H1] = M * d * es;
	p->bytes[GA_H2] = M * d * es;
	p->bytes[GA_RSTD1] = M * 4;
	p->bytes[GA_RSTD2] = M * 4;
	if (s->qk_norm) {
		p->bytes[GA_QKV] = M * Wq * (s->fused ? 2 : 4);   /* bf16 on the fused path */
		p->bytes[GA_QR] = M * s->Hl * 4;
		p->bytes[GA_KR] = M * s->KVl * 4;
	}
	p->bytes[GA_Q] = BH * s->T * hd * es;
	if (s->fused) {     /* KV heads once, the logsumexp instead of P */
		p->bytes[GA_K] = M * s->KVl * hd * es;
		p->bytes[GA_V] = M * s->KVl * hd * es;
		p->bytes[GA_LSE] = BH * s->T * 4;
	} else {
		p->bytes[GA_K] = BH * s->T * hd * es;
		p->bytes[GA_V] = BH * s->T * hd * es;
		p->bytes[GA_P] = gattn_p_elems(BH, (int)s->T, s->C) * es;
	}
	p->bytes[GA_ATT] = M * s->Hl * hd * es;
	p->bytes[GA_GU] = M * 2 * Fl * es;
	p->bytes[GA_A] = M * Fl * es;
	for (int i = 0; i < GA_N; i++)
		p->shared[i] = s->recompute == 2 ||
			(s->recompute == 1 && (i == GA_P || i == GA_LSE || i == GA_ATT));
}

size_t gact_bytes(const gact_plan *p, int shared)
{
	size_t n = 0;
	for (int i = 0; i < GA_N; i++)
		if (!p->shared[i] == !shared)
			n += p->bytes[i];
	return n;
}
