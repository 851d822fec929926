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
/* a file tokenizer and what generate has streamed since its last start:
 * every id decodes together with the ones before it, so a piece's leading
 * space (SentencePiece) and a character cut into byte pieces come out
 * right; a trailing U+FFFD (an incomplete character) is held back. Once
 * nothing is held back the ids before the last are dropped (compact). */
struct file_tok {
	llmt_tok *tok;
	uint32_t *ids;
	size_t n, cap, emitted;
};

static int file_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, char *err,
                       size_t errlen)
{
	struct file_tok *f = ctx;
	llmt_ids v = { NULL, 0, 0 };
	int rc = llmt_tok_encode(f->tok, text, len, &v, err, errlen);
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

static int push(struct file_tok *f, uint32_t id)
{
	if (f->n == f->cap) {
		size_t nc = f->cap ? 2 * f->cap : 256;
		uint32_t *p = realloc(f->ids, nc * sizeof *p);
		if (!p)
			return -1;
		f->ids = p, f->cap = nc;
	}
	f->ids[f->n++] = id;
	return 0;
}

/* Everything decoded so far is out (nothing held back): the stream
 * restarts from its last id alone, which stays as context for the next
 * one's leading space. Decoding stays linear in the tokens streamed. */
static int compact(struct file_tok *f)
{
	char *s = NULL, err[256];
	size_t ns = 0;

	f->ids[0] = f->ids[f->n - 1];
	f->n = 1;
	if (llmt_tok_decode(f->tok, f->ids, 1, &s, &ns, err, sizeof err))
		return -1;
	f->emitted = ns;
	free(s);
	return 0;
}

/* the new bytes of the streamed text after id (prev -1: a new stream) */
static int file_decode(void *ctx, int32_t prev, int32_t id, char *buf, size_t cap)
{
	struct file_tok *f = ctx;
	char *s = NULL, err[256];
	size_t ns = 0, end;

	if (id < 0 || id >= llmt_tok_vocab(f->tok))
		return -1;
	if (prev < 0)
		f->n = f->emitted = 0;
	if (f->n == 0 && prev >= 0) { /* the stream continues a prompt: its last id is context */
		if (push(f, (uint32_t)prev) || llmt_tok_decode(f->tok, f->ids, 1, &s, &ns, err, sizeof err))
			return -1;
		f->emitted = ns;
		free(s);
		s = NULL;
	}
	if (push(f, (uint32_t)id))
		return -1;
	if (llmt_tok_decode(f->tok, f->ids, f->n, &s, &ns, err, sizeof err))
		return -1;
	end = ns;
	while (end >= 3 && !memcmp(s + end - 3, "\xef\xbf\xbd", 3))
		end -= 3;
	if (end < f->emitted)
		end = f->emitted;
	size_t m = end - f->emitted < cap ? end - f->emitted : cap;
	memcpy(buf, s + f->emitted, m);
	f->emitted += m;
	free(s);
	if (f->emitted == ns && f->n > 1 && compact(f))
		return -1;
	return (int)m;
}

static void file_close(void *ctx)
{
	struct file_tok *f = ctx;
	llmt_tok_close(f->tok);
	free(f->ids);
	free(f);
}

static int file_open(const char *path, llmt_tokseam *t, char *err, size_t errlen)
{
	struct file_tok *f = calloc(1, sizeof *f);
	if (!f) {
		snprintf(err, errlen, "tokenizer %s: out of memory", path);
		return LLMT_EXIT_SOFTWARE;
	}
	int rc = llmt_tok_open(&f->tok, path, err, errlen);
	if (rc) {
		free(f);
		return rc;
	}
	*t = (llmt_tokseam){ llmt_tok_kind(f->tok), llmt_tok_vocab(f->tok), llmt_tok_bos(f->tok),
	                     llmt_tok_eos(f->tok), f, file_encode, file_decode, file_close };
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
