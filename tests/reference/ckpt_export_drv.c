/* ckpt_export_drv.c: driver of the export/import check (ckpt_export.py).
 * Builds the model (tp=pp=1, fp32), writes the logits of a few tokens of
 * real text, saves a checkpoint, exports it as safetensors (fp32 and bf16)
 * with the llm-train export command, then checks in C that --init-from and
 * import bring back the same weights bit for bit (same logits).
 * usage: ckpt_export_drv CONFIG TEXTFILE OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt/ckpt.h"
#include "model/model.h"
#include "llmt/exitcodes.h"

#define T 16

static int write_file(const char *dir, const char *name, const void *p, size_t bytes)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f)) {
		fprintf(stderr, "ckpt_export_drv: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

static void state_of(llmt_model *m, const llmt_config *c, llmt_ckpt_state *st, float *mv)
{
	int np;

	memset(st, 0, sizeof *st);
	st->world = st->tp = st->pp = st->dp = 1;
	st->config = c;
	st->params = llmt_model_params(m, &np);
	st->nparams = np;
	st->nflat = llmt_model_nparams(m);
	st->bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, llmt_model_master(m), 0, st->nflat, 1, 0 };
	st->bufs[1] = (llmt_ckpt_buf){ "adam_m", LLMT_CKPT_F32, mv, 0, st->nflat, 0, 1 };
	st->nbufs = 2;
}

static int logits_of(llmt_model *m, const int32_t *tok, const int32_t *tgt, int V, float *out)
{
	float loss;

	if (llmt_model_forward(m, 0, tok, NULL, tgt, NULL, &loss))
		return -1;
	memcpy(out, llmt_model_logits(m, 0), sizeof(float) * T * V);
	return 0;
}

/* The first T + 1 bytes of the text as tokens and targets. */
static int read_tokens(const char *path, int V, int32_t *tok, int32_t *tgt)
{
	unsigned char text[T + 1];
	FILE *f = fopen(path, "rb");

	if (!f || fread(text, 1, sizeof text, f) != sizeof text) {
		fprintf(stderr, "ckpt_export_drv: cannot read %s\n", path);
		if (f)
			fclose(f);
		return 66;
	}
	fclose(f);
	for (int i = 0; i < T; i++) {
		tok[i] = text[i] % V;
		tgt[i] = text[i + 1] % V;
	}
	return 0;
}

/* m saved as step 5 in OUT/ckpt, exported to OUT/hf32 (fp32) and OUT/hf16;
 * exporting over an existing export is refused. */
static int save_and_export(llmt_model *m, const llmt_config *c, float *mv, const char *out)
{
	char err[1024], p1[4096], p2[4096], p3[4096];
	llmt_ckpt_state st;
	llmt_ckpt_writer *w;
	int rc;

	snprintf(p1, sizeof p1, "%s/ckpt", out);
	if (!(w = llmt_ckpt_writer_new(p1, 0, err, sizeof err)))
		return fprintf(stderr, "%s\n", err), 74;
	state_of(m, c, &st, mv);
	if ((rc = llmt_ckpt_save(w, 5, &st, err, sizeof err)) || (rc = llmt_ckpt_wait(w, err, sizeof err)))
		return fprintf(stderr, "save: %s\n", err), rc;
	llmt_ckpt_writer_free(w);
	snprintf(p2, sizeof p2, "%s/hf32", out);
	snprintf(p3, sizeof p3, "%s/hf16", out);
	char *a1[] = { "export", "--dtype", "fp32", p1, p2, NULL };
	char *a2[] = { "export", p1, p3, NULL };
	if ((rc = llmt_ckpt_cmd_export(5, a1)) || (rc = llmt_ckpt_cmd_export(3, a2)))
		return fprintf(stderr, "export failed: %d\n", rc), 1;
	if ((rc = llmt_ckpt_cmd_export(5, a1)) != LLMT_EXIT_USAGE)
		return fprintf(stderr, "export over an existing export: %d, want 64\n", rc), 1;
	return 0;
}

/* --init-from OUT/hf32 into m2 (another seed): m's weights and logits l1;
 * a model of another shape is refused. */
static int check_init_from(llmt_model *m, llmt_model *m2, llmt_config c2, float *mv, const int32_t *tok,
                           const int32_t *tgt, const float *l1, float *l2, const char *out)
{
	llmt_par par = { 1, 0, 1, 0, NULL };
	char err[1024], p2[4096];
	llmt_ckpt_state st;
	size_t n = llmt_model_nparams(m);
	int V = c2.vocab_size, rc;

	snprintf(p2, sizeof p2, "%s/hf32", out);
	state_of(m2, &c2, &st, mv);
	if ((rc = llmt_ckpt_init_from(p2, &st, err, sizeof err)))
		return fprintf(stderr, "init-from: %s\n", err), 1;
	llmt_model_sync_compute(m2);
	if (logits_of(m2, tok, tgt, V, l2) || memcmp(l1, l2, sizeof(float) * T * V) ||
	    memcmp(llmt_model_master(m), llmt_model_master(m2), n * 4))
		return fprintf(stderr, "init-from: weights or logits differ\n"), 1;
	c2.d_ff += 2;
	llmt_model *m3 = llmt_model_create(&c2, &par, LLMT_FP32, 1, T, 1);
	state_of(m3, &c2, &st, mv);
	if ((rc = llmt_ckpt_init_from(p2, &st, err, sizeof err)) != LLMT_EXIT_USAGE)
		return fprintf(stderr, "init-from into another shape: %d, want 64\n", rc), 1;
	printf("refused as expected: %s\n", err);
	llmt_model_free(m3);
	return 0;
}

/* import OUT/hf32 into OUT/imp: a checkpoint a run resumes from, with m's
 * weights (loaded into m2). */
static int check_import(llmt_model *m, llmt_model *m2, const llmt_config *c, float *mv, const char *out)
{
	char err[1024], p1[4096], p2[4096];
	llmt_ckpt_state st;
	llmt_ckpt *ck;
	size_t n = llmt_model_nparams(m);
	int rc, code;

	snprintf(p1, sizeof p1, "%s/imp", out);
	snprintf(p2, sizeof p2, "%s/hf32", out);
	char *a3[] = { "import", p2, p1, NULL };
	if ((rc = llmt_ckpt_cmd_import(3, a3)))
		return fprintf(stderr, "import failed: %d\n", rc), 1;
	memset(llmt_model_master(m2), 0, n * 4);
	snprintf(p1, sizeof p1, "%s/imp/step_00000000", out);
	if (!(ck = llmt_ckpt_open(p1, &code, err, sizeof err)))
		return fprintf(stderr, "%s\n", err), 1;
	state_of(m2, c, &st, mv);
	if ((rc = llmt_ckpt_load(ck, &st, err, sizeof err)))
		return fprintf(stderr, "load imported: %s\n", err), 1;
	llmt_ckpt_close(ck);
	if (memcmp(llmt_model_master(m), llmt_model_master(m2), n * 4))
		return fprintf(stderr, "import: weights differ\n"), 1;
	return 0;
}

int main(int argc, char **argv)
{
	llmt_config c, c2;
	llmt_par par = { 1, 0, 1, 0, NULL };
	char err[1024];
	int32_t tok[T], tgt[T];
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: ckpt_export_drv CONFIG TEXTFILE OUTDIR\n");
		return 64;
	}
	if (llmt_config_load(argv[1], &c, err, sizeof err)) {
		fprintf(stderr, "ckpt_export_drv: %s\n", err);
		return 64;
	}
	if ((rc = read_tokens(argv[2], c.vocab_size, tok, tgt)))
		return rc;
	const char *out = argv[3];
	int V = c.vocab_size;
	float *l1 = malloc(sizeof(float) * T * V), *l2 = malloc(sizeof(float) * T * V), *mv;
	llmt_model *m = llmt_model_create(&c, &par, LLMT_FP32, 1, T, 1);
	if (!m || !l1 || !l2)
		return 70;
	mv = calloc(llmt_model_nparams(m), sizeof *mv);
	if (logits_of(m, tok, tgt, V, l1) || write_file(out, "tokens.bin", tok, sizeof tok) ||
	    write_file(out, "logits.bin", l1, sizeof(float) * T * V))
		return 70;
	if ((rc = save_and_export(m, &c, mv, out)))
		return rc;
	c2 = c;
	c2.seed = c.seed + 1;
	llmt_model *m2 = llmt_model_create(&c2, &par, LLMT_FP32, 1, T, 1);
	if (!m2)
		return 70;
	if ((rc = check_init_from(m, m2, c2, mv, tok, tgt, l1, l2, out)) || (rc = check_import(m, m2, &c, mv, out)))
		return rc;
	printf("init-from and import: bit-identical weights and logits\n");
	llmt_model_free(m);
	llmt_model_free(m2);
	free(l1);
	free(l2);
	free(mv);
	return 0;
}
