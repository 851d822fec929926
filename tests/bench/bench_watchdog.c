/* bench_watchdog.c: what the communication watchdog's bracket costs per
 * MPI call, against references timed in the same run: one read of the
 * monotonic clock (what a timestamp-per-call design would pay at least)
 * and the cheapest real MPI call, an 8-byte MPI_Allreduce on a one-rank
 * world, raw and through comm_mpi.c (bracketed). Best of 5 runs each.
 * Prints one line of key=value. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include "comm/comm.h"
#include "resilience/watchdog.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define BEST(var, n, body)                                  \
	do {                                                    \
		var = 1e30;                                         \
		for (int rep = 0; rep < 5; rep++) {                 \
			double t0 = now();                              \
			for (long i = 0; i < (n); i++) {                \
				body;                                       \
			}                                               \
			double t = (now() - t0) / (double)(n) * 1e9;    \
			if (t < var)                                    \
				var = t;                                    \
		}                                                   \
	} while (0)

int main(int argc, char **argv)
{
	const long N = 20000000, M = 2000000;
	double bracket, clock_ns, raw, watched, v = 1, sink = 0;
	struct timespec ts;
	llmt_comm *w = llmt_comm_world(&argc, &argv);

	if (!w)
		return 1;
	BEST(bracket, N, { llmt_wd_enter("MPI_Allreduce", "all", 1, -1, 8); llmt_wd_leave(); });
	BEST(clock_ns, N, { clock_gettime(CLOCK_MONOTONIC, &ts); sink += (double)ts.tv_nsec; });
	BEST(raw, M, { MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); });
	BEST(watched, M, { llmt_comm_allreduce_max_f64(w, &v, 1); });
	printf("bracket_ns=%.2f clock_ns=%.2f bracket_over_clock=%.2f allreduce_raw_ns=%.1f "
		"allreduce_watched_ns=%.1f watched_over_raw=%.3f sink=%g\n",
		bracket, clock_ns, bracket / clock_ns, raw, watched, watched / raw, sink > 0 ? 1.0 : 0.0);
	llmt_comm_finalize(w);
	return 0;
}
