/* ckpt_hftok.c: a Hugging Face model's tokenizer files and PAD/BOS/EOS ids
 * kept by `llm-train import` in CKPT_DIR/hf_tokenizer/ and given back by
 * `llm-train export`: the files copied into the export, the ids written
 * into its config.json (and a generation_config.json when none was kept),
 * so transformers' AutoTokenizer and generate work on the export (and
 * generate pads a finished row with the source's pad_token_id, not with
 * eos_token_id as transformers does when there is none).
 * Only regular files of a bounded size are copied; a symbolic link is
 * followed only to a file inside the source directory, or, from a hub
 * cache snapshot, into that repo's blobs/ (ckpt_hfcache.c). */
#include "ckpt_int.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HFTOK_MAX (64u << 20)   /* Llama 3's tokenizer.json is 9 MB */
#define HFTOK_IDS "llmt_ids.json"
#define HFTOK_MAXPOS "max_position_embeddings"   /* in it: the import's max_seq */

static const char *const kept[] = { "tokenizer.json", "tokenizer.model", "tokenizer_config.json",
	                            "special_tokens_map.json", "generation_config.json" };
enum { NKEPT = sizeof kept / sizeof *kept };
/* pad_token_id is one id in transformers (GenerationConfig), the others
 * an id or a list */
static const char *const keys[] = { "bos_token_id", "eos_token_id", "pad_token_id" };
enum { NKEYS = sizeof keys / sizeof *keys, KEY_PAD = 2 };

/* DIR/NAME read whole into *buf (malloc'd). 0; 1 when absent; 2 when not
 * taken (a note printed: not a regular file, too large, a link out of
 * DIR); or an exit code with err. */
static int read_kept(const char *dir, const char *name, char **buf, size_t *len, char *err, size_t errlen)
{
	char path[4300], real[PATH_MAX], rdir[PATH_MAX];
	const char *why = NULL;
	struct stat sb;
	int fd;

	ck_fmt(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	/* A link is followed only to a file inside dir, or from a hub cache
	 * snapshot into its own repo's blobs/ (where every file of a download
	 * is). What is kept is copied into CKPT_DIR and every export of it,
	 * exports are shared: a link elsewhere (a tokenizer.json -> ~/.ssh/id_rsa
	 * planted in a model someone downloaded, or a path into another
	 * user's files) would publish that file under a tokenizer's name. */
	if (fd < 0 && errno == ELOOP) {
		if (!realpath(path, real) || !realpath(dir, rdir))
			why = "a dangling symbolic link";
		else if ((strncmp(real, rdir, strlen(rdir)) || real[strlen(rdir)] != '/') && !ck_hf_cache_blob(rdir, real))
			why = "a symbolic link out of the directory";
		else
			fd = open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	if (fd < 0 && !why) {
		if (ck_absent(errno))
			return 1;
		ck_fmt(err, errlen, "%s: %s", path, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (!why && fstat(fd, &sb) != 0) {
		ck_fmt(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return LLMT_EXIT_IO;
	}
	if (!why && !S_ISREG(sb.st_mode))
		why = "not a regular file";
	else if (!why && (uint64_t)sb.st_size > HFTOK_MAX)
		why = "larger than 64 MiB";
	if (why) {
		fprintf(stderr, "llm-train: note: %s: %s: not kept (copy it into the export by hand)\n", path, why);
		if (fd >= 0)
			close(fd);
		return 2;
	}
	*len = (size_t)sb.st_size;
	*buf = malloc(*len + 1);
	int rc = !*buf ? -1 : ck_pread_all(fd, *buf, *len, 0);
	close(fd);
	if (rc) {
		ck_fmt(err, errlen, "%s: %s", path, rc == -2 ? "changed while read" : strerror(errno));
		free(*buf);
		*buf = NULL;
		return LLMT_EXIT_IO;
	}
	return 0;
}

/* an id or (but for pad_token_id) a list of ids, each in [0, vocab): the
 * value, else NULL */
static json_t *ids_value(json_t *o, const char *key, int vocab)
{
	json_t *v = json_object_get(o, key), *x;
	size_t i;

	if (json_is_integer(v))
		return json_integer_value(v) >= 0 && json_integer_value(v) < vocab ? v : NULL;
	if (!json_is_array(v) || !json_array_size(v) || !strcmp(key, keys[KEY_PAD]))
		return NULL;
	json_array_foreach(v, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= vocab)
			return NULL;
	}
	return v;
}

/* bos/eos/pad_token_id of config.json, else of generation_config.json
 * (where transformers finds them: the model's config, its generation
 * config made from it when the file is absent); a value set but no id of
 * the model is passed over with a note */
static json_t *source_ids(const char *hfdir, int vocab)
{
	static const char *const from[] = { "config.json", "generation_config.json" };
	json_t *ids = json_object();
	char path[4300];

	for (int k = 0; k < NKEYS && ids; k++)
		for (int f = 0; f < 2; f++) {
			ck_fmt(path, sizeof path, "%s/%s", hfdir, from[f]);
			json_t *o = json_load_file(path, 0, NULL), *v = o ? ids_value(o, keys[k], vocab) : NULL;
			json_t *x = o ? json_object_get(o, keys[k]) : NULL;
			if (v) {
				json_object_set(ids, keys[k], v);
			} else if (x && !json_is_null(x)) {
				char *s = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT);
				fprintf(stderr, "llm-train: note: %s: %s %.40s: not %s below vocab_size %d: not kept\n", path,
				        keys[k], s ? s : "?", k == KEY_PAD ? "an id" : "an id or a list of ids", vocab);
				free(s);
			}
			json_decref(o);
			if (v)
				break;
		}
	return ids;
}

/* mkdir DIR once, before its first file */
static int made(const char *dir, int *done, char *err, size_t errlen)
{
	if (*done)
		return 0;
	if (ck_mkdir_p(dir) != 0) {
		ck_fmt(err, errlen, "%s: %s", dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	*done = 1;
	return 0;
}

int ck_hftok_keep(const char *hfdir, const char *ckdir, int vocab, int max_pos, int *n, char *err,
                  size_t errlen)
{
	char dir[4200], path[4300];
	int rc = 0, done = 0;

	*n = 0;
	ck_fmt(dir, sizeof dir, "%s/hf_tokenizer", ckdir);
	json_t *ids = source_ids(hfdir, vocab);
	if (ids && max_pos > 0)
		json_object_set_new(ids, HFTOK_MAXPOS, json_integer(max_pos));
	char *txt = ids ? json_dumps(ids, JSON_COMPACT) : NULL;
	size_t nids = ids ? json_object_size(ids) : 0;
	json_decref(ids);
	if (!txt) {
		ck_fmt(err, errlen, "out of memory");
		return LLMT_EXIT_SOFTWARE;
	}
	for (int i = 0; i < NKEPT && !rc; i++) {
		char *buf = NULL;
		size_t len = 0;
		int r = read_kept(hfdir, kept[i], &buf, &len, err, errlen);
		if (r == 0 && !(rc = made(dir, &done, err, errlen))) {
			ck_fmt(path, sizeof path, "%s/%s", dir, kept[i]);
			rc = ck_write_file_atomic(path, buf, len, err, errlen) ? LLMT_EXIT_IO : 0;
			*n += !rc;
		} else if (r > 2) {
			rc = r;
		}
		free(buf);
	}
	/* the ids last: export takes a CKPT_DIR with none for one never imported */
	ck_fmt(path, sizeof path, "%s/" HFTOK_IDS, dir);
	if (!rc && (*n || nids) && !(rc = made(dir, &done, err, errlen)) &&
	    ck_write_file_atomic(path, txt, strlen(txt), err, errlen) != 0)
		rc = LLMT_EXIT_IO;
	free(txt);
	return rc;
}

int ck_hftok_export(const char *stepdir, const char *out, json_t *hfconfig, int *n, char *err, size_t errlen)
{
	char dir[4200], path[4300];
	int rc = 0, gen = 0;
	size_t cut = strlen(stepdir);
	json_t *ids;

	*n = 0;
	while (cut > 1 && stepdir[cut - 1] == '/')
		cut--;
	while (cut > 0 && stepdir[cut - 1] != '/')
		cut--;
	/* the step's CKPT_DIR: an import's, or none (trained from scratch) */
	ck_fmt(dir, sizeof dir, "%.*shf_tokenizer", (int)cut, cut ? stepdir : "./");
	ck_fmt(path, sizeof path, "%s/" HFTOK_IDS, dir);
	if (!(ids = json_load_file(path, 0, NULL)))
		return 0;
	for (int i = 0; i < NKEPT && !rc; i++) {
		char *buf = NULL;
		size_t len = 0;
		int r = read_kept(dir, kept[i], &buf, &len, err, errlen);
		if (r == 0) {
			ck_fmt(path, sizeof path, "%s/%s", out, kept[i]);
			rc = ck_write_file_atomic(path, buf, len, err, errlen) ? LLMT_EXIT_IO : 0;
			*n += !rc;
			gen |= !rc && i == NKEPT - 1;
		} else if (r > 2) {
			rc = r;
		}
		free(buf);
	}
	/* positions: no more than the source's (a larger --model max_seq was
	 * trained within them, train_setup.c) */
	json_t *mp = json_object_get(ids, HFTOK_MAXPOS), *ours = json_object_get(hfconfig, HFTOK_MAXPOS);
	if (json_is_integer(mp) && json_integer_value(mp) > 0 && json_is_integer(ours) &&
	    json_integer_value(ours) > json_integer_value(mp)) {
		fprintf(stderr, "llm-train: note: max_position_embeddings %lld (the model's max_seq) written as %lld, "
		        "the imported source's\n", (long long)json_integer_value(ours), (long long)json_integer_value(mp));
		json_object_set_new(hfconfig, HFTOK_MAXPOS, json_integer(json_integer_value(mp)));
	}
	/* the ids only, checked again: the file is CKPT_DIR's, not the source's */
	json_t *good = json_object();
	int vocab = (int)json_integer_value(json_object_get(hfconfig, "vocab_size"));
	for (int k = 0; k < NKEYS && good; k++) {
		json_t *v = ids_value(ids, keys[k], vocab);
		if (v) {
			json_object_set(good, keys[k], v);
			json_object_set(hfconfig, keys[k], v);
		}
	}
	json_decref(ids);
	ids = good;
	if (!rc && !gen && json_object_size(ids)) {
		char *txt = json_dumps(ids, JSON_INDENT(2));
		ck_fmt(path, sizeof path, "%s/generation_config.json", out);
		if (!txt || ck_write_file_atomic(path, txt, strlen(txt), err, errlen) != 0)
			rc = LLMT_EXIT_IO;
		*n += !rc;
		free(txt);
	}
	json_decref(ids);
	return rc;
}
