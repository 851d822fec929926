/* bench_steptime.c: the fixed cost of the per-rank timings per step and
 * per MPI call, measured in the same run: one step's accounting and its
 * timing line (llmt_st_add + llmt_st_format), and the two monotonic clock
 * reads comm_mpi.c adds around every blocking call. step_timings.sh
 * multiplies them by a step's calls for the share of a step. */
#include <stdio.h>
#include <time.h>
#include "train/steptime.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
	llmt_steptimes s = { 0 };
	llmt_st_parts p = { .step = 0.1, .wait = { 0.01, 0.02, 0.03, 0.001 }, .data = 0.001 };
	char b[320];
	struct timespec ts;
	const int n = 100000;
	long sink = 0;
	double t0 = now();
	for (int i = 0; i < n; i++) {
		llmt_st_add(&s, p, i);
		sink += llmt_st_format(b, sizeof b, &s);
	}
	double t1 = now();
	for (int i = 0; i < n; i++)
		sink += clock_gettime(CLOCK_MONOTONIC, &ts) + ts.tv_nsec % 2;
	double t2 = now();
	printf("step_ns=%.0f clock_ns=%.1f per_call_ns=%.1f sink=%ld\n", (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9,
	       2 * (t2 - t1) / n * 1e9, sink & 1);
	return 0;
}
