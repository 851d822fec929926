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

struct glayer_act {
    float *x_mid;
    gk_bf16 *h1, *h2;
    float *rstd1, *rstd2;
    float *qkv, *qr, *kr;
    gk_bf16 *q, *k, *v, *P, *att, *gu, *a;
    float *lse;                   /* fused attention: logsumexp [B][H][T] */
};

struct gslot {
    float **xs;
    struct glayer_act *la;
    int32_t *tok, *tgt;           /* device */
    int32_t *eu, *es, *ep;        /* embedding backward plan (device) */
    int neu;
    gk_bf16 *xf, *dlog;
    float *rstdf;
};

struct llmt_gmodel {
    llmt_model *h;                /* host mirror: table, init, host buffers */
    cudaStream_t st, cst, xst;    /* compute, communication, copies */
    gmm_ctx *mm;
    float *master, *grads, *m1, *v1;
    gk_bf16 *wc;
    float *cos_t, *sin_t;
    struct gslot *slots;
    float *qkv_s, *S, *y, *dx, *dh, *da, *datt, *dP, *dq, *dk, *dv, *logits, *lossrow;
    float *part, *contrib;
    double *sumsq;
    gk_bf16 *O, *dyact, *dgu, *dO, *dS, *dqkv;
    float *lossrow_h;             /* pinned */
    int32_t *tok_h;               /* host staging for the embedding plan */
    int pinned;                   /* host master and gradients page-locked */
    int attn_chunk;               /* query rows per attention chunk (gattn_chunk) */
    int fused;                    /* fused attention (gattn_fused): no P, S, dP, dS, O */
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

/* Before any write of master (or the AdamW state) on the compute stream:
 * the compute stream waits for a checkpoint snapshot copy in flight on the
 * copy stream (gmodel.c). 0 or -1. */
int gsnap_fence(llmt_gmodel *g);

/* ZeRO-1: every rank's updated blocks to every rank (in place, on the
 * compute stream), then the bf16 copy of the whole buffer, under the NCCL
 * watchdog; 0 or -1 (gmodel_step.c) */
int llmt_gmodel_dp_allgather(llmt_gmodel *g);

#endif
