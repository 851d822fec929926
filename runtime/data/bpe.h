/* bpe.h: Hugging Face tokenizer.json byte-level BPE (GPT-2, Llama 3,
 * Qwen 2/3): load the file (jansson), split text at added tokens, then by
 * the pre-tokenizer's regular expressions (PCRE2, UTF + Unicode
 * properties), map bytes to the byte-level alphabet and merge by rank. */
#ifndef LLMT_BPE_H
#define LLMT_BPE_H
#include <stddef.h>
#include <stdint.h>

typedef struct llmt_bpe llmt_bpe;

/* Load tokenizer.json (and tokenizer_config.json beside it, when there,
 * for the BOS/EOS/pad names). NULL with one line in err and *code set to
 * an exit code (66 missing, 65 not a byte-level BPE we can run). */
llmt_bpe *llmt_bpe_load(const char *path, int *code, char *err, size_t errlen);
void llmt_bpe_free(llmt_bpe *b);
int llmt_bpe_size(const llmt_bpe *b);
int llmt_bpe_bos(const llmt_bpe *b);
int llmt_bpe_eos(const llmt_bpe *b);
int llmt_bpe_pad(const llmt_bpe *b);
/* id of a token (a piece of the vocabulary as the file spells it, or an
 * added token's content), -1 when absent */
int llmt_bpe_token_id(const llmt_bpe *b, const char *tok);

/* Encode n bytes of UTF-8 (as tokenizers' encode(text,
 * add_special_tokens=False)); appends to *ids. 0, or -1 with err set. */
int llmt_bpe_encode(llmt_bpe *b, const char *s, size_t n, uint32_t **ids, size_t *nids,
	size_t *cap, char *err, size_t errlen);
/* Decode (special tokens included): *out malloc'd, NUL-terminated. */
int llmt_bpe_decode(const llmt_bpe *b, const uint32_t *ids, size_t n, char **out,
	size_t *outlen, char *err, size_t errlen);

#endif
