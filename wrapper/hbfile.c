/* hbfile: parsers of the rank and node heartbeat files (see hbfile.h). */
#include "hbfile.h"

#include <stdlib.h>
#include <string.h>

static char *next_line(char **p)
{
	char *s = *p, *e;

	if (!s || !*s)
		return NULL;
	e = strchr(s, '\n');
	if (e) {
		*e = 0;
		*p = e + 1;
	} else {
		*p = s + strlen(s);
	}
	return s;
}

int wr_hb_rank_text(char *text, struct wr_hb *h)
{
	char *p = text, *l = next_line(&p);

	if (!l || wr_hb_parse(l, h))
		return -1;
	if ((l = next_line(&p)))
		wr_rank_times_parse(l, &h->t);
	return 0;
}

bool wr_hbold_has(const struct wr_hbold *o, const struct wr_hb *h)
{
	for (int i = 0; o && i < o->n; i++)
		if (o->k[i].step == h->step && o->k[i].time == h->time && o->k[i].phase == (int)h->phase)
			return true;
	return false;
}

void wr_hbold_add(struct wr_hbold *o, const struct wr_hb *h)
{
	int i = o->n;

	if (wr_hbold_has(o, h))
		return;
	if (i < WR_HB_OLD)
		o->n++;
	else   /* full: the oldest content time goes */
		for (int j = i = 0; j < WR_HB_OLD; j++)
			if (o->k[j].time < o->k[i].time)
				i = j;
	o->k[i].step = h->step;
	o->k[i].time = h->time;
	o->k[i].phase = (int)h->phase;
}

bool wr_hb_take(const struct wr_hbtake *t, long r, const struct wr_hb *h)
{
	if (r < 0 || r >= t->n || !h->valid)
		return false;
	if (t->snap) {
		wr_hbold_add(&t->snap[r], h);
		return false;
	}
	if (t->old && wr_hbold_has(&t->old[r], h))
		return false;   /* there before the launch: not this attempt's */
	if (t->out[r].valid && t->out[r].time > h->time)
		return false;
	t->out[r] = *h;
	return true;
}

int wr_hb_node_take(char *text, const struct wr_hbtake *t)
{
	char *p = text, *l = next_line(&p);
	struct wr_hb h = { 0 };
	long cur = -1;
	int taken = 0;

	if (!l || strncmp(l, "node ", 5))
		return -1;
	while ((l = next_line(&p))) {
		if (l[0] == 'r' && l[1] >= '0' && l[1] <= '9') {
			char *end;
			long r = strtol(l + 1, &end, 10);
			if (cur >= 0)
				taken += wr_hb_take(t, cur, &h);
			cur = -1;
			if (*end != ' ' || r < 0 || r >= t->n || wr_hb_parse(end + 1, &h))
				continue;
			cur = r;
		} else if (cur >= 0 && strncmp(l, "timing ", 7) == 0) {
			wr_rank_times_parse(l, &h.t);
			taken += wr_hb_take(t, cur, &h);
			cur = -1;
		}
	}
	if (cur >= 0)
		taken += wr_hb_take(t, cur, &h);
	return taken;
}

int wr_hb_node_text(char *text, struct wr_hb *out, int n)
{
	struct wr_hbtake t = { .out = out, .n = n };
	return wr_hb_node_take(text, &t);
}
