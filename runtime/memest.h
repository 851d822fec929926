/* memest.h: the analytic memory estimate of one rank (bytes): parameter
 * state, ZeRO-1 optimizer shard, the activations 1F1B keeps in flight,
 * kernel scratch, pipeline buffers, communication scratch and the
 * checkpoint snapshot; and the
 * measured peak (VmHWM) to hold it against. Library and runtime overhead
 * (MPI, oneDNN, code) is not in the estimate. */
#ifndef LLMT_MEMEST_H
#define LLMT_MEMEST_H
#include <stddef.h>
#include "config.h"
#include "parallel.h"

typedef struct {
	double params;       /* fp32 master + fp32 grads + bf16 compute copy */
	double optimizer;    /* AdamW m, v, reduced gradient shard, staging */
	double activations;  /* kept for backward, all slots in flight */
	double scratch;      /* per-layer work buffers shared by slots */
	double pipeline;     /* stage-to-stage buffers */
	double comm;         /* reduce-scatter receive scratch of comm_mpi.c (dp > 1) */
	double snapshot;     /* host copy of an asynchronous checkpoint */
	double total;
} llmt_memest;

/* Pure. nflat: this rank's flat parameter count (llmt_model_nparams). */
void llmt_memory_estimate(const llmt_config *c, const llmt_layout *l, size_t nflat,
	int B, int T, int A, int bf16, int ckpt, llmt_memest *e);
/* Peak resident set of this process (VmHWM) in bytes; 0 if unknown. */
double llmt_memory_peak(void);

#endif
