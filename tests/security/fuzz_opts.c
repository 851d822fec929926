/* fuzz_opts.c: fuzz target for the option strings a user types:
 * --llm-train=SPEC (llmt_opts_parse_spec) and the separate --llm-* options
 * (llmt_opts_set). Input: SPEC, then optionally a "%%" line and
 * "key=value" lines. Checks, beyond no crash: an accepted set of options
 * formats to a SPEC that parses back to the same text (the plugin passes
 * options on in that form, so a value must not smuggle in another item). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "opts.h"

static char *dupn(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *a, *b;
	size_t alen, blen;
	struct llmt_opts o, o2;
	char err[512], fmt[8192], fmt2[8192];
	char *spec, *rest;
	int ok = 1;

	if (size > 3 * LLMT_SPEC_MAX)
		return 0;
	fuzz_split(data, size, &a, &alen, &b, &blen);
	if (b && alen > 0 && a[alen - 1] == '\n')
		alen--;   /* the newline before the "%%" line is not part of SPEC */
	spec = dupn(a, alen);
	llmt_opts_init(&o);
	if (llmt_opts_parse_spec(&o, spec, err, sizeof err) != 0) {
		if (!memchr(err, 0, sizeof err))
			abort();
		ok = 0;
	}
	rest = b ? dupn(b, blen) : NULL;
	for (char *line = rest, *next; ok && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *eq = strchr(line, '=');
		if (eq)
			*eq = 0;
		if (llmt_opts_set(&o, line, eq ? eq + 1 : NULL, err, sizeof err) != 0)
			ok = 0;
	}
	if (ok) {
		struct llmt_job_info job = { .ntasks = 1u + (size & 63), .nnodes = 1 + (size & 3) };
		struct llmt_opts v = o;

		/* A ckpt-dir given as its own option may hold a comma (allowed on
		 * purpose: tests/spank/test_opts.c); its SPEC form cannot, so the
		 * round trip is checked for the other option sets only. */
		if (!strchr(o.ckpt_dir, ',') && llmt_opts_format(&o, fmt, sizeof fmt) == 0) {
			llmt_opts_init(&o2);
			if (llmt_opts_parse_spec(&o2, fmt, err, sizeof err) != 0) {
				fprintf(stderr, "fuzz_opts: formatted options do not parse: \"%s\": %s\n", fmt, err);
				abort();
			}
			if (llmt_opts_format(&o2, fmt2, sizeof fmt2) != 0 || strcmp(fmt, fmt2) ||
			    strcmp(o.ckpt_dir, o2.ckpt_dir) || o.set != o2.set || o.tp != o2.tp ||
			    o.pp != o2.pp || o.dp != o2.dp || o.restarts != o2.restarts) {
				fprintf(stderr, "fuzz_opts: round trip changed \"%s\" into \"%s\"\n", fmt, fmt2);
				abort();
			}
		}
		llmt_opts_apply_defaults(&v, NULL);
		llmt_opts_validate(&v, NULL, &job, err, sizeof err);
		llmt_interval_seconds(&v.ckpt_interval);
	}
	free(rest);
	free(spec);
	return 0;
}
