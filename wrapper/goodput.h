/* goodput: useful training time over allocated time, and where the rest
 * went (startup, checkpoints, each failure class), from the list of step
 * attempts of the whole job. Pure logic; report.c prints it. */
#ifndef LLMT_WRAP_GOODPUT_H
#define LLMT_WRAP_GOODPUT_H

#include "classify.h"

struct wr_attempt {
	double t_launch;       /* srun started */
	double t_first_step;   /* first training step seen (<0: none) */
	double t_end;          /* the step ended */
	long resume_step;      /* the step it resumed from (0: fresh) */
	long last_step;        /* the last step it reached */
	double step_s;         /* its median step time (0: unknown) */
	double ckpt_s;         /* time it spent saving checkpoints */
	enum wr_class cls;     /* how it ended */
	int run;               /* which run of the job (SLURM_RESTART_COUNT) */
};

/* Causes of lost time: the failure classes, then these. */
enum { WR_CAUSE_STARTUP = WR_NCLASSES, WR_CAUSE_CKPT, WR_CAUSE_IDLE, WR_NCAUSES };
const char *wr_cause_name(int cause);

struct wr_goodput {
	double allocated_s;    /* allocated wall time (all runs of the job) */
	double useful_s;       /* time of steps whose work survived */
	double lost_s[WR_NCAUSES];
	long useful_steps;
	int restarts;          /* attempts after the first */
	double ratio;          /* useful_s / allocated_s */
};

/* allocated_s: wall time the job held its nodes; step_s_default for
 * attempts that measured no step time. Time inside allocated_s that no
 * attempt covers (the wrapper's own work, queue gaps inside a run, backoff)
 * is charged to the failure before it, or "idle". */
void wr_goodput(const struct wr_attempt *a, int n, double allocated_s,
                double step_s_default, struct wr_goodput *g);

#endif
