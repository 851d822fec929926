/* plugin.h: glue shared by the llm_train.so callbacks: the option table
 * and its raw values, the plugstack arguments, the policy loader with its
 * ownership check, and the per-context entry points llm_train.c calls. */
#ifndef LLMT_PLUGIN_H
#define LLMT_PLUGIN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <slurm/spank.h>

#include "llmt_limits.h"
#include "opts.h"
#include "policy.h"
#include "envgen.h"

#define LLMT_MSG "llm_train: "
#define LLMT_ERRLEN 2048

/* Options, in the order --help shows them. */
enum llmt_opt_id {
	LLMT_OPT_TRAIN = 0,
	LLMT_OPT_TP,
	LLMT_OPT_PP,
	LLMT_OPT_DP,
	LLMT_OPT_CKPT_DIR,
	LLMT_OPT_CKPT_INTERVAL,
	LLMT_OPT_RESTARTS,
	LLMT_OPT_NCCL,
	LLMT_OPT_EXPLAIN,
	LLMT_NOPTS
};

/* What the user gave, unparsed; bounded (longer values are flagged and
 * refused, never stored). Filled by the option callbacks and, in remote
 * and job-script contexts, from the SLURM_SPANK_* variables sbatch leaves. */
struct llmt_raw_opts {
	int given[LLMT_NOPTS];
	int too_long[LLMT_NOPTS];
	char val[LLMT_NOPTS][LLMT_SPEC_MAX + 1];
};
extern struct llmt_raw_opts llmt_raw;

/* Plugstack arguments (admin-controlled, plugstack.conf):
 *   policy=PATH      the policy (default LLMT_DEFAULT_POLICY)
 *   kernel_log=PATH  kernel log for the health checks (default /dev/kmsg);
 *                    "%n" is replaced by the node name (emulated clusters)
 *   state_dir=PATH   root-owned dir for the kernel-log marks
 *                    (default /run/slurm-llm-train)
 *   dev_dir=PATH     where /dev/nvidiaN are counted (default /dev)
 *   scontrol=PATH    scontrol used to drain (default /usr/bin/scontrol) */
struct llmt_conf {
	char policy[LLMT_PATH_MAX];
	char kernel_log[LLMT_PATH_MAX];
	char state_dir[LLMT_PATH_MAX];
	char dev_dir[LLMT_PATH_MAX];
	char scontrol[LLMT_PATH_MAX];
};
extern struct llmt_conf llmt_conf;
/* The plugstack argument error of this process's init ("" when none):
 * logged there, and llmt_prepare refuses every training job with it. */
extern char llmt_conf_err[LLMT_ERRLEN];

const char *llmt_opt_name(int id);
/* Resets llmt_conf, parses av (an error is logged and kept in
 * llmt_conf_err) and registers every option with spank_option_register.
 * 0, or -1 when an option cannot be registered (reported). */
int llmt_plugin_init(spank_t sp, int ac, char **av);
int llmt_conf_parse(int ac, char **av, struct llmt_conf *c, char *err, size_t errlen);
/* Name of the environment variable Slurm uses to carry option id into
 * the job: SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_<name, '-' -> '_'>. */
void llmt_opt_env_name(int id, char *buf, size_t len);
/* Remote context: fill options not given on the command line from the
 * job environment (sbatch's options reach the batch step this way). */
void llmt_raw_from_job_env(spank_t sp);
/* Job-script context: same from spank_option_getopt and getenv(). */
void llmt_raw_from_getopt(spank_t sp);
/* Forget every option (tests: a new process). */
void llmt_raw_reset(void);
/* 1 if any option was given. */
int llmt_raw_any(void);

/* Options from llmt_raw: --llm-train SPEC first, then each separate
 * option (they override the SPEC). 0 or -1 with err. */
int llmt_opts_from_raw(struct llmt_opts *o, char *err, size_t errlen);

/* Opens the policy without following links, checks it is root-owned and
 * not writable by others, parses it. Missing file: built-in defaults.
 * Returns a heap policy or NULL with err ("path:line:col: why"). */
struct llmt_policy *llmt_policy_open(const char *path, char *err, size_t errlen);

/* Everything up to a validated option set: policy, options, defaults,
 * validate against job. On error returns -1 with err; *pol is freed. */
int llmt_prepare(const struct llmt_job_info *job, struct llmt_opts *o,
		 struct llmt_policy **pol, char *err, size_t errlen);
/* llmt_prepare for a context callback: the error goes to slurm_error. */
int llmt_prepare_or_log(const struct llmt_job_info *job, struct llmt_opts *o,
			struct llmt_policy **pol);
/* Free space on the policy's checkpoint root that holds o->ckpt_dir
 * (health.ckpt_free_space; statvfs in a child bounded by its timeout):
 * a root low on space refuses new jobs at submit, and drains no node.
 * 0, or -1 with one line in err. */
int llmt_ckpt_space_check(const struct llmt_opts *o, const struct llmt_policy *p,
			  char *err, size_t errlen);
/* tp/pp/micro-batch=auto for the step of job (its nodelist, nnodes and
 * tasks per node tpn): the model read as uid, the planner's choice into
 * o, and o validated again with it. out (may be NULL) keeps the
 * candidates. Nothing to do: 0. -1 with one line in err (nothing fits:
 * the smallest allocation that would). */
struct llmt_auto_out;
int llmt_auto_step(struct llmt_opts *o, const struct llmt_policy *p, uid_t uid,
		   const struct llmt_job_info *job, const unsigned *tpn, struct llmt_auto_out *out,
		   char *err, size_t errlen);
/* Tells job_prolog/job_epilog (as SPANK_LLM_TRAIN) that this is a training
 * job, independent of how the options reached the job; failure is logged. */
void llmt_job_control_mark(spank_t sp);
/* The step's job and step id (0, or -1 logged). */
static inline int llmt_step_ids(spank_t sp, uint32_t *job_id, uint32_t *step_id)
{
	spank_err_t rc;
	if ((rc = spank_get_item(sp, S_JOB_ID, job_id)) != ESPANK_SUCCESS ||
	    (rc = spank_get_item(sp, S_JOB_STEPID, step_id)) != ESPANK_SUCCESS) {
		slurm_error(LLMT_MSG "cannot get the job/step id: %s", spank_strerror(rc));
		return -1;
	}
	return 0;
}
/* init_post_opt of sbatch/salloc and srun: the options against the policy
 * (partition and account from the variables named), then the job marked.
 * explain_refusal non-NULL: --llm-explain prints the settings and refuses
 * with "explain mode: <explain_refusal>". 0 or -1 (logged). */
int llmt_post_opt_check(spank_t sp, const char *partition_var, const char *account_var,
			const char *explain_refusal);

/* Settings-only environment (no rank): the LLM_TRAIN_* settings of the
 * contract for the batch step and --llm-explain. */
int llmt_settings_env(const struct llmt_opts *o, const struct llmt_policy *p,
		      uint32_t job_id, struct llmt_env *out, char *err, size_t errlen);
/* 1 if name is one of the per-rank variables (RANK, LOCAL_RANK, ...). */
int llmt_is_rank_var(const char *name);
extern const char *const llmt_rank_vars[];

/* --llm-explain output for allocator/local contexts. nodelist may be
 * NULL (sbatch: nodes unknown), tpn NULL = uniform. */
void llmt_explain(FILE *f, const struct llmt_opts *o, const struct llmt_policy *p,
		  const char *nodelist, const unsigned *tpn, unsigned uniform,
		  uint32_t job_id, uint32_t step_id);

/* Set by srun's local_user_init in the step's environment to JOBID.STEPID
 * when it refused the step (the message is printed): the nodes refuse
 * every task of that step silently, so the step ends and Slurm frees it.
 * SLURM_-prefixed: srun --export=NONE (or a list) still passes SLURM_*. */
#define LLMT_SRUN_REFUSED "SLURM_SPANK_LLM_TRAIN_REFUSED"

/* Per-context entry points (one file each). */
int llmt_allocator_init_post_opt(spank_t sp, int ac, char **av);
int llmt_local_init_post_opt(spank_t sp, int ac, char **av);
int llmt_local_user_init(spank_t sp, int ac, char **av);
int llmt_remote_user_init(spank_t sp, int ac, char **av);
int llmt_remote_task_init(spank_t sp, int ac, char **av);
int llmt_remote_exit(spank_t sp, int ac, char **av);
int llmt_job_prolog(spank_t sp, int ac, char **av);
int llmt_job_epilog(spank_t sp, int ac, char **av);

#endif
