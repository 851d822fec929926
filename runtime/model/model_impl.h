/* model_impl.h: the private layout of llmt_model shared by model.c
 * (parameters, init, memory) and model_step.c (forward, backward). */
#ifndef LLMT_MODEL_IMPL_H
#define LLMT_MODEL_IMPL_H
#include "model.h"

struct layer_off {  /* element offsets of one layer's tensors in the flat buffers */
	size_t ln1, qkv, qn, kn, o, ln2, gu, down;
};

struct layer_act {  /* what one layer keeps for backward, per slot */
	float *x_mid;          /* residual after attention, fp32 [M][d] */
	void *h1, *h2;         /* normed inputs (act) [M][d] */
	float *rstd1, *rstd2;  /* [M] */
	float *qkv;            /* raw projection fp32 [M][Wq] (qk_norm only) */
	float *qr, *kr;        /* qk-norm rstd */
	void *q, *k, *v;       /* head-major act [B][Hl][T][hd] */
	void *P;               /* softmax act [B*Hl][T][T] */
	void *att;             /* attention output act [M][Hl*hd] */
	void *gu, *a;          /* SwiGLU in [M][2Fl] and out [M][Fl] (act) */
};

struct slot {
	float **xs;            /* nl+1 residual streams fp32 [M][d] */
	struct layer_act *la;  /* nl */
	int32_t *tokens;       /* first stage */
	int32_t *pos, *lo;     /* packed samples (llmt_model_set_seg): rotary row and
							* first key of each token [M] */
	int packed;            /* pos and lo apply (else one sample per sequence) */
	void *xf;              /* final normed act [M][d] (last stage) */
	float *rstdf;
	void *dlog;            /* d(mean loss)/d logits act [M][V] (last stage) */
};

struct llmt_model {
	llmt_config c;
	llmt_par par;
	llmt_prec prec;
	int bf;                 /* prec == LLMT_BF16 */
	llmt_recompute recompute; /* which activations backward recomputes */
	int rc_layers;          /* in the stage's first rc_layers layers (the rest keep all) */
	int B, T, M, nslots;
	int l0, nl;             /* first layer and count on this stage */
	int first, last;
	int hd, Hl, KVl, Fl, Wq;
	llmt_param_info *params;
	int nparams_t;
	size_t n;               /* flat length */
	float *master, *grads;  /* master: flat elements [mlo, mhi) (master[0] is mlo) */
	bf16 *wc;               /* compute copy (bf16 mode) */
	int mshare;             /* the master is a ZeRO-1 share, not [0, n) (model_share.c) */
	size_t mlo, mhi;
	float *wf;              /* mshare: fp32 copies of the tensors read in fp32, in flat
	                         * order: nwf runs of wf_n[i] elements from flat wf_flat[i],
	                         * at wf_at[i] in wf */
	size_t *wf_flat, *wf_at, *wf_n, wf_len;
	int nwf;
	int lazy_master;        /* a GPU mirror: master NULL until asked for (made with
	                         * the init's values: llmt_model_master) */
	size_t off_embed, off_norm, off_head;
	struct layer_off *lo;
	float *cos_t, *sin_t;   /* [T][hd/2] */
	struct slot *slots;
	/* scratch shared by slots */
	float *qkv_s, *qkn_g, *S, *y, *dx, *dh, *da, *dP, *dq, *dk, *dv, *logits;
	void *datt;             /* dL/d attention output: bf16 for attn.h, else fp32 */
	void *O, *dyact, *dgu, *dO, *dS, *dqkv;
	int gz;                 /* grads zeroed, no backward since */
	int gover;              /* in that backward: products write their gradients */
	struct attn_ws *aw;     /* blocked causal attention (attn.h); NULL: oneDNN path */
	void **allocs;
	int nallocs, capallocs;
	const struct llmt_devops *dev;  /* GPU backend (gpu/bridge.h); NULL on the CPU */
	void *devctx;
};

/* model_share.c: the fp32 copies' plan (after the table; 0 or -1), the
 * weights' init with a share (the compute copies whole), and the fp32
 * view of a tensor kernels read in fp32 at flat offset off */
/* model.c: the init's generator key of tensor p and its value at local
 * element k (llmt_model_init) */
void llmt_model_init_key(const llmt_model *m, const llmt_param_info *p, uint64_t *key, double *std);
float llmt_model_init_value(const llmt_param_info *p, uint64_t key, double std, size_t k);
int llmt_model_wf_plan(llmt_model *m, void *(*alloc)(llmt_model *, size_t));
void llmt_model_init_share(llmt_model *m);
const float *llmt_model_w32(const llmt_model *m, size_t off);

/* model.c, for the GPU backend's host mirror (gpu/gmodel.c): the CPU
 * model for one token (B = T = 1, one slot, bf16) without master,
 * gradient buffer or compute copy (master, grads, wc NULL; the master is
 * made whole with the init's values when llmt_model_master first asks,
 * while lazy_master is set); buffers freed with the model (mem), or one
 * of them before. llmt_model_init_range: the init's values (padding 0)
 * of flat elements [lo, hi) into out[0 .. hi - lo). */
llmt_model *llmt_model_create_mirror(const llmt_config *c, const llmt_par *par);
void *llmt_model_mem(llmt_model *m, size_t bytes);
void llmt_model_mem_free(llmt_model *m, void *p);
void llmt_model_init_range(const llmt_model *m, size_t lo, size_t hi, float *out);

/* the recomputation of the stage's layer l */
#define RC_AT(m, l) ((l) < (m)->rc_layers ? (m)->recompute : LLMT_RECOMPUTE_NONE)

#endif
