/* llm-train-wrap: the supervisor in the batch step. Setup (signals,
 * ledger history, job geometry), then the recovery loop of job.h: pick
 * the resume point, build the attempt's environment, run the attempt,
 * gather down nodes, classify, apply the action; the report at the end. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "include/llmt/exitcodes.h"
#include "include/llmt/owndir.h"
#include "job_io.h"
#include "ledger.h"
#include "options.h"
#include "preflight.h"
#include "report_cmd.h"
#include "slurm.h"
#include "unmark_cmd.h"
#include "include/llmt/env.h"

#define PROG "llm-train-wrap"

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int e = errno;
	unsigned char b = (unsigned char)sig;
	if (write(sig_pipe[1], &b, 1) < 0) { /* full pipe: a signal is pending anyway */ }
	errno = e;
}

int main(int argc, char **argv)
{
	struct opts o;
	if (argc > 1 && strcmp(argv[1], "report") == 0) /* rebuild a finished job's reports */
		return wr_report_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "ckpt-unmark") == 0) /* lift ckpt_bad marks */
		return wr_unmark_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "job-state") == 0) /* a job's base state (libslurm) */
		return wr_job_state_main(argc - 1, argv + 1);
	wr_parse_options(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);

	char run_dir[4096], hb_dir[4096];
	snprintf(run_dir, sizeof run_dir, "%s", o.run_dir ? o.run_dir : (getenv(LLMT_ENV_RUN_DIR) && *getenv(LLMT_ENV_RUN_DIR) ? getenv(LLMT_ENV_RUN_DIR) : o.ckpt_dir));
	if (o.hb_dir)
		snprintf(hb_dir, sizeof hb_dir, "%s", o.hb_dir);
	else if (getenv(LLMT_ENV_HEARTBEAT_DIR) && *getenv(LLMT_ENV_HEARTBEAT_DIR))
		snprintf(hb_dir, sizeof hb_dir, "%s", getenv(LLMT_ENV_HEARTBEAT_DIR));
	else
		snprintf(hb_dir, sizeof hb_dir, "%s/heartbeat", o.ckpt_dir);
	wr_setenv(LLMT_ENV_CKPT_DIR, o.ckpt_dir);
	wr_setenv(LLMT_ENV_RUN_DIR, run_dir);
	wr_setenv(LLMT_ENV_HEARTBEAT_DIR, hb_dir);

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		perror(PROG ": pipe");
		return LLMT_EXIT_SOFTWARE;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);   /* wakes the watch loop when srun ends */
	signal(SIGPIPE, SIG_IGN);

	/* another user's directory is refused before anything in it is read
	 * (their ledger, checkpoints and heartbeats: include/llmt/owndir.h) */
	char derr[8400];
	if (llmt_dir_owned("run dir", run_dir, derr, sizeof derr) ||
	    llmt_dir_owned("checkpoint dir", o.ckpt_dir, derr, sizeof derr) ||
	    llmt_dir_owned("heartbeat dir", hb_dir, derr, sizeof derr)) {
		fprintf(stderr, PROG ": %s\n", derr);
		return LLMT_EXIT_USAGE;
	}
	struct wr_ledger led;
	wr_ledger_verbose(o.verbose > 0);
	int lr = wr_ledger_open(&led, run_dir);
	if (lr != 0)
		return lr == -2 ? LLMT_EXIT_USAGE : LLMT_EXIT_IO;
	mkdir(o.ckpt_dir, 0700);
	if (llmt_dir_owned("checkpoint dir", o.ckpt_dir, derr, sizeof derr)) {
		fprintf(stderr, PROG ": %s\n", derr);   /* made by another user since the check */
		return LLMT_EXIT_USAGE;
	}
	const char *job = getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "";
	static struct wr_history h;
	if (wr_ledger_load(led.path, job, &h) != 0) {
		fprintf(stderr, PROG ": cannot read %s: %s\n", led.path, strerror(errno));
		return LLMT_EXIT_IO;
	}
	struct wr_site site;
	wr_site_read(&o, &site);
	static struct wr_job j;
	j = wr_job_start(&o, &site, &h, &led, run_dir, hb_dir, sig_pipe[0], wr_now());
	wr_job_begin(&j);
	j.live = wr_live_from_opts(&o, run_dir, site.job, site.run, j.run_start, &h);

	int rc, code = 0;
	enum wr_next next = wr_job_preflight(&j, "start");
	while (next == WR_NEXT_RESTART) {
		if ((rc = wr_job_pick_io(&j)) != 0)
			return rc;
		wr_job_env_io(&j);
		struct wr_watch_out wo;
		if ((rc = wr_job_run(&j, &wo)) != 0)
			return rc;
		code = wo.e.exited ? wo.e.exit_code : 128 + wo.e.term_signal;
		wr_job_gather(&j, code, &wo);
		struct wr_verdict v;
		long sdc_step = wr_job_judge(&j, code, &wo, &v);
		next = wr_job_act(&j, code, &wo, &v, sdc_step);
		if (next == WR_NEXT_RESTART && v.cls == WR_NODE_FAULT)
			next = wr_job_preflight(&j, "node_fault");
	}
	if (next == WR_NEXT_REQUEUE && wr_job_requeue(&j, code) == 0)
		return 0;
	rc = wr_job_finish(&j);
	wr_site_free(&site);
	return rc;
}
