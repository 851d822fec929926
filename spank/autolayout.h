/* autolayout.h: tp/pp/micro-batch=auto for a job: the planner's input
 * from the policy's node types of the allocation (memory per rank, FLOP
 * rate, NVLink domain), the choice written into llmt_opts, the smallest
 * allocation when nothing fits, and the candidates for --llm-explain. */
#ifndef LLMT_AUTOLAYOUT_H
#define LLMT_AUTOLAYOUT_H

#include <stdio.h>
#include <sys/types.h>
#include "opts.h"
#include "policy.h"
#include "model/model_config.h"
#include "memory/autoplan.h"

#define LLMT_AUTO_TOP 8      /* candidates kept for --llm-explain */
#define LLMT_MODEL_MAX (64u << 10)  /* a model config the plugin reads */

struct llmt_auto_out {
	llmt_autoplan_in in;
	llmt_autoplan_cand cand[LLMT_AUTO_TOP];
	int shown, n;            /* kept, feasible in all */
	llmt_autoplan_rejects rj;
	int min_nodes;           /* when n == 0: smallest node count that fits, 0 none */
};

/* The planner's input for the step: nnodes nodes of nodelist, each with
 * tasks_per_node tasks. Every node needs a node type declaring its memory
 * (gpu_memory_gib for GPU types, memory_gib for CPU types): else -1 with
 * one line in err naming the type or node. 0 on success. */
int llmt_auto_input(const struct llmt_opts *o, const struct llmt_policy *p, const llmt_config *c,
		    const char *nodelist, unsigned nnodes, unsigned tasks_per_node,
		    llmt_autoplan_in *in, char *err, size_t errlen);

/* Choose: llmt_auto_input, the planner, and the fastest candidate written
 * into o (tp, pp, dp, o->choice). tpn: tasks on each node (must be equal).
 * Nothing fits: -1, err names the smallest allocation that would (nodes x
 * tasks) or says none does; out filled for --llm-explain either way. */
int llmt_auto_decide(struct llmt_opts *o, const struct llmt_policy *p, const llmt_config *c,
		     const char *nodelist, const unsigned *tpn, unsigned nnodes,
		     struct llmt_auto_out *out, char *err, size_t errlen);

/* The candidates, predicted memory and step time, and the rejections,
 * each line starting with prefix. */
void llmt_auto_print(FILE *f, const char *prefix, const struct llmt_auto_out *out);

/* LLM_TRAIN_AUTO's value: the choice in one line of key=value words. */
int llmt_auto_summary(const struct llmt_opts *o, char *buf, size_t len);

/* model_read.c: read the model config path as the job's user would
 * (uid; (uid_t)-1 = no ownership check): no symbolic link, a regular file
 * of at most LLMT_MODEL_MAX bytes, owned by uid or readable by all,
 * opened non-blocking; parsed and validated. The message never quotes
 * the file's content (it may reach slurmd's log). 0 or -1 with err. */
int llmt_model_read(const char *path, uid_t uid, llmt_config *c, char *err, size_t errlen);

/* o auto and not yet chosen: read o->model as uid and decide for the
 * step (llmt_auto_decide); out may be NULL. 0 (nothing to do or chosen)
 * or -1 with err. */
int llmt_auto_apply(struct llmt_opts *o, const struct llmt_policy *p, uid_t uid,
		    const char *nodelist, const unsigned *tpn, unsigned nnodes,
		    struct llmt_auto_out *out, char *err, size_t errlen);
#endif
