/* mask.h: loss-mask shards of instruction data (doc/contracts.md, "Files"):
 * NAME.mask beside the token shard NAME.bin, a 256 x int32 header (magic
 * 20241202, version 1, token count, sequence length) then one flag byte
 * per token of NAME.bin: which tokens are trained on, where samples start. */
#ifndef LLMT_MASK_H
#define LLMT_MASK_H
#include <stddef.h>
#include <stdint.h>

#define LLMT_MASK_MAGIC 20241202
#define LLMT_MASK_VERSION 1
#define LLMT_MASK_TRAIN 1u   /* the token is a target of the loss (a response token) */
#define LLMT_MASK_START 2u   /* the token opens a sample: nothing before it is attended to */

typedef struct {
	int fd;
	uint64_t ntok;
	int seq;                 /* header word 3: tokenize-sft's --seq */
} llmt_mask;

/* The mask file of the token shard bin_path (".bin" replaced by ".mask"),
 * into out (cap bytes). */
void llmt_mask_path(const char *bin_path, char *out, size_t cap);
/* Open and check path against ntok tokens. 0, LLMT_EXIT_NOINPUT (no such
 * file: the shard has no mask) or LLMT_EXIT_DATA, with err naming it. */
int llmt_mask_open(llmt_mask *m, const char *path, uint64_t ntok, char *err, size_t errlen);
/* n flags from token off. 0 or LLMT_EXIT_IO with err. */
int llmt_mask_read(const llmt_mask *m, uint64_t off, size_t n, uint8_t *out, char *err,
	size_t errlen);
void llmt_mask_close(llmt_mask *m);
/* Write (tmp file + rename). 0 or LLMT_EXIT_IO with err. */
int llmt_mask_write(const char *path, const uint8_t *flags, size_t n, int seq, char *err,
	size_t errlen);

#endif
