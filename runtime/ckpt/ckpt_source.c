/* ckpt_source.c: a stored set of logical tensors cut into boxes (the shard
 * files of a checkpoint, or a safetensors file) and reading any box of it
 * back, with f32/bf16 conversion and checksum verification of files. */
#include "ckpt_int.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

void ck_source_free(ck_source *s)
{
	for (int i = 0; i < s->nfiles; i++) {
		if (s->files[i].fd >= 0)
			close(s->files[i].fd);
		if (s->files[i].hs)
			XXH3_freeState(s->files[i].hs);
	}
	free(s->files);
	free(s->tensors);
	free(s->kinds);
	free(s->pieces);
	free(s->blobs);
	memset(s, 0, sizeof *s);
}

static int cmp_tensor_name(const void *a, const void *b)
{
	return strcmp(((const ck_tensor *)a)->name, ((const ck_tensor *)b)->name);
}

int ck_source_find_tensor(const ck_source *s, const char *name)
{
	ck_tensor key;
	const ck_tensor *t;

	ck_fmt(key.name, sizeof key.name, "%s", name);
	t = bsearch(&key, s->tensors, (size_t)s->ntensors, sizeof key, cmp_tensor_name);
	return t ? (int)(t - s->tensors) : -1;
}

int ck_source_find_kind(const ck_source *s, const char *kind)
{
	for (int i = 0; i < s->nkinds; i++)
		if (!strcmp(s->kinds[i], kind))
			return i;
	return -1;
}

static int cmp_piece(const void *a, const void *b)
{
	const ck_piece *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->tensor != y->tensor)
		return x->tensor < y->tensor ? -1 : 1;
	if (x->box.r0 != y->box.r0)
		return x->box.r0 < y->box.r0 ? -1 : 1;
	if (x->box.c0 != y->box.c0)
		return x->box.c0 < y->box.c0 ? -1 : 1;
	return 0;
}

typedef struct { ck_tensor t; int old; } tensor_ix;

static int cmp_tix(const void *a, const void *b)
{
	return strcmp(((const tensor_ix *)a)->t.name, ((const tensor_ix *)b)->t.name);
}

int ck_source_finish(ck_source *s, char *err, size_t errlen)
{
	tensor_ix *ix = calloc((size_t)s->ntensors + 1, sizeof *ix);
	int *map = calloc((size_t)s->ntensors + 1, sizeof *map);

	if (!ix || !map) {
		free(ix);
		free(map);
		ck_fmt(err, errlen, "out of memory");
		return LLMT_EXIT_SOFTWARE;
	}
	for (int i = 0; i < s->ntensors; i++)
		ix[i] = (tensor_ix){ s->tensors[i], i };
	qsort(ix, (size_t)s->ntensors, sizeof *ix, cmp_tix);
	for (int i = 0; i < s->ntensors; i++) {
		if (i > 0 && !strcmp(ix[i].t.name, ix[i - 1].t.name)) {
			ck_fmt(err, errlen, "tensor %s listed twice", ix[i].t.name);
			free(ix);
			free(map);
			return LLMT_EXIT_DATA;
		}
		s->tensors[i] = ix[i].t;
		map[ix[i].old] = i;
	}
	for (int i = 0; i < s->npieces; i++) {
		ck_piece *p = &s->pieces[i];
		if (p->tensor < 0 || p->tensor >= s->ntensors || p->kind < 0 || p->kind >= s->nkinds ||
		    p->file < 0 || p->file >= s->nfiles) {
			ck_fmt(err, errlen, "piece %d: index out of range", i);
			free(ix);
			free(map);
			return LLMT_EXIT_DATA;
		}
		p->tensor = map[p->tensor];
	}
	free(ix);
	free(map);
	qsort(s->pieces, (size_t)s->npieces, sizeof *s->pieces, cmp_piece);
	for (int i = 0; i < s->npieces;) {
		const ck_piece *g = &s->pieces[i];
		const ck_tensor *t = &s->tensors[g->tensor];
		int j = i, rc;
		for (; j < s->npieces && s->pieces[j].kind == g->kind && s->pieces[j].tensor == g->tensor; j++) {
			const ck_piece *p = &s->pieces[j];
			const ck_box *b = &p->box;
			if (b->r0 < 0 || b->nr <= 0 || b->c0 < 0 || b->nc <= 0 ||
			    b->r0 > t->rows - b->nr || b->c0 > t->cols - b->nc) {
				ck_fmt(err, errlen, "tensor %s (%s): piece outside the tensor", t->name, s->kinds[p->kind]);
				return LLMT_EXIT_DATA;
			}
			uint64_t nb = (uint64_t)(b->nr * b->nc) * ck_dtype_size(p->dtype);
			if (nb > s->files[p->file].size || p->offset > s->files[p->file].size - nb) {
				ck_fmt(err, errlen, "tensor %s (%s): piece beyond the end of %s", t->name,
				         s->kinds[p->kind], s->files[p->file].name);
				return LLMT_EXIT_DATA;
			}
		}
		if ((rc = ck_cover_check(s, g, j - i, err, errlen)))
			return rc;
		i = j;
	}
	return 0;
}

static int open_file(ck_source *s, int f, char *err, size_t errlen)
{
	char path[4200];

	if (s->files[f].fd >= 0)
		return 0;
	ck_fmt(path, sizeof path, "%s/%s", s->dir, s->files[f].name);
	s->files[f].fd = ck_open_ro(path);
	if (s->files[f].fd < 0) {
		int e = errno;   /* open's: formatting the message may change errno */
		ck_fmt(err, errlen, "%s: %s: %s", path, ck_absent(e) && e != EINVAL ? "missing shard" : "cannot open",
		       ck_strerror(e));
		return ck_absent(e) ? LLMT_EXIT_DATA : LLMT_EXIT_IO;
	}
	return 0;
}

int ck_source_track(ck_source *s, int i)
{
	ck_file *f = &s->files[i];

	if (f->hs)
		return 0;
	if (!(f->hs = XXH3_createState()))
		return -1;
	XXH3_64bits_reset(f->hs);
	f->hashed = 0;
	return 0;
}

/* raw bytes [off, off+n) of file i were read into buf */
static void tracked(ck_source *s, int i, const void *buf, size_t n, uint64_t off)
{
	ck_file *f = &s->files[i];

	if (f->hs && off == f->hashed) {
		XXH3_64bits_update(f->hs, buf, n);
		f->hashed += n;
	}
}

static int read_err(const ck_source *s, int f, int rc, uint64_t off, char *err, size_t errlen)
{
	if (rc == -2) {
		ck_fmt(err, errlen, "%s/%s: truncated (short read at offset %llu)", s->dir, s->files[f].name,
		         (unsigned long long)off);
		return LLMT_EXIT_DATA;
	}
	ck_fmt(err, errlen, "%s/%s: read failed: %s", s->dir, s->files[f].name, strerror(errno));
	return LLMT_EXIT_IO;
}

/* Copy the intersection `in` of piece p into dst, a row-major box db of
 * type dt. */
static int copy_inter(ck_source *s, const ck_piece *p, const ck_box *in, void *dst,
                      const ck_box *db, llmt_ckpt_dtype dt, char *err, size_t errlen)
{
	enum { CHUNK = 32 << 20 };
	const ck_box *sb = &p->box;
	size_t ses = ck_dtype_size(p->dtype), des = ck_dtype_size(dt);
	int fd, rc;
	char *tmp = NULL;

	if ((rc = open_file(s, p->file, err, errlen)) != 0)
		return rc;
	fd = s->files[p->file].fd;
	if (in->nc == sb->nc && in->nc == db->nc) {
		/* rows contiguous in both: whole row blocks */
		int64_t rows_per = CHUNK / (int64_t)(in->nc * (int64_t)ses);
		if (rows_per < 1)
			rows_per = 1;
		for (int64_t r = in->r0; r < in->r0 + in->nr; r += rows_per) {
			int64_t nr = in->r0 + in->nr - r < rows_per ? in->r0 + in->nr - r : rows_per;
			size_t n = (size_t)(nr * in->nc);
			uint64_t off = p->offset + (uint64_t)((r - sb->r0) * sb->nc) * ses;
			char *d = (char *)dst + (size_t)((r - db->r0) * db->nc) * des;
			if (p->dtype == dt) {
				rc = ck_pread_all(fd, d, n * ses, off);
				if (rc == 0)
					tracked(s, p->file, d, n * ses, off);
			} else {
				if (!tmp && !(tmp = malloc(CHUNK > n * ses ? CHUNK : n * ses)))
					return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
				rc = ck_pread_all(fd, tmp, n * ses, off);
				if (rc == 0) {
					tracked(s, p->file, tmp, n * ses, off);
					ck_convert(d, dt, tmp, p->dtype, n);
				}
			}
			if (rc != 0) {
				free(tmp);
				return read_err(s, p->file, rc, off, err, errlen);
			}
		}
		free(tmp);
		return 0;
	}
	/* partial rows: read each row's slice (or row spans when the slice is
	 * most of the stored row) and place it */
	int span = in->nc * 4 >= sb->nc;
	size_t rowbytes = (size_t)(span ? sb->nc : in->nc) * ses;
	int64_t rows_per = span ? (int64_t)(CHUNK / rowbytes) : 1;
	if (rows_per < 1)
		rows_per = 1;
	tmp = malloc(rowbytes * (size_t)rows_per);
	if (!tmp)
		return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
	for (int64_t r = in->r0; r < in->r0 + in->nr; r += rows_per) {
		int64_t nr = in->r0 + in->nr - r < rows_per ? in->r0 + in->nr - r : rows_per;
		uint64_t off = p->offset + (uint64_t)((r - sb->r0) * sb->nc + (span ? 0 : in->c0 - sb->c0)) * ses;
		rc = ck_pread_all(fd, tmp, rowbytes * (size_t)nr, off);
		if (rc != 0) {
			free(tmp);
			return read_err(s, p->file, rc, off, err, errlen);
		}
		tracked(s, p->file, tmp, rowbytes * (size_t)nr, off);
		for (int64_t k = 0; k < nr; k++) {
			const char *src = tmp + rowbytes * (size_t)k + (span ? (size_t)(in->c0 - sb->c0) * ses : 0);
			char *d = (char *)dst + (size_t)((r + k - db->r0) * db->nc + (in->c0 - db->c0)) * des;
			ck_convert(d, dt, src, p->dtype, (size_t)in->nc);
		}
	}
	free(tmp);
	return 0;
}

/* Fill box db (row-major at dst, type dt) of tensor t, kind k. */
static int fill_box(ck_source *s, int k, int t, const ck_box *db, void *dst, llmt_ckpt_dtype dt,
                    char *err, size_t errlen)
{
	ck_piece key = { .kind = k, .tensor = t, .box = { -1, 0, -1, 0 } };
	int lo = 0, hi = s->npieces;
	int64_t got = 0;

	while (lo < hi) {   /* first piece of (k, t) */
		int mid = (lo + hi) / 2;
		if (cmp_piece(&s->pieces[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int i = lo; i < s->npieces && s->pieces[i].kind == k && s->pieces[i].tensor == t; i++) {
		ck_box in;
		int rc;
		if (!ck_box_intersect(&s->pieces[i].box, db, &in))
			continue;
		if ((rc = copy_inter(s, &s->pieces[i], &in, dst, db, dt, err, errlen)) != 0)
			return rc;
		got += in.nr * in.nc;
	}
	if (got != db->nr * db->nc) {
		ck_fmt(err, errlen, "%s: tensor %s (%s) rows %lld+%lld cols %lld+%lld not stored",
		         s->dir, s->tensors[t].name, s->kinds[k], (long long)db->r0, (long long)db->nr,
		         (long long)db->c0, (long long)db->nc);
		return LLMT_EXIT_DATA;
	}
	return 0;
}

int ck_source_fill(ck_source *s, int kind, const llmt_param_info *params,
                   const ck_cut *cuts, int ncuts, const llmt_ckpt_buf *b,
                   char *err, size_t errlen)
{
	size_t es = ck_dtype_size(b->dtype);

	for (int i = 0; i < ncuts; i++) {
		const llmt_param_info *p = &params[cuts[i].param];
		int64_t R, C;
		ck_box full;
		int t = ck_source_find_tensor(s, p->name), rc;

		if (t < 0) {
			ck_fmt(err, errlen, "%s: checkpoint has no tensor %s", s->dir, p->name);
			return LLMT_EXIT_DATA;
		}
		ck_param_box(p, &R, &C, &full);
		if (R != s->tensors[t].rows || C != s->tensors[t].cols) {
			ck_fmt(err, errlen, "%s: tensor %s is %lldx%lld in the checkpoint, %lldx%lld in the model",
			         s->dir, p->name, (long long)s->tensors[t].rows, (long long)s->tensors[t].cols,
			         (long long)R, (long long)C);
			return LLMT_EXIT_USAGE;
		}
		rc = fill_box(s, kind, t, &cuts[i].box, (char *)b->data + cuts[i].at * es, b->dtype, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int ck_source_read_tensor(ck_source *s, int kind, int tensor, void *dst,
                          llmt_ckpt_dtype dt, char *err, size_t errlen)
{
	ck_box all = { 0, s->tensors[tensor].rows, 0, s->tensors[tensor].cols };

	return fill_box(s, kind, tensor, &all, dst, dt, err, errlen);
}

int ck_source_verify_file(ck_source *s, int i, char *err, size_t errlen)
{
	enum { CHUNK = 8 << 20 };
	ck_file *f = &s->files[i];
	uint64_t h, size;
	int rc;

	if ((rc = open_file(s, i, err, errlen)) != 0)
		return rc;
	if (f->hs) {
		/* finish the hash of a file read front to back */
		char *buf = malloc(CHUNK);
		ssize_t r = 0;
		if (!buf)
			return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
		int e = 0;
		while ((r = pread(f->fd, buf, CHUNK, (off_t)f->hashed)) != 0) {
			if (r < 0 && (e = errno) == EINTR)
				continue;
			if (r < 0)
				break;
			XXH3_64bits_update(f->hs, buf, (size_t)r);
			f->hashed += (uint64_t)r;
		}
		free(buf);
		if (r < 0) {
			ck_fmt(err, errlen, "%s/%s: read failed: %s", s->dir, f->name, strerror(e));
			return LLMT_EXIT_IO;
		}
		h = XXH3_64bits_digest(f->hs);
		size = f->hashed;
		XXH3_freeState(f->hs);
		f->hs = NULL;
	} else if (ck_hash_file(f->fd, &h, &size) != 0) {
		ck_fmt(err, errlen, "%s/%s: read failed: %s", s->dir, f->name, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (size != f->size) {
		ck_fmt(err, errlen, "%s/%s: wrong size: %llu bytes, manifest says %llu", s->dir,
		       f->name, (unsigned long long)size, (unsigned long long)f->size);
		return LLMT_EXIT_DATA;
	}
	if (f->has_sum && h != f->xxh3) {
		ck_fmt(err, errlen, "%s/%s: wrong checksum: xxh3 %016llx, manifest says %016llx", s->dir,
		       f->name, (unsigned long long)h, (unsigned long long)f->xxh3);
		return LLMT_EXIT_DATA;
	}
	return 0;
}
