/* Topology-aware rank map: orders the step's nodes (Slurm's order, or by
 * spine/leaf/block/name, or fragments largest first), lays positions
 * along them, turns positions into tp/dp/pp coordinates, checks that no
 * TP group crosses an NVLink domain, and lets the cost model choose. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "llmt_limits.h"
#include "rankmap.h"

#include "llmt/err.h"

static const char *order_names[LLMT_ORDER_COUNT] = {
	"slurm", "topo-dp", "topo-pp", "frag-dp", "frag-pp",
};

const char *llmt_rm_order_name(enum llmt_rm_order o)
{
	return (unsigned)o < LLMT_ORDER_COUNT ? order_names[o] : "?";
}

void llmt_rankmap_free(struct llmt_rankmap *m)
{
	if (!m)
		return;
	free(m->task);
	free(m->task_of_rank);
	free(m->first_task);
	free(m);
}

struct sortkey {
	uint32_t k1, k2, k3;
	const char *name;
	uint32_t idx;
};

static int cmp_key(const void *a, const void *b)
{
	const struct sortkey *x = a, *y = b;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 < y->k2 ? -1 : 1;
	if (x->k3 != y->k3)
		return x->k3 < y->k3 ? -1 : 1;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint32_t ukey(int v)
{
	return v < 0 ? UINT32_MAX : (uint32_t)v;
}

/* The NVLink domain of node i: a block shared by several nodes when the
 * node type spans nodes and the topology names a block, else the node. */
static int in_block_domain(const struct llmt_rm_node *n)
{
	return n->nvlink_block && n->block >= 0;
}

static int same_domain(const struct llmt_rm_node *a, const struct llmt_rm_node *b)
{
	if (a == b)
		return 1;
	return in_block_domain(a) && in_block_domain(b) && a->block == b->block;
}

/* Rank of each index value by descending task count (ties: lower index). */
struct cnt { uint64_t count; uint32_t idx; };
static int cmp_cnt(const void *a, const void *b)
{
	const struct cnt *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint32_t *rank_by_count(const struct llmt_rm_node *nodes, unsigned nnodes,
			       int which /* 0 spine, 1 leaf */)
{
	int maxv = -1;
	for (unsigned i = 0; i < nnodes; i++) {
		int v = which ? nodes[i].leaf : nodes[i].spine;
		if (v > maxv)
			maxv = v;
	}
	size_t nv = (size_t)(maxv + 1);
	struct cnt *c = calloc(nv ? nv : 1, sizeof(*c));
	uint32_t *r = calloc(nv ? nv : 1, sizeof(*r));
	if (!c || !r) {
		free(c);
		free(r);
		return NULL;
	}
	for (size_t v = 0; v < nv; v++)
		c[v].idx = (uint32_t)v;
	for (unsigned i = 0; i < nnodes; i++) {
		int v = which ? nodes[i].leaf : nodes[i].spine;
		if (v >= 0)
			c[v].count += nodes[i].ntasks;
	}
	qsort(c, nv, sizeof(*c), cmp_cnt);
	for (size_t k = 0; k < nv; k++)
		r[c[k].idx] = (uint32_t)k;
	free(c);
	return r;
}

/* Fill perm[] with the node order for `order`. */
static int node_order(const struct llmt_rm_node *nodes, unsigned nnodes,
		      enum llmt_rm_order order, uint32_t *perm)
{
	struct sortkey *k;
	uint32_t *srank = NULL, *lrank = NULL;
	int frag = order == LLMT_ORDER_FRAG_DP || order == LLMT_ORDER_FRAG_PP;
	int maxblk = -1;
	uint32_t *bk1 = NULL, *bk2 = NULL;

	if (order == LLMT_ORDER_SLURM) {
		for (unsigned i = 0; i < nnodes; i++)
			perm[i] = i;
		return 0;
	}
	k = malloc((size_t)nnodes * sizeof(*k));
	if (!k)
		return -1;
	if (frag) {
		srank = rank_by_count(nodes, nnodes, 0);
		lrank = rank_by_count(nodes, nnodes, 1);
		if (!srank || !lrank)
			goto fail;
	}
	for (unsigned i = 0; i < nnodes; i++) {
		const struct llmt_rm_node *n = &nodes[i];
		k[i].k1 = n->spine < 0 ? UINT32_MAX : frag ? srank[n->spine] : ukey(n->spine);
		k[i].k2 = n->leaf < 0 ? UINT32_MAX : frag ? lrank[n->leaf] : ukey(n->leaf);
		k[i].k3 = in_block_domain(n) ? ukey(n->block) : 0;
		k[i].name = n->name;
		k[i].idx = i;
		if (in_block_domain(n) && n->block > maxblk)
			maxblk = n->block;
	}
	/* A multi-node NVLink domain must stay contiguous: all its nodes take
	 * the smallest (spine, leaf) key of its members. */
	if (maxblk >= 0) {
		size_t nb = (size_t)maxblk + 1;
		bk1 = malloc(nb * sizeof(*bk1));
		bk2 = malloc(nb * sizeof(*bk2));
		if (!bk1 || !bk2)
			goto fail;
		for (size_t b = 0; b < nb; b++)
			bk1[b] = bk2[b] = UINT32_MAX;
		for (unsigned i = 0; i < nnodes; i++)
			if (in_block_domain(&nodes[i])) {
				int b = nodes[i].block;
				if (k[i].k1 < bk1[b] || (k[i].k1 == bk1[b] && k[i].k2 < bk2[b])) {
					bk1[b] = k[i].k1;
					bk2[b] = k[i].k2;
				}
			}
		for (unsigned i = 0; i < nnodes; i++)
			if (in_block_domain(&nodes[i])) {
				k[i].k1 = bk1[nodes[i].block];
				k[i].k2 = bk2[nodes[i].block];
			}
	}
	qsort(k, nnodes, sizeof(*k), cmp_key);
	for (unsigned i = 0; i < nnodes; i++)
		perm[i] = k[i].idx;
	free(bk1);
	free(bk2);
	free(srank);
	free(lrank);
	free(k);
	return 0;
fail:
	free(bk1);
	free(bk2);
	free(srank);
	free(lrank);
	free(k);
	return -1;
}

/* The inputs' checks; the task count in *total. */
static int check_inputs(const struct llmt_rm_node *nodes, unsigned nnodes, struct llmt_layout L,
			enum llmt_rm_order order, uint64_t *total, char *err, size_t errlen)
{
	uint64_t want;

	*total = 0;
	if ((unsigned)order >= LLMT_ORDER_COUNT) {
		SET_ERR("rank map: unknown order %d", (int)order);
		return -1;
	}
	if (!nnodes || nnodes > LLMT_MAX_NODES) {
		SET_ERR("rank map: %u nodes (need 1..%u)", nnodes, LLMT_MAX_NODES);
		return -1;
	}
	if (!L.tp || !L.pp || !L.dp) {
		SET_ERR("rank map: tp=%u pp=%u dp=%u: each must be at least 1", L.tp, L.pp, L.dp);
		return -1;
	}
	for (unsigned i = 0; i < nnodes; i++) {
		if (!nodes[i].ntasks) {
			SET_ERR("rank map: node %s has no tasks", nodes[i].name);
			return -1;
		}
		if (nodes[i].gpus && nodes[i].ntasks > nodes[i].gpus) {
			SET_ERR("rank map: node %s has %u tasks but %u GPUs", nodes[i].name,
				nodes[i].ntasks, nodes[i].gpus);
			return -1;
		}
		*total += nodes[i].ntasks;
	}
	want = (uint64_t)L.tp * L.pp * L.dp;
	if (*total > LLMT_MAX_TASKS) {
		SET_ERR("rank map: %llu tasks (most %u)", (unsigned long long)*total, LLMT_MAX_TASKS);
		return -1;
	}
	if (*total != want) {
		SET_ERR("rank map: tp=%u x pp=%u x dp=%u = %llu, but the step has %llu tasks",
			L.tp, L.pp, L.dp, (unsigned long long)want, (unsigned long long)*total);
		return -1;
	}
	return 0;
}

/* Places node i's tasks at positions *pos, *pos + 1, ... of the order:
 * their tp, pp, dp ranks (tp fastest, then pp or dp as pp_inner says),
 * GPU and NIC. */
static void place_node(struct llmt_rankmap *m, const struct llmt_rm_node *n, unsigned i, int pp_inner,
		       uint32_t *pos)
{
	struct llmt_layout L = m->layout;

	for (uint32_t l = 0; l < n->ntasks; l++, (*pos)++) {
		uint32_t tid = m->first_task[i] + l;
		struct llmt_rm_task *t = &m->task[tid];
		uint32_t q = *pos / L.tp;
		t->tp_rank = *pos % L.tp;
		if (pp_inner) {
			t->pp_rank = q % L.pp;
			t->dp_rank = q / L.pp;
		} else {
			t->dp_rank = q % L.dp;
			t->pp_rank = q / L.dp;
		}
		t->rank = t->tp_rank + t->dp_rank * L.tp + t->pp_rank * L.tp * L.dp;
		t->node = i;
		t->local_rank = l;
		t->gpu = n->gpus ? (int32_t)l : -1;
		if (!n->nnics)
			t->nic = -1;
		else if (n->gpus)
			t->nic = (int32_t)((uint64_t)l * n->nnics / n->gpus);
		else
			t->nic = (int32_t)((uint64_t)l * n->nnics / n->ntasks);
		m->task_of_rank[t->rank] = tid;
	}
}

int llmt_rankmap_build_order(const struct llmt_rm_node *nodes, unsigned nnodes,
			     struct llmt_layout L, enum llmt_rm_order order,
			     struct llmt_rankmap **out, char *err, size_t errlen)
{
	struct llmt_rankmap *m = NULL;
	uint32_t *perm = NULL, pos = 0;
	uint64_t total;
	int pp_inner = order == LLMT_ORDER_TOPO_PP || order == LLMT_ORDER_FRAG_PP;

	*out = NULL;
	if (check_inputs(nodes, nnodes, L, order, &total, err, errlen))
		return -1;
	m = calloc(1, sizeof(*m));
	perm = malloc((size_t)nnodes * sizeof(*perm));
	if (!m || !perm)
		goto oom;
	m->ntasks = (unsigned)total;
	m->nnodes = nnodes;
	m->layout = L;
	m->order = order;
	m->task = malloc((size_t)total * sizeof(*m->task));
	m->task_of_rank = malloc((size_t)total * sizeof(*m->task_of_rank));
	m->first_task = malloc((size_t)nnodes * sizeof(*m->first_task));
	if (!m->task || !m->task_of_rank || !m->first_task)
		goto oom;
	for (unsigned i = 0, t = 0; i < nnodes; i++) {
		m->first_task[i] = t;
		t += nodes[i].ntasks;
	}
	if (node_order(nodes, nnodes, order, perm))
		goto oom;
	for (unsigned k = 0; k < nnodes; k++) {
		const struct llmt_rm_node *n = &nodes[perm[k]];
		if (k > 0 && !same_domain(&nodes[perm[k - 1]], n) && pos % L.tp) {
			SET_ERR("rank map: tp=%u: a TP group would span %s and %s, crossing an NVLink domain"
				" (the domain holds a task count that tp does not divide)",
				L.tp, nodes[perm[k - 1]].name, n->name);
			goto fail;
		}
		place_node(m, n, perm[k], pp_inner, &pos);
	}
	if (pos % L.tp) {   /* cannot happen when tp divides total; kept as a guard */
		SET_ERR("rank map: tp=%u does not divide %u tasks", L.tp, pos);
		goto fail;
	}
	free(perm);
	*out = m;
	return 0;
oom:
	SET_ERR("rank map: out of memory for %llu tasks", (unsigned long long)total);
fail:
	free(perm);
	llmt_rankmap_free(m);
	return -1;
}

/* a > b beyond rounding of sums of doubles */
static int worse(double a, double b)
{
	return a > b * (1 + 1e-12) + 1e-6;
}

int llmt_rankmap_build(const struct llmt_rm_node *nodes, unsigned nnodes,
		       struct llmt_layout L, const struct llmt_cost_model *cm,
		       struct llmt_rankmap **out, char *err, size_t errlen)
{
	struct llmt_cost_model defcm;
	struct llmt_rankmap *best = NULL;
	struct llmt_cost base, c;
	double best_score = 0;
	int base_ok = 0;
	char first_err[512] = "";

	*out = NULL;
	if (!cm) {
		llmt_cost_model_default(&defcm);
		cm = &defcm;
	}
	for (int o = 0; o < LLMT_ORDER_COUNT; o++) {
		struct llmt_rankmap *m;
		char e[512];
		if (llmt_rankmap_build_order(nodes, nnodes, L, (enum llmt_rm_order)o, &m, e, sizeof(e))) {
			if (!first_err[0] || o == LLMT_ORDER_TOPO_DP)
				snprintf(first_err, sizeof(first_err), "%s", e);
			continue;
		}
		llmt_cost_eval(cm, m, nodes, &c);
		if (o == LLMT_ORDER_SLURM) {
			base = c;
			base_ok = 1;
		} else if (base_ok && (worse(llmt_cost_level(&c, LLMT_LVL_LEAF),
					     llmt_cost_level(&base, LLMT_LVL_LEAF)) ||
				       worse(llmt_cost_level(&c, LLMT_LVL_SPINE),
					     llmt_cost_level(&base, LLMT_LVL_SPINE)))) {
			llmt_rankmap_free(m);   /* never worse than Slurm's order */
			continue;
		}
		double s = llmt_cost_score(&c);
		if (!best || s < best_score * (1 - 1e-12) - 1e-6) {
			llmt_rankmap_free(best);
			best = m;
			best_score = s;
		} else {
			llmt_rankmap_free(m);
		}
	}
	if (!best) {
		SET_ERR("%s", first_err);
		return -1;
	}
	*out = best;
	return 0;
}

long llmt_rankmap_task_at(const struct llmt_rankmap *m, const struct llmt_rm_node *nodes,
			  unsigned node, unsigned local)
{
	if (!m || node >= m->nnodes || local >= nodes[node].ntasks)
		return -1;
	return (long)m->first_task[node] + (long)local;
}

static uint32_t node_min_rank(const struct llmt_rankmap *m, uint32_t node)
{
	uint32_t lo = UINT32_MAX;

	for (uint32_t i = m->first_task[node]; i < m->ntasks && m->task[i].node == node; i++)
		if (m->task[i].rank < lo)
			lo = m->task[i].rank;
	return lo;
}

uint32_t llmt_rankmap_group_rank(const struct llmt_rankmap *m, uint32_t node)
{
	uint32_t mine, g = 0;

	if (!m || node >= m->nnodes)
		return 0;
	mine = node_min_rank(m, node);
	for (uint32_t n = 0; n < m->nnodes; n++)
		if (n != node && node_min_rank(m, n) < mine)
			g++;
	return g;
}

int llmt_rankmap_check(const struct llmt_rankmap *m, const struct llmt_rm_node *nodes,
		       char *err, size_t errlen)
{
	const struct llmt_layout L = m->layout;
	unsigned char *seen = calloc(m->ntasks ? m->ntasks : 1, 1);
	int rc = -1;

	if (!seen) {
		SET_ERR("check: out of memory");
		return -1;
	}
	for (unsigned t = 0; t < m->ntasks; t++) {
		const struct llmt_rm_task *x = &m->task[t];
		if (x->rank >= m->ntasks || seen[x->rank]) {
			SET_ERR("check: rank %u of task %u out of range or repeated", x->rank, t);
			goto out;
		}
		seen[x->rank] = 1;
		if (x->tp_rank >= L.tp || x->pp_rank >= L.pp || x->dp_rank >= L.dp ||
		    x->rank != x->tp_rank + x->dp_rank * L.tp + x->pp_rank * L.tp * L.dp) {
			SET_ERR("check: task %u coordinates disagree with rank %u", t, x->rank);
			goto out;
		}
		if (m->task_of_rank[x->rank] != t) {
			SET_ERR("check: inverse map wrong at rank %u", x->rank);
			goto out;
		}
		if (x->node >= m->nnodes || t < m->first_task[x->node] ||
		    x->local_rank != t - m->first_task[x->node] ||
		    x->local_rank >= nodes[x->node].ntasks) {
			SET_ERR("check: task %u node/local rank wrong", t);
			goto out;
		}
		/* TP group: rank's group leader must be in the same domain. */
		uint32_t lead = m->task_of_rank[x->rank - x->tp_rank];
		if (seen[x->rank - x->tp_rank] &&
		    !same_domain(&nodes[m->task[lead].node], &nodes[x->node])) {
			SET_ERR("check: TP group of rank %u spans %s and %s", x->rank,
				nodes[m->task[lead].node].name, nodes[x->node].name);
			goto out;
		}
	}
	/* Second pass for groups whose leader came later in task order. */
	for (unsigned t = 0; t < m->ntasks; t++) {
		const struct llmt_rm_task *x = &m->task[t];
		uint32_t lead = m->task_of_rank[x->rank - x->tp_rank];
		if (!same_domain(&nodes[m->task[lead].node], &nodes[x->node])) {
			SET_ERR("check: TP group of rank %u spans %s and %s", x->rank,
				nodes[m->task[lead].node].name, nodes[x->node].name);
			goto out;
		}
	}
	rc = 0;
out:
	free(seen);
	return rc;
}
