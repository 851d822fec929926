/* ckpt.h: checkpoints (doc/contracts.md): one directory per step with
 * per-rank shard files and a manifest written last, an atomic `latest`
 * pointer, retention, asynchronous writing, and loading under any layout
 * (tensors are stored as logical tensors cut into boxes).
 *
 * Model
 * - The state of a rank is a set of flat buffers ("kinds": master weights,
 *   AdamW m and v, ...) laid out by the model's parameter table
 *   (llmt_param_info: logical shape, split_dim/off/len, flat offset).
 * - A buffer holds flat elements [lo, hi) of that layout: the whole buffer
 *   (replicated over DP, e.g. the fp32 master) or this DP rank's ZeRO-1
 *   range (e.g. AdamW m, v). Replicated buffers are written once in all:
 *   each DP rank writes its 1/dp share, so no byte is stored twice.
 *   Entries with tied_copy == 1 are never written and are filled on load;
 *   entries replicated over TP (split_dim -1) are written by tp_rank 0.
 * - Blobs are opaque per-rank bytes (data-loader position, RNG state).
 * - Every call that names a communicator is collective over it (NULL: a
 *   single process). Errors return an exit code of include/llmt/exitcodes.h
 *   (64 usage, 65 bad checkpoint, 66 missing, 74 I/O, 75 communication,
 *   70 bad call) with one line in err.
 * - Rank 0 learns that a rank's shard is durable from a small record the
 *   rank's writer thread leaves in the step's temporary directory (no MPI
 *   call off the training thread, no collective at step boundaries). Env:
 *   LLM_TRAIN_CKPT_TIMEOUT (seconds rank 0 waits for them, default 1800). */
#ifndef LLMT_CKPT_H
#define LLMT_CKPT_H
#include <stddef.h>
#include <stdint.h>
#include "comm/comm.h"
#include "model/model_config.h"
#include "model/model.h"

/* F16 is read (imported safetensors) and converted; not written by saves */
typedef enum { LLMT_CKPT_F32 = 0, LLMT_CKPT_BF16 = 1, LLMT_CKPT_F16 = 2 } llmt_ckpt_dtype;

#define LLMT_CKPT_MAX_BUFS 8
#define LLMT_CKPT_MAX_BLOBS 8

typedef struct llmt_ckpt_buf {
	const char *kind;        /* "master", "adam_m", "adam_v", ... */
	llmt_ckpt_dtype dtype;
	void *data;              /* data[0] is flat element lo */
	size_t lo, hi;           /* flat elements held: [lo, hi) */
	int replicated;          /* 1: same on every DP replica (then lo=0, hi=nflat) */
	int optional;            /* load: a kind missing from the checkpoint is
	                          * left untouched instead of an error */
} llmt_ckpt_buf;

typedef struct llmt_ckpt_blob {
	const char *name;        /* "data", "rng", ... */
	const void *data;
	size_t len;
} llmt_ckpt_blob;

typedef struct llmt_ckpt_state {
	/* layout (Megatron order: rank = tp_rank + dp_rank*tp + pp_rank*tp*dp) */
	int rank, world, tp, pp, dp, tp_rank, pp_rank, dp_rank;
	const llmt_config *config;          /* stored in the manifest, checked on load */
	const llmt_param_info *params;      /* this rank's table (llmt_model_params) */
	int nparams;
	size_t nflat;                       /* llmt_model_nparams */
	llmt_ckpt_buf bufs[LLMT_CKPT_MAX_BUFS];
	int nbufs;
	llmt_ckpt_blob blobs[LLMT_CKPT_MAX_BLOBS];  /* save only */
	int nblobs;
	const char *train_json;  /* save: training state as a JSON object text
	                          * (lr schedule position, bad steps, tokens
	                          * seen...); NULL = {} */
	llmt_comm *world_comm;   /* all ranks (NULL: one process) */
	llmt_comm *dp_comm;      /* DP group: replicas_agree check (NULL: skip) */
	const void *alike[2];    /* save: bytes every DP replica holds alike that
	                          * are not a replicated buffer (a ZeRO-1 share of
	                          * the master: the compute weights); hashed with
	                          * the replicated buffers for replicas_agree */
	size_t alike_len[2];
	int hash_given;          /* save: hash is this rank's replica hash (its
	                          * replicated buffers are not all here, e.g. the
	                          * part of the master it writes of a whole one
	                          * on a device: a buffer of that range, not
	                          * replicated) instead of one of bufs and alike */
	uint64_t hash;
	int borrow;              /* save: the writer writes bufs' data in place
	                          * instead of copying it first; the caller keeps
	                          * it unchanged until its next llmt_ckpt_save or
	                          * llmt_ckpt_wait has returned (blobs are copied) */
} llmt_ckpt_state;

/* Pure: the part [*lo, *hi) of a DP-replicated buffer of n elements that
 * DP rank dp_rank of dp writes (ceil(n / dp) elements each, the last
 * fewer). Inline: the memory estimate (libllmtplan) uses it too. */
static inline void llmt_ckpt_dp_share(size_t n, int dp, int dp_rank, size_t *lo, size_t *hi)
{
	size_t chunk = (n + (size_t)dp - 1) / (size_t)dp;

	*lo = (size_t)dp_rank * chunk;
	*hi = *lo + chunk;
	if (*lo > n)
		*lo = n;
	if (*hi > n)
		*hi = n;
}

/* ---- writing --------------------------------------------------------- */
typedef struct llmt_ckpt_writer llmt_ckpt_writer;

/* Writer for CKPT_DIR (created if absent) keeping the newest `keep`
 * complete checkpoints (0 = keep all) that the wrapper has not marked bad
 * (LLM_TRAIN_CKPT_BAD, read here: marked ones take no slot and stay).
 * NULL with err on failure. */
llmt_ckpt_writer *llmt_ckpt_writer_new(const char *dir, int keep, char *err, size_t errlen);
/* CKPT_DIR's largest generation, as the caller's listing of it found it
 * (llmt_ckpt_scan's maxgen): each save's manifest gets 1 + the largest
 * generation known, carried on from here and from the writer's own saves
 * (and retention's listings) without listing CKPT_DIR again. Without it,
 * the writer's first save lists CKPT_DIR once. Call before the first save. */
void llmt_ckpt_writer_generation(llmt_ckpt_writer *w, long long maxgen);
/* stepdir was loaded with its checksums verified: retention never removes
 * it while this writer lives (the last checkpoint known to load). Call
 * before the next save. */
void llmt_ckpt_writer_verified(llmt_ckpt_writer *w, const char *stepdir);

/* Collective over st->world_comm. Waits for the previous save of this
 * writer, copies this rank's share of the buffers and blobs into a host
 * snapshot (after return the caller may change its buffers), and starts a
 * background thread that writes the shard, fsyncs it and publishes its
 * size and checksum. World rank 0's thread then waits for every rank's
 * shard, writes manifest.json (tmp + fsync + rename), renames the step
 * directory into place, swaps `latest` and applies retention. Nothing is
 * ever written into an existing step directory. 0 or an exit code (a
 * failed PREVIOUS save is reported here too). */
int llmt_ckpt_save(llmt_ckpt_writer *w, long step, const llmt_ckpt_state *st,
                   char *err, size_t errlen);
/* Non-blocking: 1 idle (last save complete), 0 in flight, or an exit code
 * (> 1) when the last save failed (err says why). */
int llmt_ckpt_poll(llmt_ckpt_writer *w, char *err, size_t errlen);
/* Wait for the save in flight (rank 0: until its manifest and `latest` are
 * durable). 0 or an exit code. Call before exit. */
int llmt_ckpt_wait(llmt_ckpt_writer *w, char *err, size_t errlen);
/* How long rank 0 waits for every rank's shard of a save before it gives
 * the checkpoint up: LLM_TRAIN_CKPT_TIMEOUT seconds, default 1800. */
double llmt_ckpt_timeout(void);
void llmt_ckpt_writer_free(llmt_ckpt_writer *w);   /* waits first */

/* ---- reading --------------------------------------------------------- */
typedef struct llmt_ckpt llmt_ckpt;

/* Resolve what to resume from: a step directory (holds manifest.json, or
 * is named step_N or holds a shard: its manifest missing is then
 * llmt_ckpt_open's 65, a broken checkpoint) is returned as is; a CKPT_DIR
 * gives its newest complete checkpoint (by generation, then creation
 * time: llmt/ckptgen.h; sizes checked,
 * checksums are checked by the load). 0, 66 when there is none (or no such
 * directory), 74 when the CKPT_DIR cannot be listed, or another exit code. */
int llmt_ckpt_resolve(const char *path, char *out, size_t outlen, char *err, size_t errlen);
/* One pass over CKPT_DIR dir: its newest complete checkpoint into newest
 * ("" none), and what is not a complete checkpoint (a step_N directory
 * whose manifest or files do not check (sizes), a .tmp.step_N.* directory
 * a save or an import cut short left): their count in *ninc, their names
 * comma-separated into names (cut with ", ..." when long), and the
 * largest generation of the complete ones into *maxgen (may be NULL; 0
 * none). The count of complete checkpoints, -1 with errno when dir cannot
 * be listed (opened or read to its end). */
int llmt_ckpt_scan(const char *dir, char *newest, size_t nlen, char *names, size_t len, int *ninc,
                   long long *maxgen);

/* Open a step directory: parse and check the manifest (sizes of the shard
 * files too; checksums are verified by llmt_ckpt_load). NULL with *code
 * and err on failure. */
llmt_ckpt *llmt_ckpt_open(const char *stepdir, int *code, char *err, size_t errlen);
void llmt_ckpt_close(llmt_ckpt *c);
void llmt_ckpt_layout(const llmt_ckpt *c, int *tp, int *pp, int *dp, int *world);
const char *llmt_ckpt_train_json(const llmt_ckpt *c);   /* "{}" when none */
/* 0 when the stored model config has the same architecture as cfg; else
 * 64 and the first differing field in err. */
int llmt_ckpt_check_config(const llmt_ckpt *c, const llmt_config *cfg, char *err, size_t errlen);
/* Stored config (the architecture fields; others keep their defaults):
 * generate and gather read a checkpoint's model from it. */
int llmt_ckpt_config(const llmt_ckpt *c, llmt_config *cfg);
/* Copy of blob `name` saved by rank `rank` (of the SAVING layout) into a
 * malloc'd buffer. 0, 65 when the checkpoint lacks it (not in the
 * manifest, its file absent or short: a broken checkpoint, as a missing
 * shard), 74 on a read the file system refused. */
int llmt_ckpt_blob_get(const llmt_ckpt *c, const char *name, int rank,
                       void **data, size_t *len, char *err, size_t errlen);
/* Collective over st->world_comm: fill st->bufs (any dtype conversion
 * between f32 and bf16 is done) from whichever shard files hold the
 * logical ranges this rank's table needs, verify the checksum of every
 * shard file (spread over the ranks) and agree on the outcome. 0 or an
 * exit code; on failure the buffers may be partly written. */
int llmt_ckpt_load(llmt_ckpt *c, const llmt_ckpt_state *st, char *err, size_t errlen);

/* ---- commands (dispatched by main.c; argv[0] is the subcommand) --------- */
int llmt_ckpt_cmd_verify(int argc, char **argv);  /* ckpt-verify DIR */
int llmt_ckpt_cmd_list(int argc, char **argv);    /* ckpt-list [--quick] CKPT_DIR */
int llmt_ckpt_cmd_export(int argc, char **argv);  /* export [--dtype bf16|fp32] CKPT OUTDIR */
int llmt_ckpt_cmd_import(int argc, char **argv);  /* import HFDIR CKPT_DIR */

/* Fine-tuning start (--init-from HFDIR): fill the st->bufs whose kind is
 * "master" (or any buf with kind "weights") from HFDIR/model.safetensors,
 * checking HFDIR/config.json against st->config. Not collective. */
int llmt_ckpt_init_from(const char *hfdir, const llmt_ckpt_state *st, char *err, size_t errlen);

/* One process's whole model (tp = pp = 1 table of llmt_model_table, fp32
 * flat weights; *tab and *flat malloc'd, free() them), for generate:
 * - llmt_hf_load: from HFDIR (config.json and safetensors checked as
 *   import checks them; tokfile, or HFDIR's tokenizer, has vocab_size ids);
 * - llmt_ckpt_gather: from a checkpoint (a step directory or CKPT_DIR's
 *   newest) saved under any layout, checksums verified.
 * 0 or an exit code with one line in err. */
int llmt_hf_load(const char *hfdir, const char *tokfile, llmt_config *cfg, llmt_param_info **tab, int *ntab,
                 size_t *nflat, float **flat, char *err, size_t errlen);
/* HFDIR as given, or, for the root of a Hugging Face cache repo
 * (models--ORG--NAME: no config.json, a snapshots/ directory), the
 * snapshot its refs/main names, into out (ckpt_hfcache.c). refs/main must
 * hold one revision (a commit hash or a plain name: no '/', no leading
 * '.'): else 64; its snapshot missing: 66. 0 or an exit code with err. */
int llmt_hf_resolve(const char *hfdir, char *out, size_t len, char *err, size_t errlen);
/* --seq T against HFDIR/config.json's sliding window and its
 * max_position_embeddings (ckpt_hfconfig.c): 64 with err when T exceeds
 * one; 0 when within them, when there is none,
 * or when config.json cannot be read (--init-from says so later). */
int llmt_hf_check_seq(const char *hfdir, int T, char *err, size_t errlen);
/* HFDIR's tokenizer file (tokenizer.model, else tokenizer.json) into buf,
 * or NULL when it has neither. */
const char *llmt_hf_tokenizer(const char *hfdir, char *buf, size_t len);
int llmt_ckpt_gather(const char *path, llmt_config *cfg, llmt_param_info **tab, int *ntab, size_t *nflat,
                     float **flat, char *err, size_t errlen);

#endif
