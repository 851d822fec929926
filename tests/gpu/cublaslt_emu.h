/* cublaslt_emu.h: the knobs and counters of the emulated cuBLASLt
 * (cublaslt_emu.c) that tests set and read. Algorithm i of the emulated
 * heuristic is bit i of the masks and entry i of the costs. */
#ifndef LLMT_CUBLASLT_EMU_H
#define LLMT_CUBLASLT_EMU_H
#define LLMT_EMU_LT_MAX 8
extern int llmt_emu_lt_algos;          /* results the heuristic has (default 1; 0: none) */
extern unsigned llmt_emu_lt_fail_mask;  /* algorithms whose cublasLtMatmul fails */
extern unsigned llmt_emu_lt_max_align;  /* no result for a larger alignment hint (256) */
extern double llmt_emu_lt_cost_ms[LLMT_EMU_LT_MAX]; /* emulated clock per call (1 ms) */
extern long llmt_emu_lt_heuristics, llmt_emu_lt_matmuls;   /* calls (successful products) */
extern int llmt_emu_lt_last_algo;       /* the algorithm of the last product */
extern unsigned llmt_emu_lt_last_align; /* the hint it was found for */
#endif
