/* ctx_remote.c: slurmstepd (remote context). user_init computes the
 * step's rank map (the same on every node, from the step node list, the
 * tasks per node, the topology and the node types); task_init gives each
 * task its environment. Errors found in user_init are postponed to
 * task_init, where the task refuses to start with the message on its
 * stderr (srun never sees a user_init failure); a step that srun refused
 * (LLMT_SRUN_REFUSED, see ctx_local.c) has its tasks refused without a
 * word, srun having said why. The partition and account
 * the policy's caps are keyed by come from slurmctld, never from the
 * job's environment. The batch step gets the
 * job-wide settings only, never a rank, so the wrapper is not mistaken
 * for rank 0. MASTER_PORT is the step's last reserved port
 * (SLURM_STEP_RESV_PORTS, ports.h), read in task_init. */
#include "plugin.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <slurm/slurm.h>

#include "hbclean.h"
#include "hostlist.h"
#include "plan.h"

#define LLMT_NODELIST_MAX (64u << 10)

static struct {
	int ready;            /* user_init done for (job_id, step_id) */
	uint32_t job_id, step_id;
	int training;
	int batch;
	int failed;
	int srun_refused;     /* srun refused this step and said so: refuse quietly */
	int port_noted;       /* the bad SLURM_STEP_RESV_PORTS was reported */
	char err[LLMT_ERRLEN];
	struct llmt_opts opts;
	struct llmt_policy *policy;
	struct llmt_topology *topo;
	struct llmt_plan *plan;
	char master[LLMT_HOST_MAX];   /* MASTER_ADDR: rank 0's NodeAddr or name */
	struct llmt_env env;  /* scratch for task_init (one task per process) */
} rs;

static void remote_reset(void)
{
	if (rs.plan)
		llmt_plan_free(rs.plan);
	if (rs.topo)
		llmt_topology_free(rs.topo);
	if (rs.policy)
		llmt_policy_free(rs.policy);
	rs.plan = NULL;
	rs.topo = NULL;
	rs.policy = NULL;
	rs.ready = rs.training = rs.batch = rs.failed = rs.srun_refused = rs.port_noted = 0;
	rs.err[0] = '\0';
	rs.master[0] = '\0';
}

/* Control bytes to '?': a line slurmd logs may quote the job's
 * environment, and no byte of it may start a line of its own there. */
static void one_line(char *s)
{
	for (char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rs.err, sizeof(rs.err), fmt, ap);
	va_end(ap);
	one_line(rs.err);
	rs.failed = 1;
	return 0;    /* reported in task_init */
}

/* spank_getenv into buf; "" when absent. -1 when it does not fit. */
static int job_getenv(spank_t sp, const char *name, char *buf, int len)
{
	buf[0] = '\0';
	spank_err_t rc = spank_getenv(sp, name, buf, len);
	if (rc == ESPANK_SUCCESS || rc == ESPANK_ENV_NOEXIST) {
		if (rc != ESPANK_SUCCESS)
			buf[0] = '\0';
		return 0;
	}
	snprintf(rs.err, sizeof(rs.err), "reading %s: %s", name, spank_strerror(rc));
	rs.failed = 1;
	return -1;
}

static int set_env(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc = spank_setenv(sp, name, value, 1);
	if (rc != ESPANK_SUCCESS) {
		slurm_error(LLMT_MSG "spank_setenv(%s): %s", name, spank_strerror(rc));
		return -1;
	}
	return 0;
}

static int unset_env(spank_t sp, const char *name)
{
	spank_err_t rc = spank_unsetenv(sp, name);
	if (rc != ESPANK_SUCCESS) {
		slurm_error(LLMT_MSG "spank_unsetenv(%s): %s", name, spank_strerror(rc));
		return -1;
	}
	return 0;
}

static uid_t job_uid(spank_t sp);

/* SLURM_STEP_RESV_PORTS (the step's reserved ports, ports.h) in buf, or
 * NULL when unset or unreadable. A value that does not fit is longer than
 * the parser takes: buf is then filled to say so to it (what spank_getenv
 * copied is not relied on). */
static const char *resv_ports(spank_t sp, char *buf, size_t len)
{
	spank_err_t rc = spank_getenv(sp, "SLURM_STEP_RESV_PORTS", buf, (int)len);
	if (rc == ESPANK_SUCCESS)
		return buf;
	if (rc != ESPANK_NOSPACE)
		return NULL;
	memset(buf, '9', len - 1);
	buf[len - 1] = '\0';
	return buf;
}

/* Batch step of an automatic layout: chosen for the whole allocation (the
 * job's nodes and tasks per node), so a model that fits nothing is refused
 * before the script runs, and the wrapper gets the choice for its ledger
 * (LLM_TRAIN_AUTO). The training step decides again for its own nodes. */
static int batch_auto(spank_t sp, struct llmt_job_info *job, char *err, size_t errlen)
{
	char nn[32], tpn_s[4096];
	char *nl = malloc(LLMT_NODELIST_MAX);
	unsigned *tpn = NULL;
	int rc = -1;
	if (!nl)
		return snprintf(err, errlen, "out of memory"), -1;
	if (job_getenv(sp, "SLURM_JOB_NODELIST", nl, (int)LLMT_NODELIST_MAX) ||
	    job_getenv(sp, "SLURM_JOB_NUM_NODES", nn, sizeof(nn)) ||
	    job_getenv(sp, "SLURM_TASKS_PER_NODE", tpn_s, sizeof(tpn_s))) {
		snprintf(err, errlen, "%s", rs.err);
		goto out;
	}
	unsigned long n = strtoul(nn, NULL, 10);
	if (!nl[0] || n == 0 || n > LLMT_MAX_NODES || !(tpn = calloc(n, sizeof(*tpn)))) {
		snprintf(err, errlen, "tp=auto: the job's nodes are not known (SLURM_JOB_NODELIST, "
			 "SLURM_JOB_NUM_NODES)");
		goto out;
	}
	if (llmt_tasks_per_node_parse(tpn_s, (unsigned)n, tpn, err, errlen) != 0)
		goto out;
	job->nodelist = nl;
	job->nnodes = (unsigned)n;
	job->ntasks = 0;
	for (unsigned long i = 0; i < n; i++)
		job->ntasks += tpn[i];
	rc = llmt_auto_step(&rs.opts, rs.policy, job_uid(sp), job, tpn, NULL, err, errlen);
out:
	job->nodelist = NULL;
	free(tpn);
	free(nl);
	return rc;
}

/* Batch step: job-wide settings, no rank variables (unset if inherited). */
static int batch_step(spank_t sp)
{
	struct llmt_job_info job;
	char part[LLMT_NAME_MAX], acct[LLMT_NAME_MAX];
	memset(&job, 0, sizeof(job));
	if (job_getenv(sp, "SLURM_JOB_PARTITION", part, sizeof(part)) ||
	    job_getenv(sp, "SLURM_JOB_ACCOUNT", acct, sizeof(acct)))
		return 0;
	job.partition = part;
	job.account = acct;
	char err[LLMT_ERRLEN];
	if (llmt_prepare(&job, &rs.opts, &rs.policy, err, sizeof(err)) != 0)
		return fail("%s", err);
	if (llmt_opts_is_auto(&rs.opts) && batch_auto(sp, &job, err, sizeof(err)) != 0)
		return fail("%s", err);
	if (llmt_settings_env(&rs.opts, rs.policy, rs.job_id, &rs.env, err, sizeof(err)) != 0)
		return fail("%s", err);
	for (int i = 0; llmt_rank_vars[i]; i++)
		if (unset_env(sp, llmt_rank_vars[i]) != 0)
			return fail("cannot unset %s", llmt_rank_vars[i]);
	for (unsigned i = 0; i < rs.env.n; i++)
		if (set_env(sp, rs.env.var[i].name, rs.env.var[i].value) != 0)
			return fail("cannot set %s", rs.env.var[i].name);
	return 0;
}

/* MASTER_ADDR for the rank-0 node: its NodeAddr where Slurm has one that
 * differs from the name (nodes whose names do not resolve, e.g. an
 * emulated cluster), else the name. One slurmctld query per step
 * (slurm_load_node_single); on failure the name, logged at debug. */
static void master_addr(const char *node, char *buf, size_t len)
{
	snprintf(buf, len, "%s", node);
	node_info_msg_t *msg = NULL;
	char name[LLMT_HOST_MAX];
	snprintf(name, sizeof(name), "%s", node);
	if (slurm_load_node_single(&msg, name, SHOW_ALL) != SLURM_SUCCESS || !msg) {
		slurm_debug(LLMT_MSG "NodeAddr of %s unknown (%s): MASTER_ADDR is the name", node,
			    slurm_strerror(slurm_get_errno()));
		return;
	}
	for (uint32_t i = 0; i < msg->record_count; i++) {
		const node_info_t *n = &msg->node_array[i];
		if (!n->name || strcmp(n->name, node) != 0 || !n->node_addr || !n->node_addr[0])
			continue;
		size_t k = strlen(n->node_addr);
		if (k < len && strspn(n->node_addr, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789.-:_") == k)
			snprintf(buf, len, "%s", n->node_addr);
		break;
	}
	slurm_free_node_info_msg(msg);
}

/* The job's user (the model file is read with their rights); -1 unknown. */
static uid_t job_uid(spank_t sp)
{
	uid_t uid = (uid_t)-1;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return (uid_t)-1;
	return uid;
}

static int count_host(const char *name, void *arg)
{
	(void)name;
	(void)arg;
	return 0;
}

/* The job's partition and account as slurmctld has them: the policy's
 * caps are keyed by them, and the job's environment is the user's to set
 * (srun passes an exported SLURM_JOB_ACCOUNT to the step untouched). One
 * query per step and node, where the policy has caps: every node of a
 * large step asks at once, so a query that fails (a busy slurmctld's
 * timeout or rate limit) is tried again, twice, after a pause that grows
 * and differs from node to node; still no answer refuses the step
 * (fail()). */
#define JOB_QUERY_TRIES 3
static int job_part_acct(uint32_t job_id, char *part, size_t plen, char *acct, size_t alen)
{
	job_info_msg_t *msg = NULL;
	int found = 0, rc = SLURM_ERROR;
	part[0] = acct[0] = '\0';
	for (int i = 0; i < JOB_QUERY_TRIES; i++) {
		if (i > 0)   /* 0.1-0.5 s, then 0.2-1 s, spread by pid */
			usleep((useconds_t)i * 100000u * (1u + (unsigned)getpid() % 5u));
		if ((rc = slurm_load_job(&msg, job_id, SHOW_ALL)) == SLURM_SUCCESS && msg)
			break;
	}
	if (rc != SLURM_SUCCESS || !msg) {
		fail("cannot read job %u's partition and account from slurmctld (%d tries): %s", job_id,
		     JOB_QUERY_TRIES, slurm_strerror(slurm_get_errno()));
		return -1;
	}
	for (uint32_t i = 0; i < msg->record_count && !found; i++) {
		const job_info_t *j = &msg->job_array[i];
		if (j->job_id != job_id)
			continue;
		snprintf(part, plen, "%s", j->partition ? j->partition : "");
		snprintf(acct, alen, "%s", j->account ? j->account : "");
		found = 1;
	}
	slurm_free_job_info_msg(msg);
	if (!found)
		fail("job %u not known to slurmctld", job_id);
	return found ? 0 : -1;
}

/* The policy's caps by partition and account, with slurmctld's partition
 * and account of the job (in part and acct, LLMT_NAME_MAX each), asked
 * only when the policy has caps. 0, or -1 after fail(). */
static int job_caps(struct llmt_job_info *job, char *part, char *acct)
{
	char err[LLMT_ERRLEN];
	if (!rs.policy->limits.npartitions && !rs.policy->limits.naccounts)
		return 0;
	if (job_part_acct(rs.job_id, part, LLMT_NAME_MAX, acct, LLMT_NAME_MAX) != 0)
		return -1;
	job->partition = part;
	job->account = acct;
	if (llmt_opts_validate(&rs.opts, rs.policy, job, err, sizeof(err)) != 0) {
		fail("%s", err);
		return -1;
	}
	return 0;
}

/* One line in slurmd's log for the admin, on the step's first node only:
 * the layout and order the plugin gave the step (quiet otherwise). */
static void log_step(spank_t sp, const char *nodelist)
{
	uint32_t nodeid = 1;
	const struct llmt_rankmap *m = rs.plan->map;
	if (spank_get_item(sp, S_JOB_NODEID, &nodeid) != ESPANK_SUCCESS || nodeid != 0)
		return;
	char line[LLMT_ERRLEN];
	snprintf(line, sizeof(line), "step %u.%u: tp=%u pp=%u dp=%u, %u tasks on %u nodes (%.200s), order %s, "
		 "rank 0 on %s", rs.job_id, rs.step_id, m->layout.tp, m->layout.pp, m->layout.dp, rs.plan->ntasks,
		 rs.plan->nnodes, nodelist, llmt_rm_order_name(m->order), llmt_plan_master(rs.plan));
	one_line(line);   /* the node list comes from the job's environment */
	slurm_info(LLMT_MSG "%s", line);
}

static int training_step(spank_t sp)
{
	uint32_t ntasks = 0, nnodes = 0;
	spank_err_t rc;
	if ((rc = spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks)) != ESPANK_SUCCESS)
		return fail("cannot get the task count: %s", spank_strerror(rc));
	if ((rc = spank_get_item(sp, S_JOB_NNODES, &nnodes)) != ESPANK_SUCCESS)
		return fail("cannot get the node count: %s", spank_strerror(rc));

	char part[LLMT_NAME_MAX], acct[LLMT_NAME_MAX], tpn_s[4096];
	char *nodelist = malloc(LLMT_NODELIST_MAX);
	unsigned *tpn = NULL;
	if (!nodelist)
		return fail("out of memory");
	if (job_getenv(sp, "SLURM_STEP_NODELIST", nodelist, (int)LLMT_NODELIST_MAX) ||
	    job_getenv(sp, "SLURM_STEP_TASKS_PER_NODE", tpn_s, sizeof(tpn_s)))
		goto out;
	if (!nodelist[0]) {
		fail("SLURM_STEP_NODELIST is not set in the step");
		goto out;
	}
	if (nnodes == 0 || nnodes > LLMT_MAX_NODES) {
		fail("step node count out of range");
		goto out;
	}
	/* Every map below is sized by the node count: a step whose host list
	 * says otherwise (a client built on libslurm sends what it likes) is
	 * refused before anything is built. */
	char herr[LLMT_ERRLEN] = "";
	int nhosts = llmt_hostlist_foreach(nodelist, nnodes, count_host, NULL, herr, sizeof(herr));
	if (nhosts < 0 || (unsigned)nhosts != nnodes) {
		fail("SLURM_STEP_NODELIST does not hold the step's %u nodes%s%s", nnodes,
		     herr[0] ? ": " : "", herr);
		goto out;
	}
	tpn = calloc(nnodes, sizeof(*tpn));
	if (!tpn) {
		fail("out of memory");
		goto out;
	}
	char err[LLMT_ERRLEN];
	if (llmt_tasks_per_node_parse(tpn_s, nnodes, tpn, err, sizeof(err)) != 0) {
		fail("SLURM_STEP_TASKS_PER_NODE: %s", err);
		goto out;
	}

	struct llmt_job_info job;
	memset(&job, 0, sizeof(job));
	job.ntasks = ntasks;
	job.nnodes = nnodes;
	job.nodelist = nodelist;
	if (llmt_prepare(&job, &rs.opts, &rs.policy, err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	if (job_caps(&job, part, acct) != 0)
		goto out;
	if (rs.opts.explain) {
		fail("--llm-explain: nothing is run (use it with srun or sbatch)");
		goto out;
	}
	if (llmt_auto_step(&rs.opts, rs.policy, job_uid(sp), &job, tpn, NULL, err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	/* The daemon's own configuration only (slurmstepd's SLURM_CONF, else
	 * the default): a path from the job's environment would have root
	 * open a file of the user's choosing. */
	char tpath[LLMT_PATH_MAX];
	int tr = llmt_policy_topology_path(rs.policy, getenv("SLURM_CONF"), tpath, sizeof(tpath));
	if (tr < 0) {
		fail("topology path too long");
		goto out;
	}
	if (tr == 0 && llmt_topology_load(tpath, &rs.topo, err, sizeof(err)) != 0) {
		fail("topology: %s", err);
		goto out;
	}
	struct llmt_layout lay = { rs.opts.tp, rs.opts.pp, rs.opts.dp };
	if (llmt_plan_build(nodelist, tpn, 0, rs.topo, rs.policy, lay, NULL, &rs.plan, err,
			    sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	if (rs.plan->ntasks != ntasks || rs.plan->nnodes != nnodes) {
		fail("rank map covers a different step than Slurm's (tasks or nodes differ)");
		goto out;
	}
	master_addr(llmt_plan_master(rs.plan), rs.master, sizeof(rs.master));
	log_step(sp, nodelist);
out:
	free(tpn);
	free(nodelist);
	return 0;
}

/* 1 if srun's local_user_init refused this very step (LLMT_SRUN_REFUSED
 * names it): only srun itself sets that for its own step, and a user who
 * forges it only refuses their own tasks. */
static int srun_refused(spank_t sp, uint32_t job_id, uint32_t step_id)
{
	char v[32], want[32];
	if (spank_getenv(sp, LLMT_SRUN_REFUSED, v, sizeof(v)) != ESPANK_SUCCESS)
		return 0;
	snprintf(want, sizeof(want), "%u.%u", job_id, step_id);
	return strcmp(v, want) == 0;
}

int llmt_remote_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	uint32_t job_id = 0, step_id = 0;
	if (llmt_step_ids(sp, &job_id, &step_id) != 0)
		return -1;
	if (rs.ready && rs.job_id == job_id && rs.step_id == step_id)
		return 0;    /* called again for the same step: idempotent */
	remote_reset();
	rs.ready = 1;
	rs.job_id = job_id;
	rs.step_id = step_id;

	if (srun_refused(sp, job_id, step_id)) {
		rs.training = rs.failed = rs.srun_refused = 1;
		return 0;
	}
	llmt_raw_from_job_env(sp);
	if (!llmt_raw_any())
		return 0;
	if (step_id == SLURM_EXTERN_CONT || step_id == SLURM_INTERACTIVE_STEP)
		return 0;
	rs.training = 1;
	if (step_id == SLURM_BATCH_SCRIPT) {
		rs.batch = 1;
		return batch_step(sp);
	}
	return training_step(sp);
}

int llmt_remote_task_init(spank_t sp, int ac, char **av)
{
	if (!rs.ready) {
		int r = llmt_remote_user_init(sp, ac, av);
		if (r != 0)
			return r;
	}
	if (!rs.training)
		return 0;
	if (rs.srun_refused)
		return -1;    /* srun printed why; the step ends, Slurm frees it */
	if (rs.failed) {
		slurm_error(LLMT_MSG "task refused: %s", rs.err);
		return -1;
	}
	if (rs.batch)
		return 0;

	uint32_t gid = 0, nodeid = 0;
	int lid = -1;
	spank_err_t rc;
	if ((rc = spank_get_item(sp, S_TASK_GLOBAL_ID, &gid)) != ESPANK_SUCCESS ||
	    (rc = spank_get_item(sp, S_TASK_ID, &lid)) != ESPANK_SUCCESS ||
	    (rc = spank_get_item(sp, S_JOB_NODEID, &nodeid)) != ESPANK_SUCCESS) {
		slurm_error(LLMT_MSG "cannot get the task ids: %s", spank_strerror(rc));
		return -1;
	}
	const struct llmt_plan *pl = rs.plan;
	if (!pl || gid >= pl->ntasks) {
		slurm_error(LLMT_MSG "task %u is outside the rank map", gid);
		return -1;
	}
	const struct llmt_rm_task *k = &pl->map->task[gid];
	if (k->node != nodeid || (int)k->local_rank != lid) {
		slurm_error(LLMT_MSG "task refused: task %u is not where a block distribution puts it "
			    "(node %u, local %d; expected %u, %u): use -m block", gid, nodeid, lid,
			    k->node, k->local_rank);
		return -1;
	}
	struct llmt_env_input in;
	llmt_plan_env_input(pl, gid, &rs.opts, rs.policy, rs.job_id, rs.step_id, &in);
	if (rs.master[0])
		in.master_addr = rs.master;
	char resv[LLMT_RESV_PORTS_MAX + 2];
	in.resv_ports = resv_ports(sp, resv, sizeof(resv));
	char err[LLMT_ERRLEN];
	if (llmt_envgen(&in, &rs.env, err, sizeof(err)) != 0) {
		slurm_error(LLMT_MSG "task refused: environment of task %u: %s", gid, err);
		return -1;
	}
	/* every node reads the same value: rank 0 alone says it is bad, once */
	if (rs.env.note[0] && k->rank == 0 && !rs.port_noted) {
		rs.port_noted = 1;
		slurm_error(LLMT_MSG "%s", rs.env.note);
	}
	/* A variable of ours that this step does not set must not leak in
	 * from the batch step or the submitting shell. */
	for (int i = 0; llmt_rank_vars[i]; i++)
		if (!llmt_env_get(&rs.env, llmt_rank_vars[i]) && unset_env(sp, llmt_rank_vars[i]) != 0)
			return -1;
	for (unsigned i = 0; i < rs.env.n; i++)
		if (set_env(sp, rs.env.var[i].name, rs.env.var[i].value) != 0)
			return -1;
	return 0;
}

int llmt_remote_exit(spank_t sp, int ac, char **av)
{
	uint32_t job_id, step_id;
	uid_t uid;

	(void)ac;
	(void)av;
	/* the node heartbeat channel's segments of ranks killed in this step */
	if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_ID, &job_id) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS)
		llmt_hb_clean_step("/dev/shm", (unsigned)uid, job_id, step_id);
	remote_reset();
	return 0;
}
