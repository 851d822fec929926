/* memest.c: memory accounting of a rank. The activation terms follow the
 * tensors model.c (CPU, either attention path) and gpu/gmodel.c (device)
 * keep per layer and per micro-batch slot (residual streams, normed
 * inputs, q/k/v, softmax, attention output, SwiGLU in and out) and their
 * shared scratch; 1F1B keeps min(pp, A) slots. */
#include "memest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt/ckpt.h"
#include "gpu/host_plan.h"
#include "train/optim.h"
#include "comm/comm.h"
#include "llmt/env.h"

#define ATTN_QB 64 /* attn_int.h QB: the blocked kernel's query/key block */

static double r64(double b) { return (double)(((size_t)b + 63) / 64 * 64); }

/* attn.c attn_ws_new: nt per-thread slices (carve) and the QK-norm
 * weight-gradient partials */
static double attn_ws_bytes(double BH, double T, double Tp, double hd, int nt)
{
	double pk = r64(Tp * (hd / 2) * 4);
	double per = 4 * pk + r64(ATTN_QB * Tp * 4) + r64(Tp / 2 * ATTN_QB * 4) + 2 * r64(T * hd * 4);

	return nt * per + BH * 2 * hd * 4;
}

void llmt_memory_estimate(const llmt_config *c, const llmt_grid *l, size_t nflat,
	int B, int T, int A, int bf16, int ckpt, int attn_nt, int recompute, llmt_memest *e)
{
	double es = bf16 ? 2 : 4, M = (double)B * T, d = c->d_model, V = c->vocab_size;
	int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
	double hd = (double)c->d_model / c->n_heads, Hl = (double)c->n_heads / l->tp;
	double KVl = (double)kv / l->tp, Fl = (double)c->d_ff / l->tp, Wq = (Hl + 2 * KVl) * hd;
	double Hh = Hl * hd, BH = B * Hl, nl = (double)c->n_layers / l->pp, n = (double)nflat;
	int first = l->pp_rank == 0, last = l->pp_rank == l->pp - 1;
	int slots = l->pp < A ? l->pp : A;
	double layer, slot, shard = n / l->dp;
	/* P and dS: T rows of T keys, or of T rounded up to 64 (blocked) */
	double Tp = attn_nt ? (double)((T + ATTN_QB - 1) / ATTN_QB * ATTN_QB) : T;

	memset(e, 0, sizeof(*e));
	/* the fp32 master: whole, or with bf16 and dp > 1 (model.h
	 * llmt_model_create_share) this rank's ZeRO-1 share and the fp32
	 * copies of the embedding (first stage) and norm weights; fp32 grads */
	int share = bf16 && l->dp > 1;
	size_t lo, hi;
	llmt_zero1_range(nflat, l->dp, l->dp_rank, &lo, &hi);
	double wf = (first ? V * d : 0) + (last ? d : 0) + nl * (2 * d + (c->qk_norm ? 2 * hd : 0));
	e->params = (share ? (double)(hi - lo) + wf : n) * 4 + n * (4 + (bf16 ? 2 : 0));
	/* m and v; with dp > 1 also the reduced gradient and (a whole master)
	 * the all-gather staging */
	e->optimizer = shard * 8 + (l->dp > 1 ? shard * (share ? 4 : 8) : 0);
	double probs = BH * T * Tp * es; /* one layer's softmax probabilities */
	layer = M * d * 4 + 2 * M * d * es + 2 * M * 4 + 3 * BH * T * hd * es + probs +
		M * Hh * es + 3 * M * Fl * es;
	if (c->qk_norm)
		layer += M * Wq * 4 + M * (Hl + KVl) * 4;
	/* model.c alloc_acts: ATTN keeps one probability buffer for every
	 * recomputed layer and slot; FULL one layer's activations for every
	 * recomputed layer and slot, and each layer's input (the residual
	 * streams) per slot; the other layers keep their own */
	slot = (nl + 1) * M * d * 4 + (first ? M * 4 : 0) + (last ? M * d * es + M * 4 + M * V * es : 0);
	int rmode = llmt_rc_mode(recompute);
	double K = llmt_rc_layers(recompute, (int)nl); /* of the stage's first K layers */
	if (rmode == LLMT_RECOMPUTE_FULL)
		e->activations = slots * (slot + (nl - K) * layer) + (K > 0 ? layer : 0);
	else if (rmode == LLMT_RECOMPUTE_ATTN)
		e->activations = slots * (slot + nl * layer - K * probs) + (K > 0 ? probs : 0);
	else
		e->activations = slots * (slot + nl * layer);
	/* rotary tables, QK-norm gradient, y dx dh, da, datt, dyact, dgu, dS, dqkv */
	e->scratch = T * hd * 4 + 2 * hd * 4 + M * Wq * 4 + 3 * M * d * 4 + M * Fl * 4 + M * Hh * 4 +
		M * (d > Hh ? d : Hh) * es + 2 * M * Fl * es + BH * T * Tp * es + M * Wq * es +
		(last ? M * V * 4 : 0);
	if (attn_nt) /* the blocked kernel's per-thread scratch */
		e->scratch += attn_ws_bytes(BH, T, Tp, hd, attn_nt);
	else /* oneDNN: S and dP squares in fp32, O, dO, dq, dk, dv */
		e->scratch += 2 * BH * T * T * 4 + 3 * BH * T * hd * 4 + 2 * BH * T * hd * es;
	e->pipeline = 2 * M * 4 + (l->pp > 1 ? (slots + 3) * M * d * 4 : 0);
	/* the deterministic reduce-scatter receives every member's block, in
	 * rounds of at most LLMT_RS_ROUND elements of it (comm.h) */
	double round = (double)LLMT_RS_ROUND, rblk = shard < round ? shard : round;
	e->comm = l->dp > 1 ? rblk * l->dp * 4 : 0;
	/* the save copies this rank's share: 1/dp of the master, its m and v */
	e->snapshot = ckpt ? shard * 4 * 3 : 0;
	e->total = e->params + e->optimizer + e->activations + e->scratch + e->pipeline + e->comm +
		e->snapshot;
}

/* GK_SUMSQ_BLOCKS, GK_COLSUM_CHUNKS, GK_COLSUM_MAX of gpu/dev_kernels.h (which
 * needs the CUDA headers) and gmodel.c's cuBLASLt workspace */
#define GPU_SUMSQ_BLOCKS 1024
#define GPU_COLSUM_CHUNKS 64
#define GPU_COLSUM_MAX 1024
#define GPU_MM_WORKSPACE (64.0 * 1048576)

void llmt_memory_estimate_gpu(const llmt_config *c, const llmt_grid *l, size_t nflat,
	int B, int T, int A, int devopt, int recompute, llmt_memest_gpu *e)
{
	double M = (double)B * T, d = c->d_model, V = c->vocab_size, n = (double)nflat;
	int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
	double hd = (double)c->d_model / c->n_heads, Hl = (double)c->n_heads / l->tp;
	double KVl = (double)kv / l->tp, Fl = (double)c->d_ff / l->tp, Wq = (Hl + 2 * KVl) * hd;
	double Hh = Hl * hd, BH = B * Hl, nl = (double)c->n_layers / l->pp;
	int first = l->pp_rank == 0, last = l->pp_rank == l->pp - 1;
	int slots = l->pp < A ? l->pp : A, C = gattn_chunk(T);
	/* the attention the model will run (gmodel.c: the same rule) */
	int fused = gattn_fused(c->d_model / c->n_heads, getenv(LLMT_ENV_GPU_ATTN)) > 0;
	double layers, slot, wide, pw, attn_scratch;
	/* the activations a layer keeps, per layer or once (act_plan.c: the
	 * table gmodel_act.c allocates from) */
	gact_shape sh = { (size_t)B, (size_t)T, (size_t)c->d_model, (size_t)Hl, (size_t)KVl,
		(size_t)hd, (size_t)Fl, C, c->qk_norm, fused, llmt_rc_mode(recompute) };
	gact_plan ap, ap0;    /* of the recomputed layers (the first K), of the others */
	double K = llmt_rc_layers(recompute, (int)nl);

	memset(e, 0, sizeof(*e));
	/* fp32 gradients, bf16 copy, rotary tables, the fp32 copies of the
	 * tensors kernels read in fp32 (gmodel_shard.c: embedding, norms) */
	e->params = n * (4 + 2) + T * hd * 4 +
		((first ? V * d : 0) + (last ? d : 0) + nl * (2 * d + (c->qk_norm ? 2 * hd : 0))) * 4;
	if (devopt) {
		/* ZeRO-1 in memory: fp32 master, m and v of this rank's share
		 * (n/dp; the buckets' tails of fewer than dp elements on every
		 * rank are left out); the packed norm ranges when the share is
		 * cut in several (DP buckets; on TP ranks but 0 the replicated
		 * norms are left out): about the share; DP: the replica hash's
		 * scratch (gmodel_opt.c) */
		int cut = l->dp > 1 || l->tp_rank > 0;
		double share = n / l->dp;
		e->optimizer = share * 12 + GPU_SUMSQ_BLOCKS * 8 + (cut ? share * 4 : 0) +
			(l->dp > 1 ? (double)gk_xxh3_scratch_bytes(nflat * 4) : 0);
	}
	/* the attention's scratch: fused, dk dv of the KV heads (bf16) and D;
	 * chunked, S and dP of one chunk, datt, dk dv of every head, O, dS */
	if (fused)
		attn_scratch = 2 * M * KVl * hd * 2 + BH * T * 4;
	else
		attn_scratch = 2 * BH * C * T * 4 + M * Hh * 4 + 2 * BH * T * hd * 4 +
			BH * T * hd * 2 + BH * C * T * 2;
	gact_plan_make(&sh, &ap);
	sh.recompute = LLMT_RECOMPUTE_NONE;
	gact_plan_make(&sh, &ap0);
	layers = K * (double)gact_bytes(&ap, 0) + (nl - K) * (double)gact_bytes(&ap0, 0);
	/* per slot: the residual streams, the layers, the packed samples'
	 * rotary rows and first keys (2 x M int32), the first and last stage's
	 * own buffers; once: what backward recomputes */
	slot = (nl + 1) * M * d * 4 + layers + 2 * M * 4 + (first ? M * 4 * 3 + (M + 1) * 4 : 0) +
		(last ? M * 4 + M * d * 2 + M * 4 + M * V * 2 : 0);
	e->activations = slots * slot + (K > 0 ? (double)gact_bytes(&ap, 1) : 0);
	wide = d > Wq ? d : Wq;
	wide = wide > Fl ? wide : Fl;
	pw = GPU_COLSUM_CHUNKS * wide > GPU_COLSUM_MAX * hd ? GPU_COLSUM_CHUNKS * wide
							   : GPU_COLSUM_MAX * hd;
	/* qkv_s, y dx dh, da, dq, dO, dyact, dgu, dqkv, colsum partials,
	 * head contributions, sumsq, and the attention's own (qkv_s and dq
	 * bf16 on the fused path) */
	e->scratch = M * Wq * (fused ? 2 : 4) + 3 * M * d * 4 + M * Fl * 4 + BH * T * hd * (fused ? 2 : 4) +
		BH * T * hd * 2 + M * (d > Hh ? d : Hh) * 2 + attn_scratch +
		2 * M * Fl * 2 + M * Wq * 2 + pw * 4 + M * (Hl + KVl) * hd * 4 +
		GPU_SUMSQ_BLOCKS * 8 + (c->qk_norm && l->tp > 1 ? 2 * hd * 4 : 0) +
		(last ? M * V * 4 + M * 4 : 0);
	e->workspace = GPU_MM_WORKSPACE;
	e->total = e->params + e->optimizer + e->activations + e->scratch + e->workspace;
}

void llmt_memory_estimate_gpu_host(const llmt_config *c, const llmt_grid *l, size_t nflat,
	int B, int T, int devopt, int ckpt, int resume, llmt_memest_host *e)
{
	double M = (double)B * T, n = (double)nflat;
	int first = l->pp_rank == 0, last = l->pp_rank == l->pp - 1;
	llmt_memest one;

	memset(e, 0, sizeof(*e));
	/* gmodel.c: llmt_model_create_mirror (B = T = 1, one slot): the CPU
	 * model's buffers without its bf16 copy (n x 2) nor its fp32 master
	 * and gradients (n x 4 each; the host optimizer's: below) */
	llmt_grid l1 = *l;
	l1.dp = 1;
	l1.dp_rank = 0;
	llmt_memory_estimate(c, &l1, nflat, 1, 1, 1, 1, 0, 0, LLMT_RECOMPUTE_NONE, &one);
	e->mirror = one.params - n * 10 + one.activations + one.scratch + one.pipeline;
	/* tokens, targets and mask (gmodel.c tok_h), pinned loss row */
	e->staging = M * 4 * 3 + 4 + M * 4;
	if (devopt) {
		/* no whole fp32 master (gmodel.c: the init goes to the device
		 * GINIT_CHUNK floats at a time, the SDC check sums the weights
		 * a piece at a time), no host gradient buffer. bridge_optim.c: the tied
		 * embedding's host copy on both its stages; gmodel_opt.c
		 * llmt_gopt_snapshot: m and v of this rank's ZeRO-1 checkpoint
		 * range, the master whole (dp = 1) or the part of it this DP
		 * rank writes (ckpt.h); d_load_into: master, m and v of that
		 * range (dp = 1: the whole buffers), freed once on the device */
		size_t lo, hi, wlo = 0, whi = nflat;
		llmt_zero1_range(nflat, l->dp, l->dp_rank, &lo, &hi);
		if (l->dp > 1)
			llmt_ckpt_dp_share(nflat, l->dp, l->dp_rank, &wlo, &whi);
		e->init = (nflat < GINIT_CHUNK ? n : (double)GINIT_CHUNK) * 4 + 4;
		if (c->tie_embeddings && l->pp > 1 && (first || last))
			e->staging += (double)c->vocab_size * c->d_model / l->tp * 4;
		e->snapshot = ckpt ? ((double)(whi - wlo) + 2.0 * (double)(hi - lo)) * 4 + 4 : 0;
		e->load = resume ? 3.0 * (double)(hi - lo) * 4 : 0;
	}
	if (!devopt) {
		/* the mirror's whole master and gradient buffer (gmodel.c
		 * llmt_gmodel_host_grads), the host optimizer's state, and the
		 * writer's copy of its share (the device optimizer's pinned
		 * snapshot is written in place) */
		llmt_memest h;
		llmt_memory_estimate(c, l, nflat, B, T, 1, 0, ckpt, 0, LLMT_RECOMPUTE_NONE, &h);
		e->mirror += n * 8 + h.optimizer + h.comm;
		e->writer = h.snapshot;
	}
	/* the init's buffer and a resume's come before the first snapshot,
	 * and are freed before it */
	double kept = e->snapshot + e->writer, early = e->init > e->load ? e->init : e->load;
	e->total = e->mirror + e->staging + (kept > early ? kept : early);
}

double llmt_memory_peak(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	double kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}
