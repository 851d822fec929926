/* train.h: the training loop of one rank: data, 1F1B forward/backward,
 * ZeRO-1 AdamW with clipping, NaN/Inf and loss-spike guards, the SDC check
 * across DP replicas, heartbeat, metrics, preemption (SIGUSR1/SIGTERM),
 * fault injection, resume and periodic asynchronous checkpoints.
 * Returns the process exit code (include/llmt/exitcodes.h). */
#ifndef LLMT_TRAIN_H
#define LLMT_TRAIN_H
#include <stdint.h>
#include "model/model.h"
#include "optim.h"
#include "comm/parallel.h"

typedef struct {
	const char *model_path;    /* YAML model config */
	const char *data_dir;      /* token shards */
	const char *ckpt_dir;      /* NULL: no checkpoints */
	const char *run_dir;       /* metrics; default ckpt_dir */
	const char *hb_dir;        /* heartbeat; default ckpt_dir/heartbeat */
	const char *resume;        /* checkpoint to resume from; NULL/"" fresh */
	const char *init_from;     /* Hugging Face dir for fine-tuning; NULL */
	long steps;                /* total optimizer steps of the run */
	int B, T, A;               /* micro-batch, sequence, grad accumulation */
	double lr, min_lr;
	long warmup;
	llmt_adamw_cfg adamw;
	uint64_t seed;             /* data order */
	long ckpt_steps;           /* checkpoint every N steps (0 off) */
	double ckpt_seconds;       /* or every S seconds (0 off) */
	int ckpt_auto;             /* Young/Daly interval from the save cost */
	double mtbf_s;             /* for ckpt_auto */
	int ckpt_keep;             /* retention (0 keep all) */
	llmt_prec prec;
	llmt_recompute recompute;  /* --recompute: activations recomputed in backward */
	int recompute_layers;      /* --recompute-layers K: in the stage's first K layers; -1 all */
	long sdc_interval;         /* SDC check every N steps (0 off) */
	int max_bad_steps;         /* K: exit 85 after K bad steps in a row */
	double spike_factor;       /* loss > factor * running mean: a spike */
	long skip_batches;         /* LLM_TRAIN_SKIP_BATCHES */
	double peak_gflops;        /* per rank, for MFU */
	int peak_cpu_estimate;     /* peak_gflops is the CPU default (no MFU on a GPU) */
	const char *val_dir;       /* validation shards; NULL: DATA/val if present */
	long eval_interval;        /* validation loss every N steps (0 off) */
	int eval_batches;          /* global batches of validation data */
	int quiet;                 /* no per-step line on stdout */
} llmt_train_opts;

/* Defaults for everything optional. */
void llmt_train_defaults(llmt_train_opts *o);

/* Pure: parse a checkpoint interval "N" (steps), "Ns"/"Nm"/"Nh" (time) or
 * "auto" into o. 0 or -1. */
int llmt_parse_interval(const char *s, llmt_train_opts *o);

/* Pure: the "auto" checkpoint interval in seconds. Young/Daly
 * sqrt(2 x cost x MTBF) with the cost the loop pays per save (the stall),
 * never under twice the background write (so saves do not queue), and
 * 600 s until a save has been measured (stall 0). */
double llmt_auto_interval(double stall, double write_time, double mtbf);

/* Pure: the guard. A step is bad when the loss or the gradient norm is
 * not finite, or when the loss exceeds factor x the running mean (after at
 * least one good step). */
int llmt_guard_bad(double loss, double norm, double loss_ema, long good_steps, double factor);

/* Collective over the world in p. */
int llmt_train(const llmt_train_opts *o, llmt_parallel *p);

#endif
