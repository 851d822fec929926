/* job_io.c: the recovery loop's steps against the world (job_io.h):
 * Slurm's environment, the checkpoint tool, the process environment, srun
 * and the watcher, sinfo, the ledger and the report. The decisions inside
 * each step are job.c's. */
#define _GNU_SOURCE
#include "config.h"
#include "rdfile.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/llmt/ckptid.h"
#include "include/llmt/exitcodes.h"
#include "hbread.h"
#include "job_io.h"
#include "live.h"
#include "preflight.h"
#include "report.h"
#include "slurm.h"
#include "include/llmt/env.h"
#include "include/llmt/err.h"

#define PROG "llm-train-wrap"

void wr_setenv(const char *k, const char *v)
{
	if (setenv(k, v, 1) != 0) {
		char what[128];
		snprintf(what, sizeof what, "setenv %s", k);
		LLMT_DIE_ERRNO(PROG, LLMT_EXIT_SOFTWARE, what);
	}
}

void wr_site_read(const struct opts *o, struct wr_site *s)
{
	const char *job = getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "";
	const char *iv = getenv(LLMT_ENV_CKPT_INTERVAL);
	wr_slurm_timeout_set(o->slurm_timeout);   /* before the first query (hostnames) */
	*s = (struct wr_site){
		.job = job, .nodelist = getenv("SLURM_JOB_NODELIST"),
		.run = (int)wr_env_num("SLURM_RESTART_COUNT", 0, 0, 1e6),
		.in_slurm = *job && !o->no_srun,
		.auto_interval = iv && strcmp(iv, "auto") == 0,
	};
	s->nalloc = s->in_slurm ? wr_hostnames(s->nodelist, &s->alloc) : 0;
	s->ntasks_job = (int)wr_env_num("SLURM_NTASKS", 0, 0, 1e7);
	int tpn = s->nalloc > 0 && s->ntasks_job > 0 ? s->ntasks_job / s->nalloc : 1;
	if (getenv("SLURM_NTASKS_PER_NODE") && atoi(getenv("SLURM_NTASKS_PER_NODE")) > 0)
		tpn = atoi(getenv("SLURM_NTASKS_PER_NODE"));
	s->tasks_per_node = tpn < 1 ? 1 : tpn;
	wr_plugin_layout(&s->tp, &s->pp, &s->dp, &s->dp_auto);
	s->comm_timeout_s = wr_env_num(LLMT_ENV_COMM_TIMEOUT, 300, 0, 1e9);
	/* The plugin marks a job submitted with one of its options (LLM_TRAIN=1
	 * in the batch step too; under salloc the option's variable, which the
	 * steps inherit); without one its tasks get no rank variables, and
	 * every attempt of a torch.distributed env:// script fails alike. */
	if (s->in_slurm && !wr_plugin_options())
		fprintf(stderr, PROG ": job %s has no --llm-train or --llm-ckpt-dir option: the plugin sets "
		        "no RANK, WORLD_SIZE, MASTER_ADDR or MASTER_PORT in its tasks (a torch.distributed "
		        "env:// rendezvous fails); submit with one, e.g. --llm-train=dp=auto\n", job);
}

void wr_site_free(struct wr_site *s)
{
	for (int i = 0; i < s->nalloc; i++)
		free(s->alloc[i]);
	free(s->alloc);
	s->alloc = NULL;
	s->nalloc = 0;
}

/* The plugin's automatic layout (LLM_TRAIN_AUTO: "tp=2 pp=1 ... step_s=0.1")
 * as a "layout" event: numbers as numbers, the rest as text. */
static void auto_event(struct wr_job *j)
{
	const char *v = getenv(LLMT_ENV_AUTO);
	char buf[1024], *save = NULL;
	if (!v || !*v || strlen(v) >= sizeof buf)
		return;
	snprintf(buf, sizeof buf, "%s", v);
	json_t *o = json_object();
	for (char *w = strtok_r(buf, " ", &save); w && o; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '='), *end;
		if (!eq || eq == w)
			continue;
		*eq = '\0';
		double d = strtod(eq + 1, &end);
		json_t *x = !eq[1] || *end || d != d ? json_string(eq + 1) :
			fabs(d) < 9e15 && d == (double)(json_int_t)d ? json_integer((json_int_t)d) : json_real(d);
		json_object_set_new(o, w, x);
	}
	wr_ledger_event(j->led, "layout", o);
}

void wr_job_begin(struct wr_job *j)
{
	struct wr_history *h = j->h;
	const struct wr_site *s = j->site;
	if (h->last_run_cut) {
		fprintf(stderr, PROG ": the previous run of this job ended without the wrapper (node failure, scancel, time limit)\n");
		wr_ledger_event(j->led, "failure", json_pack("{s:s,s:s,s:s}", "class", "transient", "node", "",
		                "why", "previous run ended without the wrapper"));
		h->past[h->npast < WR_HIST_MAX ? h->npast++ : h->npast - 1] = (struct wr_past){ WR_TRANSIENT, "", true };
		h->failures++;
	}
	wr_ledger_event(j->led, "start", json_pack("{s:i,s:o,s:o,s:i,s:i,s:i,s:o}", "run", s->run, "job",
	                wr_json_text(s->job), "nodes", wr_json_text(s->nodelist), "nnodes", s->nalloc,
	                "tasks_per_node", s->tasks_per_node, "pid", (int)getpid(), "command",
	                wr_json_text(j->o->cmd[0])));
	auto_event(j);
}

/* Waits delay seconds; returns a signal number if one came meanwhile. */
static int backoff_wait(const struct wr_job *j, double delay)
{
	double end = wr_now() + delay;
	while (wr_now() < end) {
		struct pollfd p = { j->sig_fd, POLLIN, 0 };
		int ms = (int)((end - wr_now()) * 1000) + 1;
		if (poll(&p, 1, ms) > 0) {
			unsigned char b;
			while (read(j->sig_fd, &b, 1) == 1)
				if (b != SIGCHLD)
					return b;
		}
	}
	return 0;
}

int wr_job_pick_io(struct wr_job *j)
{
	static struct wr_ckpt ck[1024];
	int n = -1;   /* no checkpoint tool */
	if (strcmp(j->ckpt_tool, "none") != 0) {
		n = wr_ckpt_list(j->ckpt_tool, j->o->ckpt_dir, ck, 1024, j->led);
		if (n == -2 && !j->o->ckpt_tool_given) {
			/* no llm-train here: a foreign trainer resumes by itself */
			fprintf(stderr, PROG ": %s not found: checkpoints are left to the trainer "
			        "(--ckpt-tool PATH or none to say so)\n", j->ckpt_tool);
			j->ckpt_tool = "none";
			n = 0;
		}
		if (n < 0) {
			int code = n < -2 ? -n : LLMT_EXIT_SOFTWARE;   /* the tool's 66 or 74 */
			wr_ledger_event(j->led, "end", json_pack("{s:i,s:s}", "exit_code", code, "why", "checkpoint tool failed"));
			return code;
		}
	}
	int rc = wr_job_pick(j, ck, n);
	if (rc)
		wr_ledger_event(j->led, "end", json_pack("{s:i,s:s}", "exit_code", rc, "why",
		                "every checkpoint that fits is marked bad"));
	return rc;
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
	FILE *f = wr_fopen_read(p);
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

void wr_job_env_io(struct wr_job *j)
{
	struct wr_attempt_env e;
	double cost = j->site->auto_interval ? ckpt_cost(metrics_path(j->run_dir, j->o->ckpt_dir)) : 0;
	wr_job_env(j, cost, wr_now(), &e);
	if (e.set_resume)
		wr_setenv(LLMT_ENV_RESUME, j->resume);
	wr_setenv(LLMT_ENV_CKPT_BAD, e.ckpt_bad);
	wr_setenv(LLMT_ENV_SKIP_BATCHES, e.skip);
	wr_setenv(LLMT_ENV_ATTEMPT, e.attempt);
	/* torchrun's names for the same (torch/distributed/run.py): scripts
	 * written for torchrun read them to tell a restart from a first start */
	char maxr[32];
	snprintf(maxr, sizeof maxr, "%.0f", j->o->max_restarts);
	wr_setenv("TORCHELASTIC_RESTART_COUNT", e.attempt);
	wr_setenv("TORCHELASTIC_MAX_RESTARTS", maxr);
	if (*e.interval)
		wr_setenv(LLMT_ENV_CKPT_INTERVAL, e.interval);
	if (*e.dp) {
		/* elastic shrink: the new dp, and the dp the batch options were given for */
		wr_setenv(LLMT_ENV_DP, e.dp);
		wr_setenv(LLMT_ENV_BATCH_DP, e.batch_dp);
	}
	if (j->site->auto_interval)
		fprintf(stderr, PROG ": checkpoint interval auto: cost %.3f s, MTBF %.0f s -> %s\n",
		        e.ckpt_cost_s, e.mtbf_s, *e.interval ? e.interval : "auto (no cost measured yet)");
}

int wr_job_run(struct wr_job *j, struct wr_watch_out *wo)
{
	struct wr_launch lc;
	wr_job_launch_cfg(j, &lc);
	int ws = lc.ntasks > 0 || j->site->in_slurm ? 1 : (int)wr_env_num("WORLD_SIZE", 1, 1, 1e7);
	int nranks = wr_job_nranks(j, &lc, ws);
	wr_ledger_event(j->led, "launch", json_pack("{s:i,s:i,s:o,s:I,s:I,s:o,s:i,s:i,s:s,s:i}", "attempt", j->attempt,
	                "run", j->site->run, "resume", wr_json_text(j->resume), "resume_step", (json_int_t)j->resume_step,
	                "skip_batches", (json_int_t)j->skip, "exclude", wr_nodes_json(&j->excluded), "nodes",
	                lc.nodes, "ntasks", nranks, "ckpt_interval", j->interval,
	                "dp", j->dp_now > 0 ? j->dp_now : j->pol.dp));
	/* The heartbeats there now are an earlier attempt's: this one's are
	 * told from them by content, not by comparing the nodes' clocks with
	 * ours (hbfile.h) */
	/* under srun, up to WR_RANKS_PER_TASK ranks a task are watched:
	 * torchrun per node starts more ranks than Slurm has tasks */
	int cap = lc.ntasks > 0 || j->site->in_slurm ? nranks * WR_RANKS_PER_TASK : nranks;
	struct wr_hbold *old = cap > 0 ? calloc((size_t)cap, sizeof *old) : NULL;
	if (old)
		wr_hb_snapshot(j->hb_dir, old, cap);
	struct wr_step step;
	if (wr_launch(&lc, &step) != 0) {
		free(old);
		wr_ledger_event(j->led, "end", json_pack("{s:i,s:s}", "exit_code", LLMT_EXIT_SOFTWARE, "why", "launch failed"));
		return LLMT_EXIT_SOFTWARE;
	}
	struct wr_watch_cfg wc;
	wr_job_watch_cfg(j, nranks, &wc);
	wc.hb_old = old;
	wc.save_longest_s = &j->save_longest_s;   /* learnt across attempts */
	wc.nranks_max = old ? cap : nranks;
	wr_watch(&wc, &step, &j->st, wo);
	free(old);
	return 0;
}

/* Slurm's down nodes not yet excluded, into e->down_nodes */
static void query_down(const struct wr_job *j, struct wr_ending *e)
{
	struct wr_nodes bad;
	if (wr_node_states("sinfo", j->site->nodelist, &bad) == 0)
		wr_job_add_down(j, &bad, e);
}

void wr_job_gather(struct wr_job *j, int code, struct wr_watch_out *wo)
{
	if (j->site->in_slurm && code != 0)
		wr_cancel_leftover_steps(j->site->job);
	if (wr_job_wants_node_states(j, &wo->e, code))
		query_down(j, &wo->e);
	if (!wr_job_must_wait_nodes(j, &wo->e))
		return;
	/* The step could not be ended and no heartbeat named the node: a node
	 * stopped answering. Wait for Slurm to say which one (it marks it not
	 * responding after SlurmdTimeout). */
	double wait = j->o->node_wait >= 0 ? j->o->node_wait : wr_slurmd_timeout() + 10;
	fprintf(stderr, PROG ": the step could not be ended: waiting up to %.0f s for Slurm's node states\n", wait);
	double until = wr_now() + wait;
	while (wo->e.down_nodes.n == 0 && wr_now() < until) {
		if (backoff_wait(j, 1.0) && j->pol.requeue) {
			wo->e.wrapper_signal = SIGTERM;
			break;
		}
		query_down(j, &wo->e);
	}
}

long wr_job_judge(struct wr_job *j, int code, struct wr_watch_out *wo, struct wr_verdict *v)
{
	long sdc_step = -1;
	/* the first task's code, as classify judges it: srun's own may be a
	 * collateral kill's (a replica terminated after the others exited 86) */
	if ((wo->e.task_exit_code ? wo->e.task_exit_code : code) == LLMT_EXIT_SDC) {
		char p[4200];
		snprintf(p, sizeof p, "%s/sdc.json", j->o->ckpt_dir);
		if (access(p, R_OK) != 0)
			snprintf(p, sizeof p, "%s/sdc.json", j->run_dir);
		wr_sdc_suspects(p, &wo->e.sdc_suspects, &sdc_step);
	}
	if (wr_job_known_nodes(j->site, &wo->e) > 0)
		fprintf(stderr, PROG ": a heartbeat or sdc.json names a node that is not one of the job's (%s): taken as node unknown\n",
		        j->site->nodelist ? j->site->nodelist : "?");
	wr_classify(&wo->e, j->h->past, j->h->npast, v);
	char why[160];
	int rule = wr_job_ckpt_bad(j, wo, v, why, sizeof why);
	if (rule) {
		/* the checkpoint is left in place (evidence): only never picked again */
		char id[64];
		llmt_ckpt_id(j->resume, id, sizeof id);
		fprintf(stderr, PROG ": %s: marked bad: %s\n", j->resume, why);
		wr_ledger_event(j->led, "ckpt_bad", json_pack("{s:i,s:o,s:I,s:s,s:o,s:s}", "attempt", j->attempt, "path",
		                wr_json_text(j->resume), "step", (json_int_t)j->resume_step, "rule",
		                rule == 1 ? "exit_code" : "load_phase", "why", wr_json_text(why), "id", id));
		wr_job_mark_bad(j, rule, why, id, v);
	}
	wr_job_record(j, wo, v);
	wr_ledger_event(j->led, "attempt", json_pack("{s:i,s:i,s:f,s:f,s:f,s:I,s:I,s:f,s:f,s:s}", "attempt", j->attempt,
	                "run", j->site->run, "t_launch", wo->t_launch, "t_first_step", wo->t_first_step, "t_end", wo->t_end,
	                "resume_step", (json_int_t)j->resume_step, "last_step", (json_int_t)wo->last_step,
	                "step_s", wo->step_s, "ckpt_s", wo->ckpt_s, "class", wr_class_name(v->cls)));
	fprintf(stderr, PROG ": attempt %d ended: %s: %s\n", j->attempt, wr_class_name(v->cls), v->why);
	if (v->cls != WR_DONE)
		wr_ledger_event(j->led, "failure", json_pack("{s:i,s:s,s:o,s:i,s:i,s:o,s:I,s:f}", "attempt", j->attempt,
		                "class", wr_class_name(v->cls), "node", wr_json_text(v->node), "exit_code", code, "signal",
		                wo->e.task_signal ? wo->e.task_signal : wo->e.term_signal, "why", wr_json_text(v->why), "step",
		                (json_int_t)wo->last_step, "attempt_s", wo->t_end - wo->t_launch));
	return sdc_step;
}

enum wr_next wr_job_act(struct wr_job *j, int code, const struct wr_watch_out *wo,
                        const struct wr_verdict *v, long sdc_step)
{
	struct wr_state s;
	struct wr_action a;
	wr_job_state(j, v, wo, code, sdc_step, wr_now(), &s);
	wr_decide(v, &j->pol, &s, &a);
	wr_job_log_action(j, &a, NULL);
	enum wr_next next = wr_job_apply(j, v, &a, s.now);
	if (next != WR_NEXT_RESTART)
		return next;
	int sig = backoff_wait(j, a.delay_s);
	if (!sig)
		return WR_NEXT_RESTART;
	/* Preempted while backing off: go straight to the queue. */
	wr_ledger_event(j->led, "signal", json_pack("{s:i,s:i}", "attempt", j->attempt, "signal", sig));
	if (!j->pol.requeue) {
		j->exit_code = LLMT_EXIT_REQUEUE;
		return WR_NEXT_STOP;
	}
	return WR_NEXT_REQUEUE;
}

int wr_job_requeue(struct wr_job *j, int code)
{
	if (wr_job_cancelled(j->site->job)) {   /* scancel: the job is to end */
		printf(PROG ": job %s was cancelled: not requeued\n", j->site->job);
		wr_ledger_event(j->led, "cancelled", json_pack("{s:s}", "job", j->site->job));
		j->exit_code = LLMT_EXIT_REQUEUE;
		return -1;
	}
	int rc = wr_requeue(j->site->job, &j->excluded, j->led);
	if (rc == 0) {
		printf(PROG ": job %s requeued (run %d ends)\n", j->site->job, j->site->run);
		wr_ledger_close(j->led);
		return 0;
	}
	wr_ledger_event(j->led, "requeue_failed", json_pack("{s:i}", "rc", rc));
	j->exit_code = wr_job_requeue_failed_code(code);
	return -1;
}

int wr_job_finish(struct wr_job *j)
{
	static struct wr_history fin;
	wr_ledger_load(j->led->path, NULL, &fin);
	struct wr_report_cfg rc = { .run_dir = j->run_dir, .metrics = metrics_path(j->run_dir, j->o->ckpt_dir),
	                            .gnuplot = LLMT_GNUPLOT, .job = j->site->job, .now = wr_now(),
	                            .live = j->live };
	struct wr_goodput g;
	wr_report(&fin, &rc, &g);
	wr_live_close(j->live);
	json_t *lost = json_object();
	for (int k = 0; k < WR_NCAUSES; k++)
		if (k != WR_DONE)
			json_object_set_new(lost, wr_cause_name(k), json_real(g.lost_s[k]));
	wr_ledger_event(j->led, "end", json_pack("{s:i,s:f,s:f,s:f,s:o,s:i}", "exit_code", j->exit_code, "goodput", g.ratio,
	                "useful_s", g.useful_s, "allocated_s", g.allocated_s, "time_lost_s", lost, "restarts", g.restarts));
	wr_ledger_close(j->led);
	return j->exit_code;
}
