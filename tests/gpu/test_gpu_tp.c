/* test_gpu_tp.c: tensor parallelism of the GPU model through the emulation
 * (kernels on CPU threads, NCCL over the TP group's MPI communicator), as a
 * real MPI job laid out by the plugin (LLM_TRAIN_TP/PP, RANK: parallel.c).
 * On every rank, for two configs (tied MHA; untied GQA with QK-norm and
 * z-loss), 3 steps with device AdamW in between, stages chained over MPI:
 *  - GPU model vs the CPU model of the same layout, from the same weights
 *    and inputs: loss, logits, stage output, input gradient, every
 *    gradient; the device AdamW vs optim.c's on the same gradients;
 *  - GPU model vs the tp=1 CPU model of the same stage trained alongside
 *    (host AdamW on its own gradients): loss, logits, and each gradient
 *    and weight shard against its slice of the full tensor;
 *  - replicated tensors (norms, embedding, head): gradients and weights
 *    bit-identical on every TP rank;
 * with dp > 1 (pp = 1) instead: the device ZeRO-1 step (run_zero1: the
 * bf16 weights bit-identical over DP and the rounding of the gathered fp32
 * master; the first backward writing its gradients bit-identical to a
 * zeroed buffer added to) and the device memory estimate (memest_dp); then
 * a one-rank TP group: the NCCL all-reduces are issued (counted by the
 * emulation) and change no bit. Tolerances are test_gpu_emu.c's.
 * Exit 0 pass, 1 fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "gpu/comm_nccl.h"
#include "gpu/bridge.h"
#include "gpu/gmodel.h"
#include "memory/memest.h"
#include "model/bf16.h"
#include "model/model.h"
#include "train/optim.h"
#include "comm/parallel.h"
#include "relerr.h"
#include "small_cfg.h"
#include "test_gpu_tp.h"

#define M (B * T)
#define STEPS 3
#define LR 1e-3

extern long llmt_nccl_emu_allreduces;   /* cuda_emu.c */
size_t llmt_emu_dev_bytes(size_t *peak);

static int fails;
int world_rank;

/* the checks whose worst value over all ranks is printed at the end */
static const char *const kinds[] = {
	"loss vs CPU", "loss vs tp=1", "logits vs CPU", "logits vs tp=1", "stage output vs CPU",
	"stage output vs tp=1", "input gradient vs CPU", "input gradient vs tp=1",
	"gradient vs CPU (step 0)", "gradient vs CPU", "gradient vs tp=1 slice", "device AdamW vs optim.c",
	"weights after AdamW steps vs tp=1 slice", "ZeRO-1 norm vs host optimizer",
	"ZeRO-1 weights vs host optimizer",
};
#define NKINDS (int)(sizeof kinds / sizeof *kinds)
static double worst[NKINDS], limit[NKINDS];

void check(const char *what, const char *name, double v, double lim)
{
	for (int k = 0; k < NKINDS; k++)
		if (!strcmp(kinds[k], what)) {
			worst[k] = isnan(v) ? INFINITY : fmax(worst[k], v);
			limit[k] = lim;
		}
	if (!(v <= lim)) {
		fprintf(stderr, "FAIL rank %d: %s %s: %.3g > %.3g\n", world_rank, what, name, v, lim);
		fails++;
	}
}


/* the same, of local shard x (of p) against its slice of the full tensor
 * X (of P, unsplit) */
static double shard_rel(const llmt_param_info *p, const float *x, const llmt_param_info *P,
						const float *X)
{
	int64_t lr = p->split_dim == 0 ? p->split_len : p->shape[0];
	int64_t lc = p->split_dim == 1 ? p->split_len : p->shape[1];
	int64_t ro = p->split_dim == 0 ? p->split_off : 0, co = p->split_dim == 1 ? p->split_off : 0;
	double d = 0, m = 0;
	for (int64_t i = 0; i < lr; i++)
		for (int64_t j = 0; j < lc; j++) {
			double ref = X[P->offset + (size_t)((i + ro) * P->shape[1] + j + co)];
			d = fmax(d, fabs(x[p->offset + (size_t)(i * lc + j)] - ref));
			m = fmax(m, fabs(ref));
		}
	return d / (m > 0 ? m : 1);
}

static const llmt_param_info *find(const llmt_model *m, const char *name, int copy)
{
	int n;
	const llmt_param_info *p = llmt_model_params(m, &n);
	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].name, name) && p[i].tied_copy == copy)
			return &p[i];
	return NULL;
}

/* replicated tensors of x (the model's flat buffer) equal TP rank 0's bits */
static void same_over_tp(llmt_comm *tp, const llmt_model *h, const float *x, const char *what)
{
	int np;
	const llmt_param_info *pi = llmt_model_params(h, &np);
	for (int t = 0; t < np; t++) {
		if (pi[t].split_dim >= 0)
			continue;
		size_t bytes = pi[t].numel * 4;
		float *r0 = malloc(bytes);
		memcpy(r0, x + pi[t].offset, bytes);
		if (llmt_comm_bcast_bytes(tp, r0, bytes, 0)) {
			check("broadcast over TP failed", what, 1, 0);
		} else if (memcmp(r0, x + pi[t].offset, bytes)) {
			fprintf(stderr, "FAIL rank %d: %s of replicated %s differ from TP rank 0's\n",
					world_rank, what, pi[t].name);
			fails++;
		}
		free(r0);
	}
}

static void adamw_host(llmt_model *m, const float *grads, float *mm, float *vv, long t)
{
	static const llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
	int np;
	const llmt_param_info *pi = llmt_model_params(m, &np);
	for (int i = 0; i < np; i++)
		llmt_adamw_update(llmt_model_master(m) + pi[i].offset, grads + pi[i].offset,
						  mm + pi[i].offset, vv + pi[i].offset, pi[i].numel, LR, 1.0, &ac, t,
						  !pi[i].no_decay);
}

/* optim.c's AdamW from h's weights on its gradients hg (copied to gg),
 * into ref */
static void adamw_ref(llmt_model *h, const float *hg, float *gg, float *ref, float *mm, float *vv,
					  long step)
{
	static const llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
	size_t n = llmt_model_nparams(h);
	int np;
	const llmt_param_info *pi = llmt_model_params(h, &np);
	memcpy(gg, hg, n * 4);
	memcpy(ref, llmt_model_master(h), n * 4);
	for (int t = 0; t < np; t++)
		llmt_adamw_update(ref + pi[t].offset, gg + pi[t].offset, mm + pi[t].offset,
						  vv + pi[t].offset, pi[t].numel, LR, 1.0, &ac, step,
						  !pi[t].no_decay);
}

/* the last stage: loss and logits vs the CPU models (this layout, tp=1) */
static void last_vs_cpu(llmt_gmodel *g, llmt_model *cm, llmt_model *c1, const llmt_grid *l, int V,
						const char *what, float *lg, float lgpu, float lcpu, float l1)
{
	check("loss vs CPU", what, fabs(lgpu - lcpu) / lcpu, 2e-6);
	check("loss vs tp=1", what, fabs(lgpu - l1) / l1, 2e-6);
	if (llmt_gmodel_logits(g, lg))
		check("logits download", what, 1, 0);
	check("logits vs CPU", what, relerr(lg, llmt_model_logits(cm, 0), (size_t)M * V), 2e-6);
	check("logits vs tp=1", what, relerr(lg, llmt_model_logits(c1, 0), (size_t)M * V), 2e-6);
	if (l->pp > 1 && world_rank == l->tp * (l->pp - 1))
		printf("%s: loss GPU tp=%d %.6f, CPU tp=%d %.6f, CPU tp=1 %.6f\n", what, l->tp,
			   lgpu, l->tp, lcpu, l1);
	if (l->pp == 1 && world_rank == 0)
		printf("%s: loss GPU tp=%d %.6f, CPU tp=%d %.6f, CPU tp=1 %.6f\n", what, l->tp,
			   lgpu, l->tp, lcpu, l1);
}

/* step s: each tensor's gradient vs the CPU model of this layout and
 * the tp=1 model's slice */
static void grads_vs_cpu(llmt_model *h, llmt_model *cm, llmt_model *c1, int s, int gqa)
{
	int np;
	const llmt_param_info *pi = llmt_model_params(h, &np);
	char what[64];
	const float *hg = llmt_model_grads(h), *cg = llmt_model_grads(cm);
	const float *g1 = llmt_model_grads(c1);
	for (int t = 0; t < np; t++) {
		const llmt_param_info *P = find(c1, pi[t].name, pi[t].tied_copy);
		snprintf(what, sizeof what, "%s (%s step %d)", pi[t].name, gqa ? "gqa" : "tied", s);
		/* not fp32 order alone: each model rounds activations and
		 * their gradients to bf16 (dyact, h, gu, ...), and a value a
		 * few fp32 ulps from a bf16 rounding midpoint lands on either
		 * side, one bf16 ulp (2^-8..2^-7 relative) apart, by its sum
		 * order (TP all-reduce of partial sums, kernel blocking); all
		 * downstream follows. With these inputs (gqa) the CPU model of
		 * this layout flips 3 values. Step 0: the last layer's output
		 * gradient [10][23], 0x3a158018 at tp=1 vs 0x3a157fcf
		 * (midpoint 0x3a158000, 73 fp32 ulps apart, via layer 1's
		 * all-reduce), rounds to 5.722e-4 vs 5.684e-4: 8.1e-5 in
		 * layer 1's MLP gradients; layer 0's [6][1], 0xba087fe4 vs
		 * 0xba08800f: 1.8e-5 in its o_proj. Step 1 (same bf16 weights
		 * as the GPU): the gradient into layer 0 [2][5], 0x3b5b7ffb vs
		 * 0x3b5b8001, 1.7e-4 of its max, moves layer 0's fp32 sums by
		 * 2.9e-4, which flips 7 more there: 1.25e-3 in o_proj. With
		 * those 3 set to the tp=1 rounding, this model is within
		 * 3.6e-7 of the GPU. At pp=2 (stages fed the GPU's stage
		 * output) only layer 0's step-0 one ties: 2.3e-5, then 1.8e-7.
		 * No bug: over 25 token sets (these and 24 others, step 0) the
		 * GPU vs tp=1 flips as often as this model vs tp=1 (7 and 5
		 * sets, up to 6e-3), so the 6e-6 check next holds only because
		 * these inputs have no such tie; the limits here are 12x these
		 * inputs' flips */
		check(s == 0 ? "gradient vs CPU (step 0)" : "gradient vs CPU", what,
			  relerr(hg + pi[t].offset, cg + pi[t].offset, pi[t].numel), s == 0 ? 1e-3 : 1.5e-2);
		if (!P)
			check("tensor missing in the tp=1 model", what, 1, 0);
		else
			check("gradient vs tp=1 slice", what, shard_rel(&pi[t], hg, P, g1), 6e-6);
	}
}

/* the weights after STEPS device updates vs the tp=1 model's own: an
 * element whose gradient changes sign between the two can differ by
 * 2 LR a step (AdamW's first steps are sign-like); with these fixed
 * inputs none does: measured 8.2e-8 (fp32 order), limit 25x */
static void weights_vs_tp1(llmt_model *h, llmt_model *c1, int gqa)
{
	int np;
	const llmt_param_info *pi = llmt_model_params(h, &np);
	char what[64];
	for (int t = 0; t < np; t++) {
		const llmt_param_info *P = find(c1, pi[t].name, pi[t].tied_copy);
		snprintf(what, sizeof what, "%s (%s)", pi[t].name, gqa ? "gqa" : "tied");
		if (P)
			check("weights after AdamW steps vs tp=1 slice", what,
				  shard_rel(&pi[t], llmt_model_master(h), P, llmt_model_master(c1)), 2e-6);
	}
}

static void run_config(llmt_parallel *p, int gqa)
{
	static const llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0};
	const llmt_grid *l = &p->l;
	llmt_config c;
	small_cfg(&c, gqa);
	const int d = c.d_model, V = c.vocab_size, Md = M * d;
	int first = l->pp_rank == 0, last = l->pp_rank == l->pp - 1;
	llmt_par par = {l->tp, l->tp_rank, l->pp, l->pp_rank, p->tp_comm};
	llmt_par par1 = {1, 0, l->pp, l->pp_rank, NULL};
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1);
	llmt_model *cm = llmt_model_create(&c, &par, LLMT_BF16, B, T, 1);
	llmt_model *c1 = llmt_model_create(&c, &par1, LLMT_BF16, B, T, 1);
	if (!g || !cm || !c1) {
		check("model creation", gqa ? "gqa" : "tied", 1, 0);
		return;
	}
	llmt_model *h = llmt_gmodel_host(g);
	size_t n = llmt_model_nparams(h), n1 = llmt_model_nparams(c1);
	check("flat length GPU vs CPU", "", (double)(n != llmt_model_nparams(cm)), 0);
	check("initial weights GPU vs CPU", "", (double)memcmp(llmt_model_master(h),
														   llmt_model_master(cm), n * 4), 0);
	int32_t tok[M], tgt[M];
	float *in = malloc(Md * 4), *go = malloc(Md * 4);
	float *og = malloc(Md * 4), *oc = malloc(Md * 4), *o1 = malloc(Md * 4);
	float *ig = malloc(Md * 4), *ic = malloc(Md * 4), *i1 = malloc(Md * 4);
	float *lg = malloc((size_t)M * V * 4), *gg = malloc(n * 4), *ref = malloc(n * 4);
	float *mm = calloc(n, 4), *vv = calloc(n, 4), *mm1 = calloc(n1, 4), *vv1 = calloc(n1, 4);
	char what[64];
	for (int s = 0; s < STEPS; s++) {
		for (int i = 0; i < M; i++) {
			tok[i] = (i * 7 + 3 + 11 * s) % V;
			tgt[i] = (i * 5 + 1 + 3 * s) % V;
		}
		/* forward, stage by stage: the GPU's stage output feeds all three
		 * models of the next stage */
		if (!first && llmt_comm_recv_bytes(p->pp_comm, in, Md * 4, l->pp_rank - 1, 41))
			check("activations received", "", 1, 0);
		float lgpu = 0, lcpu = 0, l1 = 0;
		if (llmt_gmodel_zero_grad(g) ||
			llmt_gmodel_forward(g, 0, tok, in, tgt, last ? NULL : og, &lgpu))
			check("GPU forward", "", 1, 0);
		llmt_model_zero_grad(cm);
		llmt_model_zero_grad(c1);
		if (llmt_model_forward(cm, 0, tok, in, tgt, last ? NULL : oc, &lcpu) ||
			llmt_model_forward(c1, 0, tok, in, tgt, last ? NULL : o1, &l1))
			check("CPU forward", "", 1, 0);
		snprintf(what, sizeof what, "%s step %d", gqa ? "gqa" : "tied", s);
		/* the same bf16 products, fp32 sums in another order (the TP
		 * all-reduce adds the ranks' partial sums; the emulated kernels
		 * block differently): measured loss 1.1e-7, logits 1.1e-7, stage
		 * output 1.2e-7, input gradient 2.0e-7; limits ~20x that */
		if (last) {
			last_vs_cpu(g, cm, c1, l, V, what, lg, lgpu, lcpu, l1);
		} else {
			check("stage output vs CPU", what, relerr(og, oc, (size_t)Md), 2e-6);
			check("stage output vs tp=1", what, relerr(og, o1, (size_t)Md), 2e-6);
			if (llmt_comm_send_bytes(p->pp_comm, og, Md * 4, l->pp_rank + 1, 41))
				check("activations sent", "", 1, 0);
		}
		/* backward, stage by stage the other way */
		if (!last && llmt_comm_recv_bytes(p->pp_comm, go, Md * 4, l->pp_rank + 1, 42))
			check("gradient received", "", 1, 0);
		if (llmt_gmodel_backward(g, 0, go, ig, 0.5f) || llmt_gmodel_download_grads(g))
			check("GPU backward", "", 1, 0);
		if (llmt_model_backward(cm, 0, go, ic, 0.5f) || llmt_model_backward(c1, 0, go, i1, 0.5f))
			check("CPU backward", "", 1, 0);
		if (!first) {
			check("input gradient vs CPU", what, relerr(ig, ic, (size_t)Md), 4e-6);
			check("input gradient vs tp=1", what, relerr(ig, i1, (size_t)Md), 4e-6);
			if (llmt_comm_send_bytes(p->pp_comm, ig, Md * 4, l->pp_rank - 1, 42))
				check("gradient sent", "", 1, 0);
		}
		const float *hg = llmt_model_grads(h), *g1 = llmt_model_grads(c1);
		grads_vs_cpu(h, cm, c1, s, gqa);
		if (p->tp_comm)
			same_over_tp(p->tp_comm, h, hg, "gradients");
		/* device AdamW vs optim.c's on the GPU's gradients; the CPU model
		 * of this layout continues from the GPU's weights, the tp=1 one
		 * from its own update */
		adamw_ref(h, hg, gg, ref, mm, vv, s + 1);
		if (llmt_gmodel_adamw(g, LR, 1.0, &ac, s + 1) || llmt_gmodel_download_master(g))
			check("device AdamW", "", 1, 0);
		snprintf(what, sizeof what, "%s step %d", gqa ? "gqa" : "tied", s);
		/* fp32 fused update vs optim.c's double: measured 5.9e-8 */
		check("device AdamW vs optim.c", what, relerr(llmt_model_master(h), ref, n), 1e-6);
		memcpy(llmt_model_master(cm), llmt_model_master(h), n * 4);
		llmt_model_sync_compute(cm);
		adamw_host(c1, g1, mm1, vv1, s + 1);
		llmt_model_sync_compute(c1);
		if (p->tp_comm)
			same_over_tp(p->tp_comm, h, llmt_model_master(h), "weights");
	}
	weights_vs_tp1(h, c1, gqa);
	llmt_gmodel_free(g);
	llmt_model_free(cm);
	llmt_model_free(c1);
	free(in); free(go); free(og); free(oc); free(o1); free(ig); free(ic); free(i1);
	free(lg); free(gg); free(ref); free(mm); free(vv); free(mm1); free(vv1);
}

/* dp > 1 (pp = 1): the device ZeRO-1 step under TP (bucketed reduce-
 * scatter over DP during backward, the norm over DP and TP, clip, AdamW,
 * all-gather) against the host optimizer (optim.c, the loop's) fed the
 * same local gradients: norm, weights; replicas bit-identical over DP,
 * replicated tensors over TP. Each DP rank trains on its own tokens. */
static void run_zero1(llmt_parallel *p, int gqa)
{
	static const llmt_adamw_cfg ac = {0.9, 0.95, 1e-8, 0.1, 0.5};
	const llmt_grid *l = &p->l;
	llmt_config c;
	small_cfg(&c, gqa);
	llmt_par par = {l->tp, l->tp_rank, 1, 0, p->tp_comm};
	llmt_gmodel *g = llmt_gmodel_create(&c, &par, B, T, 1), *go = llmt_gmodel_create(&c, &par, B, T, 1);
	llmt_nccl *dp = llmt_nccl_create(p->dp_comm, 0), *dpo = llmt_nccl_create(p->dp_comm, 0);
	if (!g || !dp || llmt_gmodel_set_dp(g, dp, 300) ||    /* 300: many buckets, tails */
		!go || !dpo || llmt_gmodel_set_dp(go, dpo, 300)) {
		check("GPU model with DP", gqa ? "gqa" : "tied", 1, 0);
		return;
	}
	llmt_model *h = llmt_gmodel_host(g);
	size_t n = llmt_model_nparams(h);
	int np;
	const llmt_param_info *pi = llmt_model_params(h, &np);
	llmt_optim_seg *segs = calloc((size_t)np, sizeof *segs);
	for (int i = 0; i < np; i++) {   /* train_setup.c's treatment */
		segs[i].offset = pi[i].offset;
		segs[i].numel = pi[i].numel;
		segs[i].decay = !pi[i].no_decay;
		segs[i].in_norm = !pi[i].tied_copy && (pi[i].split_dim >= 0 || l->tp_rank == 0);
	}
	llmt_optim o;
	if (llmt_optim_init(&o, &ac, n, segs, np, p->dp_comm, p->all)) {
		check("host optimizer", "", 1, 0);
		return;
	}
	float *local = malloc(n * 4), *ref = malloc(n * 4), *r0 = malloc(n * 4);
	int32_t tok[M], tgt[M];
	char what[64];
	for (int s = 0; s < 2; s++) {
		for (int i = 0; i < M; i++) {
			tok[i] = (i * 7 + 3 + 11 * s + 5 * l->dp_rank) % c.vocab_size;
			tgt[i] = (i * 5 + 1 + 3 * s + 9 * l->dp_rank) % c.vocab_size;
		}
		snprintf(what, sizeof what, "%s step %d", gqa ? "gqa" : "tied", s);
		float loss;
		double norm = -1, nref = -2;
		/* this rank's gradients, then the same step with the DP reduction */
		if (llmt_gmodel_zero_grad(g) || llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss) ||
			llmt_gmodel_backward(g, 0, NULL, NULL, 1.0f) || llmt_gmodel_download_grads(g))
			check("GPU step", what, 1, 0);
		memcpy(local, llmt_model_grads(h), n * 4);
		memcpy(ref, llmt_model_master(h), n * 4);
		if (llmt_gmodel_zero_grad(g) || llmt_gmodel_forward(g, 0, tok, NULL, tgt, NULL, &loss) ||
			llmt_gmodel_backward_dp(g, 0, NULL, NULL, 1.0f, 1) || llmt_gmodel_dp_wait(g) ||
			llmt_gmodel_step_dp(g, LR, ac.grad_clip, &ac, s + 1, &norm) ||
			llmt_gmodel_download_master(g))
			check("GPU ZeRO-1 step", what, 1, 0);
		if (llmt_optim_reduce(&o, local, &nref) || llmt_optim_step(&o, ref, LR, nref))
			check("host optimizer step", what, 1, 0);
		/* go: the whole buffer zeroed (a read before backward), products
		 * adding, as before the first backward wrote: the same bits */
		double ss;
		if (llmt_gmodel_zero_grad(go) || llmt_gmodel_grad_sumsq(go, &ss) ||
			llmt_gmodel_forward(go, 0, tok, NULL, tgt, NULL, &loss) ||
			llmt_gmodel_backward_dp(go, 0, NULL, NULL, 1.0f, 1) || llmt_gmodel_dp_wait(go) ||
			llmt_gmodel_step_dp(go, LR, ac.grad_clip, &ac, s + 1, &nref) ||
			llmt_gmodel_download_master(go) || nref != norm ||
			memcmp(llmt_model_master(llmt_gmodel_host(go)), llmt_model_master(h), n * 4))
			check("ZeRO-1 step bit-identical to memset and add", what, 1, 0);
		/* double sums in another order: measured 2.3e-15 */
		check("ZeRO-1 norm vs host optimizer", what, fabs(norm - nref) / nref, 1e-13);
		check("clipping active (norm > clip)", what, ac.grad_clip / norm, 1);
		/* fp32 fused update vs double: measured 3.0e-8 */
		check("ZeRO-1 weights vs host optimizer", what, relerr(llmt_model_master(h), ref, n), 1e-6);
		if (world_rank == 0)
			printf("%s: dp=%d tp=%d: ZeRO-1 norm device %.9f, host %.9f\n", what, l->dp, l->tp,
				   norm, nref);
		memcpy(r0, llmt_model_master(h), n * 4);
		if (llmt_comm_bcast_bytes(p->dp_comm, r0, n * 4, 0) ||
			memcmp(r0, llmt_model_master(h), n * 4))
			check("weights bit-identical over DP replicas", what, 1, 0);
		/* the fp32 master is a ZeRO-1 share (download_master gathers it):
		 * the replicated state is the bf16 copy every rank computes with,
		 * the rounding of the gathered master; then master back on the host */
		if (llmt_gmodel_download_compute(g))
			check("GPU bf16 weights", what, 1, 0);
		int wrong = 0;
		for (size_t i = 0; i < n; i++)
			wrong += bf16_to_f32(f32_to_bf16(r0[i])) != llmt_model_master(h)[i];
		check("bf16 weights are the rounded fp32 master", what, wrong, 0);
		memcpy(r0, llmt_model_master(h), n * 4);
		if (llmt_comm_bcast_bytes(p->dp_comm, r0, n * 4, 0) ||
			memcmp(r0, llmt_model_master(h), n * 4))
			check("bf16 weights bit-identical over DP replicas", what, 1, 0);
		if (llmt_gmodel_download_master(g))
			check("GPU master", what, 1, 0);
		same_over_tp(p->tp_comm, h, llmt_model_master(h), "weights");
		/* the host reference continues from the device's weights */
		llmt_model_sync_compute(h);
	}
	llmt_optim_free(&o);
	free(segs); free(local); free(ref); free(r0);
	llmt_gmodel_free(g);
	llmt_gmodel_free(go);
	llmt_nccl_free(dp);
	llmt_nccl_free(dpo);
}

/* a one-rank TP group: the same path (NCCL all-reduces issued) and the
 * same bits as no group at all */
static void one_rank_group(llmt_comm *self)
{
	llmt_config c;
	small_cfg(&c, 1);
	llmt_par with = {1, 0, 1, 0, self}, without = {1, 0, 1, 0, NULL};
	llmt_gmodel *a = llmt_gmodel_create(&c, &with, B, T, 1);
	llmt_gmodel *b = llmt_gmodel_create(&c, &without, B, T, 1);
	if (!a || !b) {
		check("one-rank TP group: model creation", "", 1, 0);
		return;
	}
	int32_t tok[M], tgt[M];
	for (int i = 0; i < M; i++) {
		tok[i] = (i * 13 + 5) % c.vocab_size;
		tgt[i] = (i * 3 + 2) % c.vocab_size;
	}
	size_t n = llmt_model_nparams(llmt_gmodel_host(a)), nl = (size_t)M * c.vocab_size;
	float la, lb, *xa = malloc(nl * 4), *xb = malloc(nl * 4);
	long before = llmt_nccl_emu_allreduces;
	int bad = llmt_gmodel_forward(a, 0, tok, NULL, tgt, NULL, &la) ||
			  llmt_gmodel_backward(a, 0, NULL, NULL, 1.0f) || llmt_gmodel_logits(a, xa) ||
			  llmt_gmodel_download_grads(a);
	long issued = llmt_nccl_emu_allreduces - before;
	bad |= llmt_gmodel_forward(b, 0, tok, NULL, tgt, NULL, &lb) ||
		   llmt_gmodel_backward(b, 0, NULL, NULL, 1.0f) || llmt_gmodel_logits(b, xb) ||
		   llmt_gmodel_download_grads(b);
	check("one-rank TP group: steps ran", "", bad, 0);
	/* per layer: 2 in forward, 2 in backward, 1 for the QK-norm weights */
	check("one-rank TP group: all-reduces issued, |count - 5 n_layers|", "",
		  fabs((double)issued - 5.0 * c.n_layers), 0);
	check("one-rank TP group: loss bits", "", (double)memcmp(&la, &lb, 4), 0);
	check("one-rank TP group: logits bits", "", (double)memcmp(xa, xb, nl * 4), 0);
	check("one-rank TP group: gradient bits", "",
		  (double)memcmp(llmt_model_grads(llmt_gmodel_host(a)),
						 llmt_model_grads(llmt_gmodel_host(b)), n * 4), 0);
	printf("one-rank TP group: %ld all-reduces issued, loss %.6f, same bits as without a group\n",
		   issued, la);
	free(xa);
	free(xb);
	llmt_gmodel_free(a);
	llmt_gmodel_free(b);
}

int main(int argc, char **argv)
{
	/* the CPU models here are CPU models whatever the job environment says */
	unsetenv("LLM_TRAIN_GPU");
	/* the chunked attention: the CPU model's arithmetic (tight limits;
	 * the fused one is tested against it in test_gpu_emu and emu_train.sh) */
	setenv("LLM_TRAIN_GPU_ATTN", "chunked", 1);
	omp_set_num_threads(1);
	llmt_comm *world = llmt_comm_world(&argc, &argv);
	llmt_parallel p;
	if (!world || llmt_parallel_init(&p, world))
		return 1;
	world_rank = p.l.rank;
	if (p.l.dp > 1 && p.l.pp > 1) {
		fprintf(stderr, "test_gpu_tp: dp > 1 only with pp=1 (got tp=%d pp=%d dp=%d)\n", p.l.tp,
				p.l.pp, p.l.dp);
		return 64;
	}
	if (p.tp_comm && llmt_comm_rank(p.tp_comm) != p.l.tp_rank) {
		check("TP communicator rank is the TP rank", "", 1, 0);
		return 1;
	}
	if (p.l.dp > 1)
		memest_dp(&p);
	for (int gqa = 0; gqa < 2; gqa++) {
		if (p.l.dp > 1)
			run_zero1(&p, gqa);
		else
			run_config(&p, gqa);
	}
	llmt_comm *self = llmt_comm_split(p.all, p.l.rank, 0);
	if (p.l.rank == 0)
		one_rank_group(self);
	llmt_comm_free(self);
	double all[NKINDS * 2 + 1];
	for (int k = 0; k < NKINDS; k++) {
		all[k] = worst[k];
		all[NKINDS + k] = limit[k];
	}
	all[2 * NKINDS] = fails;
	if (llmt_comm_allreduce_max_f64(p.all, all, 2 * NKINDS + 1))
		all[2 * NKINDS] = 1;
	if (world_rank == 0) {
		for (int k = 0; k < NKINDS; k++)
			if (all[NKINDS + k] > 0)
				printf("worst %-42s %.3e (limit %.2g)\n", kinds[k], all[k], all[NKINDS + k]);
		printf("tp=%d pp=%d: %s\n", p.l.tp, p.l.pp,
			   all[2 * NKINDS] > 0 ? "FAIL (see the messages above)"
								   : "all checks passed on every rank");
	}
	int bad = fails;
	llmt_parallel_free(&p);
	llmt_comm_finalize(world);
	return bad ? 1 : 0;
}
