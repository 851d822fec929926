/* bpe_int.h: the loaded byte-level BPE shared by bpe_load.c (reads
 * tokenizer.json) and bpe.c (encodes and decodes): tables keyed by id. */
#ifndef LLMT_BPE_INT_H
#define LLMT_BPE_INT_H
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include "bpe.h"

#define BPE_NONE UINT32_MAX
#define BPE_MAX_RE 4
#define BPE_CACHE_SLOTS 65536
#define BPE_CACHE_BYTES 48      /* pieces up to this long are cached */
#define BPE_CACHE_IDS 16

typedef struct {
	uint32_t a, b, rank, id;        /* merge a+b -> id, rank = line in merges */
} bpe_merge;

typedef struct {
	uint64_t hash;
	uint8_t len, nids;
	char piece[BPE_CACHE_BYTES];
	uint32_t ids[BPE_CACHE_IDS];
} bpe_cached;

struct llmt_bpe {
	uint32_t n;                     /* ids 0..n-1 */
	char **tok;                     /* id -> token as the file spells it (NULL: unused id) */
	uint32_t *toklen;
	uint8_t *special;               /* id is an added token */
	uint32_t *str_slot;             /* token string -> id+1, open addressing */
	uint32_t str_mask;
	bpe_merge *merges;              /* (a, b) -> merge, open addressing, a = BPE_NONE empty */
	uint32_t merge_mask;
	uint32_t byte_id[256];          /* id of each byte's one-character token */
	uint16_t byte_cp[256];          /* byte -> code point of the byte-level alphabet */
	int16_t cp_byte[512];           /* code point -> byte, -1 none */
	pcre2_code *re[BPE_MAX_RE];
	int nre;                        /* Split stages, then the ByteLevel regex if any */
	int bl_stage;                   /* the stage ByteLevel's add_prefix_space applies to */
	int add_prefix_space, ignore_merges;
	int nfc;                        /* normalizer NFC (Qwen 2/3) */
	uint32_t *added;                /* added token ids, longest first */
	int nadded;
	uint8_t added_first[256];       /* some added token starts with this byte */
	int bos, eos, pad;
	pcre2_match_data *md;
	bpe_cached *cache;
};

/* string -> id, or BPE_NONE */
uint32_t llmt_bpe_lookup(const llmt_bpe *b, const char *s, size_t len);
/* the merge of (a, b), or NULL */
const bpe_merge *llmt_bpe_merge_of(const llmt_bpe *b, uint32_t a, uint32_t c);

#endif
