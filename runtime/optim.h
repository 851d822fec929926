/* optim.h: AdamW (PyTorch's update, decoupled weight decay) on the fp32
 * master weights with fp32 state, sharded ZeRO-1 over data parallelism:
 * the gradient buffer is reduce-scattered over DP, each DP rank updates its
 * contiguous range of the flat buffer, and the updated parameters are
 * all-gathered, so every DP replica holds the same bits. Global-norm
 * clipping counts each logical parameter once (TP-replicated tensors on
 * tp_rank 0 only, tied copies once). */
#ifndef LLMT_OPTIM_H
#define LLMT_OPTIM_H
#include <stddef.h>
#include <stdint.h>
#include "comm.h"

typedef struct {
	double beta1, beta2, eps, weight_decay, grad_clip; /* grad_clip <= 0: off */
} llmt_adamw_cfg;

/* A run of the flat buffer with one treatment. */
typedef struct {
	size_t offset, numel;
	int decay;          /* apply weight decay */
	int in_norm;        /* count in the global gradient norm on this rank */
} llmt_optim_seg;

typedef struct {
	llmt_adamw_cfg cfg;
	size_t n;            /* flat buffer length */
	size_t lo, hi;       /* this DP rank's range [lo, hi) */
	size_t block;        /* reduce-scatter block (n / dp, rounded down) */
	int dp, dp_rank;
	float *m, *v, *g;    /* state and reduced gradient over [lo, hi) (g: dp > 1) */
	const float *gv;     /* the reduced gradient in use (g, or the model's when dp == 1) */
	float *tmp;          /* staging for the all-gather */
	float *tail;         /* the n % dp last elements (all-reduced), dp long */
	llmt_optim_seg *segs;
	int nsegs;
	long t;              /* updates applied (bias correction) */
	double comm_s;       /* seconds in DP/norm collectives (reduce + step) */
	llmt_comm *dp_comm;  /* NULL = no data parallelism */
	llmt_comm *norm_comm;/* group over which the norm is summed (all ranks) */
} llmt_optim;

/* Pure: the range of the flat buffer of n elements that DP rank r of dp
 * owns. Ranks own n/dp each (rounded down); the last also owns the rest. */
void llmt_zero1_range(size_t n, int dp, int r, size_t *lo, size_t *hi);

/* Pure: one AdamW update of n elements (PyTorch 1.13 arithmetic) with the
 * gradient multiplied by gscale first; t is the 1-based step. */
void llmt_adamw_update(float *p, const float *g, float *m, float *v, size_t n,
	double lr, double gscale, const llmt_adamw_cfg *cfg, long t, int decay);

/* segs: treatment of the whole flat buffer (copied). Returns 0 or -1. */
int llmt_optim_init(llmt_optim *o, const llmt_adamw_cfg *cfg, size_t n,
	const llmt_optim_seg *segs, int nsegs, llmt_comm *dp_comm, llmt_comm *norm_comm);
void llmt_optim_free(llmt_optim *o);

/* Reduce the gradients (sum over DP) into this rank's range and return the
 * global L2 norm in *norm (same value on every rank). 0 or -1 (comm). */
int llmt_optim_reduce(llmt_optim *o, const float *grads, double *norm);
/* Update this rank's range of master with the reduced gradient (clipped by
 * the norm from reduce) and all-gather master over DP. 0 or -1 (comm). */
int llmt_optim_step(llmt_optim *o, float *master, double lr, double norm);

/* Pure: sum of squares in double, the same bits for any thread count. */
double llmt_sumsq_det(const float *x, size_t n);
/* Pure: the clip multiplier for a norm. */
double llmt_clip_scale(double norm, double clip);

#endif
