/* train_save.c: the checkpoint glue of the training loop: the state a
 * checkpoint describes (training position, optimizer share) and the save,
 * synchronous or overlapped with the next steps (llmt_tr_save_finish). */
#include "train_int.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "llmt/env.h"
#include "llmt/exitcodes.h"
#include "llmt/heartbeat.h"
#include "gpu/bridge.h"
#include "resilience/watchdog.h"

/* ---- checkpoint state ---------------------------------------------------- */
/* The checkpoint description of training state st and optimizer state os
 * (whose m and v may be NULL: then only the master buffer is listed). */
void llmt_tr_ckpt_state(trainer *t, llmt_ckpt_state *cs, char *json, size_t jlen, train_state *st,
	const llmt_opt_state *os)
{
	llmt_grid *l = &t->p->l;
	int np;

	memset(cs, 0, sizeof(*cs));
	cs->rank = l->rank;
	cs->world = l->world;
	cs->tp = l->tp;
	cs->pp = l->pp;
	cs->dp = l->dp;
	cs->tp_rank = l->tp_rank;
	cs->pp_rank = l->pp_rank;
	cs->dp_rank = l->dp_rank;
	cs->config = &t->cfg;
	cs->params = llmt_model_params(t->m, &np);
	cs->nparams = np;
	cs->nflat = llmt_model_nparams(t->m);
	/* a ZeRO-1 share of the master is written as m and v are (each rank
	 * its range); a whole master, replicated, each DP rank's 1/dp */
	if (os->master_share) {
		cs->bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, os->master, os->lo, os->hi, 0, 0 };
		/* no buffer is replicated then: replicas_agree compares what
		 * the replicas do hold alike, the bf16 weights and fp32 copies */
		cs->alike[0] = llmt_model_compute_bf16(t->m);
		cs->alike_len[0] = cs->alike[0] ? cs->nflat * sizeof(uint16_t) : 0;
		size_t nf = 0;
		cs->alike[1] = llmt_model_f32_copies(t->m, &nf);
		cs->alike_len[1] = cs->alike[1] ? nf * sizeof(float) : 0;
	} else if (os->master_part) {
		/* the part of the replicated master this rank writes, as the
		 * writer cuts it, with the whole one's hash: the same files */
		size_t plo, phi;
		llmt_ckpt_dp_share(cs->nflat, l->dp, l->dp_rank, &plo, &phi);
		cs->bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, os->master, plo, phi, 0, 0 };
		cs->hash_given = 1;
		cs->hash = os->master_hash;
	} else
		cs->bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, os->master, 0, cs->nflat, 1, 0 };
	cs->bufs[1] = (llmt_ckpt_buf){ "adam_m", LLMT_CKPT_F32, os->m, os->lo, os->hi, 0, 0 };
	cs->bufs[2] = (llmt_ckpt_buf){ "adam_v", LLMT_CKPT_F32, os->v, os->lo, os->hi, 0, 0 };
	cs->nbufs = os->m ? 3 : 1;
	cs->blobs[0] = (llmt_ckpt_blob){ "train", st, sizeof(*st) };
	cs->nblobs = 1;
	if (json) {
		snprintf(json, jlen,
			"{\"step\":%lld,\"data_position\":%lld,\"global_batch\":%d,\"seq\":%d,"
			"\"adam_steps\":%lld,\"bad_steps_in_a_row\":%lld,\"loss_ema\":%.17g,\"data_seed\":%llu,"
			"\"lr\":%.17g,\"total_steps\":%ld}",
			(long long)st->step, (long long)st->pos, t->G, t->o->T, (long long)st->opt_t,
			(long long)st->bad_run, st->loss_ema, (unsigned long long)st->seed,
			t->o->lr, t->o->steps);
		cs->train_json = json;
	}
	cs->world_comm = t->p->all;
	cs->dp_comm = l->dp > 1 ? t->p->dp_comm : NULL;
}

/* Hand the snapshot of t->save_st to the writer (sync: and wait). */
static int save_write(trainer *t, int sync, double *stall)
{
	llmt_ckpt_state cs;
	llmt_opt_state os = { 0 };
	char json[1024];
	double t0 = llmt_tr_now();
	/* the ranks wait for the slowest one's checkpoint I/O (sync write,
	 * agreement): the deadline stretched by the checkpoint's */
	double comm = llmt_wd_timeout(), armed = llmt_wd_arm(comm > 0 ? comm + llmt_ckpt_timeout() : 0);
	int rc = 0, agreed;

	llmt_hb_set(t->save_st.step, LLMT_HB_SAVE, 0);
	llmt_faults_fire_save(&t->faults, (long)t->save_st.step, t->p->l.rank);
	t->save_pending = 0;
	if (t->opt->ops->saved(t->opt, &os)) {
		snprintf(t->err, sizeof(t->err), "the optimizer state snapshot failed");
		rc = LLMT_EXIT_TRANSIENT;
	}
	if (!rc) {
		llmt_tr_ckpt_state(t, &cs, json, sizeof(json), &t->save_st, &os);
		cs.borrow = t->opt->stable;
		rc = llmt_ckpt_save(t->w, t->save_st.step, &cs, t->err, sizeof(t->err));
	}
	*stall = llmt_tr_now() - t0;  /* this part; the snapshot's was counted at its step */
	if (!rc && sync)
		rc = llmt_ckpt_wait(t->w, t->err, sizeof(t->err));
	if (rc)
		fprintf(stderr, "llm-train: rank %d: checkpoint of step %lld: %s\n", t->p->l.rank,
			(long long)t->save_st.step, t->err);
	t->save_stall = *stall + t->save_snap_s;
	t->save_start = sync ? 0 : t0;
	if (sync && !rc)
		t->write_time = llmt_tr_now() - t0 + t->save_snap_s;
	t->last_save_time = llmt_tr_now();
	/* phase save until every rank is done: a rank waiting here for a slow
	 * writer is saving, not hung (the wrapper pauses hang detection) */
	agreed = llmt_tr_agree(t->p, rc);
	llmt_hb_set(t->st.step, LLMT_HB_TRAIN, 0);
	llmt_wd_arm(armed);
	return agreed;
}

int llmt_tr_save(trainer *t, int sync, double *stall)
{
	double t0 = llmt_tr_now(), comm = llmt_wd_timeout(), armed = -1;
	int rc = 0;

	llmt_hb_set(t->st.step, LLMT_HB_SAVE, 0);
	/* a stable optimizer's snapshot is written in place by the previous
	 * save, which must be done before the new snapshot overwrites it; the
	 * peers wait in the agreement below for the slowest rank's writer:
	 * the deadline stretched by the checkpoint's, as in save_write */
	if (t->opt->stable) {
		armed = llmt_wd_arm(comm > 0 ? comm + llmt_ckpt_timeout() : 0);
		rc = llmt_ckpt_wait(t->w, t->err, sizeof(t->err));
	}
	if (rc)
		fprintf(stderr, "llm-train: rank %d: %s\n", t->p->l.rank, t->err);
	t->save_st = t->st;
	if (!rc && t->opt->ops->snapshot(t->opt)) {
		rc = LLMT_EXIT_TRANSIENT;
		fprintf(stderr, "llm-train: rank %d: checkpoint of step %lld: optimizer state snapshot failed\n",
			t->p->l.rank, (long long)t->st.step);
	}
	t->save_snap_s = llmt_tr_now() - t0;
	*stall = t->save_snap_s;
	rc = llmt_tr_agree(t->p, rc);
	if (armed >= 0)
		llmt_wd_arm(armed);
	if (rc)
		return rc;
	t->save_pending = 1;
	if (sync || !t->opt->async) {
		double w;
		rc = save_write(t, sync, &w);
		*stall += w;
		return rc;
	}
	llmt_hb_set(t->st.step, LLMT_HB_TRAIN, 0);
	return 0;
}

int llmt_tr_save_finish(trainer *t, double *stall)
{
	return save_write(t, 0, stall);
}
