/* tok_iface.c: llmt_tokseam_open (pick a tokenizer for a file) and the
 * tokenizers behind the seam of tok_iface.h: byte-level, and a model's own
 * (tokenizer.h). Another tokenizer joins by adding its opener to `openers`. */
#include "tok_iface.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "llmt/exitcodes.h"
#include "tokenize.h"
#include "tokenizer.h"

static int byte_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, char *err,
                       size_t errlen)
{
	(void)ctx;
	*ids = malloc((len ? len : 1) * sizeof **ids);
	if (!*ids) {
		snprintf(err, errlen, "out of memory (%zu bytes of text)", len);
		return LLMT_EXIT_SOFTWARE;
	}
	for (size_t i = 0; i < len; i++)
		(*ids)[i] = (unsigned char)text[i];
	*n = len;
	return 0;
}

static int byte_decode(void *ctx, int32_t prev, int32_t id, char *buf, size_t cap)
{
	(void)ctx;
	(void)prev;
	if (id < 0 || id >= LLMT_BYTE_VOCAB || cap < 1)
		return -1;
	buf[0] = (char)id;
	return 1;
}

/* a model's own tokenizer (tokenizer.h: SentencePiece or tokenizer.json) */
static int file_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, char *err,
                       size_t errlen)
{
	llmt_ids v = { NULL, 0, 0 };
	int rc = llmt_tok_encode(ctx, text, len, &v, err, errlen);
	if (rc) {
		free(v.v);
		return rc;
	}
	*ids = malloc((v.n ? v.n : 1) * sizeof **ids);
	if (!*ids) {
		free(v.v);
		snprintf(err, errlen, "out of memory (%zu tokens)", v.n);
		return LLMT_EXIT_SOFTWARE;
	}
	for (size_t i = 0; i < v.n; i++)
		(*ids)[i] = (int32_t)v.v[i];
	*n = v.n;
	free(v.v);
	return 0;
}

/* the bytes id adds after prev: decode(prev, id) less decode(prev), so a
 * piece's leading space (SentencePiece) survives streaming */
static int file_decode(void *ctx, int32_t prev, int32_t id, char *buf, size_t cap)
{
	uint32_t two[2] = { (uint32_t)prev, (uint32_t)id };
	char *a = NULL, *b = NULL, err[256];
	size_t na = 0, nb = 0;
	int k = prev >= 0, out = -1;

	if (id < 0 || id >= llmt_tok_vocab(ctx))
		return -1;
	if (llmt_tok_decode(ctx, two + !k, 1 + (size_t)k, &b, &nb, err, sizeof err) == 0 &&
	    (!k || llmt_tok_decode(ctx, two, 1, &a, &na, err, sizeof err) == 0)) {
		size_t skip = k && nb >= na && !memcmp(a, b, na) ? na : 0;
		size_t m = nb - skip < cap ? nb - skip : cap;
		memcpy(buf, b + skip, m);
		out = (int)m;
	}
	free(a);
	free(b);
	return out;
}

static void file_close(void *ctx)
{
	llmt_tok_close(ctx);
}

static int file_open(const char *path, llmt_tokseam *t, char *err, size_t errlen)
{
	llmt_tok *tok = NULL;
	int rc = llmt_tok_open(&tok, path, err, errlen);
	if (rc)
		return rc;
	*t = (llmt_tokseam){ llmt_tok_kind(tok), llmt_tok_vocab(tok), llmt_tok_bos(tok), llmt_tok_eos(tok),
	                     tok, file_encode, file_decode, file_close };
	return 0;
}

/* the tokenizers that read files, tried in order */
static const llmt_tokseam_opener openers[] = { file_open };

int llmt_tokseam_open(const char *path, llmt_tokseam *t, char *err, size_t errlen)
{
	struct stat sb;

	memset(t, 0, sizeof *t);
	if (!path || !strcmp(path, "byte")) {
		*t = (llmt_tokseam){ "byte", LLMT_BYTE_VOCAB, -1, -1, NULL, byte_encode, byte_decode, NULL };
		return 0;
	}
	if (stat(path, &sb) != 0) {
		snprintf(err, errlen, "tokenizer %s: no such file", path);
		return LLMT_EXIT_NOINPUT;
	}
	for (size_t i = 0; i < sizeof openers / sizeof openers[0]; i++) {
		int rc;
		if (!openers[i])
			continue;
		rc = openers[i](path, t, err, errlen);
		if (rc != LLMT_TOKSEAM_NOT_MINE)
			return rc;
	}
	snprintf(err, errlen, "tokenizer %s: no tokenizer of this build reads this file (byte-level only: --tokenizer byte)",
	         path);
	return LLMT_EXIT_USAGE;
}

void llmt_tokseam_close(llmt_tokseam *t)
{
	if (t->close)
		t->close(t->ctx);
	memset(t, 0, sizeof *t);
}
