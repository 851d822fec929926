/* ctx_allocator.c: sbatch/salloc (allocator context). Checks the options
 * against the admin policy before anything is submitted: a bad job is
 * refused with one line naming the bad value. The task count is not known
 * here (Slurm gives the allocator no job items), so the layout's product
 * is checked again by srun (local_user_init) and on the nodes.
 * --llm-explain prints the settings and refuses to submit. */
#include "plugin.h"

#include <stdlib.h>
#include <string.h>

static void job_control_mark(spank_t sp)
{
	/* Tells job_prolog/job_epilog (as SPANK_LLM_TRAIN) that this is a
	 * training job, independent of how the options reached the job. */
	spank_err_t rc = spank_job_control_setenv(sp, "LLM_TRAIN", "1", 1);
	if (rc != ESPANK_SUCCESS)
		slurm_error(LLMT_MSG "spank_job_control_setenv(LLM_TRAIN): %s", spank_strerror(rc));
}

int llmt_allocator_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!llmt_raw_any())
		return 0;
	struct llmt_job_info job;
	memset(&job, 0, sizeof(job));
	job.partition = getenv("SBATCH_PARTITION");
	job.account = getenv("SBATCH_ACCOUNT");
	struct llmt_opts o;
	struct llmt_policy *p = NULL;
	char err[LLMT_ERRLEN];
	if (llmt_prepare(&job, &o, &p, err, sizeof(err)) != 0) {
		slurm_error(LLMT_MSG "%s", err);
		return -1;
	}
	if (o.explain) {
		llmt_explain(stdout, &o, p, NULL, NULL, 0, 0, 0);
		fflush(stdout);
		llmt_policy_free(p);
		slurm_error(LLMT_MSG "explain mode: job not submitted");
		return -1;
	}
	llmt_policy_free(p);
	job_control_mark(sp);
	return 0;
}
