/* autoplan.h: the automatic parallel layout. From a model config, an
 * allocation (nodes x tasks per node), each rank's memory limit, FLOP rate
 * and link speeds, enumerates every tp x pp x dp x micro-batch x
 * recomputation that divides the model and the allocation (and where full
 * recomputation fits but none does not, full in only the fewest of each
 * stage's layers that fits: --recompute-layers), sizes each by
 * memest.h's model of a rank, prices it with a step-time model, and ranks
 * them. Pure: no I/O, no communicator; llm-train-plan --auto prints it. */
#ifndef LLMT_AUTOPLAN_H
#define LLMT_AUTOPLAN_H
#include <stddef.h>
#include "model/model_config.h"

#define LLMT_AUTOPLAN_MAX_RANKS (1 << 24) /* nodes x tasks per node */
/* Seconds per collective or send by default: NCCL between GPUs; MPI
 * between CPU ranks, where every blocking collective also waits for the
 * slowest rank (fitted to tests/bench/autoplan_sweep.sh: 5 us ranked
 * TP far too cheap, rank correlation 0.43-0.50; 100 us: 0.77-1.00). */
#define LLMT_AUTOPLAN_LAT_GPU 5e-6
#define LLMT_AUTOPLAN_LAT_CPU 100e-6

typedef struct {
	int nodes, tasks_per_node;  /* the allocation */
	int tp_domain;              /* TP stays inside this many tasks (NVLink
	                             * domain; the node on CPUs): tp divides it */
	long global_batch;          /* sequences per optimizer step */
	int T;                      /* sequence length */
	int B;                      /* micro-batch; 0 = try 1, 2, 4, 8, 16 */
	int recompute;              /* -1 = try none, attn, full; else that mode */
	int gpu;                    /* size ranks by the GPU model */
	double mem_limit;           /* bytes per rank */
	double margin;              /* keep the estimate under margin * limit */
	double flops;               /* achieved FLOP/s per rank */
	double bw_intra, bw_inter;  /* bytes/s per rank inside / across nodes */
	double lat;                 /* seconds per collective or send */
	double overhead;            /* bytes per rank outside the estimate (MPI,
	                             * oneDNN, CUDA context, code) */
	int fix_tp, fix_pp, fix_dp; /* 0 = any; else only that size (the rest
	                             * of a partly automatic layout) */
} llmt_autoplan_in;

typedef struct {
	int tp, pp, dp, B, A, recompute;
	double mem;                 /* bytes: the largest stage's rank */
	double step_s;              /* predicted optimizer step */
	double compute_s, tp_s, pp_s, dp_s, bubble;  /* parts of step_s */
	double tokens_per_s;
	int rc_layers;              /* recompute in the first rc_layers of each
	                             * stage's layers; 0: all of them */
} llmt_autoplan_cand;

/* x's recomputation as a plan (model_config.h LLMT_RC_PLAN) */
int llmt_autoplan_rc_plan(const llmt_autoplan_cand *x);
/* "none", "attn", "full", or "full:K" (K of each stage's layers) into buf */
const char *llmt_autoplan_rc_text(const llmt_autoplan_cand *x, char *buf, size_t len);

/* Why candidates were left out: counts, and the first example of each. */
enum { LLMT_AP_HEADS, LLMT_AP_LAYERS, LLMT_AP_DOMAIN, LLMT_AP_BATCH, LLMT_AP_MEMORY, LLMT_AP_NREASONS };
typedef struct {
	long count[LLMT_AP_NREASONS];
	char example[LLMT_AP_NREASONS][160];
} llmt_autoplan_rejects;

/* Parameters one rank of stage s of pp holds at tp (model.c's table:
 * embedding on the first stage, the final norm and untied head, or the tied
 * embedding's copy, on the last). Equals llmt_model_count. */
size_t llmt_autoplan_stage_params(const llmt_config *c, int tp, int pp, int s);

/* Price one layout (memory of its largest stage, step time); 0 when it
 * fits in memory, 1 when it does not (c->mem still filled). */
int llmt_autoplan_price(const llmt_config *c, const llmt_autoplan_in *in, llmt_autoplan_cand *x);

/* Every feasible candidate, fastest first, up to cap in out (*n: how many
 * were feasible in all); rejections counted in rj (may be NULL). */
void llmt_autoplan(const llmt_config *c, const llmt_autoplan_in *in, llmt_autoplan_cand *out,
	int cap, int *n, llmt_autoplan_rejects *rj);

/* The smallest node count >= in->nodes (same tasks per node, at most
 * max_nodes) with a feasible layout; 0 when none. It tries every count up
 * to 64 above in->nodes, then steps of 1/64 of the count (a bounded search:
 * the answer may then overshoot by up to that step); none at all when the
 * runtime overhead alone is over the limit. */
int llmt_autoplan_min_nodes(const llmt_config *c, const llmt_autoplan_in *in, int max_nodes);

const char *llmt_autoplan_reason(int r);
#endif
