/* ranktimes: the per-rank step time breakdown the ranks write as their
 * heartbeat's second line ("timing ...", runtime/train/steptime.h), and
 * what one attempt's accounting takes from all ranks' totals: its step
 * time, checkpoint stall and first step. Pure logic. */
#ifndef LLMT_WRAP_RANKTIMES_H
#define LLMT_WRAP_RANKTIMES_H

#include <stdbool.h>

/* The parts in the line's order. */
enum { WR_T_STEP, WR_T_COMPUTE, WR_T_TP, WR_T_PP, WR_T_DP, WR_T_ALL, WR_T_DATA, WR_T_CKPT, WR_T_N };
const char *wr_part_name(int part);   /* "step", "compute", "tp", ... "ckpt" */

struct wr_rank_times {
	bool valid;
	long steps;            /* steps the rank's process has timed */
	double first;          /* when its first timed step began (seconds since the epoch) */
	double total[WR_T_N];  /* sums over those steps */
	double last[WR_T_N];   /* its last step */
};

/* Parses "timing STEPS FIRST_NS" + 8 totals + 8 last values. 0, or -1
 * (t->valid false) on anything else. */
int wr_rank_times_parse(const char *line, struct wr_rank_times *t);

struct wr_attempt_times {
	int ranks;             /* ranks with timings (0: none: keep the old estimates) */
	double step_s;         /* mean training time per step, checkpoint stall left out */
	double ckpt_s;         /* checkpoint stall of the attempt (mean over ranks) */
	double first_step;     /* earliest first step start over ranks */
	double mean[WR_T_N];   /* per-part totals, mean over ranks */
};

/* Folds n ranks' timings (each at its stride bytes from the previous:
 * they sit inside larger records) into one attempt's figures. */
void wr_attempt_times(const struct wr_rank_times *t, int n, int stride, struct wr_attempt_times *a);

#endif
