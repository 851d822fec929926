/* llm-train-wrap: the supervisor in the batch step. Setup (signals,
 * ledger history, job geometry), then the attempt loop: pick a checkpoint,
 * launch, watch, classify, decide, record, act; the report at the end. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "classify.h"
#include "decide.h"
#include "hang.h"
#include "include/llmt/exitcodes.h"
#include "interval.h"
#include "launch.h"
#include "ledger.h"
#include "options.h"
#include "report.h"
#include "report_cmd.h"
#include "slurm.h"
#include "watch.h"

#define PROG "llm-train-wrap"

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int e = errno;
	unsigned char b = (unsigned char)sig;
	if (write(sig_pipe[1], &b, 1) < 0) { /* full pipe: a signal is pending anyway */ }
	errno = e;
}


/* Where the runtime logs metrics: RUN_DIR/metrics.jsonl when it exists
 * (llm-train writes there when LLM_TRAIN_RUN_DIR is set), else CKPT_DIR's. */
static const char *metrics_path(const char *run_dir, const char *ckpt_dir)
{
	static char p[4200];
	snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
	if (access(p, R_OK) != 0)
		snprintf(p, sizeof p, "%s/metrics.jsonl", ckpt_dir);
	return p;
}

/* Median checkpoint write time logged in metrics.jsonl (0: none yet). */
static double ckpt_cost(const char *p)
{
	char line[8192];
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	double v[WR_STEPTIMES];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		json_t *o = json_loads(line, 0, NULL);
		double t = json_number_value(json_object_get(o, "ckpt_time_s"));
		if (t > 0) {
			v[n % WR_STEPTIMES] = t;
			n++;
		}
		json_decref(o);
	}
	fclose(f);
	return wr_median(v, n < WR_STEPTIMES ? n : WR_STEPTIMES);
}

static void set_env(const char *k, const char *v)
{
	if (setenv(k, v, 1) != 0) {
		fprintf(stderr, PROG ": setenv %s: %s\n", k, strerror(errno));
		exit(LLMT_EXIT_SOFTWARE);
	}
}



/* Waits delay seconds; returns a signal number if one came meanwhile. */
static int backoff_wait(double delay)
{
	double end = wr_now() + delay;
	while (wr_now() < end) {
		struct pollfd p = { sig_pipe[0], POLLIN, 0 };
		int ms = (int)((end - wr_now()) * 1000) + 1;
		if (poll(&p, 1, ms) > 0) {
			unsigned char b;
			while (read(sig_pipe[0], &b, 1) == 1)
				if (b != SIGCHLD)
					return b;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return wr_report_main(argc - 1, argv + 1);
	wr_parse_options(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);

	char run_dir[4096], hb_dir[4096];
	snprintf(run_dir, sizeof run_dir, "%s", o.run_dir ? o.run_dir : (getenv("LLM_TRAIN_RUN_DIR") && *getenv("LLM_TRAIN_RUN_DIR") ? getenv("LLM_TRAIN_RUN_DIR") : o.ckpt_dir));
	if (o.hb_dir)
		snprintf(hb_dir, sizeof hb_dir, "%s", o.hb_dir);
	else if (getenv("LLM_TRAIN_HEARTBEAT_DIR") && *getenv("LLM_TRAIN_HEARTBEAT_DIR"))
		snprintf(hb_dir, sizeof hb_dir, "%s", getenv("LLM_TRAIN_HEARTBEAT_DIR"));
	else
		snprintf(hb_dir, sizeof hb_dir, "%s/heartbeat", o.ckpt_dir);
	set_env("LLM_TRAIN_CKPT_DIR", o.ckpt_dir);
	set_env("LLM_TRAIN_RUN_DIR", run_dir);
	set_env("LLM_TRAIN_HEARTBEAT_DIR", hb_dir);
	const char *iv = getenv("LLM_TRAIN_CKPT_INTERVAL");
	bool auto_interval = iv && strcmp(iv, "auto") == 0;

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

	struct wr_ledger led;
	wr_ledger_verbose(o.verbose > 0);
	if (wr_ledger_open(&led, run_dir) != 0)
		return LLMT_EXIT_IO;
	mkdir(o.ckpt_dir, 0700);
	const char *job = getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "";
	static struct wr_history h;
	if (wr_ledger_load(led.path, job, &h) != 0) {
		fprintf(stderr, PROG ": cannot read %s: %s\n", led.path, strerror(errno));
		return LLMT_EXIT_IO;
	}

	int run = (int)wr_env_num("SLURM_RESTART_COUNT", 0, 0, 1e6);
	bool in_slurm = *job && !o.no_srun;
	const char *nodelist = getenv("SLURM_JOB_NODELIST");
	char **alloc = NULL;
	int nalloc = in_slurm ? wr_hostnames(nodelist, &alloc) : 0;
	int ntasks_job = (int)wr_env_num("SLURM_NTASKS", 0, 0, 1e7);
	int tpn = nalloc > 0 && ntasks_job > 0 ? ntasks_job / nalloc : 1;
	if (getenv("SLURM_NTASKS_PER_NODE") && atoi(getenv("SLURM_NTASKS_PER_NODE")) > 0)
		tpn = atoi(getenv("SLURM_NTASKS_PER_NODE"));
	if (tpn < 1)
		tpn = 1;
	int tp, pp, dp;
	bool dp_auto;
	wr_plugin_layout(&tp, &pp, &dp, &dp_auto);

	struct wr_policy pol = {
		.max_restarts = o.window_s > 0 ? -1 : (int)o.max_restarts,
		.window_restarts = o.window_s > 0 ? (int)o.max_restarts : 0,
		.window_s = o.window_s, .backoff_s = o.backoff, .backoff_max_s = 600,
		.rollback_steps = (long)o.rollback, .skip_batches = (long)o.skip,
		.requeue = o.requeue && in_slurm,
		.shrink = o.shrink >= 0 ? o.shrink == 1 : dp_auto,
		.tasks_per_node = tpn, .ranks_per_replica = tp * pp, .dp = dp,
	};
	/* The runtime's communication watchdog deadline (its environment is
	 * ours): on exit 75 a heartbeat staler than the others' by half of
	 * it names the rank that stalled its peers. */
	double stuck_margin = wr_stuck_margin(wr_env_num("LLM_TRAIN_COMM_TIMEOUT", 300, 0, 1e9));
	int nodes_step = nalloc - (int)o.spares;
	if (nalloc > 0 && nodes_step < 1)
		wr_usage_error("--spares %g leaves no node of %d to train on", o.spares, nalloc);
	int ntasks = o.spares > 0 ? nodes_step * tpn : 0;

	if (h.last_run_cut) {
		fprintf(stderr, PROG ": the previous run of this job ended without the wrapper (node failure, scancel, time limit)\n");
		wr_ledger_event(&led, "failure", json_pack("{s:s,s:s,s:s}", "class", "transient", "node", "",
		                "why", "previous run ended without the wrapper"));
		h.past[h.npast < WR_HIST_MAX ? h.npast++ : h.npast - 1] = (struct wr_past){ WR_TRANSIENT, "" };
		h.failures++;
	}
	wr_ledger_event(&led, "start", json_pack("{s:i,s:s,s:s,s:i,s:i,s:i,s:s}", "run", run, "job", job,
	                "nodes", nodelist ? nodelist : "", "nnodes", nalloc, "tasks_per_node", tpn,
	                "pid", (int)getpid(), "command", o.cmd[0]));

	double run_start = wr_now();
	struct wr_live *live = wr_live_from_opts(&o, run_dir, job, run, run_start, &h);
	struct wr_nodes excluded = h.excluded;
	long max_resume = h.pending ? h.max_resume_step : -1;
	long skip_until = h.pending ? h.skip_until_step : -1;
	bool need_agree = h.pending && h.need_agree;
	long rollback_from = -1;   /* resume step at the last rollback: skips apply to ckpts at or before it */
	int attempt = h.attempts_total, no_progress = 0, numeric_repeats = 0, exit_code = 0;
	struct wr_steptimes st = { .n = 0 };
	for (int i = 0; i < h.nattempts; i++)
		wr_steptimes_add(&st, h.attempts[i].step_s);

	for (;;) {
		/* ---- pick the checkpoint ---- */
		char resume[4096] = "";
		long resume_step = 0;
		if (strcmp(o.ckpt_tool, "none") != 0) {
			static struct wr_ckpt ck[1024];
			int n = wr_ckpt_list(o.ckpt_tool, o.ckpt_dir, ck, 1024, &led);
			if (n == -2 && !o.ckpt_tool_given) {
				/* no llm-train here: a foreign trainer resumes by itself */
				fprintf(stderr, PROG ": %s not found: checkpoints are left to the trainer "
				        "(--ckpt-tool PATH or none to say so)\n", o.ckpt_tool);
				o.ckpt_tool = "none";
				n = 0;
			}
			if (n < 0) {
				wr_ledger_event(&led, "end", json_pack("{s:i,s:s}", "exit_code", LLMT_EXIT_SOFTWARE, "why", "checkpoint tool failed"));
				return LLMT_EXIT_SOFTWARE;
			}
			int k = wr_ckpt_pick(ck, n, max_resume, need_agree, &led);
			if (k >= 0) {
				snprintf(resume, sizeof resume, "%s", ck[k].path);
				resume_step = ck[k].step;
			} else if (n > 0 || max_resume >= 0 || need_agree) {
				fprintf(stderr, PROG ": no checkpoint fits (step <= %ld%s): fresh start\n", max_resume,
				        need_agree ? ", replicas agree" : "");
			}
			if (strcmp(o.ckpt_tool, "none") != 0)
				set_env("LLM_TRAIN_RESUME", resume);
		}
		long skip = 0;
		if (skip_until >= 0 && (rollback_from < 0 || resume_step <= rollback_from)) {
			skip = skip_until > resume_step ? skip_until - resume_step : 0;
			rollback_from = resume_step;
		}
		char b[64];
		snprintf(b, sizeof b, "%ld", skip);
		set_env("LLM_TRAIN_SKIP_BATCHES", b);
		snprintf(b, sizeof b, "%d", attempt);
		set_env("LLM_TRAIN_ATTEMPT", b);
		char interval[64] = "";
		if (auto_interval) {
			double cost = ckpt_cost(metrics_path(run_dir, o.ckpt_dir));
			double prior = o.mtbf > 0 ? o.mtbf : 6144.0 * 3600 / (nalloc > 0 ? nalloc : 1);
			double m = wr_mtbf_estimate(h.failure_time_s + (wr_now() - run_start), h.failures, prior);
			double step_s = wr_median(st.v, st.n);
			if (cost > 0) {
				double t = wr_daly_interval(cost, m);
				if (step_s > 0)
					snprintf(interval, sizeof interval, "%ld", wr_interval_steps(t, step_s));
				else
					snprintf(interval, sizeof interval, "%.0fs", t < 1 ? 1 : t);
				set_env("LLM_TRAIN_CKPT_INTERVAL", interval);
			}
			fprintf(stderr, PROG ": checkpoint interval auto: cost %.3f s, MTBF %.0f s -> %s\n", cost, m,
			        *interval ? interval : "auto (no cost measured yet)");
		}

		/* ---- launch ---- */
		bool custom = excluded.n > 0 || ntasks > 0;
		struct wr_launch lc = { .srun = o.srun, .cmd = o.cmd, .exclude = &excluded,
		                        .nodes = custom ? nodes_step : 0, .ntasks = custom ? (ntasks ? ntasks : nodes_step * tpn) : 0,
		                        .direct = !in_slurm,
		                        /* a killed step may hold its CPUs until a dead node is
		                         * declared down or a restarted slurmctld learns it
		                         * ended: every step shares, so the next never waits */
		                        .overlap = true, .name = WR_STEP_NAME };
		int nranks = lc.ntasks > 0 ? lc.ntasks : (in_slurm ? ntasks_job : (int)wr_env_num("WORLD_SIZE", 1, 1, 1e7));
		if (nranks < 1)
			nranks = 1;
		wr_ledger_event(&led, "launch", json_pack("{s:i,s:i,s:s,s:I,s:I,s:o,s:i,s:i,s:s}", "attempt", attempt,
		                "run", run, "resume", resume, "resume_step", (json_int_t)resume_step, "skip_batches",
		                (json_int_t)skip, "exclude", wr_nodes_json(&excluded), "nodes", lc.nodes, "ntasks",
		                nranks, "ckpt_interval", interval));
		struct wr_step step;
		if (wr_launch(&lc, &step) != 0) {
			wr_ledger_event(&led, "end", json_pack("{s:i,s:s}", "exit_code", LLMT_EXIT_SOFTWARE, "why", "launch failed"));
			return LLMT_EXIT_SOFTWARE;
		}
		struct wr_watch_cfg wc = {
			.hb_dir = hb_dir, .nranks = nranks,
			.hang = { .k = o.hang_k, .floor_s = o.hang_min, .cap_s = o.hang_max,
			          .startup_s = o.hang_startup, .pause_cap_s = 10 * o.hang_max },
			.progress_from_output = o.progress_out, .straggler_factor = o.strag_factor, .straggler_min_s = o.strag_min,
			.stuck_margin_s = stuck_margin,
			.rate_every_s = 60, .kill_grace_s = 15, .preempt_grace_s = o.grace, .tick_s = o.tick,
			.ledger = &led, .attempt = attempt, .resume_step = resume_step, .sig_fd = sig_pipe[0],
			.nodelist = nodelist, .sinfo = "sinfo", .verbose = o.verbose, .live = live,
		};
		struct wr_watch_out wo;
		wr_watch(&wc, &step, &st, &wo);

		/* ---- what happened ---- */
		int code = wo.e.exited ? wo.e.exit_code : 128 + wo.e.term_signal;
		if (in_slurm && code != 0)
			wr_cancel_leftover_steps(job);
		if (in_slurm && (code != 0 || wo.e.hung)) {
			struct wr_nodes bad;
			if (wr_node_states("sinfo", nodelist, &bad) == 0)
				for (int i = 0; i < bad.n; i++)
					if (!wr_nodes_has(&excluded, bad.name[i]))
						wr_nodes_add(&wo.e.down_nodes, bad.name[i]);
		}
		/* The step could not be ended and no heartbeat named the node:
		 * a node stopped answering. Wait for Slurm to say which one
		 * (it marks it not responding after SlurmdTimeout). */
		if (in_slurm && wo.e.kill_timeout && !wo.e.hung_node[0] && wo.e.down_nodes.n == 0) {
			double wait = o.node_wait >= 0 ? o.node_wait : wr_slurmd_timeout() + 10;
			fprintf(stderr, PROG ": the step could not be ended: waiting up to %.0f s for Slurm's node states\n", wait);
			double until = wr_now() + wait;
			while (wo.e.down_nodes.n == 0 && wr_now() < until) {
				struct wr_nodes bad;
				if (backoff_wait(1.0) && pol.requeue) {
					wo.e.wrapper_signal = SIGTERM;
					break;
				}
				if (wr_node_states("sinfo", nodelist, &bad) == 0)
					for (int i = 0; i < bad.n; i++)
						if (!wr_nodes_has(&excluded, bad.name[i]))
							wr_nodes_add(&wo.e.down_nodes, bad.name[i]);
			}
		}
		long sdc_step = -1;
		/* the first task's code, as classify judges it: srun's own may be
		 * a collateral kill's (a replica terminated after the others
		 * exited 86) */
		if ((wo.e.task_exit_code ? wo.e.task_exit_code : code) == LLMT_EXIT_SDC) {
			char p[4200];
			snprintf(p, sizeof p, "%s/sdc.json", o.ckpt_dir);
			if (access(p, R_OK) != 0)
				snprintf(p, sizeof p, "%s/sdc.json", run_dir);
			wr_sdc_suspects(p, &wo.e.sdc_suspects, &sdc_step);
		}
		struct wr_verdict v;
		wr_classify(&wo.e, h.past, h.npast, &v);
		bool progress = wo.last_step > resume_step;
		no_progress = progress ? 0 : no_progress + 1;
		numeric_repeats = v.cls == WR_NUMERIC ? numeric_repeats + 1 : 0;
		wr_ledger_event(&led, "attempt", json_pack("{s:i,s:i,s:f,s:f,s:f,s:I,s:I,s:f,s:f,s:s}", "attempt", attempt,
		                "run", run, "t_launch", wo.t_launch, "t_first_step", wo.t_first_step, "t_end", wo.t_end,
		                "resume_step", (json_int_t)resume_step, "last_step", (json_int_t)wo.last_step,
		                "step_s", wo.step_s, "ckpt_s", wo.ckpt_s, "class", wr_class_name(v.cls)));
		if (h.nattempts < WR_HIST_MAX)
			h.attempts[h.nattempts++] = (struct wr_attempt){ wo.t_launch, wo.t_first_step, wo.t_end, resume_step,
			                                                 wo.last_step, wo.step_s, wo.ckpt_s, v.cls, run };
		fprintf(stderr, PROG ": attempt %d ended: %s: %s\n", attempt, wr_class_name(v.cls), v.why);
		if (v.cls != WR_DONE) {
			wr_ledger_event(&led, "failure", json_pack("{s:i,s:s,s:s,s:i,s:i,s:s,s:I,s:f}", "attempt", attempt,
			                "class", wr_class_name(v.cls), "node", v.node, "exit_code", code, "signal",
			                wo.e.task_signal ? wo.e.task_signal : wo.e.term_signal, "why", v.why, "step",
			                (json_int_t)wo.last_step, "attempt_s", wo.t_end - wo.t_launch));
			if (h.npast < WR_HIST_MAX) {
				h.past[h.npast].cls = v.cls;
				snprintf(h.past[h.npast].node, WR_NODE_LEN, "%s", v.node);
				h.npast++;
			}
			if (v.cls != WR_PREEMPTED)
				h.failures++;
		}

		/* ---- decide ---- */
		int in_alloc = 0;
		for (int i = 0; i < nalloc; i++)
			in_alloc += wr_nodes_has(&excluded, alloc[i]);
		struct wr_state s = {
			.now = wr_now(), .restarts = h.restarts, .restart_times = h.restart_times,
			.nrestart_times = h.nrestart_times, .no_progress = no_progress,
			.numeric_repeats = numeric_repeats, .fail_step = v.cls == WR_SDC && sdc_step >= 0 ? sdc_step
			             : v.cls == WR_NUMERIC ? wo.last_step + 1   /* the step being computed */
			             : wo.last_step,
			.exit_code = code, .nodes_alloc = nalloc, .nodes_step = nalloc > 0 ? nodes_step : 1,
			.excluded = &excluded, .excluded_in_alloc = in_alloc,
		};
		struct wr_action a;
		wr_decide(&v, &pol, &s, &a);
		static const char *const acts[] = { "stop", "restart", "requeue" };
		wr_ledger_event(&led, "action", json_pack("{s:i,s:s,s:s,s:f,s:o,s:b,s:i,s:i,s:I,s:I,s:b,s:i}", "attempt",
		                attempt, "act", acts[a.act], "why", a.why, "delay_s", a.delay_s, "exclude",
		                wr_nodes_json(&a.exclude), "counts", a.counts, "nodes", a.nodes, "ntasks", a.ntasks,
		                "max_resume_step", (json_int_t)a.max_resume_step, "skip_until_step",
		                (json_int_t)a.skip_until_step, "need_agree", a.need_agree, "exit_code", a.exit_code));
		fprintf(stderr, PROG ": action: %s: %s\n", acts[a.act], a.why);
		if (a.counts) {
			h.restarts++;
			if (h.nrestart_times < WR_HIST_MAX)
				h.restart_times[h.nrestart_times++] = s.now;
		}
		attempt++;
		if (a.act == ACT_STOP) {
			exit_code = a.exit_code;
			break;
		}
		excluded = a.exclude;
		if (a.act == ACT_RESTART) {
			if (nalloc > 0) {
				nodes_step = a.nodes;
				if (a.ntasks != nodes_step * tpn || ntasks > 0 || excluded.n > 0)
					ntasks = a.ntasks;
			}
			if (a.max_resume_step >= 0 || v.cls == WR_NUMERIC) {
				max_resume = a.max_resume_step;
				skip_until = a.skip_until_step;
				rollback_from = -1;
			}
			if (a.need_agree)
				need_agree = true;
			int sig = backoff_wait(a.delay_s);
			if (!sig)
				continue;
			/* Preempted while backing off: go straight to the queue. */
			wr_ledger_event(&led, "signal", json_pack("{s:i,s:i}", "attempt", attempt, "signal", sig));
			if (!pol.requeue) {
				exit_code = LLMT_EXIT_REQUEUE;
				break;
			}
		}
		int rc = wr_requeue(job, &excluded, &led);
		if (rc == 0) {
			printf(PROG ": job %s requeued (run %d ends)\n", job, run);
			wr_ledger_close(&led);
			return 0;
		}
		wr_ledger_event(&led, "requeue_failed", json_pack("{s:i}", "rc", rc));
		exit_code = code == 0 ? LLMT_EXIT_SOFTWARE : (code < 128 ? code : LLMT_EXIT_SOFTWARE);
		break;
	}

	/* ---- the end of the job ---- */
	static struct wr_history fin;
	wr_ledger_load(led.path, NULL, &fin);
	struct wr_report_cfg rc = { .run_dir = run_dir, .metrics = metrics_path(run_dir, o.ckpt_dir), .gnuplot = LLMT_GNUPLOT,
	                            .job = job, .now = wr_now(), .live = live };
	struct wr_goodput g;
	wr_report(&fin, &rc, &g);
	wr_live_close(live);
	json_t *lost = json_object();
	for (int k = 0; k < WR_NCAUSES; k++)
		if (k != WR_DONE)
			json_object_set_new(lost, wr_cause_name(k), json_real(g.lost_s[k]));
	wr_ledger_event(&led, "end", json_pack("{s:i,s:f,s:f,s:f,s:o,s:i}", "exit_code", exit_code, "goodput", g.ratio,
	                "useful_s", g.useful_s, "allocated_s", g.allocated_s, "time_lost_s", lost, "restarts", g.restarts));
	wr_ledger_close(&led);
	for (int i = 0; i < nalloc; i++)
		free(alloc[i]);
	free(alloc);
	return exit_code;
}
