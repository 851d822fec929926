/* bridge_cpu.c: llmt_dev_create of a build without CUDA: every model is
 * built on the CPU (a node with a GPU still runs, on its CPUs, with a
 * note on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include "bridge.h"
#include "llmt/env.h"

int llmt_dev_create(const llmt_config *c, const llmt_par *par, llmt_prec prec, int B, int T,
					int nslots, int rc, llmt_model **out)
{
	(void)c; (void)par; (void)prec; (void)B; (void)T; (void)nslots; (void)rc; (void)out;
	char err[160];
	const char *g = getenv(LLMT_ENV_GPU);
	if (g && *g && llmt_dev_wanted(g, 1, err, sizeof err) == 1 && par->tp_rank == 0 &&
		par->pp_rank == 0)
		fprintf(stderr, "llm-train: LLM_TRAIN_GPU=%s but this build has no CUDA backend: "
						"training on the CPU\n", g);
	return 0;
}

int llmt_dev_model(const llmt_model *m)
{
	(void)m;
	return 0;
}

int llmt_dev_optim(llmt_model *m, const llmt_opt_env *e, llmt_trainopt **out)
{
	(void)m; (void)e; (void)out;
	return 0;
}
