/* Cost model: bytes per training step that cross a node, a leaf switch
 * and a spine switch, for each parallel dimension (TP allreduce of
 * activations, PP send/recv, DP reduce-scatter + allgather of gradients
 * in ring order), from model size, layout and a rank map. Pure. */
#ifndef LLMT_COST_H
#define LLMT_COST_H

#include "rankmap.h"

struct llmt_cost_model {
	double params;        /* model parameters (e.g. 1e9) */
	unsigned hidden;      /* hidden size */
	unsigned layers;      /* transformer layers */
	unsigned seq;         /* sequence length */
	unsigned micro_batch; /* sequences per micro-batch */
	unsigned micro_batches; /* micro-batches per step (per DP replica) */
	unsigned bytes_per_elem; /* 2 for bf16 */
};

/* A 1.3B GPT-like default: hidden 2048, 24 layers, seq 2048, mb 1, 8 mbs, bf16. */
void llmt_cost_model_default(struct llmt_cost_model *cm);

enum { LLMT_DIM_TP = 0, LLMT_DIM_PP, LLMT_DIM_DP, LLMT_NDIMS };
enum { LLMT_LVL_TOTAL = 0, LLMT_LVL_NODE, LLMT_LVL_LEAF, LLMT_LVL_SPINE, LLMT_NLVLS };

/* bytes[dim][lvl]: bytes per step of dimension dim that are sent at all
 * (TOTAL), between different nodes (NODE), between different leaves or
 * unknown leaves (LEAF), between different spines or unknown (SPINE).
 * Cumulative: SPINE <= LEAF <= NODE <= TOTAL. */
struct llmt_cost {
	double bytes[LLMT_NDIMS][LLMT_NLVLS];
};

/* Price map m placed on nodes. O(ntasks). */
void llmt_cost_eval(const struct llmt_cost_model *cm, const struct llmt_rankmap *m,
		    const struct llmt_rm_node *nodes, struct llmt_cost *out);

/* Sum over dimensions of one level. */
double llmt_cost_level(const struct llmt_cost *c, int lvl);

/* One number to minimise: node + 4*leaf + 16*spine bytes (summed over dims). */
double llmt_cost_score(const struct llmt_cost *c);

const char *llmt_dim_name(int dim);
const char *llmt_lvl_name(int lvl);

#endif
