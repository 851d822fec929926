/* Bench helper: time of the plugin's rank map (all candidate orders,
 * each priced by the cost model, as in a real step launch) for N ranks
 * on a fat tree with shuffled names, next to the time of one plain
 * qsort of the same node array by name, measured in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rankmap.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct llmt_rm_node *)a)->name, ((const struct llmt_rm_node *)b)->name);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned seed = 12345;
	for (int a = 1; a < argc; a++) {
		unsigned ranks = (unsigned)strtoul(argv[a], NULL, 10), tpn = 8;
		unsigned n = ranks / tpn;
		if (!n || ranks % 32) {
			fprintf(stderr, "bench_rankmap: ranks must be a multiple of 32\n");
			return 64;
		}
		char (*names)[16] = malloc((size_t)n * sizeof(*names));
		struct llmt_rm_node *nodes = calloc(n, sizeof(*nodes)), *copy = calloc(n, sizeof(*nodes));
		unsigned *perm = malloc(n * sizeof(*perm));
		if (!names || !nodes || !copy || !perm)
			return 70;
		for (unsigned i = 0; i < n; i++)
			perm[i] = i;
		for (unsigned i = n - 1; i > 0; i--) {
			seed = seed * 1103515245u + 12345u;
			unsigned j = (seed >> 8) % (i + 1), t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		for (unsigned i = 0; i < n; i++) {
			snprintf(names[i], 16, "gpu%06u", perm[i]);
			nodes[i].name = names[i];
			nodes[i].ntasks = tpn;
			nodes[i].leaf = (int)(i / 32);
			nodes[i].spine = (int)(i / 32 / 16);
			nodes[i].block = -1;
			nodes[i].gpus = 8;
			nodes[i].nnics = 4;
		}
		memcpy(copy, nodes, n * sizeof(*nodes));     /* shuffled, for the sort reference */
		qsort(nodes, n, sizeof(*nodes), cmp_name);    /* Slurm lists nodes by name */
		struct llmt_layout L = { 8, 4, ranks / 32 };
		enum { REPS = 7 };
		double tmap[REPS], tsort[REPS];
		char err[256];
		for (int r = 0; r < REPS; r++) {
			struct llmt_rankmap *m;
			double t0 = now();
			if (llmt_rankmap_build(nodes, n, L, NULL, &m, err, sizeof(err))) {
				fprintf(stderr, "bench_rankmap: %s\n", err);
				return 70;
			}
			tmap[r] = now() - t0;
			llmt_rankmap_free(m);
			struct llmt_rm_node *s = malloc(n * sizeof(*s));
			memcpy(s, copy, n * sizeof(*s));
			t0 = now();
			qsort(s, n, sizeof(*s), cmp_name);
			tsort[r] = now() - t0;
			free(s);
		}
		qsort(tmap, REPS, sizeof(double), cmp_dbl);
		qsort(tsort, REPS, sizeof(double), cmp_dbl);
		printf("ranks %7u nodes %6u: rank map %8.3f ms (median of %d), one name sort %7.3f ms, ratio %.1fx\n",
		       ranks, n, tmap[REPS / 2] * 1e3, REPS, tsort[REPS / 2] * 1e3,
		       tmap[REPS / 2] / tsort[REPS / 2]);
		free(names);
		free(nodes);
		free(copy);
		free(perm);
	}
	return 0;
}
