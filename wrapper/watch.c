/* watch: the poll loop around one step (output relay, heartbeats, hang
 * kill, signal forwarding, stragglers); the post-mortem readers (srun's
 * task-exit lines, sinfo node states, sdc.json) are in stepinfo.c. */
#define _GNU_SOURCE
#include "watch_priv.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "include/llmt/exitcodes.h"
#include "hbread.h"

double wr_now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

/* ---- the loop ---------------------------------------------------------- */

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void on_line(struct ctx *x, const char *line, bool is_err)
{
	char node[WR_NODE_LEN];
	int sig, code;
	if (is_err && wr_srun_task_line(line, node, sizeof node, &sig, &code)) {
		/* Only the first report names the cause: later ones are tasks
		 * that srun (-K) or the wrapper killed because of it. */
		if (!x->first_seen && !x->killing && (sig || code)) {
			x->first_seen = true;
			x->o->e.task_signal = sig;
			x->o->e.task_exit_code = sig ? 0 : code;
			if (sig) {
				wr_nodes_add(&x->o->e.signal_nodes, node);
				/* A rank died: the others cannot finish a step or a
				 * checkpoint without it, and may sit in a collective until
				 * Slurm's KillWait. End the step a moment later. */
				x->doom_at = wr_now() + 1.0;
			}
		}
		return;
	}
	if (strstr(line, "srun: error: Timed out waiting for job step to complete"))
		x->o->e.kill_timeout = true;

	if (strncmp(line, "srun: ", 6) == 0 || strncmp(line, "llm-train-wrap: ", 16) == 0)
		return;
	if (x->c->progress_from_output) {
		double t = wr_now();
		if (x->lines > 0)
			wr_steptimes_add(&x->mine, t - x->last_line), wr_steptimes_add(x->st, t - x->last_line);
		else
			x->o->t_first_step = t;
		x->last_line = t;
		x->lines++;
		x->o->last_step = x->c->resume_step + x->lines;
	}
}

/* Relays what fd has; returns false at EOF. */
static bool pump(struct ctx *x, int fd, int to, struct linebuf *lb, bool is_err)
{
	char buf[65536];
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		if (r == 0) {
			if (lb->n) {
				lb->b[lb->n] = '\0';
				on_line(x, lb->b, is_err);
				lb->n = 0;
			}
			return false;
		}
		write_all(to, buf, (size_t)r);
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] == '\n' || lb->n + 1 >= sizeof lb->b) {
				lb->b[lb->n] = '\0';
				on_line(x, lb->b, is_err);
				lb->n = 0;
			} else {
				lb->b[lb->n++] = buf[i];
			}
		}
	}
}

/* More ranks than tasks write heartbeats (torchrun per node under srun
 * --ntasks-per-node=1): watch them all, up to nranks_max, said once. */
static void grow(struct ctx *x)
{
	int top = x->n;
	for (int r = x->n; r < x->cap; r++)
		if (x->cur[r].valid)
			top = r + 1;
	if (top == x->n)
		return;
	fprintf(stderr, "llm-train-wrap: heartbeats of %d ranks for %d tasks (torchrun per node?): watching all %d\n",
	        top, x->c->nranks, top);
	x->n = top;
	x->strag.n = top;
}

/* A save of rank r that took save_s (< 0: none): the longest save seen
 * grows, with a save event in the ledger when it does (the next run's
 * save limit starts from it). */
static void note_save(struct ctx *x, int r, double save_s)
{
	double *l = x->c->save_longest_s;
	if (!l || save_s < 0 || save_s <= *l)
		return;
	*l = save_s;
	wr_ledger_event(x->c->ledger, "save", json_pack("{s:i,s:i,s:I,s:f}", "attempt", x->c->attempt, "rank", r,
	                "step", (json_int_t)x->hb[r].step, "save_s", save_s));
}

static void read_heartbeats(struct ctx *x)
{
	const struct wr_watch_cfg *c = x->c;
	double now = wr_now();
	wr_hb_read_new(c->hb_dir, x->cur, x->cap, c->hb_old, NULL);
	grow(x);
	for (int r = 0; r < x->n; r++) {
		/* not written yet, or only a record there before the launch (a
		 * leftover: hbread skips it): hang.c counts it from the launch */
		struct wr_hb h = x->cur[r];
		if (h.valid) {
			/* its time becomes when this content was first read, on our
			 * clock: the writer's clock behind ours (a leftover look) or
			 * ahead (never stale) does not count */
			wr_hb_mark(&x->mark[r], &h, now);
			struct wr_rank_times before = x->hb[r].t;
			x->hb[r] = h;
			note_save(x, r, wr_save_track(&x->save[r], &h, now));
			/* saves shorter than a tick: the checkpoint stall the rank
			 * timed since the last read (the sum when it saved twice) */
			double ck = h.t.valid && h.t.steps > before.steps ? h.t.total[WR_T_CKPT] - before.total[WR_T_CKPT] : 0;
			note_save(x, r, ck > 0 ? ck : -1);
			if (x->first_hb < 0 || h.time < x->first_hb)
				x->first_hb = h.time;   /* the ranks of this attempt are up */
			if (h.phase == PH_TRAIN || h.phase == PH_SAVE || h.phase == PH_DONE) {
				if (h.t.valid && h.t.steps > before.steps) {
					/* the rank's own times: every step since the last read */
					double s = (h.t.total[WR_T_STEP] - before.total[WR_T_STEP]) /
					           (double)(h.t.steps - before.steps);
					wr_steptimes_add(&x->mine, s);
					if (r == 0)
						wr_steptimes_add(x->st, s);
				}
				if (h.step > x->seen_step[r] && h.step > c->resume_step) {
					if (!h.t.valid && x->seen_step[r] >= 0 && h.last_step_s > 0) {
						wr_steptimes_add(&x->mine, h.last_step_s);
						if (r == 0)
							wr_steptimes_add(x->st, h.last_step_s);
					}
					if (x->o->t_first_step < 0)
						x->o->t_first_step = h.time;
					if (h.step > x->o->last_step)
						x->o->last_step = h.step;
				}
				if (h.step > x->seen_step[r])
					x->seen_step[r] = h.step;
			}
		}
	}
}

static void check_stragglers(struct ctx *x)
{
	double ratio = 0;
	int r = wr_straggler(x->hb, x->n, x->c->straggler_factor, x->c->straggler_min_s, &ratio);
	if (r < 0 || x->straggler_told[r])
		return;
	x->straggler_told[r] = true;
	fprintf(stderr, "llm-train-wrap: straggler: rank %d on %s is %.1fx slower than the median\n", r,
	        *node_of(x, r) ? node_of(x, r) : "?", ratio);
	wr_ledger_event(x->c->ledger, "straggler", json_pack("{s:i,s:i,s:s,s:f,s:f}", "attempt", x->c->attempt,
	                "rank", r, "node", node_of(x, r), "ratio", ratio, "step_s", x->hb[r].last_step_s));
}

static void rate_event(struct ctx *x, double now, double timeout)
{
	if (now - x->rate_t < x->c->rate_every_s || x->o->last_step <= x->rate_step)
		return;
	double sps = (double)(x->o->last_step - x->rate_step) / (now - x->rate_t);
	wr_ledger_event(x->c->ledger, "step_rate", json_pack("{s:i,s:I,s:f,s:f,s:f}", "attempt", x->c->attempt,
	                "step", (json_int_t)x->o->last_step, "steps_per_s", sps,
	                "step_s", wr_median(x->mine.v, x->mine.n), "hang_timeout_s", timeout));
	x->rate_t = now;
	x->rate_step = x->o->last_step;
}

/* One attempt's buffers and clocks; -1 when out of memory. */
static int ctx_init(struct ctx *x, const struct wr_watch_cfg *c, struct wr_steptimes *st, struct wr_watch_out *o)
{
	memset(x, 0, sizeof *x);
	memset(o, 0, sizeof *o);
	x->c = c;
	x->o = o;
	x->st = st;
	int n = c->nranks > 0 ? c->nranks : 1;
	x->n = n;
	x->cap = c->nranks_max > n ? c->nranks_max : n;
	n = x->cap;
	x->hb = calloc((size_t)n, sizeof *x->hb);
	x->cur = calloc((size_t)n, sizeof *x->cur);
	x->mark = calloc((size_t)n, sizeof *x->mark);
	x->seen_step = calloc((size_t)n, sizeof *x->seen_step);
	x->straggler_told = calloc((size_t)n, sizeof *x->straggler_told);
	x->strag = (struct wr_strag){ .n = x->n, .r = calloc((size_t)n, sizeof *x->strag.r),
	                              .factor = c->straggler_factor, .k = c->straggler_steps };
	x->strag_told = calloc((size_t)n, sizeof *x->strag_told);
	x->save = calloc((size_t)n, sizeof *x->save);
	if (!x->save || !x->hb || !x->cur || !x->mark || !x->seen_step || !x->straggler_told || !x->strag.r ||
	    !x->strag_told) {
		fprintf(stderr, "llm-train-wrap: out of memory for %d ranks\n", n);
		return -1;
	}
	for (int r = 0; r < n; r++)
		x->seen_step[r] = -1;
	x->first_hb = -1;
	o->t_launch = wr_now();
	o->t_first_step = -1;
	o->last_step = c->resume_step;
	o->hung_rank = -1;
	o->stuck_rank = -1;
	x->rate_t = o->t_launch;
	x->rate_step = c->resume_step;
	x->last_tick = o->t_launch;
	x->last_line = o->t_launch;
	return 0;
}

static void ctx_free(struct ctx *x)
{
	free(x->hb);
	free(x->cur);
	free(x->mark);
	free(x->seen_step);
	free(x->straggler_told);
	free(x->strag.r);
	free(x->strag_told);
	free(x->save);
}

/* A signal to the wrapper: the step is asked to checkpoint (SIGUSR1 to its
 * process group: srun alone, which forwards it to every task; with
 * --no-srun every process of the command, a local launcher's ranks too,
 * as srun would) and ended after the grace time. */
static void on_signals(struct ctx *x, struct wr_step *s, struct wloop *L)
{
	unsigned char sig;

	while (read(x->c->sig_fd, &sig, 1) == 1) {
		if (L->exited || sig == SIGCHLD)
			continue;   /* SIGCHLD only wakes the loop to reap */
		if (!x->o->e.wrapper_signal) {
			fprintf(stderr, "llm-train-wrap: got signal %d: asking the step to checkpoint (SIGUSR1), %.0f s grace\n",
			        sig, x->c->preempt_grace_s);
			wr_ledger_event(x->c->ledger, "signal", json_pack("{s:i,s:i}", "attempt", x->c->attempt, "signal", sig));
			x->o->e.wrapper_signal = sig;
			kill(-s->pid, SIGUSR1);
			L->term_at = wr_now() + x->c->preempt_grace_s;
		}
	}
}

/* One poll: srun's output relayed line by line, signals taken. */
static int poll_once(struct ctx *x, struct wr_step *s, struct wloop *L)
{
	struct pollfd p[3];
	int np = 0;

	if (L->out_open)
		p[np++] = (struct pollfd){ s->out_fd, POLLIN, 0 };
	if (L->err_open)
		p[np++] = (struct pollfd){ s->err_fd, POLLIN, 0 };
	p[np++] = (struct pollfd){ x->c->sig_fd, POLLIN, 0 };
	int rc = poll(p, (nfds_t)np, L->exited ? 200 : (int)(x->c->tick_s * 1000));
	if (rc < 0 && errno != EINTR)
		return -1;
	for (int i = 0; i < np && rc > 0; i++) {
		if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (p[i].fd == x->c->sig_fd) {
			on_signals(x, s, L);
		} else if (p[i].fd == s->out_fd) {
			if (!(L->out_open = pump(x, s->out_fd, 1, &L->lo, false)))
				close(s->out_fd);
		} else if (p[i].fd == s->err_fd) {
			if (!(L->err_open = pump(x, s->err_fd, 2, &L->le, true)))
				close(s->err_fd);
		}
	}
	return 0;
}

/* srun reaped; tasks still holding its pipes 5 s later are killed. True
 * once srun has exited (the loop only drains the pipes then). A launcher
 * of --no-srun that died of the preemption's SIGUSR1 (sh, torchrun's
 * agent: no handler) leaves its ranks saving: they keep the grace a step
 * has (SIGKILL at --preempt-grace + --kill-grace after the signal). */
static bool reaped(struct ctx *x, struct wr_step *s, struct wloop *L)
{
	if (!L->exited && waitpid(s->pid, &L->status, WNOHANG) == s->pid)
		L->exited = true;
	if (!L->exited)
		return false;
	if (L->hard_kill_at < 0) {
		double now = wr_now(), grace = x->o->e.wrapper_signal && L->term_at >= 0 ?
		                                   L->term_at + x->c->kill_grace_s : 0;
		L->hard_kill_at = grace > now + 5 ? grace : now + 5;
	} else if (wr_now() > L->hard_kill_at) {
		kill(-s->pid, SIGKILL);
		if (L->out_open)
			close(s->out_fd);
		if (L->err_open)
			close(s->err_fd);
		L->out_open = L->err_open = false;
	}
	return true;
}

/* The hung rank (0 for the output with --progress-from-output), or -1;
 * its silence in *stale. Stragglers are checked (and acted on) on the way. */
static int find_hang(struct ctx *x, double now, double timeout, double *stale, struct wloop *L)
{
	const struct wr_watch_cfg *c = x->c;
	double startup = c->hang.startup_s > 0 ? c->hang.startup_s : c->hang.cap_s;
	int hung = -1;

	if (c->progress_from_output) {
		struct wr_hb one = { .valid = true, .time = x->last_line, .phase = PH_TRAIN };
		if (wr_hang_find(&one, 1, now, x->o->t_launch, timeout, startup, c->hang.pause_cap_s, stale) == 0)
			hung = 0;
		return hung;
	}
	if (c->nranks <= 0)
		return -1;
	read_heartbeats(x);
	hung = wr_hang_find(x->hb, x->n, now, x->first_hb >= 0 ? x->first_hb : x->o->t_launch, timeout,
	                    startup, c->hang.pause_cap_s, stale);
	if (hung < 0 && c->save_longest_s) {
		/* beating on in phase save past the save limit: the save is hung */
		double limit = wr_save_limit(&c->save, *c->save_longest_s), held = 0;
		if ((hung = wr_save_find(x->save, x->n, now, limit, &held)) >= 0)
			L->save_held = held, L->save_limit = limit, *stale = now - x->hb[hung].time;
	}
	bool any = false;
	for (int r = 0; r < x->n; r++)
		any = any || x->hb[r].valid;
	if (!any && !L->told_nohb && now - x->o->t_launch > timeout) {
		L->told_nohb = true;
		fprintf(stderr, "llm-train-wrap: no heartbeat in %s after %.0f s: hang detection waits for one "
		        "(use --progress-from-output for trainers without heartbeats)\n", c->hb_dir, timeout);
	}
	check_stragglers(x);
	if (c->straggler_steps > 0 && L->term_at < 0 && L->kill_at < 0 &&
	    wr_strag_act(&x->strag, x->strag_told, x->hb, c, x->o, wr_median(x->mine.v, x->mine.n))) {
		L->term_at = now;
		x->killing = true;
	}
	return hung;
}

/* A save hang: ranks beat on in phase save past the save limit. No rank
 * is singled out (every rank stays in the save until all have written:
 * a slow writer, or the storage, holds them all). */
static void on_save_hang(struct ctx *x, int hung, double stale, struct wloop *L)
{
	const struct wr_watch_cfg *c = x->c;
	struct wr_watch_out *o = x->o;
	o->hung_rank = -1;
	o->e.hung_node[0] = '\0';
	fprintf(stderr, "llm-train-wrap: save hang: rank %d on %s in the save of step %ld for %.1f s (save limit %.1f s: "
	        "%g x the longest save seen, %.1f s, at least %.1f s): killing the step\n", hung,
	        *node_of(x, hung) ? node_of(x, hung) : "?", x->save[hung].step, L->save_held, L->save_limit,
	        c->save.factor, *c->save_longest_s, c->save.floor_s);
	wr_ledger_event(c->ledger, "hang", json_pack("{s:i,s:i,s:s,s:f,s:f,s:i,s:f,s:f,s:f,s:f,s:I}", "attempt",
	                c->attempt, "rank", -1, "node", "", "silent_s", stale, "timeout_s", L->save_limit, "together", 0,
	                "spread_s", 0.0, "save_held_s", L->save_held, "save_limit_s", L->save_limit, "save_longest_s",
	                *c->save_longest_s, "save_step", (json_int_t)x->save[hung].step));
}

/* A hang found: recorded, the step ended; rank 0 waiting in a checkpoint
 * for the stalled rank was not checkpointing after that rank went silent
 * (nor in a save that hung: its time is the hang's). */
static void on_hang(struct ctx *x, int hung, double now, double stale, double timeout, struct wloop *L)
{
	const struct wr_watch_cfg *c = x->c;
	struct wr_watch_out *o = x->o;

	o->e.hung = true;
	bool all = L->save_held <= 0 && !c->progress_from_output && wr_hang_together(x->hb, x->n, x->first_hb >= 0 ?
	           x->first_hb : o->t_launch, now, WR_HANG_TOGETHER_S, &o->e.hung_together, &o->e.hung_spread);
	if (!all)
		o->e.hung_together = 0, o->e.hung_spread = 0;
	o->hung_rank = c->progress_from_output || all ? -1 : hung;
	snprintf(o->e.hung_node, sizeof o->e.hung_node, "%s", o->hung_rank < 0 ? "" : node_of(x, hung));
	if (L->save_held > 0)
		on_save_hang(x, hung, stale, L);
	else if (all)
		fprintf(stderr, "llm-train-wrap: hang: all %d ranks stopped beating within %.1f s: no rank singled out "
		        "(silent for %.1f s, timeout %.1f s): killing the step\n", o->e.hung_together, o->e.hung_spread,
		        stale, timeout);
	else
		fprintf(stderr, "llm-train-wrap: hang: %s %d on %s silent for %.1f s (timeout %.1f s): killing the step\n",
		        c->progress_from_output ? "output" : "rank", c->progress_from_output ? 0 : hung,
		        *o->e.hung_node ? o->e.hung_node : "?", stale, timeout);
	if (L->save_held <= 0)
		wr_ledger_event(c->ledger, "hang", json_pack("{s:i,s:i,s:s,s:f,s:f,s:i,s:f}", "attempt", c->attempt,
		                "rank", o->hung_rank, "node", o->e.hung_node, "silent_s", stale, "timeout_s", timeout,
		                "together", o->e.hung_together, "spread_s", o->e.hung_spread));
	L->term_at = now;
	x->killing = true;
	if (L->save_start >= 0 && !c->progress_from_output) {
		double from = L->save_held <= 0 && x->hb[hung].valid && x->hb[hung].time > L->save_start ?
		              x->hb[hung].time : L->save_start;
		o->ckpt_s -= now - from;
		if (o->ckpt_s < 0)
			o->ckpt_s = 0;
	}
}

/* Ending the step: a rank died; SIGTERM makes srun end the step's tasks;
 * if srun is still there kill_grace_s later, SIGKILL its process group. */
static void escalate(struct ctx *x, struct wr_step *s, double now, struct wloop *L)
{
	struct wr_watch_out *o = x->o;

	if (x->doom_at > 0 && now >= x->doom_at && L->term_at < 0 && L->kill_at < 0) {
		fprintf(stderr, "llm-train-wrap: a rank died (signal %d on %s): ending the step\n",
		        o->e.task_signal, o->e.signal_nodes.n ? o->e.signal_nodes.name[0] : "?");
		L->term_at = now;
		x->killing = true;
	}
	if (L->term_at >= 0 && now >= L->term_at && L->kill_at < 0) {
		kill(s->pid, SIGTERM);
		L->kill_at = now + x->c->kill_grace_s;
	}
	if (L->kill_at >= 0 && now >= L->kill_at) {
		fprintf(stderr, "llm-train-wrap: srun still running %.0f s after SIGTERM: SIGKILL\n", x->c->kill_grace_s);
		kill(-s->pid, SIGKILL);
		o->e.kill_timeout = true;
		L->kill_at = now + 3600;
	}
}

/* One tick (every tick_s): checkpoint stall accounting, hang and
 * straggler detection, live metrics, the escalation. */
static void tick(struct ctx *x, struct wr_step *s, double now, struct wloop *L)
{
	const struct wr_watch_cfg *c = x->c;
	struct wr_watch_out *o = x->o;
	bool saving = !o->e.hung && c->nranks > 0 && x->hb[0].valid && x->hb[0].phase == PH_SAVE;
	double stale = 0, timeout = wr_hang_timeout(&c->hang, x->st);

	if (saving && L->save_start < 0)
		L->save_start = x->last_tick;
	if (!saving)
		L->save_start = -1;
	o->ckpt_s += saving ? now - x->last_tick : 0;
	x->last_tick = now;
	int hung = find_hang(x, now, timeout, &stale, L);
	wr_w_live_tick(x, now);
	rate_event(x, now, timeout);
	if (hung >= 0 && L->term_at < 0 && L->kill_at < 0 && !o->e.hung)
		on_hang(x, hung, now, stale, timeout, L);
	escalate(x, s, now, L);
}

int wr_watch(const struct wr_watch_cfg *c, struct wr_step *s, struct wr_steptimes *st,
             struct wr_watch_out *o)
{
	struct ctx x;
	struct wloop L = { .out_open = true, .err_open = true, .term_at = -1, .kill_at = -1,
	                   .hard_kill_at = -1, .save_start = -1 };

	if (ctx_init(&x, c, st, o))
		return -1;
	while (!L.exited || L.out_open || L.err_open) {
		if (poll_once(&x, s, &L))
			break;
		if (reaped(&x, s, &L))
			continue;
		double now = wr_now();
		if (now - x.last_tick >= c->tick_s)
			tick(&x, s, now, &L);
	}
	o->t_end = wr_now();
	o->e.exited = WIFEXITED(L.status);
	o->e.exit_code = WIFEXITED(L.status) ? WEXITSTATUS(L.status) : 0;
	o->e.term_signal = WIFSIGNALED(L.status) ? WTERMSIG(L.status) : 0;
	o->step_s = wr_median(x.mine.v, x.mine.n);
	if (c->nranks > 0 && !c->progress_from_output) {
		read_heartbeats(&x);
		wr_w_find_stuck(&x);
		wr_w_rank_times(&x);
		for (int r = 0; r < x.n; r++)
			o->in_load |= x.hb[r].valid && x.hb[r].phase == PH_LOAD;
	}
	ctx_free(&x);
	return 0;
}
