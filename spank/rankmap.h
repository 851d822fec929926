/* Topology-aware rank map: a permutation from Slurm tasks (SLURM_PROCID,
 * block distribution over the step's nodes) to training ranks with their
 * tp/pp/dp coordinates (Megatron order rank = tp + dp*TP + pp*TP*DP),
 * local GPU and NIC. Pure C, deterministic, O(n log n) in nodes. */
#ifndef LLMT_RANKMAP_H
#define LLMT_RANKMAP_H

#include <stddef.h>
#include <stdint.h>

struct llmt_cost_model;

/* One node of the step, in Slurm's order (the step nodelist order). */
struct llmt_rm_node {
	const char *name;     /* host name (unique in the step) */
	unsigned ntasks;      /* tasks Slurm places here (>= 1) */
	int leaf;             /* leaf switch index, -1 = unknown */
	int spine;            /* switch above the leaf, -1 = unknown */
	int block;            /* topology block index, -1 = none */
	unsigned gpus;        /* GPUs on the node, 0 = CPU node */
	unsigned nvlink_block;/* 0: NVLink domain = node; else the domain is
				 all step nodes with the same block (>= 0)
				 and holds at most this many GPUs/tasks */
	unsigned nnics;       /* NICs listed for the node type */
};

struct llmt_layout {
	unsigned tp, pp, dp;  /* all >= 1, tp*pp*dp == total tasks */
};

/* How positions along the ordered nodes become coordinates. */
enum llmt_rm_order {
	LLMT_ORDER_SLURM = 0,   /* Slurm's default: rank = task id */
	LLMT_ORDER_TOPO_DP,     /* nodes by (spine, leaf, block, name); tp, dp, pp */
	LLMT_ORDER_TOPO_PP,     /* same nodes; tp, pp, dp (pipeline neighbours adjacent) */
	LLMT_ORDER_FRAG_DP,     /* spines and leaves by descending task count; tp, dp, pp */
	LLMT_ORDER_FRAG_PP,     /* same; tp, pp, dp */
	LLMT_ORDER_COUNT
};

/* One task. Index into llmt_rankmap.task = Slurm task id. */
struct llmt_rm_task {
	uint32_t rank;
	uint32_t tp_rank, pp_rank, dp_rank;
	uint32_t node;        /* index into the input node array */
	uint32_t local_rank;  /* = SLURM_LOCALID: k-th task of its node */
	int32_t gpu;          /* local GPU index (= local_rank), -1 on CPU nodes */
	int32_t nic;          /* index into the node type's NIC list, -1 = none */
};

struct llmt_rankmap {
	unsigned ntasks, nnodes;
	struct llmt_layout layout;
	enum llmt_rm_order order;     /* the order chosen */
	struct llmt_rm_task *task;    /* [ntasks], by Slurm task id */
	uint32_t *task_of_rank;       /* [ntasks], inverse permutation */
	uint32_t *first_task;         /* [nnodes], Slurm id of each node's task 0 */
};

/* Build the map for one order. Errors (one line in err, return -1):
 * sum of ntasks != tp*pp*dp, zero sizes, a TP group that would cross an
 * NVLink domain (node, or multi-node block), more tasks than GPUs on a
 * GPU node, too many tasks (LLMT_MAX_TASKS). */
int llmt_rankmap_build_order(const struct llmt_rm_node *nodes, unsigned nnodes,
			     struct llmt_layout layout, enum llmt_rm_order order,
			     struct llmt_rankmap **out, char *err, size_t errlen);

/* Build the map: every feasible order is priced with the cost model
 * (NULL: a default model) and the cheapest that is no worse than Slurm's
 * order in cross-leaf and cross-spine bytes wins (Slurm's order when it
 * is feasible and nothing beats it). Ties go to the lower enum value. */
int llmt_rankmap_build(const struct llmt_rm_node *nodes, unsigned nnodes,
		       struct llmt_layout layout, const struct llmt_cost_model *cm,
		       struct llmt_rankmap **out, char *err, size_t errlen);

/* Check the map's invariants (every rank once, coordinates agree with the
 * rank, TP groups inside one NVLink domain, local ranks 0..n-1 per node).
 * 0 ok, -1 with err. Used by tests and by --explain. */
int llmt_rankmap_check(const struct llmt_rankmap *m, const struct llmt_rm_node *nodes,
		       char *err, size_t errlen);

/* The map's task index (its block-distribution task id) of the local-th
 * task on node `node` (S_JOB_NODEID, S_TASK_ID): the rank map is really
 * a function of (node, local task), so a step launched with another
 * distribution can still look its entry up here. -1 when out of range. */
long llmt_rankmap_task_at(const struct llmt_rankmap *m, const struct llmt_rm_node *nodes,
			  unsigned node, unsigned local);

/* torchrun's GROUP_RANK of node `node`: its place (0..nnodes-1) among
 * the step's nodes ordered by the lowest rank each holds, so that with
 * node-contiguous ranks RANK = GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK
 * as under torchrun --nnodes; O(ntasks), no allocation. */
uint32_t llmt_rankmap_group_rank(const struct llmt_rankmap *m, uint32_t node);

void llmt_rankmap_free(struct llmt_rankmap *m);

const char *llmt_rm_order_name(enum llmt_rm_order o);

#endif
