/* cli.c: the command line's number parsers, shared by llm-train's
 * subcommands: one message naming the option and the bad value, exit 64. */
#include "cli.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "llmt/exitcodes.h"

int llmt_cli_bad(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "llm-train: %s %s: %s (llm-train --help)\n", opt, val, want);
	return LLMT_EXIT_USAGE;
}

int llmt_cli_num(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !(*out >= lo && *out <= hi)) {
		char want[96];
		snprintf(want, sizeof(want), "want a number in [%g, %g]", lo, hi);
		return llmt_cli_bad(opt, s, want);
	}
	return 0;
}

int llmt_cli_int(const char *opt, const char *s, long lo, long hi, long *out)
{
	char *end, want[96];
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		snprintf(want, sizeof(want), "want an integer in [%ld, %ld]", lo, hi);
		return llmt_cli_bad(opt, s, want);
	}
	*out = (long)v;
	return 0;
}
