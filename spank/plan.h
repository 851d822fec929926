/* A step's plan: the step nodelist and tasks per node joined with the
 * topology and the policy's node types into rank-map input, the rank map
 * itself and its cost next to Slurm's default order. Shared by the
 * plugin's remote context, --llm-explain and llm-train-plan. Pure apart
 * from hostlist expansion (libslurm). */
#ifndef LLMT_PLAN_H
#define LLMT_PLAN_H

#include <stddef.h>
#include "llmt_limits.h"
#include "cost.h"
#include "envgen.h"
#include "policy.h"
#include "rankmap.h"
#include "topology.h"

/* Parse SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE ("4(x3),2,1")
 * into out[nnodes]; the counts must cover exactly nnodes nodes.
 * 0 or -1 with err. */
int llmt_tasks_per_node_parse(const char *s, unsigned nnodes, unsigned *out,
			      char *err, size_t errlen);

struct llmt_plan {
	unsigned nnodes, ntasks;
	char (*names)[LLMT_HOST_MAX];            /* [nnodes], Slurm order */
	struct llmt_rm_node *nodes;              /* [nnodes], name -> names[i] */
	const struct llmt_node_type **types;     /* [nnodes], NULL = no type */
	struct llmt_rankmap *map;                /* the chosen map */
	struct llmt_cost cost;                   /* of map */
	int slurm_feasible;                      /* Slurm's order keeps TP in domains */
	struct llmt_cost slurm_cost;             /* of Slurm's order (identity) */
	struct llmt_cost_model model;
};

/* nodelist: hostlist in Slurm order; tasks_per_node: as parsed above, or
 * NULL for `uniform` tasks on every node; topo may be NULL (no topology:
 * every node on its own leaf); policy never NULL (built-in defaults);
 * cm NULL = default model. Returns 0 with *out or -1 with err. */
int llmt_plan_build(const char *nodelist, const unsigned *tasks_per_node,
		    unsigned uniform, const struct llmt_topology *topo,
		    const struct llmt_policy *policy, struct llmt_layout layout,
		    const struct llmt_cost_model *cm, struct llmt_plan **out,
		    char *err, size_t errlen);

/* The NIC name of Slurm task id t ("" when none). */
const char *llmt_plan_nic(const struct llmt_plan *p, unsigned t);

/* The host of rank 0 (MASTER_ADDR). */
const char *llmt_plan_master(const struct llmt_plan *p);

/* The envgen input of Slurm task id t (< p->ntasks) in this plan, as the
 * plugin's remote context gives it to the task (GROUP_RANK from
 * llmt_rankmap_group_rank, MASTER_ADDR the plan's; no reserved ports):
 * one function for the tasks, --llm-explain and llm-train-plan --env. */
void llmt_plan_env_input(const struct llmt_plan *p, unsigned t, const struct llmt_opts *o,
			 const struct llmt_policy *pol, uint32_t job_id, uint32_t step_id,
			 struct llmt_env_input *in);

void llmt_plan_free(struct llmt_plan *p);

#endif
