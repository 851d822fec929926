/* hang: heartbeat parsing, the step-time-derived hang timeout and the
 * stalled-rank, straggler and stuck-peer searches. No I/O: watch.c feeds it. */
#include "hang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phases[] = { "none", "init", "load", "train", "save", "done" };

const char *wr_phase_name(enum wr_phase p)
{
	return (p >= PH_NONE && p <= PH_DONE) ? phases[p] : "?";
}

int wr_hb_parse(const char *line, struct wr_hb *hb)
{
	long long ns;
	char ph[16], host[64] = "";
	memset(hb, 0, sizeof *hb);
	int k = sscanf(line, "%ld %lld %15s %lf %63s", &hb->step, &ns, ph, &hb->last_step_s, host);
	if (k < 4 || hb->step < 0 || ns <= 0 || hb->last_step_s < 0)
		return -1;
	for (int i = PH_INIT; i <= PH_DONE; i++)
		if (strcmp(ph, phases[i]) == 0)
			hb->phase = (enum wr_phase)i;
	if (hb->phase == PH_NONE)
		return -1;
	hb->time = (double)ns / 1e9;
	snprintf(hb->host, sizeof hb->host, "%s", host);
	hb->valid = true;
	return 0;
}

bool wr_hb_mark(struct wr_hbmark *m, struct wr_hb *h, double now)
{
	bool fresh = !m->valid || m->step != h->step || m->raw != h->time || m->phase != (int)h->phase;

	if (fresh) {
		/* the writer's clock less ours, less the delay before this read:
		 * the least delayed read of the attempt is the best estimate */
		double off = h->time - now;
		if (m->valid && m->off > off)
			off = m->off;
		*m = (struct wr_hbmark){ .valid = true, .step = h->step, .raw = h->time, .phase = (int)h->phase,
		                         .seen = now, .off = off };
	}
	h->time = m->seen;
	if (h->t.valid)
		h->t.first -= m->off;
	return fresh;
}

void wr_steptimes_add(struct wr_steptimes *st, double s)
{
	if (!(s > 0))
		return;
	st->v[st->next] = s;
	st->next = (st->next + 1) % WR_STEPTIMES;
	if (st->n < WR_STEPTIMES)
		st->n++;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double wr_median(const double *v, int n)
{
	if (n <= 0)
		return 0.0;
	double tmp[WR_STEPTIMES > 1024 ? WR_STEPTIMES : 1024];
	if (n > (int)(sizeof tmp / sizeof tmp[0]))
		n = (int)(sizeof tmp / sizeof tmp[0]);
	memcpy(tmp, v, (size_t)n * sizeof *v);
	qsort(tmp, (size_t)n, sizeof *tmp, cmp);
	return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

double wr_hang_timeout(const struct wr_hang_cfg *c, const struct wr_steptimes *st)
{
	if (st->n == 0)
		return c->startup_s > 0 ? c->startup_s : c->cap_s;
	double t = c->k * wr_median(st->v, st->n);
	if (t < c->floor_s)
		t = c->floor_s;
	if (t > c->cap_s)
		t = c->cap_s;
	return t;
}

/* In load or save at the top step: the phases that pause the clock. */
static bool pausing(const struct wr_hb *h, long top)
{
	return h->valid && (h->phase == PH_LOAD || h->phase == PH_SAVE) && h->step >= top;
}

int wr_hang_find(const struct wr_hb *hb, int n, double now, double since,
                 double timeout, double startup_s, double pause_cap_s, double *stale)
{
	/* A rank that finished a step in this attempt means every rank got
	 * past init (a step ends in collectives over all ranks): one still
	 * shown in init is news not yet flushed (the node file lags), not a
	 * slow start, and gets the training limit. */
	bool any = false, stepped = false;
	long top = -1;
	for (int i = 0; i < n; i++) {
		if (!hb[i].valid)
			continue;
		any = true;
		if (hb[i].step > top)
			top = hb[i].step;
		stepped = stepped || (hb[i].time >= since && hb[i].last_step_s > 0 &&
		                      (hb[i].phase == PH_TRAIN || hb[i].phase == PH_SAVE || hb[i].phase == PH_DONE));
	}
	/* A saving or loading rank's heartbeat thread keeps beating (the
	 * runtime's ticker writes in those phases whatever the main thread
	 * does), so the freshest beat among the paused ranks says the pause
	 * is alive; a paused rank silent max(timeout, WR_PAUSE_BEHIND_S)
	 * longer than that is stopped (SIGSTOP, a frozen process), not
	 * saving, and gets the training limit. */
	double fresh = -1, behind = timeout > WR_PAUSE_BEHIND_S ? timeout : WR_PAUSE_BEHIND_S;
	for (int i = 0; i < n; i++)
		if (pausing(&hb[i], top) && hb[i].time > fresh)
			fresh = hb[i].time;
	int worst = -1;
	double worst_stale = 0;
	for (int i = 0; i < n && any; i++) {
		double last = hb[i].valid ? hb[i].time : since;
		if (last < since)
			last = since;   /* a heartbeat left over from an earlier attempt */
		if (hb[i].valid && hb[i].phase == PH_DONE)
			continue;
		/* A save or load pauses the clock, unless other ranks are past
		 * it already (this rank is stuck, not saving) or beat on */
		bool paused = pausing(&hb[i], top) && fresh - last <= behind;
		bool starting = (!hb[i].valid || hb[i].phase == PH_INIT) && !stepped;
		double limit = paused ? pause_cap_s : starting ? startup_s : timeout;
		double s = now - last;
		if (s > limit && (worst < 0 || s > worst_stale)) {
			worst = i;
			worst_stale = s;
		}
	}
	if (stale)
		*stale = worst_stale;
	return worst;
}

int wr_straggler(const struct wr_hb *hb, int n, double factor, double min_s, double *ratio)
{
	double v[1024];
	int m = 0;
	for (int i = 0; i < n && m < 1024; i++)
		if (hb[i].valid && hb[i].last_step_s > 0)
			v[m++] = hb[i].last_step_s;
	if (m < 3)
		return -1;   /* a median of two says nothing about who is slow */
	double med = wr_median(v, m);
	int worst = -1;
	for (int i = 0; i < n; i++) {
		if (!hb[i].valid || hb[i].last_step_s <= 0)
			continue;
		double t = hb[i].last_step_s;
		if (t > factor * med && t - med >= min_s &&
		    (worst < 0 || t > hb[worst].last_step_s))
			worst = i;
	}
	if (worst >= 0 && ratio)
		*ratio = med > 0 ? hb[worst].last_step_s / med : 0;
	return worst;
}

int wr_stuck_find(const struct wr_hb *hb, int n, double now, double margin_s, double *silent, double *gap)
{
	int oldest = -1, m = 0;
	double next = 0;   /* the second-oldest heartbeat's time */
	if (silent)
		*silent = 0;
	if (gap)
		*gap = 0;
	if (!(margin_s > 0))
		return -1;
	for (int i = 0; i < n; i++) {
		if (!hb[i].valid)
			return -1;
		if (hb[i].phase == PH_DONE)
			continue;
		if (oldest < 0 || hb[i].time < hb[oldest].time) {
			if (oldest >= 0)
				next = hb[oldest].time;
			oldest = i;
		} else if (m == 1 || hb[i].time < next) {
			next = hb[i].time;
		}
		m++;
	}
	if (m < 2 || next - hb[oldest].time <= margin_s)
		return -1;
	if (silent)
		*silent = now - hb[oldest].time;
	if (gap)
		*gap = next - hb[oldest].time;
	return oldest;
}

double wr_stuck_margin(double comm_timeout_s)
{
	if (!(comm_timeout_s > 0))
		return 0;
	return comm_timeout_s / 2 > WR_STUCK_FLOOR_S ? comm_timeout_s / 2 : WR_STUCK_FLOOR_S;
}

bool wr_hang_together(const struct wr_hb *hb, int n, double since, double now, double window_s,
                      int *nranks, double *spread)
{
	int m = 0;
	long step = 0;
	double lo = 0, hi = 0;
	for (int i = 0; i < n; i++) {
		if (hb[i].valid && hb[i].phase == PH_DONE)
			continue;
		long st = hb[i].valid ? hb[i].step : -1;   /* no heartbeat: behind any that has one */
		double last = hb[i].valid && hb[i].time > since ? hb[i].time : since;
		if (m == 0) {
			step = st;
			lo = hi = last;
		} else if (st != step) {
			return false;
		}
		lo = last < lo ? last : lo;
		hi = last > hi ? last : hi;
		m++;
	}
	if (nranks)
		*nranks = m;
	if (spread)
		*spread = hi - lo;
	return m >= 2 && hi - lo <= window_s && now - hi > LLMT_HB_MAX_AGE_S;
}
