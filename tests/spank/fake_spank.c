/* fake_spank.c: fake spank_* and slurm_* log functions with the return
 * codes Slurm 22.05 documents in spank.h (ESPANK_NOT_REMOTE outside
 * slurmstepd, ESPANK_NOTASK outside task callbacks, ...). */
#include "fake_spank.h"
#include <slurm/slurm.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fake_spank fake;

static int env_find(char **env, const char *k)
{
	size_t kl = strlen(k);
	for (int i = 0; i < FAKE_MAX_ENV; i++)
		if (env[i] && strncmp(env[i], k, kl) == 0 && env[i][kl] == '=')
			return i;
	return -1;
}

static int env_put(char **env, const char *k, const char *v, int overwrite)
{
	int i = env_find(env, k);
	if (i >= 0 && !overwrite)
		return ESPANK_ENV_EXISTS;
	if (i < 0)
		for (i = 0; i < FAKE_MAX_ENV && env[i]; i++)
			;
	if (i >= FAKE_MAX_ENV)
		return ESPANK_NOSPACE;
	char *s = NULL;
	if (asprintf(&s, "%s=%s", k, v) < 0)
		abort();
	free(env[i]);
	env[i] = s;
	return ESPANK_SUCCESS;
}

static void env_del(char **env, const char *k)
{
	int i = env_find(env, k);
	if (i >= 0) {
		free(env[i]);
		env[i] = NULL;
	}
}

/* The getenv calls' copy-out: v into buf[len], as Slurm reports it. */
static spank_err_t copy_out(const char *v, char *buf, int len)
{
	if (!v)
		return ESPANK_ENV_NOEXIST;
	if (strlen(v) >= (size_t)len)
		return ESPANK_NOSPACE;
	strcpy(buf, v);
	return ESPANK_SUCCESS;
}

static void env_clear(char **env)
{
	for (int i = 0; i < FAKE_MAX_ENV; i++) {
		free(env[i]);
		env[i] = NULL;
	}
}

void fake_free(void)
{
	env_clear(fake.env);
	env_clear(fake.ctl_env);
	for (int i = 0; i < FAKE_MAX_OPTS; i++) {
		free(fake.opts[i].name);
		free(fake.given[i]);
	}
	for (int i = 0; i < fake.nlog; i++)
		free(fake.log[i]);
	memset(&fake, 0, sizeof(fake));
}

void fake_reset(spank_context_t ctx)
{
	fake_free();
	fake.ctx = ctx;
	fake.item.job_id = 1234;
	fake.item.step_id = 0;
	fake.item.nnodes = 1;
	fake.item.local_tasks = 1;
	fake.item.total_tasks = 1;
	fake.item.uid = 1000;
	fake.item.gid = 1000;
}

void fake_env_set(const char *k, const char *v)
{
	if (env_put(fake.env, k, v, 1) != ESPANK_SUCCESS)
		abort();
}

const char *fake_env_get(const char *k)
{
	int i = env_find(fake.env, k);
	return i < 0 ? NULL : strchr(fake.env[i], '=') + 1;
}

const char *fake_ctl_get(const char *k)
{
	int i = env_find(fake.ctl_env, k);
	return i < 0 ? NULL : strchr(fake.ctl_env[i], '=') + 1;
}

int fake_give_option(const char *name, const char *arg)
{
	for (int i = 0; i < fake.nopts; i++) {
		if (strcmp(fake.opts[i].name, name) != 0)
			continue;
		free(fake.given[i]);
		fake.given[i] = arg ? strdup(arg) : NULL;
		fake.given_set[i] = 1;
		if (!fake.opts[i].cb)
			return 0;
		return fake.opts[i].cb(fake.opts[i].val, arg, fake.ctx == S_CTX_REMOTE);
	}
	return -99;
}

static void logv(const char *kind, const char *fmt, va_list ap)
{
	char *s = NULL, *t = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	if (asprintf(&t, "%s%s", kind, s) < 0)
		abort();
	free(s);
	if (getenv("FAKE_SPANK_VERBOSE"))
		fprintf(stderr, "[fake] %s\n", t);
	if (fake.nlog < FAKE_MAX_LOG)
		fake.log[fake.nlog++] = t;
	else
		free(t);
}

int fake_log_has(const char *needle)
{
	for (int i = 0; i < fake.nlog; i++)
		if (strstr(fake.log[i], needle))
			return 1;
	return 0;
}

void fake_log_clear(void)
{
	for (int i = 0; i < fake.nlog; i++)
		free(fake.log[i]);
	fake.nlog = 0;
}

void fake_log_dump(void)
{
	for (int i = 0; i < fake.nlog; i++)
		fprintf(stderr, "  log[%d] %s\n", i, fake.log[i]);
}

#define LOGFN(name, kind) \
	void name(const char *fmt, ...) { va_list ap; va_start(ap, fmt); logv(kind, fmt, ap); va_end(ap); }
LOGFN(slurm_info, "info: ")
LOGFN(slurm_error, "error: ")
LOGFN(slurm_verbose, "verbose: ")
LOGFN(slurm_debug, "debug: ")
LOGFN(slurm_debug2, "debug2: ")
LOGFN(slurm_debug3, "debug3: ")
LOGFN(slurm_spank_log, "")

const char *spank_strerror(spank_err_t err)
{
	switch ((int)err) {
	case ESPANK_SUCCESS: return "Success";
	case ESPANK_BAD_ARG: return "Bad argument";
	case ESPANK_NOT_TASK: return "Not in task context";
	case ESPANK_ENV_EXISTS: return "Environment variable exists";
	case ESPANK_ENV_NOEXIST: return "No such environment variable";
	case ESPANK_NOSPACE: return "Buffer too small";
	case ESPANK_NOT_REMOTE: return "Valid only in remote context";
	case ESPANK_NOT_LOCAL: return "Valid only in local or allocator context";
	case ESPANK_NOT_AVAIL: return "Item not available from this callback";
	default: return "Generic error";
	}
}

int spank_symbol_supported(const char *symbol) { return symbol ? 1 : -1; }
int spank_remote(spank_t sp) { return sp ? fake.ctx == S_CTX_REMOTE : -1; }
spank_context_t spank_context(void) { return fake.ctx; }

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	if (!sp || !opt || !opt->name || fake.nopts >= FAKE_MAX_OPTS)
		return ESPANK_BAD_ARG;
	for (int i = 0; i < fake.nopts; i++)
		if (strcmp(fake.opts[i].name, opt->name) == 0)
			return ESPANK_BAD_ARG;    /* Slurm refuses duplicates */
	fake.opts[fake.nopts] = *opt;
	fake.opts[fake.nopts].name = strdup(opt->name);
	fake.nopts++;
	return ESPANK_SUCCESS;
}

spank_err_t spank_option_getopt(spank_t sp, struct spank_option *opt, char **optarg)
{
	if (!sp || !opt || !opt->name || (opt->has_arg && !optarg))
		return ESPANK_BAD_ARG;
	if (fake.ctx == S_CTX_ALLOCATOR)
		return ESPANK_NOT_AVAIL;
	for (int i = 0; i < fake.nopts; i++) {
		if (strcmp(fake.opts[i].name, opt->name) != 0)
			continue;
		if (!fake.given_set[i])
			return ESPANK_ERROR;
		if (optarg)
			*optarg = fake.given[i];
		return ESPANK_SUCCESS;
	}
	return ESPANK_ERROR;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	if (!sp)
		return ESPANK_BAD_ARG;
	/* Slurm answers job items in srun's local_user_init (launcher job)
	 * and a few in prolog/epilog; the rest only in slurmstepd. */
	int local_ok = item == S_JOB_ID || item == S_JOB_STEPID || item == S_JOB_NNODES ||
		       item == S_JOB_TOTAL_TASK_COUNT || item == S_JOB_UID || item == S_JOB_GID;
	int script_ok = item == S_JOB_ID || item == S_JOB_UID || item == S_JOB_GID;
	if (fake.ctx == S_CTX_ALLOCATOR || fake.ctx == S_CTX_SLURMD ||
	    (fake.ctx == S_CTX_LOCAL && !local_ok) || (fake.ctx == S_CTX_JOB_SCRIPT && !script_ok))
		return ESPANK_NOT_REMOTE;
	va_list ap;
	va_start(ap, item);
	spank_err_t rc = ESPANK_SUCCESS;
	switch (item) {
	case S_JOB_UID: *va_arg(ap, uid_t *) = fake.item.uid; break;
	case S_JOB_GID: *va_arg(ap, gid_t *) = fake.item.gid; break;
	case S_JOB_ID: *va_arg(ap, uint32_t *) = fake.item.job_id; break;
	case S_JOB_STEPID: *va_arg(ap, uint32_t *) = fake.item.step_id; break;
	case S_JOB_NNODES: *va_arg(ap, uint32_t *) = fake.item.nnodes; break;
	case S_JOB_NODEID: *va_arg(ap, uint32_t *) = fake.item.node_id; break;
	case S_JOB_LOCAL_TASK_COUNT: *va_arg(ap, uint32_t *) = fake.item.local_tasks; break;
	case S_JOB_TOTAL_TASK_COUNT: *va_arg(ap, uint32_t *) = fake.item.total_tasks; break;
	case S_SLURM_RESTART_COUNT: *va_arg(ap, uint32_t *) = fake.item.restart_count; break;
	case S_TASK_ID:
		if (!fake.item.in_task) rc = ESPANK_NOT_TASK;
		else *va_arg(ap, int *) = fake.item.task_id;
		break;
	case S_TASK_GLOBAL_ID:
		if (!fake.item.in_task) rc = ESPANK_NOT_TASK;
		else *va_arg(ap, uint32_t *) = fake.item.task_global_id;
		break;
	default: rc = ESPANK_BAD_ARG; break;
	}
	va_end(ap);
	return rc;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	if (!sp || !var || !buf || len <= 0)
		return ESPANK_BAD_ARG;
	if (fake.ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	return copy_out(fake_env_get(var), buf, len);
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
	if (!sp || !var || !val)
		return ESPANK_BAD_ARG;
	if (fake.ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	if (fake.fail_setenv)
		return ESPANK_ERROR;
	fake.setenv_calls++;
	return env_put(fake.env, var, val, overwrite);
}

spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
	if (!sp || !var)
		return ESPANK_BAD_ARG;
	if (fake.ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	env_del(fake.env, var);
	return ESPANK_SUCCESS;
}

spank_err_t spank_job_control_setenv(spank_t sp, const char *name, const char *value, int overwrite)
{
	if (!sp || !name || !value)
		return ESPANK_BAD_ARG;
	if (fake.ctx != S_CTX_LOCAL && fake.ctx != S_CTX_ALLOCATOR)
		return ESPANK_NOT_LOCAL;
	return env_put(fake.ctl_env, name, value, overwrite);
}

spank_err_t spank_job_control_getenv(spank_t sp, const char *name, char *buf, int len)
{
	if (!sp || !name || !buf || len <= 0)
		return ESPANK_BAD_ARG;
	if (fake.ctx != S_CTX_LOCAL && fake.ctx != S_CTX_ALLOCATOR)
		return ESPANK_NOT_LOCAL;
	return copy_out(fake_ctl_get(name), buf, len);
}

spank_err_t spank_job_control_unsetenv(spank_t sp, const char *name)
{
	if (!sp || !name)
		return ESPANK_BAD_ARG;
	if (fake.ctx != S_CTX_LOCAL && fake.ctx != S_CTX_ALLOCATOR)
		return ESPANK_NOT_LOCAL;
	env_del(fake.ctl_env, name);
	return ESPANK_SUCCESS;
}

/* slurmctld's answer to a node query (the plugin looks up the rank-0
 * node's NodeAddr): from fake.node_addrs; these definitions take the
 * place of libslurm's in the test programs. */
int slurm_load_node_single(node_info_msg_t **resp, char *node_name, uint16_t show_flags)
{
	(void)show_flags;
	fake.node_queries++;
	*resp = NULL;
	char addr[128];
	snprintf(addr, sizeof(addr), "%s", node_name);
	size_t n = strlen(node_name);
	for (const char *p = fake.node_addrs; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > n && strncmp(p, node_name, n) == 0 && p[n] == '=')
			snprintf(addr, sizeof(addr), "%.*s", (int)(len - n - 1), p + n + 1);
		p += len + (end ? 1 : 0);
	}
	node_info_msg_t *m = calloc(1, sizeof(*m));
	node_info_t *a = calloc(1, sizeof(*a));
	if (!m || !a)
		abort();
	a->name = strdup(node_name);
	a->node_addr = strdup(addr);
	m->record_count = 1;
	m->node_array = a;
	*resp = m;
	return SLURM_SUCCESS;
}

void slurm_free_node_info_msg(node_info_msg_t *msg)
{
	if (!msg)
		return;
	for (uint32_t i = 0; i < msg->record_count; i++) {
		free(msg->node_array[i].name);
		free(msg->node_array[i].node_addr);
	}
	free(msg->node_array);
	free(msg);
}

/* slurmctld's answer to a job query (the plugin reads the job's partition
 * and account there, never from the job's environment): from
 * fake.job_partition and fake.job_account. */
int slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags)
{
	(void)show_flags;
	fake.job_queries++;
	*resp = NULL;
	if (fake.fail_load_job > 0) {
		fake.fail_load_job--;
		slurm_seterrno(SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT);
		return SLURM_ERROR;
	}
	job_info_msg_t *m = calloc(1, sizeof(*m));
	job_info_t *j = calloc(1, sizeof(*j));
	if (!m || !j)
		abort();
	j->job_id = job_id;
	j->partition = strdup(fake.job_partition);
	j->account = fake.job_account[0] ? strdup(fake.job_account) : NULL;
	m->record_count = 1;
	m->job_array = j;
	*resp = m;
	return SLURM_SUCCESS;
}

void slurm_free_job_info_msg(job_info_msg_t *msg)
{
	if (!msg)
		return;
	for (uint32_t i = 0; i < msg->record_count; i++) {
		free(msg->job_array[i].partition);
		free(msg->job_array[i].account);
	}
	free(msg->job_array);
	free(msg);
}
