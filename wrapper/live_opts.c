/* live_opts: the live metrics (live.h) as llm-train-wrap's options and
 * run dir ask for them. */
#include <stdio.h>
#include <stdlib.h>

#include "include/llmt/exitcodes.h"
#include "live.h"
#include "options.h"

struct wr_live *wr_live_from_opts(const struct opts *o, const char *run_dir, const char *job, int run,
                                  double run_start, const struct wr_history *h)
{
	static char metrics[4200], alt[4200];
	snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", run_dir);
	snprintf(alt, sizeof alt, "%s/metrics.jsonl", o->ckpt_dir);
	struct wr_live_cfg c = { .run_dir = run_dir, .metrics = metrics, .metrics_alt = alt,
	                         .textfile = o->metrics_textfile, .job = job, .http = o->metrics_http,
	                         .every_s = o->metrics_every, .run = run, .run_start = run_start, .h = h };
	struct wr_live *l = wr_live_open(&c);
	if (!l && o->metrics_http)
		exit(LLMT_EXIT_USAGE);   /* the address was named in the message */
	return l;
}
