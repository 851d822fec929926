/* classify: the decision table from a step's ending to a failure class.
 * The order of the rules is the policy: Slurm's view of a node beats exit
 * codes, exit codes beat signals, one-off crashes, hangs and stalled peers
 * are transient, and the same node again is a node fault. */
#include "classify.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "include/llmt/exitcodes.h"

static const char *const names[WR_NCLASSES] = {
	[WR_DONE] = "done", [WR_USER_ERROR] = "user_error",
	[WR_TRANSIENT] = "transient", [WR_SOFTWARE] = "software",
	[WR_NODE_FAULT] = "node_fault", [WR_NUMERIC] = "numerical",
	[WR_SDC] = "sdc", [WR_PREEMPTED] = "preempted",
};

const char *wr_class_name(enum wr_class c)
{
	return (c >= 0 && c < WR_NCLASSES) ? names[c] : "unknown";
}

bool wr_nodes_has(const struct wr_nodes *s, const char *node)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->name[i], node) == 0)
			return true;
	return false;
}

void wr_nodes_add(struct wr_nodes *s, const char *node)
{
	if (!node || !*node || wr_nodes_has(s, node) || s->n >= WR_MAX_NODES)
		return;
	snprintf(s->name[s->n++], WR_NODE_LEN, "%s", node);
}

static void set(struct wr_verdict *v, enum wr_class c, const char *node, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set(struct wr_verdict *v, enum wr_class c, const char *node, const char *fmt, ...)
{
	va_list ap;
	v->cls = c;
	snprintf(v->node, sizeof v->node, "%s", node ? node : "");
	va_start(ap, fmt);
	vsnprintf(v->why, sizeof v->why, fmt, ap);
	va_end(ap);
}

/* Earlier crashes or hangs (any class that named a node) on this node. */
static int past_on_node(const struct wr_past *hist, int nhist, const char *node)
{
	int k = 0;
	if (!node || !*node)
		return 0;
	for (int i = 0; i < nhist; i++)
		if ((hist[i].cls == WR_TRANSIENT || hist[i].cls == WR_SOFTWARE ||
		     hist[i].cls == WR_NODE_FAULT) && strcmp(hist[i].node, node) == 0)
			k++;
	return k;
}

/* A one-off crash or hang is transient; the same node again is a node fault. */
static void crash_or_node(struct wr_verdict *v, const struct wr_past *hist, int nhist,
                          const char *node, const char *what)
{
	int before = past_on_node(hist, nhist, node);
	if (node && *node && before + 1 >= WR_NODE_REPEAT) {
		wr_nodes_add(&v->nodes, node);
		set(v, WR_NODE_FAULT, node, "%s on %s, %d time(s) before: node fault", what, node, before);
	} else if (node && *node) {
		set(v, WR_TRANSIENT, node, "%s on %s (first time): restart", what, node);
	} else {
		set(v, WR_TRANSIENT, "", "%s (node unknown): restart", what);
	}
}

/* The watcher ended a hung step: the stalled rank's node, unless no rank
 * was singled out (every rank stopped beating together: no node to blame,
 * none counted toward a node fault). */
static void hang(const struct wr_ending *e, const struct wr_past *hist, int nhist, struct wr_verdict *v)
{
	if (e->hung_together > 0) {
		set(v, WR_TRANSIENT, "", "hang: all %d ranks stopped beating within %.1f s: no rank singled out",
		    e->hung_together, e->hung_spread);
	} else if (e->kill_timeout && e->hung_node[0]) {
		wr_nodes_add(&v->nodes, e->hung_node);
		set(v, WR_NODE_FAULT, e->hung_node, "hang on %s and its tasks could not be ended: node unresponsive",
		    e->hung_node);
	} else {
		crash_or_node(v, hist, nhist, e->hung_node, "hang");
	}
}

void wr_classify(const struct wr_ending *e, const struct wr_past *hist, int nhist,
                 struct wr_verdict *v)
{
	memset(v, 0, sizeof *v);
	int code = e->exited ? e->exit_code : 128 + e->term_signal;

	if (e->exited && code == 0 && !e->hung) {
		set(v, WR_DONE, "", "step finished");
		return;
	}
	/* The wrapper was told to stop (preemption, time limit): whatever the
	 * step did on the way out, the job goes back to the queue. */
	if (e->wrapper_signal) {
		set(v, WR_PREEMPTED, "", "wrapper got signal %d (exit %d): requeue", e->wrapper_signal, code);
		return;
	}
	if (e->straggler_node[0]) {
		wr_nodes_add(&v->nodes, e->straggler_node);
		set(v, WR_NODE_FAULT, e->straggler_node, "straggler on %s ended to replace its node",
		    e->straggler_node);
		return;
	}
	if (e->down_nodes.n > 0) {
		v->nodes = e->down_nodes;
		set(v, WR_NODE_FAULT, e->down_nodes.name[0], "Slurm reports %d node(s) unusable, first %s",
		    e->down_nodes.n, e->down_nodes.name[0]);
		return;
	}
	/* A task died from a signal first (srun names its node). */
	if (e->task_signal) {
		char what[48];
		snprintf(what, sizeof what, "signal %d (%s)", e->task_signal,
		         e->task_signal < NSIG ? strsignal(e->task_signal) : "?");
		crash_or_node(v, hist, nhist, e->signal_nodes.n ? e->signal_nodes.name[0] : "", what);
		return;
	}
	if (e->hung) {
		hang(e, hist, nhist, v);
		return;
	}
	if (e->task_exit_code)
		code = e->task_exit_code;   /* the first task's code, not the collateral kills' */
	if (e->exited || e->task_exit_code) {
		switch (code) {
		case LLMT_EXIT_USAGE:
		case LLMT_EXIT_DATA:
		case LLMT_EXIT_NOINPUT:
			set(v, WR_USER_ERROR, "", "exit %d: user/config/data error, not retried", code);
			return;
		case LLMT_EXIT_ROLLBACK:
			set(v, WR_NUMERIC, "", "exit %d: numerical fault persisted: roll back, skip data", code);
			return;
		case LLMT_EXIT_SDC:
			v->nodes = e->sdc_suspects;
			set(v, WR_SDC, e->sdc_suspects.n ? e->sdc_suspects.name[0] : "",
			    "exit %d: silent data corruption, %d suspect node(s)", code, e->sdc_suspects.n);
			return;
		case LLMT_EXIT_BADCKPT:
			/* job.c's wr_job_ckpt_bad marks a checkpoint the wrapper chose
			 * bad and falls back; left here, the trainer found one itself
			 * that the listing did not give (a checksum the list rejected):
			 * a restart would start from random weights instead */
			set(v, WR_USER_ERROR, "", "exit %d: a checkpoint the trainer found itself did not load "
			    "(none the wrapper could resume from): not starting from random weights", code);
			return;
		case LLMT_EXIT_REQUEUE:
			set(v, WR_PREEMPTED, "", "exit %d: preempted, checkpoint written", code);
			return;
		case LLMT_EXIT_TRANSIENT:
			/* A peer stuck outside communication stalled the others
			 * into the watchdog: the heartbeats named its node. */
			if (e->stuck_node[0]) {
				crash_or_node(v, hist, nhist, e->stuck_node,
				              "exit 75: peer stalled the communication watchdog");
				return;
			}
			break;
		default:
			break;
		}
	}
	/* srun itself died, or reports a signal death it did not name. */
	if (!e->exited || code > 128) {
		int sig = !e->exited ? e->term_signal : code - 128;
		char what[48];
		snprintf(what, sizeof what, "signal %d (%s)", sig, sig > 0 && sig < NSIG ? strsignal(sig) : "?");
		crash_or_node(v, hist, nhist, "", what);
		return;
	}
	if (code == LLMT_EXIT_TRANSIENT || code == LLMT_EXIT_IO) {
		set(v, WR_TRANSIENT, "", "exit %d: transient, restart", code);
		return;
	}
	set(v, WR_SOFTWARE, "", "exit %d: crash or unknown failure", code);
}
