/* rope_logits_drv.c: driver of hf_rope_llama3.py. Loads a model (ckpt
 * DIR: llmt_ckpt_gather; hf DIR: llmt_hf_load, as generate does) and
 * writes to OUT the logits after each of the token ids through both
 * forwards: the KV-cache path (gen_model.c's rotary tables) and the
 * training model (model.c's), each n x vocab_size floats.
 * usage: rope_logits_drv ckpt|hf DIR OUTDIR ID... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt/ckpt.h"
#include "gen/gen_model.h"

static int put(const char *dir, const char *name, const float *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, sizeof *p, n, f) != n || fclose(f)) {
		fprintf(stderr, "rope_logits_drv: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	llmt_config cfg;
	llmt_param_info *tab;
	int ntab, n = argc - 4;
	size_t nflat;
	float *flat;
	char err[2048];

	if (argc < 5 || (strcmp(argv[1], "ckpt") && strcmp(argv[1], "hf"))) {
		fprintf(stderr, "usage: rope_logits_drv ckpt|hf DIR OUTDIR ID...\n");
		return 64;
	}
	int rc = !strcmp(argv[1], "hf") ? llmt_hf_load(argv[2], NULL, &cfg, &tab, &ntab, &nflat, &flat, err, sizeof err)
	                                : llmt_ckpt_gather(argv[2], &cfg, &tab, &ntab, &nflat, &flat, err, sizeof err);
	if (rc) {
		fprintf(stderr, "rope_logits_drv: %s\n", err);
		return rc;
	}
	llmt_gen *g = llmt_gen_new(&cfg, tab, ntab, flat, n, err, sizeof err);
	int32_t *ids = malloc((size_t)n * sizeof *ids);
	size_t V = (size_t)cfg.vocab_size;
	float *step = malloc((size_t)n * V * 4), *full = malloc((size_t)n * V * 4);
	if (!g || !ids || !step || !full) {
		fprintf(stderr, "rope_logits_drv: %s\n", g ? "out of memory" : err);
		return 70;
	}
	for (int i = 0; i < n; i++)
		ids[i] = atoi(argv[4 + i]);
	for (int i = 0; i < n; i++)
		memcpy(step + (size_t)i * V, llmt_gen_step(g, ids[i], i), V * 4);
	for (int i = 0; i < n; i++) {
		const float *lg = llmt_gen_recompute(g, ids, i + 1);
		if (!lg)
			return 70;
		memcpy(full + (size_t)i * V, lg, V * 4);
	}
	rc = put(argv[3], "step.bin", step, (size_t)n * V) || put(argv[3], "full.bin", full, (size_t)n * V);
	llmt_gen_free(g);
	free(ids);
	free(step);
	free(full);
	return rc ? 73 : 0;
}
