/* ctx_allocator.c: sbatch/salloc (allocator context). Checks the options
 * against the admin policy before anything is submitted: a bad job is
 * refused with one line naming the bad value. The task count is not known
 * here (Slurm gives the allocator no job items), so the layout's product
 * is checked again by srun (local_user_init) and on the nodes.
 * --llm-explain prints the settings and refuses to submit. */
#include "plugin.h"

int llmt_allocator_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return llmt_post_opt_check(sp, "SBATCH_PARTITION", "SBATCH_ACCOUNT", "job not submitted");
}
