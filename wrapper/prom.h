/* prom: the Prometheus text exposition of a job: the live series (step,
 * loss, grad norm, lr, tokens/s, MFU, per-rank step and wait times with
 * job, rank and node labels) and the goodput series (by cause, restarts).
 * Pure formatting onto a FILE; live.c and report.c write the file. */
#ifndef LLMT_WRAP_PROM_H
#define LLMT_WRAP_PROM_H

#include <stdbool.h>
#include <stdio.h>

#include "goodput.h"
#include "hang.h"
#include "ledger.h"

/* The newest metrics.jsonl record (rank 0) and eval.jsonl value. */
struct wr_metric_rec {
	bool valid;
	long step;
	double loss, grad_norm, lr, tokens_per_s, mfu, step_time_s, comm_time_s, ckpt_time_s;
	bool have_val;
	long val_step;
	double val_loss;
};

/* Reads one metrics.jsonl line into r (fields absent or null: NaN).
 * 0, or -1 for a line without an integer step. */
int wr_metric_parse(const char *line, struct wr_metric_rec *r);

struct wr_live_view {
	const char *job;
	int attempt, run;
	const struct wr_metric_rec *m;   /* NULL: no metrics yet */
	const struct wr_hb *hb;          /* per rank (NULL: none) */
	int nranks;
};

/* The live series of v. */
void wr_prom_live(FILE *f, const struct wr_live_view *v);
/* The goodput series: ratio, allocated, useful, lost by cause, restarts
 * by cause, runs, excluded nodes, useful steps. */
void wr_prom_goodput(FILE *f, const char *job, const struct wr_history *h, const struct wr_goodput *g);

/* Writes a label value escaped as the text format wants (\\, \", \n),
 * every byte that does not begin a valid UTF-8 sequence as '?' (a job id,
 * node or file name is the user's bytes; one invalid label makes
 * Prometheus and node_exporter refuse the whole text). */
void wr_prom_label(FILE *f, const char *v);

/* Length of the valid UTF-8 sequence at s (1-4; no overlong form, no
 * surrogate, at most U+10FFFF), 0 when s does not begin one. */
size_t wr_utf8_len(const unsigned char *s);

#endif
