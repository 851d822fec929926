/* ckpt_manifest.c: manifest.json of a checkpoint (jansson): the model
 * config as JSON, parsing a manifest into a ck_manifest, validating a step
 * directory (manifest, sizes, checksums) and listing the valid ones.
 *
 * manifest.json (written by ckpt_write.c, last, tmp + fsync + rename):
 *   format "llmt-ckpt", version 1, step, generation (1 + the largest in
 *     CKPT_DIR at the save; absent in older manifests: 0; an integer in
 *     0..2^53-1, else the manifest is bad: include/llmt/ckptgen.h),
 *   created_ns, created (ISO UTC) (the writing host's clock: only the
 *     tie-break of equal generations),
 *   layout {tp, pp, dp, world}, model {llmt_config fields; rope_scaling
 *     {type llama3, factor, low_freq_factor, high_freq_factor,
 *     original_max} only where set},
 *   training {opaque object from the loop}, replicas_agree (bool or null),
 *   replica_hashes [per rank XXH3 of its DP-replicated buffers],
 *   kinds [{name, dtype f32|bf16}], tensors [{name, shape}] sorted by name,
 *   files [{name rank_NNNNN.bin, rank, size, xxh3 (16 hex)}],
 *   pieces [[tensor, kind, file, byte offset, r0, nr, c0, nc]]: a box of
 *     the tensor's [rows, cols] view (1-D: [n, 1]) stored row-major,
 *   blobs [{name, rank, file, offset, size}] (per-rank opaque bytes).
 * Every (kind, tensor) is covered exactly once by its pieces. The list
 * is newest first: by generation, then created_ns, then step. */
#include "ckpt_int.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

json_t *ck_config_to_json(const llmt_config *c)
{
	json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:b, s:b, s:f, s:f, s:I}",
	                 "vocab_size", c->vocab_size, "d_model", c->d_model, "n_layers", c->n_layers,
	                 "n_heads", c->n_heads, "n_kv_heads", c->n_kv_heads, "d_ff", c->d_ff,
	                 "max_seq", c->max_seq, "rope_theta", c->rope_theta, "norm_eps", c->norm_eps,
	                 "qk_norm", c->qk_norm, "tie_embeddings", c->tie_embeddings,
	                 "z_loss", c->z_loss, "init_std", c->init_std, "seed", (json_int_t)c->seed);
	/* rope scaling only where set: older manifests (none) read the same */
	if (o && c->rope_scaling == LLMT_ROPE_LLAMA3 &&
	    json_object_set_new(o, "rope_scaling",
	                        json_pack("{s:s, s:f, s:f, s:f, s:i}", "type", "llama3", "factor", c->rope_factor,
	                                  "low_freq_factor", c->rope_low_freq_factor, "high_freq_factor",
	                                  c->rope_high_freq_factor, "original_max", c->rope_original_max))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int get_int(const json_t *o, const char *k, int *v, char *err, size_t errlen)
{
	json_t *x = json_object_get(o, k);

	if (json_is_boolean(x)) {
		*v = json_is_true(x);
		return 0;
	}
	if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > (1 << 30)) {
		ck_fmt(err, errlen, "model.%s: missing or not a small integer", k);
		return -1;
	}
	*v = (int)json_integer_value(x);
	return 0;
}

static int get_num(const json_t *o, const char *k, double *v, char *err, size_t errlen)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_number(x)) {
		ck_fmt(err, errlen, "model.%s: missing or not a number", k);
		return -1;
	}
	*v = json_number_value(x);
	return 0;
}

/* model.rope_scaling (absent: none) into c, validated */
static int rope_from_json(const json_t *r, llmt_config *c, char *err, size_t errlen)
{
	char why[256];

	if (!r)
		return 0;
	if (!json_is_object(r) || !json_is_string(json_object_get(r, "type")) ||
	    strcmp(json_string_value(json_object_get(r, "type")), "llama3")) {
		ck_fmt(err, errlen, "model.rope_scaling: not an object of type llama3");
		return -1;
	}
	c->rope_scaling = LLMT_ROPE_LLAMA3;
	if (get_num(r, "factor", &c->rope_factor, err, errlen) ||
	    get_num(r, "low_freq_factor", &c->rope_low_freq_factor, err, errlen) ||
	    get_num(r, "high_freq_factor", &c->rope_high_freq_factor, err, errlen) ||
	    get_int(r, "original_max", &c->rope_original_max, err, errlen))
		return -1;
	if (llmt_config_validate_rope(c, why, sizeof why)) {
		ck_fmt(err, errlen, "model.rope_scaling: %s", why);
		return -1;
	}
	return 0;
}

int ck_config_from_json(const json_t *o, llmt_config *c, char *err, size_t errlen)
{
	llmt_config_defaults(c);
	if (!json_is_object(o)) {
		ck_fmt(err, errlen, "model: not an object");
		return -1;
	}
	if (get_int(o, "vocab_size", &c->vocab_size, err, errlen) || get_int(o, "d_model", &c->d_model, err, errlen) ||
	    get_int(o, "n_layers", &c->n_layers, err, errlen) || get_int(o, "n_heads", &c->n_heads, err, errlen) ||
	    get_int(o, "n_kv_heads", &c->n_kv_heads, err, errlen) || get_int(o, "d_ff", &c->d_ff, err, errlen) ||
	    get_int(o, "max_seq", &c->max_seq, err, errlen) || get_num(o, "rope_theta", &c->rope_theta, err, errlen) ||
	    get_num(o, "norm_eps", &c->norm_eps, err, errlen) || get_int(o, "qk_norm", &c->qk_norm, err, errlen) ||
	    get_int(o, "tie_embeddings", &c->tie_embeddings, err, errlen))
		return -1;
	if (json_is_number(json_object_get(o, "z_loss")))
		c->z_loss = json_number_value(json_object_get(o, "z_loss"));
	if (json_is_number(json_object_get(o, "init_std")))
		c->init_std = json_number_value(json_object_get(o, "init_std"));
	if (json_is_integer(json_object_get(o, "seed")))
		c->seed = (uint64_t)json_integer_value(json_object_get(o, "seed"));
	return rope_from_json(json_object_get(o, "rope_scaling"), c, err, errlen);
}

int ck_config_compare(const llmt_config *a, const llmt_config *b, char *err, size_t errlen)
{
#define CMPI(f) if (a->f != b->f) { ck_fmt(err, errlen, "model " #f ": stored %d, this run %d", a->f, b->f); return 1; }
#define CMPD(f) if (a->f != b->f) { ck_fmt(err, errlen, "model " #f ": stored %g, this run %g", a->f, b->f); return 1; }
	CMPI(vocab_size) CMPI(d_model) CMPI(n_layers) CMPI(n_heads) CMPI(n_kv_heads) CMPI(d_ff)
	CMPI(qk_norm) CMPI(tie_embeddings) CMPD(rope_theta) CMPD(norm_eps)
	if (a->rope_scaling != b->rope_scaling) {
		ck_fmt(err, errlen, "model rope_scaling: stored %s, this run %s", llmt_rope_scaling_name(a->rope_scaling),
		       llmt_rope_scaling_name(b->rope_scaling));
		return 1;
	}
	if (a->rope_scaling == LLMT_ROPE_LLAMA3) {
		CMPD(rope_factor) CMPD(rope_low_freq_factor) CMPD(rope_high_freq_factor) CMPI(rope_original_max)
	}
#undef CMPI
#undef CMPD
	return 0;
}

void ck_manifest_free(ck_manifest *m)
{
	json_decref(m->model);
	free(m->train_json);
	ck_source_free(&m->src);
	memset(m, 0, sizeof *m);
}

#define BAD(...) do { ck_fmt(err, errlen, __VA_ARGS__); rc = LLMT_EXIT_DATA; goto out; } while (0)

static int json_u64(const json_t *x, uint64_t *v)
{
	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return -1;
	*v = (uint64_t)json_integer_value(x);
	return 0;
}

/* Each section's parser below fills its part of m->src and returns 0, or
 * LLMT_EXIT_DATA with the message in err naming the manifest and the bad
 * entry. */
#define FAIL(...) do { ck_fmt(err, errlen, __VA_ARGS__); return LLMT_EXIT_DATA; } while (0)

static int load_header(json_t *root, const char *path, ck_manifest *m, char *err, size_t errlen)
{
	json_error_t je;
	const char *fmt = json_string_value(json_object_get(root, "format"));
	json_t *x;

	if (!fmt || strcmp(fmt, CK_FORMAT) || json_integer_value(json_object_get(root, "version")) != CK_VERSION)
		FAIL("%s: bad manifest: not an %s version %d manifest", path, CK_FORMAT, CK_VERSION);
	x = json_object_get(root, "step");
	if (!json_is_integer(x) || json_integer_value(x) < 0)
		FAIL("%s: bad manifest: step", path);
	m->step = (long)json_integer_value(x);
	m->created_ns = json_integer_value(json_object_get(root, "created_ns"));
	x = json_object_get(root, "generation");
	if (llmt_ckpt_gen_parse(x, &m->generation)) {
		char *v = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT);
		ck_fmt(err, errlen, "%s: bad manifest: generation %.40s: not an integer in 0..%lld", path, v ? v : "?",
		       LLMT_CKPT_GEN_MAX);
		free(v);
		return LLMT_EXIT_DATA;
	}
	if (json_unpack_ex(root, &je, 0, "{s:{s:i, s:i, s:i, s:i}}", "layout", "tp", &m->tp, "pp", &m->pp,
	                   "dp", &m->dp, "world", &m->world) != 0 || m->tp < 1 || m->pp < 1 || m->dp < 1 ||
	    m->world < 1 || m->world % m->tp || (m->world / m->tp) % m->pp || m->world / m->tp / m->pp != m->dp)
		FAIL("%s: bad manifest: layout", path);
	x = json_object_get(root, "replicas_agree");
	m->replicas_agree = json_is_boolean(x) ? json_is_true(x) : -1;
	m->model = json_incref(json_object_get(root, "model"));
	if (!json_is_object(m->model))
		FAIL("%s: bad manifest: model", path);
	x = json_object_get(root, "training");
	m->train_json = json_is_object(x) ? json_dumps(x, JSON_COMPACT) : strdup("{}");
	return 0;
}

/* kinds [{name, dtype}]; their dtypes go to kdt (nkinds entries) */
static int load_kinds(json_t *a, const char *path, ck_source *s, llmt_ckpt_dtype *kdt, char *err, size_t errlen)
{
	for (int i = 0; i < s->nkinds; i++) {
		const char *n = json_string_value(json_object_get(json_array_get(a, i), "name"));
		const char *d = json_string_value(json_object_get(json_array_get(a, i), "dtype"));
		if (!n || strlen(n) >= 32 || !d || ck_dtype_parse(d, &kdt[i]))
			FAIL("%s: bad manifest: kinds[%d]", path, i);
		ck_fmt(s->kinds[i], 32, "%s", n);
	}
	return 0;
}

static int load_tensors(json_t *a, const char *path, ck_source *s, char *err, size_t errlen)
{
	for (int i = 0; i < s->ntensors; i++) {
		ck_tensor *t = &s->tensors[i];
		json_t *o = json_array_get(a, i), *sh = json_object_get(o, "shape");
		const char *n = json_string_value(json_object_get(o, "name"));
		t->ndim = (int)json_array_size(sh);
		if (!n || strlen(n) >= CK_NAME_MAX || t->ndim < 1 || t->ndim > 2)
			FAIL("%s: bad manifest: tensors[%d]", path, i);
		ck_fmt(t->name, sizeof t->name, "%s", n);
		for (int d = 0; d < t->ndim; d++) {
			t->shape[d] = json_integer_value(json_array_get(sh, d));
			if (t->shape[d] <= 0 || t->shape[d] > INT32_MAX)
				FAIL("%s: bad manifest: tensor %s shape", path, n);
		}
		t->rows = t->shape[0];
		t->cols = t->ndim == 2 ? t->shape[1] : 1;
	}
	return 0;
}

static int load_files(json_t *a, const char *path, ck_source *s, char *err, size_t errlen)
{
	for (int i = 0; i < s->nfiles; i++) {
		ck_file *f = &s->files[i];
		json_t *o = json_array_get(a, i);
		const char *n = json_string_value(json_object_get(o, "name"));
		const char *h = json_string_value(json_object_get(o, "xxh3"));
		char *end;
		f->fd = -1;
		if (!n || strlen(n) >= sizeof f->name || strchr(n, '/') || !strcmp(n, "..") ||
		    json_u64(json_object_get(o, "size"), &f->size) || !h || strlen(h) != 16)
			FAIL("%s: bad manifest: files[%d]", path, i);
		ck_fmt(f->name, sizeof f->name, "%s", n);
		f->xxh3 = strtoull(h, &end, 16);
		if (*end)
			FAIL("%s: bad manifest: files[%d].xxh3", path, i);
		f->has_sum = 1;
	}
	return 0;
}

/* pieces: [tensor, kind, file, offset, r0, nr, c0, nc] */
static int load_pieces(json_t *a, const char *path, ck_source *s, const llmt_ckpt_dtype *kdt, char *err,
                       size_t errlen)
{
	for (int i = 0; i < s->npieces; i++) {
		json_t *p = json_array_get(a, i);
		json_int_t v[8];
		if (json_array_size(p) != 8)
			FAIL("%s: bad manifest: pieces[%d]", path, i);
		for (int k = 0; k < 8; k++) {
			if (!json_is_integer(json_array_get(p, k)))
				FAIL("%s: bad manifest: pieces[%d]", path, i);
			v[k] = json_integer_value(json_array_get(p, k));
		}
		if (v[1] < 0 || v[1] >= s->nkinds || v[3] < 0)
			FAIL("%s: bad manifest: pieces[%d]", path, i);
		s->pieces[i] = (ck_piece){ (int)v[0], (int)v[1], (int)v[2], kdt[v[1]], (uint64_t)v[3],
		                           { v[4], v[5], v[6], v[7] } };
	}
	return 0;
}

static int load_blobs(json_t *a, const char *path, ck_source *s, char *err, size_t errlen)
{
	for (int i = 0; i < s->nblobs; i++) {
		ck_blob *b = &s->blobs[i];
		json_t *o = json_array_get(a, i);
		const char *n = json_string_value(json_object_get(o, "name"));
		json_int_t r = json_integer_value(json_object_get(o, "rank"));
		json_int_t f = json_integer_value(json_object_get(o, "file"));
		if (!n || strlen(n) >= sizeof b->name || f < 0 || f >= s->nfiles ||
		    json_u64(json_object_get(o, "offset"), &b->offset) || json_u64(json_object_get(o, "size"), &b->size) ||
		    b->offset + b->size > s->files[f].size)
			FAIL("%s: bad manifest: blobs[%d]", path, i);
		ck_fmt(b->name, sizeof b->name, "%s", n);
		b->rank = (int)r;
		b->file = (int)f;
	}
	return 0;
}

/* Every shard the manifest names is there with the size it says. */
static int check_shard_sizes(const char *dir, const ck_source *s, char *err, size_t errlen)
{
	struct stat st;

	for (int i = 0; i < s->nfiles; i++) {
		char fp[4300];
		ck_fmt(fp, sizeof fp, "%s/%s", dir, s->files[i].name);
		if (stat(fp, &st) != 0) {
			int e = errno;
			ck_fmt(err, errlen, "%s: missing shard: %s", fp, strerror(e));
			/* only an absent shard is the checkpoint's fault (74: retried, not marked bad) */
			return ck_absent(e) ? LLMT_EXIT_DATA : LLMT_EXIT_IO;
		}
		if ((uint64_t)st.st_size != s->files[i].size)
			FAIL("%s: wrong size: %llu bytes, manifest says %llu", fp, (unsigned long long)st.st_size,
			     (unsigned long long)s->files[i].size);
	}
	return 0;
}

/* The array under key k, its size in *n; NULL when k is not an array or,
 * with nonempty, an empty one. */
static json_t *section(json_t *root, const char *k, int nonempty, int *n)
{
	json_t *a = json_object_get(root, k);

	if (!json_is_array(a) || (nonempty && json_array_size(a) == 0))
		return NULL;
	*n = (int)json_array_size(a);
	return a;
}

#define TABLE(n, t) calloc((size_t)(n) + 1, sizeof *(t))

int ck_manifest_load(const char *dir, int check_sizes, ck_manifest *m, char *err, size_t errlen)
{
	char path[4200], e2[512];
	json_error_t je;
	json_t *root = NULL, *a;
	llmt_ckpt_dtype *kdt = NULL;
	ck_source *s = &m->src;
	int rc = 0;
	struct stat st;

	memset(m, 0, sizeof *m);
	ck_fmt(s->dir, sizeof s->dir, "%s", dir);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		ck_fmt(err, errlen, "%s: no such checkpoint directory", dir);
		return LLMT_EXIT_NOINPUT;
	}
	ck_fmt(path, sizeof path, "%s/manifest.json", dir);
	/* an absent manifest or bad bytes are the checkpoint's (65: the
	 * resume's 89, marked bad); a file system that fails to give them
	 * (EIO, ESTALE, EACCES, EMFILE) is 74, retried, never marked bad */
	if (stat(path, &st) != 0) {
		int e = errno;
		ck_fmt(err, errlen, "%s: missing manifest (incomplete checkpoint): %s", path, strerror(e));
		return ck_absent(e) ? LLMT_EXIT_DATA : LLMT_EXIT_IO;
	}
	int mfd = ck_open_ro(path);
	FILE *mf = mfd < 0 ? NULL : fdopen(mfd, "rb");
	if (!mf) {
		int e = errno;
		if (mfd >= 0)
			close(mfd);
		ck_fmt(err, errlen, "%s: cannot open: %s", path, ck_strerror(e));
		return ck_absent(e) ? LLMT_EXIT_DATA : LLMT_EXIT_IO;
	}
	root = json_loadf(mf, JSON_REJECT_DUPLICATES, &je);
	if (ferror(mf)) {
		int e = errno;
		fclose(mf);
		json_decref(root);
		ck_fmt(err, errlen, "%s: read failed: %s", path, strerror(e));
		return e == EISDIR ? LLMT_EXIT_DATA : LLMT_EXIT_IO;
	}
	fclose(mf);
	if (!root)
		BAD("%s: bad manifest: line %d: %s", path, je.line, je.text);
	if ((rc = load_header(root, path, m, err, errlen)))
		goto out;
	if (!(a = section(root, "kinds", 0, &s->nkinds)))
		BAD("%s: bad manifest: kinds", path);
	s->kinds = TABLE(s->nkinds, s->kinds);
	kdt = TABLE(s->nkinds, kdt);
	if ((rc = load_kinds(a, path, s, kdt, err, errlen)))
		goto out;
	if (!(a = section(root, "tensors", 0, &s->ntensors)))
		BAD("%s: bad manifest: tensors", path);
	s->tensors = TABLE(s->ntensors, s->tensors);
	if ((rc = load_tensors(a, path, s, err, errlen)))
		goto out;
	if (!(a = section(root, "files", 1, &s->nfiles)))
		BAD("%s: bad manifest: files", path);
	s->files = TABLE(s->nfiles, s->files);
	if ((rc = load_files(a, path, s, err, errlen)))
		goto out;
	if (!(a = section(root, "pieces", 0, &s->npieces)))
		BAD("%s: bad manifest: pieces", path);
	s->pieces = TABLE(s->npieces, s->pieces);
	if ((rc = load_pieces(a, path, s, kdt, err, errlen)))
		goto out;
	/* blobs may be absent (a checkpoint with no per-rank bytes) */
	a = json_object_get(root, "blobs");
	s->nblobs = (int)json_array_size(a);
	s->blobs = TABLE(s->nblobs, s->blobs);
	if ((rc = load_blobs(a, path, s, err, errlen)))
		goto out;
	if (ck_source_finish(s, e2, sizeof e2))
		BAD("%s: bad manifest: %s", path, e2);
	if (check_sizes)
		rc = check_shard_sizes(dir, s, err, errlen);
out:
	free(kdt);
	json_decref(root);
	if (rc)
		ck_manifest_free(m);
	return rc;
}

int ck_validate_dir(const char *dir, int quick, ck_manifest *m_out, char *err, size_t errlen)
{
	ck_manifest m;
	int rc = ck_manifest_load(dir, 1, &m, err, errlen);

	if (rc)
		return rc;
	if (m.replicas_agree == 0) {
		/* DP replicas wrote different shares of a state that had diverged */
		ck_fmt(err, errlen, "%s: replicas disagreed when it was saved (silent data corruption suspected)", dir);
		ck_manifest_free(&m);
		return LLMT_EXIT_DATA;
	}
	if (!quick) {
		for (int i = 0; i < m.src.nfiles && !rc; i++)
			rc = ck_source_verify_file(&m.src, i, err, errlen);
	}
	if (rc || !m_out)
		ck_manifest_free(&m);
	else
		*m_out = m;
	return rc;
}

typedef struct { char *path; long step; int64_t created; long long gen; } list_ent;

/* newest first: the generation (no clock in it), then the writing host's
 * clock, then the step */
static int cmp_ent(const void *a, const void *b)
{
	const list_ent *x = a, *y = b;

	if (x->gen != y->gen)
		return x->gen > y->gen ? -1 : 1;
	if (x->created != y->created)
		return x->created > y->created ? -1 : 1;
	if (x->step != y->step)
		return x->step > y->step ? -1 : 1;
	return strcmp(x->path, y->path);
}

int ck_list(const char *ckpt_dir, int quick, char ***paths, long **steps,
            ck_report_fn report, void *arg)
{
	return ck_scan(ckpt_dir, quick, paths, steps, report, NULL, arg, NULL);
}

int ck_scan(const char *ckpt_dir, int quick, char ***paths, long **steps,
            ck_report_fn report, ck_report_fn tmp, void *arg, long long *maxgen)
{
	DIR *d = opendir(ckpt_dir);
	struct dirent *de;
	list_ent *v = NULL;
	int n = 0, cap = 0, e = 0;

	*paths = NULL;
	*steps = NULL;
	if (maxgen)
		*maxgen = 0;
	if (!d)
		return -1;
	/* a listing cut short (readdir's error, no memory) is no listing: a
	 * caller must not take the steps it missed for absent */
	for (;;) {
		errno = 0;
		if (!(de = readdir(d))) {
			e = errno;
			break;
		}
		long step;
		char path[4200], err[1024];
		ck_manifest m;
		struct stat st;
		ck_fmt(path, sizeof path, "%s/%s", ckpt_dir, de->d_name);
		/* a save or an import cut short: its temporary step directory */
		if (tmp && !strncmp(de->d_name, ".tmp.step_", 10) && !stat(path, &st) && S_ISDIR(st.st_mode))
			tmp(path, "", arg);
		if (ck_parse_step_name(de->d_name, &step) != 0)
			continue;
		if (ck_validate_dir(path, quick, &m, err, sizeof err) != 0) {
			if (report)
				report(path, err, arg);
			continue;
		}
		if (m.step != step) {
			if (report)
				report(path, "manifest step does not match the directory name", arg);
			ck_manifest_free(&m);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			list_ent *nv = realloc(v, (size_t)cap * sizeof *v);
			if (!nv) {
				ck_manifest_free(&m);
				e = ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = (list_ent){ strdup(path), m.step, m.created_ns, m.generation };
		if (maxgen && m.generation > *maxgen)
			*maxgen = m.generation;
		ck_manifest_free(&m);
	}
	closedir(d);
	if (e) {
		for (int i = 0; i < n; i++)
			free(v[i].path);
		free(v);
		if (maxgen)
			*maxgen = 0;
		errno = e;
		return -1;
	}
	if (n > 0)
		qsort(v, (size_t)n, sizeof *v, cmp_ent);
	*paths = calloc((size_t)n + 1, sizeof **paths);
	*steps = calloc((size_t)n + 1, sizeof **steps);
	for (int i = 0; i < n; i++) {
		(*paths)[i] = v[i].path;
		(*steps)[i] = v[i].step;
	}
	free(v);
	return n;
}

int ck_max_generation(const char *dir, long long *gen)
{
	char **paths;
	long *steps;
	int n = ck_scan(dir, 1, &paths, &steps, NULL, NULL, NULL, gen);

	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(steps);
	return n < 0 ? -1 : 0;
}
