/* Environment of one task (doc/contracts.md): torchrun variables,
 * LLM_TRAIN_* coordinates and settings, CUDA_VISIBLE_DEVICES, the NCCL
 * profile with per-rank substitution. Pure; fixed-size output. MASTER_PORT
 * itself is ports.h's. */
#ifndef LLMT_ENVGEN_H
#define LLMT_ENVGEN_H

#include <stddef.h>
#include <stdint.h>
#include "llmt_limits.h"
#include "opts.h"
#include "policy.h"
#include "ports.h"
#include "rankmap.h"

#define LLMT_ENV_MAX        96    /* variables per task */
#define LLMT_ENV_NAME_MAX   64
#define LLMT_ENV_VALUE_MAX  (LLMT_PATH_MAX + 64)

struct llmt_env_var {
	char name[LLMT_ENV_NAME_MAX];
	char value[LLMT_ENV_VALUE_MAX];
};
struct llmt_env {
	unsigned n;
	struct llmt_env_var var[LLMT_ENV_MAX];
	char note[320];   /* a warning for the task's stderr, "" = none */
};

struct llmt_env_input {
	const struct llmt_rm_task *task;   /* this task's entry of the map */
	struct llmt_layout layout;
	unsigned world_size;               /* tasks in the step */
	unsigned local_world_size;         /* tasks on this node */
	unsigned group_rank;               /* this node's place by lowest rank (llmt_rankmap_group_rank) */
	unsigned group_world_size;         /* nodes in the step */
	unsigned node_gpus;                /* GPUs on this node (0 = CPU node) */
	const char *nic;                   /* this task's NIC name, NULL/"" = none */
	const char *master_addr;           /* host of rank 0 */
	uint32_t job_id, step_id;
	const struct llmt_opts *opts;      /* after apply_defaults + validate */
	const struct llmt_policy *policy;  /* never NULL (built-in defaults) */
	const char *resv_ports;            /* SLURM_STEP_RESV_PORTS, NULL = unset */
};

/* Fill out (replacing what it held). Variables, in this order:
 * LLM_TRAIN=1 RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR
 * MASTER_PORT GROUP_RANK GROUP_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE
 * ROLE_NAME (torchrun's names: node place, nodes, RANK, WORLD_SIZE,
 * "default") LLM_TRAIN_TP LLM_TRAIN_PP LLM_TRAIN_DP LLM_TRAIN_TP_RANK
 * LLM_TRAIN_PP_RANK LLM_TRAIN_DP_RANK LLM_TRAIN_GPU LLM_TRAIN_NIC
 * [CUDA_VISIBLE_DEVICES=0,..,min(gpus,local_world_size)-1 on GPU nodes]
 * [LLM_TRAIN_CKPT_DIR LLM_TRAIN_HEARTBEAT_DIR when a ckpt dir is set]
 * LLM_TRAIN_CKPT_INTERVAL LLM_TRAIN_RESTARTS LLM_TRAIN_RESTART_WINDOW
 * LLM_TRAIN_HEARTBEAT_TIMEOUT LLM_TRAIN_HEARTBEAT_STARTUP
 * LLM_TRAIN_NCCL_PROFILE [LLM_TRAIN_MICRO_BATCH LLM_TRAIN_GRAD_ACCUM
 * LLM_TRAIN_RECOMPUTE LLM_TRAIN_SEQ LLM_TRAIN_AUTO when the planner chose
 * the layout] [the profile's NCCL_* with ${...} substituted].
 * Returns 0, or -1 with err (value too long, unknown profile). */
int llmt_envgen(const struct llmt_env_input *in, struct llmt_env *out,
		char *err, size_t errlen);

/* llmt_subst (subst.h) with this task's values. 0 or -1 with err. */
int llmt_env_subst(const char *tmpl, const struct llmt_env_input *in,
		   char *buf, size_t len, char *err, size_t errlen);

/* The value of name in env, or NULL. */
const char *llmt_env_get(const struct llmt_env *env, const char *name);

#endif
