/* decide: recovery policy. Each class maps to one action; the restart
 * budget (per job and per sliding window) and an exponential backoff for
 * attempts that make no progress keep a crash loop from burning the job. */
#include "decide.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "include/llmt/exitcodes.h"

double wr_backoff(const struct wr_policy *p, int k)
{
	if (k <= 0)
		return 0.0;
	double d = p->backoff_s * ldexp(1.0, k - 1 > 30 ? 30 : k - 1);
	return d > p->backoff_max_s ? p->backoff_max_s : d;
}

bool wr_budget_ok(const struct wr_policy *p, const struct wr_state *s, char *why, int whylen)
{
	if (p->max_restarts >= 0 && s->restarts >= p->max_restarts) {
		snprintf(why, whylen, "restart budget spent: %d of %d per job", s->restarts, p->max_restarts);
		return false;
	}
	if (p->window_restarts > 0 && p->window_s > 0) {
		int in = 0;
		for (int i = 0; i < s->nrestart_times; i++)
			if (s->restart_times[i] > s->now - p->window_s)
				in++;
		if (in >= p->window_restarts) {
			snprintf(why, whylen, "restart budget spent: %d restarts in the last %.0f s (max %d)",
			         in, p->window_s, p->window_restarts);
			return false;
		}
	}
	return true;
}

static void why(struct wr_action *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why(struct wr_action *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->why, sizeof a->why, fmt, ap);
	va_end(ap);
}

static void stop(struct wr_action *a, int code)
{
	a->act = ACT_STOP;
	a->exit_code = code;
	a->counts = false;
	a->delay_s = 0;
}

static const char *no_requeue(const struct wr_policy *p)
{
	return p->no_requeue ? p->no_requeue : "requeue is off";
}

/* Where the next step runs once `bad` nodes are out: the same layout on
 * spares, a smaller data-parallel layout, or another allocation. */
static void place(const struct wr_verdict *v, const struct wr_policy *p,
                  const struct wr_state *s, struct wr_action *a)
{
	int fresh = 0;
	for (int i = 0; i < v->nodes.n; i++)
		if (!wr_nodes_has(&a->exclude, v->nodes.name[i])) {
			wr_nodes_add(&a->exclude, v->nodes.name[i]);
			fresh++;
		}
	int usable = s->nodes_alloc - s->excluded_in_alloc - fresh;
	if (usable >= s->nodes_step) {
		a->act = ACT_RESTART;
		why(a, "%s: restart without %d node(s) on %d spare-backed node(s)", v->why, a->exclude.n, s->nodes_step);
		return;
	}
	/* The global batch is dp x micro-batch x accum: the largest dp the
	 * remaining nodes hold that divides dp x accum keeps it by more
	 * accumulation (dp 1 always does; none fits only when one replica no
	 * longer fits: requeue). */
	if (p->shrink && p->ranks_per_replica > 0 && p->tasks_per_node > 0 && usable > 0 && p->dp > 0) {
		int acc = p->accum > 1 ? p->accum : 1;
		int dpn = usable * p->tasks_per_node / p->ranks_per_replica;
		if (dpn > p->dp)
			dpn = p->dp;
		while (dpn > 0 && ((long)p->dp * acc) % dpn != 0)
			dpn--;
		if (dpn > 0) {
			a->act = ACT_RESTART;
			a->ntasks = dpn * p->ranks_per_replica;
			a->nodes = (a->ntasks + p->tasks_per_node - 1) / p->tasks_per_node;
			a->dp = dpn;
			a->accum = (int)((long)p->dp * acc / dpn);
			why(a, "%s: restart on %d node(s), dp %d -> %d, grad-accum %d -> %d (global batch kept)",
			    v->why, a->nodes, p->dp, dpn, acc, a->accum);
			return;
		}
	}
	if (p->requeue) {
		a->act = ACT_REQUEUE;
		why(a, "%s: %d usable node(s) < %d needed: requeue without %d node(s)", v->why, usable,
		    s->nodes_step, a->exclude.n);
		return;
	}
	stop(a, LLMT_EXIT_SOFTWARE);
	why(a, "%s: %d usable node(s) < %d needed and %s: stop", v->why, usable, s->nodes_step, no_requeue(p));
}

static void action_init(const struct wr_policy *p, const struct wr_state *s, struct wr_action *a)
{
	memset(a, 0, sizeof *a);
	if (s->excluded)
		a->exclude = *s->excluded;
	a->nodes = s->nodes_step;
	a->ntasks = s->nodes_step * p->tasks_per_node;
	a->max_resume_step = -1;
	a->skip_until_step = -1;
}

void wr_place(const struct wr_verdict *v, const struct wr_policy *p,
              const struct wr_state *s, struct wr_action *a)
{
	action_init(p, s, a);
	place(v, p, s, a);
	a->counts = false;
}

void wr_decide(const struct wr_verdict *v, const struct wr_policy *p,
               const struct wr_state *s, struct wr_action *a)
{
	char b[120];
	action_init(p, s, a);

	switch (v->cls) {
	case WR_DONE:
		stop(a, 0);
		why(a, "done");
		return;
	case WR_USER_ERROR:
		stop(a, s->exit_code > 0 && s->exit_code < 128 ? s->exit_code : LLMT_EXIT_USAGE);
		why(a, "%s: stop, never retried", v->why);
		return;
	case WR_PREEMPTED:
		if (p->requeue) {
			a->act = ACT_REQUEUE;
			why(a, "%s: requeue", v->why);
		} else {
			stop(a, LLMT_EXIT_REQUEUE);
			why(a, "%s: %s: stop", v->why, no_requeue(p));
		}
		return;
	default:
		break;
	}

	if (!wr_budget_ok(p, s, b, sizeof b)) {
		stop(a, LLMT_EXIT_SOFTWARE);
		why(a, "%s; %s: stop", v->why, b);
		return;
	}
	a->counts = true;
	a->act = ACT_RESTART;
	a->delay_s = wr_backoff(p, s->no_progress);

	switch (v->cls) {
	case WR_SOFTWARE:
		if (s->no_progress >= 2) {
			stop(a, LLMT_EXIT_SOFTWARE);
			why(a, "%s; %d attempts in a row made no progress: stop", v->why, s->no_progress);
			return;
		}
		why(a, "%s: restart in place", v->why);
		return;
	case WR_TRANSIENT:
		why(a, "%s: restart in place", v->why);
		return;
	case WR_NUMERIC: {
		int k = s->numeric_repeats > 0 ? s->numeric_repeats : 1;
		if (s->fail_step >= 0) {
			a->max_resume_step = s->fail_step - (long)k * p->rollback_steps;
			if (a->max_resume_step < 0)
				a->max_resume_step = 0;
			a->skip_until_step = s->fail_step + p->skip_batches;
		}
		a->skip_batches = p->skip_batches;
		why(a, "%s: roll back to step <= %ld, skip data through step %ld", v->why,
		    a->max_resume_step, a->skip_until_step);
		return;
	}
	case WR_SDC:
		a->need_agree = true;
		if (v->nodes.n == 0 || v->nodes.n * 2 > s->nodes_alloc) {
			why(a, "%s: suspects unknown or too many: roll back to agreeing checkpoint in place", v->why);
			return;
		}
		place(v, p, s, a);
		return;
	case WR_NODE_FAULT:
		place(v, p, s, a);
		return;
	default:
		stop(a, LLMT_EXIT_SOFTWARE);
		why(a, "unknown class %d: stop", (int)v->cls);
		return;
	}
}
