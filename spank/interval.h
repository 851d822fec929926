/* interval.h: the checkpoint interval type (N steps, a time Ns/Nm/Nh,
 * or auto), its parser and text form. Its own header so that the policy
 * (policy.h) and the options (opts.h) both use it without including each
 * other. */
#ifndef LLMT_INTERVAL_H
#define LLMT_INTERVAL_H

#include <stddef.h>
#include <stdint.h>

/* Checkpoint interval: N steps, a time (Ns, Nm, Nh) or auto. */
enum llmt_ival_kind {
	LLMT_IVAL_UNSET = 0,
	LLMT_IVAL_STEPS,
	LLMT_IVAL_SECONDS,
	LLMT_IVAL_AUTO,
};
struct llmt_interval {
	enum llmt_ival_kind kind;
	uint64_t count;  /* steps, or the number in `unit` */
	char unit;       /* 0 for steps/auto, else 's', 'm' or 'h' as written */
};

/* Parse a checkpoint interval text into *iv. 0 or -1 with err. */
int llmt_interval_parse(const char *s, struct llmt_interval *iv,
			char *err, size_t errlen);
/* Format an interval as the contract writes it: "100", "30m", "auto". */
void llmt_interval_format(const struct llmt_interval *iv, char *buf, size_t len);
/* Interval in seconds for time kinds, 0 otherwise. */
uint64_t llmt_interval_seconds(const struct llmt_interval *iv);

#endif
