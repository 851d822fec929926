/* gmodel_opt.h: the device side of the training loop's GPU optimizer
 * (bridge_optim.c drives it): this rank's ZeRO-1 share of the flat buffer
 * (the bucket blocks of llmt_gmodel_set_dp, or all of it without data
 * parallelism), its gradient sum of squares, its clipped AdamW update and
 * the weight all-gather, the share's SDC check, element copies for fault
 * injection and the tied embedding, and the checkpoint snapshot / restore of master and AdamW
 * state. Everything runs on the model's compute stream (the snapshot copy
 * on its copy stream) and returns 0 or -1 after a message on stderr. */
#ifndef LLMT_GMODEL_OPT_H
#define LLMT_GMODEL_OPT_H
#include <stddef.h>
#include "gmodel.h"
#include "train/optim.h"

typedef struct llmt_gopt llmt_gopt;

/* For g (after llmt_gmodel_set_dp when dp > 1): allocates the AdamW state
 * (zeros). Norm counts flat elements in the nruns ranges [lo[i], hi[i])
 * only (ascending, disjoint). A checkpoint holds AdamW state over
 * [ck_lo, ck_hi). NULL on failure. */
llmt_gopt *llmt_gopt_create(llmt_gmodel *g, const llmt_adamw_cfg *cfg, const size_t *lo,
                            const size_t *hi, int nruns, size_t ck_lo, size_t ck_hi);
void llmt_gopt_free(llmt_gopt *o);

/* Sum of squares of this rank's reduced gradient share inside the norm
 * ranges (the replicated tails counted on DP rank 0), fixed order. */
int llmt_gopt_sumsq(llmt_gopt *o, double *out);
/* AdamW (gradient x gscale, step t) on the share, weights all-gathered
 * over DP, bf16 copy refreshed; waits for the all-gather (watchdog). */
int llmt_gopt_update(llmt_gopt *o, double lr, double gscale, const llmt_adamw_cfg *cfg, long t);
/* The first element of the share counted in the norm (n: none). */
size_t llmt_gopt_first(const llmt_gopt *o);
/* The SDC check of a ZeRO-1 share (dp > 1; 0 without one), after the
 * passes, before the update: *bad = its elements whose bf16 rounding is
 * no longer the bf16 weight this rank gave the replicas, plus those whose
 * fp32 copy (embedding, norm weights) differs from them (one kernel pass
 * over the share; the norm scratch holds the count). */
int llmt_gopt_share_check(llmt_gopt *o, size_t *bad);

/* The reduced gradient over [lo, hi) made whole on every DP rank (the
 * buckets that overlap it all-gathered). */
int llmt_gopt_grads_whole(llmt_gopt *o, size_t lo, size_t hi);

/* Synchronous copies of n elements at flat offset at between a device
 * buffer and host memory; a master write refreshes its bf16 copy and
 * waits for a checkpoint snapshot in flight first. SHARE: this rank's
 * fp32 master alone ([at, at + n) inside one part of its share, else -1),
 * nothing refreshed: what a memory fault at rest does. */
typedef enum { LLMT_GBUF_MASTER, LLMT_GBUF_GRADS, LLMT_GBUF_SHARE } llmt_gbuf;
int llmt_gopt_get(llmt_gopt *o, llmt_gbuf which, size_t at, size_t n, float *host);
int llmt_gopt_put(llmt_gopt *o, llmt_gbuf which, size_t at, size_t n, const float *host);

/* Checkpoint: copy master and m, v [ck_lo, ck_hi) into pinned host
 * memory on the copy stream after the queued work; the next write of
 * master, m or v on the device waits for that copy. The master: whole
 * [0, n); dp > 1 (master, m and v all-gathered on the device) the part
 * this DP rank writes of the replicated master (ckpt.h
 * llmt_ckpt_dp_share), and the XXH3 of the whole (its replica hash,
 * computed on the device: dev_xxh3.cu). wait returns the
 * three host pointers and that hash (hash may be NULL) once the copy is
 * complete. */
int llmt_gopt_snapshot(llmt_gopt *o);
int llmt_gopt_snapshot_wait(llmt_gopt *o, const float **master, const float **m,
                            const float **v, uint64_t *hash);
/* Resume: master (n floats) and, when m is not NULL, m and v over the
 * whole flat buffer, to the device; bf16 copy refreshed. */
int llmt_gopt_restore(llmt_gopt *o, const float *master, const float *m, const float *v);
/* The same from master, m and v over [ck_lo, ck_hi) only (this DP rank's
 * llmt_zero1_range: with dp > 1, collective over DP, each rank's range
 * all-gathered on the device; dp = 1: the whole buffers). */
int llmt_gopt_restore_range(llmt_gopt *o, const float *master, const float *m, const float *v);

#endif
