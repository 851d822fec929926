/* goodput: per attempt, the steps that later attempts built on are useful
 * (from its resume point to the next attempt's resume point); everything
 * else in the attempt is lost to a cause. */
#include "goodput.h"

#include <string.h>

const char *wr_cause_name(int cause)
{
	switch (cause) {
	case WR_CAUSE_STARTUP: return "startup";
	case WR_CAUSE_CKPT: return "checkpoint";
	case WR_CAUSE_IDLE: return "idle";
	default: return wr_class_name((enum wr_class)cause);
	}
}

static double pos(double x) { return x > 0 ? x : 0; }

void wr_goodput(const struct wr_attempt *a, int n, double allocated_s,
                double step_s_default, struct wr_goodput *g)
{
	memset(g, 0, sizeof *g);
	g->allocated_s = allocated_s;
	g->restarts = n > 0 ? n - 1 : 0;
	double covered = 0;
	for (int i = 0; i < n; i++) {
		const struct wr_attempt *t = &a[i];
		double step_s = t->step_s > 0 ? t->step_s : step_s_default;
		long keep_to = t->last_step;
		if (i + 1 < n && a[i + 1].resume_step < keep_to)
			keep_to = a[i + 1].resume_step;
		long kept = keep_to > t->resume_step ? keep_to - t->resume_step : 0;
		double dur = pos(t->t_end - t->t_launch);
		double useful = (double)kept * step_s;
		/* Startup (launch, checkpoint load, first step) is the price of
		 * the failure that caused this attempt. */
		double startup = t->t_first_step >= t->t_launch ? t->t_first_step - t->t_launch : dur;
		if (startup > dur)
			startup = dur;
		int scause = i == 0 ? WR_CAUSE_STARTUP : (int)a[i - 1].cls;
		if (scause == WR_DONE)
			scause = WR_CAUSE_STARTUP;
		double ckpt = t->ckpt_s;
		if (useful > dur - startup)
			useful = pos(dur - startup);
		if (ckpt > dur - startup - useful)
			ckpt = pos(dur - startup - useful);
		double rest = pos(dur - startup - useful - ckpt);
		int rcause = t->cls == WR_DONE ? WR_CAUSE_IDLE : (int)t->cls;
		g->useful_s += useful;
		g->useful_steps += kept;
		g->lost_s[scause] += startup;
		g->lost_s[WR_CAUSE_CKPT] += ckpt;
		g->lost_s[rcause] += rest;
		covered += dur;
		/* The gap to the next launch (classify, backoff, requeue wait
		 * inside the allocation) belongs to this attempt's ending. */
		if (i + 1 < n && a[i + 1].run == t->run && t->cls != WR_DONE) {
			double gap = pos(a[i + 1].t_launch - t->t_end);
			g->lost_s[rcause] += gap;
			covered += gap;
		}
	}
	double uncovered = pos(allocated_s - covered);
	g->lost_s[WR_CAUSE_IDLE] += uncovered;
	g->ratio = allocated_s > 0 ? g->useful_s / allocated_s : 0;
}
