/* options: llm-train-wrap's command line and the environment defaults
 * it reads (the plugin's policy settings); usage errors exit 64 with one
 * line naming the bad value. */
#ifndef LLMT_WRAP_OPTIONS_H
#define LLMT_WRAP_OPTIONS_H

#include <stdbool.h>

struct opts {
	const char *ckpt_dir, *run_dir, *hb_dir, *srun, *ckpt_tool;
	double max_restarts, window_s, hang_min, hang_max, hang_k, backoff, rollback, skip;
	double spares, grace, mtbf, tick, node_wait, hang_startup, strag_factor, strag_min;
	double strag_steps;                       /* --straggler-steps K (0: report only) */
	double metrics_every;                     /* live textfile and dashboard period (0: at the end) */
	const char *metrics_textfile, *metrics_http; /* NULL: RUN_DIR/llm_train.prom; no server */
	int shrink;          /* -1: from the plugin's options */
	int preflight;       /* --preflight 1, --no-preflight 0, -1: with spares or the policy's */
	bool preflight_policy;                    /* LLM_TRAIN_PREFLIGHT=1 (the plugin's policy) */
	double preflight_timeout;                 /* the self-test's time limit, seconds */
	double save_factor, save_min;             /* save limit: factor x the longest save, at least save_min (s) */
	double slurm_timeout;                     /* a slurmctld query (scontrol, squeue, sinfo, job-state) is killed after this (s) */
	const char *selftest_cmd;                 /* NULL: the checkpoint tool (llm-train) */
	bool requeue, progress_out, no_srun, ckpt_tool_given;
	int verbose;
	char **cmd;
};

void wr_parse_options(int argc, char **argv, struct opts *o);

/* A number from the environment (dflt when unset); a bad value is a usage error. */
double wr_env_num(const char *name, double dflt, double lo, double hi);

struct wr_history;
struct wr_live;
/* The live metrics the options ask for (live.h); a server that cannot
 * listen is a usage error (exit 64). NULL when out of memory. */
struct wr_live *wr_live_from_opts(const struct opts *o, const char *run_dir, const char *job, int run,
                                  double run_start, const struct wr_history *h);

void wr_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
