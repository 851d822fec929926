/* steptime.c: the per-step time breakdown of one rank and the heartbeat's
 * timing line (see steptime.h). */
#include "steptime.h"
#include <stdio.h>

static void add_parts(llmt_st_parts *to, const llmt_st_parts *p)
{
	to->step += p->step;
	to->compute += p->compute;
	for (int g = 0; g < LLMT_ST_NGROUPS; g++)
		to->wait[g] += p->wait[g];
	to->data += p->data;
	to->ckpt += p->ckpt;
}

void llmt_st_add(llmt_steptimes *s, llmt_st_parts p, long long start_ns)
{
	double other = p.data + p.ckpt;

	for (int g = 0; g < LLMT_ST_NGROUPS; g++)
		other += p.wait[g];
	p.compute = p.step > other ? p.step - other : 0;
	if (!s->steps)
		s->first_ns = start_ns;
	s->steps++;
	s->last = p;
	add_parts(&s->total, &p);
}

static int parts(char *buf, size_t len, const llmt_st_parts *p)
{
	return snprintf(buf, len, " %.6f %.6f %.6f %.6f %.6f %.6f %.6f %.6f", p->step, p->compute,
		p->wait[LLMT_ST_TP], p->wait[LLMT_ST_PP], p->wait[LLMT_ST_DP], p->wait[LLMT_ST_ALL], p->data, p->ckpt);
}

int llmt_st_format(char *buf, size_t len, const llmt_steptimes *s)
{
	size_t at = (size_t)snprintf(buf, len, "timing %ld %lld", s->steps, s->first_ns);

	if (at < len)
		at += (size_t)parts(buf + at, len - at, &s->total);
	if (at < len)
		at += (size_t)parts(buf + at, len - at, &s->last);
	if (at < len)
		at += (size_t)snprintf(buf + at, len - at, "\n");
	return at < len ? (int)at : -1;
}
