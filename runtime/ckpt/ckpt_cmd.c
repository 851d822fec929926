/* ckpt_cmd.c: the checkpoint subcommands of llm-train (ckpt-verify,
 * ckpt-list, export, import) and --init-from: Hugging Face config.json
 * <-> llmt_config, and weights between checkpoints and safetensors (the
 * tokenizer files and PAD/BOS/EOS ids import keeps: ckpt_hftok.c; config.json:
 * ckpt_hfconfig.c). */
#include "ckpt_int.h"
#include "safetensors.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "data/tok_iface.h"
#include "llmt/owndir.h"
#include "model/model_config.h"

/* ---- ckpt-verify / ckpt-list ------------------------------------------ */
int llmt_ckpt_cmd_verify(int argc, char **argv)
{
	char err[2048];
	ck_manifest m;
	int rc;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: llm-train ckpt-verify STEP_DIR\n");
		return LLMT_EXIT_USAGE;
	}
	rc = ck_validate_dir(argv[1], 0, &m, err, sizeof err);
	if (rc) {
		fprintf(stderr, "%s\n", err);
		return rc == LLMT_EXIT_NOINPUT ? rc : LLMT_EXIT_DATA;
	}
	printf("%s: valid checkpoint of step %ld (tp=%d pp=%d dp=%d, %d files)\n", argv[1], m.step, m.tp, m.pp,
	       m.dp, m.src.nfiles);
	ck_manifest_free(&m);
	return 0;
}

static void report_bad(const char *path, const char *why, void *arg)
{
	(void)arg;
	fprintf(stderr, "llm-train: ckpt-list: %s: invalid: %s\n", path, why);
}

int llmt_ckpt_cmd_list(int argc, char **argv)
{
	const char *dir = NULL;
	int quick = 0, n;
	char **paths;
	long *steps;
	struct stat st;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else {
			fprintf(stderr, "usage: llm-train ckpt-list [--quick] CKPT_DIR\n");
			return LLMT_EXIT_USAGE;
		}
	}
	if (!dir) {
		fprintf(stderr, "usage: llm-train ckpt-list [--quick] CKPT_DIR\n");
		return LLMT_EXIT_USAGE;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "llm-train: ckpt-list: %s: no such directory\n", dir);
		return LLMT_EXIT_NOINPUT;
	}
	n = ck_list(dir, quick, &paths, &steps, report_bad, NULL);
	if (n < 0) {
		fprintf(stderr, "llm-train: ckpt-list: %s: %s\n", dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	for (int i = 0; i < n; i++) {
		printf("%ld %s\n", steps[i], paths[i]);
		free(paths[i]);
	}
	free(paths);
	free(steps);
	return 0;
}

/* ---- export ------------------------------------------------------------ */
typedef struct { ck_source *src; int kind; const int *tix; llmt_ckpt_dtype dt; } export_ctx;

static int export_fill(int i, void *dst, void *arg, char *err, size_t errlen)
{
	export_ctx *x = arg;

	return ck_source_read_tensor(x->src, x->kind, x->tix[i], dst, x->dt, err, errlen);
}

/* OUT/config.json, with an import's tokenizer files and PAD/BOS/EOS ids
 * (ckpt_hftok.c; *ntok of them) */
static int export_config(const char *stepdir, const char *out, const llmt_config *cfg, llmt_ckpt_dtype dt,
                         int *ntok, char *err, size_t errlen)
{
	char path[4300];
	json_t *hc = ck_hf_config(cfg, dt);
	char *txt = NULL;
	int rc = hc ? ck_hftok_export(stepdir, out, hc, ntok, err, errlen) : LLMT_EXIT_IO;
	if (!rc)
		txt = json_dumps(hc, JSON_INDENT(2));
	json_decref(hc);
	ck_fmt(path, sizeof path, "%s/config.json", out);
	if (!rc && (!txt || ck_write_file_atomic(path, txt, strlen(txt), err, errlen) != 0))
		rc = LLMT_EXIT_IO;
	free(txt);
	return rc;
}

int llmt_ckpt_cmd_export(int argc, char **argv)
{
	const char *from = NULL, *out = NULL;
	llmt_ckpt_dtype dt = LLMT_CKPT_BF16;
	char err[2048], stepdir[4096], path[4300];
	ck_manifest m;
	llmt_config cfg;
	st_tensor *t = NULL;
	int *tix = NULL, rc, kind, n = 0;
	struct stat sb;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "bf16"))
				dt = LLMT_CKPT_BF16;
			else if (!strcmp(argv[i], "fp32") || !strcmp(argv[i], "f32"))
				dt = LLMT_CKPT_F32;
			else {
				fprintf(stderr, "llm-train: export: --dtype %s: use bf16 or fp32\n", argv[i]);
				return LLMT_EXIT_USAGE;
			}
		} else if (argv[i][0] != '-' && !from) {
			from = argv[i];
		} else if (argv[i][0] != '-' && !out) {
			out = argv[i];
		} else {
			from = NULL;
			break;
		}
	}
	if (!from || !out) {
		fprintf(stderr, "usage: llm-train export [--dtype bf16|fp32] CKPT OUTDIR\n");
		return LLMT_EXIT_USAGE;
	}
	if ((rc = llmt_ckpt_resolve(from, stepdir, sizeof stepdir, err, sizeof err)) != 0 ||
	    (rc = ck_validate_dir(stepdir, 0, &m, err, sizeof err)) != 0) {
		fprintf(stderr, "llm-train: export: %s\n", err);
		return rc;
	}
	if (ck_config_from_json(m.model, &cfg, err, sizeof err) != 0) {
		fprintf(stderr, "llm-train: export: %s/manifest.json: %s\n", stepdir, err);
		ck_manifest_free(&m);
		return LLMT_EXIT_DATA;
	}
	kind = ck_source_find_kind(&m.src, "master");
	if (kind < 0)
		kind = ck_source_find_kind(&m.src, "weights");
	if (kind < 0) {
		fprintf(stderr, "llm-train: export: %s: no master weights stored\n", stepdir);
		ck_manifest_free(&m);
		return LLMT_EXIT_DATA;
	}
	ck_fmt(path, sizeof path, "%s/model.safetensors", out);
	if (stat(path, &sb) == 0) {
		fprintf(stderr, "llm-train: export: %s exists: not overwritten (choose another OUTDIR)\n", path);
		ck_manifest_free(&m);
		return LLMT_EXIT_USAGE;
	}
	/* another user's OUTDIR (made first to read the export): refused */
	if (llmt_dir_owned("export dir", out, err, sizeof err)) {
		fprintf(stderr, "llm-train: export: %s\n", err);
		ck_manifest_free(&m);
		return LLMT_EXIT_USAGE;
	}
	if (ck_mkdir_p(out) != 0) {
		fprintf(stderr, "llm-train: export: %s: %s\n", out, strerror(errno));
		ck_manifest_free(&m);
		return LLMT_EXIT_IO;
	}
	t = calloc((size_t)m.src.ntensors + 1, sizeof *t);
	tix = calloc((size_t)m.src.ntensors + 1, sizeof *tix);
	for (int i = 0; i < m.src.ntensors; i++) {
		const ck_tensor *ct = &m.src.tensors[i];
		int has = 0;
		for (int p = 0; p < m.src.npieces; p++)
			has |= m.src.pieces[p].kind == kind && m.src.pieces[p].tensor == i;
		if (!has)
			continue;
		ck_fmt(t[n].name, sizeof t[n].name, "%s", ct->name);
		t[n].ndim = ct->ndim;
		t[n].shape[0] = ct->shape[0];
		t[n].shape[1] = ct->shape[1];
		t[n].dtype = dt;
		tix[n++] = i;
	}
	export_ctx x = { &m.src, kind, tix, dt };
	rc = st_write(path, t, n, export_fill, &x, err, sizeof err);
	int ntok = 0;
	if (!rc)
		rc = export_config(stepdir, out, &cfg, dt, &ntok, err, sizeof err);
	if (!rc)
		rc = ck_fsync_dir(out) ? LLMT_EXIT_IO : 0;
	if (rc)
		fprintf(stderr, "llm-train: export: %s\n", err);
	else
		printf("%s: %d tensors (%s) from %s%s\n", out, n, dt == LLMT_CKPT_BF16 ? "bf16" : "fp32", stepdir,
		       ntok ? ", with the import's tokenizer files and pad/bos/eos ids" : "");
	free(t);
	free(tix);
	ck_manifest_free(&m);
	return rc;
}

/* ---- import and --init-from ------------------------------------------- */
/* The tokenizer named (or HFDIR's tokenizer.model / tokenizer.json) has
 * vocab_size ids. A file found in HFDIR that no tokenizer of this build
 * reads is left unchecked, with a note. 0 or an exit code. */
const char *llmt_hf_tokenizer(const char *hfdir, char *buf, size_t len)
{
	static const char *found[] = { "tokenizer.model", "tokenizer.json" };
	struct stat sb;

	for (int i = 0; i < 2; i++) {
		ck_fmt(buf, len, "%s/%s", hfdir, found[i]);
		if (stat(buf, &sb) == 0)
			return buf;
	}
	return NULL;
}

static int hf_check_vocab(const char *hfdir, const char *tokfile, const llmt_config *c, char *err, size_t errlen)
{
	char path[4300];
	llmt_tokseam t;
	int rc;

	if (!tokfile)
		tokfile = llmt_hf_tokenizer(hfdir, path, sizeof path);
	if (!tokfile)
		return 0;
	rc = llmt_tokseam_open(tokfile, &t, err, errlen);
	if (rc == LLMT_EXIT_USAGE && tokfile == path) {
		fprintf(stderr, "llm-train: note: %s: its vocabulary is not checked (no tokenizer of this build reads it)\n",
		        path);
		return 0;
	}
	if (rc)
		return rc;
	if (t.vocab > c->vocab_size) {  /* fewer: padding rows (Qwen) */
		ck_fmt(err, errlen, "tokenizer %s has %d tokens, more than %s/config.json's vocab_size %d", tokfile,
		       t.vocab, hfdir, c->vocab_size);
		rc = LLMT_EXIT_USAGE;
	}
	llmt_tokseam_close(&t);
	return rc;
}

/* HFDIR/config.json into cfg and its safetensors opened into s, checked
 * against each other and against the tokenizer. 0 or an exit code. */
static int hf_open(const char *hfdir, const char *tokfile, llmt_config *cfg, ck_source *s, char *err, size_t errlen)
{
	int rc, dtype;

	if ((rc = ck_hf_read_config(hfdir, cfg, &dtype, err, errlen)) != 0 ||
	    (rc = hf_check_vocab(hfdir, tokfile, cfg, err, errlen)) != 0 ||
	    (rc = st_open_dir(hfdir, s, err, errlen)) != 0)
		return rc;
	if ((rc = ck_hf_check(s, cfg, dtype, hfdir, err, errlen)) != 0)
		ck_source_free(s);
	return rc;
}

int llmt_ckpt_init_from(const char *hfdir_arg, const llmt_ckpt_state *st, char *err, size_t errlen)
{
	llmt_config cfg;
	ck_source s;
	char e2[1024], hfdir[4200];
	int rc, kind;

	if ((rc = llmt_hf_resolve(hfdir_arg, hfdir, sizeof hfdir, err, errlen)) != 0 ||
	    (rc = hf_open(hfdir, NULL, &cfg, &s, err, errlen)) != 0)
		return rc;
	if (st->config && ck_config_compare(&cfg, st->config, e2, sizeof e2) != 0) {
		ck_fmt(err, errlen, "%s: does not match this model: %s", hfdir, e2);
		ck_source_free(&s);
		return LLMT_EXIT_USAGE;
	}
	kind = ck_source_find_kind(&s, "weights");
	for (int k = 0; k < st->nbufs && !rc; k++) {
		const llmt_ckpt_buf *b = &st->bufs[k];
		ck_cut *cuts;
		int n;
		if (strcmp(b->kind, "master") && strcmp(b->kind, "weights"))
			continue;
		n = ck_cut_range(st->params, st->nparams, b->lo, b->hi, 0, &cuts, err, errlen);
		if (n < 0) {
			rc = LLMT_EXIT_SOFTWARE;
			break;
		}
		rc = ck_source_fill(&s, kind, st->params, cuts, n, b, err, errlen);
		free(cuts);
	}
	ck_source_free(&s);
	return rc;
}

int llmt_hf_load(const char *hfdir, const char *tokfile, llmt_config *cfg, llmt_param_info **tab, int *ntab,
                 size_t *nflat, float **flat, char *err, size_t errlen)
{
	llmt_par par = { 1, 0, 1, 0, NULL };
	ck_source s;
	int rc, kind;

	*tab = NULL;
	*flat = NULL;
	if ((rc = hf_open(hfdir, tokfile, cfg, &s, err, errlen)) != 0)
		return rc;
	if (llmt_model_table(cfg, &par, tab, ntab, nflat) != 0 ||
	    !(*flat = calloc(*nflat ? *nflat : 1, sizeof **flat))) {
		ck_fmt(err, errlen, "out of memory (%zu parameters)", *nflat);
		rc = LLMT_EXIT_SOFTWARE;
	}
	kind = ck_source_find_kind(&s, "weights");
	for (int i = 0; i < *ntab && !rc; i++) {
		int t = ck_source_find_tensor(&s, (*tab)[i].name);
		if (t < 0) {   /* ck_hf_check found every one */
			ck_fmt(err, errlen, "%s: no tensor %s", hfdir, (*tab)[i].name);
			rc = LLMT_EXIT_SOFTWARE;
		} else {
			rc = ck_source_read_tensor(&s, kind, t, *flat + (*tab)[i].offset, LLMT_CKPT_F32, err, errlen);
		}
	}
	ck_source_free(&s);
	if (rc) {
		free(*tab);
		free(*flat);
		*tab = NULL;
		*flat = NULL;
	}
	return rc;
}

/* CKPT_DIR absent or empty: import never writes beside saved checkpoints */
static int import_target_free(const char *dir, char *err, size_t errlen)
{
	if (llmt_dir_owned("checkpoint dir", dir, err, errlen))
		return LLMT_EXIT_USAGE;   /* another user's, empty: they would read the import */
	DIR *d = opendir(dir);
	struct dirent *e;
	int used = 0;

	if (!d)
		return errno == ENOENT ? 0 : (ck_fmt(err, errlen, "%s: %s", dir, strerror(errno)), LLMT_EXIT_IO);
	errno = 0;
	while (!used && (e = readdir(d)))
		used = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (!used && errno) {   /* unread is not empty: saved checkpoints may be there */
		ck_fmt(err, errlen, "%s: %s", dir, strerror(errno));
		closedir(d);
		return LLMT_EXIT_IO;
	}
	closedir(d);
	if (used)
		ck_fmt(err, errlen, "%s exists and is not empty: not overwritten (choose a new CKPT_DIR)", dir);
	return used ? LLMT_EXIT_USAGE : 0;
}

/* DIR/model.yaml: the architecture the import has, for llm-train --model
 * (written after the checkpoint: a cut-short import leaves none, never a
 * CKPT_DIR a run would take for an empty one). 0, or LLMT_EXIT_IO. */
static int import_write_yaml(const char *dir, const llmt_config *c, char *path, size_t plen, char *err,
                             size_t errlen)
{
	char tmp[4200];
	FILE *f;

	snprintf(path, plen, "%s/model.yaml", dir);
	snprintf(tmp, sizeof tmp, "%s/.tmp.model.yaml", dir);
	if (!(f = fopen(tmp, "wx"))) {
		ck_fmt(err, errlen, "%s: %s", tmp, strerror(errno));
		return LLMT_EXIT_IO;
	}
	fprintf(f, "# the architecture llm-train import found in config.json: llm-train --model this file\n");
	llmt_config_write(f, c);
	if (ferror(f) | (fclose(f) != 0) || rename(tmp, path) != 0) {
		ck_fmt(err, errlen, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return LLMT_EXIT_IO;
	}
	return 0;
}

int llmt_ckpt_cmd_import(int argc, char **argv)
{
	const char *hf = NULL, *out = NULL, *tokfile = NULL;
	char err[2048], e2[1024], snap[4200];
	llmt_config cfg;
	llmt_param_info *tab = NULL;
	size_t nflat = 0;
	float *flat = NULL;
	llmt_ckpt_writer *w;
	json_t *tj;
	char *tjs = NULL;
	int rc, nt = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc)
			tokfile = argv[++i];
		else if (argv[i][0] != '-' && !hf)
			hf = argv[i];
		else if (argv[i][0] != '-' && !out)
			out = argv[i];
		else
			hf = out = NULL, i = argc;
	}
	if (!hf || !out) {
		fprintf(stderr, "usage: llm-train import HF_DIR CKPT_DIR [--tokenizer FILE]\n");
		return LLMT_EXIT_USAGE;
	}
	/* a cache repo's root: its refs/main snapshot from here on */
	if (!(rc = import_target_free(out, err, sizeof err)) &&
	    !(rc = llmt_hf_resolve(hf, snap, sizeof snap, err, sizeof err)) && strcmp(hf, snap)) {
		fprintf(stderr, "llm-train: note: %s: a Hugging Face cache repo: its refs/main names %s\n", hf, snap);
		hf = snap;
	}
	if (rc || (rc = llmt_hf_load(hf, tokfile, &cfg, &tab, &nt, &nflat, &flat, err, sizeof err)) != 0) {
		fprintf(stderr, "llm-train: import: %s\n", err);
		return rc;
	}
	/* weights only: a run resuming from it starts at step 0 with a fresh
	 * optimizer (train_setup.c) */
	tj = json_pack("{s:s, s:b}", "imported_from", hf, "weights_only", 1);
	tjs = tj ? json_dumps(tj, JSON_COMPACT) : NULL;
	json_decref(tj);
	llmt_ckpt_state st = { .rank = 0, .world = 1, .tp = 1, .pp = 1, .dp = 1, .config = &cfg, .params = tab,
	                       .nparams = nt, .nflat = nflat, .nbufs = 1, .train_json = tjs };
	st.bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, flat, 0, nflat, 1, 0 };
	if (!tjs) {
		ck_fmt(err, sizeof err, "out of memory");
		rc = LLMT_EXIT_SOFTWARE;
	} else if (!(w = llmt_ckpt_writer_new(out, 0, err, sizeof err))) {
		rc = LLMT_EXIT_IO;
	} else {
		rc = llmt_ckpt_save(w, 0, &st, err, sizeof err);
		int r2 = llmt_ckpt_wait(w, e2, sizeof e2);
		if (!rc && r2) {
			rc = r2;
			ck_fmt(err, sizeof err, "%s", e2);
		}
		llmt_ckpt_writer_free(w);
	}
	char yml[4200];
	int ntok = 0;
	if (!rc)   /* for the export: ckpt_hftok.c */
		rc = ck_hftok_keep(hf, out, cfg.vocab_size, cfg.max_seq, &ntok, err, sizeof err);
	if (!rc)
		rc = import_write_yaml(out, &cfg, yml, sizeof yml, err, sizeof err);
	if (rc)
		fprintf(stderr, "llm-train: import: %s\n", err);
	else
		printf("%s/step_00000000: imported %d tensors, %zu parameters from %s%s%s%s; model config for --model: "
		       "%s\n", out, nt, nflat, hf, ntok ? " (its tokenizer files kept in " : "", ntok ? out : "",
		       ntok ? "/hf_tokenizer for the export)" : "", yml);
	free(tjs);
	free(flat);
	free(tab);
	return rc;
}
