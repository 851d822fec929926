/* ckpt_read.c: opening a checkpoint (resolve a CKPT_DIR to its newest
 * valid step, parse the manifest) and loading this rank's buffers under
 * any layout, with the shard checksums verified by the ranks together. */
#include "ckpt_int.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

struct llmt_ckpt {
	ck_manifest m;
	llmt_config cfg;
	int has_cfg;
};

/* The names of what is not a complete checkpoint, comma-separated. */
typedef struct { char *buf; size_t len; int n; } inc_list;

static void inc_add(inc_list *l, const char *name)
{
	size_t u = strlen(l->buf);

	if (u + strlen(name) + 8 < l->len)
		ck_fmt(l->buf + u, l->len - u, "%s%s", l->n ? ", " : "", name);
	else if (u + 6 < l->len && !strstr(l->buf, ", ..."))
		ck_fmt(l->buf + u, l->len - u, ", ...");
	l->n++;
}

static void inc_report(const char *path, const char *why, void *arg)
{
	const char *slash = strrchr(path, '/');

	(void)why;
	inc_add(arg, slash ? slash + 1 : path);
}

int llmt_ckpt_scan(const char *dir, char *newest, size_t nlen, char *names, size_t len, int *ninc,
                   long long *maxgen)
{
	inc_list l = { names, len, 0 };
	char **paths;
	long *steps;
	int n;

	names[0] = '\0';
	newest[0] = '\0';
	n = ck_scan(dir, 1, &paths, &steps, inc_report, inc_report, &l, maxgen);
	int e = errno;
	if (n > 0)
		ck_fmt(newest, nlen, "%s", paths[0]);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(steps);
	*ninc = l.n;
	errno = e;   /* ck_scan's when it could not list dir */
	return n;
}

/* Whether dir is a step directory rather than a CKPT_DIR: named step_N
 * (the wrapper's choice, a save's), or holding a shard file. */
static int is_step_dir(const char *dir)
{
	char name[4096];
	size_t n;
	long step;
	struct dirent *de;
	DIR *d;
	int shard = 0;

	ck_fmt(name, sizeof name, "%s", dir);
	for (n = strlen(name); n > 1 && name[n - 1] == '/'; n--)
		name[n - 1] = '\0';
	const char *base = strrchr(name, '/');
	if (ck_parse_step_name(base ? base + 1 : name, &step) == 0)
		return 1;
	if (!(d = opendir(dir)))
		return 0;
	while (!shard && (de = readdir(d)))
		shard = !strncmp(de->d_name, "rank_", 5);
	closedir(d);
	return shard;
}

int llmt_ckpt_resolve(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char p[4300], inc[1024];
	struct stat st;
	int ninc, n;

	ck_fmt(p, sizeof p, "%s/manifest.json", path);
	/* a step directory, even one whose manifest is gone or unreadable:
	 * opening it says which (65: a broken checkpoint, 74: the file system),
	 * never "no checkpoint" (66) as for an empty CKPT_DIR */
	if (stat(p, &st) == 0 || !ck_absent(errno) || (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && is_step_dir(path))) {
		ck_fmt(out, outlen, "%s", path);
		return 0;
	}
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		ck_fmt(err, errlen, "%s: no such checkpoint directory", path);
		return LLMT_EXIT_NOINPUT;
	}
	/* the newest complete one, not `latest`: a crash between the rename of
	 * a step directory and the swap of `latest` leaves `latest` behind */
	if ((n = llmt_ckpt_scan(path, out, outlen, inc, sizeof inc, &ninc, NULL)) > 0)
		return 0;
	if (n < 0) {
		/* steps it could not see are not absent ones */
		ck_fmt(err, errlen, "%s: cannot list the checkpoint directory: %s", path, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (ninc > 0)
		ck_fmt(err, errlen, "%s: no complete checkpoint (incomplete: %s)", path, inc);
	else
		ck_fmt(err, errlen, "%s: no complete checkpoint", path);
	return LLMT_EXIT_NOINPUT;
}

llmt_ckpt *llmt_ckpt_open(const char *stepdir, int *code, char *err, size_t errlen)
{
	llmt_ckpt *c = calloc(1, sizeof *c);
	char e2[512];

	if (!c) {
		*code = LLMT_EXIT_SOFTWARE;
		ck_fmt(err, errlen, "out of memory");
		return NULL;
	}
	*code = ck_manifest_load(stepdir, 1, &c->m, err, errlen);
	if (*code) {
		free(c);
		return NULL;
	}
	if (c->m.replicas_agree == 0) {
		ck_fmt(err, errlen, "%s: replicas disagreed when it was saved (silent data corruption suspected)",
		       stepdir);
		*code = LLMT_EXIT_DATA;
		ck_manifest_free(&c->m);
		free(c);
		return NULL;
	}
	if (ck_config_from_json(c->m.model, &c->cfg, e2, sizeof e2) != 0) {
		ck_fmt(err, errlen, "%s/manifest.json: bad manifest: %s", stepdir, e2);
		*code = LLMT_EXIT_DATA;
		ck_manifest_free(&c->m);
		free(c);
		return NULL;
	}
	c->has_cfg = 1;
	return c;
}

void llmt_ckpt_close(llmt_ckpt *c)
{
	if (!c)
		return;
	ck_manifest_free(&c->m);
	free(c);
}

void llmt_ckpt_layout(const llmt_ckpt *c, int *tp, int *pp, int *dp, int *world)
{
	if (tp)
		*tp = c->m.tp;
	if (pp)
		*pp = c->m.pp;
	if (dp)
		*dp = c->m.dp;
	if (world)
		*world = c->m.world;
}

const char *llmt_ckpt_train_json(const llmt_ckpt *c)
{
	return c->m.train_json ? c->m.train_json : "{}";
}

int llmt_ckpt_config(const llmt_ckpt *c, llmt_config *cfg)
{
	*cfg = c->cfg;
	return 0;
}

int llmt_ckpt_check_config(const llmt_ckpt *c, const llmt_config *cfg, char *err, size_t errlen)
{
	char e2[512];

	if (ck_config_compare(&c->cfg, cfg, e2, sizeof e2) != 0) {
		ck_fmt(err, errlen, "%s: incompatible checkpoint: %s", c->m.src.dir, e2);
		return LLMT_EXIT_USAGE;
	}
	return 0;
}

int llmt_ckpt_blob_get(const llmt_ckpt *c, const char *name, int rank,
                       void **data, size_t *len, char *err, size_t errlen)
{
	const ck_source *s = &c->m.src;

	for (int i = 0; i < s->nblobs; i++) {
		const ck_blob *b = &s->blobs[i];
		char path[4200];
		FILE *f;
		if (strcmp(b->name, name) || b->rank != rank)
			continue;
		ck_fmt(path, sizeof path, "%s/%s", s->dir, s->files[b->file].name);
		*data = malloc(b->size ? b->size : 1);
		if (!*data) {
			ck_fmt(err, errlen, "out of memory");
			return LLMT_EXIT_SOFTWARE;
		}
		errno = 0;
		int bfd = ck_open_ro(path);
		f = bfd < 0 ? NULL : fdopen(bfd, "rb");
		if (!f && bfd >= 0)
			close(bfd);
		if (!f || fseeko(f, (off_t)b->offset, SEEK_SET) != 0 || fread(*data, 1, b->size, f) != b->size) {
			/* absent, or shorter than the manifest says: the checkpoint's;
			 * a read the file system refused: 74 */
			int e = errno, io = f ? ferror(f) && e != 0 : !ck_absent(e);
			ck_fmt(err, errlen, "%s: cannot read blob %s: %s", path, name,
			       !f || io ? ck_strerror(e) : "short read");
			if (f)
				fclose(f);
			free(*data);
			*data = NULL;
			return io ? LLMT_EXIT_IO : LLMT_EXIT_DATA;
		}
		fclose(f);
		*len = b->size;
		return 0;
	}
	/* the manifest lists no such blob: the checkpoint lacks a piece */
	ck_fmt(err, errlen, "%s: incomplete checkpoint: no blob %s of rank %d", s->dir, name, rank);
	return LLMT_EXIT_DATA;
}

static int load_local(llmt_ckpt *c, const llmt_ckpt_state *st, char *err, size_t errlen)
{
	ck_source *s = &c->m.src;
	int rc;

	if (st->config && (rc = llmt_ckpt_check_config(c, st->config, err, errlen)) != 0)
		return rc;
	for (int f = st->rank; f < s->nfiles; f += st->world)
		if (ck_source_track(s, f) != 0)
			return ck_fmt(err, errlen, "out of memory"), LLMT_EXIT_SOFTWARE;
	for (int k = 0; k < st->nbufs; k++) {
		const llmt_ckpt_buf *b = &st->bufs[k];
		ck_cut *cuts;
		int kind = ck_source_find_kind(s, b->kind), n;
		if (kind < 0) {
			if (b->optional)
				continue;
			ck_fmt(err, errlen, "%s: checkpoint has no %s state", s->dir, b->kind);
			return LLMT_EXIT_DATA;
		}
		if (b->lo > b->hi || b->hi > st->nflat) {
			ck_fmt(err, errlen, "checkpoint buffer %s: bad range", b->kind);
			return LLMT_EXIT_SOFTWARE;
		}
		n = ck_cut_range(st->params, st->nparams, b->lo, b->hi, 0, &cuts, err, errlen);
		if (n < 0)
			return LLMT_EXIT_SOFTWARE;
		rc = ck_source_fill(s, kind, st->params, cuts, n, b, err, errlen);
		free(cuts);
		if (rc)
			return rc;
	}
	/* every shard file's checksum, spread over the ranks */
	for (int f = st->rank; f < s->nfiles; f += st->world)
		if ((rc = ck_source_verify_file(s, f, err, errlen)) != 0)
			return rc;
	return 0;
}

int llmt_ckpt_load(llmt_ckpt *c, const llmt_ckpt_state *st, char *err, size_t errlen)
{
	int rc;
	double worst;

	if (st->world < 1 || st->rank < 0 || st->rank >= st->world) {
		ck_fmt(err, errlen, "checkpoint load: bad layout");
		return LLMT_EXIT_SOFTWARE;
	}
	rc = load_local(c, st, err, errlen);
	if (!st->world_comm)
		return rc;
	worst = rc;
	if (llmt_comm_allreduce_max_f64(st->world_comm, &worst, 1) != 0) {
		ck_fmt(err, errlen, "checkpoint load: communication failure");
		return LLMT_EXIT_TRANSIENT;
	}
	if (rc == 0 && worst > 0) {
		ck_fmt(err, errlen, "%s: another rank failed to load the checkpoint (exit %d)", c->m.src.dir, (int)worst);
		return (int)worst;
	}
	return rc;
}
