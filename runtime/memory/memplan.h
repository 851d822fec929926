/* memplan.h: `llm-train memory`, the memory plan of a job before it runs:
 * per pipeline stage, one rank's host memory on CPUs and its device and
 * host memory on GPUs (memest.c), for sizing --mem and the GPU count. */
#ifndef LLMT_MEMPLAN_H
#define LLMT_MEMPLAN_H

/* argv[0] is "memory". 0, or 64 (bad option or layout), 66 (no config). */
int llmt_memplan_main(int argc, char **argv);

#include "cli.h"   /* llmt_cli_int */

#endif
