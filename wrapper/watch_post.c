/* watch_post: what the watcher reads after a step ends (the rank that
 * stalled its peers on exit 75, the ranks' own step times) and the live
 * metrics' view of a running attempt. */
#define _GNU_SOURCE
#include "watch_priv.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "include/llmt/exitcodes.h"

/* The step ended with exit 75 (a task's first report, or srun's code when
 * no task was reported) and not because the wrapper ended it: the
 * communication watchdog fired in a rank, or a peer was lost. */
static bool watchdog_exit(const struct ctx *x)
{
	const struct wr_ending *e = &x->o->e;
	if (e->hung || x->killing || e->wrapper_signal || e->task_signal)
		return false;
	if (e->task_exit_code)
		return e->task_exit_code == LLMT_EXIT_TRANSIENT;
	return e->exited && e->exit_code == LLMT_EXIT_TRANSIENT;
}

/* On exit 75, the heartbeats last read name the rank the others waited for.
 * Their ages are judged by when this wrapper first read each one, on its
 * own clock (wr_hb_mark): the times in them are from the nodes' clocks,
 * which may be apart by more than the margin (a tick of error instead). */
void wr_w_find_stuck(struct ctx *x)
{
	const struct wr_watch_cfg *c = x->c;
	double silent = 0, gap = 0;
	if (!watchdog_exit(x))
		return;
	int r = wr_stuck_find(x->hb, x->n, x->o->t_end, c->stuck_margin_s, &silent, &gap);
	if (r < 0)
		return;
	x->o->stuck_rank = r;
	snprintf(x->o->e.stuck_node, sizeof x->o->e.stuck_node, "%s", node_of(x, r));
	fprintf(stderr, "llm-train-wrap: exit %d: rank %d on %s silent for %.1f s, %.1f s longer than any other rank "
	        "(margin %.1f s): it stalled its peers into the communication watchdog\n", LLMT_EXIT_TRANSIENT, r,
	        *x->o->e.stuck_node ? x->o->e.stuck_node : "? (no host in its heartbeat)", silent, gap,
	        c->stuck_margin_s);
	wr_ledger_event(c->ledger, "stuck", json_pack("{s:i,s:i,s:s,s:f,s:f,s:f}", "attempt", c->attempt, "rank", r,
	                "node", x->o->e.stuck_node, "silent_s", silent, "gap_s", gap, "margin_s", c->stuck_margin_s));
}

/* The live metrics' view of this attempt (live.h). */
void wr_w_live_tick(struct ctx *x, double now)
{
	if (!x->c->live)
		return;
	struct wr_attempt_times a;
	wr_attempt_times(&x->hb[0].t, x->n, (int)sizeof x->hb[0], &a);
	const struct wr_watch_out *o = x->o;
	struct wr_live_now n = { .now = now, .attempt = x->c->attempt, .hb = x->c->progress_from_output ? NULL : x->hb,
	                         .nranks = x->n,
	                         .cur = { o->t_launch, a.ranks ? a.first_step : o->t_first_step, now, x->c->resume_step,
	                                  o->last_step, a.ranks ? a.step_s : wr_median(x->mine.v, x->mine.n),
	                                  a.ranks ? a.ckpt_s : o->ckpt_s, WR_DONE, 0 } };
	wr_live_tick(x->c->live, &n);
}

/* The ranks' own step times replace what the ticks saw: the step time,
 * the checkpoint stall and the first step of the attempt (a job of short
 * steps may be over between two ticks). Logged as a rank_times event. */
void wr_w_rank_times(struct ctx *x)
{
	struct wr_attempt_times a;
	wr_attempt_times(&x->hb[0].t, x->n, (int)sizeof x->hb[0], &a);
	if (!a.ranks)
		return;
	x->o->step_s = a.step_s;
	x->o->ckpt_s = a.ckpt_s;
	if (a.first_step >= x->o->t_launch && (x->o->t_first_step < 0 || a.first_step < x->o->t_first_step))
		x->o->t_first_step = a.first_step;
	json_t *mean = json_object();
	for (int k = 0; k < WR_T_N; k++)
		json_object_set_new(mean, wr_part_name(k), json_real(a.mean[k]));
	wr_ledger_event(x->c->ledger, "rank_times", json_pack("{s:i,s:i,s:f,s:f,s:o}", "attempt", x->c->attempt,
	                "ranks", a.ranks, "step_s", a.step_s, "ckpt_s", a.ckpt_s, "total_s", mean));
}
