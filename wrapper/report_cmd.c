/* report_cmd: `llm-train-wrap report RUN_DIR`: rebuilds a finished job's
 * summary, loss PNG, Prometheus textfile and dashboard.html from the run
 * dir's ledger and metrics, as the wrapper wrote them at the job's end. */
#define _GNU_SOURCE
#include "report_cmd.h"
#include "rdfile.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "include/llmt/exitcodes.h"
#include "report.h"

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

/* Who reads and writes a run dir: root reports on another user's as that
 * user (setgid/setuid to the dir's owner, no groups), so nothing planted
 * there (a link at an output's or an input's name, the texts gnuplot and
 * the page get) acts with root's rights. Another user's dir, for anyone
 * else, and a dir every user may write without the sticky bit are
 * refused: 0, or the exit code after one line. */
static int as_owner(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) != 0)
		return 0;   /* said by the caller: 66 */
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		fprintf(stderr, "llm-train-wrap report: '%s' is writable by every user (mode %04o): refused\n", dir,
		        (unsigned)(st.st_mode & 07777));
		return LLMT_EXIT_USAGE;
	}
	if (st.st_uid == geteuid())
		return 0;
	if (geteuid() != 0) {
		fprintf(stderr, "llm-train-wrap report: '%s' belongs to uid %u, not to uid %u: refused (run it as that user or root)\n",
		        dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return LLMT_EXIT_USAGE;
	}
	if (setgroups(0, NULL) != 0 || setgid(st.st_gid) != 0 || setuid(st.st_uid) != 0 || geteuid() != st.st_uid ||
	    getegid() != st.st_gid) {
		fprintf(stderr, "llm-train-wrap report: cannot become uid %u (the owner of '%s'): %s\n",
		        (unsigned)st.st_uid, dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	fprintf(stderr, "llm-train-wrap report: '%s' belongs to uid %u: read and written as uid %u gid %u\n", dir,
	        (unsigned)st.st_uid, (unsigned)st.st_uid, (unsigned)st.st_gid);
	return 0;
}

int wr_report_main(int argc, char **argv)
{
	static struct wr_history h;
	char led[4200], met[4200];
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
	int rc = as_owner(dir);
	if (rc)
		return rc;
	if (stat(dir, &sb) != 0 || access(led, R_OK) != 0) {   /* a missing input: EX_NOINPUT */
		fprintf(stderr, "llm-train-wrap report: '%s' is not a run dir (no readable %s: %s)\n", dir, led,
		        strerror(errno));
		return LLMT_EXIT_NOINPUT;
	}
	if (wr_ledger_load(led, NULL, &h) != 0) {
		fprintf(stderr, "llm-train-wrap report: cannot read %s: %s\n", led, strerror(errno));
		return LLMT_EXIT_IO;
	}
	snprintf(met, sizeof met, "%s/metrics.jsonl", dir);
	if (access(met, R_OK) != 0) {
		/* the runtime writes CKPT_DIR's when it has no run dir */
		const char *ck = getenv("LLM_TRAIN_CKPT_DIR");
		if (ck && *ck)
			snprintf(met, sizeof met, "%s/metrics.jsonl", ck);
	}
	char job[256];
	last_job(led, job, sizeof job);
	struct wr_report_cfg c = { .run_dir = dir, .metrics = met, .gnuplot = LLMT_GNUPLOT, .job = job,
	                           .now = h.last_run_end };
	struct wr_goodput g;
	return wr_report(&h, &c, &g) == 0 ? 0 : LLMT_EXIT_IO;
}
