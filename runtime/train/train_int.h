/* train_int.h: the private state of the training loop shared by train.c
 * (the loop) and train_setup.c (setup and checkpoint glue). */
#ifndef LLMT_TRAIN_INT_H
#define LLMT_TRAIN_INT_H
#include <stdint.h>
#include <stdio.h>
#include "ckpt/ckpt.h"
#include "resilience/faults.h"
#include "resilience/heartbeat.h"
#include "data/loader.h"
#include "metrics.h"
#include "pipeline.h"
#include "sdc.h"
#include "steptime.h"
#include "train.h"

#define STATE_MAGIC 0x4c4d5453u /* "LMTS" */

/* Training state saved as the blob "train" (same on every rank). */
typedef struct {
	uint32_t magic, version;
	int64_t step;          /* optimizer steps completed */
	int64_t pos;           /* global samples consumed */
	int64_t opt_t;         /* AdamW updates applied */
	int64_t bad_run;       /* bad steps in a row */
	int64_t good_steps;
	double loss_ema;
	uint64_t seed;
	int64_t global_batch;
} train_state;

typedef struct {
	const llmt_train_opts *o;
	llmt_parallel *p;
	llmt_config cfg;
	llmt_model *m;
	llmt_trainopt *opt;   /* host or device optimizer (optim.h) */
	llmt_pipeline pl;
	llmt_loader ld;
	llmt_loader val;      /* validation data (eval_interval > 0) */
	llmt_loader *cur;     /* the loader fetch reads */
	FILE *evalf;          /* RUN_DIR/eval.jsonl (rank 0) */
	llmt_faults faults;
	llmt_ckpt_writer *w;
	train_state st;
	FILE *metrics;
	char (*hosts)[LLMT_HOSTLEN];
	uint64_t base;        /* first position of the global batch in progress */
	int G;
	char err[1024];
	double last_save_time;   /* end of the last save call */
	double save_stall;       /* time the loop waited in the last save call */
	double save_start;       /* start of the save in flight (0: none) */
	double write_time;       /* duration of the last complete background write */
	const char *resume_from;
	char resume_path[4096];  /* CKPT_DIR's newest complete step, listed once at the start */
	long long ckpt_gen;      /* that listing's largest generation (-1: not listed) */
	int save_pending;        /* a snapshot taken, its save not yet handed to the writer */
	train_state save_st;     /* the training state of that snapshot */
	double save_snap_s;      /* the time the snapshot call took */
	double data_s;           /* seconds in fetch so far (the timings' data part) */
	int timing;              /* per-rank timings on (LLM_TRAIN_STEP_TIMINGS not 0) */
	llmt_steptimes times;    /* this rank's step time breakdown (heartbeat) */
} trainer;

/* Seconds on the monotonic clock. */
double llmt_tr_now(void);
/* The largest exit code over all ranks (collective): all leave alike. */
int llmt_tr_agree(llmt_parallel *p, int rc);
/* Config, data, dirs, heartbeat, model, optimizer, pipeline, start state. */
int llmt_tr_setup(trainer *t);
/* The checkpoint description of training state st and optimizer state os
 * (m and v may be NULL: then only the master buffer is listed); json: the
 * training state's text when non-NULL (train_save.c). */
void llmt_tr_ckpt_state(trainer *t, llmt_ckpt_state *cs, char *json, size_t jlen, train_state *st,
	const llmt_opt_state *os);
/* Save a checkpoint of the current step (collective; sync: wait for it);
 * *stall: the time spent in the call. With an asynchronous optimizer
 * snapshot (a device) and !sync the save is only begun: the loop calls
 * llmt_tr_save_finish at its next step, while the snapshot copy has
 * overlapped that step's forward and backward. Returns the agreed exit code. */
int llmt_tr_save(trainer *t, int sync, double *stall);
/* Hand a begun save (t->save_pending) to the checkpoint writer; *stall as
 * above. Collective; the agreed exit code. */
int llmt_tr_save_finish(trainer *t, double *stall);
/* The SDC check of this step's parameters (collective). */
int llmt_tr_sdc_check(trainer *t);

#endif
