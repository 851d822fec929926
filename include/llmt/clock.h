/* clock.h: the two clocks the parts time things with, in seconds as a
 * double: monotonic for durations, wall (Unix time) for records that
 * outlive the process (the ledger, heartbeats). */
#ifndef LLMT_CLOCK_H
#define LLMT_CLOCK_H
#include <time.h>

static inline double llmt_mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double llmt_wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
