/* ref_sft.c: driver for the packed-sample reference check (ref_sft.py):
 * two sequences of T tokens (bytes of a real text) packed with samples of
 * several lengths (one of a single token), each with an untrained prompt
 * part (targets -1) and no target across a sample boundary; one forward
 * and backward at the training loop's scale (B*T / trained tokens), the
 * dump of ref_dump.h plus seg.bin (sample ids) and the masked mean loss.
 * usage: ref_sft CONFIG fp32|bf16 T TEXTFILE OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/model.h"
#include "ref_dump.h"

#define B 2

/* sample lengths of each sequence, in parts of 64 (scaled to T) */
static const int lens[B][5] = { { 17, 1, 30, 16, 0 }, { 5, 59, 0 } };

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: ref_sft CONFIG fp32|bf16 T TEXTFILE OUTDIR\n");
		return 64;
	}
	llmt_config c;
	char err[512];
	if (llmt_config_load(argv[1], &c, err, sizeof err)) {
		fprintf(stderr, "ref_sft: %s\n", err);
		return 64;
	}
	int T = atoi(argv[3]), M = B * T;
	if (T % 64) {
		fprintf(stderr, "ref_sft: T must be a multiple of 64\n");
		return 64;
	}
	unsigned char *text = malloc((size_t)M + 1);
	FILE *tf = fopen(argv[4], "rb");
	if (!text || !tf || fread(text, 1, (size_t)M + 1, tf) != (size_t)M + 1) {
		fprintf(stderr, "ref_sft: cannot read %d bytes of %s\n", M + 1, argv[4]);
		return 66;
	}
	fclose(tf);
	llmt_par par = { 1, 0, 1, 0, NULL };
	llmt_model *m = llmt_model_create(&c, &par, strcmp(argv[2], "bf16") ? LLMT_FP32 : LLMT_BF16,
									  B, T, 1);
	int32_t *tok = malloc(sizeof *tok * M), *tgt = malloc(sizeof *tgt * M);
	int32_t *seg = malloc(sizeof *seg * M);
	if (!m || !tok || !tgt || !seg)
		return 70;
	if (ref_dump_params("ref_sft", m, argv[5]))
		return 74;
	int ntr = 0;
	for (int b = 0; b < B; b++)
		for (int s = 0, t0 = 0; lens[b][s]; t0 += lens[b][s++] * T / 64) {
			int n = lens[b][s] * T / 64, prompt = n * 2 / 5;
			for (int i = 0; i < n; i++) {
				int at = b * T + t0 + i;
				tok[at] = text[at];
				seg[at] = s;
				tgt[at] = i >= prompt && i < n - 1 ? text[at + 1] : -1;
				ntr += tgt[at] >= 0;
			}
		}
	float loss;
	llmt_model_zero_grad(m);
	if (llmt_model_set_seg(m, 0, seg) || llmt_model_forward(m, 0, tok, NULL, tgt, NULL, &loss) ||
		llmt_model_backward(m, 0, NULL, NULL, (float)M / (float)ntr))
		return 70;
	char path[4096];
	snprintf(path, sizeof path, "%s/losses.txt", argv[5]);
	FILE *lf = fopen(path, "w");
	if (!lf || fprintf(lf, "%.9g\n", (double)loss * M / ntr) < 0 || fclose(lf) ||
		ref_dump_step0("ref_sft", m, argv[5], tok, tgt, llmt_model_logits(m, 0), M,
					   c.vocab_size) ||
		ref_dump_file("ref_sft", argv[5], "seg.bin", seg, sizeof *seg * M))
		return 74;
	printf("%d of %d targets trained on\n", ntr, M);
	llmt_model_free(m);
	free(tok), free(tgt), free(seg), free(text);
	return 0;
}
