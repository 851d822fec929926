/* ckpt_int.h: internals shared by the ckpt_*.c files: the range math
 * (logical boxes), the stored-checkpoint description (a "source": files,
 * tensors, pieces) and checked file helpers. Not part of the API. */
#ifndef LLMT_CKPT_INT_H
#define LLMT_CKPT_INT_H
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <jansson.h>
#include "ckpt.h"
#include "llmt/ckptgen.h"
#include "llmt/exitcodes.h"

#define CK_FORMAT "llmt-ckpt"
#define CK_VERSION 1
#define CK_NAME_MAX 96

/* ---- range math (ckpt_range.c, pure) ---------------------------------- */
/* A logical 2-D view of a tensor: [rows, cols] (1-D tensors: [n, 1]). A box
 * is rows [r0, r0+nr) x cols [c0, c0+nc), row-major wherever it is stored. */
typedef struct ck_box {
	int64_t r0, nr, c0, nc;
} ck_box;

/* The box a local table entry holds and the logical view. -1 when the
 * entry is inconsistent (numel != box area, split out of range). */
int ck_param_box(const llmt_param_info *p, int64_t *rows, int64_t *cols, ck_box *b);

/* A box cut from a flat range: param index, logical box, and the index of
 * its first element relative to the flat range start. Every cut box is
 * contiguous in the flat buffer (a partial row, or full local rows). */
typedef struct ck_cut {
	int param;
	ck_box box;
	size_t at;          /* flat index - range lo */
} ck_cut;

/* Cut flat range [lo, hi) of the table into boxes (at most 3 per entry).
 * skip (saving): CK_SKIP_TIED leaves out tied_copy entries, CK_SKIP_TPREP
 * entries replicated over TP (split_dim -1; written by tp_rank 0 only). Returns the count (cuts
 * malloc'd into *out) or -1 on an inconsistent table (err says which). */
int ck_cut_range(const llmt_param_info *params, int n, size_t lo, size_t hi,
                 int skip, ck_cut **out, char *err, size_t errlen);

#define CK_SKIP_TIED 1
#define CK_SKIP_TPREP 2

/* Intersection of two boxes; 0 when empty. */
int ck_box_intersect(const ck_box *a, const ck_box *b, ck_box *out);

/* The DP share of a replicated buffer of n elements: [*lo, *hi). */
void ck_dp_share(size_t n, int dp, int dp_rank, size_t *lo, size_t *hi);

size_t ck_dtype_size(llmt_ckpt_dtype t);
const char *ck_dtype_name(llmt_ckpt_dtype t);     /* "f32", "bf16" */
int ck_dtype_parse(const char *s, llmt_ckpt_dtype *t);
/* n elements from src (type st) to dst (type dt); bf16 <- f32 rounds to
 * nearest even (NaN kept NaN). */
void ck_convert(void *dst, llmt_ckpt_dtype dt, const void *src, llmt_ckpt_dtype st, size_t n);

/* ---- stored checkpoint (ckpt_source.c) -------------------------------- */
typedef struct ck_tensor {
	char name[CK_NAME_MAX];
	int ndim;
	int64_t shape[2];
	int64_t rows, cols;
} ck_tensor;

typedef struct ck_piece {
	int tensor, kind, file;
	llmt_ckpt_dtype dtype;
	uint64_t offset;       /* bytes into the file */
	ck_box box;
} ck_piece;

typedef struct ck_file {
	char name[64];         /* relative to the step directory */
	uint64_t size;
	uint64_t xxh3;
	int has_sum;
	int fd;                /* -1 until opened */
	void *hs;              /* XXH3 state while reads go in file order */
	uint64_t hashed;       /* bytes [0, hashed) are in hs */
} ck_file;

typedef struct ck_blob {
	char name[64];
	int rank, file;
	uint64_t offset, size;
} ck_blob;

typedef struct ck_source {
	char dir[4096];
	ck_file *files; int nfiles;
	ck_tensor *tensors; int ntensors;     /* sorted by name */
	char (*kinds)[32]; int nkinds;
	ck_piece *pieces; int npieces;        /* sorted by (kind, tensor) */
	ck_blob *blobs; int nblobs;
} ck_source;

void ck_source_free(ck_source *s);
int ck_source_find_tensor(const ck_source *s, const char *name);
int ck_source_find_kind(const ck_source *s, const char *kind);
/* Sort tensors and pieces, check every piece lies inside its tensor and
 * its file, and that the pieces of each (kind, tensor) tile it exactly
 * (ck_cover_check: no overlap, no gap).
 * 0, or 65 with err. */
int ck_source_finish(ck_source *s, char *err, size_t errlen);
/* Pure (ckpt_cover.c): the n pieces grp (one kind of one tensor, each
 * inside the tensor) tile it exactly: no element in two pieces, none in
 * none. 0, or 65 with err naming the files and ranges. */
int ck_cover_check(const ck_source *s, const ck_piece *grp, int n, char *err, size_t errlen);
/* Fill `nb` bytes-typed boxes: for flat range cut `cut` of buffer b (of
 * table params) read every overlapping piece of kind `kind`. 0 or code. */
int ck_source_fill(ck_source *s, int kind, const llmt_param_info *params,
                   const ck_cut *cuts, int ncuts, const llmt_ckpt_buf *b,
                   char *err, size_t errlen);
/* Read a whole logical tensor of kind into dst (type dt). 0 or code. */
int ck_source_read_tensor(ck_source *s, int kind, int tensor, void *dst,
                          llmt_ckpt_dtype dt, char *err, size_t errlen);
/* Hash file i on the fly while it is read front to back (the loader's
 * reads of its own shard), so verifying it needs no second pass. */
int ck_source_track(ck_source *s, int i);
/* Verify size and checksum of file i (finishing a tracked hash). 0 or
 * 65/74 with err. */
int ck_source_verify_file(ck_source *s, int i, char *err, size_t errlen);

/* ---- manifest (ckpt_manifest.c) --------------------------------------- */
typedef struct ck_manifest {
	long step;
	int64_t created_ns;
	long long generation;  /* 0 when the manifest has none (llmt/ckptgen.h) */
	int tp, pp, dp, world;
	int replicas_agree;    /* 1, 0, -1 */
	json_t *model;         /* config object (owned) */
	char *train_json;      /* text (owned) */
	ck_source src;
} ck_manifest;

json_t *ck_config_to_json(const llmt_config *c);
int ck_config_from_json(const json_t *o, llmt_config *c, char *err, size_t errlen);
/* 0 same architecture; else 1 and the differing field in err. */
int ck_config_compare(const llmt_config *stored, const llmt_config *want, char *err, size_t errlen);

/* Parse dir/manifest.json into m. 0, or 65 (bad manifest) / 66 (missing)
 * with "path: reason". Shard sizes are checked against the disk when
 * check_sizes. */
int ck_manifest_load(const char *dir, int check_sizes, ck_manifest *m, char *err, size_t errlen);
void ck_manifest_free(ck_manifest *m);

/* Full validation of a step directory (manifest, sizes, checksums unless
 * quick; a checkpoint saved while DP replicas disagreed is invalid too).
 * 0 or 65/66 with one line in err. */
int ck_validate_dir(const char *dir, int quick, ck_manifest *m_out, char *err, size_t errlen);

/* Valid checkpoints of ckpt_dir, newest first (by generation, then
 * creation time, then step: llmt/ckptgen.h). Invalid ones are reported
 * through report() (may be NULL).
 * Returns the count, paths malloc'd into *paths and steps into *steps. */
typedef void (*ck_report_fn)(const char *path, const char *why, void *arg);
int ck_list(const char *ckpt_dir, int quick, char ***paths, long **steps,
            ck_report_fn report, void *arg);
/* ck_list that also gives tmp() (may be NULL) each .tmp.step_* directory
 * (a save or an import cut short), in the same one pass over ckpt_dir,
 * and the largest generation of the valid ones into *maxgen (may be NULL;
 * 0 when none). */
int ck_scan(const char *ckpt_dir, int quick, char ***paths, long **steps,
            ck_report_fn report, ck_report_fn tmp, void *arg, long long *maxgen);

/* The largest generation among the valid checkpoints of dir (0: none).
 * 0, or -1 with errno when dir cannot be listed. */
int ck_max_generation(const char *dir, long long *gen);

/* ---- completing a save (ckpt_merge.c, ckpt_retain.c) ----------------- */
/* What the manifest says about a save besides the ranks' records. */
typedef struct { long step; long long generation; int tp, pp, dp, world; json_t *model, *training; } ck_save_info;
/* A rank's record of its durable shard (done: pieces, tensors, kinds,
 * blobs; errmsg: its save failed) in tdir, written atomically. 0 or 74/70. */
int ck_publish_done(json_t *done, int rank, const char *tdir, const char *errmsg, char *err, size_t errlen);
/* A rank that cannot publish its record says so next to tdir, so rank 0
 * does not wait for it. */
void ck_publish_failure(int rank, const char *tdir, const char *why);
/* CKPT_DIR dir's largest generation into *gen when unknown (*gen < 0: dir
 * listed; carried on otherwise). 0, or 74 with err (dir unlisted). */
int ck_known_generation(const char *dir, long long *gen, char *err, size_t errlen);
/* Waits for every rank's record in tdir and merges them into the
 * manifest's JSON (*out). 0, or 74 (a rank failed or timed out) / 70. */
int ck_build_manifest(const ck_save_info *s, const char *tdir, json_t **out, char *err, size_t errlen);
/* What retention never removes: the save just completed (saved, its
 * path), the checkpoint this run loaded with its checksums verified
 * (verified: its llmt_ckpt_id, may be NULL) and the ones whose llmt_ckpt_id is in bad_ids (comma-separated,
 * the wrapper's marks: LLM_TRAIN_CKPT_BAD; NULL none), which take no slot. */
typedef struct { const char *saved, *verified, *bad_ids; } ck_keep;
/* Removes dir's checkpoints beyond the newest keep that are not marked
 * bad (k's always stay); keep <= 0 keeps all. Returns the largest
 * generation its listing saw (-1: keep <= 0 or dir unlisted: none). */
long long ck_retention(const char *dir, int keep, const ck_keep *k);
/* Removes temporary directories (and failure notes) of saves up to
 * cur_step that never completed, other than this save's (token). */
void ck_remove_stale_tmp(const char *dir, long cur_step, const char *token);

/* ---- Hugging Face directories (ckpt_hfcheck.c, pure) ------------------- */
/* s (st_open_dir of hfdir) holds exactly the tensors of the model cfg
 * describes (tp=pp=1 table): every one with its shape (and dtype
 * want_dtype, an llmt_ckpt_dtype, when >= 0), none missing, none unknown
 * (a tied model has no lm_head.weight). 0, or 65 with one line in err
 * naming the tensors (missing and unknown ones listed). */
int ck_hf_check(const ck_source *s, const llmt_config *cfg, int want_dtype, const char *hfdir, char *err,
                size_t errlen);

/* Hugging Face config.json (ckpt_hfconfig.c): export's form of c; import's
 * read of HFDIR/config.json into c (dtype: its torch_dtype). 0 or an
 * exit code with err. */
json_t *ck_hf_config(const llmt_config *c, llmt_ckpt_dtype dt);
int ck_hf_read_config(const char *hfdir, llmt_config *c, int *dtype, char *err, size_t errlen);

/* rdir, a realpath, is a cache snapshot .../models--X/snapshots/REV and
 * real, a realpath, a file of that repo's .../models--X/blobs/ (1; else
 * 0): the link a download leaves (ckpt_hfcache.c) */
int ck_hf_cache_blob(const char *rdir, const char *real);

/* ---- a Hugging Face model's tokenizer files (ckpt_hftok.c) ------------ */
/* import: HFDIR's tokenizer.json, tokenizer.model, tokenizer_config.json,
 * special_tokens_map.json, generation_config.json (those there: regular
 * files up to 64 MiB, a link only to a file inside HFDIR or from a cache
 * snapshot into its repo's blobs/; others skipped with a note) and its
 * bos/eos/pad_token_id (ids in [0, vocab), pad one id: config.json's,
 * else generation_config.json's) into CKPT_DIR/hf_tokenizer/. export: from
 * the step's CKPT_DIR into OUT, the ids set in hfconfig, and a
 * generation_config.json of them when none was kept; nothing (*n 0) when
 * the CKPT_DIR has none (trained from scratch). keep also records
 * max_pos, the import's max_seq (max_position_embeddings or the window),
 * and export writes no larger max_position_embeddings (a run of one's own
 * --model with a larger max_seq trains within it: train_setup.c). 0 or an
 * exit code; *n the files written. */
int ck_hftok_keep(const char *hfdir, const char *ckdir, int vocab, int max_pos, int *n, char *err,
                  size_t errlen);
int ck_hftok_export(const char *stepdir, const char *out, json_t *hfconfig, int *n, char *err, size_t errlen);

/* ---- file helpers (ckpt_fs.c) ----------------------------------------- */
/* snprintf that returns 1 when the output was cut (paths, messages). */
int ck_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ck_write_all(int fd, const void *buf, size_t n);
int ck_pread_all(int fd, void *buf, size_t n, uint64_t off);   /* 0, -1 errno, -2 short */
int ck_fsync_dir(const char *dir);
/* Whether errno value e says a file of a checkpoint is not there (ENOENT,
 * ENOTDIR): the checkpoint's fault (65, the resume's 89); any other
 * failure to open or read one is the file system's (74, retried). */
/* EINVAL: ck_open_ro's "not a regular file" (a FIFO there hung every
 * reader in open(2)); the checkpoint's fault, as absent files are */
static inline int ck_absent(int e) { return e == ENOENT || e == ENOTDIR || e == EINVAL; }
static inline const char *ck_strerror(int e) { return e == EINVAL ? "not a regular file" : strerror(e); }
/* fd of a regular file opened read-only without waiting (O_NONBLOCK, then
 * blocking again); -1 with errno, EINVAL for anything else, a directory
 * included (include/llmt/openreg.h) */
int ck_open_ro(const char *path);
/* Write a file atomically: path.tmp.<pid>, fsync, rename, fsync dir. */
int ck_write_file_atomic(const char *path, const void *data, size_t n, char *err, size_t errlen);
/* the same for a done record rank 0 may take and move away at once (ckpt_fs.c) */
int ck_write_record(const char *path, const void *data, size_t n, char *err, size_t errlen);
/* Whole small file into a malloc'd NUL-terminated buffer. */
char *ck_read_small(const char *path, size_t max, size_t *len);
int ck_mkdir_p(const char *dir);
/* Hash a whole file (XXH3-64) and return its size. 0 or -1 errno. */
int ck_hash_file(int fd, uint64_t *hash, uint64_t *size);
int64_t ck_now_ns(void);
int ck_parse_step_name(const char *name, long *step);   /* step_%08ld */

#endif
