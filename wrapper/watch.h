/* watch: supervises one running step. Relays its output, reads per-rank
 * heartbeats (or output progress), kills it on a hang, forwards the
 * wrapper's signals, and after it ends gathers what classify needs:
 * exit status, srun's per-node task deaths, the rank that stalled the
 * others on exit 75, Slurm's node states. */
#ifndef LLMT_WRAP_WATCH_H
#define LLMT_WRAP_WATCH_H

#include <stdbool.h>

#include "classify.h"
#include "hang.h"
#include "hbfile.h"
#include "launch.h"
#include "ledger.h"
#include "live.h"
#include "savewatch.h"

/* Ranks a Slurm task may stand for (torchrun --nproc_per_node per task:
 * one per GPU of a node of 8); llm_train.py RANKS_PER_TASK says it too. */
#define WR_RANKS_PER_TASK 8

struct wr_watch_cfg {
	const char *hb_dir;        /* per-rank heartbeat files rank_NNNNN */
	int nranks;                /* the step's tasks: one heartbeat each is expected */
	int nranks_max;            /* rank files read up to this many (torchrun per node: more ranks than tasks) */
	const struct wr_hbold *hb_old; /* nranks_max records there before the launch (leftovers; NULL: none) */
	struct wr_hang_cfg hang;
	struct wr_save_cfg save;   /* a rank held in phase save past its limit is hung (savewatch.h) */
	double *save_longest_s;    /* in/out: the longest save seen (< 0: none yet); NULL: no save limit */
	bool progress_from_output; /* no heartbeats: a new output line is progress */
	double straggler_factor;   /* report a rank slower than factor x median ... */
	double straggler_min_s;    /* ... and slower by at least this */
	long straggler_steps;      /* compute above factor x median for this many steps: act */
	bool straggler_spare;      /* a spare can replace a straggler's node */
	long total_steps;          /* the job's last step (0: unknown: stragglers only reported) */
	const char *ckpt_dir;      /* its "latest" checkpoint: work lost by a restart */
	double stuck_margin_s;     /* exit 75: a heartbeat this much staler than all others names the stuck rank (0: off) */
	double rate_every_s;       /* a step_rate ledger event this often */
	double kill_grace_s;       /* after SIGTERM to srun, SIGKILL its group this much later */
	double preempt_grace_s;    /* after forwarding a preemption, wait this long */
	double tick_s;             /* poll period */
	struct wr_ledger *ledger;
	int attempt;
	long resume_step;
	int sig_fd;                /* self-pipe: one byte per signal the wrapper got */
	const char *nodelist;      /* the job's nodes, for sinfo */
	const char *sinfo;         /* sinfo binary */
	int verbose;
	struct wr_live *live;      /* live metrics and dashboard (NULL: none) */
};

struct wr_watch_out {
	struct wr_ending e;
	double t_launch, t_first_step, t_end;
	long last_step;
	double step_s, ckpt_s;
	int hung_rank;
	int stuck_rank;            /* exit 75: the rank the others waited for, else -1 */
	bool in_load;              /* a rank's last heartbeat of this attempt was in phase load */
};

/* Watches s until it ends; st learns step times across attempts. */
int wr_watch(const struct wr_watch_cfg *c, struct wr_step *s, struct wr_steptimes *st,
             struct wr_watch_out *o);

/* Parses srun's "srun: error: NODE: task(s) LIST: WHAT" line. Returns 1
 * with node and either sig (a signal death) or code ("Exited with exit
 * code N") filled, else 0. */
int wr_srun_task_line(const char *line, char *node, size_t nodelen, int *sig, int *code);

/* Nodes of nodelist that Slurm reports down, drained, failing or not
 * responding (sinfo -N). 0, or -1 when sinfo cannot run. */
int wr_node_states(const char *sinfo, const char *nodelist, struct wr_nodes *bad);

/* Parses sinfo's "%N %T" lines (text is modified). */
void wr_parse_node_states(char *text, struct wr_nodes *bad);

/* Reads sdc.json suspects' hosts. 0 or -1. */
int wr_sdc_suspects(const char *path, struct wr_nodes *out, long *step);

double wr_now(void);

#endif
