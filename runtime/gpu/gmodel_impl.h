/* gmodel_impl.h: the private layout of llmt_gmodel shared by gmodel.c
 * (memory, optimizer, copies) and gmodel_step.c (forward, backward). The
 * device buffers mirror model_impl.h's, all bf16 activations. */
#ifndef LLMT_GMODEL_IMPL_H
#define LLMT_GMODEL_IMPL_H
#include <cuda_runtime_api.h>
#include "model/bf16.h"
#include "model/model_impl.h"
#include "dev_kernels.h"
#include "blas.h"
#include "gmodel.h"
#include "host_plan.h"

/* one layer's activations (act_plan.c's table, gmodel_act.c): with
 * recomputation the recomputed ones point to one set shared by every
 * layer and slot */
struct glayer_act {
	float *x_mid;
	gk_bf16 *h1, *h2;
	float *rstd1, *rstd2;
	void *qkv;                    /* fp32; bf16 on the fused path */
	float *qr, *kr;
	gk_bf16 *q, *k, *v, *P, *att, *gu, *a;
	float *lse;                   /* fused attention: logsumexp [B][H][T] */
};

struct gslot {
	float **xs;
	struct glayer_act *la;
	int32_t *tok, *tgt;           /* device */
	int32_t *pos, *lo;            /* packed samples: rotary row, first key [M] (device) */
	int packed;                   /* pos and lo apply (llmt_gmodel_set_seg) */
	int32_t *eu, *es, *ep;        /* embedding backward plan (device) */
	int neu;
	gk_bf16 *xf, *dlog;
	float *rstdf;
};

struct llmt_gmodel {
	llmt_model *h;                /* host mirror: table, init, host buffers */
	cudaStream_t st, cst, xst;    /* compute, communication, copies */
	gmm_ctx *mm;
	/* master, m1, v1: fp32, whole (flat layout), or after set_dp this DP
	 * rank's ZeRO-1 share packed (gmodel_shard.c); master and the AdamW
	 * state are made when the optimizer first needs them */
	float *master, *grads, *m1, *v1;
	/* gz: zero_grad since the last backward, grads not zeroed (the next
	 * backward writes them; ggrads_settle zeroes them for a reader first);
	 * gw: the backward in progress is that first one, its gradient
	 * products write (beta 0) instead of adding */
	int gz, gw;
	/* ginit: grads hold the init's fp32 weights, staged there at creation
	 * (ginit_weights) and kept until the master is made from them
	 * (gmaster_need) or anything else uses grads (ginit_release): the init
	 * is computed once */
	int ginit;
	size_t nsh;                   /* elements of master, m1, v1 */
	size_t *sh_lo, *sh_hi, *sh_at;/* share parts: flat [lo, hi) at packed at (NULL: whole) */
	int nsh_parts;
	float *wf;                    /* fp32 copies of the tensors kernels read in fp32 */
	size_t *wf_flat, *wf_at, *wf_n, wf_len;
	int nwf;
	gk_bf16 *wc;
	float *cos_t, *sin_t;
	struct gslot *slots;
	void *qkv_s;                  /* fp32; bf16 on the fused path */
	float *S, *y, *dx, *dh, *da, *datt, *dP, *logits, *lossrow;
	float *dq, *dk, *dv;          /* bf16 on the fused path */
	float *part, *contrib;
	double *sumsq;
	gk_bf16 *O, *dyact, *dgu, *dO, *dS, *dqkv;
	float *lossrow_h;             /* pinned */
	int32_t *tok_h;               /* host staging for the embedding plan */
	int pinned;                   /* host master and gradients page-locked */
	int attn_chunk;               /* query rows per attention chunk (gattn_chunk) */
	int fused;                    /* fused attention (gattn_fused): no P, S, dP, dS, O */
	int flash_mma;                /* its forward on mma.sync (head dims 64, 128: gflash_choose) */
	llmt_recompute rc;            /* recomputed in backward: attn core, or whole layers
	                               * (their activations one set for all: act_plan.c) */
	int rc_layers;                /* in the stage's first rc_layers layers; the rest keep all */
	float *Dsc;                   /* fused backward: rowsum(dO o) [B][H][T] */
	/* tensor parallelism: all-reduces on the compute stream (gmodel_step.c) */
	struct llmt_nccl *tp;         /* over par.tp_comm (owned); NULL: no TP group */
	float *qkn_g;                 /* QK-norm weight gradient scratch [2][hd] */
	/* data parallelism */
	struct llmt_nccl *dp;
	gbucket *bk;
	cudaEvent_t *bk_ev;
	int nbk, bk_sent;
	int *layer_t0;                /* first tensor index of each local layer */
	int reducing;
	int dp_failed;
	int dp_size, dp_rank;
	double *dp_sq, *dp_part;      /* ZeRO-1 norm partials: device, host */
	/* the weight all-gather after an update, on the communication stream:
	 * ag_ev[b] after bucket b, ev_wf after the fp32 copies; the forward
	 * waits for each bucket before the first layer that reads it (ag_w:
	 * buckets [0, ag_w) not waited for yet) */
	cudaEvent_t *ag_ev, ev_upd, ev_wf;
	int ag_pending, ag_w;
	int *ag_wp;                   /* each bucket's wait point (gbucket_wait_point) */
	size_t (*npc)[2];             /* flat ranges this rank adds to the norm */
	int nnpc;
	/* snapshots */
	float *snap_h;
	cudaEvent_t ev_snap, ev_snap_done;
	int snap_pending;
	void **dall;
	int nd, capd;
};

int gcheck(cudaError_t e, const char *what);
/* every slot's layer activations (their la arrays made), from act_plan.c's
 * table (gmodel_act.c); 0 or -1 */
int gact_alloc(llmt_gmodel *g);
/* device memory of the model (zeroed on the compute stream), freed with
 * it or by gdfree (gmodel.c) */
void *gdmem(llmt_gmodel *g, size_t bytes);
void gdfree(llmt_gmodel *g, void *p);
/* Before a read of grads: zeroed if zero_grad left them to the next
 * backward and none ran since (gmodel.c). 0 or -1. */
int ggrads_settle(llmt_gmodel *g);

/* ---- the fp32 master and its share (gmodel_shard.c) ----
 * packed index of flat element flat (flat itself when whole) */
size_t gsh_at(const llmt_gmodel *g, size_t flat);
/* 1 when the flat range [at, at + n) lies in one part of this rank's
 * share (sharded) or in the buffer (whole) */
int gsh_has(const llmt_gmodel *g, size_t at, size_t n);
/* sharded, master made: the SDC check of the share queued on the compute
 * stream: *bad (device) = its elements whose bf16 rounding differs from
 * the bf16 copy, plus those whose fp32 copy differs from them */
int gsh_check(llmt_gmodel *g, unsigned long long *bad);
/* the table and buffer of fp32 copies (embedding, norm weights); gw32: the
 * fp32 copy of flat element flat (kernels read weights there, not master) */
int gwf_plan(llmt_gmodel *g);
const float *gw32(const llmt_gmodel *g, size_t flat);
/* the host mirror's whole master made if absent (before the device
 * optimizer: the init's values, else for a download: undefined); 0 or -1 */
int ghost_master(llmt_gmodel *g);
/* the init's weights (model_impl.h llmt_model_init_range) to the device
 * GINIT_CHUNK floats at a time through a host buffer (no whole host
 * master): master 1, into the fp32 master; 0, staged in the gradient
 * buffer (free: at creation) to the bf16 and fp32 copies and kept there
 * (ginit). 0 or -1 */
int ginit_weights(llmt_gmodel *g, int master);
/* before grads are used for anything else: the init kept there given up
 * (ginit cleared, grads zeroed: the state the creation left them in
 * before). 0 or -1 */
int ginit_release(llmt_gmodel *g);
/* master made if it does not exist yet: from the host master, else the
 * init kept in grads (ginit), else the init made again */
int gmaster_need(llmt_gmodel *g);
/* set_dp: the share's parts; a whole master becomes its share */
int gsh_plan(llmt_gmodel *g);
/* fp32 weights staged in grads[at, at + n) to the bf16 copy, the fp32
 * copies and master; grads[at, at + n) zeroed after */
int gmaster_spread(llmt_gmodel *g, size_t at, size_t n);
/* the fp32 copies from master after an update; sharded: this rank's
 * elements, zeros elsewhere, to be summed over DP */
int gwf_refresh(llmt_gmodel *g);
/* sharded: packed (master, m or v layout) all-gathered into whole (n) */
int gsh_gather(llmt_gmodel *g, const float *packed, float *whole);
/* host (n floats, flat) into packed (this rank's parts, or all when whole) */
int gsh_put(llmt_gmodel *g, float *packed, const float *host);
/* the same from a whole flat buffer on the device */
int gsh_pack(llmt_gmodel *g, float *packed, const float *whole);

/* Before any write of master (or the AdamW state) on the compute stream:
 * the compute stream waits for a checkpoint snapshot copy in flight on the
 * copy stream (gmodel.c). 0 or -1. */
int gsnap_fence(llmt_gmodel *g);

/* ZeRO-1: every rank's updated blocks of the bf16 copy to every rank and
 * the fp32 copies refreshed, issued on the communication stream (the
 * compute stream waits bucket by bucket: gag_wait); 0 or -1
 * (gmodel_shard.c) */
int llmt_gmodel_dp_allgather(llmt_gmodel *g);
/* The compute stream waits for the weight all-gather of every bucket
 * starting below flat element hi (and the fp32 copies) not waited for yet
 * (gmodel_shard.c); gag_finish: for all of it, and the host under the NCCL
 * watchdog (before anything else reads the weights or uses the DP
 * communicator on the compute stream). 0 or -1. */
int gag_wait(llmt_gmodel *g, size_t hi);
int gag_finish(llmt_gmodel *g);

/* the recomputation of the stage's layer l */
#define GRC_AT(g, l) ((l) < (g)->rc_layers ? (g)->rc : LLMT_RECOMPUTE_NONE)

#endif
