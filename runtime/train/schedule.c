/* schedule.c: warmup + cosine decay (the GPT-3 / llm.c schedule). */
#include "schedule.h"
#include <math.h>

double llmt_schedule_lr(const llmt_schedule *s, long step)
{
	double frac;

	if (step < s->warmup)
		return s->lr * (double)(step + 1) / (double)s->warmup;
	if (step >= s->total || s->total <= s->warmup)
		return step >= s->total ? s->min_lr : s->lr;
	frac = (double)(step - s->warmup) / (double)(s->total - s->warmup);
	return s->min_lr + 0.5 * (1.0 + cos(M_PI * frac)) * (s->lr - s->min_lr);
}
