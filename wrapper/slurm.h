/* slurm: the wrapper's few direct dealings with Slurm's commands:
 * expanding a host list, the plugin's layout option, SlurmdTimeout, and
 * requeueing the job with nodes excluded (scontrol). */
#ifndef LLMT_WRAP_SLURM_H
#define LLMT_WRAP_SLURM_H

#include <stdbool.h>

#include "classify.h"
#include "ledger.h"

/* Expands a Slurm hostlist with scontrol; returns the count (names in *out, malloc'd). */
int wr_hostnames(const char *list, char ***out);

/* tp/pp/dp from the plugin's options as the job sees them
 * (SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_{llm_train,llm_tp,llm_pp,llm_dp});
 * dp_auto: a plugin training job whose dp follows the task count. */
void wr_plugin_layout(int *tp, int *pp, int *dp, bool *dp_auto);
/* The job's steps get one of the plugin's options: LLM_TRAIN set (a step
 * of the plugin, the batch step), or an option of it in the environment
 * srun reads (salloc --llm-train=...: the salloc shell is no step). */
bool wr_plugin_options(void);
/* The checkpoint dir of the plugin's options in the environment
 * (--llm-ckpt-dir=DIR, else --llm-train=...,ckpt-dir=DIR,...), which the
 * tasks get verbatim as LLM_TRAIN_CKPT_DIR: for an salloc shell, which no
 * step of the plugin set it in. Into buf (absolute, no control bytes), or
 * NULL. */
const char *wr_plugin_ckpt_dir(char *buf, size_t len);

/* Slurm's SlurmdTimeout (seconds) from scontrol show config, 300 if unknown. */
double wr_slurmd_timeout(void);

/* scontrol requeue of job, keeping ex out of its next run. Records the
 * requeue in the ledger first. Returns 0 once the job is requeued. */
int wr_requeue(const char *job, const struct wr_nodes *ex, struct wr_ledger *l);

/* The bound on every slurmctld query below (--slurm-timeout, seconds). */
/* its default, seconds: above the MessageTimeout busy sites set */
#define WR_SLURM_TIMEOUT_S 60
void wr_slurm_timeout_set(double s);
/* Runs the slurmctld query argv under that bound: a query past it is
 * killed, with one line naming it, the bound and what the wrapper does
 * instead (instead); WR_RUN_TIMEDOUT then, else as wr_run_capture. */
int wr_slurm_query(char *const argv[], char *out, size_t len, char *err, size_t errlen, const char *instead);

/* The name the wrapper gives its steps (srun --job-name). */
#define WR_STEP_NAME "llm-train-wrap"

/* Cancels steps of job named WR_STEP_NAME that Slurm still lists after
 * their srun ended (a step whose end the controller missed, e.g. while it
 * restarted, holds its CPUs and blocks the next step). Returns how many. */
int wr_cancel_leftover_steps(const char *job);
/* 1 when slurmctld has the job cancelled (scancel): its SIGTERM is then
 * an end, not a preemption or the time limit (scontrol shows COMPLETING
 * for all of them). 0 otherwise or when unknown. Runs job-state. */
int wr_job_cancelled(const char *job);
int wr_job_state_main(int argc, char **argv);

#endif
