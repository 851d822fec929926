/* train.c: the training loop of one rank (see train.h). Every decision
 * that must be the same on all ranks (skip, stop, checkpoint, SDC) is made
 * from values all ranks share through one collective, so ranks never
 * disagree and no rank waits in a collective the others left. */
#include "train.h"
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include "llmt/exitcodes.h"
#include "gpu/bridge.h"
#include "memory/memest.h"
#include "schedule.h"
#include "train_int.h"
#include "resilience/watchdog.h"

static volatile sig_atomic_t g_signal;

static void on_signal(int sig)
{
	g_signal = sig;
}

void llmt_train_defaults(llmt_train_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->steps = 100;
	o->B = 4;
	o->T = 64;
	o->A = 1;
	o->recompute_layers = -1;
	o->lr = 3e-4;
	o->min_lr = -1; /* set to lr/10 by the caller when negative */
	o->warmup = 0;
	o->adamw.beta1 = 0.9;
	o->adamw.beta2 = 0.95;
	o->adamw.eps = 1e-8;
	o->adamw.weight_decay = 0.1;
	o->adamw.grad_clip = 1.0;
	o->seed = 1337;
	o->mtbf_s = 4 * 3600;
	o->ckpt_keep = 3;
	o->prec = LLMT_BF16;
	o->sdc_interval = 100;
	o->max_bad_steps = 3;
	o->spike_factor = 3.0;
	o->eval_batches = 4;
}

int llmt_parse_interval(const char *s, llmt_train_opts *o)
{
	char *end;
	double v;

	o->ckpt_steps = 0;
	o->ckpt_seconds = 0;
	o->ckpt_auto = 0;
	if (!strcmp(s, "auto")) {
		o->ckpt_auto = 1;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v >= 0) || v > 1e9)
		return -1;
	if (!*end) {
		if (v != floor(v))
			return -1;
		o->ckpt_steps = (long)v;
		return 0;
	}
	if (end[1])
		return -1;
	switch (*end) {
	case 's': o->ckpt_seconds = v; break;
	case 'm': o->ckpt_seconds = v * 60; break;
	case 'h': o->ckpt_seconds = v * 3600; break;
	default: return -1;
	}
	return o->ckpt_seconds > 0 ? 0 : -1;
}

double llmt_auto_interval(double stall, double write_time, double mtbf)
{
	double iv = stall > 0 ? sqrt(2 * stall * mtbf) : 600;

	return iv < 2 * write_time ? 2 * write_time : iv;
}

int llmt_guard_bad(double loss, double norm, double loss_ema, long good_steps, double factor)
{
	if (!isfinite(loss) || !isfinite(norm))
		return 1;
	return good_steps > 0 && factor > 0 && loss > factor * loss_ema;
}

static int fetch(void *vt, int micro, int32_t *in, int32_t *tg, int32_t *seg)
{
	trainer *t = vt;
	llmt_grid *l = &t->p->l;
	double t0 = t->timing ? llmt_tr_now() : 0;
	int rc = llmt_loader_micro_seg(t->cur, t->base, t->G, l->dp, l->dp_rank, micro, t->o->B,
		in, tg, seg, t->err, sizeof(t->err));

	if (t->timing)
		t->data_s += llmt_tr_now() - t0;
	if (rc)
		fprintf(stderr, "llm-train: rank %d: %s\n", l->rank, t->err);
	return rc;
}

/* ---- per-rank timings (steptime.h) --------------------------------------------- */
/* What the step's parts are measured from: each group's wait and the data
 * time so far, and the wall clock at the start. */
typedef struct {
	double wait[LLMT_ST_NGROUPS], data;
	long long start_ns;
} step_mark;

static void step_begin(trainer *t, step_mark *m)
{
	llmt_parallel *p = t->p;
	struct timespec ts;

	if (!t->timing)
		return;
	m->wait[LLMT_ST_TP] = llmt_comm_wait_s(p->tp_comm);
	m->wait[LLMT_ST_PP] = llmt_comm_wait_s(p->pp_comm);
	m->wait[LLMT_ST_DP] = llmt_comm_wait_s(p->dp_comm);
	m->wait[LLMT_ST_ALL] = llmt_comm_wait_s(p->all);
	m->data = t->data_s;
	clock_gettime(CLOCK_REALTIME, &ts);
	m->start_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Account the step that began at m (step_s long, ckpt_s of it in
 * checkpoint calls) and hand the timing line to the heartbeat. */
static void step_end(trainer *t, const step_mark *m, double step_s, double ckpt_s)
{
	step_mark now;
	llmt_st_parts p = { .step = step_s, .ckpt = ckpt_s };
	char line[320];

	if (!t->timing)
		return;
	step_begin(t, &now);
	for (int g = 0; g < LLMT_ST_NGROUPS; g++)
		p.wait[g] = now.wait[g] - m->wait[g];
	p.data = now.data - m->data;
	llmt_st_add(&t->times, p, m->start_ns);
	if (llmt_st_format(line, sizeof(line), &t->times) > 0)
		llmt_hb_set_timing(line);
}

/* Seconds this rank has waited in all its groups so far (0 with the
 * timings off: the compute time is then the wall time). */
static double waits_s(const trainer *t)
{
	const llmt_parallel *p = t->p;

	return llmt_comm_wait_s(p->tp_comm) + llmt_comm_wait_s(p->pp_comm) +
		llmt_comm_wait_s(p->dp_comm) + llmt_comm_wait_s(p->all);
}

/* ---- the loop -------------------------------------------------------------- */
static void inject_grad_faults(trainer *t, long stepno, double *my_loss)
{
	llmt_grid *l = &t->p->l;
	size_t at;

	if (llmt_fault_at(&t->faults, LLMT_FAULT_NAN, stepno, l->rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault nan@%ld\n", l->rank, stepno);
		*my_loss = NAN;
		if (t->opt->ops->poke(t->opt, LLMT_POKE_NAN, &at))
			fprintf(stderr, "llm-train: rank %d: the nan fault could not reach the gradients\n", l->rank);
	}
	if (llmt_fault_at(&t->faults, LLMT_FAULT_SPIKE, stepno, l->rank)) {
		fprintf(stderr, "llm-train: rank %d: injected fault spike@%ld\n", l->rank, stepno);
		*my_loss *= 1000;
		if (t->opt->ops->poke(t->opt, LLMT_POKE_SPIKE, &at))
			fprintf(stderr, "llm-train: rank %d: the spike fault could not reach the gradients\n", l->rank);
	}
}

/* a fault that flips a bit through the optimizer's poke, when due on this
 * rank: bitflip (after the update: a replica diverges) or masterflip
 * (before it: a memory fault at rest in the fp32 master share, which the
 * share check must see); miss says what it could not reach */
static void inject_flip(trainer *t, long stepno, llmt_fault_kind kind, llmt_poke what,
	const char *name, const char *miss)
{
	llmt_grid *l = &t->p->l;
	size_t at;

	if (!llmt_fault_at(&t->faults, kind, stepno, l->rank))
		return;
	if (t->opt->ops->poke(t->opt, what, &at))
		fprintf(stderr, "llm-train: rank %d: the %s fault could not reach %s\n", l->rank, name, miss);
	else
		fprintf(stderr, "llm-train: rank %d: injected fault %s@%ld (element %zu)\n", l->rank, name, stepno, at);
}

static int ckpt_due_time(trainer *t, double now)
{
	const llmt_train_opts *o = t->o;
	double iv;

	if (!t->w)
		return 0;
	if (o->ckpt_seconds > 0)
		iv = o->ckpt_seconds;
	else if (o->ckpt_auto) {
		if (t->save_start > 0) { /* notice when the background write ends */
			char e2[256];
			if (llmt_ckpt_poll(t->w, e2, sizeof(e2)) != 0) {
				t->write_time = now - t->save_start;
				t->save_start = 0;
			}
		}
		iv = llmt_auto_interval(t->save_stall, t->write_time, o->mtbf_s);
	} else
		return 0;
	return now - t->last_save_time >= iv;
}

/* Instruction data: the trained targets of the global batch at base (the
 * same count on every rank: each reads the masks of all G samples), into
 * *n; the loss and gradient of each micro-batch (a sum over its trained
 * tokens divided by B*T) are scaled by B*T / *n, so that the batch's loss
 * is their mean (cross-entropy with ignore_index over the whole batch). */
static int trained_scale(trainer *t, uint64_t base, uint64_t *n, double *scale)
{
	int rc = llmt_loader_trained(t->cur, base, (uint64_t)t->G, n, t->err, sizeof(t->err));

	if (rc)
		fprintf(stderr, "llm-train: rank %d: %s\n", t->p->l.rank, t->err);
	*scale = *n ? (double)t->o->B * t->o->T / (double)*n : 0;
	return rc;
}

/* Mean loss over the first eval_batches global batches of the validation
 * data (the same batches every time, so the numbers compare); over their
 * trained tokens for instruction data. */
static int evaluate(trainer *t, long stepno)
{
	const llmt_train_opts *o = t->o;
	llmt_grid *l = &t->p->l;
	double sum = 0, part, v, sc;
	uint64_t n, ntr = 0;
	int rc = 0;

	llmt_hb_set(t->st.step, LLMT_HB_TRAIN, 0);
	t->cur = &t->val;
	t->pl.packed = t->val.masked;
	for (int b = 0; b < o->eval_batches && !rc; b++) {
		t->base = (uint64_t)b * (uint64_t)t->G;
		if (t->val.masked && (rc = trained_scale(t, t->base, &n, &sc)))
			break;
		ntr += t->val.masked ? n : 0;
		rc = llmt_pipeline_forward(&t->pl, fetch, t, &part);
		sum += part;
	}
	t->cur = &t->ld;
	t->pl.packed = t->ld.masked;
	if (rc) {
		llmt_comm_abort(t->p->world, rc < 0 ? LLMT_EXIT_TRANSIENT : rc);
		return rc < 0 ? LLMT_EXIT_TRANSIENT : rc;
	}
	if (t->val.masked) /* the micro-batch losses are sums over B*T */
		sum = ntr ? sum * o->B * o->T / (double)ntr : 0;
	else
		sum /= (double)o->eval_batches * o->A * l->dp;
	v = l->pp_rank == l->pp - 1 && l->tp_rank == 0 ? sum : 0;
	if (l->world > 1 && llmt_comm_allreduce_sum_f64(t->p->all, &v, 1))
		return LLMT_EXIT_TRANSIENT;
	if (l->rank == 0) {
		if (!o->quiet)
			printf("step %ld/%ld val_loss %.6f\n", stepno, o->steps, v);
		if (t->evalf) {
			if (isfinite(v))
				fprintf(t->evalf, "{\"step\":%ld,\"val_loss\":%.9g}\n", stepno, v);
			else
				fprintf(t->evalf, "{\"step\":%ld,\"val_loss\":null}\n", stepno);
			fflush(t->evalf);
		}
	}
	return 0;
}

/* The step's forward and backward passes over the pipeline: the loss
 * scale (packed samples: 1 / the global batch's trained targets, counted
 * in *ntrained), the slow fault. 0, or the exit code (all ranks aborted). */
static int passes(trainer *t, long stepno, uint64_t *ntrained, double *scale, double *loss_sum)
{
	const llmt_train_opts *o = t->o;
	llmt_grid *l = &t->p->l;
	double comp0;
	int rc;

	t->base = (uint64_t)t->st.pos;
	t->pl.packed = t->ld.masked;
	if (t->ld.masked && (rc = trained_scale(t, t->base, ntrained, scale))) {
		llmt_comm_abort(t->p->world, rc);
		return rc;
	}
	comp0 = llmt_tr_now() - waits_s(t);
	rc = llmt_pipeline_run(&t->pl, fetch, t, t->ld.masked ? (float)*scale : 1.0f / (float)(o->A * l->dp),
		loss_sum);
	if (!rc) /* the slow fault: this rank's compute takes factor x as long */
		llmt_faults_slow_sleep(&t->faults, stepno, l->rank, llmt_tr_now() - waits_s(t) - comp0);
	if (rc) {
		fprintf(stderr, "llm-train: rank %d: step %ld failed (%s)\n", l->rank, stepno,
			rc < 0 ? "communication" : "data");
		llmt_comm_abort(t->p->world, rc < 0 ? LLMT_EXIT_TRANSIENT : rc);
		return rc < 0 ? LLMT_EXIT_TRANSIENT : rc;
	}
	return 0;
}

/* The optimizer update, or the step skipped when the guard finds the loss
 * or gradient bad (*bad). 0, or 75 (all ranks aborted). */
static int update(trainer *t, long stepno, double loss, double norm, double lr, int *bad)
{
	const llmt_train_opts *o = t->o;
	llmt_grid *l = &t->p->l;

	*bad = llmt_guard_bad(loss, norm, t->st.loss_ema, (long)t->st.good_steps, o->spike_factor);
	if (!*bad) {
		if (t->opt->ops->step(t->opt, lr, norm)) {
			fprintf(stderr, "llm-train: rank %d: step %ld: optimizer update failed\n", l->rank, stepno);
			llmt_comm_abort(t->p->world, LLMT_EXIT_TRANSIENT);
			return LLMT_EXIT_TRANSIENT;
		}
		t->st.opt_t = t->opt->t;
		t->st.bad_run = 0;
		t->st.loss_ema = t->st.good_steps ? 0.9 * t->st.loss_ema + 0.1 * loss : loss;
		t->st.good_steps++;
	} else {
		t->st.bad_run++;
		if (l->rank == 0)
			fprintf(stderr, "llm-train: step %ld: %s (loss %g, grad norm %g): update skipped (%lld in a row, limit %d)\n",
				stepno, isfinite(loss) && isfinite(norm) ? "loss spike" : "non-finite loss or gradient",
				loss, norm, (long long)t->st.bad_run, o->max_bad_steps);
	}
	return 0;
}

/* Rank 0's metrics line and progress line of a step. */
static void report_step(trainer *t, const llmt_metrics *mt, int due)
{
	if (t->metrics && llmt_metrics_write(t->metrics, mt)) {
		fclose(t->metrics); /* reported once; training goes on */
		t->metrics = NULL;
	}
	if (!t->o->quiet)
		printf("step %ld/%ld loss %.6f norm %.4f lr %.3e %.0f tok/s%s%s\n", mt->step, t->o->steps,
			mt->loss, mt->grad_norm, mt->lr, mt->tokens_per_s, mt->skipped ? " SKIPPED" : "", due ? " ckpt" : "");
	fflush(stdout);
}

/* The step's one all-reduce (v[0] this rank's loss share): v[1] a
 * preemption signal, v[2] a checkpoint due by time, v[3] the master-share
 * mismatches, v[4] ranks whose share check could not run (a device error,
 * the fault sharefail). The share is checked against its bf16 weights and
 * fp32 copies before the update consumes it, with the SDC check on
 * (--sdc-interval, dp > 1). 0, or the code every rank ends with: 75 for a
 * check that could not run, the verdict's for a share that no longer
 * matches the weights it gave the replicas (never updated from, nor saved). */
static int step_reduce(trainer *t, long stepno, double *v)
{
	const llmt_grid *l = &t->p->l;
	size_t bad = 0;
	int check = t->o->sdc_interval > 0 && l->dp > 1;

	v[1] = g_signal ? 1 : 0;
	v[2] = l->rank == 0 && ckpt_due_time(t, llmt_tr_now());
	v[4] = check && (llmt_fault_at(&t->faults, LLMT_FAULT_SHAREFAIL, stepno, l->rank) ||
		t->opt->ops->share_check(t->opt, &bad));
	if (v[4] > 0)
		fprintf(stderr, "llm-train: rank %d: step %ld: the master-share check could not run\n", l->rank, stepno);
	v[3] = v[4] > 0 ? 0 : (double)bad;
	if (l->world > 1 && llmt_comm_allreduce_sum_f64(t->p->all, v, 5))
		return LLMT_EXIT_TRANSIENT;
	if (v[4] > 0) {
		if (l->rank == 0)
			fprintf(stderr, "llm-train: step %ld: the master-share check failed on %g rank(s): exit 75\n",
				stepno, v[4]);
		return LLMT_EXIT_TRANSIENT;
	}
	if (v[3] > 0)
		return llmt_sdc_share_verdict(t->p, (uint64_t)bad, (long)t->st.step, t->hosts,
			t->o->ckpt_dir ? t->o->ckpt_dir : t->o->run_dir);
	return 0;
}

static int loop(trainer *t)
{
	const llmt_train_opts *o = t->o;
	llmt_grid *l = &t->p->l;
	llmt_schedule sch = { o->lr, o->min_lr, o->warmup, o->steps };
	int first_stage_loss = l->pp_rank == l->pp - 1 && l->tp_rank == 0;
	double fpt = llmt_config_flops_per_token(&t->cfg, o->T), last_step_s = 0, stall;
	/* the CPU estimate says nothing of a GPU's peak */
	double peak = o->peak_cpu_estimate && strcmp(t->opt->where, "host") ? 0 : o->peak_gflops;
	int rc = 0;

	t->last_save_time = llmt_tr_now();
	while (t->st.step < o->steps) {
		long stepno = (long)t->st.step + 1;
		double t0 = llmt_tr_now(), loss_sum = 0, norm = 0, my_loss, v[5], lr, comm_s, ckpt_s = 0;
		double scale = 1.0 / (o->A * l->dp);
		uint64_t ntrained = (uint64_t)t->G * (uint64_t)o->T;
		int bad, sync_ckpt, due;
		step_mark mark;

		step_begin(t, &mark);
		llmt_hb_set(t->st.step, LLMT_HB_TRAIN, last_step_s);
		llmt_wd_arm(last_step_s > 0 ? llmt_wd_timeout() : 0); /* not in the first step: one-time costs */
		llmt_faults_fire_process(&t->faults, stepno, l->rank);
		llmt_faults_fire_node(&t->faults, stepno, l->rank);
		llmt_model_zero_grad(t->m);
		if ((rc = passes(t, stepno, &ntrained, &scale, &loss_sum)))
			return rc;
		/* a save begun last step: its snapshot copy overlapped this
		 * step's passes; hand it to the writer before the update */
		if (t->save_pending) {
			if ((rc = llmt_tr_save_finish(t, &stall)))
				break;
			ckpt_s += stall;
		}
		my_loss = !first_stage_loss ? 0 : t->ld.masked ? loss_sum * scale : loss_sum / o->A / l->dp;
		inject_grad_faults(t, stepno, &my_loss);
		inject_flip(t, stepno, LLMT_FAULT_MASTERFLIP, LLMT_POKE_MASTERFLIP, "masterflip",
			"a master share (dp 1 or fp32)");
		if (t->opt->ops->finish(t->opt, &norm)) {
			fprintf(stderr, "llm-train: rank %d: step %ld: gradient reduction failed\n", l->rank, stepno);
			llmt_comm_abort(t->p->world, LLMT_EXIT_TRANSIENT);
			return LLMT_EXIT_TRANSIENT;
		}
		v[0] = my_loss;
		if ((rc = step_reduce(t, stepno, v)))
			return rc;
		lr = llmt_schedule_lr(&sch, stepno - 1);
		if ((rc = update(t, stepno, v[0], norm, lr, &bad)))
			return rc;
		comm_s = t->pl.comm_s + t->opt->comm_s; /* p2p, reduce-scatter, norm, all-gather */
		inject_flip(t, stepno, LLMT_FAULT_BITFLIP, LLMT_POKE_BITFLIP, "bitflip", "the weights");
		t->st.step = stepno;
		t->st.pos += t->G;
		if (o->sdc_interval > 0 && l->dp > 1 && stepno % o->sdc_interval == 0 && (rc = llmt_tr_sdc_check(t)))
			break;
		if (t->st.bad_run >= o->max_bad_steps) {
			if (l->rank == 0)
				fprintf(stderr, "llm-train: %lld bad steps in a row: numerical fault persists, roll back further\n",
					(long long)t->st.bad_run);
			rc = LLMT_EXIT_ROLLBACK;
		}
		sync_ckpt = v[1] > 0 || stepno == o->steps;
		due = !rc && t->w && (sync_ckpt || v[2] > 0 || (o->ckpt_steps > 0 && stepno % o->ckpt_steps == 0));
		if (due) {
			if (l->dp > 1 && (rc = llmt_tr_sdc_check(t)))
				break; /* never save replicas that disagree */
			rc = llmt_tr_save(t, sync_ckpt, &stall);
			ckpt_s += stall;
		}
		last_step_s = llmt_tr_now() - t0;
		step_end(t, &mark, last_step_s, ckpt_s);
		if (l->rank == 0) {
			double tps = (double)ntrained / last_step_s; /* trained tokens */
			llmt_metrics mt = { stepno, v[0], norm, lr, tps,
				peak > 0 ? fpt * ((double)t->G * o->T / last_step_s) / (peak * 1e9 * l->world) : NAN,
				last_step_s, comm_s, ckpt_s, bad };
			report_step(t, &mt, due);
		}
		if (!rc && o->eval_interval > 0 && (stepno % o->eval_interval == 0 || stepno == o->steps))
			rc = evaluate(t, stepno);
		llmt_hb_set(t->st.step, LLMT_HB_TRAIN, last_step_s);
		if (rc)
			break;
		if (v[1] > 0 && stepno < o->steps) {
			if (l->rank == 0 && t->w)
				printf("llm-train: preempted: checkpoint of step %ld written, exiting for requeue\n", stepno);
			else if (l->rank == 0)
				printf("llm-train: preempted at step %ld: no checkpoint dir, nothing saved; exiting for requeue\n", stepno);
			return LLMT_EXIT_REQUEUE;
		}
	}
	return rc;
}

/* Peak resident memory of every rank against the analytic estimate, on
 * rank 0's stdout (collective): every rank's (or the largest one's past 8
 * ranks) host peak, and for a GPU rank also the device estimate. */
static void report_memory(trainer *t)
{
	llmt_grid *l = &t->p->l;
	llmt_memest e;
	llmt_memest_host h;
	int dev = llmt_dev_model(t->m) != 0, devopt = dev && !strcmp(t->opt->where, "device");
	size_t n = llmt_model_nparams(t->m);
	double mine[2], *all = malloc(sizeof(double) * 2 * (size_t)l->world);

	if (!all)
		return;
	llmt_memory_estimate(&t->cfg, l, n, t->o->B, t->o->T, t->o->A, t->o->prec == LLMT_BF16,
		t->w != NULL, llmt_model_blocked_attn(t->m) ? omp_get_max_threads() : 0,
		LLMT_RC_PLAN(t->o->recompute, t->o->recompute_layers), &e);
	llmt_memory_estimate_gpu_host(&t->cfg, l, n, t->o->B, t->o->T, devopt, t->w != NULL,
		t->resume_from != NULL, &h);
	mine[0] = llmt_memory_peak();
	mine[1] = dev ? h.total : e.total;
	if (!llmt_comm_allgather_bytes(t->p->all, mine, all, sizeof(mine)) && l->rank == 0) {
		int top = 0;
		for (int r = 1; r < l->world; r++)
			if (all[2 * r] > all[2 * top])
				top = r;
		for (int r = 0; r < l->world; r++)
			if (l->world <= 8 || r == top)
				printf("llm-train: memory rank %d: %speak %.1f MiB (VmHWM), estimate %.1f MiB without runtime overhead\n",
					r, dev ? "host " : "", all[2 * r] / 1048576, all[2 * r + 1] / 1048576);
		if (!dev)
			printf("llm-train: memory estimate of rank 0: params %.1f, optimizer %.1f, activations %.1f, scratch %.1f, pipeline %.1f, comm %.1f, snapshot %.1f MiB\n",
				e.params / 1048576, e.optimizer / 1048576, e.activations / 1048576, e.scratch / 1048576,
				e.pipeline / 1048576, e.comm / 1048576, e.snapshot / 1048576);
		if (dev) {
			llmt_memest_gpu g;
			llmt_memory_estimate_gpu(&t->cfg, l, n, t->o->B, t->o->T, t->o->A, devopt,
				LLMT_RC_PLAN(t->o->recompute, t->o->recompute_layers), &g);
			printf("llm-train: host memory estimate of rank 0: mirror %.1f, snapshot %.1f (pinned) + %.1f (writer), resume %.1f, staging %.1f MiB\n",
				h.mirror / 1048576, h.snapshot / 1048576, h.writer / 1048576, h.load / 1048576,
				h.staging / 1048576);
			printf("llm-train: device memory estimate of rank 0: %.1f MiB: params %.1f, optimizer %.1f, activations %.1f, scratch %.1f, workspace %.1f MiB\n",
				g.total / 1048576, g.params / 1048576, g.optimizer / 1048576,
				g.activations / 1048576, g.scratch / 1048576, g.workspace / 1048576);
		}
	}
	free(all);
}

int llmt_train(const llmt_train_opts *o, llmt_parallel *p)
{
	trainer *t = calloc(1, sizeof(*t));
	struct sigaction sa;
	int rc;

	if (!t)
		return LLMT_EXIT_SOFTWARE;
	t->o = o;
	t->p = p;
	t->timing = !(getenv("LLM_TRAIN_STEP_TIMINGS") && !strcmp(getenv("LLM_TRAIN_STEP_TIMINGS"), "0"));
	llmt_comm_set_timing(t->timing);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (llmt_faults_from_env(&t->faults, t->err, sizeof(t->err))) {
		if (p->l.rank == 0)
			fprintf(stderr, "llm-train: %s\n", t->err);
		rc = LLMT_EXIT_USAGE;
	} else {
		rc = llmt_tr_setup(t);
	}
	if (!rc)
		rc = loop(t);
	llmt_wd_arm(0); /* the final writes: I/O */
	if (t->w) {
		int r2 = llmt_ckpt_wait(t->w, t->err, sizeof(t->err));
		if (r2 && !rc) {
			fprintf(stderr, "llm-train: rank %d: %s\n", p->l.rank, t->err);
			rc = r2;
		}
		llmt_ckpt_writer_free(t->w);
	}
	if (rc == 0 && t->m && !o->quiet)
		report_memory(t);
	llmt_hb_stop(rc == 0 ? LLMT_HB_DONE : LLMT_HB_TRAIN);
	if (t->metrics)
		fclose(t->metrics);
	if (t->m) {
		llmt_pipeline_free(&t->pl);
		if (t->opt)
			t->opt->ops->free(t->opt);
		llmt_model_free(t->m);
	}
	if (t->ld.shards)
		llmt_loader_close(&t->ld);
	if (t->val.shards)
		llmt_loader_close(&t->val);
	if (t->evalf)
		fclose(t->evalf);
	free(t->hosts);
	free(t);
	return rc;
}
