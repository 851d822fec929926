/* metrics.c: the metrics JSON lines. Written by hand (a fixed flat object
 * of numbers) rather than through jansson, whose reals refuse NaN. */
#include "metrics.h"
#include <errno.h>
#include <math.h>
#include <string.h>

static int num(char *buf, size_t len, const char *key, double v, int last)
{
	if (isfinite(v))
		return snprintf(buf, len, "\"%s\":%.9g%s", key, v, last ? "" : ",");
	return snprintf(buf, len, "\"%s\":null%s", key, last ? "" : ",");
}

int llmt_metrics_format(char *buf, size_t len, const llmt_metrics *m)
{
	size_t at = 0;
	const struct { const char *k; double v; } f[] = {
		{ "loss", m->loss }, { "grad_norm", m->grad_norm }, { "lr", m->lr },
		{ "tokens_per_s", m->tokens_per_s }, { "mfu", m->mfu },
		{ "step_time_s", m->step_time_s }, { "comm_time_s", m->comm_time_s },
		{ "ckpt_time_s", m->ckpt_time_s },
	};

	at += (size_t)snprintf(buf, len, "{\"step\":%ld,", m->step);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]) && at < len; i++)
		at += (size_t)num(buf + at, len - at, f[i].k, f[i].v, 0);
	if (at < len)
		at += (size_t)snprintf(buf + at, len - at, "\"skipped\":%s}\n", m->skipped ? "true" : "false");
	return at < len ? (int)at : -1;
}

FILE *llmt_metrics_open(const char *path)
{
	FILE *f = fopen(path, "a");

	if (!f)
		fprintf(stderr, "llm-train: metrics file %s: %s\n", path, strerror(errno));
	return f;
}

int llmt_metrics_write(FILE *f, const llmt_metrics *m)
{
	char line[1024];
	int n = llmt_metrics_format(line, sizeof(line), m);

	if (n < 0 || fwrite(line, 1, (size_t)n, f) != (size_t)n || fflush(f)) {
		fprintf(stderr, "llm-train: cannot write metrics: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}
