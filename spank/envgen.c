/* Environment of one task per doc/contracts.md: torchrun variables, the
 * LLM_TRAIN_* coordinates and settings, CUDA_VISIBLE_DEVICES and the
 * chosen NCCL profile with ${...} substituted. Fixed-size output. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "autolayout.h"
#include "envgen.h"
#include "subst.h"

#include "llmt/err.h"
#include "llmt/env.h"

/* The ${...} values of one task. */
static void subst_vars(const struct llmt_env_input *in, struct llmt_subst_vars *v)
{
	v->nic = in->nic;
	v->gpu = (int)in->task->gpu;
	v->local_rank = in->task->local_rank;
	v->rank = in->task->rank;
	v->local_world_size = in->local_world_size;
}

int llmt_env_subst(const char *tmpl, const struct llmt_env_input *in, char *buf, size_t len,
		   char *err, size_t errlen)
{
	struct llmt_subst_vars v;
	subst_vars(in, &v);
	return llmt_subst(tmpl, &v, buf, len, err, errlen);
}

static int put(struct llmt_env *env, const char *name, char *err, size_t errlen,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int put(struct llmt_env *env, const char *name, char *err, size_t errlen,
	       const char *fmt, ...)
{
	va_list ap;
	int w;
	if (env->n >= LLMT_ENV_MAX) {
		SET_ERR("too many environment variables (most %d)", LLMT_ENV_MAX);
		return -1;
	}
	struct llmt_env_var *v = &env->var[env->n];
	if (strlen(name) >= sizeof(v->name)) {
		SET_ERR("variable name %.64s too long", name);
		return -1;
	}
	snprintf(v->name, sizeof(v->name), "%s", name);
	va_start(ap, fmt);
	w = vsnprintf(v->value, sizeof(v->value), fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof(v->value)) {
		SET_ERR("value of %s too long", name);
		return -1;
	}
	env->n++;
	return 0;
}

int llmt_envgen(const struct llmt_env_input *in, struct llmt_env *env, char *err, size_t errlen)
{
	const struct llmt_rm_task *t = in->task;
	const struct llmt_opts *o = in->opts;
	const struct llmt_policy *p = in->policy;
	char iv[32];

	env->n = 0;
	env->note[0] = '\0';
	if (!in->master_addr || !*in->master_addr) {
		SET_ERR("no MASTER_ADDR (host of rank 0)");
		return -1;
	}
#define PUT(name, ...) do { if (put(env, name, err, errlen, __VA_ARGS__)) return -1; } while (0)
	PUT("LLM_TRAIN", "1");
	PUT("RANK", "%u", t->rank);
	PUT("WORLD_SIZE", "%u", in->world_size);
	PUT("LOCAL_RANK", "%u", t->local_rank);
	PUT("LOCAL_WORLD_SIZE", "%u", in->local_world_size);
	PUT("MASTER_ADDR", "%s", in->master_addr);
	PUT("MASTER_PORT", "%u", llmt_master_port(in->resv_ports, in->job_id, in->step_id,
						  p->rendezvous.port_lo, p->rendezvous.port_hi,
						  env->note, sizeof(env->note)));
	/* the rest of what torchrun sets a worker (torch/distributed/run.py;
	 * TORCHELASTIC_RESTART_COUNT and _MAX_RESTARTS come from the wrapper,
	 * which counts the attempts): scripts read GROUP_RANK as the node rank */
	PUT("GROUP_RANK", "%u", in->group_rank);
	PUT("GROUP_WORLD_SIZE", "%u", in->group_world_size ? in->group_world_size : 1);
	PUT("ROLE_RANK", "%u", t->rank);
	PUT("ROLE_WORLD_SIZE", "%u", in->world_size);
	PUT("ROLE_NAME", "default");
	PUT(LLMT_ENV_TP, "%u", in->layout.tp);
	PUT(LLMT_ENV_PP, "%u", in->layout.pp);
	PUT(LLMT_ENV_DP, "%u", in->layout.dp);
	PUT(LLMT_ENV_TP_RANK, "%u", t->tp_rank);
	PUT(LLMT_ENV_PP_RANK, "%u", t->pp_rank);
	PUT(LLMT_ENV_DP_RANK, "%u", t->dp_rank);
	PUT(LLMT_ENV_GPU, "%d", (int)t->gpu);
	PUT(LLMT_ENV_NIC, "%s", in->nic ? in->nic : "");
	if (in->node_gpus) {
		char list[LLMT_ENV_VALUE_MAX];
		size_t off = 0;
		unsigned n = in->local_world_size < in->node_gpus ? in->local_world_size : in->node_gpus;
		list[0] = 0;
		for (unsigned g = 0; g < n && off < sizeof(list); g++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%u", g ? "," : "", g);
		PUT("CUDA_VISIBLE_DEVICES", "%s", list);
	}
	if (o->ckpt_dir[0]) {
		PUT(LLMT_ENV_CKPT_DIR, "%s", o->ckpt_dir);
		PUT(LLMT_ENV_HEARTBEAT_DIR, "%s/heartbeat", o->ckpt_dir);
	}
	llmt_interval_format(&o->ckpt_interval, iv, sizeof(iv));
	PUT(LLMT_ENV_CKPT_INTERVAL, "%s", iv);
	PUT(LLMT_ENV_RESTARTS, "%d", o->restarts < 0 ? (int)p->defaults.restarts : o->restarts);
	PUT(LLMT_ENV_RESTART_WINDOW, "%u", p->limits.restart_window_s);
	PUT(LLMT_ENV_HEARTBEAT_TIMEOUT, "%u", p->defaults.heartbeat_timeout_s);
	PUT(LLMT_ENV_HEARTBEAT_STARTUP, "%u", p->defaults.heartbeat_startup_s);
	PUT(LLMT_ENV_PREFLIGHT, "%d", p->defaults.preflight ? 1 : 0);
	PUT(LLMT_ENV_NCCL_PROFILE, "%s", o->nccl_profile);
	if (o->choice.done) {
		char sum[LLMT_ENV_VALUE_MAX];
		PUT(LLMT_ENV_MICRO_BATCH, "%u", o->choice.micro_batch);
		PUT(LLMT_ENV_GRAD_ACCUM, "%u", o->choice.grad_accum);
		PUT(LLMT_ENV_RECOMPUTE, "%s", llmt_recompute_name((llmt_recompute)o->choice.recompute));
		if (o->choice.recompute_layers)
			PUT(LLMT_ENV_RECOMPUTE_LAYERS, "%u", o->choice.recompute_layers);
		PUT(LLMT_ENV_SEQ, "%u", o->choice.seq);
		if (llmt_auto_summary(o, sum, sizeof(sum)) == 0)
			PUT(LLMT_ENV_AUTO, "%s", sum);
	}
	if (o->nccl_profile[0]) {
		const struct llmt_nccl_profile *pr = llmt_policy_profile(p, o->nccl_profile);
		if (!pr) {
			SET_ERR("nccl profile '%s' is not defined by the policy", o->nccl_profile);
			return -1;
		}
		for (unsigned i = 0; i < pr->nvars; i++) {
			char val[LLMT_ENV_VALUE_MAX];
			char e[256];
			if (llmt_env_subst(pr->vars[i].value, in, val, sizeof(val), e, sizeof(e))) {
				SET_ERR("nccl profile %s, %s: %s", pr->name, pr->vars[i].name, e);
				return -1;
			}
			PUT(pr->vars[i].name, "%s", val);
		}
	}
#undef PUT
	return 0;
}

const char *llmt_env_get(const struct llmt_env *env, const char *name)
{
	for (unsigned i = 0; i < env->n; i++)
		if (!strcmp(env->var[i].name, name))
			return env->var[i].value;
	return NULL;
}
