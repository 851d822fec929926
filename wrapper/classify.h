/* classify: turns the ending of one training step into a failure class.
 * Pure logic over plain inputs (exit status, srun's per-node task deaths,
 * Slurm's node states, hang, signals the wrapper got, failure history). */
#ifndef LLMT_WRAP_CLASSIFY_H
#define LLMT_WRAP_CLASSIFY_H

#include <stdbool.h>

#define WR_MAX_NODES 64   /* nodes kept per set (suspects, excluded) */
#define WR_NODE_LEN 64

enum wr_class {
	WR_DONE = 0,     /* training finished */
	WR_USER_ERROR,   /* usage/config/data/input error: stop, never retry */
	WR_TRANSIENT,    /* lost peer, I/O hiccup, one-off crash or hang: restart */
	WR_SOFTWARE,     /* internal bug or unknown exit code: retry, stop if it loops */
	WR_NODE_FAULT,   /* a node is bad: exclude it */
	WR_NUMERIC,      /* numerical fault persisted: roll back further, skip data */
	WR_SDC,          /* DP replicas disagree: exclude suspects, roll back to agreeing ckpt */
	WR_PREEMPTED,    /* preempted or time limit: checkpoint written, requeue */
	WR_NCLASSES
};

const char *wr_class_name(enum wr_class c);

struct wr_nodes {
	int n;
	char name[WR_MAX_NODES][WR_NODE_LEN];
};

void wr_nodes_add(struct wr_nodes *s, const char *node);  /* no duplicates, ignores "" */
bool wr_nodes_has(const struct wr_nodes *s, const char *node);

/* What the watcher saw when a step ended. */
struct wr_ending {
	bool exited;          /* srun exited (else it died from term_signal) */
	int exit_code;        /* srun's exit code (max of the tasks'; 128+sig for a signal death) */
	int term_signal;      /* signal that killed srun itself */
	int wrapper_signal;   /* SIGUSR1/SIGTERM the wrapper got during the step, else 0 */
	bool hung;            /* the watcher killed the step for lack of progress */
	bool kill_timeout;    /* ending the step timed out: a node stopped answering */
	char hung_node[WR_NODE_LEN];  /* node of the stalled rank, "" if unknown */
	int hung_together;    /* hung, no rank singled out: all these ranks stopped beating ... */
	double hung_spread;   /* ... within this many seconds (wr_hang_together); else 0 */
	/* On exit 75 (the communication watchdog): the node of the rank the
	 * others waited for, whose heartbeat stood out as stale; "" if none. */
	char stuck_node[WR_NODE_LEN];
	/* srun's first report of a task ending badly, before the wrapper
	 * began to kill the step (later ones are collateral of -K): */
	int task_signal;      /* the signal it died from, else 0 */
	int task_exit_code;   /* or its nonzero exit code, else 0 */
	struct wr_nodes signal_nodes; /* the node of a signal death */
	struct wr_nodes down_nodes;   /* nodes Slurm reports down, drained, failing, not responding */
	struct wr_nodes sdc_suspects; /* nodes named by sdc.json on exit 86 */
	/* The watcher ended the step to replace this straggler's node by a
	 * spare (its slowdown cost more than a restart); "" if not. */
	char straggler_node[WR_NODE_LEN];
};

/* One earlier failure of this job (kept across requeues via the ledger). */
struct wr_past {
	enum wr_class cls;
	char node[WR_NODE_LEN];
	bool restarted;        /* a restart or requeue followed it (not the job's final stop) */
};

struct wr_verdict {
	enum wr_class cls;
	struct wr_nodes nodes;   /* nodes to blame (exclude for NODE_FAULT/SDC) */
	char node[WR_NODE_LEN];  /* the node this ending points at, "" if none */
	char why[160];           /* one line for the ledger and the log */
};

/* Crashes or hangs that hit the same node this many times make it a node fault. */
#define WR_NODE_REPEAT 2

void wr_classify(const struct wr_ending *e, const struct wr_past *hist, int nhist,
                 struct wr_verdict *v);

#endif
