/* bench_callbacks.c: in-process cost of llm_train.so's remote callbacks
 * for one slurmstepd (init, init_post_opt, user_init, task_init for each
 * local task, exit) through the fake spank harness, for steps of 8 to
 * 8192 tasks on a generated two-level topology. This is the time the
 * plugin adds to a step launch on each node (nodes work in parallel). */
#define _GNU_SOURCE
#include "tests/spank/fake_spank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spank/llm_train.c"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	char dir[] = "/tmp/llmt-benchcb-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char topo[256], pol[256], arg[300];
	snprintf(topo, sizeof(topo), "%s/topology.conf", dir);
	snprintf(pol, sizeof(pol), "%s/policy.yaml", dir);
	const unsigned nodes_max = 1024, per_leaf = 32;
	FILE *f = fopen(topo, "w");
	if (!f)
		return 1;
	for (unsigned l = 0; l < nodes_max / per_leaf; l++)
		fprintf(f, "SwitchName=s%u Nodes=n[%u-%u]\n", l, l * per_leaf + 1, (l + 1) * per_leaf);
	fprintf(f, "SwitchName=top Switches=s[0-%u]\n", nodes_max / per_leaf - 1);
	fclose(f);
	f = fopen(pol, "w");
	if (!f)
		return 1;
	fprintf(f, "topology:\n  source: %s\nnode_types:\n  - name: cpu\n    nodes: n[1-%u]\n"
		   "    gpus_per_node: 0\n    nics: [lo]\nnccl_profiles:\n  cpu:\n"
		   "    NCCL_SOCKET_IFNAME: \"${nic}\"\n", topo, nodes_max);
	fclose(f);
	chmod(pol, 0644);
	snprintf(arg, sizeof(arg), "policy=%s", pol);
	char *av[] = { arg };

	struct { unsigned nodes, per; } cases[] = { { 4, 2 }, { 128, 8 }, { 1024, 8 } };
	printf("llm_train.so remote callbacks per slurmstepd (fake spank, 1 node's share), median of runs:\n");
	for (unsigned c = 0; c < 3; c++) {
		unsigned n = cases[c].nodes, per = cases[c].per, total = n * per;
		char nl[64], tpn[64];
		snprintf(nl, sizeof(nl), "n[1-%u]", n);
		snprintf(tpn, sizeof(tpn), "%u(x%u)", per, n);
		enum { RUNS = 21 };
		double t[RUNS];
		for (int r = 0; r < RUNS; r++) {
			llmt_remote_exit(NULL, 0, NULL);
			llmt_raw_reset();
			fake_reset(S_CTX_REMOTE);
			fake.item.step_id = 1;
			fake.item.nnodes = n;
			fake.item.node_id = n / 2;
			fake.item.local_tasks = per;
			fake.item.total_tasks = total;
			fake_env_set("SLURM_STEP_NODELIST", nl);
			fake_env_set("SLURM_STEP_TASKS_PER_NODE", tpn);
			fake_env_set("SLURM_SPANK__SLURM_SPANK_OPTION_llm_train_llm_train", "tp=2");
			double t0 = now_us();
			int rc = slurm_spank_init(FAKE_SP, 1, av);
			rc |= slurm_spank_init_post_opt(FAKE_SP, 1, av);
			rc |= slurm_spank_user_init(FAKE_SP, 1, av);
			fake.item.in_task = 1;
			for (unsigned k = 0; k < per; k++) {
				fake.item.task_id = (int)k;
				fake.item.task_global_id = (n / 2) * per + k;
				rc |= slurm_spank_task_init(FAKE_SP, 1, av);
			}
			rc |= slurm_spank_exit(FAKE_SP, 1, av);
			t[r] = now_us() - t0;
			if (rc != 0) {
				fprintf(stderr, "callbacks failed (%u nodes):\n", n);
				fake_log_dump();
				return 1;
			}
		}
		qsort(t, RUNS, sizeof(t[0]), cmp);
		printf("  %5u nodes x %u tasks (%5u ranks): %8.1f us  (min %.1f, max %.1f)\n", n, per, total,
		       t[RUNS / 2], t[0], t[RUNS - 1]);
	}
	fake_free();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
