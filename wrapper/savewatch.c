/* savewatch: per-rank save tracking and the save limit derived from the
 * longest save seen (savewatch.h). No I/O: watch.c feeds it. */
#include "savewatch.h"

double wr_save_limit(const struct wr_save_cfg *c, double longest_s)
{
	if (!(c->factor > 0) || longest_s < 0)
		return c->cap_s;
	double t = c->factor * longest_s;
	if (t < c->floor_s)
		t = c->floor_s;
	if (t > c->cap_s)
		t = c->cap_s;
	return t;
}

double wr_save_track(struct wr_saverank *r, const struct wr_hb *h, double now)
{
	bool saving = h->valid && h->phase == PH_SAVE;
	double ended = -1;
	if (r->in && (!saving || h->step != r->step))
		ended = now - r->since;   /* left the save (or went on to a later one) */
	if (saving && (!r->in || h->step != r->step)) {
		r->step = h->step;
		r->since = now;
	}
	r->in = saving;
	return ended;
}

int wr_save_find(const struct wr_saverank *r, int n, double now, double limit, double *held)
{
	int worst = -1;
	double w = 0;
	for (int i = 0; i < n; i++) {
		double s = now - r[i].since;
		if (r[i].in && s > limit && (worst < 0 || s > w)) {
			worst = i;
			w = s;
		}
	}
	if (held)
		*held = w;
	return worst;
}

double wr_save_longest(double longest_s, double save_s)
{
	return save_s > longest_s ? save_s : longest_s;
}
