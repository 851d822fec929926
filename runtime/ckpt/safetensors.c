/* safetensors.c: writing and reading the safetensors format by hand: it is
 * a length-prefixed JSON header (jansson) and raw little-endian tensors;
 * Debian ships no C library for it. Reading maps each tensor to one stored
 * piece of a ck_source, so the checkpoint loader does the rest. */
#include "safetensors.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *st_dtype(llmt_ckpt_dtype t)
{
	return t == LLMT_CKPT_BF16 ? "BF16" : t == LLMT_CKPT_F16 ? "F16" : "F32";
}

static void put_le64(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

int st_write(const char *path, const st_tensor *t, int n, st_fill_fn fill, void *arg,
             char *err, size_t errlen)
{
	json_t *hdr = json_object();
	char tmp[4300], *txt = NULL, *buf = NULL;
	size_t hlen, cap = 0;
	uint64_t off = 0;
	unsigned char len8[8];
	int fd = -1, rc = 0;

	json_object_set_new(hdr, "__metadata__", json_pack("{s:s}", "format", "pt"));
	for (int i = 0; i < n; i++) {
		uint64_t bytes = (uint64_t)t[i].shape[0] * (t[i].ndim == 2 ? (uint64_t)t[i].shape[1] : 1) *
		                 ck_dtype_size(t[i].dtype);
		json_t *sh = t[i].ndim == 2 ? json_pack("[I, I]", (json_int_t)t[i].shape[0], (json_int_t)t[i].shape[1])
		                            : json_pack("[I]", (json_int_t)t[i].shape[0]);
		json_object_set_new(hdr, t[i].name, json_pack("{s:s, s:o, s:[I, I]}", "dtype", st_dtype(t[i].dtype),
		                                               "shape", sh, "data_offsets", (json_int_t)off,
		                                               (json_int_t)(off + bytes)));
		off += bytes;
		if (bytes > cap)
			cap = bytes;
	}
	txt = json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(hdr);
	if (!txt)
		return ck_fmt(err, errlen, "%s: cannot build the header", path), LLMT_EXIT_SOFTWARE;
	hlen = strlen(txt);
	size_t padded = (hlen + 7) & ~(size_t)7;
	char *h2 = realloc(txt, padded + 1);
	if (!h2) {
		free(txt);
		return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
	}
	txt = h2;
	memset(txt + hlen, ' ', padded - hlen);
	put_le64(len8, padded);
	ck_fmt(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ck_fmt(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
		free(txt);
		return LLMT_EXIT_IO;
	}
	if (ck_write_all(fd, len8, 8) || ck_write_all(fd, txt, padded)) {
		ck_fmt(err, errlen, "%s: write failed: %s", tmp, strerror(errno));
		rc = LLMT_EXIT_IO;
	}
	free(txt);
	if (!rc && !(buf = malloc(cap ? cap : 1))) {
		ck_fmt(err, errlen, "out of memory");
		rc = LLMT_EXIT_SOFTWARE;
	}
	for (int i = 0; i < n && !rc; i++) {
		size_t bytes = (size_t)t[i].shape[0] * (t[i].ndim == 2 ? (size_t)t[i].shape[1] : 1) *
		               ck_dtype_size(t[i].dtype);
		if ((rc = fill(i, buf, arg, err, errlen)) != 0)
			break;
		if (ck_write_all(fd, buf, bytes)) {
			ck_fmt(err, errlen, "%s: write failed: %s", tmp, strerror(errno));
			rc = LLMT_EXIT_IO;
		}
	}
	free(buf);
	if (!rc && fsync(fd) != 0) {
		ck_fmt(err, errlen, "%s: fsync failed: %s", tmp, strerror(errno));
		rc = LLMT_EXIT_IO;
	}
	close(fd);
	if (!rc && rename(tmp, path) != 0) {
		ck_fmt(err, errlen, "%s: rename failed: %s", path, strerror(errno));
		rc = LLMT_EXIT_IO;
	}
	if (rc)
		unlink(tmp);
	return rc;
}

/* Opens SHARD and parses its JSON header: the object in *root, its length
 * in *hlen, the file's size in *fsize and the open descriptor in *fd. */
static int st_open(const char *path, int *fd, json_t **root, uint64_t *hlen, uint64_t *fsize, char *err,
                   size_t errlen)
{
	unsigned char len8[8];
	json_error_t je;
	struct stat sb;
	char *hdr;

	*fd = ck_open_ro(path);
	if (*fd < 0) {
		int e = errno;   /* open's: formatting the message may change errno */
		ck_fmt(err, errlen, "%s: %s", path, ck_strerror(e));
		return e == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_IO;
	}
	if (fstat(*fd, &sb) != 0 || ck_pread_all(*fd, len8, 8, 0) != 0 ||
	    (*hlen = get_le64(len8)) == 0 || *hlen > (100u << 20) || 8 + *hlen > (uint64_t)sb.st_size) {
		ck_fmt(err, errlen, "%s: not a safetensors file (bad header length)", path);
		goto bad;
	}
	*fsize = (uint64_t)sb.st_size;
	hdr = malloc(*hlen + 1);
	if (!hdr || ck_pread_all(*fd, hdr, *hlen, 8) != 0) {
		ck_fmt(err, errlen, "%s: cannot read the header", path);
		free(hdr);
		goto bad;
	}
	hdr[*hlen] = 0;
	*root = json_loads(hdr, JSON_REJECT_DUPLICATES, &je);
	free(hdr);
	if (json_is_object(*root))
		return 0;
	ck_fmt(err, errlen, "%s: bad header JSON: %s", path, je.text);
	json_decref(*root);
bad:
	close(*fd);
	return LLMT_EXIT_DATA;
}

/* Adds the shard as a file of s (which owns fd from then on) and finds or
 * adds the "weights" kind; the file's index in *file, the kind's in *kind. */
static int st_add_file(ck_source *s, const char *name, int fd, uint64_t size, int *file, int *kind, char *err,
                       size_t errlen)
{
	ck_file *nf = realloc(s->files, (size_t)(s->nfiles + 1) * sizeof *nf);

	if (!nf) {
		close(fd);
		return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
	}
	s->files = nf;
	*file = s->nfiles++;
	memset(&s->files[*file], 0, sizeof *nf);
	ck_fmt(s->files[*file].name, sizeof s->files[*file].name, "%s", name);
	s->files[*file].size = size;
	s->files[*file].fd = fd;
	*kind = ck_source_find_kind(s, "weights");
	if (*kind < 0) {
		char (*nk)[32] = realloc(s->kinds, (size_t)(s->nkinds + 1) * sizeof *nk);
		if (!nk)
			return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
		s->kinds = nk;
		ck_fmt(s->kinds[s->nkinds], 32, "weights");
		*kind = s->nkinds++;
	}
	return 0;
}

/* One header entry KEY: VAL of a shard whose data starts at byte base and
 * that has fsize bytes: checked, then added as a tensor and its piece. */
static int st_add_entry(ck_source *s, const char *path, const char *key, json_t *val, int file, int kind,
                        uint64_t base, uint64_t fsize, char *err, size_t errlen)
{
	const char *dt = json_string_value(json_object_get(val, "dtype"));
	json_t *sh = json_object_get(val, "shape"), *of = json_object_get(val, "data_offsets");
	llmt_ckpt_dtype t;
	ck_tensor tn = { 0 };
	int64_t b, e;

	if (strlen(key) >= CK_NAME_MAX || !dt || !json_is_array(sh) || json_array_size(of) != 2)
		return ck_fmt(err, errlen, "%s: tensor %s: bad header entry", path, key), LLMT_EXIT_DATA;
	if (strcmp(dt, "F32") && strcmp(dt, "BF16") && strcmp(dt, "F16"))
		return ck_fmt(err, errlen, "%s: tensor %s: dtype %s not supported (F32, BF16, F16 are)", path, key, dt),
		       LLMT_EXIT_DATA;
	ck_dtype_parse(dt, &t);
	tn.ndim = (int)json_array_size(sh);
	if (tn.ndim < 1 || tn.ndim > 2)
		return ck_fmt(err, errlen, "%s: tensor %s: %d dimensions (1 or 2 supported)", path, key, tn.ndim),
		       LLMT_EXIT_DATA;
	for (int d = 0; d < tn.ndim; d++)
		tn.shape[d] = json_integer_value(json_array_get(sh, d));
	tn.rows = tn.shape[0];
	tn.cols = tn.ndim == 2 ? tn.shape[1] : 1;
	b = json_integer_value(json_array_get(of, 0));
	e = json_integer_value(json_array_get(of, 1));
	if (tn.rows <= 0 || tn.cols <= 0 || tn.rows > INT32_MAX || tn.cols > INT32_MAX || b < 0 || e < b ||
	    e - b != tn.rows * tn.cols * (int64_t)ck_dtype_size(t) || base + (uint64_t)e > fsize)
		return ck_fmt(err, errlen, "%s: tensor %s: shape and data_offsets disagree or exceed the file", path, key),
		       LLMT_EXIT_DATA;
	ck_fmt(tn.name, sizeof tn.name, "%s", key);
	ck_tensor *nt = realloc(s->tensors, (size_t)(s->ntensors + 1) * sizeof *nt);
	if (nt)
		s->tensors = nt;
	ck_piece *np = realloc(s->pieces, (size_t)(s->npieces + 1) * sizeof *np);
	if (np)
		s->pieces = np;
	if (!nt || !np)
		return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
	s->tensors[s->ntensors] = tn;
	s->pieces[s->npieces++] = (ck_piece){ s->ntensors, kind, file, t, base + (uint64_t)b, { 0, tn.rows, 0, tn.cols } };
	s->ntensors++;
	return 0;
}

int st_read_header(ck_source *s, const char *name, char *err, size_t errlen)
{
	char path[4300];
	json_t *root, *val;
	uint64_t hlen, fsize;
	int fd, rc, kind, file;
	const char *key;

	ck_fmt(path, sizeof path, "%s/%s", s->dir, name);
	if ((rc = st_open(path, &fd, &root, &hlen, &fsize, err, errlen)))
		return rc;
	if ((rc = st_add_file(s, name, fd, fsize, &file, &kind, err, errlen))) {
		json_decref(root);
		return rc;
	}
	json_object_foreach(root, key, val) {
		if (rc)
			break;
		if (strcmp(key, "__metadata__"))
			rc = st_add_entry(s, path, key, val, file, kind, 8 + hlen, fsize, err, errlen);
	}
	json_decref(root);
	return rc;
}

int st_open_dir(const char *hfdir, ck_source *s, char *err, size_t errlen)
{
	char path[4300];
	struct stat sb;
	int rc;

	memset(s, 0, sizeof *s);
	ck_fmt(s->dir, sizeof s->dir, "%s", hfdir);
	ck_fmt(path, sizeof path, "%s/model.safetensors", hfdir);
	if (stat(path, &sb) == 0) {
		rc = st_read_header(s, "model.safetensors", err, errlen);
	} else {
		json_error_t je;
		json_t *idx, *map, *v;
		const char *k;
		ck_fmt(path, sizeof path, "%s/model.safetensors.index.json", hfdir);
		idx = json_load_file(path, 0, &je);
		if (!idx) {
			ck_fmt(err, errlen, "%s: neither model.safetensors nor model.safetensors.index.json", hfdir);
			return LLMT_EXIT_NOINPUT;
		}
		map = json_object_get(idx, "weight_map");
		rc = json_is_object(map) ? 0 : LLMT_EXIT_DATA;
		if (rc)
			ck_fmt(err, errlen, "%s: no weight_map", path);
		json_object_foreach(map, k, v) {
			const char *f = json_string_value(v);
			int seen = 0;
			if (rc)
				break;
			if (!f || strchr(f, '/') || strlen(f) >= 64) {
				ck_fmt(err, errlen, "%s: bad file name for %s", path, k);
				rc = LLMT_EXIT_DATA;
				break;
			}
			for (int i = 0; i < s->nfiles; i++)
				seen |= !strcmp(s->files[i].name, f);
			if (!seen)
				rc = st_read_header(s, f, err, errlen);
		}
		json_decref(idx);
	}
	if (!rc)
		rc = ck_source_finish(s, err, errlen);
	if (rc)
		ck_source_free(s);
	return rc;
}
