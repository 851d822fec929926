/* ckpt_write.c: saving a checkpoint. The training thread snapshots this
 * rank's share into host memory (or borrows buffers the caller keeps
 * unchanged, such as a GPU rank's pinned snapshot); a background thread writes and fsyncs the
 * shard and publishes a per-rank "done" record (size, checksum, pieces)
 * in the temporary step directory. World rank 0's thread waits for every
 * record, writes manifest.json last, renames the directory into place,
 * swaps `latest` and applies retention: the loop never blocks on I/O. */
#include "ckpt_int.h"
#include "llmt/ckptid.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include "llmt/env.h"

/* A piece of the shard: copied into the snapshot (dst), or written in
 * place from src (borrowed buffers; dst unused). */
typedef struct { char *dst; const char *src; size_t n; } copy_job;

struct llmt_ckpt_writer {
	char dir[4096];
	int keep;
	char verified[64];      /* llmt_ckpt_id of the checkpoint this run loaded ("" none) */
	char *bad_ids;          /* LLM_TRAIN_CKPT_BAD when the writer was made */
	pthread_t th;
	int running;            /* a thread was started and not joined */
	int result;             /* of the last finished save */
	char err[1024];
	long last_step;
	long long gen;          /* CKPT_DIR's largest generation (-1: unknown, the next save lists it) */
	/* the job of the thread */
	long step;
	char token[48];
	int rank, world, tp, pp, dp;
	char *snap;
	size_t snap_cap, snap_len;   /* snap_len: the shard's size */
	copy_job *seg;               /* what the thread writes, in file order */
	int nseg, seg_cap;
	json_t *done;           /* this rank's record (pieces, tensors, kinds, blobs) */
	json_t *model;
	json_t *training;
	int agree;
	pthread_mutex_t mu;
	int finished;           /* thread has set result */
};

llmt_ckpt_writer *llmt_ckpt_writer_new(const char *dir, int keep, char *err, size_t errlen)
{
	llmt_ckpt_writer *w;
	struct stat st;

	if (!dir || !*dir || strlen(dir) >= sizeof w->dir - 64) {
		ck_fmt(err, errlen, "checkpoint directory: empty or too long");
		return NULL;
	}
	if (keep < 0) {
		ck_fmt(err, errlen, "checkpoint retention %d: must be >= 0", keep);
		return NULL;
	}
	int e = ck_mkdir_p(dir) != 0 || stat(dir, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	if (e) {
		ck_fmt(err, errlen, "%s: cannot create checkpoint directory: %s", dir, strerror(e));
		return NULL;
	}
	w = calloc(1, sizeof *w);
	if (!w) {
		ck_fmt(err, errlen, "out of memory");
		return NULL;
	}
	ck_fmt(w->dir, sizeof w->dir, "%s", dir);
	w->keep = keep;
	w->last_step = -1;
	w->gen = -1;
	const char *bad = getenv(LLMT_ENV_CKPT_BAD);
	w->bad_ids = bad && *bad ? strdup(bad) : NULL;
	pthread_mutex_init(&w->mu, NULL);
	return w;
}

static void set_result(llmt_ckpt_writer *w, int rc, const char *msg)
{
	pthread_mutex_lock(&w->mu);
	w->result = rc;
	ck_fmt(w->err, sizeof w->err, "%s", msg ? msg : "");
	w->finished = 1;
	pthread_mutex_unlock(&w->mu);
}

static void tmp_dir(const llmt_ckpt_writer *w, char *out, size_t n)
{
	ck_fmt(out, n, "%s/.tmp.step_%08ld.%s", w->dir, w->step, w->token);
}

/* ---- per-rank shard --------------------------------------------------- */
static int write_shard(llmt_ckpt_writer *w, const char *tdir, uint64_t *hash, char *err, size_t errlen)
{
	enum { CHUNK = 8 << 20 };
	char path[4200];
	const char *fail = getenv("LLMT_TEST_CKPT_FAIL");   /* test hook: "rank" whose write fails */
	XXH3_state_t *st;
	int fd;

	ck_fmt(path, sizeof path, "%s/rank_%05d.bin", tdir, w->rank);
	if (fail && *fail && atoi(fail) == w->rank) {
		ck_fmt(err, errlen, "%s: write failed: injected by LLMT_TEST_CKPT_FAIL", path);
		return LLMT_EXIT_IO;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ck_fmt(err, errlen, "%s: cannot create: %s", path, strerror(errno));
		return LLMT_EXIT_IO;
	}
	st = XXH3_createState();
	XXH3_64bits_reset(st);
	for (int i = 0; i < w->nseg; i++)
		for (size_t off = 0; off < w->seg[i].n; off += CHUNK) {
			size_t n = w->seg[i].n - off < CHUNK ? w->seg[i].n - off : CHUNK;
			XXH3_64bits_update(st, w->seg[i].src + off, n);
			if (ck_write_all(fd, w->seg[i].src + off, n) != 0) {
				ck_fmt(err, errlen, "%s: write failed: %s", path, strerror(errno));
				XXH3_freeState(st);
				close(fd);
				return LLMT_EXIT_IO;
			}
		}
	*hash = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	if (fsync(fd) != 0) {
		ck_fmt(err, errlen, "%s: fsync failed: %s", path, strerror(errno));
		close(fd);
		return LLMT_EXIT_IO;
	}
	/* durable: its pages need not crowd the training process's memory */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (close(fd) != 0) {
		ck_fmt(err, errlen, "%s: close failed: %s", path, strerror(errno));
		return LLMT_EXIT_IO;
	}
	return 0;
}

/* ---- rank 0: manifest ------------------------------------------------- */
static int finalize(llmt_ckpt_writer *w, const char *tdir, char *err, size_t errlen)
{
	char path[4300], final[4200], latest[64];
	json_t *man = NULL;
	char *txt;
	int rc;
	struct stat st;

	if (ck_known_generation(w->dir, &w->gen, err, errlen) != 0)
		return LLMT_EXIT_IO;
	ck_save_info info = { w->step, llmt_ckpt_gen_next(w->gen), w->tp, w->pp, w->dp, w->world, w->model,
	                      w->training };

	if ((rc = ck_build_manifest(&info, tdir, &man, err, errlen)) != 0)
		return rc;
	txt = json_dumps(man, JSON_INDENT(1));
	json_decref(man);
	ck_fmt(path, sizeof path, "%s/manifest.json", tdir);
	if (!txt || ck_write_file_atomic(path, txt, strlen(txt), err, errlen) != 0) {
		free(txt);
		return LLMT_EXIT_IO;
	}
	free(txt);
	for (int r = 0; r < w->world; r++) {
		ck_fmt(path, sizeof path, "%s/rank_%05d.done.json", tdir, r);
		unlink(path);
	}
	ck_fmt(final, sizeof final, "%s/step_%08ld", w->dir, w->step);
	if (lstat(final, &st) == 0) {
		/* the same step from an abandoned timeline (rollback): kept aside */
		ck_fmt(path, sizeof path, "%s/step_%08ld.superseded.%s", w->dir, w->step, w->token);
		if (rename(final, path) != 0) {
			ck_fmt(err, errlen, "%s: cannot move the older checkpoint aside: %s", final, strerror(errno));
			return LLMT_EXIT_IO;
		}
	}
	if (rename(tdir, final) != 0) {
		ck_fmt(err, errlen, "%s: rename failed: %s", final, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (ck_fsync_dir(w->dir) != 0) {
		ck_fmt(err, errlen, "%s: fsync failed: %s", w->dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	ck_fmt(path, sizeof path, "%s/latest", w->dir);
	ck_fmt(latest, sizeof latest, "step_%08ld\n", w->step);
	w->gen = info.generation;
	if (ck_write_file_atomic(path, latest, strlen(latest), err, errlen) != 0)
		return LLMT_EXIT_IO;
	ck_remove_stale_tmp(w->dir, w->step, w->token);
	ck_keep k = { final, w->verified[0] ? w->verified : NULL, w->bad_ids };
	/* its listing may see a larger generation (another writer's) */
	long long seen = ck_retention(w->dir, w->keep, &k);
	if (seen > w->gen)
		w->gen = seen;
	return 0;
}

static void *writer_main(void *arg)
{
	llmt_ckpt_writer *w = arg;
	char tdir[4200], err[1024] = "", err2[1024];
	uint64_t hash = 0;
	struct stat sb;
	int rc;

	tmp_dir(w, tdir, sizeof tdir);
	errno = 0;
	if (ck_mkdir_p(tdir) != 0 || stat(tdir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		ck_fmt(err, sizeof err, "%s: cannot create: %s", tdir, errno ? strerror(errno) : "not a directory");
		ck_publish_failure(w->rank, tdir, err);
		set_result(w, LLMT_EXIT_IO, err);
		return NULL;
	}
	rc = write_shard(w, tdir, &hash, err, sizeof err);
	if (rc == 0) {
		char hx[20];
		ck_fmt(hx, sizeof hx, "%016llx", (unsigned long long)hash);
		json_object_set_new(w->done, "size", json_integer((json_int_t)w->snap_len));
		json_object_set_new(w->done, "xxh3", json_string(hx));
	}
	/* publish even a failure, so rank 0 does not wait for this rank */
	if (ck_publish_done(w->done, w->rank, tdir, rc ? err : NULL, err2, sizeof err2) != 0) {
		if (rc == 0) {
			rc = LLMT_EXIT_IO;
			ck_fmt(err, sizeof err, "%s", err2);
		}
		ck_publish_failure(w->rank, tdir, err);
	}
	if (rc == 0 && w->rank == 0)
		rc = finalize(w, tdir, err, sizeof err);
	set_result(w, rc, rc ? err : NULL);
	return NULL;
}

/* ---- training thread -------------------------------------------------- */
static int join(llmt_ckpt_writer *w, char *err, size_t errlen)
{
	int rc;

	if (w->running) {
		pthread_join(w->th, NULL);
		w->running = 0;
		json_decref(w->done);
		json_decref(w->model);
		json_decref(w->training);
		w->done = w->model = w->training = NULL;
		if (w->result == 0 && w->rank == 0)
			w->last_step = w->step;
	}
	rc = w->result;
	if (rc)
		ck_fmt(err, errlen, "checkpoint step %ld: %s", w->step, w->err);
	w->result = 0;
	w->finished = 0;
	return rc;
}

int llmt_ckpt_wait(llmt_ckpt_writer *w, char *err, size_t errlen)
{
	return w ? join(w, err, errlen) : 0;
}

int llmt_ckpt_poll(llmt_ckpt_writer *w, char *err, size_t errlen)
{
	int fin;

	if (!w->running)
		return 1;
	pthread_mutex_lock(&w->mu);
	fin = w->finished;
	pthread_mutex_unlock(&w->mu);
	if (!fin)
		return 0;
	int rc = join(w, err, errlen);
	return rc ? rc : 1;
}

void llmt_ckpt_writer_generation(llmt_ckpt_writer *w, long long maxgen)
{
	w->gen = maxgen < 0 ? -1 : maxgen;
}

void llmt_ckpt_writer_verified(llmt_ckpt_writer *w, const char *stepdir)
{
	llmt_ckpt_id(stepdir, w->verified, sizeof w->verified);
}

void llmt_ckpt_writer_free(llmt_ckpt_writer *w)
{
	char err[1024];

	if (!w)
		return;
	if (join(w, err, sizeof err) != 0)
		fprintf(stderr, "llm-train: %s\n", err);
	pthread_mutex_destroy(&w->mu);
	free(w->snap);
	free(w->seg);
	free(w->bad_ids);
	free(w);
}

/* The snapshot copy, in 4 MiB chunks over the OpenMP threads (the loop's
 * threads are idle while it waits here): the stall is memory bandwidth. */
static int parallel_copy(const copy_job *jobs, int nj)
{
	enum { CH = 4 << 20 };
	size_t nc = 0, k = 0;
	copy_job *ch;

	for (int i = 0; i < nj; i++)
		nc += (jobs[i].n + CH - 1) / CH;
	if (!(ch = malloc((nc + 1) * sizeof *ch)))
		return -1;
	for (int i = 0; i < nj; i++)
		for (size_t o = 0; o < jobs[i].n; o += CH)
			ch[k++] = (copy_job){ jobs[i].dst + o, jobs[i].src + o, jobs[i].n - o < CH ? jobs[i].n - o : CH };
#pragma omp parallel for schedule(dynamic, 1)
	for (long c = 0; c < (long)nc; c++)
		memcpy(ch[c].dst, ch[c].src, ch[c].n);
	free(ch);
	return 0;
}

static uint64_t replica_hash(const llmt_ckpt_state *st)
{
	XXH3_state_t *h;
	uint64_t r;

	if (st->hash_given)
		return st->hash;
	h = XXH3_createState();
	XXH3_64bits_reset(h);
	for (int i = 0; i < st->nbufs; i++) {
		const llmt_ckpt_buf *b = &st->bufs[i];
		if (b->replicated)
			XXH3_64bits_update(h, b->data, (b->hi - b->lo) * ck_dtype_size(b->dtype));
	}
	for (int i = 0; i < 2; i++)
		if (st->alike[i] && st->alike_len[i])
			XXH3_64bits_update(h, st->alike[i], st->alike_len[i]);
	r = XXH3_64bits_digest(h);
	XXH3_freeState(h);
	return r;
}

/* Check st and cut this rank's write share into pieces, filling the done
 * record and the snapshot. */
/* Each buffer's cut into this rank's pieces (a DP-replicated buffer: its
 * ZeRO share): the cuts, where each starts (wlo), its kind in kinds, the
 * bytes of all pieces in *total. */
static int cut_buffers(const llmt_ckpt_state *st, ck_cut **cuts, int *ncuts, size_t *wlo, json_t *kinds,
                       size_t *total, char *err, size_t errlen)
{
	for (int k = 0; k < st->nbufs; k++) {
		const llmt_ckpt_buf *b = &st->bufs[k];
		size_t lo = b->lo, hi = b->hi;
		if (!b->kind || !*b->kind || strlen(b->kind) >= 32 || b->lo > b->hi || b->hi > st->nflat ||
		    (b->replicated && (b->lo != 0 || b->hi != st->nflat)) || (!b->data && b->hi > b->lo)) {
			ck_fmt(err, errlen, "checkpoint buffer %d (%s): bad range", k, b->kind ? b->kind : "?");
			return LLMT_EXIT_SOFTWARE;
		}
		if (b->replicated)
			ck_dp_share(st->nflat, st->dp, st->dp_rank, &lo, &hi);
		wlo[k] = lo;
		ncuts[k] = ck_cut_range(st->params, st->nparams, lo, hi,
		                        CK_SKIP_TIED | (st->tp_rank != 0 ? CK_SKIP_TPREP : 0), &cuts[k], err, errlen);
		if (ncuts[k] < 0) {
			ncuts[k] = 0;
			return LLMT_EXIT_SOFTWARE;
		}
		json_array_append_new(kinds, json_pack("{s:s, s:s}", "name", b->kind, "dtype", ck_dtype_name(b->dtype)));
		for (int c = 0; c < ncuts[k]; c++)
			*total += (size_t)(cuts[k][c].box.nr * cuts[k][c].box.nc) * ck_dtype_size(b->dtype);
	}
	return 0;
}

/* The blobs copied into the snapshot after the pieces (8-byte aligned, at
 * *off of the shard; borrowed buffers: the snapshot holds the blobs only). */
static int put_blobs(llmt_ckpt_writer *w, const llmt_ckpt_state *st, size_t pieces_bytes, size_t *off,
                     json_t *blobs, char *err, size_t errlen)
{
	for (int i = 0; i < st->nblobs; i++) {
		const llmt_ckpt_blob *bl = &st->blobs[i];
		if (!bl->name || strlen(bl->name) >= 64 || (bl->len && !bl->data)) {
			ck_fmt(err, errlen, "checkpoint blob %d: bad name or data", i);
			return LLMT_EXIT_SOFTWARE;
		}
		char *at = w->snap + (st->borrow ? *off - pieces_bytes : *off);
		memcpy(at, bl->data, bl->len);
		memset(at + bl->len, 0, ((bl->len + 7) & ~(size_t)7) - bl->len);
		json_array_append_new(blobs, json_pack("{s:s, s:I, s:I}", "name", bl->name, "offset", (json_int_t)*off,
		                                       "size", (json_int_t)bl->len));
		*off += (bl->len + 7) & ~(size_t)7;
	}
	return 0;
}

static int snapshot(llmt_ckpt_writer *w, const llmt_ckpt_state *st, char *err, size_t errlen)
{
	ck_cut *cuts[LLMT_CKPT_MAX_BUFS] = { 0 };
	int ncuts[LLMT_CKPT_MAX_BUFS] = { 0 };
	size_t wlo[LLMT_CKPT_MAX_BUFS], total = 0;
	json_t *kinds = json_array(), *tensors = json_array(), *pieces = json_array(), *blobs = json_array();
	int *tix = calloc((size_t)st->nparams + 1, sizeof *tix);
	int rc = 0;

	for (int i = 0; i < st->nparams; i++)
		tix[i] = -1;
	rc = cut_buffers(st, cuts, ncuts, wlo, kinds, &total, err, errlen);
	size_t pieces_bytes = total, blob_bytes = 0;
	for (int i = 0; i < st->nblobs; i++)
		blob_bytes += (st->blobs[i].len + 7) & ~(size_t)7;
	/* borrowed buffers are written in place: the snapshot holds the blobs */
	size_t need = st->borrow ? blob_bytes : pieces_bytes + blob_bytes;
	if (!rc && need > w->snap_cap) {
		char *ns = realloc(w->snap, need);
		if (!ns) {
			ck_fmt(err, errlen, "checkpoint snapshot: out of memory (%zu bytes)", need);
			rc = LLMT_EXIT_SOFTWARE;
		} else {
			w->snap = ns;
			w->snap_cap = need;
		}
	}
	size_t off = 0;
	int nj = 0, maxj = 0;
	for (int k = 0; k < st->nbufs; k++)
		maxj += ncuts[k];
	copy_job *jobs = malloc(((size_t)maxj + 1) * sizeof *jobs);
	if (!jobs && !rc) {
		ck_fmt(err, errlen, "checkpoint snapshot: out of memory");
		rc = LLMT_EXIT_SOFTWARE;
	}
	if (!rc && (st->borrow ? maxj + 1 : 1) > w->seg_cap) {
		copy_job *ns = realloc(w->seg, (size_t)(maxj + 1) * sizeof *ns);
		if (!ns) {
			ck_fmt(err, errlen, "checkpoint snapshot: out of memory");
			rc = LLMT_EXIT_SOFTWARE;
		} else {
			w->seg = ns;
			w->seg_cap = maxj + 1;
		}
	}
	for (int k = 0; k < st->nbufs && !rc; k++) {
		const llmt_ckpt_buf *b = &st->bufs[k];
		size_t es = ck_dtype_size(b->dtype);
		for (int c = 0; c < ncuts[k]; c++) {
			const ck_cut *ct = &cuts[k][c];
			const llmt_param_info *p = &st->params[ct->param];
			size_t n = (size_t)(ct->box.nr * ct->box.nc) * es;
			if (tix[ct->param] < 0) {
				json_t *sh = p->ndim == 2 ? json_pack("[I, I]", (json_int_t)p->shape[0], (json_int_t)p->shape[1])
				                          : json_pack("[I]", (json_int_t)p->shape[0]);
				tix[ct->param] = (int)json_array_size(tensors);
				json_array_append_new(tensors, json_pack("{s:s, s:o}", "name", p->name, "shape", sh));
			}
			jobs[nj++] = (copy_job){ st->borrow ? NULL : w->snap + off, (const char *)b->data + (wlo[k] - b->lo + ct->at) * es, n };
			json_array_append_new(pieces, json_pack("[i, i, I, I, I, I, I]", tix[ct->param], k, (json_int_t)off,
			                                        (json_int_t)ct->box.r0, (json_int_t)ct->box.nr,
			                                        (json_int_t)ct->box.c0, (json_int_t)ct->box.nc));
			off += n;
		}
	}
	if (!rc)
		rc = put_blobs(w, st, pieces_bytes, &off, blobs, err, errlen);
	w->snap_len = off;
	w->nseg = 0;
	if (!rc && st->borrow) {
		for (int i = 0; i < nj; i++)
			w->seg[w->nseg++] = (copy_job){ NULL, jobs[i].src, jobs[i].n };
		w->seg[w->nseg++] = (copy_job){ NULL, w->snap, blob_bytes };
	} else if (!rc) {
		w->seg[w->nseg++] = (copy_job){ NULL, w->snap, off };
		if (parallel_copy(jobs, nj) != 0) {
			ck_fmt(err, errlen, "checkpoint snapshot: out of memory");
			rc = LLMT_EXIT_SOFTWARE;
		}
	}
	free(jobs);
	for (int k = 0; k < LLMT_CKPT_MAX_BUFS; k++)
		free(cuts[k]);
	free(tix);
	if (!rc) {
		char fname[32];
		ck_fmt(fname, sizeof fname, "rank_%05d.bin", st->rank);
		w->done = json_pack("{s:i, s:s, s:o, s:o, s:o, s:o}", "rank", st->rank, "file", fname, "kinds", kinds,
		                    "tensors", tensors, "pieces", pieces, "blobs", blobs);
	} else {
		json_decref(kinds);
		json_decref(tensors);
		json_decref(pieces);
		json_decref(blobs);
	}
	return rc;
}

int llmt_ckpt_save(llmt_ckpt_writer *w, long step, const llmt_ckpt_state *st, char *err, size_t errlen)
{
	char perr[1024] = "";
	int prev, rc, agree = -1;
	uint64_t h = 0;

	/* the previous save first (its failure is reported below, after the
	 * collectives every rank must take part in) */
	prev = join(w, perr, sizeof perr);
	memset(w->token, 0, sizeof w->token);
	if (st->rank == 0)
		ck_fmt(w->token, sizeof w->token, "%llx.%lx", (unsigned long long)ck_now_ns(), (long)getpid());
	if (st->world_comm && llmt_comm_bcast_bytes(st->world_comm, w->token, sizeof w->token, 0) != 0) {
		ck_fmt(err, errlen, "checkpoint step %ld: communication failure", step);
		return LLMT_EXIT_TRANSIENT;
	}
	if (!st->world_comm && st->world > 1) {
		/* ranks simulated in one process (unit tests) share a token */
		const char *tok = getenv("LLMT_TEST_CKPT_TOKEN");
		if (!tok || !*tok) {
			ck_fmt(err, errlen, "checkpoint step %ld: world of %d ranks without a communicator", step, st->world);
			return LLMT_EXIT_SOFTWARE;
		}
		ck_fmt(w->token, sizeof w->token, "%s", tok);
	}
	w->token[sizeof w->token - 1] = 0;
	h = replica_hash(st);
	if (st->dp == 1) {
		agree = 1;
	} else if (st->dp_comm) {
		uint64_t *all = calloc((size_t)st->dp, sizeof *all);
		if (!all || llmt_comm_allgather_bytes(st->dp_comm, &h, all, sizeof h) != 0) {
			free(all);
			ck_fmt(err, errlen, "checkpoint step %ld: communication failure", step);
			return LLMT_EXIT_TRANSIENT;
		}
		agree = 1;
		for (int i = 1; i < st->dp; i++)
			if (all[i] != all[0])
				agree = 0;
		free(all);
	}
	if (prev) {
		ck_fmt(err, errlen, "%s", perr);
		return prev;
	}
	if (step < 0 || st->world < 1 || st->rank < 0 || st->rank >= st->world || st->tp * st->pp * st->dp != st->world ||
	    !st->config || st->nbufs > LLMT_CKPT_MAX_BUFS || st->nblobs > LLMT_CKPT_MAX_BLOBS) {
		ck_fmt(err, errlen, "checkpoint step %ld: bad state description", step);
		return LLMT_EXIT_SOFTWARE;
	}
	w->step = step;
	w->rank = st->rank;
	w->world = st->world;
	w->tp = st->tp;
	w->pp = st->pp;
	w->dp = st->dp;
	if ((rc = snapshot(w, st, err, errlen)) != 0)
		return rc;
	{
		char hx[20];
		ck_fmt(hx, sizeof hx, "%016llx", (unsigned long long)h);
		json_object_set_new(w->done, "replica_hash", json_string(hx));
		json_object_set_new(w->done, "agree", agree < 0 ? json_null() : json_boolean(agree));
	}
	w->model = ck_config_to_json(st->config);
	if (st->train_json) {
		json_error_t je;
		w->training = json_loads(st->train_json, 0, &je);
		if (!json_is_object(w->training)) {
			ck_fmt(err, errlen, "checkpoint step %ld: training state is not a JSON object: %s", step, je.text);
			json_decref(w->done);
			json_decref(w->model);
			json_decref(w->training);
			w->done = w->model = w->training = NULL;
			return LLMT_EXIT_SOFTWARE;
		}
	} else {
		w->training = json_object();
	}
	w->finished = 0;
	w->result = 0;
	if (pthread_create(&w->th, NULL, writer_main, w) != 0) {
		ck_fmt(err, errlen, "checkpoint step %ld: cannot start the writer thread", step);
		return LLMT_EXIT_SOFTWARE;
	}
	w->running = 1;
	return 0;
}
