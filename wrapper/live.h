/* live: what the wrapper shows while the job runs. Every few seconds it
 * writes the Prometheus textfile (atomically, for node_exporter's textfile
 * collector), serves the same text over HTTP when asked (127.0.0.1 unless
 * told otherwise), samples the ranks' step and wait times into
 * RUN_DIR/ranks.jsonl and rebuilds RUN_DIR/dashboard.html. */
#ifndef LLMT_WRAP_LIVE_H
#define LLMT_WRAP_LIVE_H

#include <stdio.h>

#include "goodput.h"
#include "hang.h"
#include "ledger.h"

struct wr_live_cfg {
	const char *run_dir;
	const char *metrics;       /* metrics.jsonl the ranks append to ... */
	const char *metrics_alt;   /* ... or this one while that one is absent (NULL: none) */
	const char *textfile;      /* NULL: RUN_DIR/llm_train.prom */
	const char *job;
	const char *http;          /* "[HOST:]PORT" to serve /metrics (NULL: no server; port 0: any free) */
	double every_s;            /* textfile and dashboard period (<= 0: only at the end) */
	int run;                   /* SLURM_RESTART_COUNT */
	double run_start;          /* when this run of the wrapper began */
	const struct wr_history *h;/* the job's history (updated by the caller between attempts) */
};

/* The attempt in progress as the watch loop sees it at a tick. */
struct wr_live_now {
	double now;
	int attempt;
	const struct wr_hb *hb;    /* per rank, with their timings */
	int nranks;
	struct wr_attempt cur;     /* t_end = now, cls = WR_DONE */
};

struct wr_live;

/* NULL with a message when the HTTP address is bad or cannot be bound. */
struct wr_live *wr_live_open(const struct wr_live_cfg *c);
/* At every tick of the watch loop; does its work every every_s. */
void wr_live_tick(struct wr_live *l, const struct wr_live_now *n);
/* The series of the last live view and of the metrics and eval lines the
 * ranks appended since (after the job: the report's textfile). */
void wr_live_series(struct wr_live *l, FILE *f);
/* Where the textfile goes. */
const char *wr_live_textfile(const struct wr_live *l);
/* Stops the server, frees l (NULL: nothing). */
void wr_live_close(struct wr_live *l);

/* Writes path through path.tmp.XXXXXX (mkstemp, mode 0666 less the umask)
 * and rename (a reader never sees half of it): fill writes the content.
 * 0, or -1 with a message. */
int wr_write_atomic(const char *path, void (*fill)(FILE *f, void *arg), void *arg);

/* Pure: parses "[HOST:]PORT" (HOST default 127.0.0.1, PORT 0-65535). 0 or -1. */
int wr_http_addr(const char *s, char *host, size_t hostlen, int *port);

#endif
