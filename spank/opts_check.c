/* opts_check: a job's options validated against its task count and
 * nodes (dp=auto filled in, TP within an NVLink domain or a node) and the
 * admin policy's limits (restarts, NCCL profiles, checkpoint roots,
 * partition and account caps). Pure: no Slurm, no filesystem. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "opts.h"
#include "path.h"
#include "policy.h"

#include "llmt/err.h"

int llmt_ckpt_dir_allowed(const char *dir, const struct llmt_policy *p,
			  char *err, size_t errlen)
{
	size_t n = strlen(dir);

	if (dir[0] != '/') {
		SET_ERR("--llm-train: ckpt-dir=%.200s is not an absolute path", dir);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (iscntrl((unsigned char)dir[i])) {
			SET_ERR("--llm-train: ckpt-dir holds a control character");
			return -1;
		}
	/* "." and ".." defeat a prefix check */
	if (llmt_path_has_dot(dir)) {
		SET_ERR("--llm-train: ckpt-dir=%.200s has a '.' or '..' component", dir);
		return -1;
	}
	if (!p || p->limits.nroots == 0)
		return 0;
	for (unsigned i = 0; i < p->limits.nroots; i++) {
		const char *r = p->limits.ckpt_roots[i];
		size_t rl = strlen(r);
		while (rl > 1 && r[rl - 1] == '/')
			rl--;
		if (rl == 1 && r[0] == '/')
			return 0;
		if (!strncmp(dir, r, rl) && (dir[rl] == 0 || dir[rl] == '/'))
			return 0;
	}
	{
		char roots[512];
		size_t off = 0;
		roots[0] = 0;
		for (unsigned i = 0; i < p->limits.nroots && off < sizeof(roots); i++) {
			int w = snprintf(roots + off, sizeof(roots) - off, "%s%s", i ? " " : "",
					 p->limits.ckpt_roots[i]);
			if (w < 0)
				break;
			off += (size_t)w;
		}
		SET_ERR("--llm-train: ckpt-dir=%.200s is not under an allowed root (%s)", dir, roots);
	}
	return -1;
}

struct nt_ctx {
	const struct llmt_policy *p;
	unsigned min_domain;   /* smallest NVLink domain among the job's nodes */
	unsigned gpu_nodes;
	unsigned cpu_nodes;
};

static unsigned type_domain(const struct llmt_node_type *t)
{
	if (t->gpus_per_node == 0)
		return 0;          /* CPU node: the node, counted in tasks */
	return t->nvlink_block ? t->nvlink_block : t->gpus_per_node;
}

static int nt_visit(const char *host, void *arg)
{
	struct nt_ctx *c = arg;
	const struct llmt_node_type *t = llmt_policy_node_type(c->p, host);
	unsigned d = t ? type_domain(t) : 0;
	if (d == 0) {
		c->cpu_nodes++;
	} else {
		c->gpu_nodes++;
		if (!c->min_domain || d < c->min_domain)
			c->min_domain = d;
	}
	return 0;
}

static const struct llmt_limit *find_limit(const struct llmt_limit *l, unsigned n, const char *name)
{
	if (!name || !*name)
		return NULL;
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(l[i].name, name))
			return &l[i];
	return NULL;
}

static int check_cap(const char *what, const struct llmt_limit *l, unsigned nnodes,
		     unsigned gpus, char *err, size_t errlen)
{
	if (!l)
		return 0;
	if (l->max_nodes && nnodes > l->max_nodes) {
		SET_ERR("--llm-train: %u nodes exceed the %s '%s' limit of %u nodes",
			nnodes, what, l->name, l->max_nodes);
		return -1;
	}
	if (l->max_gpus && gpus > l->max_gpus) {
		SET_ERR("--llm-train: %u GPUs exceed the %s '%s' limit of %u GPUs",
			gpus, what, l->name, l->max_gpus);
		return -1;
	}
	return 0;
}

/* tp x pp against the job's tasks: dp=auto filled in, a fixed dp checked
 * (pending auto: nothing yet; the layout is checked once chosen). */
static int check_layout(struct llmt_opts *o, unsigned ntasks, int pending, char *err, size_t errlen)
{
	unsigned long long tpp = (unsigned long long)o->tp * o->pp;

	if (pending)
		return 0;
	if (o->tp == 0 || o->pp == 0) {
		SET_ERR("--llm-train: tp and pp must be at least 1");
		return -1;
	}
	if (tpp > LLMT_MAX_TASKS) {
		SET_ERR("--llm-train: tp=%u x pp=%u is too large", o->tp, o->pp);
		return -1;
	}
	if (ntasks) {
		if (o->dp_auto || o->dp == 0) {
			if (ntasks % tpp) {
				SET_ERR("--llm-train: tp=%u x pp=%u does not divide the %u tasks (dp=auto)",
					o->tp, o->pp, ntasks);
				return -1;
			}
			o->dp = (unsigned)(ntasks / tpp);
		} else if (tpp * o->dp != ntasks) {
			SET_ERR("--llm-train: tp=%u x pp=%u x dp=%u = %llu, but the job has %u tasks",
				o->tp, o->pp, o->dp, tpp * o->dp, ntasks);
			return -1;
		}
	} else if (!o->dp_auto && o->dp && tpp * o->dp > LLMT_MAX_TASKS) {
		SET_ERR("--llm-train: tp x pp x dp is too large");
		return -1;
	}
	return 0;
}

/* TP within one NVLink domain (GPU nodes) or one node (CPU nodes), from
 * the job's nodes or, before there are any, the policy's node types. */
static int check_domain(const struct llmt_opts *o, const struct llmt_policy *p, const struct llmt_job_info *job,
			struct nt_ctx *nt, char *err, size_t errlen)
{
	unsigned ntasks = job ? job->ntasks : 0, nnodes = job ? job->nnodes : 0;

	nt->p = p;
	if (job && job->nodelist && *job->nodelist) {
		if (llmt_hostlist_foreach(job->nodelist, LLMT_MAX_NODES, nt_visit, nt, err, errlen) < 0)
			return -1;
	} else {
		for (unsigned i = 0; i < p->nnode_types; i++) {
			unsigned d = type_domain(&p->node_types[i]);
			if (d && (!nt->min_domain || d < nt->min_domain))
				nt->min_domain = d;
		}
		if (p->nnode_types == 0)
			nt->cpu_nodes = 1;
	}
	if (nt->min_domain && o->tp > nt->min_domain) {
		SET_ERR("--llm-train: tp=%u is larger than the NVLink domain (%u GPUs)", o->tp, nt->min_domain);
		return -1;
	}
	if (nt->cpu_nodes && ntasks && nnodes) {
		/* CPU nodes: the domain is the node; with an uneven spread the
		 * rank map checks each node later. */
		unsigned per = ntasks / nnodes;
		if (ntasks % nnodes == 0 && o->tp > per) {
			SET_ERR("--llm-train: tp=%u is larger than the %u tasks per node (TP stays in one node)",
				o->tp, per);
			return -1;
		}
	}
	return 0;
}

/* The policy's limits: restarts, NCCL profile, checkpoint roots, the
 * partition's and account's caps. */
static int check_limits(const struct llmt_opts *o, const struct llmt_policy *p, const struct llmt_job_info *job,
			const struct nt_ctx *nt, char *err, size_t errlen)
{
	unsigned ntasks = job ? job->ntasks : 0, nnodes = job ? job->nnodes : 0;

	if (o->restarts < 0 || (unsigned)o->restarts > p->limits.max_restarts) {
		SET_ERR("--llm-train: restarts=%d exceeds the policy limit of %u",
			o->restarts, p->limits.max_restarts);
		return -1;
	}
	if (o->nccl_profile[0] && !llmt_policy_profile(p, o->nccl_profile)) {
		SET_ERR("--llm-train: nccl profile '%s' is not defined by the policy", o->nccl_profile);
		return -1;
	}
	if (o->ckpt_dir[0] && llmt_ckpt_dir_allowed(o->ckpt_dir, p, err, errlen))
		return -1;
	unsigned gpus = (nt->gpu_nodes || (!job || !job->nodelist)) && nt->min_domain ? ntasks : 0;
	if (check_cap("partition", find_limit(p->limits.partitions, p->limits.npartitions,
					      job ? job->partition : NULL), nnodes, gpus, err, errlen))
		return -1;
	return check_cap("account", find_limit(p->limits.accounts, p->limits.naccounts, job ? job->account : NULL),
			 nnodes, gpus, err, errlen);
}

int llmt_opts_validate(struct llmt_opts *o, const struct llmt_policy *pol,
		       const struct llmt_job_info *job, char *err, size_t errlen)
{
	struct llmt_policy *builtin = NULL;
	const struct llmt_policy *p = pol;
	struct nt_ctx nt = { 0 };
	int rc = -1;

	if (!p) {
		builtin = malloc(sizeof(*builtin));
		if (!builtin) {
			SET_ERR("--llm-train: out of memory");
			return -1;
		}
		llmt_policy_defaults(builtin);
		p = builtin;
	}
	/* auto: the layout is chosen at step start, then validated again */
	int pending = llmt_opts_is_auto(o) && !o->choice.done;
	if (pending && llmt_opts_check_auto(o, err, errlen))
		goto out;
	if (check_layout(o, job ? job->ntasks : 0, pending, err, errlen) ||
	    check_domain(o, p, job, &nt, err, errlen) || check_limits(o, p, job, &nt, err, errlen))
		goto out;
	rc = 0;
out:
	free(builtin);
	return rc;
}
