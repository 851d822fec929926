/* straggle: a straggler worth acting on. A rank whose compute time per
 * step (the ranks' timing line: its own passes, not its waits for others)
 * stays above factor x the ranks' median for k steps in a row; and
 * whether replacing its node by a spare pays: the slowdown over the steps
 * left against a restart (measured restart time + work lost since the last
 * checkpoint). Pure logic. */
#ifndef LLMT_WRAP_STRAGGLE_H
#define LLMT_WRAP_STRAGGLE_H

#include <stdbool.h>

struct wr_strag_rank {
	long steps;                /* timed steps seen so far */
	double compute;            /* their compute total */
	double per_step;           /* compute per step over the last interval (0: none yet) */
	long over;                 /* steps in a row above factor x median */
	long fresh;                /* steps in the last interval (0: nothing new) */
};

struct wr_strag {
	int n;
	struct wr_strag_rank *r;   /* n entries, zeroed by the caller */
	double factor;             /* F (> 1) */
	long k;                    /* K steps */
};

/* Rank r's timing totals: steps timed and their compute seconds. */
void wr_strag_feed(struct wr_strag *s, int r, long steps, double compute_total);

/* After the feeds of one tick: counts each rank with new steps against the
 * median of the ranks' per-step compute (at least 3 ranks with figures)
 * and returns the slowest rank over for k steps or more, or -1; *median
 * and *ratio get the figures. */
int wr_strag_judge(struct wr_strag *s, double *median, double *ratio);

struct wr_strag_cost {
	/* inputs */
	double slow_s;             /* the straggler's compute per step */
	double median_s;           /* the median rank's */
	long step, total_steps;    /* where the job is, and its last step (0: unknown) */
	long ckpt_step;            /* the newest checkpoint's step */
	double step_s;             /* the job's step time now */
	double restart_s;          /* measured restart time (launch to first step) */
	bool spare;                /* a node to replace it with */
	/* outputs */
	double slowdown_s;         /* (slow_s - median_s) x steps left */
	double lost_s;             /* (step - ckpt_step) x step_s */
	double restart_cost_s;     /* restart_s + lost_s */
	bool replace;
	char why[240];             /* the arithmetic, one line */
};

void wr_strag_cost(struct wr_strag_cost *c);

struct wr_hb;
struct wr_watch_cfg;
struct wr_watch_out;
/* The watcher's tick (straggle_io.c): feeds the ranks' heartbeats hb[0..
 * c->nranks), judges, and for a new straggler (told[r] once per rank)
 * writes the cost's arithmetic to stderr and the ledger's straggler_action
 * event; true (o->e.straggler_node set: end the step) when replacing its
 * node pays. step_s: the job's step time now. */
bool wr_strag_act(struct wr_strag *sg, bool *told, const struct wr_hb *hb, const struct wr_watch_cfg *c,
                  struct wr_watch_out *o, double step_s);

#endif
