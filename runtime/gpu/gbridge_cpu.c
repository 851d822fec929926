/* gbridge_cpu.c: llmt_dev_create of a build without CUDA: every model is
 * built on the CPU (a node with a GPU still runs, on its CPUs, with a
 * note on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include "gbridge.h"

int llmt_dev_create(const llmt_config *c, const llmt_par *par, llmt_prec prec, int B, int T,
                    int nslots, llmt_model **out)
{
    (void)c; (void)par; (void)prec; (void)B; (void)T; (void)nslots; (void)out;
    char err[160];
    const char *g = getenv("LLM_TRAIN_GPU");
    if (g && *g && llmt_dev_wanted(g, 1, err, sizeof err) == 1 && par->tp_rank == 0 &&
        par->pp_rank == 0)
        fprintf(stderr, "llm-train: LLM_TRAIN_GPU=%s but this build has no CUDA backend: "
                        "training on the CPU\n", g);
    return 0;
}
