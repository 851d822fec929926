/* slurm: scontrol calls (hostnames, config, requeue) and the plugin's
 * option as the batch step sees it. The requeue's scontrol calls block
 * the signals Slurm sends the requeued run, so they finish. */
#define _GNU_SOURCE
#include "slurm.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm.h>

#include "launch.h"

#define PROG "llm-train-wrap"

static double slurm_timeout_s = WR_SLURM_TIMEOUT_S;

void wr_slurm_timeout_set(double s)
{
	slurm_timeout_s = s;
}

int wr_slurm_query(char *const argv[], char *out, size_t len, char *err, size_t errlen, const char *instead)
{
	int rc = wr_run_capture_timeout(argv, out, len, err, errlen, slurm_timeout_s);
	if (rc == WR_RUN_TIMEDOUT)
		fprintf(stderr, PROG ": %s %s: no answer in %g s (--slurm-timeout): killed; %s\n",
		        strcmp(argv[0], "/proc/self/exe") == 0 ? PROG : argv[0], argv[1] ? argv[1] : "",
		        slurm_timeout_s, instead);
	return rc;
}

/* Expands a Slurm hostlist with scontrol; returns the count (names in out). */
int wr_hostnames(const char *list, char ***out)
{
	static char buf[1 << 18];
	char err[1024];
	char *argv[] = { "scontrol", "show", "hostnames", (char *)list, NULL };
	*out = NULL;
	if (!list || !*list || wr_slurm_query(argv, buf, sizeof buf, err, sizeof err,
	                                      "the allocation's node names unknown: heartbeats' node names kept") != 0)
		return 0;
	int n = 0, cap = 16;
	char **v = malloc((size_t)cap * sizeof *v);
	for (char *save = NULL, *ln = strtok_r(buf, "\n", &save); ln && v; ln = strtok_r(NULL, "\n", &save)) {
		if (n == cap) {
			char **nv = realloc(v, (size_t)(cap *= 2) * sizeof *v);
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = strdup(ln);
	}
	*out = v;
	return n;
}

static const char pre[] = "SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_";

bool wr_plugin_options(void)
{
	extern char **environ;
	if (getenv("LLM_TRAIN"))
		return true;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, pre, sizeof pre - 1) == 0 && strchr(*e + sizeof pre - 1, '='))
			return true;
	return false;
}

static const char *opt_env(const char *name)
{
	char k[128];
	snprintf(k, sizeof k, "%s%s", pre, name);
	return getenv(k);
}

const char *wr_plugin_ckpt_dir(char *buf, size_t len)
{
	const char *v = opt_env("llm_ckpt_dir"), *spec = opt_env("llm_train");
	char tmp[4200];

	if (!v && spec) {
		snprintf(tmp, sizeof tmp, "%s", spec);
		for (char *save = NULL, *kv = strtok_r(tmp, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
			if (strncmp(kv, "ckpt-dir=", 9) == 0)
				v = kv + 9;
	}
	if (!v || v[0] != '/' || strlen(v) >= len)
		return NULL;
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return NULL;
	snprintf(buf, len, "%s", v);
	return buf;
}

/* tp/pp/dp from the plugin's --llm-train option as the job sees it. */
void wr_plugin_layout(int *tp, int *pp, int *dp, bool *dp_auto)
{
	extern char **environ;
	*tp = *pp = 1;
	*dp = 0;
	*dp_auto = false;
	const char *spec = NULL, *tpv = NULL, *ppv = NULL, *dpv = NULL;
	for (char **e = environ; *e; e++) {
		if (strncmp(*e, pre, sizeof pre - 1) != 0)
			continue;
		const char *name = *e + sizeof pre - 1, *v = strchr(name, '=');
		if (!v)
			continue;
		size_t len = (size_t)(v - name);
		v++;
		if (len == 9 && strncmp(name, "llm_train", 9) == 0)
			spec = v;
		else if (len == 6 && strncmp(name, "llm_tp", 6) == 0)
			tpv = v;
		else if (len == 6 && strncmp(name, "llm_pp", 6) == 0)
			ppv = v;
		else if (len == 6 && strncmp(name, "llm_dp", 6) == 0)
			dpv = v;
	}
	/* A training job of the plugin: dp defaults to auto (from the task
	 * count). --llm-train=SPEC first, then the separate options override it. */
	if (spec || tpv || ppv || dpv)
		*dp_auto = true;
	char buf[4200];
	snprintf(buf, sizeof buf, "%s", spec ? spec : "");
	for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		if (strncmp(kv, "tp=", 3) == 0)
			*tp = atoi(kv + 3);
		else if (strncmp(kv, "pp=", 3) == 0)
			*pp = atoi(kv + 3);
		else if (strncmp(kv, "dp=", 3) == 0) {
			*dp_auto = strcmp(kv + 3, "auto") == 0;
			*dp = *dp_auto ? 0 : atoi(kv + 3);
		}
	}
	if (tpv)
		*tp = atoi(tpv);
	if (ppv)
		*pp = atoi(ppv);
	if (dpv) {
		*dp_auto = strcmp(dpv, "auto") == 0;
		*dp = *dp_auto ? 0 : atoi(dpv);
	}
	if (*tp < 1)
		*tp = 1;
	if (*pp < 1)
		*pp = 1;
}

static int run_cmd(const char *a0, const char *a1, const char *a2, const char *a3)
{
	char out[2048], err[2048];
	char *argv[] = { (char *)a0, (char *)a1, (char *)a2, (char *)a3, NULL };
	int rc = wr_slurm_query(argv, out, sizeof out, err, sizeof err, "the requeue may be incomplete");
	if (rc != 0 && rc != WR_RUN_TIMEDOUT)
		fprintf(stderr, PROG ": %s %s %s %s: exit %d: %s", a0, a1, a2, a3 ? a3 : "", rc, err);
	return rc;
}

/* Slurm itself requeued the job while this run still ends (scontrol
 * requeue by its owner or an admin, a preemption that requeues): the
 * wrapper's own scontrol requeue then fails with ESLURM_JOB_PENDING's
 * "Job is pending execution" (squeue says COMPLETING meanwhile, as for a
 * cancelled job, so only this message tells them apart), though the job
 * comes back all the same. */
static bool requeued_by_slurm(const char *err)
{
	return strstr(err, "pending execution") != NULL;
}

static int requeue_cmd(const char *job, const char *verb)
{
	char out[2048], err[2048];
	char *argv[] = { "scontrol", (char *)verb, (char *)job, NULL }, instead[160];
	/* the safe side: not requeued (the wrapper exits with the attempt's
	 * code); if slurmctld got it after all, the job comes back and resumes */
	snprintf(instead, sizeof instead, "taken as not requeued%s", strcmp(verb, "requeuehold") == 0 ?
	         " (if it was, the job is held: scontrol release it)" : "");
	int rc = wr_slurm_query(argv, out, sizeof out, err, sizeof err, instead);
	if (rc == WR_RUN_TIMEDOUT)
		return rc;
	if (rc != 0 && requeued_by_slurm(err)) {
		fprintf(stderr, PROG ": job %s was requeued by Slurm already (scontrol requeue or preemption)\n", job);
		return 0;
	}
	if (rc != 0)
		fprintf(stderr, PROG ": scontrol %s %s: exit %d: %s", verb, job, rc, err);
	return rc;
}

/* scontrol requeue, keeping the excluded nodes out of the next run. The
 * exclusion of a running job cannot be updated, so it is held, updated
 * and released. Returns scontrol's exit code. */
int wr_requeue(const char *job, const struct wr_nodes *ex, struct wr_ledger *l)
{
	char idarg[64], exarg[WR_MAX_NODES * (WR_NODE_LEN + 1) + 32];
	snprintf(idarg, sizeof idarg, "JobId=%s", job);
	size_t o = (size_t)snprintf(exarg, sizeof exarg, "ExcNodeList=");
	for (int i = 0; i < ex->n && o < sizeof exarg; i++)
		o += (size_t)snprintf(exarg + o, sizeof exarg - o, "%s%s", i ? "," : "", ex->name[i]);
	wr_ledger_event(l, "requeue", json_pack("{s:s,s:o}", "job", job, "exclude", wr_nodes_json(ex)));
	fflush(NULL);
	wr_shield_children(true);
	if (ex->n == 0)
		return requeue_cmd(job, "requeue");
	int rc = requeue_cmd(job, "requeuehold");
	if (rc != 0)
		return rc;
	/* From here the job is requeued (held): Slurm signals this run, the
	 * shielded scontrol calls still finish within KillWait. */
	int rc1 = run_cmd("scontrol", "update", idarg, exarg);
	int rc2 = run_cmd("scontrol", "release", job, NULL);
	if (rc1 || rc2)
		wr_ledger_event(l, "requeue_incomplete", json_pack("{s:i,s:i}", "update_rc", rc1, "release_rc", rc2));
	return 0;
}

/* Slurm's SlurmdTimeout (seconds) from scontrol show config, 300 if unknown. */
double wr_slurmd_timeout(void)
{
	static char out[1 << 17];
	char err[512];
	char *argv[] = { "scontrol", "show", "config", NULL };
	if (wr_slurm_query(argv, out, sizeof out, err, sizeof err, "SlurmdTimeout taken as 300 s") != 0)
		return 300;
	const char *p = strstr(out, "\nSlurmdTimeout");
	double t;
	if (p && (p = strchr(p, '=')) && sscanf(p + 1, "%lf", &t) == 1 && t > 0)
		return t;
	return 300;
}

int wr_cancel_leftover_steps(const char *job)
{
	static char out[1 << 16];
	char err[1024];
	char *argv[] = { "squeue", "-h", "-s", "-j", (char *)job, "-o", "%i %j", NULL };
	if (!job || !*job || wr_slurm_query(argv, out, sizeof out, err, sizeof err, "leftover steps not looked for") != 0)
		return 0;
	int n = 0;
	for (char *save = NULL, *ln = strtok_r(out, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		char id[64], name[128];
		if (sscanf(ln, "%63s %127s", id, name) != 2 || strcmp(name, WR_STEP_NAME) != 0)
			continue;
		fprintf(stderr, PROG ": step %s is still listed after its srun ended: scancel\n", id);
		char *cv[] = { "scancel", id, NULL };
		wr_shield_children(false);
		if (wr_slurm_query(cv, err, sizeof err, err, sizeof err, "the step is left as it is") == 0)
			n++;
	}
	return n;
}

/* llm-train-wrap job-state JOB: the job's base state from slurmctld
 * (libslurm), which scontrol and squeue hide behind COMPLETING while the
 * job ends. A command of its own so that libslurm's fatal() ends it, not
 * the wrapper. 0 with the name printed, 1 when unknown. */
int wr_job_state_main(int argc, char **argv)
{
	char *end = NULL;
	unsigned long id = argc == 2 ? strtoul(argv[1], &end, 10) : 0;
	job_info_msg_t *m = NULL;
	static const char *const names[] = {   /* enum job_states, slurm.h */
		[JOB_PENDING] = "PENDING", [JOB_RUNNING] = "RUNNING", [JOB_SUSPENDED] = "SUSPENDED",
		[JOB_COMPLETE] = "COMPLETED", [JOB_CANCELLED] = "CANCELLED", [JOB_FAILED] = "FAILED",
		[JOB_TIMEOUT] = "TIMEOUT", [JOB_NODE_FAIL] = "NODE_FAIL", [JOB_PREEMPTED] = "PREEMPTED",
		[JOB_BOOT_FAIL] = "BOOT_FAIL", [JOB_DEADLINE] = "DEADLINE", [JOB_OOM] = "OUT_OF_MEMORY",
	};
	if (!id || id > UINT32_MAX || *end) {
		fprintf(stderr, PROG " job-state: want a job id\n");
		return 64;
	}
	slurm_init(NULL);
	if (slurm_load_job(&m, (uint32_t)id, SHOW_ALL) != SLURM_SUCCESS || !m) {
		fprintf(stderr, PROG " job-state %lu: %s\n", id, slurm_strerror(slurm_get_errno()));
		return 1;
	}
	int rc = 1;
	for (uint32_t i = 0; i < m->record_count && rc; i++)
		if (m->job_array[i].job_id == id) {
			uint32_t b = m->job_array[i].job_state & JOB_STATE_BASE;
			printf("%s\n", b < sizeof names / sizeof *names ? names[b] : "OTHER");
			rc = 0;
		}
	slurm_free_job_info_msg(m);
	slurm_fini();
	return rc;
}

int wr_job_cancelled(const char *job)
{
	char out[256], err[1024];
	char *argv[] = { "/proc/self/exe", "job-state", (char *)job, NULL };
	return wr_slurm_query(argv, out, sizeof out, err, sizeof err, "the job taken as not cancelled") == 0 &&
	       strncmp(out, "CANCELLED\n", 10) == 0;
}
