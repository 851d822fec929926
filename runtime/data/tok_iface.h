/* tok_iface.h: the tokenizer seam: one struct of callbacks that every
 * tokenizer fills (byte-level, and tokenizer.h's SentencePiece and tokenizer.json: they plug
 * in through llmt_tok_openers in tok_iface.c), and the opener that picks
 * one for a file. Used by generate and by import's vocabulary check. */
#ifndef LLMT_TOK_IFACE_H
#define LLMT_TOK_IFACE_H
#include <stddef.h>
#include <stdint.h>

typedef struct llmt_tokseam {
	const char *kind;   /* "byte", "sentencepiece", "tokenizer.json", ... */
	int vocab;          /* ids lie in [0, vocab) */
	int bos, eos;       /* -1 when the tokenizer has none */
	void *ctx;
	/* text -> ids (malloc'd into *ids, *n of them). 0 or an exit code
	 * with one line in err. */
	int (*encode)(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, char *err,
	              size_t errlen);
	/* the bytes of one id (for streaming), given the previous id (-1 at
	 * the start) for tokenizers that drop a leading space; written to
	 * buf (cap bytes). Their count, or -1 for an id outside the vocab. */
	int (*decode)(void *ctx, int32_t prev, int32_t id, char *buf, size_t cap);
	void (*close)(void *ctx);
} llmt_tokseam;

/* An opener: 0 (t filled), an exit code with err, or LLMT_TOKSEAM_NOT_MINE
 * when the file is not of its format. */
#define LLMT_TOKSEAM_NOT_MINE (-1)
typedef int (*llmt_tokseam_opener)(const char *path, llmt_tokseam *t, char *err, size_t errlen);

/* path NULL or "byte": the byte-level tokenizer (vocab 256, no BOS/EOS).
 * Otherwise the first registered opener that takes the file. 0, or 66 (no
 * such file) / 64 (no tokenizer in this build reads it) / the opener's
 * code, with one line in err naming path. */
int llmt_tokseam_open(const char *path, llmt_tokseam *t, char *err, size_t errlen);
void llmt_tokseam_close(llmt_tokseam *t);

#endif
