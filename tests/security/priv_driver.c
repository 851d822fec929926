/* priv_driver.c: runs llm_train.so's callbacks (through the fake_spank
 * harness of tests/spank) the way root runs them, for the privilege tests:
 *   priv_driver policy POLICY             allocator init_post_opt only:
 *                                         exit 0 accepted, 1 refused (log printed)
 *   priv_driver chain POLICY WORK CKPT    sbatch, slurmstepd (user_init,
 *     task_init) and prolog/epilog with
 *     --llm-ckpt-dir=CKPT; state_dir, kernel log and scontrol under WORK.
 *     Prints "ENV K=V" for every variable the plugin set for the task and
 *     "CTL K=V" for the job control environment; exit 0 when every
 *     callback returned 0. privilege_paths.sh runs it under strace. */
#include "fake_spank.h"
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "spank/llm_train.c"

static char *args[8];
static int nargs;

static int init(spank_context_t ctx, char **av, int ac)
{
	nargs = ac;
	for (int i = 0; i < ac; i++)
		args[i] = av[i];
	llmt_remote_exit(NULL, 0, NULL);
	llmt_raw_reset();
	fake_reset(ctx);
	return slurm_spank_init(FAKE_SP, nargs, args);
}

static int report(const char *what, int rc)
{
	if (rc != 0) {
		printf("%s: rc %d\n", what, rc);
		fake_log_dump();
	}
	return rc != 0;
}

int main(int argc, char **argv)
{
	char pol[1200], kl[1200], st[1200], sc[1200];
	int bad = 0;

	if (argc < 3)
		return 64;
	snprintf(pol, sizeof pol, "policy=%s", argv[2]);
	if (!strcmp(argv[1], "policy")) {
		char *av[] = { pol };
		if (init(S_CTX_ALLOCATOR, av, 1))
			return report("init", 1);
		fake_give_option("llm-train", "tp=1");
		int rc = slurm_spank_init_post_opt(FAKE_SP, nargs, args);
		fake_log_dump();
		return rc == 0 ? 0 : 1;
	}
	if (strcmp(argv[1], "chain") || argc != 5)
		return 64;
	const char *work = argv[3], *ckpt = argv[4];
	snprintf(kl, sizeof kl, "kernel_log=%s/kmsg.%%n", work);
	snprintf(st, sizeof st, "state_dir=%s/state", work);
	snprintf(sc, sizeof sc, "scontrol=%s/scontrol", work);
	char *av[] = { pol, kl, st, sc };

	/* sbatch --llm-train=tp=1 --llm-ckpt-dir=CKPT */
	bad |= report("allocator init", init(S_CTX_ALLOCATOR, av, 4));
	fake_give_option("llm-train", "tp=1");
	fake_give_option("llm-ckpt-dir", ckpt);
	bad |= report("allocator init_post_opt", slurm_spank_init_post_opt(FAKE_SP, nargs, args));
	for (int i = 0; i < FAKE_MAX_ENV && fake.ctl_env[i]; i++)
		printf("CTL %s\n", fake.ctl_env[i]);

	/* slurmstepd of the job's step: one task on node n1 */
	bad |= report("remote init", init(S_CTX_REMOTE, av, 4));
	fake.item.job_id = 77;
	fake.item.step_id = 0;
	fake.item.nnodes = 1;
	fake.item.local_tasks = 1;
	fake.item.total_tasks = 1;
	fake.item.uid = 65534;
	fake.item.gid = 65534;
	fake_env_set("SLURM_STEP_NODELIST", "n1");
	fake_env_set("SLURM_STEP_TASKS_PER_NODE", "1");
	fake_env_set("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train", "tp=1");
	fake_env_set("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_ckpt_dir", ckpt);
	char *before[FAKE_MAX_ENV] = { 0 };
	for (int i = 0; i < FAKE_MAX_ENV && fake.env[i]; i++)
		before[i] = strdup(fake.env[i]);
	bad |= report("remote init_post_opt", slurm_spank_init_post_opt(FAKE_SP, nargs, args));
	bad |= report("user_init", slurm_spank_user_init(FAKE_SP, nargs, args));
	fake.item.in_task = 1;
	fake.item.task_id = 0;
	fake.item.task_global_id = 0;
	bad |= report("task_init", slurm_spank_task_init(FAKE_SP, nargs, args));
	for (int i = 0; i < FAKE_MAX_ENV && fake.env[i]; i++) {
		int old = 0;
		for (int k = 0; k < FAKE_MAX_ENV && before[k]; k++)
			old |= !strcmp(before[k], fake.env[i]);
		if (!old)
			printf("ENV %s\n", fake.env[i]);
	}
	for (int k = 0; k < FAKE_MAX_ENV; k++)
		free(before[k]);
	slurm_spank_exit(FAKE_SP, nargs, args);

	/* prolog and epilog on n1 (root) */
	bad |= report("job script init", init(S_CTX_JOB_SCRIPT, av, 4));
	fake_give_option("llm-ckpt-dir", ckpt);
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n1", 1);
	setenv("SLURM_JOB_ID", "77", 1);
	setenv("SLURM_JOB_UID", "65534", 1);
	bad |= report("job_prolog", slurm_spank_job_prolog(FAKE_SP, nargs, args));
	bad |= report("job_epilog", slurm_spank_job_epilog(FAKE_SP, nargs, args));
	fake_free();
	return bad;
}
