/* Property tests of spank/rankmap.c and cost.c over generated topologies
 * (seeded, so reproducible): every rank exactly once, coordinates agree
 * with Megatron order, TP inside one NVLink domain, determinism, never
 * more cross-leaf/spine traffic than Slurm's order, DP neighbours under
 * one leaf when the allocation allows, fragmented and out-of-order cases. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "rankmap.h"

static uint64_t rng_state;
static uint32_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return (uint32_t)(x >> 16);
}

struct cluster {
	unsigned n;
	char (*names)[16];
	struct llmt_rm_node *nodes;
};

static int cmp_node_name(const void *a, const void *b)
{
	return strcmp(((const struct llmt_rm_node *)a)->name, ((const struct llmt_rm_node *)b)->name);
}

/* A fat tree of nsp spines x lps leaves x npl nodes; names shuffled so
 * switch order differs from name order; a random subset allocated
 * (fragmented); the step's nodes in name order, as Slurm lists them. */
static void gen(struct cluster *c, unsigned nsp, unsigned lps, unsigned npl, unsigned keep_pct,
		unsigned gpus)
{
	unsigned total = nsp * lps * npl;
	unsigned *perm = malloc(total * sizeof(*perm));
	c->names = calloc(total, sizeof(*c->names));
	c->nodes = calloc(total, sizeof(*c->nodes));
	assert_non_null(perm);
	assert_non_null(c->names);
	for (unsigned i = 0; i < total; i++)
		perm[i] = i;
	for (unsigned i = total - 1; i > 0; i--) {
		unsigned j = rnd() % (i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	c->n = 0;
	for (unsigned i = 0; i < total; i++) {
		if (rnd() % 100 >= keep_pct && !(i == total - 1 && c->n == 0))
			continue;
		struct llmt_rm_node *x = &c->nodes[c->n];
		snprintf(c->names[c->n], 16, "h%05u", perm[i]);
		x->name = c->names[c->n];
		x->leaf = (int)(i / npl);
		x->spine = (int)(i / npl / lps);
		x->block = -1;
		x->gpus = gpus;
		x->nnics = gpus ? 2 : 0;
		c->n++;
	}
	qsort(c->nodes, c->n, sizeof(*c->nodes), cmp_node_name);
	free(perm);
}

static void cluster_free(struct cluster *c)
{
	free(c->names);
	free(c->nodes);
}

static unsigned gcd(unsigned a, unsigned b)
{
	while (b) {
		unsigned t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static unsigned pick_divisor(unsigned n)
{
	unsigned d[64], k = 0;
	for (unsigned i = 1; i <= n && k < 64; i++)
		if (n % i == 0)
			d[k++] = i;
	return d[rnd() % k];
}

static void same_map(const struct llmt_rankmap *a, const struct llmt_rankmap *b)
{
	assert_int_equal(a->ntasks, b->ntasks);
	assert_int_equal(a->order, b->order);
	assert_memory_equal(a->task, b->task, a->ntasks * sizeof(*a->task));
	assert_memory_equal(a->task_of_rank, b->task_of_rank, a->ntasks * sizeof(uint32_t));
}

/* torchrun's GROUP_RANK: the nodes' places by lowest rank are 0..n-1 once
 * each, in the order of those lowest ranks */
static void check_group_ranks(const struct llmt_rankmap *m, unsigned seed)
{
	uint32_t lo[256], seen[256] = {0};
	assert_true(m->nnodes <= 256);
	for (uint32_t n = 0; n < m->nnodes; n++)
		lo[n] = UINT32_MAX;
	for (uint32_t t = 0; t < m->ntasks; t++)
		if (m->task[t].rank < lo[m->task[t].node])
			lo[m->task[t].node] = m->task[t].rank;
	for (uint32_t n = 0; n < m->nnodes; n++) {
		uint32_t g = llmt_rankmap_group_rank(m, n);
		if (g >= m->nnodes || seen[g]++)
			fail_msg("seed %u: node %u group rank %u (of %u nodes) twice or out of range",
				 seed, n, g, m->nnodes);
		for (uint32_t k = 0; k < m->nnodes; k++)
			if (k != n && (lo[k] < lo[n]) != (llmt_rankmap_group_rank(m, k) < g))
				fail_msg("seed %u: nodes %u and %u: group ranks not in lowest-rank order", seed, n, k);
	}
}

static void test_random_properties(void **s)
{
	struct llmt_cost_model cm;
	llmt_cost_model_default(&cm);
	for (unsigned seed = 1; seed <= 400; seed++) {
		struct cluster c;
		rng_state = 0x9E3779B97F4A7C15ull * seed;
		unsigned gpus = rnd() % 2 ? 8 : 0;
		gen(&c, 1 + rnd() % 4, 1 + rnd() % 5, 1 + rnd() % 8, 20 + rnd() % 81, gpus);
		int uneven = rnd() % 3 == 0;
		unsigned tpn = 1u << (rnd() % 4), g = 0, total = 0;
		for (unsigned i = 0; i < c.n; i++) {
			c.nodes[i].ntasks = uneven ? 1 + rnd() % 8 : tpn;
			g = gcd(g, c.nodes[i].ntasks);
			total += c.nodes[i].ntasks;
		}
		struct llmt_layout L;
		L.tp = pick_divisor(g);
		L.pp = pick_divisor(total / L.tp);
		L.dp = total / L.tp / L.pp;

		struct llmt_rankmap *m, *m2, *slurm;
		char err[512];
		if (llmt_rankmap_build(c.nodes, c.n, L, &cm, &m, err, sizeof(err)))
			fail_msg("seed %u: %s", seed, err);
		if (llmt_rankmap_check(m, c.nodes, err, sizeof(err)))
			fail_msg("seed %u (%s): %s", seed, llmt_rm_order_name(m->order), err);
		check_group_ranks(m, seed);
		/* deterministic: the same inputs give the same map */
		assert_int_equal(llmt_rankmap_build(c.nodes, c.n, L, &cm, &m2, err, sizeof(err)), 0);
		same_map(m, m2);
		/* every order on its own keeps the invariants */
		for (int o = 0; o < LLMT_ORDER_COUNT; o++) {
			struct llmt_rankmap *x;
			assert_int_equal(llmt_rankmap_build_order(c.nodes, c.n, L, (enum llmt_rm_order)o,
								  &x, err, sizeof(err)), 0);
			if (llmt_rankmap_check(x, c.nodes, err, sizeof(err)))
				fail_msg("seed %u order %s: %s", seed, llmt_rm_order_name(x->order), err);
			llmt_rankmap_free(x);
		}
		/* never worse than Slurm's order across leaves and spines */
		assert_int_equal(llmt_rankmap_build_order(c.nodes, c.n, L, LLMT_ORDER_SLURM, &slurm,
							  err, sizeof(err)), 0);
		struct llmt_cost cm_map, cm_slurm;
		llmt_cost_eval(&cm, m, c.nodes, &cm_map);
		llmt_cost_eval(&cm, slurm, c.nodes, &cm_slurm);
		for (int lvl = LLMT_LVL_LEAF; lvl <= LLMT_LVL_SPINE; lvl++)
			if (llmt_cost_level(&cm_map, lvl) > llmt_cost_level(&cm_slurm, lvl) * (1 + 1e-9) + 1)
				fail_msg("seed %u: %s bytes %g > Slurm's %g", seed, llmt_lvl_name(lvl),
					 llmt_cost_level(&cm_map, lvl), llmt_cost_level(&cm_slurm, lvl));
		/* cumulative levels */
		for (int d = 0; d < LLMT_NDIMS; d++)
			for (int lvl = 1; lvl < LLMT_NLVLS; lvl++)
				assert_true(cm_map.bytes[d][lvl] <= cm_map.bytes[d][lvl - 1] + 1e-6);
		/* lookup by (node, local task) */
		for (unsigned t = 0; t < m->ntasks; t++)
			assert_int_equal(llmt_rankmap_task_at(m, c.nodes, m->task[t].node,
							      m->task[t].local_rank), (long)t);
		assert_int_equal(llmt_rankmap_task_at(m, c.nodes, c.n, 0), -1);
		assert_int_equal(llmt_rankmap_task_at(m, c.nodes, 0, c.nodes[0].ntasks), -1);
		/* GPU and NIC assignment */
		for (unsigned t = 0; t < m->ntasks; t++) {
			const struct llmt_rm_task *x = &m->task[t];
			if (gpus) {
				assert_int_equal(x->gpu, (int)x->local_rank);
				assert_true(x->nic >= 0 && x->nic < 2);
			} else {
				assert_int_equal(x->gpu, -1);
				assert_int_equal(x->nic, -1);
			}
		}
		llmt_rankmap_free(m);
		llmt_rankmap_free(m2);
		llmt_rankmap_free(slurm);
		cluster_free(&c);
	}
}

/* Each leaf holds exactly one pipeline stage (TP*DP tasks), names are out
 * of switch order: all DP neighbours must share a leaf (Slurm's order
 * cannot), only PP traffic crosses leaves. */
static void test_dp_under_one_leaf(void **s)
{
	for (unsigned seed = 1; seed <= 50; seed++) {
		struct cluster c;
		rng_state = 0xABCDEF12345ull * seed;
		unsigned pp = 2 + rnd() % 3, npl = 2 + rnd() % 4, tpn = 8;
		gen(&c, 1, pp, npl, 100, 0);
		for (unsigned i = 0; i < c.n; i++)
			c.nodes[i].ntasks = tpn;
		struct llmt_layout L = { 4, pp, npl * tpn / 4 };
		struct llmt_rankmap *m;
		struct llmt_cost cost;
		char err[512];
		assert_int_equal(llmt_rankmap_build(c.nodes, c.n, L, NULL, &m, err, sizeof(err)), 0);
		struct llmt_cost_model cm;
		llmt_cost_model_default(&cm);
		llmt_cost_eval(&cm, m, c.nodes, &cost);
		assert_true(cost.bytes[LLMT_DIM_DP][LLMT_LVL_LEAF] == 0);
		assert_true(cost.bytes[LLMT_DIM_TP][LLMT_LVL_NODE] == 0);
		assert_true(cost.bytes[LLMT_DIM_PP][LLMT_LVL_LEAF] > 0);
		llmt_rankmap_free(m);
		cluster_free(&c);
	}
}

/* Each leaf holds one data-parallel replica's whole pipeline and DP is
 * tiny next to PP traffic (small model, long sequences): pipeline
 * neighbours must all share a leaf. */
static void test_pp_under_one_leaf(void **s)
{
	struct cluster c;
	rng_state = 77;
	gen(&c, 1, 4, 2, 100, 0);       /* 4 leaves x 2 nodes */
	for (unsigned i = 0; i < c.n; i++)
		c.nodes[i].ntasks = 4;
	struct llmt_layout L = { 2, 4, 4 };  /* a replica = tp*pp = 8 tasks = one leaf */
	struct llmt_cost_model cm;
	llmt_cost_model_default(&cm);
	cm.params = 1e6;
	cm.seq = 32768;
	cm.micro_batches = 64;
	struct llmt_rankmap *m;
	struct llmt_cost cost;
	char err[512];
	assert_int_equal(llmt_rankmap_build(c.nodes, c.n, L, &cm, &m, err, sizeof(err)), 0);
	llmt_cost_eval(&cm, m, c.nodes, &cost);
	assert_true(cost.bytes[LLMT_DIM_PP][LLMT_LVL_LEAF] == 0);
	assert_true(m->order == LLMT_ORDER_TOPO_PP || m->order == LLMT_ORDER_FRAG_PP);
	llmt_rankmap_free(m);
	cluster_free(&c);
}

/* Multi-node NVLink domain (4-GPU nodes, 16-GPU blocks) with the block
 * members interleaved in name order: Slurm's order splits TP=16 groups,
 * ours keeps every group inside one block. */
static void test_nvlink_blocks(void **s)
{
	static char names[8][8];
	struct llmt_rm_node n[8];
	memset(n, 0, sizeof(n));
	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "n%d", i + 1);
		n[i].name = names[i];
		n[i].ntasks = 4;
		n[i].gpus = 4;
		n[i].nvlink_block = 16;
		n[i].block = i % 2;          /* n1,n3,n5,n7 in block 0 */
		n[i].leaf = i % 2;
		n[i].spine = 0;
	}
	struct llmt_layout L = { 16, 1, 2 };
	struct llmt_rankmap *m;
	char err[512];
	assert_int_equal(llmt_rankmap_build_order(n, 8, L, LLMT_ORDER_SLURM, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NVLink"));
	assert_int_equal(llmt_rankmap_build(n, 8, L, NULL, &m, err, sizeof(err)), 0);
	assert_int_equal(llmt_rankmap_check(m, n, err, sizeof(err)), 0);
	for (unsigned r = 0; r < 32; r++)
		assert_int_equal(n[m->task[m->task_of_rank[r]].node].block,
				 n[m->task[m->task_of_rank[r - r % 16]].node].block);
	llmt_rankmap_free(m);
	/* a TP group larger than a node is refused on node domains */
	for (int i = 0; i < 8; i++)
		n[i].nvlink_block = 0;
	assert_int_equal(llmt_rankmap_build(n, 8, L, NULL, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "tp=16"));
}

static void test_errors(void **s)
{
	struct llmt_rm_node n[2] = {
		{ .name = "a", .ntasks = 3, .leaf = 0, .spine = 0, .block = -1 },
		{ .name = "b", .ntasks = 3, .leaf = 0, .spine = 0, .block = -1 },
	};
	struct llmt_rankmap *m;
	char err[512];
	struct llmt_layout L = { 2, 1, 3 };
	assert_int_equal(llmt_rankmap_build(n, 2, L, NULL, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NVLink"));
	L = (struct llmt_layout){ 1, 1, 5 };
	assert_int_equal(llmt_rankmap_build(n, 2, L, NULL, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "6 tasks"));
	L = (struct llmt_layout){ 0, 1, 6 };
	assert_int_equal(llmt_rankmap_build(n, 2, L, NULL, &m, err, sizeof(err)), -1);
	n[0].gpus = 2;
	L = (struct llmt_layout){ 1, 1, 6 };
	assert_int_equal(llmt_rankmap_build(n, 2, L, NULL, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "2 GPUs"));
}

/* 100k ranks: built and checked (no timing here; see tests/bench). */
static void test_large(void **s)
{
	struct cluster c;
	rng_state = 4242;
	gen(&c, 8, 32, 49, 100, 8);   /* 12544 nodes */
	for (unsigned i = 0; i < c.n; i++)
		c.nodes[i].ntasks = 8;
	struct llmt_layout L = { 8, 4, c.n * 8 / 32 };
	struct llmt_rankmap *m;
	char err[512];
	assert_int_equal(llmt_rankmap_build(c.nodes, c.n, L, NULL, &m, err, sizeof(err)), 0);
	assert_int_equal(m->ntasks, 100352);
	assert_int_equal(llmt_rankmap_check(m, c.nodes, err, sizeof(err)), 0);
	llmt_rankmap_free(m);
	cluster_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_properties),
		cmocka_unit_test(test_dp_under_one_leaf),
		cmocka_unit_test(test_pp_under_one_leaf),
		cmocka_unit_test(test_nvlink_blocks),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
