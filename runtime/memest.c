/* memest.c: memory accounting of a rank. The activation terms follow the
 * tensors model.c keeps per layer and per micro-batch slot (residual
 * streams, normed inputs, q/k/v, softmax, attention output, SwiGLU in and
 * out) and its shared scratch; 1F1B keeps min(pp, A) slots. */
#include "memest.h"
#include <stdio.h>
#include <string.h>

void llmt_memory_estimate(const llmt_config *c, const llmt_layout *l, size_t nflat,
	int B, int T, int A, int bf16, int ckpt, llmt_memest *e)
{
	double es = bf16 ? 2 : 4, M = (double)B * T, d = c->d_model, V = c->vocab_size;
	int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
	double hd = (double)c->d_model / c->n_heads, Hl = (double)c->n_heads / l->tp;
	double KVl = (double)kv / l->tp, Fl = (double)c->d_ff / l->tp, Wq = (Hl + 2 * KVl) * hd;
	double Hh = Hl * hd, BH = B * Hl, nl = (double)c->n_layers / l->pp, n = (double)nflat;
	int first = l->pp_rank == 0, last = l->pp_rank == l->pp - 1;
	int slots = l->pp < A ? l->pp : A;
	double layer, slot, shard = n / l->dp;

	memset(e, 0, sizeof(*e));
	e->params = n * (4 + 4 + (bf16 ? 2 : 0));
	/* m and v; with dp > 1 also the reduced gradient and all-gather staging */
	e->optimizer = shard * 8 + (l->dp > 1 ? shard * 8 : 0);
	layer = M * d * 4 + 2 * M * d * es + 2 * M * 4 + 3 * BH * T * hd * es + BH * T * T * es +
		M * Hh * es + 3 * M * Fl * es;
	if (c->qk_norm)
		layer += M * Wq * 4 + M * (Hl + KVl) * 4;
	slot = (nl + 1) * M * d * 4 + nl * layer + (first ? M * 4 : 0) +
		(last ? M * d * es + M * 4 + M * V * es : 0);
	e->activations = slots * slot;
	e->scratch = M * Wq * 4 + 2 * BH * T * T * 4 + 3 * M * d * 4 + M * Fl * 4 + M * Hh * 4 +
		3 * BH * T * hd * 4 + 2 * BH * T * hd * es + M * (d > Hh ? d : Hh) * es +
		2 * M * Fl * es + BH * T * T * es + M * Wq * es + (last ? M * V * 4 : 0);
	e->pipeline = 2 * M * 4 + (l->pp > 1 ? (slots + 3) * M * d * 4 : 0);
	/* the deterministic reduce-scatter receives every member's block */
	e->comm = l->dp > 1 ? shard * l->dp * 4 : 0;
	/* the save copies this rank's share: 1/dp of the master, its m and v */
	e->snapshot = ckpt ? shard * 4 * 3 : 0;
	e->total = e->params + e->optimizer + e->activations + e->scratch + e->pipeline + e->comm +
		e->snapshot;
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
