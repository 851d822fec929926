/* goodput_sim: Monte Carlo goodput of a long training job under random
 * failures, with the wrapper's own Young/Daly interval (wrapper/interval.c)
 * against fixed checkpoint intervals. Defaults: Llama 3 405B's published
 * failure record (16,384 H100, 54 days, 419 unexpected interruptions).
 *
 * usage: goodput_sim [--ckpt S] [--restart S] [--requeue S] [--requeue-frac F]
 *                    [--mtbf S] [--prior S] [--days D] [--runs N] [--seed N]
 * Prints one line per policy: interval and mean goodput over the runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrapper/interval.h"

struct model {
	double ckpt_s;        /* checkpoint cost (training paused) */
	double restart_s;     /* in-place restart: fault to first resumed step */
	double requeue_s;     /* restart through a requeue */
	double requeue_frac;  /* share of failures that need a requeue */
	double mtbf_s;        /* true mean time between failures of the job */
	double prior_s;       /* the wrapper's prior MTBF (before it has seen failures) */
	double horizon_s;     /* wall time simulated */
};

static double expo(unsigned short st[3], double mean)
{
	return -mean * log(1.0 - erand48(st));
}

/* One job: interval_s > 0 fixed, 0 = auto (the wrapper's estimator).
 * Returns useful time / wall time. */
static double run(const struct model *m, double interval_s, unsigned short st[3], double *used_interval)
{
	double t = 0, useful = 0, next_fail = expo(st, m->mtbf_s), seen = 0;
	int failures = 0;
	double sum_iv = 0;
	long n_iv = 0;
	while (t < m->horizon_s) {
		double iv = interval_s;
		if (iv <= 0) {
			double mt = wr_mtbf_estimate(seen, failures, m->prior_s);
			iv = wr_daly_interval(m->ckpt_s, mt);
		}
		if (iv < 1)
			iv = 1;   /* a checkpoint per second at most (cost 0 gives 0) */
		sum_iv += iv;
		n_iv++;
		/* work iv, then checkpoint; a failure in either loses the segment.
		 * The interval only changes at a failure: take every whole segment
		 * before the next failure (or the horizon) at once. */
		double seg = iv + m->ckpt_s;
		double until = fmin(next_fail, m->horizon_s);
		if (t + seg <= until) {
			double k = floor((until - t) / seg);
			t += k * seg;
			seen += k * seg;
			useful += k * iv;
			continue;
		}
		if (next_fail >= m->horizon_s) {   /* the job ends mid-segment */
			useful += fmin(iv, m->horizon_s - t);
			break;
		}
		/* failure: segment lost, then restart (may itself be hit) */
		seen += next_fail - t;
		t = next_fail;
		failures++;
		for (;;) {
			double r = erand48(st) < m->requeue_frac ? m->requeue_s : m->restart_s;
			next_fail = t + expo(st, m->mtbf_s);
			if (t + r <= next_fail) {
				t += r;
				seen += r;
				break;
			}
			seen += next_fail - t;
			t = next_fail;
			failures++;
		}
	}
	*used_interval = n_iv ? sum_iv / n_iv : 0;
	return useful / m->horizon_s;
}

static double arg(int argc, char **argv, const char *name, double dflt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0) {
			char *end;
			double v = strtod(argv[i + 1], &end);
			if (*end || !(v >= 0)) {
				fprintf(stderr, "goodput_sim: bad %s value '%s'\n", name, argv[i + 1]);
				exit(64);
			}
			return v;
		}
	return dflt;
}

int main(int argc, char **argv)
{
	double days = arg(argc, argv, "--days", 54);
	struct model m = {
		.ckpt_s = arg(argc, argv, "--ckpt", 60),
		.restart_s = arg(argc, argv, "--restart", 600),
		.requeue_s = arg(argc, argv, "--requeue", 1800),
		.requeue_frac = arg(argc, argv, "--requeue-frac", 0.2),
		.mtbf_s = arg(argc, argv, "--mtbf", 54.0 * 86400 / 419),
		.prior_s = arg(argc, argv, "--prior", 24 * 3600.0),
		.horizon_s = days * 86400,
	};
	int runs = (int)arg(argc, argv, "--runs", 200);
	unsigned seed = (unsigned)arg(argc, argv, "--seed", 1);
	printf("model: MTBF %.0f s (%.2f h), checkpoint %.3g s, restart %.3g s, requeue %.3g s (%.0f%% of failures), "
	       "%.0f days, %d runs, prior MTBF %.1f h\n", m.mtbf_s, m.mtbf_s / 3600, m.ckpt_s, m.restart_s, m.requeue_s,
	       100 * m.requeue_frac, days, runs, m.prior_s / 3600);
	printf("Young/Daly optimum for the true MTBF: %.0f s\n", wr_daly_interval(m.ckpt_s, m.mtbf_s));
	double fixed[] = { 0, 300, 600, 1800, 3600, 3 * 3600.0, 6 * 3600.0 };
	for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
		unsigned short st[3] = { (unsigned short)seed, (unsigned short)(seed >> 16), 0x330e };
		double sum = 0, sum2 = 0, ivs = 0;
		for (int r = 0; r < runs; r++) {
			double iv;
			double g = run(&m, fixed[k], st, &iv);
			sum += g;
			sum2 += g * g;
			ivs += iv;
		}
		double mean = sum / runs, sd = sqrt(fmax(0, sum2 / runs - mean * mean));
		if (fixed[k] == 0)
			printf("auto (Young/Daly, wrapper estimator)  mean interval %7.0f s  goodput %6.2f%% (sd %.2f)\n",
			       ivs / runs, 100 * mean, 100 * sd);
		else
			printf("fixed                                 interval %12.0f s  goodput %6.2f%% (sd %.2f)\n",
			       fixed[k], 100 * mean, 100 * sd);
	}
	return 0;
}
