/* ctx_local.c: srun (local context). init_post_opt checks the options
 * against the policy; local_user_init, the first point where srun knows
 * the step's task count, checks the layout against it and, with
 * --llm-explain, prints the rank map and every task's environment and
 * refuses to launch.
 *
 * A refusal here never fails local_user_init: Slurm 22.05 has already
 * created the step then, and an srun that exits from this callback leaves
 * it RUNNING in slurmctld (no slurmstepd ever completes it, scancel does
 * not free it), so every later step of the job waits "Requested nodes
 * are busy" until the time limit. srun prints the one line and marks the
 * step in the tasks' environment (LLMT_SRUN_REFUSED = JOBID.STEPID); the
 * nodes' task_init refuses every task of that step without a word, no
 * task runs, the step ends as a failed step and Slurm frees it. */
#include "plugin.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autolayout.h"
#include "plan.h"

int llmt_local_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	/* --llm-explain is served in local_user_init, once the tasks are known */
	return llmt_post_opt_check(sp, "SLURM_JOB_PARTITION", "SLURM_JOB_ACCOUNT", NULL);
}

/* The node list srun's step will use, when srun's environment tells it:
 * inside an allocation whose node count equals the step's. */
static const char *step_nodelist(uint32_t nnodes)
{
	const char *nl = getenv("SLURM_STEP_NODELIST");
	if (nl && *nl)
		return nl;
	nl = getenv("SLURM_JOB_NODELIST");
	const char *nn = getenv("SLURM_JOB_NUM_NODES");
	if (!nl || !*nl || !nn || strtoul(nn, NULL, 10) != nnodes)
		return NULL;
	return nl;
}

/* auto: chosen here too, so a model that fits nothing is refused by srun
 * with the smallest allocation (the nodes decide the same again); with
 * --llm-explain the candidates are printed. 0 or -1 (logged). */
static int local_auto(struct llmt_opts *o, const struct llmt_policy *p,
		      const struct llmt_job_info *job, const unsigned *tpn)
{
	char err[LLMT_ERRLEN];
	struct llmt_auto_out *ao = calloc(1, sizeof(*ao));
	if (!ao) {
		slurm_error(LLMT_MSG "out of memory");
		return -1;
	}
	int rc = llmt_auto_step(o, p, getuid(), job, tpn, ao, err, sizeof(err));
	if (o->explain && ao->in.nodes)
		llmt_auto_print(stdout, "llm_train: explain: ", ao);
	free(ao);
	if (rc != 0) {
		fflush(stdout);
		slurm_error(LLMT_MSG "%s: step not launched", err);
	}
	return rc;
}

/* The checks of the step; 0, or -1 with the one line logged. */
static int local_check(spank_t sp, uint32_t job_id, uint32_t step_id)
{
	uint32_t ntasks = 0, nnodes = 0;
	spank_err_t rc = spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks);
	if (rc != ESPANK_SUCCESS) {
		slurm_error(LLMT_MSG "cannot get the step's task count: %s", spank_strerror(rc));
		return -1;
	}
	rc = spank_get_item(sp, S_JOB_NNODES, &nnodes);
	if (rc != ESPANK_SUCCESS) {
		slurm_error(LLMT_MSG "cannot get the step's node count: %s", spank_strerror(rc));
		return -1;
	}

	const char *nl = step_nodelist(nnodes);
	struct llmt_job_info job;
	memset(&job, 0, sizeof(job));
	job.ntasks = ntasks;
	job.nnodes = nnodes;
	job.partition = getenv("SLURM_JOB_PARTITION");
	job.account = getenv("SLURM_JOB_ACCOUNT");
	job.nodelist = nl;
	struct llmt_opts o;
	struct llmt_policy *p = NULL;
	if (llmt_prepare_or_log(&job, &o, &p) != 0)
		return -1;
	if (!o.explain && !llmt_opts_is_auto(&o)) {
		llmt_policy_free(p);
		return 0;
	}
	/* Tasks per node: srun's block distribution over the step's nodes
	 * (what SLURM_STEP_TASKS_PER_NODE will say on the nodes). */
	unsigned *tpn = NULL;
	if (nl && nnodes > 0 && nnodes <= LLMT_MAX_NODES) {
		tpn = calloc(nnodes, sizeof(*tpn));
		const char *s = getenv("SLURM_STEP_TASKS_PER_NODE");
		char err[LLMT_ERRLEN];  /* a bad value falls back to the block split */
		if (tpn && !(s && llmt_tasks_per_node_parse(s, nnodes, tpn, err, sizeof(err)) == 0)) {
			for (uint32_t i = 0; i < nnodes; i++)
				tpn[i] = ntasks / nnodes + (i < ntasks % nnodes ? 1 : 0);
		}
	}
	if (llmt_opts_is_auto(&o) && nl && tpn && local_auto(&o, p, &job, tpn) != 0) {
		free(tpn);
		llmt_policy_free(p);
		return -1;
	}
	if (!o.explain) {
		free(tpn);
		llmt_policy_free(p);
		return 0;
	}
	llmt_explain(stdout, &o, p, tpn ? nl : NULL, tpn, 0, job_id, step_id);
	fflush(stdout);
	free(tpn);
	llmt_policy_free(p);
	slurm_error(LLMT_MSG "explain mode: step not launched");
	return -1;
}

int llmt_local_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	/* a mark inherited from the caller's environment is never passed on */
	unsetenv(LLMT_SRUN_REFUSED);
	if (!llmt_raw_any())
		return 0;
	uint32_t job_id = 0, step_id = 0;
	if (llmt_step_ids(sp, &job_id, &step_id) != 0)
		return -1;
	if (local_check(sp, job_id, step_id) == 0)
		return 0;
	/* srun merges its environment into the step's after this callback */
	char mark[32];
	snprintf(mark, sizeof(mark), "%u.%u", job_id, step_id);
	if (setenv(LLMT_SRUN_REFUSED, mark, 1) != 0) {
		slurm_error(LLMT_MSG "cannot mark the step refused: out of memory");
		return -1;
	}
	return 0;
}
