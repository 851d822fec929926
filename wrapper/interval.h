/* interval: the checkpoint interval from checkpoint cost and failure rate
 * (Young 1974, Daly 2006), for LLM_TRAIN_CKPT_INTERVAL=auto. Pure logic. */
#ifndef LLMT_WRAP_INTERVAL_H
#define LLMT_WRAP_INTERVAL_H

/* Daly's higher-order optimum for checkpoint cost delta and mean time
 * between failures M (seconds): sqrt(2 delta M)[1 + sqrt(delta/2M)/3 +
 * delta/18M] - delta when delta < 2M, else M. */
double wr_daly_interval(double delta_s, double mtbf_s);

/* Young's first-order optimum sqrt(2 delta M). */
double wr_young_interval(double delta_s, double mtbf_s);

/* MTBF from what this job saw, pulled toward a prior: one pseudo-failure
 * at prior_mtbf_s, so a short clean run does not claim infinite MTBF. */
double wr_mtbf_estimate(double observed_s, int failures, double prior_mtbf_s);

/* The interval in steps for a step time (at least 1). */
long wr_interval_steps(double interval_s, double step_s);

#endif
