/* schedule.h: learning rate per step: linear warmup from lr/warmup to lr
 * over `warmup` steps, then cosine decay to min_lr at step `total`; min_lr
 * after that. Pure. */
#ifndef LLMT_SCHEDULE_H
#define LLMT_SCHEDULE_H

typedef struct {
	double lr, min_lr;
	long warmup, total;
} llmt_schedule;

/* LR for optimizer step `step` (0-based). */
double llmt_schedule_lr(const llmt_schedule *s, long step);

#endif
