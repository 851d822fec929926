/* llm_train.c: entry of the SPANK plugin llm_train.so. One function per
 * slurm_spank_* callback, each dispatching by spank_context() to the file
 * of that context (ctx_allocator.c, ctx_local.c, ctx_remote.c,
 * ctx_job_script.c). Only slurm_spank_* and plugin_* leave the .so. */
#include "plugin.h"

SPANK_PLUGIN(llm_train, 1);

/* Options are registered in every context that has them (local, remote,
 * allocator) with spank_option_register: the static spank_options table
 * does not reach sbatch. The job-script context (prolog/epilog) reads
 * options with spank_option_getopt, which needs them registered too. */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_REMOTE:
	case S_CTX_ALLOCATOR:
	case S_CTX_JOB_SCRIPT:
		return llmt_plugin_init(sp, ac, av);
	default:
		return 0;
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
		return llmt_allocator_init_post_opt(sp, ac, av);
	case S_CTX_LOCAL:
		return llmt_local_init_post_opt(sp, ac, av);
	default:
		return 0;
	}
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_LOCAL)
		return 0;
	return llmt_local_user_init(sp, ac, av);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return llmt_remote_user_init(sp, ac, av);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return llmt_remote_task_init(sp, ac, av);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return llmt_remote_exit(sp, ac, av);
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	return llmt_job_prolog(sp, ac, av);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	return llmt_job_epilog(sp, ac, av);
}
