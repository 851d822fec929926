/* plugin.c: glue shared by every context: option table and registration,
 * raw option values (bounded), plugstack arguments, the root-safe policy
 * loader, option assembly, settings environment and --llm-explain output. */
#include "plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "autolayout.h"
#include "health_io.h"
#include "plan.h"
#include "llmt/env.h"

struct llmt_raw_opts llmt_raw;
struct llmt_conf llmt_conf;
char llmt_conf_err[LLMT_ERRLEN];

static int opt_cb(int val, const char *optarg, int remote);

/* has_arg 2: optional argument (--llm-train alone enables with defaults). */
static struct spank_option llmt_options[LLMT_NOPTS] = {
	{ "llm-train", "SPEC", "Make this a training job. SPEC: comma-separated tp=N|auto pp=N|auto "
	  "dp=N|auto ckpt-dir=DIR ckpt-interval=I restarts=N nccl=NAME explain model=FILE "
	  "micro-batch=N|auto global-batch=N seq=T", 2,
	  LLMT_OPT_TRAIN, opt_cb },
	{ "llm-tp", "N|auto", "Tensor-parallel size (within one NVLink domain)", 1, LLMT_OPT_TP, opt_cb },
	{ "llm-pp", "N|auto", "Pipeline-parallel size", 1, LLMT_OPT_PP, opt_cb },
	{ "llm-dp", "N|auto", "Data-parallel size (auto: tasks / (tp*pp))", 1, LLMT_OPT_DP, opt_cb },
	{ "llm-ckpt-dir", "DIR", "Checkpoint directory (under a root the policy allows)", 1,
	  LLMT_OPT_CKPT_DIR, opt_cb },
	{ "llm-ckpt-interval", "N|Ns|Nm|Nh|auto", "Checkpoint every N steps, every time span, or auto", 1,
	  LLMT_OPT_CKPT_INTERVAL, opt_cb },
	{ "llm-restarts", "N", "Restart budget of the job (capped by the policy)", 1,
	  LLMT_OPT_RESTARTS, opt_cb },
	{ "llm-nccl-profile", "NAME", "NCCL profile of the admin policy", 1, LLMT_OPT_NCCL, opt_cb },
	{ "llm-explain", NULL, "Print the rank map and environment, run nothing", 0,
	  LLMT_OPT_EXPLAIN, opt_cb },
};

const char *llmt_opt_name(int id)
{
	return (id >= 0 && id < LLMT_NOPTS) ? llmt_options[id].name : "?";
}

static void raw_store(int id, const char *arg)
{
	if (id < 0 || id >= LLMT_NOPTS)
		return;
	llmt_raw.given[id] = 1;
	llmt_raw.too_long[id] = 0;
	llmt_raw.val[id][0] = '\0';
	if (!arg)
		return;
	size_t n = strnlen(arg, LLMT_SPEC_MAX + 1);
	if (n > LLMT_SPEC_MAX) {
		llmt_raw.too_long[id] = 1;
		return;
	}
	memcpy(llmt_raw.val[id], arg, n);
	llmt_raw.val[id][n] = '\0';
}

/* Stores only: every check happens in init_post_opt, where one clear
 * line can name the bad value (a failing callback gives Slurm's generic
 * "invalid argument" instead). */
static int opt_cb(int val, const char *optarg, int remote)
{
	(void)remote;
	/* sbatch hands an option given without a value to the job's steps as
	 * the text "(null)" (SLURM_SPANK__SLURM_SPANK_OPTION_*), and srun
	 * passes that back: it means no value. */
	if (optarg && strcmp(optarg, "(null)") == 0)
		optarg = NULL;
	raw_store(val, optarg);
	return 0;
}

void llmt_raw_reset(void)
{
	memset(&llmt_raw, 0, sizeof(llmt_raw));
}

int llmt_raw_any(void)
{
	for (int i = 0; i < LLMT_NOPTS; i++)
		if (llmt_raw.given[i])
			return 1;
	return 0;
}

static int set_path(char *dst, const char *key, const char *v, char *err, size_t errlen)
{
	if (v[0] != '/' || strlen(v) >= LLMT_PATH_MAX) {
		snprintf(err, errlen, "plugstack argument %s=%s: need an absolute path", key, v);
		return -1;
	}
	strcpy(dst, v);
	return 0;
}

int llmt_conf_parse(int ac, char **av, struct llmt_conf *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->policy, sizeof(c->policy), "%s", LLMT_DEFAULT_POLICY);
	snprintf(c->state_dir, sizeof(c->state_dir), "/run/slurm-llm-train");
	snprintf(c->scontrol, sizeof(c->scontrol), "/usr/bin/scontrol");
	static const char *const keys[] = { "policy", "kernel_log", "state_dir", "dev_dir", "scontrol" };
	char *dst[] = { c->policy, c->kernel_log, c->state_dir, c->dev_dir, c->scontrol };
	for (int i = 0; i < ac; i++) {
		const char *a = av[i];
		if (!a)
			continue;
		const char *eq = strchr(a, '=');
		int k = -1;
		for (int j = 0; eq && j < 5; j++)
			if ((size_t)(eq - a) == strlen(keys[j]) && strncmp(a, keys[j], (size_t)(eq - a)) == 0)
				k = j;
		if (k < 0) {
			snprintf(err, errlen, "unknown plugstack argument '%s' (known: policy= kernel_log= state_dir= dev_dir= scontrol=)", a);
			return -1;
		}
		if (set_path(dst[k], keys[k], eq + 1, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int llmt_plugin_init(spank_t sp, int ac, char **av)
{
	/* llmt_raw is not cleared here: should Slurm call init again after
	 * delivering the options, they must survive (each process loads the
	 * plugin fresh, so it starts zeroed). */
	/* Not an init error ("required": every job fails, a batch job's node
	 * drains): llmt_prepare refuses the training jobs with it. */
	llmt_conf_err[0] = '\0';
	if (llmt_conf_parse(ac, av, &llmt_conf, llmt_conf_err, sizeof(llmt_conf_err)) != 0)
		slurm_error(LLMT_MSG "%s", llmt_conf_err);
	for (int i = 0; i < LLMT_NOPTS; i++) {
		spank_err_t rc = spank_option_register(sp, &llmt_options[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error(LLMT_MSG "cannot register --%s: %s", llmt_options[i].name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

void llmt_opt_env_name(int id, char *buf, size_t len)
{
	char name[64];
	snprintf(name, sizeof(name), "%s", llmt_opt_name(id));
	for (char *p = name; *p; p++)
		if (*p == '-')
			*p = '_';
	snprintf(buf, len, "SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_%s", name);
}

void llmt_raw_from_job_env(spank_t sp)
{
	char name[128];
	static char val[LLMT_SPEC_MAX + 2];
	for (int i = 0; i < LLMT_NOPTS; i++) {
		if (llmt_raw.given[i])
			continue;
		llmt_opt_env_name(i, name, sizeof(name));
		spank_err_t rc = spank_getenv(sp, name, val, sizeof(val));
		if (rc == ESPANK_SUCCESS)
			raw_store(i, (val[0] && strcmp(val, "(null)") != 0) ? val : NULL);
		else if (rc == ESPANK_NOSPACE) {
			llmt_raw.given[i] = 1;
			llmt_raw.too_long[i] = 1;
		} else if (rc != ESPANK_ENV_NOEXIST) {
			slurm_error(LLMT_MSG "spank_getenv(%s): %s", name, spank_strerror(rc));
		}
	}
}

void llmt_raw_from_getopt(spank_t sp)
{
	char name[128];
	for (int i = 0; i < LLMT_NOPTS; i++) {
		if (llmt_raw.given[i])
			continue;
		char *arg = NULL;
		spank_err_t rc = spank_option_getopt(sp, &llmt_options[i], &arg);
		if (rc == ESPANK_SUCCESS) {
			raw_store(i, (arg && arg[0] && strcmp(arg, "(null)") != 0) ? arg : NULL);
			continue;
		}
		/* ESPANK_ERROR: not given; other codes: options unavailable here
		 * (Slurm 22.05 runs no init before job_prolog): the environment
		 * below still carries them. */
		if (rc != ESPANK_ERROR)
			slurm_debug(LLMT_MSG "spank_option_getopt(--%s): %s", llmt_opt_name(i),
				    spank_strerror(rc));
		llmt_opt_env_name(i, name, sizeof(name));
		/* prolog/epilog see the job's SPANK env with a SPANK_ prefix */
		char pname[160];
		snprintf(pname, sizeof(pname), "SPANK_%s", name + strlen("SLURM_SPANK_"));
		const char *v = getenv(pname);
		if (!v)
			v = getenv(name);
		if (v)
			raw_store(i, (v[0] && strcmp(v, "(null)") != 0) ? v : NULL);
	}
}

int llmt_opts_from_raw(struct llmt_opts *o, char *err, size_t errlen)
{
	llmt_opts_init(o);
	for (int i = 0; i < LLMT_NOPTS; i++) {
		if (!llmt_raw.given[i])
			continue;
		if (llmt_raw.too_long[i]) {
			snprintf(err, errlen, "--%s: value longer than %d bytes", llmt_opt_name(i), LLMT_SPEC_MAX);
			return -1;
		}
		const char *v = llmt_raw.val[i][0] ? llmt_raw.val[i] : NULL;
		if (i != LLMT_OPT_TRAIN && i != LLMT_OPT_EXPLAIN && !v) {
			snprintf(err, errlen, "--%s needs a value", llmt_opt_name(i));
			return -1;
		}
		/* the core's message names the option and the bad value */
		if (llmt_opts_set(o, llmt_opt_name(i), v, err, errlen) != 0)
			return -1;
	}
	if (llmt_raw_any())
		o->enabled = 1;
	return 0;
}

struct llmt_policy *llmt_policy_open(const char *path, char *err, size_t errlen)
{
	struct llmt_policy *p = NULL;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			p = malloc(sizeof(*p));
			if (!p) {
				snprintf(err, errlen, "out of memory for the policy");
				return NULL;
			}
			llmt_policy_defaults(p);
			spank_context_t c = spank_context();   /* a mistyped policy= drops every limit */
			(c == S_CTX_REMOTE || c == S_CTX_JOB_SCRIPT ? slurm_info : slurm_verbose)(
				LLMT_MSG "policy %s not found: built-in defaults", path);
			return p;
		}
		snprintf(err, errlen, "policy %s: %s", path,
			 errno == ELOOP ? "is a symbolic link (refused)" : strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "policy %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (llmt_policy_check_stat(&st, path, err, errlen) != 0) {
		close(fd);
		return NULL;
	}
	const size_t max = 1u << 20;   /* read at most max + 1 bytes: larger is refused below */
	char *text = malloc(max + 1);
	if (!text) {
		snprintf(err, errlen, "out of memory reading %s", path);
		close(fd);
		return NULL;
	}
	size_t n = 0;
	while (n <= max) {
		ssize_t r = read(fd, text + n, max + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "policy %s: %s", path, strerror(errno));
			free(text);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > max) {
		snprintf(err, errlen, "policy %s: larger than 1 MiB", path);
		free(text);
		return NULL;
	}
	text[n] = '\0';
	int rc = llmt_policy_parse(text, n, path, &p, err, errlen);
	free(text);
	if (rc == LLMT_POLICY_ERROR || !p) {
		if (p)
			llmt_policy_free(p);
		return NULL;
	}
	return p;
}

int llmt_prepare(const struct llmt_job_info *job, struct llmt_opts *o,
		 struct llmt_policy **pol, char *err, size_t errlen)
{
	*pol = NULL;
	if (llmt_conf_err[0])
		return snprintf(err, errlen, "plugstack.conf: %s: training jobs refused until it is fixed",
				llmt_conf_err), -1;
	if (llmt_opts_from_raw(o, err, errlen) != 0)
		return -1;
	struct llmt_policy *p = llmt_policy_open(llmt_conf.policy, err, errlen);
	if (!p)
		return -1;
	llmt_opts_apply_defaults(o, p);
	if (llmt_opts_validate(o, p, job, err, errlen) != 0) {
		llmt_policy_free(p);
		return -1;
	}
	*pol = p;
	return 0;
}

int llmt_prepare_or_log(const struct llmt_job_info *job, struct llmt_opts *o,
			struct llmt_policy **pol)
{
	char err[LLMT_ERRLEN];
	if (llmt_prepare(job, o, pol, err, sizeof(err)) != 0) {
		slurm_error(LLMT_MSG "%s", err);
		return -1;
	}
	return 0;
}

int llmt_auto_step(struct llmt_opts *o, const struct llmt_policy *p, uid_t uid,
		   const struct llmt_job_info *job, const unsigned *tpn, struct llmt_auto_out *out,
		   char *err, size_t errlen)
{
	if (!llmt_opts_is_auto(o) || o->choice.done)
		return 0;
	if (!job->nodelist || !*job->nodelist || !tpn) {
		snprintf(err, errlen, "tp=auto: the step's nodes are not known here");
		return -1;
	}
	if (llmt_auto_apply(o, p, uid, job->nodelist, tpn, job->nnodes, out, err, errlen) != 0)
		return -1;
	return llmt_opts_validate(o, p, job, err, errlen);
}

void llmt_job_control_mark(spank_t sp)
{
	spank_err_t rc = spank_job_control_setenv(sp, "LLM_TRAIN", "1", 1);
	if (rc != ESPANK_SUCCESS)
		slurm_error(LLMT_MSG "spank_job_control_setenv(LLM_TRAIN): %s", spank_strerror(rc));
}

/* The policy's checkpoint root that holds dir, or NULL. */
static const char *ckpt_root_of(const struct llmt_policy *p, const char *dir)
{
	const char *best = NULL;
	for (unsigned i = 0; i < p->limits.nroots && i < LLMT_MAX_ROOTS; i++) {
		const char *r = p->limits.ckpt_roots[i];
		size_t n = strlen(r);
		while (n > 1 && r[n - 1] == '/')
			n--;
		if (strncmp(dir, r, n) == 0 && (dir[n] == '/' || dir[n] == '\0' || n == 1) &&
		    (!best || n > strlen(best)))
			best = r;
	}
	return best;
}

int llmt_ckpt_space_check(const struct llmt_opts *o, const struct llmt_policy *p,
			  char *err, size_t errlen)
{
	if (!p->health.ckpt_free_space.enabled || p->health.ckpt_min_free_gib <= 0 || !o->ckpt_dir[0])
		return 0;
	const char *root = ckpt_root_of(p, o->ckpt_dir);
	if (!root)
		return 0;
	unsigned t = p->health.ckpt_free_space.timeout_s ? p->health.ckpt_free_space.timeout_s : 10;
	uint64_t avail = 0, need = (uint64_t)(p->health.ckpt_min_free_gib * 1073741824.0);
	char e[LLMT_ERRLEN];
	if (llmt_free_bytes_bounded(root, &avail, (int)t * 1000, e, sizeof(e)) != 0) {
		snprintf(err, errlen, "checkpoint root %s: %s: job not submitted", root, e);
		return -1;
	}
	if (avail < need) {
		snprintf(err, errlen, "checkpoint root %s has %.1f GiB free, the policy needs %.1f GiB: "
			 "job not submitted", root, (double)avail / 1073741824.0, p->health.ckpt_min_free_gib);
		return -1;
	}
	return 0;
}

int llmt_post_opt_check(spank_t sp, const char *partition_var, const char *account_var,
			const char *explain_refusal)
{
	if (!llmt_raw_any())
		return 0;
	struct llmt_job_info job;
	memset(&job, 0, sizeof(job));
	job.partition = getenv(partition_var);
	job.account = getenv(account_var);
	struct llmt_opts o;
	struct llmt_policy *p = NULL;
	if (llmt_prepare_or_log(&job, &o, &p) != 0)
		return -1;
	char err[LLMT_ERRLEN];
	if (llmt_ckpt_space_check(&o, p, err, sizeof(err)) != 0) {
		slurm_error(LLMT_MSG "%s", err);
		llmt_policy_free(p);
		return -1;
	}
	/* auto: the model is read and checked now (as the user); the layout
	 * is chosen where the allocation is known (step start) */
	llmt_config mc;
	if (llmt_opts_is_auto(&o) && llmt_model_read(o.model, getuid(), &mc, err, sizeof(err)) != 0) {
		slurm_error(LLMT_MSG "%s: job not submitted", err);
		llmt_policy_free(p);
		return -1;
	}
	if (explain_refusal && o.explain) {
		llmt_explain(stdout, &o, p, NULL, NULL, 0, 0, 0);
		fflush(stdout);
		llmt_policy_free(p);
		slurm_error(LLMT_MSG "explain mode: %s", explain_refusal);
		return -1;
	}
	llmt_policy_free(p);
	llmt_job_control_mark(sp);
	return 0;
}

const char *const llmt_rank_vars[] = {
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
	"GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME",
	LLMT_ENV_TP, LLMT_ENV_PP, LLMT_ENV_DP,
	LLMT_ENV_TP_RANK, LLMT_ENV_PP_RANK, LLMT_ENV_DP_RANK,
	LLMT_ENV_GPU, LLMT_ENV_NIC, NULL
};

int llmt_is_rank_var(const char *name)
{
	for (int i = 0; llmt_rank_vars[i]; i++)
		if (strcmp(name, llmt_rank_vars[i]) == 0)
			return 1;
	return 0;
}

int llmt_settings_env(const struct llmt_opts *o, const struct llmt_policy *p,
		      uint32_t job_id, struct llmt_env *out, char *err, size_t errlen)
{
	/* envgen always describes a task: give it a one-task stand-in and
	 * keep only what is not about a rank (nor a GPU or NCCL tuning). */
	struct llmt_rm_task t;
	memset(&t, 0, sizeof(t));
	t.gpu = -1;
	t.nic = -1;
	struct llmt_opts oo = *o;
	oo.nccl_profile[0] = '\0';   /* a profile is per rank (NIC substitution) */
	struct llmt_env_input in;
	memset(&in, 0, sizeof(in));
	in.task = &t;
	in.layout.tp = in.layout.pp = in.layout.dp = 1;
	in.world_size = in.local_world_size = 1;
	in.master_addr = "localhost";
	in.job_id = job_id;
	in.opts = &oo;
	in.policy = p;
	struct llmt_env *full = malloc(sizeof(*full));
	if (!full) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (llmt_envgen(&in, full, err, errlen) != 0) {
		free(full);
		return -1;
	}
	out->n = 0;
	for (unsigned i = 0; i < full->n; i++) {
		const char *n = full->var[i].name;
		if (llmt_is_rank_var(n) || strcmp(n, "CUDA_VISIBLE_DEVICES") == 0 ||
		    strncmp(n, "NCCL_", 5) == 0 || strcmp(n, LLMT_ENV_NCCL_PROFILE) == 0)
			continue;
		out->var[out->n++] = full->var[i];
	}
	if (o->nccl_profile[0] && out->n < LLMT_ENV_MAX) {
		snprintf(out->var[out->n].name, LLMT_ENV_NAME_MAX, LLMT_ENV_NCCL_PROFILE);
		snprintf(out->var[out->n].value, LLMT_ENV_VALUE_MAX, "%s", o->nccl_profile);
		out->n++;
	}
	free(full);
	return 0;
}

static void print_env(FILE *f, const char *indent, const struct llmt_env *e)
{
	for (unsigned i = 0; i < e->n; i++)
		fprintf(f, "%s%s=%s\n", indent, e->var[i].name, e->var[i].value);
}

void llmt_explain(FILE *f, const struct llmt_opts *o, const struct llmt_policy *p,
		  const char *nodelist, const unsigned *tpn, unsigned uniform,
		  uint32_t job_id, uint32_t step_id)
{
	char spec[LLMT_SPEC_MAX + 1];
	char err[LLMT_ERRLEN];
	if (llmt_opts_format(o, spec, sizeof(spec)) != 0)
		snprintf(spec, sizeof(spec), "(too long)");
	fprintf(f, "llm_train: explain: options %s\n", spec);
	fprintf(f, "llm_train: explain: policy %s\n", p->builtin ? "(built-in defaults)" : p->path);
	if (llmt_opts_is_auto(o) && !o->choice.done)
		fprintf(f, "llm_train: explain: layout chosen by the planner at step start for the allocation "
			   "(model %s); `srun --llm-explain` inside the allocation shows the candidates\n", o->model);
	else if (o->dp)
		fprintf(f, "llm_train: explain: layout tp=%u pp=%u dp=%u\n", o->tp, o->pp, o->dp);
	else
		fprintf(f, "llm_train: explain: layout tp=%u pp=%u dp=auto (tasks / (tp*pp))\n", o->tp, o->pp);
	if (!nodelist || !*nodelist) {
		struct llmt_env *e = malloc(sizeof(*e));
		if (e && llmt_settings_env(o, p, job_id, e, err, sizeof(err)) == 0) {
			fprintf(f, "llm_train: explain: node placement is computed at step launch from the "
				   "allocation; job-wide settings every task gets:\n");
			print_env(f, "  ", e);
			fprintf(f, "llm_train: explain: for the full map run `srun --llm-explain ...` inside "
				   "the allocation or llm-train-plan with the node list\n");
		} else if (e) {
			fprintf(f, "llm_train: explain: %s\n", err);
		}
		free(e);
		return;
	}

	struct llmt_topology *topo = NULL;
	char tpath[LLMT_PATH_MAX];
	int tr = llmt_policy_topology_path(p, getenv("SLURM_CONF"), tpath, sizeof(tpath));
	if (tr == 0 && llmt_topology_load(tpath, &topo, err, sizeof(err)) != 0) {
		fprintf(f, "llm_train: explain: topology: %s\n", err);
		return;
	}
	struct llmt_plan *plan = NULL;
	struct llmt_layout lay = { o->tp, o->pp, o->dp };
	if (llmt_plan_build(nodelist, tpn, uniform, topo, p, lay, NULL, &plan, err, sizeof(err)) != 0) {
		fprintf(f, "llm_train: explain: %s\n", err);
		llmt_topology_free(topo);
		return;
	}
	fprintf(f, "llm_train: explain: nodes %s, %u tasks, order %s\n", nodelist, plan->ntasks,
		llmt_rm_order_name(plan->map->order));
	fprintf(f, "llm_train: explain: bytes/step crossing node/leaf/spine: %.3g/%.3g/%.3g "
		   "(Slurm order: %.3g/%.3g/%.3g)\n",
		llmt_cost_level(&plan->cost, LLMT_LVL_NODE), llmt_cost_level(&plan->cost, LLMT_LVL_LEAF),
		llmt_cost_level(&plan->cost, LLMT_LVL_SPINE),
		llmt_cost_level(&plan->slurm_cost, LLMT_LVL_NODE),
		llmt_cost_level(&plan->slurm_cost, LLMT_LVL_LEAF),
		llmt_cost_level(&plan->slurm_cost, LLMT_LVL_SPINE));
	fprintf(f, "%6s %6s %-16s %5s %4s %4s %4s %4s %s\n", "task", "rank", "node", "local",
		"gpu", "tp", "pp", "dp", "nic");
	struct llmt_env *e = malloc(sizeof(*e));
	for (unsigned t = 0; t < plan->ntasks; t++) {
		const struct llmt_rm_task *k = &plan->map->task[t];
		fprintf(f, "%6u %6u %-16s %5u %4d %4u %4u %4u %s\n", t, k->rank,
			plan->names[k->node], k->local_rank, k->gpu, k->tp_rank, k->pp_rank, k->dp_rank,
			llmt_plan_nic(plan, t));
	}
	fprintf(f, "llm_train: explain: MASTER_PORT below is the fallback hash; a step for which "
		   "Slurm reserves ports (MpiParams=ports) gets the last of them\n");
	for (unsigned t = 0; e && t < plan->ntasks; t++) {
		const struct llmt_rm_task *k = &plan->map->task[t];
		struct llmt_env_input in;
		llmt_plan_env_input(plan, t, o, p, job_id, step_id, &in);
		if (llmt_envgen(&in, e, err, sizeof(err)) != 0) {
			fprintf(f, "llm_train: explain: task %u: %s\n", t, err);
			break;
		}
		fprintf(f, "llm_train: explain: environment of task %u (%s):\n", t, plan->names[k->node]);
		print_env(f, "  ", e);
	}
	free(e);
	llmt_plan_free(plan);
	llmt_topology_free(topo);
}
