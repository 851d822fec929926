/* dashboard: RUN_DIR/dashboard.html, one self-contained page (no network:
 * its data and its drawing script are inside it; it works from file://):
 * train and eval loss, grad norm, lr, tokens/s, MFU, a per-rank heatmap of
 * step and communication time, the event timeline and goodput by cause.
 * Rebuilt from the run dir's files while the job runs (the page reloads
 * itself then) and at the end (llm-train-wrap report RUN_DIR too). */
#ifndef LLMT_WRAP_DASHBOARD_H
#define LLMT_WRAP_DASHBOARD_H

#include <stdbool.h>

#include "goodput.h"

/* Points kept per series and heatmap columns (longer runs are thinned). */
#define WR_DASH_POINTS 4000
#define WR_DASH_COLS 240

/* Writes RUN_DIR/dashboard.html (atomically) from metrics (metrics.jsonl),
 * RUN_DIR's eval.jsonl, ledger.jsonl and ranks.jsonl, and g (NULL: none).
 * live: the job still runs (the page reloads every 10 s). 0 or -1. */
int wr_dashboard_write(const char *run_dir, const char *metrics, const char *job, bool live,
                       const struct wr_goodput *g);

#endif
