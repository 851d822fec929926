/* watch: the poll loop around one step (output relay, heartbeats, hang
 * kill, signal forwarding) and the post-mortem readers (srun's task-exit
 * lines, sinfo node states, sdc.json). */
#define _GNU_SOURCE
#include "watch.h"
#include "straggle.h"

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

static int signal_by_name(const char *what)
{
	if (strncmp(what, "Out Of Memory", 13) == 0)
		return SIGKILL;
	for (int s = 1; s < NSIG; s++) {
		const char *n = strsignal(s);
		size_t len = n ? strlen(n) : 0;
		if (len && strncmp(what, n, len) == 0 && (what[len] == '\0' || what[len] == ' '))
			return s;
	}
	return 0;
}

int wr_srun_task_line(const char *line, char *node, size_t nodelen, int *sig, int *code)
{
	*code = 0;
	const char *p = strstr(line, "srun: error: ");
	if (!p)
		return 0;
	p += 13;
	const char *colon = strchr(p, ':');
	if (!colon || colon == p || (size_t)(colon - p) >= nodelen)
		return 0;
	const char *q = colon + 1;
	while (*q == ' ')
		q++;
	if (strncmp(q, "tasks ", 6) == 0)
		q += 6;
	else if (strncmp(q, "task ", 5) == 0)
		q += 5;
	else
		return 0;
	if (!isdigit((unsigned char)*q))
		return 0;
	while (isdigit((unsigned char)*q) || *q == ',' || *q == '-')
		q++;
	if (*q != ':')
		return 0;
	q++;
	while (*q == ' ')
		q++;
	memcpy(node, p, (size_t)(colon - p));
	node[colon - p] = '\0';
	if (strncmp(q, "Exited with exit code ", 22) == 0) {
		*sig = 0;
		*code = atoi(q + 22);
		return 1;
	}
	*sig = signal_by_name(q);
	return *sig ? 1 : 0;
}

void wr_parse_node_states(char *text, struct wr_nodes *bad)
{
	for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		char node[WR_NODE_LEN], state[64];
		if (sscanf(ln, "%63s %63s", node, state) != 2)
			continue;
		for (char *c = state; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		size_t n = strlen(state);
		if (strncmp(state, "down", 4) == 0 || strncmp(state, "drain", 5) == 0 ||
		    strncmp(state, "fail", 4) == 0 || strstr(state, "not_responding") ||
		    (n > 0 && (state[n - 1] == '*' || state[n - 1] == '~')))
			wr_nodes_add(bad, node);
	}
}

int wr_node_states(const char *sinfo, const char *nodelist, struct wr_nodes *bad)
{
	static char out[1 << 18];
	char err[4096];
	char *argv[] = { (char *)sinfo, "-h", "-N", "-o", "%N %T", "-n", (char *)nodelist, NULL };
	memset(bad, 0, sizeof *bad);
	if (!nodelist || !*nodelist)
		return 0;
	int rc = wr_run_capture(argv, out, sizeof out, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "llm-train-wrap: sinfo failed (exit %d): %s", rc, err);
		return -1;
	}
	wr_parse_node_states(out, bad);
	return 0;
}

int wr_sdc_suspects(const char *path, struct wr_nodes *out, long *step)
{
	json_error_t err;
	json_t *o = json_load_file(path, 0, &err);
	memset(out, 0, sizeof *out);
	if (!o) {
		fprintf(stderr, "llm-train-wrap: %s: %s\n", path, err.text);
		return -1;
	}
	if (step)
		*step = json_is_integer(json_object_get(o, "step")) ? (long)json_integer_value(json_object_get(o, "step")) : -1;
	size_t i, j;
	json_t *s, *h;
	json_array_foreach(json_object_get(o, "suspects"), i, s)
		json_array_foreach(json_object_get(s, "hosts"), j, h)
			wr_nodes_add(out, json_string_value(h));
	json_decref(o);
	return 0;
}

/* ---- the loop ---------------------------------------------------------- */

struct linebuf {
	char b[8192];
	size_t n;
};

struct ctx {
	const struct wr_watch_cfg *c;
	struct wr_watch_out *o;
	struct wr_steptimes *st;
	struct wr_hb *hb;
	struct wr_hb *cur;        /* per rank: what this tick read (hbread.h) */
	double *hb_seen;          /* per rank: when (our clock) its current heartbeat was first read */
	long *seen_step;          /* per rank: last step we sampled */
	bool *straggler_told;
	struct wr_strag strag;    /* compute-time stragglers (straggle.h) */
	bool *strag_told;
	double last_line;         /* progress_from_output */
	long lines;
	double rate_t;
	long rate_step;
	double last_tick;
	struct wr_steptimes mine; /* this attempt's step times */
	bool killing;             /* the wrapper is ending the step (hang) */
	bool first_seen;          /* srun reported a task ending badly */
	double first_hb;          /* content time of this attempt's first heartbeat (-1: none) */
	double doom_at;           /* a rank died: end the step at this time (0: no) */
};

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

static void read_heartbeats(struct ctx *x)
{
	const struct wr_watch_cfg *c = x->c;
	double now = wr_now();
	wr_hb_read_dir(c->hb_dir, x->cur, c->nranks, NULL);
	for (int r = 0; r < c->nranks; r++) {
		/* not written yet: hang.c counts it from the launch */
		struct wr_hb h = x->cur[r];
		if (h.valid && h.time >= x->o->t_launch) {
			if (!x->hb[r].valid || h.time != x->hb[r].time)
				x->hb_seen[r] = now;
			struct wr_rank_times before = x->hb[r].t;
			x->hb[r] = h;
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

static const char *node_of(struct ctx *x, int r)
{
	return (r >= 0 && r < x->c->nranks) ? x->hb[r].host : "";
}

static void check_stragglers(struct ctx *x)
{
	double ratio = 0;
	int r = wr_straggler(x->hb, x->c->nranks, x->c->straggler_factor, x->c->straggler_min_s, &ratio);
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
 * own clock: the times in them are from the nodes' clocks, which may be
 * apart by more than the margin (a tick of error instead). */
static void find_stuck(struct ctx *x)
{
	const struct wr_watch_cfg *c = x->c;
	double silent = 0, gap = 0;
	if (!watchdog_exit(x))
		return;
	struct wr_hb *seen = malloc((size_t)c->nranks * sizeof *seen);
	if (!seen)
		return;
	for (int i = 0; i < c->nranks; i++) {
		seen[i] = x->hb[i];
		seen[i].time = x->hb_seen[i];
	}
	int r = wr_stuck_find(seen, c->nranks, x->o->t_end, c->stuck_margin_s, &silent, &gap);
	free(seen);
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
static void live_tick(struct ctx *x, double now)
{
	if (!x->c->live)
		return;
	struct wr_attempt_times a;
	wr_attempt_times(&x->hb[0].t, x->c->nranks, (int)sizeof x->hb[0], &a);
	const struct wr_watch_out *o = x->o;
	struct wr_live_now n = { .now = now, .attempt = x->c->attempt, .hb = x->c->progress_from_output ? NULL : x->hb,
	                         .nranks = x->c->nranks,
	                         .cur = { o->t_launch, a.ranks ? a.first_step : o->t_first_step, now, x->c->resume_step,
	                                  o->last_step, a.ranks ? a.step_s : wr_median(x->mine.v, x->mine.n),
	                                  a.ranks ? a.ckpt_s : o->ckpt_s, WR_DONE, 0 } };
	wr_live_tick(x->c->live, &n);
}

/* The ranks' own step times replace what the ticks saw: the step time,
 * the checkpoint stall and the first step of the attempt (a job of short
 * steps may be over between two ticks). Logged as a rank_times event. */
static void use_rank_times(struct ctx *x)
{
	struct wr_attempt_times a;
	wr_attempt_times(&x->hb[0].t, x->c->nranks, (int)sizeof x->hb[0], &a);
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

int wr_watch(const struct wr_watch_cfg *c, struct wr_step *s, struct wr_steptimes *st,
             struct wr_watch_out *o)
{
	struct ctx x;
	memset(&x, 0, sizeof x);
	memset(o, 0, sizeof *o);
	x.c = c;
	x.o = o;
	x.st = st;
	int n = c->nranks > 0 ? c->nranks : 1;
	x.hb = calloc((size_t)n, sizeof *x.hb);
	x.cur = calloc((size_t)n, sizeof *x.cur);
	x.hb_seen = calloc((size_t)n, sizeof *x.hb_seen);
	x.seen_step = calloc((size_t)n, sizeof *x.seen_step);
	x.straggler_told = calloc((size_t)n, sizeof *x.straggler_told);
	x.strag = (struct wr_strag){ .n = n, .r = calloc((size_t)n, sizeof *x.strag.r),
	                             .factor = c->straggler_factor, .k = c->straggler_steps };
	x.strag_told = calloc((size_t)n, sizeof *x.strag_told);
	if (!x.hb || !x.cur || !x.hb_seen || !x.seen_step || !x.straggler_told || !x.strag.r || !x.strag_told) {
		fprintf(stderr, "llm-train-wrap: out of memory for %d ranks\n", n);
		return -1;
	}
	for (int r = 0; r < n; r++)
		x.seen_step[r] = -1;
	x.first_hb = -1;
	o->t_launch = wr_now();
	o->t_first_step = -1;
	o->last_step = c->resume_step;
	o->hung_rank = -1;
	o->stuck_rank = -1;
	x.rate_t = o->t_launch;
	x.rate_step = c->resume_step;
	x.last_tick = o->t_launch;
	x.last_line = o->t_launch;

	struct linebuf lo = { .n = 0 }, le = { .n = 0 };
	bool out_open = true, err_open = true, exited = false, told_nohb = false;
	int status = 0;
	double term_at = -1, kill_at = -1, hard_kill_at = -1;   /* pending escalation */
	double save_start = -1;   /* rank 0 entered its current save phase */

	while (!exited || out_open || err_open) {
		struct pollfd p[3];
		int np = 0;
		if (out_open)
			p[np++] = (struct pollfd){ s->out_fd, POLLIN, 0 };
		if (err_open)
			p[np++] = (struct pollfd){ s->err_fd, POLLIN, 0 };
		p[np++] = (struct pollfd){ c->sig_fd, POLLIN, 0 };
		int rc = poll(p, (nfds_t)np, exited ? 200 : (int)(c->tick_s * 1000));
		if (rc < 0 && errno != EINTR)
			break;
		for (int i = 0; i < np && rc > 0; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (p[i].fd == c->sig_fd) {
				unsigned char sig;
				while (read(c->sig_fd, &sig, 1) == 1) {
					if (exited || sig == SIGCHLD)
						continue;   /* SIGCHLD only wakes the loop to reap */
					if (!o->e.wrapper_signal) {
						fprintf(stderr, "llm-train-wrap: got signal %d: asking the step to checkpoint (SIGUSR1), %.0f s grace\n",
						        sig, c->preempt_grace_s);
						wr_ledger_event(c->ledger, "signal", json_pack("{s:i,s:i}", "attempt", c->attempt, "signal", sig));
						o->e.wrapper_signal = sig;
						kill(s->pid, SIGUSR1);
						term_at = wr_now() + c->preempt_grace_s;
					}
				}
			} else if (p[i].fd == s->out_fd) {
				out_open = pump(&x, s->out_fd, 1, &lo, false);
				if (!out_open)
					close(s->out_fd);
			} else if (p[i].fd == s->err_fd) {
				err_open = pump(&x, s->err_fd, 2, &le, true);
				if (!err_open)
					close(s->err_fd);
			}
		}
		if (!exited) {
			pid_t w = waitpid(s->pid, &status, WNOHANG);
			if (w == s->pid)
				exited = true;
		}
		if (exited) {
			if (hard_kill_at < 0)
				hard_kill_at = wr_now() + 5;   /* tasks left holding the pipes */
			else if (wr_now() > hard_kill_at) {
				kill(-s->pid, SIGKILL);
				if (out_open) close(s->out_fd);
				if (err_open) close(s->err_fd);
				out_open = err_open = false;
			}
			continue;
		}
		double now = wr_now();
		if (now - x.last_tick < c->tick_s)
			continue;
		bool saving = !o->e.hung && c->nranks > 0 && x.hb[0].valid && x.hb[0].phase == PH_SAVE;
		if (saving && save_start < 0)
			save_start = x.last_tick;
		if (!saving)
			save_start = -1;
		o->ckpt_s += saving ? now - x.last_tick : 0;
		x.last_tick = now;

		double timeout = wr_hang_timeout(&c->hang, st);
		double startup = c->hang.startup_s > 0 ? c->hang.startup_s : c->hang.cap_s;
		int hung = -1;
		double stale = 0;
		if (c->progress_from_output) {
			struct wr_hb one = { .valid = true, .time = x.last_line, .phase = PH_TRAIN };
			if (wr_hang_find(&one, 1, now, o->t_launch, timeout, startup, c->hang.pause_cap_s, &stale) == 0)
				hung = 0;
		} else if (c->nranks > 0) {
			read_heartbeats(&x);
			hung = wr_hang_find(x.hb, c->nranks, now, x.first_hb >= 0 ? x.first_hb : o->t_launch, timeout,
			                    startup, c->hang.pause_cap_s, &stale);
			bool any = false;
			for (int r = 0; r < c->nranks; r++)
				any = any || x.hb[r].valid;
			if (!any && !told_nohb && now - o->t_launch > timeout) {
				told_nohb = true;
				fprintf(stderr, "llm-train-wrap: no heartbeat in %s after %.0f s: hang detection waits for one "
				        "(use --progress-from-output for trainers without heartbeats)\n", c->hb_dir, timeout);
			}
			check_stragglers(&x);
			if (c->straggler_steps > 0 && term_at < 0 && kill_at < 0 &&
			    wr_strag_act(&x.strag, x.strag_told, x.hb, c, o, wr_median(x.mine.v, x.mine.n))) {
				term_at = now;
				x.killing = true;
			}
		}
		live_tick(&x, now);
		rate_event(&x, now, timeout);

		if (hung >= 0 && term_at < 0 && kill_at < 0 && !o->e.hung) {
			o->e.hung = true;
			o->hung_rank = c->progress_from_output ? -1 : hung;
			snprintf(o->e.hung_node, sizeof o->e.hung_node, "%s",
			         c->progress_from_output ? "" : node_of(&x, hung));
			fprintf(stderr, "llm-train-wrap: hang: %s %d on %s silent for %.1f s (timeout %.1f s): killing the step\n",
			        c->progress_from_output ? "output" : "rank", c->progress_from_output ? 0 : hung,
			        *o->e.hung_node ? o->e.hung_node : "?", stale, timeout);
			wr_ledger_event(c->ledger, "hang", json_pack("{s:i,s:i,s:s,s:f,s:f}", "attempt", c->attempt,
			                "rank", o->hung_rank, "node", o->e.hung_node, "silent_s", stale, "timeout_s", timeout));
			term_at = now;
			x.killing = true;
			/* Rank 0 waiting in a checkpoint for the stalled rank was
			 * not checkpointing after that rank went silent. */
			if (save_start >= 0 && hung >= 0 && !c->progress_from_output) {
				double from = x.hb[hung].valid && x.hb[hung].time > save_start ? x.hb[hung].time : save_start;
				o->ckpt_s -= now - from;
				if (o->ckpt_s < 0)
					o->ckpt_s = 0;
			}
		}
		if (x.doom_at > 0 && now >= x.doom_at && term_at < 0 && kill_at < 0) {
			fprintf(stderr, "llm-train-wrap: a rank died (signal %d on %s): ending the step\n",
			        o->e.task_signal, o->e.signal_nodes.n ? o->e.signal_nodes.name[0] : "?");
			term_at = now;
			x.killing = true;
		}
		/* Escalation: SIGTERM makes srun end the step's tasks; if srun
		 * is still there kill_grace_s later, SIGKILL its process group. */
		if (term_at >= 0 && now >= term_at && kill_at < 0) {
			kill(s->pid, SIGTERM);
			kill_at = now + c->kill_grace_s;
		}
		if (kill_at >= 0 && now >= kill_at) {
			fprintf(stderr, "llm-train-wrap: srun still running %.0f s after SIGTERM: SIGKILL\n", c->kill_grace_s);
			kill(-s->pid, SIGKILL);
			o->e.kill_timeout = true;
			kill_at = now + 3600;
		}
	}
	o->t_end = wr_now();
	o->e.exited = WIFEXITED(status);
	o->e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
	o->e.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	o->step_s = wr_median(x.mine.v, x.mine.n);
	if (c->nranks > 0 && !c->progress_from_output) {
		read_heartbeats(&x);
		find_stuck(&x);
		use_rank_times(&x);
	}
	free(x.hb);
	free(x.cur);
	free(x.hb_seen);
	free(x.seen_step);
	free(x.straggler_told);
	free(x.strag.r);
	free(x.strag_told);
	return 0;
}
