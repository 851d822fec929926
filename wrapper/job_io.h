/* job_io: the recovery loop's steps that touch the world (Slurm's
 * environment and commands, the checkpoint tool, srun, the ledger, the
 * report), each around the pure step of job.h that decides. */
#ifndef LLMT_WRAP_JOB_IO_H
#define LLMT_WRAP_JOB_IO_H

#include "job.h"

/* setenv or exit 70 with a message */
void wr_setenv(const char *k, const char *v);
/* Slurm's environment as the wrapper sees it (hostnames via scontrol) */
void wr_site_read(const struct opts *o, struct wr_site *s);
void wr_site_free(struct wr_site *s);

/* The start of this run in the ledger (and a previous run cut short) */
void wr_job_begin(struct wr_job *j);
/* Pick the resume point: lists the checkpoints. 0, or the exit code */
int wr_job_pick_io(struct wr_job *j);
/* Build the attempt's environment: sets LLM_TRAIN_RESUME, _SKIP_BATCHES,
 * _ATTEMPT and (auto interval) _CKPT_INTERVAL */
void wr_job_env_io(struct wr_job *j);
/* Run the attempt: launch and watch it. 0, or the exit code */
int wr_job_run(struct wr_job *j, struct wr_watch_out *wo);
/* Gather down nodes (sinfo), waiting for Slurm when the step could not
 * be ended */
void wr_job_gather(struct wr_job *j, int code, struct wr_watch_out *wo);
/* Classify and record the attempt; returns sdc.json's step (-1: none) */
long wr_job_judge(struct wr_job *j, int code, struct wr_watch_out *wo, struct wr_verdict *v);
/* Decide and apply the action (with the restart's backoff) */
enum wr_next wr_job_act(struct wr_job *j, int code, const struct wr_watch_out *wo,
                        const struct wr_verdict *v, long sdc_step);
/* Requeue the job: 0 when requeued (ledger closed), else -1 with
 * j->exit_code set */
int wr_job_requeue(struct wr_job *j, int code);
/* Finish: report, the end event; returns the wrapper's exit code */
int wr_job_finish(struct wr_job *j);

#endif
