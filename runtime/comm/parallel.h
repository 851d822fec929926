/* parallel.h: the TP/PP/DP layout of this job (llmt_grid: this rank in the
 * TP x PP x DP grid; spank/rankmap.h's llmt_layout is the plugin's rank map)
 * and its communication groups.
 * The layout comes from the environment the plugin sets (LLM_TRAIN_TP/PP/DP,
 * RANK, WORLD_SIZE); Megatron order: rank = tp + dp*TP + pp*TP*DP. */
#ifndef LLMT_PARALLEL_H
#define LLMT_PARALLEL_H
#include <stddef.h>
#include "comm.h"

typedef struct {
	int rank, world;            /* topology-aware rank (RANK) and world size */
	int tp, pp, dp;
	int tp_rank, pp_rank, dp_rank;
} llmt_grid;

typedef struct {
	llmt_grid l;
	llmt_comm *world;           /* the backend's world (as started) */
	llmt_comm *all;             /* world reordered by RANK */
	llmt_comm *tp_comm, *pp_comm, *dp_comm;
} llmt_parallel;

/* Pure: fill l from the given variable values (NULL = absent) for a job of
 * world_size processes where this process is backend rank `mpi_rank`.
 * Returns 0, or -1 with one line in err naming the bad value. */
int llmt_grid_from_values(llmt_grid *l, int world_size, int mpi_rank,
	const char *tp, const char *pp, const char *dp,
	const char *rank, const char *world, char *err, size_t errlen);
/* Pure: when the plugin also gave the coordinates (LLM_TRAIN_TP_RANK,
 * _PP_RANK, _DP_RANK; NULL = absent), they must agree with l. */
int llmt_grid_check_coords(const llmt_grid *l, const char *tp_rank, const char *pp_rank,
	const char *dp_rank, char *err, size_t errlen);
/* Same as from_values plus check_coords, from getenv. */
int llmt_grid_from_env(llmt_grid *l, int world_size, int mpi_rank, char *err, size_t errlen);
/* Pure: the gradient accumulation that keeps the global batch of a job
 * whose batch options (--grad-accum A) were given for batch_dp replicas
 * when it runs on dp: A x batch_dp / dp (batch_dp NULL or "": A). Returns
 * 0, or -1 with one line in err when batch_dp is bad or the product is
 * not a whole multiple of dp. */
int llmt_grid_batch_accum(int A, const char *batch_dp, int dp, int *A_out, char *err, size_t errlen);
/* Rank of (tp_rank, pp_rank, dp_rank) in the layout. */
int llmt_grid_rank(const llmt_grid *l, int tp_rank, int pp_rank, int dp_rank);

/* Collective over world: read the layout from the environment and split
 * the groups. On a bad layout prints one line and returns -1 (every rank
 * sees the same values, so all fail alike). */
int llmt_parallel_init(llmt_parallel *p, llmt_comm *world);
void llmt_parallel_free(llmt_parallel *p);

#endif
