/* job.c: the pure steps of the recovery loop (job.h): the starting
 * values, the resume point, the attempt's environment and launch, which
 * nodes count as down, the record of an attempt, and the action applied
 * to the job. No Slurm, files or signals here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/llmt/ckptid.h"
#include "include/llmt/exitcodes.h"
#include "interval.h"
#include "job.h"
#include "selftest.h"
#include "slurm.h"

struct wr_job wr_job_start(const struct opts *o, const struct wr_site *site,
                           struct wr_history *h, struct wr_ledger *led, const char *run_dir,
                           const char *hb_dir, int sig_fd, double now)
{
	int nodes_step = site->nalloc - (int)o->spares;
	if (site->nalloc > 0 && nodes_step < 1)
		wr_usage_error("--spares %g leaves no node of %d to train on", o->spares, site->nalloc);
	/* dp=auto (or not given): the full step's ranks over tp x pp */
	int rpr = site->tp * site->pp, dp = site->dp;
	if (dp <= 0 && site->nalloc > 0 && rpr > 0 && nodes_step * site->tasks_per_node % rpr == 0)
		dp = nodes_step * site->tasks_per_node / rpr;
	struct wr_job j = {
		.o = o, .ckpt_tool = o->ckpt_tool, .run_dir = run_dir, .hb_dir = hb_dir, .site = site,
		.pol = {
			.max_restarts = o->window_s > 0 ? -1 : (int)o->max_restarts,
			.window_restarts = o->window_s > 0 ? (int)o->max_restarts : 0,
			.window_s = o->window_s, .backoff_s = o->backoff, .backoff_max_s = 600,
			.rollback_steps = (long)o->rollback, .skip_batches = (long)o->skip,
			.requeue = o->requeue && site->in_slurm,
			.no_requeue = !o->requeue ? "--no-requeue"
			            : "no Slurm job to requeue (--no-srun, or not in a batch job): the same command resumes",
			.shrink = o->shrink >= 0 ? o->shrink == 1 : site->dp_auto,
			.tasks_per_node = site->tasks_per_node, .ranks_per_replica = rpr,
			.dp = dp, .accum = (int)wr_cmd_opt(o->cmd, "--grad-accum", 1),
		},
		/* the runtime's communication watchdog deadline (its environment
		 * is ours): on exit 75 a heartbeat staler than the others' by
		 * half of it names the rank that stalled its peers */
		.preflight = wr_preflight_wanted(o->preflight, o->spares, o->preflight_policy),
		.selftest_cmd = o->selftest_cmd ? o->selftest_cmd
		              : strcmp(o->ckpt_tool, "none") != 0 ? o->ckpt_tool : "llm-train",
		.stuck_margin_s = wr_stuck_margin(site->comm_timeout_s),
		.run_start = now, .h = h, .led = led, .sig_fd = sig_fd, .live = NULL,
		.nodes_step = nodes_step,
		.ntasks = o->spares > 0 ? nodes_step * site->tasks_per_node : 0,
		.excluded = h->excluded, .dp_now = 0,
		.max_resume = h->pending ? h->max_resume_step : -1,
		.skip_until = h->pending ? h->skip_until_step : -1,
		.need_agree = h->pending && h->need_agree,
		.rollback_from = -1,
		.attempt = h->attempts_total, .no_progress = 0, .numeric_repeats = 0, .exit_code = 0,
		.load_fails = 0, .load_fail_step = -1, .ckpt_marked = false,
		.st = { .n = 0 }, .save_longest_s = h->save_longest_s,
		.resume = "", .resume_step = 0, .skip = 0, .interval = "",
	};
	for (int i = 0; i < h->nattempts; i++)
		wr_steptimes_add(&j.st, h->attempts[i].step_s);
	return j;
}

const char *wr_cmd_arg(char *const *cmd, const char *name)
{
	size_t len = strlen(name);
	for (int i = 0; cmd && cmd[i]; i++) {
		if (strcmp(cmd[i], name) == 0)
			return cmd[i + 1];
		if (strncmp(cmd[i], name, len) == 0 && cmd[i][len] == '=')
			return cmd[i] + len + 1;
		if (strcmp(cmd[i], "--") == 0)
			break;
	}
	return NULL;
}

long wr_cmd_opt(char *const *cmd, const char *name, long dflt)
{
	const char *v = wr_cmd_arg(cmd, name);
	if (!v)
		return dflt;
	char *end;
	long a = strtol(v, &end, 10);
	return end != v && !*end && a >= 1 && a <= 1L << 40 ? a : dflt;
}

int wr_job_pick(struct wr_job *j, const struct wr_ckpt *ck, int n)
{
	j->resume[0] = '\0';
	j->resume_step = 0;
	j->fresh_chosen = false;
	if (n >= 0) {
		int bad = 0;
		int k = wr_ckpt_pick(ck, n, j->max_resume, j->need_agree, j->h, &bad, j->led);
		if (k >= 0) {
			snprintf(j->resume, sizeof j->resume, "%s", ck[k].path);
			j->resume_step = ck[k].step;
		} else if (bad > 0) {
			/* a fine-tune's only checkpoint may be its import: random
			 * weights in place of checkpoints that failed to load would
			 * train on as if nothing happened */
			fprintf(stderr, "llm-train-wrap: every checkpoint that fits is marked bad (it failed to load): "
			        "not starting from random weights; to try them again: llm-train-wrap ckpt-unmark %s "
			        "--all (or a checkpoint's path); or move them away to start fresh\n", j->run_dir);
			return LLMT_EXIT_BADCKPT;
		} else if ((j->fresh_chosen = n > 0 || j->max_resume >= 0 || j->need_agree)) {
			if (j->max_resume >= 0)
				fprintf(stderr, "llm-train-wrap: no checkpoint fits (step <= %ld%s): fresh start\n",
				        j->max_resume, j->need_agree ? ", replicas agree" : "");
			else
				fprintf(stderr, "llm-train-wrap: no checkpoint fits%s: fresh start\n",
				        j->need_agree ? " (replicas agree)" : "");
		}
	}
	j->skip = 0;
	if (j->skip_until >= 0 && (j->rollback_from < 0 || j->resume_step <= j->rollback_from)) {
		j->skip = j->skip_until > j->resume_step ? j->skip_until - j->resume_step : 0;
		j->rollback_from = j->resume_step;
	}
	return 0;
}

int wr_job_ckpt_bad(struct wr_job *j, const struct wr_watch_out *wo, const struct wr_verdict *v,
                    char *why, size_t len)
{
	const struct wr_ending *e = &wo->e;
	int code = e->task_exit_code ? e->task_exit_code : e->exit_code;
	bool before_step = j->resume[0] && wo->last_step <= j->resume_step && (e->exited || e->task_exit_code);
	if (before_step && code == LLMT_EXIT_BADCKPT) {
		j->load_fails = 0;
		snprintf(why, len, "exit %d: the trainer could not load it", code);
		return 1;
	}
	/* llm-train says 89 when its checkpoint is bad: any other failure in
	 * its load phase (out of memory, a lost peer) is not the checkpoint's */
	const char *tool = strrchr(j->ckpt_tool, '/');
	bool foreign = strcmp(tool ? tool + 1 : j->ckpt_tool, "llm-train") != 0;
	if (!before_step || v->cls != WR_SOFTWARE || !foreign || !wo->in_load) {
		j->load_fails = 0;
		return 0;
	}
	j->load_fails = j->load_fail_step == j->resume_step ? j->load_fails + 1 : 1;
	j->load_fail_step = j->resume_step;
	int marked = 0;
	for (int i = 0; i < j->h->nbad; i++)
		marked += !j->h->bad[i].trusted;
	if (j->load_fails < WR_BAD_LOAD_REPEAT || marked >= WR_BAD_FOREIGN_MAX)
		return 0;
	j->load_fails = 0;
	snprintf(why, len, "exit %d in phase load before any step, %d attempts in a row", code,
	         WR_BAD_LOAD_REPEAT);
	return 2;
}

void wr_job_mark_bad(struct wr_job *j, int rule, const char *why, const char *id, struct wr_verdict *v)
{
	wr_history_bad_id(j->h, j->resume, rule == 1, id);
	v->cls = WR_TRANSIENT;
	snprintf(v->why, sizeof v->why, "checkpoint of step %ld did not load (%s): marked bad, resume from an older one",
	         j->resume_step, why);
	j->ckpt_marked = true;
}

void wr_job_env(struct wr_job *j, double ckpt_cost_s, double now, struct wr_attempt_env *e)
{
	memset(e, 0, sizeof *e);
	snprintf(e->skip, sizeof e->skip, "%ld", j->skip);
	snprintf(e->attempt, sizeof e->attempt, "%d", j->attempt);
	/* LLM_TRAIN_RESUME: the checkpoint chosen, or empty for a fresh start
	 * on purpose: no checkpoint fits, or a restart after this job's own
	 * attempts (one may have died in its first save). The job's first
	 * attempt with no checkpoint leaves it unset: the trainer then refuses
	 * a CKPT_DIR holding only incomplete steps from before the job (a cut
	 * import) rather than train from random weights. */
	e->set_resume = strcmp(j->ckpt_tool, "none") != 0 && (j->resume[0] || j->fresh_chosen || j->attempt > 0);
	/* the marks, for the trainer's retention: a marked checkpoint takes
	 * no slot, so it never pushes out a good older one (only identities
	 * as llmt_ckpt_id writes them: the ledger is the user's file) */
	for (int i = 0; i < j->h->nbad; i++) {
		size_t u = strlen(e->ckpt_bad);
		if (llmt_ckpt_id_ok(j->h->bad[i].id) && !llmt_ckpt_id_in(e->ckpt_bad, j->h->bad[i].id))
			snprintf(e->ckpt_bad + u, sizeof e->ckpt_bad - u, "%s%s", u ? "," : "", j->h->bad[i].id);
	}
	if (j->dp_now > 0 && j->dp_now != j->pol.dp) {
		snprintf(e->dp, sizeof e->dp, "%d", j->dp_now);
		snprintf(e->batch_dp, sizeof e->batch_dp, "%d", j->pol.dp);
	}
	j->interval[0] = '\0';
	if (j->site->auto_interval) {
		int nalloc = j->site->nalloc;
		double prior = j->o->mtbf > 0 ? j->o->mtbf : 6144.0 * 3600 / (nalloc > 0 ? nalloc : 1);
		double m = wr_mtbf_estimate(j->h->failure_time_s + (now - j->run_start), j->h->failures,
		                            prior);
		double step_s = wr_median(j->st.v, j->st.n);
		if (ckpt_cost_s > 0) {
			double t = wr_daly_interval(ckpt_cost_s, m);
			if (step_s > 0)
				snprintf(j->interval, sizeof j->interval, "%ld", wr_interval_steps(t, step_s));
			else
				snprintf(j->interval, sizeof j->interval, "%.0fs", t < 1 ? 1 : t);
		}
		e->ckpt_cost_s = ckpt_cost_s;
		e->mtbf_s = m;
	}
	snprintf(e->interval, sizeof e->interval, "%s", j->interval);
}

void wr_job_launch_cfg(const struct wr_job *j, struct wr_launch *lc)
{
	bool custom = j->excluded.n > 0 || j->ntasks > 0;
	int all = j->ntasks ? j->ntasks : j->nodes_step * j->site->tasks_per_node;
	*lc = (struct wr_launch){
		.srun = j->o->srun, .cmd = j->o->cmd, .exclude = &j->excluded,
		.nodes = custom ? j->nodes_step : 0, .ntasks = custom ? all : 0,
		.direct = !j->site->in_slurm,
		/* a killed step may hold its CPUs until a dead node is declared
		 * down or a restarted slurmctld learns it ended: every step
		 * shares, so the next never waits */
		.overlap = true, .name = WR_STEP_NAME,
	};
}

int wr_job_nranks(const struct wr_job *j, const struct wr_launch *lc, int world_size)
{
	int n = lc->ntasks > 0 ? lc->ntasks : (j->site->in_slurm ? j->site->ntasks_job : world_size);
	return n < 1 ? 1 : n;
}

bool wr_job_has_spare(const struct wr_job *j)
{
	int usable = 0;
	for (int i = 0; i < j->site->nalloc; i++)
		usable += !wr_nodes_has(&j->excluded, j->site->alloc[i]);
	return j->site->nalloc > 0 && usable > j->nodes_step;
}

void wr_job_watch_cfg(const struct wr_job *j, int nranks, struct wr_watch_cfg *wc)
{
	const struct opts *o = j->o;
	*wc = (struct wr_watch_cfg){
		.hb_dir = j->hb_dir, .nranks = nranks,
		.hang = { .k = o->hang_k, .floor_s = o->hang_min, .cap_s = o->hang_max,
		          .startup_s = o->hang_startup, .pause_cap_s = 10 * o->hang_max },
		.save = { .factor = o->save_factor, .floor_s = o->save_min, .cap_s = 10 * o->hang_max },
		.progress_from_output = o->progress_out, .straggler_factor = o->strag_factor,
		.straggler_min_s = o->strag_min, .stuck_margin_s = j->stuck_margin_s,
		.straggler_steps = (long)o->strag_steps, .straggler_spare = wr_job_has_spare(j),
		.total_steps = wr_cmd_opt(o->cmd, "--steps", 0), .ckpt_dir = o->ckpt_dir,
		.rate_every_s = 60, .kill_grace_s = 15, .preempt_grace_s = o->grace, .tick_s = o->tick,
		.ledger = j->led, .attempt = j->attempt, .resume_step = j->resume_step,
		.sig_fd = j->sig_fd, .nodelist = j->site->nodelist, .sinfo = "sinfo",
		.verbose = o->verbose, .live = j->live,
	};
}

bool wr_job_wants_node_states(const struct wr_job *j, const struct wr_ending *e, int code)
{
	return j->site->in_slurm && (code != 0 || e->hung);
}

bool wr_job_must_wait_nodes(const struct wr_job *j, const struct wr_ending *e)
{
	return j->site->in_slurm && e->kill_timeout && !e->hung_node[0] && e->down_nodes.n == 0;
}

void wr_job_add_down(const struct wr_job *j, const struct wr_nodes *bad, struct wr_ending *e)
{
	for (int i = 0; i < bad->n; i++)
		if (!wr_nodes_has(&j->excluded, bad->name[i]))
			wr_nodes_add(&e->down_nodes, bad->name[i]);
}

void wr_job_record(struct wr_job *j, const struct wr_watch_out *wo, const struct wr_verdict *v)
{
	struct wr_history *h = j->h;
	/* an attempt that proved its checkpoint bad is explained: the older one is a new try */
	j->no_progress = wo->last_step > j->resume_step || j->ckpt_marked ? 0 : j->no_progress + 1;
	j->ckpt_marked = false;
	j->numeric_repeats = v->cls == WR_NUMERIC ? j->numeric_repeats + 1 : 0;
	if (h->nattempts < WR_HIST_MAX)
		h->attempts[h->nattempts++] = (struct wr_attempt){
			wo->t_launch, wo->t_first_step, wo->t_end, j->resume_step, wo->last_step,
			wo->step_s, wo->ckpt_s, v->cls, j->site->run
		};
	if (v->cls == WR_DONE)
		return;
	if (h->npast < WR_HIST_MAX) {
		h->past[h->npast].cls = v->cls;
		snprintf(h->past[h->npast].node, WR_NODE_LEN, "%s", v->node);
		h->npast++;
	}
	if (v->cls != WR_PREEMPTED)
		h->failures++;
}

void wr_job_state(const struct wr_job *j, const struct wr_verdict *v, const struct wr_watch_out *wo,
                  int code, long sdc_step, double now, struct wr_state *s)
{
	const struct wr_site *site = j->site;
	int in_alloc = 0;
	for (int i = 0; i < site->nalloc; i++)
		in_alloc += wr_nodes_has(&j->excluded, site->alloc[i]);
	*s = (struct wr_state){
		.now = now, .restarts = j->h->restarts, .restart_times = j->h->restart_times,
		.nrestart_times = j->h->nrestart_times, .no_progress = j->no_progress,
		.numeric_repeats = j->numeric_repeats,
		.fail_step = v->cls == WR_SDC && sdc_step >= 0 ? sdc_step
		           : v->cls == WR_NUMERIC ? wo->last_step + 1 /* the step being computed */
		           : wo->last_step,
		.exit_code = code, .nodes_alloc = site->nalloc,
		.nodes_step = site->nalloc > 0 ? j->nodes_step : 1,
		.excluded = &j->excluded, .excluded_in_alloc = in_alloc,
	};
}

enum wr_next wr_job_apply(struct wr_job *j, const struct wr_verdict *v, const struct wr_action *a,
                          double now)
{
	struct wr_history *h = j->h;
	if (a->counts) {
		h->restarts++;
		if (h->nrestart_times < WR_HIST_MAX)
			h->restart_times[h->nrestart_times++] = now;
	}
	j->attempt++;
	if (a->act != ACT_STOP && v->cls != WR_DONE && h->npast > 0)
		h->past[h->npast - 1].restarted = true;   /* the ending wr_job_record kept */
	if (a->act == ACT_STOP) {
		j->exit_code = a->exit_code;
		return WR_NEXT_STOP;
	}
	j->excluded = a->exclude;
	if (a->act != ACT_RESTART)
		return WR_NEXT_REQUEUE;
	wr_job_layout(j, a);
	if (a->max_resume_step >= 0 || v->cls == WR_NUMERIC) {
		j->max_resume = a->max_resume_step;
		j->skip_until = a->skip_until_step;
		j->rollback_from = -1;
	}
	if (a->need_agree)
		j->need_agree = true;
	return WR_NEXT_RESTART;
}

void wr_job_layout(struct wr_job *j, const struct wr_action *a)
{
	j->excluded = a->exclude;
	if (a->act != ACT_RESTART)
		return;
	if (a->dp > 0)
		j->dp_now = a->dp;
	if (j->site->nalloc > 0) {
		j->nodes_step = a->nodes;
		if (a->ntasks != j->nodes_step * j->site->tasks_per_node || j->ntasks > 0 ||
		    j->excluded.n > 0)
			j->ntasks = a->ntasks;
	}
}

int wr_job_requeue_failed_code(int code)
{
	return code == 0 ? LLMT_EXIT_SOFTWARE : (code < 128 ? code : LLMT_EXIT_SOFTWARE);
}

/* node, or its NAME of NAME.domain, as an allocation name; false if none */
static bool known_node(const struct wr_site *s, char *node, size_t len)
{
	if (!*node || s->nalloc <= 0)
		return true;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < s->nalloc; i++) {
			size_t n = strlen(s->alloc[i]);
			if (pass == 0 ? strcmp(node, s->alloc[i]) == 0 : strncmp(node, s->alloc[i], n) == 0 && node[n] == '.') {
				snprintf(node, len, "%s", s->alloc[i]);
				return true;
			}
		}
	return false;
}

int wr_job_known_nodes(const struct wr_site *s, struct wr_ending *e)
{
	char *one[] = { e->hung_node, e->stuck_node, e->straggler_node };
	int dropped = 0;
	for (size_t k = 0; k < sizeof one / sizeof one[0]; k++)
		if (!known_node(s, one[k], WR_NODE_LEN)) {
			one[k][0] = '\0';
			dropped++;
		}
	struct wr_nodes keep = { 0 };
	for (int i = 0; i < e->sdc_suspects.n; i++) {
		char nm[WR_NODE_LEN];
		snprintf(nm, sizeof nm, "%s", e->sdc_suspects.name[i]);
		if (known_node(s, nm, sizeof nm))
			wr_nodes_add(&keep, nm);
		else
			dropped++;
	}
	e->sdc_suspects = keep;
	return dropped;
}
