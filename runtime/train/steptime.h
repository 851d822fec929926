/* steptime.h: one rank's per-step time breakdown (compute, communication
 * wait per group, data loading, checkpoint stall) and its totals since the
 * process started, as the heartbeat's second line carries them to the
 * wrapper (doc/contracts.md). Pure logic. */
#ifndef LLMT_STEPTIME_H
#define LLMT_STEPTIME_H
#include <stddef.h>

/* The communication groups timed apart ("all" is the world, reordered). */
enum { LLMT_ST_TP, LLMT_ST_PP, LLMT_ST_DP, LLMT_ST_ALL, LLMT_ST_NGROUPS };

typedef struct {
	double step;                   /* wall time of the step */
	double compute;                /* step minus every wait below (>= 0) */
	double wait[LLMT_ST_NGROUPS];  /* blocked in communication, by group */
	double data;                   /* loading batches */
	double ckpt;                   /* checkpoint stall */
} llmt_st_parts;

typedef struct {
	long steps;                    /* steps timed by this process */
	long long first_ns;            /* when its first timed step began (unix ns, 0: none) */
	llmt_st_parts last, total;
} llmt_steptimes;

/* Pure: account one step; p->compute is derived (step minus the waits,
 * data and checkpoint, never below 0). start_ns: when the step began. */
void llmt_st_add(llmt_steptimes *s, llmt_st_parts p, long long start_ns);
/* Pure: the heartbeat's timing line (with newline):
 * "timing STEPS FIRST_NS  STEP COMPUTE TP PP DP ALL DATA CKPT (totals)
 *  STEP COMPUTE TP PP DP ALL DATA CKPT (last step)". Returns its length. */
int llmt_st_format(char *buf, size_t len, const llmt_steptimes *s);

#endif
