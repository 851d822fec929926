/* metrics.h: one JSON line per optimizer step (rank 0), appended to
 * RUN_DIR/metrics.jsonl, in the contract's field order. Non-finite numbers
 * are written as null (JSON has no NaN). */
#ifndef LLMT_METRICS_H
#define LLMT_METRICS_H
#include <stdio.h>

typedef struct {
	long step;
	double loss, grad_norm, lr, tokens_per_s, mfu, step_time_s, comm_time_s, ckpt_time_s;
	int skipped;
} llmt_metrics;

/* Pure: the line (with newline) into buf; returns its length. */
int llmt_metrics_format(char *buf, size_t len, const llmt_metrics *m);

/* Open path for appending (created if missing). NULL with a message. */
FILE *llmt_metrics_open(const char *path);
/* Append and flush. Returns 0 or -1 (I/O error, reported). */
int llmt_metrics_write(FILE *f, const llmt_metrics *m);

#endif
