/* tokenizer.h: a model's own tokenizer behind one interface: a
 * SentencePiece tokenizer.model (spm.h) or a Hugging Face tokenizer.json
 * byte-level BPE (bpe.h), picked by the file's content; a directory picks
 * its tokenizer.model, else its tokenizer.json. */
#ifndef LLMT_TOKENIZER_H
#define LLMT_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

typedef struct llmt_tok llmt_tok;

typedef struct {
	uint32_t *v;
	size_t n, cap;
} llmt_ids;

/* Open. Returns 0, or an exit code (66 missing, 65 unreadable or not a
 * tokenizer) with one line in err naming the file. */
int llmt_tok_open(llmt_tok **t, const char *path, char *err, size_t errlen);
void llmt_tok_close(llmt_tok *t);
const char *llmt_tok_kind(const llmt_tok *t);   /* "sentencepiece" or "tokenizer.json" */
const char *llmt_tok_path(const llmt_tok *t);   /* the file opened */
int llmt_tok_vocab(const llmt_tok *t);
/* special ids, -1 when the tokenizer has none */
int llmt_tok_bos(const llmt_tok *t);
int llmt_tok_eos(const llmt_tok *t);
int llmt_tok_pad(const llmt_tok *t);
/* id of a piece or token string (e.g. a chat marker), -1 when absent */
int llmt_tok_piece_id(const llmt_tok *t, const char *piece);

/* SentencePiece BPE texts longer than this many bytes (16 KiB unless
 * set; unigram models: never) are encoded in blocks
 * cut after a newline between printable ASCII characters or spaces, with the same ids as one encode of the whole text (checked
 * at each cut); 0: never cut. */
void llmt_tok_set_block(llmt_tok *t, size_t bytes);
/* Encode n bytes of UTF-8 text as one document (no BOS/EOS added);
 * appends to ids. 0, or LLMT_EXIT_DATA / LLMT_EXIT_SOFTWARE with err. */
int llmt_tok_encode(llmt_tok *t, const char *s, size_t n, llmt_ids *ids, char *err, size_t errlen);
/* Decode ids to text: *out malloc'd, NUL-terminated, *outlen bytes. */
int llmt_tok_decode(const llmt_tok *t, const uint32_t *ids, size_t n, char **out, size_t *outlen,
	char *err, size_t errlen);

#endif
