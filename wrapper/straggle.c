/* straggle: the straggler's step count and the replacement's cost
 * (straggle.h). */
#include "straggle.h"

#include <stdio.h>

#include "hang.h"

void wr_strag_feed(struct wr_strag *s, int r, long steps, double compute_total)
{
	if (r < 0 || r >= s->n)
		return;
	struct wr_strag_rank *x = &s->r[r];
	x->fresh = 0;
	if (steps < x->steps) {   /* a new process: start over */
		x->steps = 0;
		x->compute = 0;
	}
	if (steps > x->steps && compute_total >= x->compute) {
		x->fresh = steps - x->steps;
		x->per_step = (compute_total - x->compute) / (double)x->fresh;
		x->steps = steps;
		x->compute = compute_total;
	}
}

int wr_strag_judge(struct wr_strag *s, double *median, double *ratio)
{
	double v[1024];
	int m = 0;
	*median = *ratio = 0;
	for (int i = 0; i < s->n && m < 1024; i++)
		if (s->r[i].per_step > 0)
			v[m++] = s->r[i].per_step;
	if (m < 3)
		return -1;   /* a median of two says nothing about who is slow */
	double med = wr_median(v, m);
	int worst = -1;
	for (int i = 0; i < s->n; i++) {
		struct wr_strag_rank *x = &s->r[i];
		if (!x->fresh)
			continue;
		x->over = x->per_step > s->factor * med ? x->over + x->fresh : 0;
		if (x->over >= s->k && (worst < 0 || x->per_step > s->r[worst].per_step))
			worst = i;
	}
	*median = med;
	if (worst >= 0)
		*ratio = med > 0 ? s->r[worst].per_step / med : 0;
	return worst;
}

void wr_strag_cost(struct wr_strag_cost *c)
{
	long left = c->total_steps > c->step ? c->total_steps - c->step : 0;
	long lost = c->step > c->ckpt_step ? c->step - c->ckpt_step : 0;
	double per = c->slow_s > c->median_s ? c->slow_s - c->median_s : 0;
	c->slowdown_s = per * (double)left;
	c->lost_s = (double)lost * c->step_s;
	c->restart_cost_s = c->restart_s + c->lost_s;
	c->replace = c->spare && c->total_steps > 0 && c->slowdown_s > c->restart_cost_s;
	if (c->total_steps <= 0) {
		snprintf(c->why, sizeof c->why, "steps left unknown (no --steps in the command): report only");
		return;
	}
	snprintf(c->why, sizeof c->why,
	         "slowdown (%.3f - %.3f) s x %ld steps left = %.1f s %s restart %.1f s + lost work "
	         "%ld steps x %.3f s = %.1f s%s", c->slow_s, c->median_s, left, c->slowdown_s,
	         c->slowdown_s > c->restart_cost_s ? ">" : "<=", c->restart_s, lost, c->step_s,
	         c->restart_cost_s, c->replace ? ": replace by a spare"
	         : c->slowdown_s > c->restart_cost_s ? ": no spare, report only" : ": report only");
}
