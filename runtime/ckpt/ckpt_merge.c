/* ckpt_merge.c: the ranks' "done" records of a save: each rank's writer
 * publishes its own in the temporary step directory (or a failure note
 * beside it); world rank 0 waits for every one and merges them (kinds,
 * tensors sorted by name, files, pieces, blobs, replica agreement) into
 * the manifest's JSON, with the save's generation (1 + CKPT_DIR's largest,
 * listed only when the writer does not know it). The format is described
 * in ckpt_manifest.c. */
#include "ckpt_int.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "llmt/env.h"

int ck_publish_done(json_t *done, int rank, const char *tdir, const char *errmsg, char *err, size_t errlen)
{
	char path[4200], *txt;
	int rc;

	if (errmsg)
		json_object_set_new(done, "error", json_string(errmsg));
	txt = json_dumps(done, JSON_COMPACT);
	if (!txt) {
		ck_fmt(err, errlen, "out of memory");
		return LLMT_EXIT_SOFTWARE;
	}
	ck_fmt(path, sizeof path, "%s/rank_%05d.done.json", tdir, rank);
	rc = ck_write_record(path, txt, strlen(txt), err, errlen);
	free(txt);
	return rc ? LLMT_EXIT_IO : 0;
}

void ck_publish_failure(int rank, const char *tdir, const char *why)
{
	char failed[4300], e2[1024];

	ck_fmt(failed, sizeof failed, "%s.rank_%05d.failed", tdir, rank);
	ck_write_file_atomic(failed, why, strlen(why), e2, sizeof e2);
}

double llmt_ckpt_timeout(void)
{
	const char *e = getenv(LLMT_ENV_CKPT_TIMEOUT);
	double t = e ? atof(e) : 0;

	return t > 0 ? t : 1800;
}

static json_t *wait_record(const char *tdir, int r, char *err, size_t errlen)
{
	char path[4200], failed[4300];
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	double waited = 0, limit = llmt_ckpt_timeout();
	json_error_t je;

	ck_fmt(path, sizeof path, "%s/rank_%05d.done.json", tdir, r);
	ck_fmt(failed, sizeof failed, "%s.rank_%05d.failed", tdir, r);
	while (access(path, F_OK) != 0) {
		char *why = ck_read_small(failed, 4096, NULL);
		if (why) {
			ck_fmt(err, errlen, "rank %d: %s", r, why);
			free(why);
			return NULL;
		}
		if (waited > limit) {
			ck_fmt(err, errlen, "%s: rank %d did not finish its shard within %.0f s", tdir, r, limit);
			return NULL;
		}
		nanosleep(&ts, NULL);
		waited += (double)ts.tv_nsec / 1e9;
		if (ts.tv_nsec < 20 * 1000 * 1000)
			ts.tv_nsec *= 2;
	}
	json_t *o = json_load_file(path, 0, &je);
	if (!o)
		ck_fmt(err, errlen, "%s: unreadable: %s", path, je.text);
	return o;
}

/* global index of name in array arr of objects {"name":...}; appended
 * (from src) when absent; -1 when present with different content */
static int merge_named(json_t *arr, json_t *item)
{
	const char *n = json_string_value(json_object_get(item, "name"));

	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *x = json_array_get(arr, i);
		if (!strcmp(json_string_value(json_object_get(x, "name")), n))
			return json_equal(x, item) ? (int)i : -1;
	}
	json_array_append(arr, item);
	return (int)json_array_size(arr) - 1;
}

static int cmp_json_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
	              json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* The manifest's tables, filled rank by rank. */
typedef struct { json_t *kinds, *tensors, *files, *pieces, *blobs, *hashes; int agree; } ck_merge_acc;

/* The tensors of arr sorted by name (arr's reference is given up). */
static json_t *sorted_by_name(json_t *arr)
{
	size_t n = json_array_size(arr);
	json_t **v = calloc(n + 1, sizeof *v), *sorted = json_array();

	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(arr, i);
	qsort(v, n, sizeof *v, cmp_json_name);
	for (size_t i = 0; i < n; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_decref(arr);
	return sorted;
}

/* Rank r's record into the tables: its kinds and tensors mapped to the
 * global indices, its file, pieces, blobs and replica agreement. */
static int merge_rank(ck_merge_acc *acc, json_t *rec, int r, char *err, size_t errlen)
{
	json_t *lk = json_object_get(rec, "kinds"), *lt = json_object_get(rec, "tensors");
	json_t *lp = json_object_get(rec, "pieces"), *lb = json_object_get(rec, "blobs"), *x;
	int *kmap = calloc(json_array_size(lk) + 1, sizeof *kmap);
	int *tmap = calloc(json_array_size(lt) + 1, sizeof *tmap);
	int rc = 0;

	for (size_t i = 0; i < json_array_size(lk) && !rc; i++)
		if ((kmap[i] = merge_named(acc->kinds, json_array_get(lk, i))) < 0) {
			ck_fmt(err, errlen, "rank %d: kind %s has another dtype on another rank", r,
			       json_string_value(json_object_get(json_array_get(lk, i), "name")));
			rc = LLMT_EXIT_SOFTWARE;
		}
	for (size_t i = 0; i < json_array_size(lt); i++)
		tmap[i] = merge_named(acc->tensors, json_array_get(lt, i));
	json_array_append_new(acc->files, json_pack("{s:O, s:i, s:O, s:O}", "name", json_object_get(rec, "file"),
	                                            "rank", r, "size", json_object_get(rec, "size"),
	                                            "xxh3", json_object_get(rec, "xxh3")));
	for (size_t i = 0; i < json_array_size(lp) && !rc; i++) {
		json_t *p = json_array_get(lp, i);   /* [tensor, kind, offset, r0, nr, c0, nc] */
		json_array_append_new(acc->pieces, json_pack("[i, i, i, O, O, O, O, O]",
		        tmap[json_integer_value(json_array_get(p, 0))], kmap[json_integer_value(json_array_get(p, 1))], r,
		        json_array_get(p, 2), json_array_get(p, 3), json_array_get(p, 4), json_array_get(p, 5),
		        json_array_get(p, 6)));
	}
	for (size_t i = 0; i < json_array_size(lb); i++) {
		json_t *b = json_deep_copy(json_array_get(lb, i));
		json_object_set_new(b, "rank", json_integer(r));
		json_object_set_new(b, "file", json_integer(r));
		json_array_append_new(acc->blobs, b);
	}
	x = json_object_get(rec, "agree");
	if (json_is_false(x))
		acc->agree = 0;
	else if (!json_is_true(x) && acc->agree == 1)
		acc->agree = -1;
	json_array_append(acc->hashes, json_object_get(rec, "replica_hash"));
	free(kmap);
	free(tmap);
	return rc;
}

int ck_known_generation(const char *dir, long long *gen, char *err, size_t errlen)
{
	if (*gen >= 0)
		return 0;
	if (ck_max_generation(dir, gen) != 0) {
		ck_fmt(err, errlen, "%s: cannot list the checkpoint directory (the new checkpoint's generation): %s",
		       dir, strerror(errno));
		*gen = -1;
		return LLMT_EXIT_IO;
	}
	return 0;
}

int ck_build_manifest(const ck_save_info *w, const char *tdir, json_t **out, char *err, size_t errlen)
{
	ck_merge_acc acc = { json_array(), json_array(), json_array(), json_array(), json_array(), json_array(), 1 };
	json_t **recs = calloc((size_t)w->world, sizeof *recs);
	int rc = 0;

	for (int r = 0; r < w->world && !rc; r++) {
		if (!(recs[r] = wait_record(tdir, r, err, errlen)))
			rc = LLMT_EXIT_IO;
		else if (json_is_string(json_object_get(recs[r], "error"))) {
			ck_fmt(err, errlen, "rank %d: %s", r, json_string_value(json_object_get(recs[r], "error")));
			rc = LLMT_EXIT_IO;
		}
	}
	/* tensors sorted by name so the manifest is stable */
	for (int r = 0; r < w->world && !rc; r++) {
		json_t *t = json_object_get(recs[r], "tensors");
		for (size_t i = 0; i < json_array_size(t); i++)
			if (merge_named(acc.tensors, json_array_get(t, i)) < 0) {
				ck_fmt(err, errlen, "rank %d: tensor %s has another shape on another rank", r,
				         json_string_value(json_object_get(json_array_get(t, i), "name")));
				rc = LLMT_EXIT_SOFTWARE;
			}
	}
	if (!rc)
		acc.tensors = sorted_by_name(acc.tensors);
	for (int r = 0; r < w->world && !rc; r++)
		rc = merge_rank(&acc, recs[r], r, err, errlen);
	if (!rc) {
		time_t now = time(NULL);
		char iso[32];
		strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
		*out = json_pack("{s:s, s:i, s:I, s:I, s:I, s:s, s:{s:i, s:i, s:i, s:i}, s:O, s:O, s:o, s:O, s:O, s:O, s:O, s:O, s:O}",
		                 "format", CK_FORMAT, "version", CK_VERSION, "step", (json_int_t)w->step,
		                 "generation", (json_int_t)w->generation, "created_ns", (json_int_t)ck_now_ns(), "created", iso,
		                 "layout", "tp", w->tp, "pp", w->pp, "dp", w->dp, "world", w->world,
		                 "model", w->model, "training", w->training,
		                 "replicas_agree", acc.agree < 0 ? json_null() : json_boolean(acc.agree),
		                 "replica_hashes", acc.hashes, "kinds", acc.kinds, "tensors", acc.tensors, "files", acc.files,
		                 "pieces", acc.pieces, "blobs", acc.blobs);
		if (!*out) {
			ck_fmt(err, errlen, "manifest: cannot build JSON");
			rc = LLMT_EXIT_SOFTWARE;
		}
	}
	for (int r = 0; r < w->world; r++)
		json_decref(recs[r]);
	free(recs);
	json_decref(acc.kinds);
	json_decref(acc.tensors);
	json_decref(acc.files);
	json_decref(acc.pieces);
	json_decref(acc.blobs);
	json_decref(acc.hashes);
	return rc;
}
