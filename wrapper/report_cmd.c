/* report_cmd: `llm-train-wrap report RUN_DIR`: rebuilds a finished job's
 * summary, loss PNG, Prometheus textfile and dashboard.html from the run
 * dir's ledger and metrics, as the wrapper wrote them at the job's end. */
#define _GNU_SOURCE
#include "report_cmd.h"
#include "rdfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "include/llmt/exitcodes.h"
#include "report.h"
#include "runowner.h"

/* The job id of the ledger's newest start event ("" when none). */
static void last_job(const char *path, char *job, size_t len)
{
	char line[1 << 16];
	FILE *f = wr_fopen_read(path);
	job[0] = '\0';
	while (f && fgets(line, sizeof line, f)) {
		json_t *o = json_loads(line, 0, NULL);
		const char *j = json_string_value(json_object_get(o, "job"));
		if (j && !strcmp(json_string_value(json_object_get(o, "event")) ? json_string_value(json_object_get(o, "event")) : "", "start"))
			snprintf(job, len, "%s", j);
		json_decref(o);
	}
	if (f)
		fclose(f);
}

int wr_report_main(int argc, char **argv)
{
	static struct wr_history h;
	char led[4200], met[4200], smet[4200];
	struct stat sb;
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: llm-train-wrap report RUN_DIR\n");
		return LLMT_EXIT_USAGE;
	}
	const char *dir = argv[1];
	snprintf(led, sizeof led, "%s/ledger.jsonl", dir);
	if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "llm-train-wrap report: '%s' is not a directory\n", dir);
		return LLMT_EXIT_USAGE;
	}
	/* judged and then read and written through one open of it (the cwd):
	 * a link on the way swapped after the judgement changes nothing */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = wr_as_owner("llm-train-wrap report", dir, dfd);
	if (rc || (dfd >= 0 && fchdir(dfd) != 0)) {
		if (!rc)
			fprintf(stderr, "llm-train-wrap report: cannot enter '%s': %s\n", dir, strerror(errno));
		return rc ? rc : LLMT_EXIT_IO;
	}
	if (dfd < 0 || access("ledger.jsonl", R_OK) != 0) {   /* a missing input: EX_NOINPUT */
		fprintf(stderr, "llm-train-wrap report: '%s' is not a run dir (no readable %s: %s)\n", dir, led,
		        strerror(errno));
		return LLMT_EXIT_NOINPUT;
	}
	if (wr_ledger_load("ledger.jsonl", NULL, &h) != 0) {
		fprintf(stderr, "llm-train-wrap report: cannot read %s: %s\n", led, strerror(errno));
		return LLMT_EXIT_IO;
	}
	snprintf(met, sizeof met, "./metrics.jsonl");
	snprintf(smet, sizeof smet, "%s/metrics.jsonl", dir);
	if (access(met, R_OK) != 0) {
		/* the runtime writes CKPT_DIR's when it has no run dir */
		const char *ck = getenv("LLM_TRAIN_CKPT_DIR");
		if (ck && *ck)
			snprintf(met, sizeof met, "%s/metrics.jsonl", ck), snprintf(smet, sizeof smet, "%s", met);
	}
	char job[256];
	last_job("ledger.jsonl", job, sizeof job);
	struct wr_report_cfg c = { .run_dir = ".", .metrics = met, .gnuplot = LLMT_GNUPLOT, .job = job,
	                           .now = h.last_run_end, .shown_dir = dir, .shown_metrics = smet };
	struct wr_goodput g;
	return wr_report(&h, &c, &g) == 0 ? 0 : LLMT_EXIT_IO;
}
