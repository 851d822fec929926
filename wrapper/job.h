/* job: the wrapper's recovery loop as data and named steps. struct wr_job
 * holds everything the loop carries from one attempt to the next; its
 * starting values come from one initializer (wr_job_start). The steps
 * here are pure (plain inputs, no Slurm, files or signals) and unit-tested;
 * job_io.c runs them against the world. */
#ifndef LLMT_WRAP_JOB_H
#define LLMT_WRAP_JOB_H

#include <stdbool.h>

#include "classify.h"
#include "decide.h"
#include "hang.h"
#include "launch.h"
#include "ledger.h"
#include "options.h"
#include "watch.h"

/* What setup read from Slurm's environment (wr_site_read) */
struct wr_site {
	const char *job;           /* SLURM_JOB_ID, "" outside a job */
	const char *nodelist;      /* SLURM_JOB_NODELIST (may be NULL) */
	char **alloc;              /* its host names (malloc'd), nalloc of them */
	int nalloc;
	int run;                   /* SLURM_RESTART_COUNT */
	int ntasks_job;            /* SLURM_NTASKS (0: unset) */
	int tasks_per_node;
	int tp, pp, dp;            /* the plugin's layout */
	bool dp_auto;
	bool in_slurm;             /* a Slurm job, and srun wanted */
	double comm_timeout_s;     /* LLM_TRAIN_COMM_TIMEOUT */
	bool auto_interval;        /* LLM_TRAIN_CKPT_INTERVAL=auto */
};

struct wr_job {
	/* fixed for the run */
	const struct opts *o;
	const char *ckpt_tool;     /* o->ckpt_tool, or "none" once it proved absent */
	const char *run_dir, *hb_dir;
	const struct wr_site *site;
	struct wr_live *live;      /* live metrics and dashboard (main opens it after wr_job_begin) */
	struct wr_policy pol;
	bool preflight;            /* run the self-test before the first attempt and after node faults */
	const char *selftest_cmd;  /* llm-train, for `selftest` */
	double stuck_margin_s;     /* heartbeat staleness naming a stuck rank on exit 75 */
	double run_start;
	struct wr_history *h;      /* the ledger's history, updated as attempts end */
	struct wr_ledger *led;
	int sig_fd;                /* self-pipe of the wrapper's signals */
	/* carried from attempt to attempt */
	int nodes_step, ntasks;    /* the step's -N and -n (ntasks 0: srun's default) */
	struct wr_nodes excluded;
	int dp_now;                /* dp after an elastic shrink (0: the full layout's) */
	long max_resume;           /* resume at or before this step (-1: newest) */
	long skip_until;           /* skip data up to this step (-1: none) */
	bool need_agree;           /* resume only where the replicas agreed */
	long rollback_from;        /* resume step at the last rollback: skips apply at or before it */
	int attempt, no_progress, numeric_repeats, exit_code;
	int load_fails;            /* attempts in a row that failed in the load phase of resume */
	long load_fail_step;       /* ... of the checkpoint of this step */
	bool ckpt_marked;          /* this attempt's checkpoint was just marked bad (wr_job_mark_bad) */
	struct wr_steptimes st;
	double save_longest_s;     /* the longest save seen: the ledger's, then this run's (< 0: none) */
	/* this attempt */
	char resume[4096];
	long resume_step, skip;
	bool fresh_chosen;         /* checkpoints there, none fits: a fresh start on purpose */
	char interval[64];         /* LLM_TRAIN_CKPT_INTERVAL chosen for it ("" : unchanged) */
};

/* The job as it starts: every starting value. Exits 64 when --spares
 * leaves no node. */
struct wr_job wr_job_start(const struct opts *o, const struct wr_site *site,
                           struct wr_history *h, struct wr_ledger *led, const char *run_dir,
                           const char *hb_dir, int sig_fd, double now);

/* The value N of a trainer's command's option NAME N (or NAME=N), dflt
 * when it gives none or not a positive integer: --grad-accum (default 1: a
 * shrink then keeps dp dividing the full dp), --steps (0: unknown). */
long wr_cmd_opt(char *const *cmd, const char *name, long dflt);
/* The value of a trainer's command's option NAME V (or NAME=V), or NULL. */
const char *wr_cmd_arg(char *const *cmd, const char *name);

/* ---- pick the resume point ---- */
/* From the checkpoints ck[0..n) (newest first, their replicas' agreement
 * read through wr_ckpt_agree): resume and resume_step; then skip, the
 * batches a rollback's skip still asks for. Prints why none fits. 0, or
 * LLMT_EXIT_BADCKPT (stop) when every checkpoint that fits is marked bad. */
int wr_job_pick(struct wr_job *j, const struct wr_ckpt *ck, int n);

/* ---- build the attempt's environment ---- */
struct wr_attempt_env {
	char skip[32], attempt[32];
	char dp[16], batch_dp[16]; /* after a shrink: LLM_TRAIN_DP and LLM_TRAIN_BATCH_DP ("" : none) */
	char interval[64];         /* "" : leave LLM_TRAIN_CKPT_INTERVAL as it is */
	bool set_resume;           /* LLM_TRAIN_RESUME = j->resume (unset: the trainer's CKPT_DIR rule) */
	char ckpt_bad[WR_BAD_MAX * 64]; /* LLM_TRAIN_CKPT_BAD: the marks' identities, comma-separated */
	double ckpt_cost_s, mtbf_s;/* auto interval: its inputs (for the log line) */
};
/* ckpt_cost_s: median checkpoint write time so far (0: none); now. */
void wr_job_env(struct wr_job *j, double ckpt_cost_s, double now, struct wr_attempt_env *e);

/* ---- run the attempt ---- */
void wr_job_launch_cfg(const struct wr_job *j, struct wr_launch *lc);
int wr_job_nranks(const struct wr_job *j, const struct wr_launch *lc, int world_size);
void wr_job_watch_cfg(const struct wr_job *j, int nranks, struct wr_watch_cfg *wc);
/* Whether a node of the allocation is left over the step's (a spare) */
bool wr_job_has_spare(const struct wr_job *j);

/* ---- gather down nodes ---- */
/* Whether to ask Slurm which nodes are down after an ending with code */
bool wr_job_wants_node_states(const struct wr_job *j, const struct wr_ending *e, int code);
/* Whether to wait for Slurm's node states: the step could not be ended
 * and nothing named the node */
bool wr_job_must_wait_nodes(const struct wr_job *j, const struct wr_ending *e);
/* Adds the nodes of bad not yet excluded to e->down_nodes */
void wr_job_add_down(const struct wr_job *j, const struct wr_nodes *bad, struct wr_ending *e);

/* ---- classify and record ---- */
/* Updates progress counters and the history with the attempt's verdict */
void wr_job_record(struct wr_job *j, const struct wr_watch_out *wo, const struct wr_verdict *v);

/* ---- a checkpoint that comes back broken ---- */
/* Whether the attempt that just ended proves j->resume unloadable, so it
 * is marked bad and the next attempt resumes from an older checkpoint.
 * Only an attempt that resumed from a checkpoint the wrapper chose, made
 * no step past it, and ended by an exit code (class software; not a
 * signal, hang, node or user error) qualifies, and then:
 * - llm-train's exit 89 (LLMT_EXIT_BADCKPT): trusted at once; llm-train
 *   gives it only when the checkpoint's own bytes failed verification;
 * - a foreign trainer: its heartbeat was still in phase load, the second
 *   time in a row on this checkpoint (one retry in place first: a storage
 *   hiccup is not a bad checkpoint), and fewer than WR_BAD_FOREIGN_MAX
 *   checkpoints marked so far by this rule (a broken data dir or an
 *   import error in the load phase must not walk back through every
 *   checkpoint).
 * Updates j->load_fails. Returns 1 (exit 89), 2 (load phase) or 0, with
 * the reason in why. */
#define WR_BAD_LOAD_REPEAT 2
#define WR_BAD_FOREIGN_MAX 2
int wr_job_ckpt_bad(struct wr_job *j, const struct wr_watch_out *wo, const struct wr_verdict *v,
                    char *why, size_t len);
/* Marks j->resume bad in the history (rule: wr_job_ckpt_bad's result) and
 * turns the verdict into a transient one: restart, from an older
 * checkpoint. Call before wr_job_record: the attempt then does not count
 * as one without progress (the older checkpoint is a new try). */
void wr_job_mark_bad(struct wr_job *j, int rule, const char *why, const char *id, struct wr_verdict *v);

/* ---- apply the action ---- */
/* The state wr_decide judges (s->excluded points into j) */
void wr_job_state(const struct wr_job *j, const struct wr_verdict *v, const struct wr_watch_out *wo,
                  int code, long sdc_step, double now, struct wr_state *s);
enum wr_next { WR_NEXT_STOP, WR_NEXT_RESTART, WR_NEXT_REQUEUE };
/* Counts the restart, moves to the next attempt, takes the action's
 * layout and resume limits; ACT_STOP sets j->exit_code. */
enum wr_next wr_job_apply(struct wr_job *j, const struct wr_verdict *v, const struct wr_action *a,
                          double now);
/* Takes the action's nodes, layout and exclusions (ACT_RESTART), without
 * counting a restart or moving to the next attempt (wr_job_apply does both). */
void wr_job_layout(struct wr_job *j, const struct wr_action *a);
/* The exit code when the requeue the action asked for failed */
int wr_job_requeue_failed_code(int code);

/* The nodes an ending names from the job's own bytes (a heartbeat's host
 * field: hung, stuck and straggler node; sdc.json's suspects) kept only
 * when they are nodes of the allocation; NAME.domain of a node NAME is
 * NAME. Anything else becomes "" (node unknown): excluding it would make
 * srun refuse every later step ("Invalid node name"). Outside Slurm (no
 * allocation known) names are kept. Returns the names dropped. */
int wr_job_known_nodes(const struct wr_site *s, struct wr_ending *e);

#endif
