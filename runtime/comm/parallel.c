/* parallel.c: layout from the environment (pure part) and the split of the
 * world into TP, PP and DP groups with comm.h. RANK decides the order, not
 * the backend's rank, since the plugin places ranks along the network. */
#include "parallel.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llmt/env.h"

static int parse_pos(const char *name, const char *s, int *out, char *err, size_t errlen)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 1 << 20) {
		snprintf(err, errlen, "%s=%s: not a positive integer", name, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int llmt_grid_rank(const llmt_grid *l, int tp_rank, int pp_rank, int dp_rank)
{
	return tp_rank + dp_rank * l->tp + pp_rank * l->tp * l->dp;
}

int llmt_grid_from_values(llmt_grid *l, int world_size, int mpi_rank,
	const char *tp, const char *pp, const char *dp,
	const char *rank, const char *world, char *err, size_t errlen)
{
	int r = mpi_rank, w = world_size;

	memset(l, 0, sizeof(*l));
	if (world && *world) {
		if (parse_pos("WORLD_SIZE", world, &w, err, errlen))
			return -1;
		if (w != world_size) {
			snprintf(err, errlen, "WORLD_SIZE=%s but the job has %d processes", world, world_size);
			return -1;
		}
	}
	if (rank && *rank) {
		char *end;
		long v;
		errno = 0;
		v = strtol(rank, &end, 10);
		if (errno || end == rank || *end || v < 0 || v >= world_size) {
			snprintf(err, errlen, "RANK=%s: not in 0..%d", rank, world_size - 1);
			return -1;
		}
		r = (int)v;
	}
	l->rank = r;
	l->world = w;
	l->tp = l->pp = 1;
	if (tp && *tp && parse_pos(LLMT_ENV_TP, tp, &l->tp, err, errlen))
		return -1;
	if (pp && *pp && parse_pos(LLMT_ENV_PP, pp, &l->pp, err, errlen))
		return -1;
	if (dp && *dp && strcmp(dp, "auto") != 0) {
		if (parse_pos(LLMT_ENV_DP, dp, &l->dp, err, errlen))
			return -1;
	} else {
		if (w % (l->tp * l->pp)) {
			snprintf(err, errlen, "layout tp=%d pp=%d does not divide the world size %d",
				l->tp, l->pp, w);
			return -1;
		}
		l->dp = w / (l->tp * l->pp);
	}
	if ((long)l->tp * l->pp * l->dp != w) {
		snprintf(err, errlen, "layout tp=%d pp=%d dp=%d needs %d ranks but the world size is %d",
			l->tp, l->pp, l->dp, l->tp * l->pp * l->dp, w);
		return -1;
	}
	l->tp_rank = r % l->tp;
	l->dp_rank = (r / l->tp) % l->dp;
	l->pp_rank = r / (l->tp * l->dp);
	return 0;
}

int llmt_grid_batch_accum(int A, const char *batch_dp, int dp, int *A_out, char *err, size_t errlen)
{
	int d;

	*A_out = A;
	if (!batch_dp || !*batch_dp)
		return 0;
	if (parse_pos(LLMT_ENV_BATCH_DP, batch_dp, &d, err, errlen))
		return -1;
	if (dp < 1 || ((long)A * d) % dp) {
		snprintf(err, errlen, "%s=%d with --grad-accum %d: global batch of %ld micro-batches "
			"does not split over dp=%d", LLMT_ENV_BATCH_DP, d, A, (long)A * d, dp);
		return -1;
	}
	*A_out = (int)((long)A * d / dp);
	return 0;
}

int llmt_grid_check_coords(const llmt_grid *l, const char *tp_rank, const char *pp_rank,
	const char *dp_rank, char *err, size_t errlen)
{
	const char *names[3] = { LLMT_ENV_TP_RANK, LLMT_ENV_PP_RANK, LLMT_ENV_DP_RANK };
	const char *vals[3] = { tp_rank, pp_rank, dp_rank };
	int want[3] = { l->tp_rank, l->pp_rank, l->dp_rank };

	for (int i = 0; i < 3; i++) {
		char *end;
		long v;
		if (!vals[i] || !*vals[i])
			continue;
		errno = 0;
		v = strtol(vals[i], &end, 10);
		if (errno || end == vals[i] || *end || v != want[i]) {
			snprintf(err, errlen, "%s=%s but RANK=%d in tp=%d pp=%d dp=%d gives %d (rank = tp + dp*TP + pp*TP*DP)",
				names[i], vals[i], l->rank, l->tp, l->pp, l->dp, want[i]);
			return -1;
		}
	}
	return 0;
}

int llmt_grid_from_env(llmt_grid *l, int world_size, int mpi_rank, char *err, size_t errlen)
{
	if (llmt_grid_from_values(l, world_size, mpi_rank,
			getenv(LLMT_ENV_TP), getenv(LLMT_ENV_PP), getenv(LLMT_ENV_DP),
			getenv("RANK"), getenv("WORLD_SIZE"), err, errlen))
		return -1;
	return llmt_grid_check_coords(l, getenv(LLMT_ENV_TP_RANK), getenv(LLMT_ENV_PP_RANK),
		getenv(LLMT_ENV_DP_RANK), err, errlen);
}

int llmt_parallel_init(llmt_parallel *p, llmt_comm *world)
{
	char err[256];
	llmt_grid *l = &p->l;

	memset(p, 0, sizeof(*p));
	p->world = world;
	if (llmt_grid_from_env(l, llmt_comm_size(world), llmt_comm_rank(world), err, sizeof(err))) {
		fprintf(stderr, "llm-train: %s\n", err);
		return -1;
	}
	/* RANKs must be a permutation: check before splitting on them */
	{
		int n = l->world, bad = 0;
		int *all = malloc(sizeof(int) * (size_t)n);
		char *seen = calloc((size_t)n, 1);
		if (!all || !seen || llmt_comm_allgather_bytes(world, &l->rank, all, sizeof(int))) {
			free(all);
			free(seen);
			fprintf(stderr, "llm-train: cannot exchange ranks\n");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (seen[all[i]])
				bad = all[i] + 1;
			seen[all[i]] = 1;
		}
		free(all);
		free(seen);
		if (bad) {
			fprintf(stderr, "llm-train: RANK=%d is given to more than one process\n", bad - 1);
			return -1;
		}
	}
	p->all = llmt_comm_split(world, 0, l->rank);
	if (!p->all)
		return -1;
	p->tp_comm = llmt_comm_split(p->all, l->dp_rank + l->pp_rank * l->dp, l->tp_rank);
	p->dp_comm = llmt_comm_split(p->all, l->tp_rank + l->pp_rank * l->tp, l->dp_rank);
	p->pp_comm = llmt_comm_split(p->all, l->tp_rank + l->dp_rank * l->tp, l->pp_rank);
	if (!p->tp_comm || !p->dp_comm || !p->pp_comm) {
		fprintf(stderr, "llm-train: cannot create the TP/PP/DP groups\n");
		return -1;
	}
	llmt_comm_set_name(p->all, "all");
	llmt_comm_set_name(p->tp_comm, "tp");
	llmt_comm_set_name(p->dp_comm, "dp");
	llmt_comm_set_name(p->pp_comm, "pp");
	return 0;
}

void llmt_parallel_free(llmt_parallel *p)
{
	if (p->tp_comm)
		llmt_comm_free(p->tp_comm);
	if (p->dp_comm)
		llmt_comm_free(p->dp_comm);
	if (p->pp_comm)
		llmt_comm_free(p->pp_comm);
	if (p->all)
		llmt_comm_free(p->all);
	memset(p, 0, sizeof(*p));
}
