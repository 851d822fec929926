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
#include "comm/comm.h"

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
	int master_share;    /* the master passed to step holds [lo, hi) only (master[0] is
	                      * element lo): it is not all-gathered (the caller spreads
	                      * the weights' compute copies) */
	float *m, *v, *g;    /* state and reduced gradient over [lo, hi) (g: dp > 1) */
	const float *gv;     /* the reduced gradient in use (g, or the model's when dp == 1) */
	float *tmp;          /* staging for the all-gather (not with master_share) */
	float *tail;         /* the n % dp last elements (all-reduced), dp long */
	llmt_optim_seg *segs;
	int nsegs;
	long t;              /* updates applied (bias correction) */
	double comm_s;       /* seconds in DP/norm collectives (reduce + step) */
	llmt_comm *dp_comm;  /* NULL = no data parallelism */
	llmt_comm *norm_comm;/* group over which the norm is summed (all ranks) */
} llmt_optim;

/* Pure: the range of the flat buffer of n elements that DP rank r of dp
 * owns. Ranks own n/dp each (rounded down); the last also owns the rest.
 * Inline: the memory estimate (libllmtplan) and the model's fp32 master
 * share (llmt_model_create_share) use it too. */
static inline void llmt_zero1_range(size_t n, int dp, int r, size_t *lo, size_t *hi)
{
	size_t b = n / (size_t)dp;

	*lo = b * (size_t)r;
	*hi = r == dp - 1 ? n : *lo + b;
}

/* Pure: one AdamW update of n elements (PyTorch 1.13 arithmetic) with the
 * gradient multiplied by gscale first; t is the 1-based step. */
void llmt_adamw_update(float *p, const float *g, float *m, float *v, size_t n,
	double lr, double gscale, const llmt_adamw_cfg *cfg, long t, int decay);

/* segs: treatment of the whole flat buffer (copied). master_share: step
 * gets this rank's range of the master only (see above). 0 or -1. */
int llmt_optim_init(llmt_optim *o, const llmt_adamw_cfg *cfg, size_t n,
	const llmt_optim_seg *segs, int nsegs, llmt_comm *dp_comm, llmt_comm *norm_comm);
int llmt_optim_init_share(llmt_optim *o, const llmt_adamw_cfg *cfg, size_t n,
	const llmt_optim_seg *segs, int nsegs, llmt_comm *dp_comm, llmt_comm *norm_comm,
	int master_share);
void llmt_optim_free(llmt_optim *o);

/* Reduce the gradients (sum over DP) into this rank's range and return the
 * global L2 norm in *norm (same value on every rank). 0 or -1 (comm). */
int llmt_optim_reduce(llmt_optim *o, const float *grads, double *norm);
/* Update this rank's range of master with the reduced gradient (clipped by
 * the norm from reduce) and all-gather master over DP (with master_share:
 * master is the range, nothing gathered). 0 or -1 (comm). */
int llmt_optim_step(llmt_optim *o, float *master, double lr, double norm);

/* ---- the optimizer as the training loop drives it -----------------------
 * One interface whichever memory holds the model: the host (llmt_optim
 * above on the model's host buffers, optim_host.c) or the device that runs
 * the model (gpu/bridge_optim.c: NCCL, fused AdamW, no per-step transfer).
 * The loop calls, each step: poke (fault injection, tests), finish, step;
 * at SDC checks master; for a checkpoint snapshot, then saved (at once, or
 * a step later when async is set); on resume or --init-from, load_into then
 * loaded. finish, step and snapshot are collective over the job's ranks
 * (the loop calls the others on every rank alike too). Calls return 0 or
 * -1 (a communication or device failure: the caller exits 75). */
struct llmt_model;

/* A rank's optimizer state in host memory, laid out as the model's flat
 * buffers: master[0..n) (master_share: only [lo, hi), master[0] is
 * element lo: a ZeRO-1 share), AdamW m and v over flat elements [lo, hi)
 * (m[0] is element lo). Callers zero it before asking for it. */
typedef struct {
	float *master;
	size_t n;
	float *m, *v;
	size_t lo, hi;
	int master_share;
	/* saved() only, instead of a whole master: the part of the whole,
	 * replicated one this DP rank writes (ckpt.h llmt_ckpt_dp_share;
	 * master[0] is its first element) and master_hash, the checkpoint's
	 * replica hash of the whole (a device's ZeRO-1 run: the whole master
	 * is gathered on the device only) */
	int master_part;
	uint64_t master_hash;
} llmt_opt_state;

/* Where the optimizer runs: the layout pieces it needs. */
typedef struct {
	const llmt_adamw_cfg *cfg;
	int A;                /* micro-batches per step (the last one's backward
	                       * starts the device's DP reduction) */
	int tp_rank, pp, pp_rank;
	int tied;             /* tie_embeddings with pp > 1: sum the two copies */
	llmt_comm *dp_comm;   /* NULL: no data parallelism */
	llmt_comm *pp_comm;   /* first <-> last stage (tied copies); NULL if pp == 1 */
	llmt_comm *all;       /* the gradient norm is summed here (NULL: one process) */
} llmt_opt_env;

typedef enum { LLMT_POKE_NAN, LLMT_POKE_SPIKE, LLMT_POKE_BITFLIP, LLMT_POKE_MASTERFLIP } llmt_poke;

typedef struct llmt_trainopt llmt_trainopt;
struct llmt_trainopt_ops {
	/* after the step's backward passes: gradients summed over DP and over
	 * the tied copies, *norm the global L2 norm (same bits on every rank) */
	int (*finish)(llmt_trainopt *o, double *norm);
	/* clipped AdamW of this rank's share, weights all-gathered over DP,
	 * compute copy refreshed; t counts it */
	int (*step)(llmt_trainopt *o, double lr, double norm);
	/* faults: NAN and SPIKE (before finish) poison or scale x1000 this
	 * rank's gradients; BITFLIP (after step) flips bit 22 of the first
	 * parameter; MASTERFLIP (before finish) flips bit 30 of the first
	 * element of this rank's fp32 master share alone, as a memory fault
	 * at rest would (dp > 1: a host share, bf16, or the device's, there
	 * its first element counted in the norm); *at: the element touched */
	int (*poke)(llmt_trainopt *o, llmt_poke what, size_t *at);
	/* capture master, m and v for a checkpoint; saved() hands them over in
	 * host memory, valid until the next snapshot (waits for the capture) */
	int (*snapshot)(llmt_trainopt *o);
	int (*saved)(llmt_trainopt *o, llmt_opt_state *s);
	/* resume: the host buffers a checkpoint load fills (m, v NULL when
	 * with_state is 0: weights only), then loaded() puts them in place and
	 * sets t (free() releases what load_into allocated, if loaded() was
	 * never called) */
	int (*load_into)(llmt_trainopt *o, int with_state, llmt_opt_state *s);
	int (*loaded)(llmt_trainopt *o, long t, int with_state);
	void (*free)(llmt_trainopt *o);
	/* *bad: elements of this rank's fp32 master share whose bf16 weights
	 * (or fp32 copies) no longer follow from it: corruption at rest since
	 * the last step (0 without a share); 0, or -1 when the check could not
	 * run (a device error) */
	int (*share_check)(llmt_trainopt *o, size_t *bad);
	/* *sum: llmt_checksum_f32 (sdc.h) of the weights the DP replicas hold
	 * alike, for their SDC check: the master weights, or where the fp32
	 * master is a ZeRO-1 share (dp > 1: bf16 on the host, a device) the
	 * bf16 weights widened (a device: computed a piece at a time, no
	 * whole copy on the host) */
	int (*weights_sum)(llmt_trainopt *o, uint64_t *sum);
};
struct llmt_trainopt {
	const struct llmt_trainopt_ops *ops;
	const char *where;    /* "host" or "device" */
	long t;               /* updates applied (bias correction) */
	double comm_s;        /* seconds in DP/norm collectives (finish + step) */
	int async;            /* 1: the snapshot completes while training goes on */
	int stable;           /* 1: what saved() gives stays unchanged until the
	                       * next snapshot(): the checkpoint writer writes it
	                       * in place (llmt_ckpt_state.borrow), no copy */
};

/* The host implementation over m's host buffers (NULL after a message). */
llmt_trainopt *llmt_trainopt_host(struct llmt_model *m, const llmt_opt_env *e);
/* The tied-embedding gradient exchange between the first and the last
 * stage (pp_comm ranks 0 and pp-1): g (n floats) becomes the sum of both
 * copies, the same bits on both stages. 0 or -1. */
int llmt_tied_sum(llmt_comm *pp_comm, int pp, int pp_rank, float *g, size_t n);

/* Pure: sum of squares in double, the same bits for any thread count. */
double llmt_sumsq_det(const float *x, size_t n);
/* Pure: the clip multiplier for a norm. */
double llmt_clip_scale(double norm, double clip);

#endif
