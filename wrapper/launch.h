/* launch: the I/O of starting a training step. Asks the checkpoint tool
 * (`llm-train ckpt-list`) for valid checkpoints and picks one, reads a
 * manifest's replicas_agree, and forks srun in its own process group with
 * its output on pipes. */
#ifndef LLMT_WRAP_LAUNCH_H
#define LLMT_WRAP_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "classify.h"
#include "ledger.h"

struct wr_ckpt {
	long step;
	char path[4096];
	long long gen;             /* its manifest's or marker's generation (0: none) */
};

/* Runs `tool ckpt-list dir`; fills up to max entries, newest first (by
 * generation, read from each one's manifest or marker: include/llmt/ckptgen.h,
 * then step, whatever the tool's order). Lines
 * the tool prints on stderr (corrupt checkpoints) are echoed and recorded
 * in the ledger as checkpoint_skipped. Returns the count, -2 when the
 * tool does not exist, -66 or -74 when it exits so (CKPT_DIR not a
 * directory, not listable), or -1 when it fails otherwise (message
 * printed). */
int wr_ckpt_list(const char *tool, const char *dir, struct wr_ckpt *out, int max,
                 struct wr_ledger *l);

/* 1 if dir/manifest.json says "replicas_agree": true, 0 if false or
 * absent, -1 if it cannot be read. */
int wr_ckpt_agree(const char *dir);

/* The newest checkpoint with step <= max_step (max_step < 0: any) whose
 * replicas agreed when need_agree, and not marked bad in h (may be NULL):
 * a checkpoint that failed to load. Returns its index or -1 for none;
 * *nbad (may be NULL) counts those skipped as bad. */
int wr_ckpt_pick(const struct wr_ckpt *c, int n, long max_step, bool need_agree,
                 const struct wr_history *h, int *nbad, struct wr_ledger *l);

struct wr_launch {
	const char *srun;          /* srun binary */
	char *const *cmd;          /* the training command */
	const struct wr_nodes *exclude;
	int nodes, ntasks;         /* 0: srun's defaults (the whole allocation) */
	bool direct;               /* run cmd without srun (outside Slurm, tests) */
	bool overlap;              /* share resources still held by a dying step */
	const char *name;          /* srun --job-name of the step (NULL: none) */
};

struct wr_step {
	pid_t pid;                 /* srun, leader of its own process group */
	int out_fd, err_fd;        /* its stdout and stderr, non-blocking */
};

/* Forks srun (environment already set by the caller). 0 or -1. */
int wr_launch(const struct wr_launch *c, struct wr_step *s);

/* While on, commands run by wr_run_capture block SIGTERM, SIGINT, SIGHUP
 * and SIGUSR1/2 (scontrol calls that must outlive a requeue's signals). */
void wr_shield_children(bool on);

/* Runs argv, waits, returns its exit code (or -1), stdout to out (len). */
int wr_run_capture(char *const argv[], char *out, size_t len, char *err, size_t errlen);

/* As wr_run_capture, with a deadline: a command still running (or holding
 * its pipes) timeout_s after its start is killed (SIGKILL to its pid, our
 * own child) and reaped; WR_RUN_TIMEDOUT then. timeout_s <= 0: none. */
#define WR_RUN_TIMEDOUT (-2)
int wr_run_capture_timeout(char *const argv[], char *out, size_t len, char *err, size_t errlen, double timeout_s);

#endif
