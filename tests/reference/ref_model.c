/* ref_model.c: driver for the PyTorch reference check (ref_model.py).
 * Builds the model from a config (tp=pp=1), trains on bytes of a real text
 * file and writes what PyTorch must reproduce: initial weights, tokens,
 * logits, loss, every gradient, and the losses of N AdamW steps (the
 * runtime's optimizer, optim.h, which must match torch.optim.AdamW).
 * usage: ref_model CONFIG fp32|bf16 B T STEPS TEXTFILE OUTDIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/model.h"
#include "train/optim.h"
#include "ref_dump.h"

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: ref_model CONFIG fp32|bf16 B T STEPS TEXTFILE OUTDIR\n");
		return 64;
	}
	llmt_config c;
	char err[512];
	if (llmt_config_load(argv[1], &c, err, sizeof err)) {
		fprintf(stderr, "ref_model: %s\n", err);
		return 64;
	}
	llmt_prec prec = strcmp(argv[2], "bf16") ? LLMT_FP32 : LLMT_BF16;
	int B = atoi(argv[3]), T = atoi(argv[4]), steps = atoi(argv[5]);
	const char *out = argv[7];
	FILE *tf = fopen(argv[6], "rb");
	if (!tf) {
		fprintf(stderr, "ref_model: cannot open %s\n", argv[6]);
		return 66;
	}
	size_t need = (size_t)(steps + 1) * B * T + 1;
	unsigned char *text = malloc(need);
	if (!text || fread(text, 1, need, tf) != need) {
		fprintf(stderr, "ref_model: %s is shorter than %zu bytes\n", argv[6], need);
		return 66;
	}
	fclose(tf);
	llmt_par par = { 1, 0, 1, 0, NULL };
	llmt_model *m = llmt_model_create(&c, &par, prec, B, T, 1);
	if (!m)
		return 70;
	int np;
	const llmt_param_info *pi = llmt_model_params(m, &np);
	size_t n = llmt_model_nparams(m);
	if (ref_dump_params("ref_model", m, out))
		return 74;
	char path[4096];
	int M = B * T;
	int32_t *tok = malloc(sizeof *tok * M), *tgt = malloc(sizeof *tgt * M);
	float *mm = calloc(n, 4), *vv = calloc(n, 4);
	FILE *lf;
	snprintf(path, sizeof path, "%s/losses.txt", out);
	if (!tok || !tgt || !mm || !vv || !(lf = fopen(path, "w")))
		return 70;
	const double lr = 1e-3;
	const llmt_adamw_cfg ac = { 0.9, 0.95, 1e-8, 0.1, 0.0 };
	for (int s = 0; s <= steps; s++) {
		for (int i = 0; i < M; i++) {
			tok[i] = text[(size_t)s * M + i];
			tgt[i] = text[(size_t)s * M + i + 1];
		}
		float loss;
		llmt_model_zero_grad(m);
		if (llmt_model_forward(m, 0, tok, NULL, tgt, NULL, &loss) ||
			llmt_model_backward(m, 0, NULL, NULL, 1.0f))
			return 70;
		fprintf(lf, "%.9g\n", loss);
		if (s == 0) {
			if (ref_dump_step0("ref_model", m, out, tok, tgt, llmt_model_logits(m, 0), M,
							   c.vocab_size))
				return 74;
		}
		if (s == steps)
			break;
		/* AdamW of the optimizer module (optim.h), per tensor for decay */
		for (int t = 0; t < np; t++)
			llmt_adamw_update(llmt_model_master(m) + pi[t].offset,
							  llmt_model_grads(m) + pi[t].offset, mm + pi[t].offset,
							  vv + pi[t].offset, pi[t].numel, lr, 1.0, &ac, s + 1,
							  !pi[t].no_decay);
		llmt_model_sync_compute(m);
	}
	fclose(lf);
	llmt_model_free(m);
	free(tok); free(tgt); free(mm); free(vv); free(text);
	return 0;
}
