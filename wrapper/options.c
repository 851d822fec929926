/* options: parsing llm-train-wrap's options (getopt_long, stops at the
 * command) and their defaults from the environment the plugin sets. */
#define _GNU_SOURCE
#include "config.h"
#include "options.h"
#include "job.h"
#include "live.h"
#include "slurm.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "include/llmt/exitcodes.h"
#include "include/llmt/env.h"

#define PROG "llm-train-wrap"

void wr_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see " PROG " --help)\n");
	va_end(ap);
	exit(LLMT_EXIT_USAGE);
}

static void help(void)
{
	printf("usage: " PROG " [options] -- COMMAND [ARGS...]\n"
	       "Runs COMMAND as a Slurm step (srun), restarts it, rolls it back or requeues the job\n"
	       "when it fails, and reports goodput at the end. srun options go through srun's input\n"
	       "environment (e.g. SLURM_MPI_TYPE=pmix). Use `exec " PROG "` in the batch script so\n"
	       "--signal=B:USR1@T reaches it.\n"
	       "  --ckpt-dir DIR          checkpoints (default $LLM_TRAIN_CKPT_DIR, else salloc's\n"
	       "                          --llm-ckpt-dir, else the command's --ckpt-dir; the command's\n"
	       "                          may not name another one)\n"
	       "  --run-dir DIR           ledger, metrics, reports (default the checkpoint dir)\n"
	       "  --heartbeat-dir DIR     per-rank heartbeats (default CKPT_DIR/heartbeat)\n"
	       "  --max-restarts N        restarts per job (default $LLM_TRAIN_RESTARTS or 3); with\n"
	       "                          $LLM_TRAIN_RESTART_WINDOW set, N per window of that many seconds\n"
	       "  --restart-window S      the window (seconds)\n"
	       "  --hang-timeout-min S    hang timeout floor (default 60)\n"
	       "  --hang-timeout-max S    hang timeout cap (default $LLM_TRAIN_HEARTBEAT_TIMEOUT or 1800)\n"
	       "  --hang-startup S        timeout before the first step (default\n"
	       "                          $LLM_TRAIN_HEARTBEAT_STARTUP, else the cap)\n"
	       "  --hang-factor K         hang timeout = K x median step time (default 10)\n"
	       "  --backoff S             first backoff after an attempt without progress (default 5)\n"
	       "  --rollback-steps N      numerical fault: roll back N steps per repeat (default 100)\n"
	       "  --skip-batches N        numerical fault: skip N batches past the bad step (default 200)\n"
	       "  --spares N              keep N nodes of the allocation as spares\n"
	       "  --shrink / --no-shrink  allow a smaller data-parallel layout after a node loss\n"
	       "  --preflight / --no-preflight  run `llm-train selftest` one task per node before the\n"
	       "                          first attempt and after every node fault, and keep its bad\n"
	       "                          nodes out (default: on with --spares or $LLM_TRAIN_PREFLIGHT=1)\n"
	       "  --preflight-timeout S   the self-test's time limit (default 300)\n"
	       "  --selftest-cmd PATH     the program run as PATH selftest --json FILE (default the\n"
	       "                          checkpoint tool, llm-train)\n"
	       "  --save-factor F         a rank in phase save for F x the longest save seen (the run\n"
	       "                          dir's ledger, this job's attempts) is hung (default\n"
	       "                          $LLM_TRAIN_SAVE_FACTOR or 5; 0: off; no save seen yet: 10 x\n"
	       "                          --hang-timeout-max)...\n"
	       "  --save-timeout-min S    ... or S seconds if longer (default $LLM_TRAIN_SAVE_TIMEOUT_MIN\n"
	       "                          or 600)\n"
	       "  --slurm-timeout S       a slurmctld query (scontrol, squeue, sinfo, job state) that has\n"
	       "                          not answered in S is killed (default $LLM_TRAIN_SLURM_TIMEOUT or 60)\n"
	       "  --preempt-grace S       after SIGUSR1/SIGTERM, wait S for the checkpoint (default 60)\n"
	       "  --mtbf S                prior mean time between failures of the job (auto interval)\n"
	       "  --no-requeue            never requeue (stop instead)\n"
	       "  --progress-from-output  no heartbeats: a hang is no new output line for the timeout\n"
	       "  --srun PATH             srun to use (default %s)\n"
	       "  --no-srun               run COMMAND directly (outside Slurm)\n"
	       "  --ckpt-tool PATH|none   checkpoint lister (default llm-train; none: the trainer resumes itself)\n"
	       "  --straggler-factor F    report a rank whose step takes F x the median (default 1.5)...\n"
	       "  --straggler-min S       ... and S seconds more (default 1)\n"
	       "  --straggler-steps K     a rank whose compute per step stays above F x the median for\n"
	       "                          K steps (default 5; 0: off) is replaced by a spare when its\n"
	       "                          slowdown over the steps left costs more than a restart\n"
	       "  --tick S                watch period (default 1)\n"
	       "  --metrics-every S       live Prometheus textfile and dashboard.html every S (default 5;\n"
	       "                          0: only at the end)\n"
	       "  --metrics-textfile PATH the textfile (default RUN_DIR/llm_train.prom), e.g. in\n"
	       "                          node_exporter's --collector.textfile.directory\n"
	       "  --metrics-http [H:]PORT also serve the metrics on http://H:PORT/metrics (H default\n"
	       "                          127.0.0.1; PORT 0: a free one, written to RUN_DIR/metrics_http.port)\n"
	       "  --node-wait S           a step that cannot be ended: wait S for Slurm to mark the dead\n"
	       "                          node (default SlurmdTimeout + 10)\n"
	       "  -v, --verbose           print every ledger event on stderr too\n"
	       "       " PROG " report RUN_DIR: rebuild a finished job's reports\n"
	       "       " PROG " ckpt-unmark RUN_DIR PATH...|--all: lift ckpt_bad marks (try them again)\n",
	       LLMT_SRUN);
}

static double num_arg(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || !(d >= lo && d <= hi) || !isfinite(d))
		wr_usage_error("bad %s value '%s' (expected a number in %g..%g)", opt, v, lo, hi);
	return d;
}

double wr_env_num(const char *name, double dflt, double lo, double hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char opt[80];
	snprintf(opt, sizeof opt, "$%s", name);
	return num_arg(opt, v, lo, hi);
}

/* The long options: their codes after the characters'. */
enum { O_CKPT = 256, O_RUN, O_HB, O_MAXR, O_WIN, O_HMIN, O_HMAX, O_HK, O_BACK, O_ROLL, O_SKIP,
       O_SPARES, O_SHRINK, O_NOSHRINK, O_GRACE, O_MTBF, O_NOREQ, O_PROG, O_SRUN, O_NOSRUN, O_TOOL,
       O_TICK, O_NODEWAIT, O_HSTART, O_SFACT, O_SMIN, O_HELP, O_MEVERY, O_MFILE, O_MHTTP,
       O_PRE, O_NOPRE, O_PRETIME, O_STCMD, O_SSTEPS, O_SAVEF, O_SAVEMIN, O_SLURMT };

static const struct option long_opts[] = {
	{ "ckpt-dir", required_argument, 0, O_CKPT }, { "run-dir", required_argument, 0, O_RUN },
	{ "heartbeat-dir", required_argument, 0, O_HB }, { "max-restarts", required_argument, 0, O_MAXR },
	{ "restart-window", required_argument, 0, O_WIN }, { "hang-timeout-min", required_argument, 0, O_HMIN },
	{ "hang-timeout-max", required_argument, 0, O_HMAX }, { "hang-factor", required_argument, 0, O_HK },
	{ "backoff", required_argument, 0, O_BACK }, { "rollback-steps", required_argument, 0, O_ROLL },
	{ "skip-batches", required_argument, 0, O_SKIP }, { "spares", required_argument, 0, O_SPARES },
	{ "shrink", no_argument, 0, O_SHRINK }, { "no-shrink", no_argument, 0, O_NOSHRINK },
	{ "preempt-grace", required_argument, 0, O_GRACE }, { "mtbf", required_argument, 0, O_MTBF },
	{ "no-requeue", no_argument, 0, O_NOREQ }, { "progress-from-output", no_argument, 0, O_PROG },
	{ "srun", required_argument, 0, O_SRUN }, { "no-srun", no_argument, 0, O_NOSRUN },
	{ "ckpt-tool", required_argument, 0, O_TOOL }, { "tick", required_argument, 0, O_TICK },
	{ "node-wait", required_argument, 0, O_NODEWAIT },
	{ "metrics-every", required_argument, 0, O_MEVERY }, { "metrics-textfile", required_argument, 0, O_MFILE },
	{ "metrics-http", required_argument, 0, O_MHTTP },
	{ "straggler-factor", required_argument, 0, O_SFACT }, { "straggler-min", required_argument, 0, O_SMIN },
	{ "straggler-steps", required_argument, 0, O_SSTEPS }, { "hang-startup", required_argument, 0, O_HSTART },
	{ "preflight", no_argument, 0, O_PRE }, { "no-preflight", no_argument, 0, O_NOPRE },
	{ "preflight-timeout", required_argument, 0, O_PRETIME }, { "selftest-cmd", required_argument, 0, O_STCMD },
	{ "save-factor", required_argument, 0, O_SAVEF }, { "save-timeout-min", required_argument, 0, O_SAVEMIN },
	{ "slurm-timeout", required_argument, 0, O_SLURMT },
	{ "verbose", no_argument, 0, 'v' }, { "help", no_argument, 0, O_HELP }, { 0, 0, 0, 0 },
};

/* Defaults, the admin policy's through the plugin's environment first. */
static void set_defaults(struct opts *o)
{
	memset(o, 0, sizeof *o);
	o->max_restarts = wr_env_num(LLMT_ENV_RESTARTS, 3, 0, 1e6);
	o->window_s = wr_env_num(LLMT_ENV_RESTART_WINDOW, 0, 0, 1e9);
	o->hang_min = 60;
	/* the admin policy's heartbeat limits, as the plugin passes them */
	o->hang_max = wr_env_num(LLMT_ENV_HEARTBEAT_TIMEOUT, 1800, 0.1, 1e7);
	o->hang_startup = wr_env_num(LLMT_ENV_HEARTBEAT_STARTUP, 0, 0, 1e7);
	o->hang_k = 10;
	o->backoff = 5;
	o->rollback = 100;
	o->skip = 200;
	o->grace = 60;
	o->tick = 1;
	o->metrics_every = 5;
	o->shrink = -1;
	o->preflight = -1;
	o->preflight_policy = wr_env_num(LLMT_ENV_PREFLIGHT, 0, 0, 1) == 1;
	o->preflight_timeout = 300;
	o->save_factor = wr_env_num(LLMT_ENV_SAVE_FACTOR, 5, 0, 1e4);
	o->save_min = wr_env_num(LLMT_ENV_SAVE_TIMEOUT_MIN, 600, 0.1, 1e7);   /* a storage stall (an OST failover) outlasts 2 min */
	o->slurm_timeout = wr_env_num(LLMT_ENV_SLURM_TIMEOUT, WR_SLURM_TIMEOUT_S, 0.1, 3600);
	o->node_wait = -1;
	o->strag_factor = 1.5;
	o->strag_steps = 5;
	o->strag_min = 1;
	o->requeue = true;
	o->srun = LLMT_SRUN;
	o->ckpt_tool = "llm-train";
}

/* One option (getopt_long's code c, its argument in optarg). */
static void take(struct opts *o, int c, const char *opt, bool *hang_min_given)
{
	switch (c) {
	case O_CKPT: o->ckpt_dir = optarg; break;
	case O_RUN: o->run_dir = optarg; break;
	case O_HB: o->hb_dir = optarg; break;
	case O_MAXR: o->max_restarts = num_arg("--max-restarts", optarg, 0, 1e6); break;
	case O_WIN: o->window_s = num_arg("--restart-window", optarg, 0, 1e9); break;
	case O_HMIN: o->hang_min = num_arg("--hang-timeout-min", optarg, 0.1, 1e6); *hang_min_given = true; break;
	case O_HMAX: o->hang_max = num_arg("--hang-timeout-max", optarg, 0.1, 1e7); break;
	case O_HK: o->hang_k = num_arg("--hang-factor", optarg, 1, 1e4); break;
	case O_BACK: o->backoff = num_arg("--backoff", optarg, 0, 1e5); break;
	case O_ROLL: o->rollback = num_arg("--rollback-steps", optarg, 0, 1e9); break;
	case O_SKIP: o->skip = num_arg("--skip-batches", optarg, 0, 1e9); break;
	case O_SPARES: o->spares = num_arg("--spares", optarg, 0, 1e5); break;
	case O_SHRINK: o->shrink = 1; break;
	case O_NOSHRINK: o->shrink = 0; break;
	case O_PRE: o->preflight = 1; break;
	case O_NOPRE: o->preflight = 0; break;
	case O_PRETIME: o->preflight_timeout = num_arg("--preflight-timeout", optarg, 1, 86400); break;
	case O_STCMD: o->selftest_cmd = optarg; break;
	case O_SAVEF: o->save_factor = num_arg("--save-factor", optarg, 0, 1e4); break;
	case O_SAVEMIN: o->save_min = num_arg("--save-timeout-min", optarg, 0.1, 1e7); break;
	case O_SLURMT: o->slurm_timeout = num_arg("--slurm-timeout", optarg, 0.1, 3600); break;
	case O_GRACE: o->grace = num_arg("--preempt-grace", optarg, 0, 1e5); break;
	case O_MTBF: o->mtbf = num_arg("--mtbf", optarg, 1, 1e10); break;
	case O_NOREQ: o->requeue = false; break;
	case O_PROG: o->progress_out = true; break;
	case O_SRUN: o->srun = optarg; break;
	case O_NOSRUN: o->no_srun = true; break;
	case O_TOOL: o->ckpt_tool = optarg; o->ckpt_tool_given = true; break;
	case O_TICK: o->tick = num_arg("--tick", optarg, 0.01, 60); break;
	case O_SFACT: o->strag_factor = num_arg("--straggler-factor", optarg, 1, 1e6); break;
	case O_SSTEPS: o->strag_steps = num_arg("--straggler-steps", optarg, 0, 1e9); break;
	case O_SMIN: o->strag_min = num_arg("--straggler-min", optarg, 0, 1e6); break;
	case O_HSTART: o->hang_startup = num_arg("--hang-startup", optarg, 0, 1e7); break;
	case O_MEVERY: o->metrics_every = num_arg("--metrics-every", optarg, 0, 1e6); break;
	case O_MFILE: o->metrics_textfile = optarg; break;
	case O_MHTTP: {
		char host[256];
		int port;
		if (wr_http_addr(optarg, host, sizeof host, &port) != 0)
			wr_usage_error("bad --metrics-http value '%s' (expected [HOST:]PORT, PORT 0..65535)", optarg);
		o->metrics_http = optarg;
		break;
	}
	case O_NODEWAIT: o->node_wait = num_arg("--node-wait", optarg, 0, 1e5); break;
	case 'v': o->verbose++; break;
	case O_HELP: help(); exit(0);
	default:
		wr_usage_error("unknown option or missing value: '%s'", opt);
	}
}

/* dir as an absolute path without trailing slashes (relative: to the cwd) */
static void abs_dir(const char *dir, char *buf, size_t len)
{
	char cwd[4096];
	if (dir[0] != '/' && getcwd(cwd, sizeof cwd))
		snprintf(buf, len, "%s/%s", cwd, dir);
	else
		snprintf(buf, len, "%s", dir);
	for (size_t n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--)
		buf[n - 1] = '\0';
}

/* The trainer's own --ckpt-dir: the checkpoint dir when none other is
 * given; one that differs from the wrapper's is refused (the trainer saved
 * there while the wrapper listed, rolled back and marked the other one).
 * --ckpt-tool none: the command's options are its own business. */
static void cmd_ckpt_dir(struct opts *o)
{
	const char *t = wr_cmd_arg(o->cmd, "--ckpt-dir");
	if (!t || !*t)
		return;
	if (!o->ckpt_dir || !*o->ckpt_dir) {
		o->ckpt_dir = t;
		return;
	}
	char a[4200], b[4200];
	struct stat sa, sb;
	abs_dir(o->ckpt_dir, a, sizeof a);
	abs_dir(t, b, sizeof b);
	bool same = strcmp(a, b) == 0 ||
	            (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
	if (!same && strcmp(o->ckpt_tool, "none") != 0)
		wr_usage_error("the command's --ckpt-dir %s is not the checkpoint dir %s (--ckpt-dir or "
		               "LLM_TRAIN_CKPT_DIR): give the same one, or one of them", t, o->ckpt_dir);
}

void wr_parse_options(int argc, char **argv, struct opts *o)
{
	bool hang_min_given = false;
	int c;

	set_defaults(o);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+v", long_opts, NULL)) != -1)
		take(o, c, argv[optind - 1], &hang_min_given);
	if (optind >= argc)
		wr_usage_error("no command given: " PROG " [options] -- COMMAND");
	o->cmd = argv + optind;
	if (o->hang_min > o->hang_max && !hang_min_given)
		o->hang_min = o->hang_max;   /* a policy cap below the default floor wins */
	if (o->hang_min > o->hang_max)
		wr_usage_error("--hang-timeout-min %g is above --hang-timeout-max %g", o->hang_min, o->hang_max);
	static char plugin_dir[4096];
	if (!o->ckpt_dir)
		o->ckpt_dir = getenv(LLMT_ENV_CKPT_DIR);
	if (!o->ckpt_dir)   /* an salloc shell: the option itself */
		o->ckpt_dir = wr_plugin_ckpt_dir(plugin_dir, sizeof plugin_dir);
	cmd_ckpt_dir(o);
	if (!o->ckpt_dir || !*o->ckpt_dir)
		wr_usage_error("no checkpoint dir: give --ckpt-dir or set LLM_TRAIN_CKPT_DIR");
}
