/* A step's plan: expand the nodelist, attach topology (leaf, spine,
 * block) and node type (GPUs, NVLink domain, NICs) to each node, build
 * the rank map and price it next to Slurm's default order. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "plan.h"

#include "llmt/err.h"

int llmt_tasks_per_node_parse(const char *s, unsigned nnodes, unsigned *out,
			      char *err, size_t errlen)
{
	unsigned filled = 0;
	const char *p = s;

	if (!s || !*s) {
		SET_ERR("empty tasks-per-node");
		return -1;
	}
	while (*p) {
		unsigned long long cnt = 0, rep = 1;
		if (!isdigit((unsigned char)*p))
			goto bad;
		while (isdigit((unsigned char)*p)) {
			cnt = cnt * 10 + (unsigned)(*p++ - '0');
			if (cnt > LLMT_MAX_TASKS)
				goto bad;
		}
		if (*p == '(') {
			if (p[1] != 'x')
				goto bad;
			p += 2;
			rep = 0;
			if (!isdigit((unsigned char)*p))
				goto bad;
			while (isdigit((unsigned char)*p)) {
				rep = rep * 10 + (unsigned)(*p++ - '0');
				if (rep > LLMT_MAX_NODES)
					goto bad;
			}
			if (*p++ != ')')
				goto bad;
		}
		if (cnt == 0 || rep == 0 || filled + rep > nnodes) {
			SET_ERR("tasks-per-node '%.100s' does not match %u nodes", s, nnodes);
			return -1;
		}
		for (unsigned long long i = 0; i < rep; i++)
			out[filled++] = (unsigned)cnt;
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	if (filled != nnodes) {
		SET_ERR("tasks-per-node '%.100s' covers %u of %u nodes", s, filled, nnodes);
		return -1;
	}
	return 0;
bad:
	SET_ERR("bad tasks-per-node '%.100s'", s);
	return -1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each host once in the step (Slurm guarantees it; a hand-made list may not). */
static int check_unique(const struct llmt_plan *p, char *err, size_t errlen)
{
	const char **s = malloc(p->nnodes * sizeof(*s));
	int rc = 0;
	if (!s) {
		SET_ERR("out of memory");
		return -1;
	}
	for (unsigned i = 0; i < p->nnodes; i++)
		s[i] = p->names[i];
	qsort(s, p->nnodes, sizeof(*s), cmp_str);
	for (unsigned i = 1; i < p->nnodes; i++)
		if (!strcmp(s[i - 1], s[i])) {
			SET_ERR("node list names %s twice", s[i]);
			rc = -1;
			break;
		}
	free(s);
	return rc;
}

void llmt_plan_free(struct llmt_plan *p)
{
	if (!p)
		return;
	free(p->names);
	free(p->nodes);
	free(p->types);
	llmt_rankmap_free(p->map);
	free(p);
}

int llmt_plan_build(const char *nodelist, const unsigned *tasks_per_node,
		    unsigned uniform, const struct llmt_topology *topo,
		    const struct llmt_policy *policy, struct llmt_layout layout,
		    const struct llmt_cost_model *cm, struct llmt_plan **out,
		    char *err, size_t errlen)
{
	struct llmt_plan *p;
	struct llmt_rankmap *slurm = NULL;
	int n;
	char e[512];

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		SET_ERR("out of memory");
		return -1;
	}
	if (cm)
		p->model = *cm;
	else
		llmt_cost_model_default(&p->model);
	n = llmt_hostlist_expand(nodelist, LLMT_MAX_NODES, &p->names, e, sizeof(e));
	if (n <= 0) {
		SET_ERR("node list: %s", n == 0 ? "no nodes" : e);
		goto fail;
	}
	p->nnodes = (unsigned)n;
	p->nodes = calloc((size_t)n, sizeof(*p->nodes));
	p->types = calloc((size_t)n, sizeof(*p->types));
	if (!p->nodes || !p->types) {
		SET_ERR("out of memory for %d nodes", n);
		goto fail;
	}
	for (unsigned i = 0; i < p->nnodes; i++) {
		struct llmt_rm_node *rn = &p->nodes[i];
		const struct llmt_topo_node *tn = topo ? llmt_topology_find(topo, p->names[i]) : NULL;
		const struct llmt_node_type *ty = llmt_policy_node_type(policy, p->names[i]);
		rn->name = p->names[i];
		rn->ntasks = tasks_per_node ? tasks_per_node[i] : uniform;
		rn->leaf = tn ? tn->leaf : -1;
		rn->spine = tn ? tn->spine : -1;
		rn->block = tn ? tn->block : -1;
		rn->gpus = ty ? ty->gpus_per_node : 0;
		rn->nvlink_block = ty ? ty->nvlink_block : 0;
		rn->nnics = ty ? ty->nnics : 0;
		p->types[i] = ty;
		p->ntasks += rn->ntasks;
	}
	if (check_unique(p, err, errlen))
		goto fail;
	if (llmt_rankmap_build(p->nodes, p->nnodes, layout, &p->model, &p->map, err, errlen))
		goto fail;
	llmt_cost_eval(&p->model, p->map, p->nodes, &p->cost);
	if (llmt_rankmap_build_order(p->nodes, p->nnodes, layout, LLMT_ORDER_SLURM, &slurm,
				     e, sizeof(e)) == 0) {
		p->slurm_feasible = 1;
		llmt_cost_eval(&p->model, slurm, p->nodes, &p->slurm_cost);
		llmt_rankmap_free(slurm);
	}
	*out = p;
	return 0;
fail:
	llmt_plan_free(p);
	return -1;
}

const char *llmt_plan_nic(const struct llmt_plan *p, unsigned t)
{
	const struct llmt_rm_task *x;
	if (!p->map || t >= p->map->ntasks)
		return "";
	x = &p->map->task[t];
	if (x->nic < 0 || !p->types[x->node] || (unsigned)x->nic >= p->types[x->node]->nnics)
		return "";
	return p->types[x->node]->nics[x->nic];
}

const char *llmt_plan_master(const struct llmt_plan *p)
{
	return p->names[p->map->task[p->map->task_of_rank[0]].node];
}

void llmt_plan_env_input(const struct llmt_plan *p, unsigned t, const struct llmt_opts *o,
			 const struct llmt_policy *pol, uint32_t job_id, uint32_t step_id,
			 struct llmt_env_input *in)
{
	const struct llmt_rm_task *k = &p->map->task[t];

	memset(in, 0, sizeof(*in));
	in->task = k;
	in->layout = p->map->layout;
	in->world_size = p->ntasks;
	in->local_world_size = p->nodes[k->node].ntasks;
	in->group_rank = llmt_rankmap_group_rank(p->map, k->node);
	in->group_world_size = p->map->nnodes;
	in->node_gpus = p->nodes[k->node].gpus;
	in->nic = llmt_plan_nic(p, t);
	in->master_addr = llmt_plan_master(p);
	in->job_id = job_id;
	in->step_id = step_id;
	in->opts = o;
	in->policy = pol;
}
