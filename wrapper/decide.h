/* decide: from a failure class, the job's history and its restart budget
 * to one action (stop, restart in place, restart without nodes, requeue
 * without nodes, roll back). Pure logic; launch.c and main.c carry it out. */
#ifndef LLMT_WRAP_DECIDE_H
#define LLMT_WRAP_DECIDE_H

#include <stdbool.h>

#include "classify.h"

enum wr_act {
	ACT_STOP = 0,        /* end the job with exit_code */
	ACT_RESTART,         /* new step in the same allocation */
	ACT_REQUEUE,         /* scontrol requeue (with exclude) and end this run */
};

struct wr_policy {
	int max_restarts;         /* restarts allowed per job (0: none; <0: no per-job cap) */
	int window_restarts;      /* restarts allowed per window (<=0: no window) */
	double window_s;          /* the window, seconds (LLM_TRAIN_RESTART_WINDOW) */
	double backoff_s;         /* first backoff after a failure without progress */
	double backoff_max_s;     /* cap of the exponential backoff */
	long rollback_steps;      /* numerical fault: steps to roll back per repeat */
	long skip_batches;        /* numerical fault: extra batches skipped past the bad one */
	bool requeue;             /* requeue allowed (--no-requeue clears it; needs a Slurm job) */
	const char *no_requeue;   /* why not, in the stop message (NULL: "requeue is off") */
	bool shrink;              /* a smaller layout may run (dp=auto in the plugin's options) */
	int tasks_per_node;       /* ranks per node of the step */
	int ranks_per_replica;    /* tp*pp: dp shrinks in these units (0: unknown, no shrink) */
	int dp;                   /* data-parallel degree of the full layout (0: unknown) */
	int accum;                /* the trainer's gradient accumulation at dp (<=1: 1) */
};

struct wr_state {
	double now;               /* seconds, same clock as restart_times */
	int restarts;             /* restarts so far, this job (across requeues) */
	const double *restart_times; /* when each restart happened */
	int nrestart_times;
	int no_progress;          /* consecutive failed attempts that made no step of progress */
	int numeric_repeats;      /* consecutive numerical faults (roll back further each time) */
	long fail_step;           /* last step reached when the step ended (-1: unknown) */
	int exit_code;            /* the step's exit code (kept for user errors) */
	int nodes_alloc;          /* nodes of the allocation */
	int nodes_step;           /* nodes the last step used */
	const struct wr_nodes *excluded; /* nodes excluded so far (may be NULL) */
	int excluded_in_alloc;    /* how many of them belong to this allocation */
};

struct wr_action {
	enum wr_act act;
	int exit_code;            /* ACT_STOP: the wrapper's exit code */
	double delay_s;           /* wait before the restart (backoff) */
	struct wr_nodes exclude;  /* nodes to keep out from now on (cumulative) */
	int nodes;                /* ACT_RESTART: -N of the next step */
	int ntasks;               /* ACT_RESTART: -n of the next step */
	int dp;                   /* ACT_RESTART after a shrink: the new dp (0: layout unchanged) */
	int accum;                /* ... and the accumulation that keeps the global batch */
	long max_resume_step;     /* resume from a checkpoint at or before this step (-1: newest) */
	long skip_until_step;     /* skip data up to this step past the resume point (-1: none) */
	long skip_batches;        /* extra batches to skip (when the failing step is unknown) */
	bool need_agree;          /* resume only from a checkpoint whose replicas agreed */
	bool counts;              /* this action uses the restart budget */
	char why[200];
};

/* Seconds of backoff after k consecutive attempts without progress. */
double wr_backoff(const struct wr_policy *p, int k);

/* True when one more restart fits in the per-job and per-window budget. */
bool wr_budget_ok(const struct wr_policy *p, const struct wr_state *s, char *why, int whylen);

void wr_decide(const struct wr_verdict *v, const struct wr_policy *p,
               const struct wr_state *s, struct wr_action *a);

/* Where the job runs once v->nodes are out, without a failure to count
 * (a preflight self-test, a straggler): the same layout on spares, a
 * smaller dp (p->shrink), a requeue, else a stop. a->counts is false. */
void wr_place(const struct wr_verdict *v, const struct wr_policy *p,
              const struct wr_state *s, struct wr_action *a);

#endif
