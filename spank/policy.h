/* Admin policy /etc/slurm/llm-train.yaml, read with libyaml into a fixed
 * struct: defaults, limits, node types, topology source, NCCL profiles,
 * health checks, rendezvous ports. Strict: unknown keys and out-of-range
 * values refused with file:line:column; a missing file gives safe
 * built-in defaults. */
#ifndef LLMT_POLICY_H
#define LLMT_POLICY_H

#include <stddef.h>
#include <sys/stat.h>
#include "llmt_limits.h"
#include "interval.h"

#define LLMT_MAX_ROOTS         16
#define LLMT_MAX_LIMIT_ENTRIES 64
#define LLMT_MAX_NODE_TYPES    32
#define LLMT_MAX_NICS          16
#define LLMT_MAX_PROFILES      16
#define LLMT_MAX_PROFILE_VARS  32

/* llmt_policy_load return codes */
#define LLMT_POLICY_OK        0
#define LLMT_POLICY_DEFAULTS  1   /* file absent: built-in defaults in *out */
#define LLMT_POLICY_ERROR    -1   /* err says file:line:column: why */

/* Caps for one partition or account; 0 = no cap. */
struct llmt_limit {
	char name[LLMT_NAME_MAX];
	unsigned max_nodes;
	unsigned max_gpus;
};

/* A kind of node: which hosts, their GPUs, NVLink domain and NICs. */
struct llmt_node_type {
	char name[LLMT_NAME_MAX];
	char nodes[LLMT_HOSTLIST_MAX];  /* hostlist expression, e.g. gpu[001-128] */
	unsigned gpus_per_node;         /* 0 = CPU node */
	unsigned nvlink_block;          /* 0 = NVLink domain is the node; else
					   GPUs per multi-node domain (e.g. 72),
					   nodes grouped by topology BlockName */
	unsigned nnics;
	char nics[LLMT_MAX_NICS][LLMT_NAME_MAX]; /* nics[i]: NIC closest to
					   GPU i; fewer NICs than GPUs are
					   shared evenly (GPU g -> nic g*nnics/gpus) */
	double memory_gib;              /* host memory of one node; 0 = not declared */
	double gpu_memory_gib;          /* memory of one GPU; 0 = not declared */
	double gflops;                  /* achieved GFLOP/s of the whole node (its
					   GPUs, or its cores); 0 = planner default */
};

struct llmt_nccl_var {
	char name[LLMT_NAME_MAX];       /* NCCL_* (validated at load) */
	char value[LLMT_VALUE_MAX];     /* may hold ${nic} ${gpu} ${local_rank}
					   ${rank} ${local_world_size} */
};
struct llmt_nccl_profile {
	char name[LLMT_NAME_MAX];
	unsigned nvars;
	struct llmt_nccl_var vars[LLMT_MAX_PROFILE_VARS];
};

enum llmt_topo_source {
	LLMT_TOPO_NONE = 0,   /* no topology: every node on its own leaf */
	LLMT_TOPO_FILE,       /* topology.path */
	LLMT_TOPO_SLURM,      /* dirname($SLURM_CONF or /etc/slurm/slurm.conf)/topology.conf */
};

struct llmt_health_check {
	int enabled;
	unsigned timeout_s;   /* 1..600 */
};

struct llmt_policy {
	char path[LLMT_PATH_MAX];   /* file read, "" for built-in defaults */
	int builtin;                /* 1 when no file was read */

	struct {
		unsigned tp, pp;               /* >= 1 */
		unsigned dp;                   /* 0 = auto */
		struct llmt_interval ckpt_interval;
		unsigned restarts;
		char nccl_profile[LLMT_NAME_MAX];  /* "" = none */
		unsigned heartbeat_timeout_s;      /* hang judged after this */
		unsigned heartbeat_startup_s;      /* grace for init/load */
		int preflight;                     /* the wrapper's self-test before the first attempt */
	} defaults;

	struct {
		unsigned max_restarts;
		unsigned restart_window_s;         /* restarts counted in this window */
		unsigned nroots;                   /* 0 = any clean absolute path */
		char ckpt_roots[LLMT_MAX_ROOTS][LLMT_PATH_MAX];
		unsigned npartitions;
		struct llmt_limit partitions[LLMT_MAX_LIMIT_ENTRIES];
		unsigned naccounts;
		struct llmt_limit accounts[LLMT_MAX_LIMIT_ENTRIES];
	} limits;

	unsigned nnode_types;
	struct llmt_node_type node_types[LLMT_MAX_NODE_TYPES];

	struct {
		enum llmt_topo_source source;
		char path[LLMT_PATH_MAX];          /* for LLMT_TOPO_FILE */
	} topology;

	unsigned nprofiles;
	struct llmt_nccl_profile profiles[LLMT_MAX_PROFILES];

	struct {
		unsigned port_lo, port_hi;   /* MASTER_PORT without Slurm's reserved ports */
	} rendezvous;

	struct {
		struct llmt_health_check gpu_count;      /* GPUs visible == gpus_per_node */
		struct llmt_health_check xid_scan;       /* kernel log Xid/MCE lines since job start */
		struct llmt_health_check ckpt_free_space;/* free space on each ckpt root */
		double ckpt_min_free_gib;
		struct llmt_health_check selftest;       /* prolog: llm-train selftest --size small */
		char selftest_cmd[LLMT_PATH_MAX];        /* its absolute path */
	} health;
};

/* Fill *p with the safe built-in defaults (tp=pp=1, dp=auto, interval
 * auto, 3 restarts (max 10 in 3600 s), no roots restriction, no node
 * types, no topology, no NCCL profile, gpu_count and xid_scan on,
 * fallback MASTER_PORTs 20000-29999). */
void llmt_policy_defaults(struct llmt_policy *p);

/* Load path into a new heap policy (free with llmt_policy_free). Returns
 * LLMT_POLICY_OK, LLMT_POLICY_DEFAULTS (path does not exist: *out holds
 * the built-in defaults) or LLMT_POLICY_ERROR (*out NULL, err holds
 * "path:line:col: reason"). Refuses files over 1 MiB. Does not check the
 * file's owner: call llmt_policy_check_stat for that. */
int llmt_policy_load(const char *path, struct llmt_policy **out,
		     char *err, size_t errlen);

/* Same from text in memory (name used in messages). */
int llmt_policy_parse(const char *text, size_t len, const char *name,
		      struct llmt_policy **out, char *err, size_t errlen);

void llmt_policy_free(struct llmt_policy *p);

/* Security: the policy must be a regular file owned by root (uid 0) and
 * not writable by group or others. st from stat/fstat of path.
 * 0 ok, -1 with err naming path and the problem. */
int llmt_policy_check_stat(const struct stat *st, const char *path,
			   char *err, size_t errlen);

/* The node type whose hostlist holds host, or NULL. */
const struct llmt_node_type *llmt_policy_node_type(const struct llmt_policy *p,
						   const char *host);

/* The NCCL profile called name, or NULL. */
const struct llmt_nccl_profile *llmt_policy_profile(const struct llmt_policy *p,
						    const char *name);

/* The topology.conf path the policy names: for LLMT_TOPO_SLURM the
 * directory of slurm_conf (NULL: /etc/slurm/slurm.conf) + /topology.conf.
 * Returns 0 with buf set, 1 for "no topology", -1 on overflow. */
int llmt_policy_topology_path(const struct llmt_policy *p, const char *slurm_conf,
			      char *buf, size_t len);

#endif
