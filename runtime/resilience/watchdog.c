/* watchdog.c: the communication watchdog's decisions: when a call in
 * flight has waited too long, the deadline from the environment, the
 * sampling period and the line that says what timed out. No clock, no
 * threads: watchdog_run.c feeds it samples. */
#include "watchdog.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llmt/exitcodes.h"

double llmt_wd_observe(llmt_wd_obs *o, uint64_t seq, double now, double limit_s)
{
	if (!(seq & 1) || !(limit_s > 0)) {
		o->seq = 0;         /* nothing timed: the next call starts afresh */
		return 0;
	}
	if (seq != o->seq) {
		o->seq = seq;       /* a call not seen before: timed from now */
		o->since = now;
		return 0;
	}
	double waited = now - o->since;
	return waited > limit_s ? waited : 0;
}

double llmt_wd_timeout_from(const char *value, double dflt, char *err, size_t errlen)
{
	char *end;
	double v;

	if (!value || !*value)
		return dflt;
	errno = 0;
	v = strtod(value, &end);
	if (errno || end == value || *end || !isfinite(v) || v < 0 || v > 1e9) {
		snprintf(err, errlen, "LLM_TRAIN_COMM_TIMEOUT='%s' is not a number of seconds >= 0 (0: off)", value);
		return -1;
	}
	return v;
}

double llmt_wd_period(double timeout_s)
{
	double p = timeout_s / 10;

	return p < 0.05 ? 0.05 : p > 1 ? 1 : p;
}

int llmt_wd_describe(char *buf, size_t len, int rank, const llmt_wd_call *c, double waited_s,
	double limit_s, double comm_s)
{
	const char *op = c->op ? c->op : "MPI call", *g = c->group ? c->group : "?";
	char what[160], limit[128];

	if (c->peer >= 0)
		snprintf(what, sizeof(what), "%s of %zu bytes %s rank %d of group %s (%d ranks)", op, c->bytes,
			strstr(op, "Recv") ? "from" : "to", c->peer, g, c->size);
	else
		snprintf(what, sizeof(what), "%s in group %s (%d ranks)", op, g, c->size);
	if (limit_s > comm_s)
		snprintf(limit, sizeof(limit), "the checkpoint deadline of %g s (LLM_TRAIN_COMM_TIMEOUT=%g s + "
			"LLM_TRAIN_CKPT_TIMEOUT)", limit_s, comm_s);
	else
		snprintf(limit, sizeof(limit), "LLM_TRAIN_COMM_TIMEOUT=%g s", limit_s);
	return snprintf(buf, len,
		"llm-train: rank %d: communication watchdog: %s waited %.1f s, more than %s: "
		"a peer is lost or stuck; exiting %d (transient)\n",
		rank, what, waited_s, limit, LLMT_EXIT_TRANSIENT);
}
