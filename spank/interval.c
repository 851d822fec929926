/* interval.c: the checkpoint interval (N steps, Ns/Nm/Nh or auto):
 * parsing, the contract's text form and seconds. Pure; shared by the
 * options (opts.c) and the policy's defaults (policy.c). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "interval.h"

#define SET_ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

/* Digits only, 1..1e9 (the caller checked they are digits). */
static int parse_count(const char *s, const char *num, unsigned long long *out, char *err,
		       size_t errlen)
{
	unsigned long long v = 0;
	if (!*num) {
		SET_ERR("--llm-train: ckpt-interval needs a number");
		return -1;
	}
	for (const char *p = num; *p; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (1000000000ULL - d) / 10) {
			SET_ERR("--llm-train: ckpt-interval=%.64s is too large (max 1000000000)", s);
			return -1;
		}
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int llmt_interval_parse(const char *s, struct llmt_interval *iv,
			char *err, size_t errlen)
{
	char num[32];
	size_t n;
	unsigned long long v;
	char unit = 0;

	if (!s || !*s) {
		SET_ERR("--llm-train: ckpt-interval needs a value (N steps, Ns/Nm/Nh or auto)");
		return -1;
	}
	if (!strcmp(s, "auto")) {
		iv->kind = LLMT_IVAL_AUTO;
		iv->count = 0;
		iv->unit = 0;
		return 0;
	}
	n = strlen(s);
	if (n >= sizeof(num)) {
		SET_ERR("--llm-train: ckpt-interval=%.40s... is too long", s);
		return -1;
	}
	memcpy(num, s, n + 1);
	if (n > 1 && strchr("smh", num[n - 1])) {
		unit = num[n - 1];
		num[n - 1] = 0;
	}
	for (const char *p = num; *p; p++)
		if (!isdigit((unsigned char)*p)) {
			SET_ERR("--llm-train: ckpt-interval=%s is not N, Ns, Nm, Nh or auto", s);
			return -1;
		}
	if (parse_count(s, num, &v, err, errlen))
		return -1;
	if (v == 0) {
		SET_ERR("--llm-train: ckpt-interval=%s must be at least 1", s);
		return -1;
	}
	iv->kind = unit ? LLMT_IVAL_SECONDS : LLMT_IVAL_STEPS;
	iv->count = v;
	iv->unit = unit;
	return 0;
}

void llmt_interval_format(const struct llmt_interval *iv, char *buf, size_t len)
{
	switch (iv->kind) {
	case LLMT_IVAL_STEPS:
		snprintf(buf, len, "%llu", (unsigned long long)iv->count);
		break;
	case LLMT_IVAL_SECONDS:
		snprintf(buf, len, "%llu%c", (unsigned long long)iv->count, iv->unit);
		break;
	default:
		snprintf(buf, len, "auto");
	}
}

uint64_t llmt_interval_seconds(const struct llmt_interval *iv)
{
	if (iv->kind != LLMT_IVAL_SECONDS)
		return 0;
	switch (iv->unit) {
	case 'h': return iv->count * 3600;
	case 'm': return iv->count * 60;
	default: return iv->count;
	}
}
