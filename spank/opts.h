/* Options of a training job: --llm-train[=SPEC] and the separate --llm-*
 * options, parsed into struct llmt_opts and checked against the layout,
 * the task count and the admin policy. Pure: no Slurm, no files. */
#ifndef LLMT_OPTS_H
#define LLMT_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include "llmt_limits.h"
#include "interval.h"

struct llmt_policy;

/* Which fields the user set (bits of llmt_opts.set). */
enum {
	LLMT_SET_TP            = 1u << 0,
	LLMT_SET_PP            = 1u << 1,
	LLMT_SET_DP            = 1u << 2,
	LLMT_SET_CKPT_DIR      = 1u << 3,
	LLMT_SET_CKPT_INTERVAL = 1u << 4,
	LLMT_SET_RESTARTS      = 1u << 5,
	LLMT_SET_NCCL          = 1u << 6,
	LLMT_SET_EXPLAIN       = 1u << 7,
	LLMT_SET_MODEL         = 1u << 8,
	LLMT_SET_MICRO_BATCH   = 1u << 9,
	LLMT_SET_GLOBAL_BATCH  = 1u << 10,
	LLMT_SET_SEQ           = 1u << 11,
};

/* The layout the planner chose for tp/pp/micro-batch=auto (opts_auto.c):
 * filled where the allocation is known (step start), handed to the ranks
 * as LLM_TRAIN_MICRO_BATCH, _GRAD_ACCUM, _RECOMPUTE(_LAYERS), _SEQ and _AUTO. */
struct llmt_auto_choice {
	int done;             /* 1: tp, pp, dp of llmt_opts are the planner's */
	unsigned micro_batch, grad_accum, seq;
	int recompute;        /* llmt_recompute */
	unsigned recompute_layers; /* in the first K of each stage's layers; 0 all */
	int candidates;       /* feasible layouts */
	double step_s, mem_bytes, mem_limit;
};

struct llmt_opts {
	int enabled;          /* --llm-train given (or any --llm-* option) */
	unsigned tp, pp, dp;  /* 0 = not set; dp 0 with dp_auto = auto */
	int dp_auto;          /* dp=auto: dp = ntasks / (tp*pp) */
	char ckpt_dir[LLMT_PATH_MAX];      /* "" = not set */
	struct llmt_interval ckpt_interval;
	int restarts;         /* -1 = not set */
	char nccl_profile[LLMT_NAME_MAX];  /* "" = not set */
	int explain;          /* print map and env, run nothing */
	int tp_auto, pp_auto; /* tp=auto, pp=auto: the planner chooses */
	int mb_auto;          /* micro-batch=auto */
	unsigned micro_batch; /* micro-batch=N (0 = not set) */
	unsigned long global_batch;  /* global-batch=N sequences (0 = one per task) */
	unsigned seq;         /* seq=T (0 = the model's max_seq) */
	char model[LLMT_PATH_MAX];   /* model=FILE: the config the planner sizes */
	struct llmt_auto_choice choice;
	unsigned set;         /* LLMT_SET_* bits the user set */
};

/* 1 when the planner has something to choose (tp, pp or micro-batch auto). */
int llmt_opts_is_auto(const struct llmt_opts *o);

void llmt_opts_init(struct llmt_opts *o);

/* Parse SPEC of --llm-train=SPEC: comma-separated key=value items,
 *   tp=N|auto pp=N|auto dp=N|auto ckpt-dir=/abs ckpt-interval=N|Ns|Nm|Nh|auto
 *   restarts=N nccl=NAME (alias nccl-profile) explain (alias explain=1|0)
 *   model=FILE micro-batch=N|auto global-batch=N seq=T (opts_auto.c)
 * NULL or "" only enables. Sets o->enabled. A key given twice (aliases
 * included) and a control character anywhere are refused; the message
 * then names the key, never the text (it goes to slurmd's log).
 * Returns 0, or -1 with one line in err naming the bad item/value. */
int llmt_opts_parse_spec(struct llmt_opts *o, const char *spec,
			 char *err, size_t errlen);

/* Set one option by key: the spec keys above, with or without an "llm-"
 * prefix ("llm-tp", "tp", "llm-nccl-profile", ...). val may be NULL for
 * "explain" (and for "train": same as parse_spec(NULL)); "train" with a
 * value parses it as a SPEC. Returns 0 or -1 with err. */
int llmt_opts_set(struct llmt_opts *o, const char *key, const char *val,
		  char *err, size_t errlen);

/* What the job is, as far as the calling context knows it. */
struct llmt_job_info {
	unsigned ntasks;        /* 0 = unknown (checks needing it are skipped) */
	unsigned nnodes;        /* 0 = unknown */
	const char *partition;  /* NULL/"" = unknown */
	const char *account;    /* NULL/"" = unknown */
	const char *nodelist;   /* hostlist of the step/job, NULL = unknown */
};

/* Fill fields the user did not set from the policy's defaults (NULL
 * policy: built-in defaults). Never overrides what the user set. */
void llmt_opts_apply_defaults(struct llmt_opts *o, const struct llmt_policy *p);

/* Check the options: layout (tp*pp*dp == ntasks, dp=auto computed here
 * and written back into o->dp), tp within the smallest NVLink domain of
 * the node types in play (the nodes of job->nodelist when given, else all
 * node types; nodes without GPUs: the node, i.e. ntasks/nnodes), restart
 * budget within limits, NCCL profile known, checkpoint dir absolute,
 * clean (no "." or ".." components) and lexically under an allowed root,
 * node/GPU caps of the partition and the account.
 * Returns 0, or -1 with one line in err naming the bad value. */
int llmt_opts_validate(struct llmt_opts *o, const struct llmt_policy *p,
		       const struct llmt_job_info *job,
		       char *err, size_t errlen);

/* Lexical check: dir is absolute, has no "."/".." components, no control
 * characters, and is (under) one of the policy's allowed roots (no roots
 * = any clean absolute path). 0 ok, -1 with err. Filesystem checks
 * (owner, symlinks) are the caller's. */
int llmt_ckpt_dir_allowed(const char *dir, const struct llmt_policy *p,
			  char *err, size_t errlen);

/* Canonical SPEC text of the options the user set (parse_spec(format(o))
 * gives the same options): for passing on and for --llm-explain. */
int llmt_opts_format(const struct llmt_opts *o, char *buf, size_t len);

/* opts_auto.c: the planner's keys (model micro-batch global-batch seq):
 * 0 set, -1 bad value (err), 1 not one of them. */
int llmt_opts_set_plan(struct llmt_opts *o, const char *k, const char *val,
		       char *err, size_t errlen);
/* Before the choice: auto needs model=FILE, an absolute clean path
 * (one line in err naming what is missing); 0 or -1. */
int llmt_opts_check_auto(const struct llmt_opts *o, char *err, size_t errlen);
/* Append the planner's keys as SPEC items (",key=val") to buf; 0 or -1. */
int llmt_opts_format_plan(const struct llmt_opts *o, char *buf, size_t len);

#endif
