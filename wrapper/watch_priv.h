/* watch_priv: the watcher's private state shared by watch.c (the poll
 * loop) and watch_post.c (what is read after the step, the live view):
 * one attempt's per-rank buffers and clocks, the loop's own state. */
#ifndef LLMT_WRAP_WATCH_PRIV_H
#define LLMT_WRAP_WATCH_PRIV_H

#include "savewatch.h"
#include "straggle.h"
#include "watch.h"

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
	struct wr_hbmark *mark;   /* per rank: its heartbeat's content and when (our clock) first read */
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
	double first_hb;          /* when this attempt's first heartbeat was read (-1: none) */
	double doom_at;           /* a rank died: end the step at this time (0: no) */
	int n;                    /* ranks watched: nranks, or 1 + the highest rank with a record of this attempt */
	int cap;                  /* the arrays' size: nranks_max */
	struct wr_saverank *save; /* per rank: its save as we see it (savewatch.h) */
};

/* The loop's own state: srun's pipes, its exit, the pending escalation. */
struct wloop {
	struct linebuf lo, le;
	bool out_open, err_open, exited, told_nohb;
	int status;
	double term_at, kill_at, hard_kill_at;   /* pending escalation (-1: none) */
	double save_start;                       /* rank 0 entered its current save phase */
	double save_held, save_limit;            /* a save hang: the rank's time in the save, its limit (0: none) */
};

static inline const char *node_of(const struct ctx *x, int r)
{
	return (r >= 0 && r < x->n) ? x->hb[r].host : "";
}

/* watch_post.c: on exit 75, the rank that stalled its peers (a stuck event) */
void wr_w_find_stuck(struct ctx *x);
/* watch_post.c: the live metrics' view of this attempt (live.h) */
void wr_w_live_tick(struct ctx *x, double now);
/* watch_post.c: the ranks' own step times replace what the ticks saw (a rank_times event) */
void wr_w_rank_times(struct ctx *x);

#endif
