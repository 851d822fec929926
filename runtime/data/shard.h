/* shard.h: llm.c token shards: a 256 x int32 header (magic 20240520,
 * version, token count, vocabulary size or 0) then count tokens: uint16
 * in version 1 (llm.c's), uint32 in version 2 (vocabularies over 65,536).
 * Opening checks the header against the file size; reading checks tokens
 * against the vocab. */
#ifndef LLMT_SHARD_H
#define LLMT_SHARD_H
#include <stddef.h>
#include <stdint.h>

#define LLMT_SHARD_MAGIC 20240520
#define LLMT_SHARD_VERSION 1         /* uint16 tokens (llm.c) */
#define LLMT_SHARD_VERSION_U32 2     /* uint32 tokens */
#define LLMT_SHARD_U16_VOCAB 65536   /* the largest vocabulary version 1 holds */
#define LLMT_SHARD_HEADER_INTS 256
#define LLMT_SHARD_HEADER_BYTES (LLMT_SHARD_HEADER_INTS * 4)

typedef struct {
	char *path;
	int fd;
	uint64_t ntok;
	int version;                 /* 1 or 2 */
	int width;                   /* bytes per token: 2 or 4 */
	uint32_t vocab;              /* header word 3: the tokenizer's vocabulary, 0 unknown */
} llmt_shard;

/* Open and check. Returns 0, or an exit code (LLMT_EXIT_DATA for a wrong
 * header or a size that does not match, LLMT_EXIT_NOINPUT when missing)
 * with one line in err naming the file. */
int llmt_shard_open(llmt_shard *s, const char *path, char *err, size_t errlen);
/* Read n tokens from token index off. Returns 0 or LLMT_EXIT_DATA/IO
 * (short read: the file changed; a token >= vocab) with err set. */
int llmt_shard_read(const llmt_shard *s, uint64_t off, size_t n, uint32_t *out,
	int vocab, char *err, size_t errlen);
void llmt_shard_close(llmt_shard *s);

/* Write a file of this header convention: the 256 x int32 header hdr,
 * then n items of w bytes (tmp file + rename). 0 or LLMT_EXIT_IO with err. */
int llmt_shard_write_raw(const char *path, const int32_t *hdr, const void *data, size_t w,
	size_t n, char *err, size_t errlen);
/* Write a version 1 shard (tmp file + rename). Returns 0 or LLMT_EXIT_IO with err. */
int llmt_shard_write(const char *path, const uint16_t *tok, size_t n, char *err, size_t errlen);
/* Write tokens of a vocabulary of `vocab` ids: version 1 while it fits
 * uint16 (vocab <= 65,536), else version 2; vocab goes into the header. */
int llmt_shard_write_ids(const char *path, const uint32_t *tok, size_t n, uint32_t vocab,
	char *err, size_t errlen);

#endif
