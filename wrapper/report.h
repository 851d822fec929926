/* report: the end-of-job summary (goodput, time lost per cause, restarts,
 * excluded nodes) on stdout, the loss curve as a PNG through gnuplot, and
 * a Prometheus textfile and the dashboard, all from the ledger's history and
 * metrics.jsonl. */
#ifndef LLMT_WRAP_REPORT_H
#define LLMT_WRAP_REPORT_H

#include "goodput.h"
#include "ledger.h"
#include "live.h"

struct wr_report_cfg {
	const char *run_dir;
	const char *metrics;      /* metrics.jsonl (rank 0's per-step metrics) */
	const char *gnuplot;      /* gnuplot binary */
	const char *job;          /* job id label ("" outside Slurm) */
	double now;               /* end of this run */
	struct wr_live *live;     /* the live metrics of this run (NULL: none): their last values stay in the textfile */
	const char *shown_dir;    /* run_dir as printed (NULL: run_dir; `report` works in "." pinned to it) */
	const char *shown_metrics;   /* metrics as printed (NULL: metrics) */
};

/* Computes goodput over the whole job and writes the three outputs.
 * Returns 0; a missing gnuplot or metrics file is a note, not an error. */
int wr_report(const struct wr_history *h, const struct wr_report_cfg *c, struct wr_goodput *g);

/* Loss curve data: the last loss logged for each step (a rollback logs
 * steps again; the surviving run wins). Writes "step loss" lines to
 * dat_path; returns the number of points or -1. */
int wr_loss_points(const char *metrics_path, const char *dat_path);

#endif
