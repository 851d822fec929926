/* nccl_watchdog.c: the NCCL watchdog's decisions (deadline, verdict, backoff,
 * exit code); comm_nccl.c feeds it the clock, cudaStreamQuery and
 * ncclCommGetAsyncError and aborts the communicator on error or timeout. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "host_plan.h"
#include "llmt/exitcodes.h"

void gwatch_arm(gwatch *w, double now, double timeout_s)
{
	w->start = now;
	w->timeout_s = timeout_s;
}

gw_state gwatch_poll(const gwatch *w, double now, int done, gw_async async)
{
	if (async == GW_ASYNC_ERROR)
		return GW_ERROR;
	if (done && async == GW_ASYNC_OK)
		return GW_OK;
	if (w->timeout_s > 0 && now - w->start > w->timeout_s)
		return GW_TIMEOUT;
	return GW_PENDING;
}

unsigned gwatch_backoff_us(int polls)
{
	if (polls < 100)
		return 0;              /* spin: most collectives finish quickly */
	if (polls < 1000)
		return 50;
	return 1000;
}

int gwatch_exit_code(gw_state s)
{
	return s == GW_OK ? 0 : LLMT_EXIT_TRANSIENT;
}

double gwatch_timeout_from(const char *value, double dflt, char *err, size_t errlen)
{
	if (!value || !*value)
		return dflt;
	char *end;
	errno = 0;
	double v = strtod(value, &end);
	if (errno || end == value || *end || !isfinite(v) || v <= 0) {
		snprintf(err, errlen, "LLM_TRAIN_NCCL_TIMEOUT='%s' is not a positive number of seconds",
				 value);
		return -1.0;
	}
	return v;
}
