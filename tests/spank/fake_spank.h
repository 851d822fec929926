/* fake_spank.h: a stand-in for the spank_* functions slurmstepd, srun,
 * sbatch and slurmd export to plugins, so every llm_train callback runs in
 * every context inside a unit test. State is global and reset per test. */
#ifndef LLMT_FAKE_SPANK_H
#define LLMT_FAKE_SPANK_H

#define _GNU_SOURCE
#include <stdint.h>
#include <sys/types.h>
#include <slurm/spank.h>

#define FAKE_MAX_ENV 256
#define FAKE_MAX_OPTS 32
#define FAKE_MAX_LOG 64

struct fake_item {
	uint32_t job_id, step_id, nnodes, node_id, local_tasks, total_tasks;
	uint32_t task_global_id, restart_count;
	int task_id;
	int in_task;         /* S_TASK_* items answer only when set */
	uid_t uid;
	gid_t gid;
};

struct fake_spank {
	spank_context_t ctx;
	struct fake_item item;
	char *env[FAKE_MAX_ENV];         /* job/task env ("K=V") */
	char *ctl_env[FAKE_MAX_ENV];     /* job control env (allocator/local) */
	struct spank_option opts[FAKE_MAX_OPTS];
	int nopts;
	char *given[FAKE_MAX_OPTS];      /* optarg given for registered opt i */
	int given_set[FAKE_MAX_OPTS];
	char *log[FAKE_MAX_LOG];         /* every message the plugin printed */
	int nlog;
	int setenv_calls;
	int fail_setenv;                 /* make spank_setenv fail (error path) */
	char node_addrs[512];            /* "n1=10.0.0.1,...": what the fake
					   slurm_load_node_single answers (a node
					   not listed: its NodeAddr is its name) */
	int node_queries;                /* slurm_load_node_single calls */
	char job_partition[64];          /* what the fake slurm_load_job answers */
	char job_account[64];
	int job_queries;                 /* slurm_load_job calls */
	int fail_load_job;               /* slurm_load_job calls to fail */
};

extern struct fake_spank fake;
/* The handle passed to callbacks (any non-NULL pointer). */
#define FAKE_SP ((spank_t)&fake)

void fake_reset(spank_context_t ctx);
void fake_free(void);
void fake_env_set(const char *k, const char *v);     /* job env */
const char *fake_env_get(const char *k);
const char *fake_ctl_get(const char *k);             /* job control env */
/* Simulate the user giving --name[=arg]: calls the registered callback as
 * Slurm does (remote set in the remote context) and records it for
 * spank_option_getopt. Returns the callback's result, -99 if unknown. */
int fake_give_option(const char *name, const char *arg);
/* 1 if any logged message contains needle. */
int fake_log_has(const char *needle);
void fake_log_dump(void);
void fake_log_clear(void);

#endif
