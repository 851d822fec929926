/* train_setup.c: what the training loop needs before its first step
 * (config, data, checkpoint dir, heartbeat, model, optimizer, pipeline,
 * starting state) and the resume (the save: train_save.c). Every
 * outcome goes through an all-rank agreement, so no rank proceeds alone. */
#include "train_int.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "llmt/env.h"
#include "llmt/exitcodes.h"
#include "llmt/heartbeat.h"
#include "llmt/owndir.h"
#include "gpu/bridge.h"
#include "resilience/watchdog.h"

double llmt_tr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The largest code over all ranks: every rank leaves on the same code. */
int llmt_tr_agree(llmt_parallel *p, int rc)
{
	double v = rc;

	if (llmt_comm_allreduce_max_f64(p->all, &v, 1))
		return LLMT_EXIT_TRANSIENT;
	return (int)v;
}

static int mkdir_p(const char *path, char *err, size_t errlen)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(buf, 0700) && errno != EEXIST)
			goto bad;
		*s = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "%.900s: %s", buf, strerror(errno));
	return LLMT_EXIT_IO;
}

/* 1 when checkpoint c holds weights only (llm-train import): no training
 * state, so a run starts from its weights at step 0, optimizer fresh */
static int weights_only(const llmt_ckpt *c)
{
	json_t *o = json_loads(llmt_ckpt_train_json(c), 0, NULL);
	int r = json_is_true(json_object_get(o, "weights_only"));

	json_decref(o);
	return r;
}

/* Starting from an import (weights only) with one's own --model, whose
 * max_seq may exceed the import's (config.json's max_position_embeddings,
 * or its sliding window): --seq within the import's, as --init-from
 * checks it (llmt_hf_check_seq). 0, or 64 with err on rank 0. */
static int import_seq_check(trainer *t, const llmt_ckpt *c)
{
	llmt_config ic;

	if (llmt_ckpt_config(c, &ic) != 0 || t->o->T <= ic.max_seq)
		return 0;
	if (t->p->l.rank == 0)
		snprintf(t->err, sizeof(t->err), "--seq %d exceeds max_seq %d of this import (the source's "
			 "max_position_embeddings or sliding window)", t->o->T, ic.max_seq);
	return LLMT_EXIT_USAGE;
}

/* A resume's data error is the checkpoint's (its manifest, a shard's size
 * or checksum, the state blob): its own code, so the wrapper falls back to
 * an older checkpoint instead of stopping as for bad token data (65). */
static int ckpt_code(int rc)
{
	return rc == LLMT_EXIT_DATA ? LLMT_EXIT_BADCKPT : rc;
}

static int resume(trainer *t, const char *from)
{
	char path[4096];
	llmt_ckpt *c;
	llmt_ckpt_state cs;
	void *blob = NULL;
	size_t len = 0;
	int rc, code = 0, wonly;

	rc = llmt_ckpt_resolve(from, path, sizeof(path), t->err, sizeof(t->err));
	if (rc) {
		fprintf(stderr, "llm-train: resume from %s: %s\n", from, t->err);
		return rc;
	}
	/* a requeue runs the same command line: the checkpoint wins, said */
	if (t->p->l.rank == 0 && t->o->init_from)
		printf("llm-train: resuming from %s; --init-from %s is not used (a checkpoint exists)\n", path,
			t->o->init_from);
	c = llmt_ckpt_open(path, &code, t->err, sizeof(t->err));
	if (!c) {
		fprintf(stderr, "llm-train: resume from %s: %s\n", path, t->err);
		return ckpt_code(code ? code : LLMT_EXIT_DATA);
	}
	rc = llmt_ckpt_check_config(c, &t->cfg, t->err, sizeof(t->err));
	wonly = !rc && weights_only(c);
	if (wonly)
		rc = import_seq_check(t, c);
	if (!rc && !wonly)
		rc = llmt_ckpt_blob_get(c, "train", 0, &blob, &len, t->err, sizeof(t->err));
	if (!rc && !wonly) {
		train_state s;
		if (len != sizeof(s) || (memcpy(&s, blob, sizeof(s)), s.magic != STATE_MAGIC) || s.version != 1) {
			snprintf(t->err, sizeof(t->err), "training state blob has the wrong size or version");
			rc = LLMT_EXIT_DATA;
		} else {
			t->st = s;
		}
	}
	free(blob);
	rc = llmt_tr_agree(t->p, rc);
	if (!rc) {
		llmt_opt_state os = { 0 };
		if (t->opt->ops->load_into(t->opt, !wonly, &os)) {
			snprintf(t->err, sizeof(t->err), "out of memory for the optimizer state");
			rc = LLMT_EXIT_SOFTWARE;
		} else {
			llmt_tr_ckpt_state(t, &cs, NULL, 0, &t->st, &os);
			llmt_hb_set(0, LLMT_HB_LOAD, 0);
			rc = llmt_ckpt_load(c, &cs, t->err, sizeof(t->err));
		}
		rc = llmt_tr_agree(t->p, rc);
	}
	if (!rc) {
		if (t->opt->ops->loaded(t->opt, wonly ? 0 : (long)t->st.opt_t, !wonly)) {
			snprintf(t->err, sizeof(t->err), "cannot put the loaded state on the %s", t->opt->where);
			rc = LLMT_EXIT_TRANSIENT;
		}
		rc = llmt_tr_agree(t->p, rc);
	}
	if (rc) {
		if (t->err[0])
			fprintf(stderr, "llm-train: rank %d: resume from %s: %s\n", t->p->l.rank, path, t->err);
	} else {
		if (t->p->l.rank == 0 && wonly)
			printf("llm-train: starting from the imported weights of %s (step 0, fresh optimizer state)\n",
				path);
		else if (t->p->l.rank == 0)
			printf("llm-train: resumed from %s at step %lld (data position %lld)\n", path,
				(long long)t->st.step, (long long)t->st.pos);
		if (t->w)   /* every checksum verified: retention keeps it while we run */
			llmt_ckpt_writer_verified(t->w, path);
	}
	llmt_ckpt_close(c);
	return ckpt_code(rc);
}

int llmt_tr_sdc_check(trainer *t)
{
	const char *dir = t->o->ckpt_dir ? t->o->ckpt_dir : t->o->run_dir;

	uint64_t sum = 0;
	int rc = t->opt->ops->weights_sum(t->opt, &sum) ? LLMT_EXIT_TRANSIENT : 0;

	if ((rc = llmt_tr_agree(t->p, rc)))
		return rc;
	return llmt_sdc_check(t->p, sum, (long)t->st.step, t->hosts, dir);
}

/* The optimizer where the model lives: the device's when the GPU backend
 * took the model (bridge.h), else the host's. */
static int setup_optim(trainer *t)
{
	llmt_grid *l = &t->p->l;
	llmt_opt_env e = { &t->o->adamw, t->o->A, l->tp_rank, l->pp, l->pp_rank,
		t->cfg.tie_embeddings && l->pp > 1, l->dp > 1 ? t->p->dp_comm : NULL,
		l->pp > 1 ? t->p->pp_comm : NULL, l->world > 1 ? t->p->all : NULL };
	double v[2];

	/* one backend for all: a DP group split between a GPU and CPUs would
	 * wait in two different collectives */
	v[0] = llmt_dev_model(t->m);
	v[1] = -v[0];
	if (llmt_comm_allreduce_max_f64(t->p->all, v, 2))
		return LLMT_EXIT_TRANSIENT;
	if (v[0] != -v[1]) {
		if (l->rank == 0)
			fprintf(stderr, "llm-train: some ranks run the model on a GPU and others on the CPU "
				"(LLM_TRAIN_GPU differs between tasks): use one backend for every rank\n");
		return LLMT_EXIT_USAGE;
	}
	if (!llmt_dev_optim(t->m, &e, &t->opt))
		t->opt = llmt_trainopt_host(t->m, &e);
	return t->opt ? 0 : LLMT_EXIT_SOFTWARE;
}

static int gather_hosts(trainer *t)
{
	char me[LLMT_HOSTLEN] = { 0 };
	const char *n = getenv("SLURMD_NODENAME");

	if (n && *n)
		snprintf(me, sizeof(me), "%s", n);
	else if (gethostname(me, sizeof(me) - 1))
		snprintf(me, sizeof(me), "unknown");
	t->hosts = calloc((size_t)t->p->l.world, LLMT_HOSTLEN);
	if (!t->hosts)
		return LLMT_EXIT_SOFTWARE;
	return llmt_comm_allgather_bytes(t->p->all, me, t->hosts, LLMT_HOSTLEN) ? LLMT_EXIT_TRANSIENT : 0;
}

/* The model config, its layout and --seq (rank 0 says what is wrong). */
static int setup_config(trainer *t, const llmt_par *mp)
{
	const llmt_train_opts *o = t->o;
	char *err = t->err;
	size_t el = sizeof(t->err);
	int rc = llmt_config_load(o->model_path, &t->cfg, err, el);

	if (rc)   /* a --model that cannot be opened: 66 (EX_NOINPUT) */
		rc = rc == -2 ? LLMT_EXIT_NOINPUT : LLMT_EXIT_USAGE;
	else if (llmt_config_validate(&t->cfg, err, el))
		rc = LLMT_EXIT_USAGE;
	else if (llmt_model_check_layout(&t->cfg, mp, err, el))
		rc = LLMT_EXIT_USAGE;
	else if (o->T > t->cfg.max_seq) {
		snprintf(err, el, "--seq %d exceeds max_seq %d of %s", o->T, t->cfg.max_seq, o->model_path);
		rc = LLMT_EXIT_USAGE;
	} else if (o->init_from) {   /* a Mistral window, as an import's model.yaml caps max_seq */
		rc = llmt_hf_check_seq(o->init_from, o->T, err, el);
	}
	if (rc && t->p->l.rank == 0)
		fprintf(stderr, "llm-train: %s\n", err);
	return llmt_tr_agree(t->p, rc);
}

/* The training data and, with --eval-interval, the held-out data. */
static int setup_data(trainer *t)
{
	const llmt_train_opts *o = t->o;
	char *err = t->err;
	size_t el = sizeof(t->err);
	int rc = llmt_loader_open(&t->ld, o->data_dir, o->T, t->cfg.vocab_size, o->seed, err, el);

	if (rc)
		fprintf(stderr, "llm-train: rank %d: %s\n", t->p->l.rank, err);
	if ((rc = llmt_tr_agree(t->p, rc)))
		return rc;
	t->cur = &t->ld;
	if (o->eval_interval > 0) {
		char vd[4096];
		snprintf(vd, sizeof(vd), "%s", o->val_dir ? o->val_dir : o->data_dir);
		if (!o->val_dir)
			strncat(vd, "/val", sizeof(vd) - strlen(vd) - 1);
		rc = llmt_loader_open(&t->val, vd, o->T, t->cfg.vocab_size, 1, err, el);
		if (rc)
			fprintf(stderr, "llm-train: rank %d: validation data: %s\n", t->p->l.rank, err);
	}
	return llmt_tr_agree(t->p, rc);
}

/* What CKPT_DIR gives the start. LLM_TRAIN_RESUME unset (no wrapper):
 * continue from its newest valid checkpoint. Set but empty: a fresh start
 * the wrapper chose (e.g. no checkpoint fits a rollback); the checkpoints
 * there are kept (a save never writes into an existing step directory).
 * Only incomplete step directories there (an import or a first save cut
 * short), LLM_TRAIN_RESUME unset: never random weights in their place, 66
 * unless --init-from gives the weights. A CKPT_DIR that cannot be listed
 * (EACCES, EIO), LLM_TRAIN_RESUME unset: 74, never a fresh start. */
static int ckpt_dir_start(trainer *t)
{
	const llmt_train_opts *o = t->o;
	char *path = t->resume_path, inc[1024];
	int rank = t->p->l.rank, ninc;

	t->ckpt_gen = -1;
	if (!o->ckpt_dir || (o->resume && *o->resume))
		return 0;
	/* one listing: the newest complete step is passed on to the resume,
	 * the largest generation to the writer */
	long long gen;
	int n = llmt_ckpt_scan(o->ckpt_dir, path, sizeof(t->resume_path), inc, sizeof(inc), &ninc, &gen);
	if (n >= 0)
		t->ckpt_gen = gen;
	if (n < 0 && errno != ENOENT && errno != ENOTDIR && !o->resume) {
		/* checkpoints it cannot see are not absent ones (74: retried) */
		fprintf(stderr, "llm-train: rank %d: %s: cannot list the checkpoint directory: %s: not starting from "
			"random weights\n", rank, o->ckpt_dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (n > 0) {
		if (!o->resume)
			t->resume_from = path;
		else if (rank == 0)
			printf("llm-train: fresh start (LLM_TRAIN_RESUME empty); the checkpoints in %s (newest %s) are kept\n",
				o->ckpt_dir, path);
		return 0;
	}
	if (ninc <= 0)
		return 0;
	/* a restart by llm-train-wrap (LLM_TRAIN_ATTEMPT > 0) with
	 * LLM_TRAIN_RESUME unset (--ckpt-tool none): an earlier attempt of the
	 * run dir may have died in its first save, as the wrapper's own rule */
	const char *att = getenv(LLMT_ENV_ATTEMPT);
	int restart = att && atoi(att) > 0;
	if (!o->resume && !o->init_from && !restart) {
		if (rank == 0)
			fprintf(stderr, "llm-train: %s holds no complete checkpoint, only the incomplete %s (an import or a save "
				"cut short): not starting from random weights; remove them, or set LLM_TRAIN_RESUME= "
				"(empty) to start fresh on purpose, or give --init-from HFDIR\n", o->ckpt_dir, inc);
		return LLMT_EXIT_NOINPUT;
	}
	if (rank == 0)
		printf("llm-train: %s holds no complete checkpoint: the incomplete %s ignored; %s%s\n", o->ckpt_dir,
			inc, o->init_from ? "starting from --init-from " :
			o->resume ? "fresh start (LLM_TRAIN_RESUME empty)" : "fresh start (a restart: LLM_TRAIN_ATTEMPT > 0)",
			o->init_from ? o->init_from : "");
	fflush(stdout);   /* said even when the run dies in its first step */
	return 0;
}

/* 64 when a directory the run writes is another user's
 * (include/llmt/owndir.h), before anything in it is read; the lowest rank
 * that found it says so in one line */
static int dirs_owned(trainer *t, char *err, size_t el)
{
	const llmt_train_opts *o = t->o;
	char hb[4096];
	int rank = t->p->l.rank;

	snprintf(hb, sizeof(hb), "%s%s", o->hb_dir ? o->hb_dir : o->ckpt_dir ? o->ckpt_dir : "",
		o->hb_dir ? "" : "/heartbeat");
	int bad = (o->ckpt_dir && llmt_dir_owned("checkpoint dir", o->ckpt_dir, err, el)) ||
		((o->hb_dir || o->ckpt_dir) && llmt_dir_owned("heartbeat dir", hb, err, el)) ||
		(o->run_dir && llmt_dir_owned("run dir", o->run_dir, err, el));
	int first = llmt_tr_agree(t->p, bad ? (1 << 24) - rank : 0);
	if (first && first == (1 << 24) - rank)
		fprintf(stderr, "llm-train: rank %d: %s\n", rank, err);
	if (first > 0 && first < (1 << 23))
		return first;   /* no agreement (75) */
	return first ? LLMT_EXIT_USAGE : 0;
}

/* The checkpoint dir (what to resume from, the writer) and the heartbeat. */
static int setup_dirs(trainer *t)
{
	const llmt_train_opts *o = t->o;
	char *err = t->err;
	size_t el = sizeof(t->err);
	int rank = t->p->l.rank;
	int rc = dirs_owned(t, err, el);

	if (!rc)
		rc = ckpt_dir_start(t);
	if (rc)
		return llmt_tr_agree(t->p, rc);
	if (o->ckpt_dir) {
		rc = mkdir_p(o->ckpt_dir, err, el);
		/* again once made: another user may have made it between the
		 * check and mkdir (EEXIST) */
		if (!rc && llmt_dir_owned("checkpoint dir", o->ckpt_dir, err, el))
			rc = LLMT_EXIT_USAGE;
		if (!rc && !(t->w = llmt_ckpt_writer_new(o->ckpt_dir, o->ckpt_keep, err, el)))
			rc = LLMT_EXIT_IO;
		else if (!rc)
			llmt_ckpt_writer_generation(t->w, t->ckpt_gen);   /* -1 (a resume the wrapper chose): listed at the first save */
		if (rc)
			fprintf(stderr, "llm-train: rank %d: %s\n", rank, err);
	}
	if (!rc && (o->hb_dir || o->ckpt_dir)) {
		char hb[4096];
		snprintf(hb, sizeof(hb), "%s", o->hb_dir ? o->hb_dir : o->ckpt_dir);
		if (!o->hb_dir)
			strncat(hb, "/heartbeat", sizeof(hb) - strlen(hb) - 1);
		rc = mkdir_p(hb, err, el);
		if (!rc && llmt_dir_owned("heartbeat dir", hb, err, el))
			rc = LLMT_EXIT_USAGE;
		/* every LLMT_HB_PERIOD_S, or a quarter of a short watchdog
		 * deadline: a rank waiting for a stuck peer must look fresher
		 * than the peer by the wrapper's margin (half the deadline, at
		 * least WR_STUCK_FLOOR_S) */
		double wd = llmt_wd_timeout();
		double per = wd > 0 && wd < 4 * LLMT_HB_PERIOD_S ? wd / 4 : LLMT_HB_PERIOD_S;
		if (!rc && llmt_hb_start(hb, rank, per < 0.25 ? 0.25 : per))
			rc = LLMT_EXIT_IO;
		else if (rc)
			fprintf(stderr, "llm-train: %s\n", err);
	}
	return llmt_tr_agree(t->p, rc);
}

/* Where training starts: a checkpoint (--resume, the wrapper's choice or
 * CKPT_DIR), --init-from's weights, or the seed; then --skip-batches. */
static int setup_start(trainer *t)
{
	const llmt_train_opts *o = t->o;
	char *err = t->err;
	size_t el = sizeof(t->err);
	int rc = 0, rank = t->p->l.rank;

	if (o->resume && *o->resume)
		t->resume_from = o->resume;
	if (t->resume_from) {
		rc = resume(t, t->resume_from);
	} else if (o->init_from) {
		llmt_ckpt_state cs;
		llmt_opt_state os = { 0 };
		rc = t->opt->ops->load_into(t->opt, 0, &os) ? LLMT_EXIT_SOFTWARE : 0;
		if (!rc) {
			llmt_tr_ckpt_state(t, &cs, NULL, 0, &t->st, &os);
			llmt_hb_set(0, LLMT_HB_LOAD, 0);
			rc = llmt_ckpt_init_from(o->init_from, &cs, err, el);
		}
		if (rc)
			fprintf(stderr, "llm-train: rank %d: --init-from %s: %s\n", rank, o->init_from, err);
		if (!rc && t->opt->ops->loaded(t->opt, 0, 0))
			rc = LLMT_EXIT_TRANSIENT;
		rc = llmt_tr_agree(t->p, rc);
	}
	if (rc)
		return rc;
	if (o->skip_batches > 0) {
		t->st.pos += (int64_t)o->skip_batches * t->G;
		if (rank == 0)
			printf("llm-train: skipping %ld global batches of data (position %lld)\n",
				o->skip_batches, (long long)t->st.pos);
	}
	return 0;
}

/* Rank 0's metrics.jsonl and eval.jsonl in the run dir (else CKPT_DIR). */
static int setup_metrics(trainer *t)
{
	const llmt_train_opts *o = t->o;
	char *err = t->err;
	size_t el = sizeof(t->err);
	int rc = 0;

	if (t->p->l.rank == 0 && (o->run_dir || o->ckpt_dir)) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/metrics.jsonl", o->run_dir ? o->run_dir : o->ckpt_dir);
		if (o->run_dir && mkdir_p(o->run_dir, err, el))
			fprintf(stderr, "llm-train: %s\n", err);
		if (!(t->metrics = llmt_metrics_open(path)))
			rc = LLMT_EXIT_IO;
		snprintf(path, sizeof(path), "%s/eval.jsonl", o->run_dir ? o->run_dir : o->ckpt_dir);
		if (!rc && o->eval_interval > 0 && !(t->evalf = llmt_metrics_open(path)))
			rc = LLMT_EXIT_IO;
	}
	return llmt_tr_agree(t->p, rc);
}

int llmt_tr_setup(trainer *t)
{
	const llmt_train_opts *o = t->o;
	llmt_grid *l = &t->p->l;
	llmt_par mp = { l->tp, l->tp_rank, l->pp, l->pp_rank, l->tp > 1 ? t->p->tp_comm : NULL };
	int rc;

	if ((rc = setup_config(t, &mp)))
		return rc;
	if (o->recompute_layers > t->cfg.n_layers / l->pp) {
		if (l->rank == 0)
			fprintf(stderr, "llm-train: --recompute-layers %d: a stage has %d layers (pp=%d)\n",
				o->recompute_layers, t->cfg.n_layers / l->pp, l->pp);
		return LLMT_EXIT_USAGE;
	}
	t->G = o->B * o->A * l->dp;
	/* On GPUs the DP reduce-scatter (comm stream) runs while TP
	 * all-reduces or PP sends (compute stream) are in flight on other
	 * communicators; NCCL then launches them in the order they were
	 * issued, which is the same on every rank, so they cannot deadlock
	 * for want of resident kernels (NCCL >= 2.26 reads it; a value the
	 * user or the site set wins). Harmless without NCCL. */
	if (l->dp > 1 && (l->tp > 1 || l->pp > 1))
		setenv("NCCL_LAUNCH_ORDER_IMPLICIT", "1", 0);
	if ((rc = setup_data(t)) || (rc = setup_dirs(t)))
		return rc;
	/* ZeRO-1 in memory: a bf16 CPU model keeps this DP rank's share of the
	 * fp32 master only (the host optimizer's range) */
	size_t mlo = 0, mhi = (size_t)-1, n = llmt_model_count(&t->cfg, &mp);
	if (n)
		llmt_zero1_range(n, l->dp, l->dp_rank, &mlo, &mhi);
	t->m = llmt_model_create_share(&t->cfg, &mp, o->prec, o->B, o->T, llmt_pipeline_slots(l->pp, o->A),
		LLMT_RC_PLAN(o->recompute, o->recompute_layers), mlo, mhi);
	rc = t->m ? 0 : LLMT_EXIT_SOFTWARE;
	if ((rc = llmt_tr_agree(t->p, rc)))
		return rc;
	rc = setup_optim(t);
	if (!rc && llmt_pipeline_init(&t->pl, t->m, l->pp > 1 ? t->p->pp_comm : NULL, o->A, o->B, o->T))
		rc = LLMT_EXIT_SOFTWARE;
	if (!rc)
		rc = gather_hosts(t);
	if ((rc = llmt_tr_agree(t->p, rc)))
		return rc;
	t->st.magic = STATE_MAGIC;
	t->st.version = 1;
	t->st.seed = o->seed;
	t->st.global_batch = t->G;
	if ((rc = setup_start(t)))
		return rc;
	return setup_metrics(t);
}

