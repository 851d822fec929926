/* tokenizer.c: picking the tokenizer kind by the file, and SentencePiece
 * encoding in blocks (a long text costs SentencePiece tens of bytes of
 * memory per byte in one call). Each later block is encoded behind the two
 * bytes before its cut ("Y\n") and those bytes' ids are dropped, so the
 * dummy prefix SentencePiece puts at a text's start does not appear there.
 * Unigram models are not cut: their Viterbi sums scores in float from the
 * text's start, so a tie between two splits of a word can depend on all
 * the text before it (seen on KJV). */
#include "tokenizer.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "bpe.h"
#include "spm.h"

struct llmt_tok {
	llmt_spm *spm;
	llmt_bpe *bpe;
	char *path;
	size_t block;
};

static int is_json(const char *path)
{
	char c = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return 0;
	while (read(fd, &c, 1) == 1 && (c == ' ' || c == '\n' || c == '\r' || c == '\t'))
		;
	close(fd);
	return c == '{';
}

int llmt_tok_open(llmt_tok **out, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char file[4096];
	llmt_tok *t;
	int code = LLMT_EXIT_DATA;

	*out = NULL;
	snprintf(file, sizeof(file), "%s", path);
	if (stat(path, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_DATA;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(file, sizeof(file), "%s/tokenizer.model", path);
		if (access(file, F_OK))
			snprintf(file, sizeof(file), "%s/tokenizer.json", path);
		if (access(file, F_OK)) {
			snprintf(err, errlen, "%s: a directory with neither tokenizer.model nor tokenizer.json", path);
			return LLMT_EXIT_NOINPUT;
		}
	}
	if (stat(file, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", file);
		return LLMT_EXIT_DATA;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->path = strdup(file))) {
		free(t);
		snprintf(err, errlen, "%s: out of memory", path);
		return LLMT_EXIT_SOFTWARE;
	}
	t->block = 1 << 14;
	if (is_json(file))
		t->bpe = llmt_bpe_load(file, &code, err, errlen);
	else
		t->spm = llmt_spm_load(file, err, errlen);
	if (!t->bpe && !t->spm) {
		llmt_tok_close(t);
		return code;
	}
	if (t->spm && llmt_spm_unigram(t->spm))
		t->block = 0;
	*out = t;
	return 0;
}

void llmt_tok_close(llmt_tok *t)
{
	if (!t)
		return;
	llmt_spm_free(t->spm);
	llmt_bpe_free(t->bpe);
	free(t->path);
	free(t);
}

const char *llmt_tok_kind(const llmt_tok *t) { return t->spm ? "sentencepiece" : "tokenizer.json"; }
const char *llmt_tok_path(const llmt_tok *t) { return t->path; }
int llmt_tok_vocab(const llmt_tok *t) { return t->spm ? llmt_spm_size(t->spm) : llmt_bpe_size(t->bpe); }
int llmt_tok_bos(const llmt_tok *t) { return t->spm ? llmt_spm_bos(t->spm) : llmt_bpe_bos(t->bpe); }
int llmt_tok_eos(const llmt_tok *t) { return t->spm ? llmt_spm_eos(t->spm) : llmt_bpe_eos(t->bpe); }
int llmt_tok_pad(const llmt_tok *t) { return t->spm ? llmt_spm_pad(t->spm) : llmt_bpe_pad(t->bpe); }
void llmt_tok_set_block(llmt_tok *t, size_t bytes) { t->block = bytes; }

int llmt_tok_piece_id(const llmt_tok *t, const char *piece)
{
	return t->spm ? llmt_spm_piece_id(t->spm, piece) : llmt_bpe_token_id(t->bpe, piece);
}

static int printable(char c)
{
	return c >= ' ' && c < 0x7f;
}

/* where the block starting at `from` ends: a cut "Y\n|X" (Y and X
 * printable ASCII or a space) at or after from + block, or n */
static size_t block_end(const char *s, size_t n, size_t from, size_t block)
{
	if (!block || n - from <= block)
		return n;
	for (size_t i = from + block; i + 1 < n; i++)
		if (s[i] == '\n' && printable(s[i - 1]) && printable(s[i + 1]))
			return i + 1;
	return n;
}

/* a later block: encode "Y\n" + block, drop the ids of "Y\n" alone */
static int spm_later_block(const llmt_tok *t, const char *s, size_t at, size_t end, llmt_ids *ids,
	char *err, size_t errlen)
{
	uint32_t *pre = NULL;
	size_t npre = 0, cappre = 0, base = ids->n;
	char *buf = malloc(end - at + 2);
	int rc = -1;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return LLMT_EXIT_SOFTWARE;
	}
	memcpy(buf, s + at - 2, end - at + 2);
	if (!llmt_spm_encode(t->spm, buf, 2, &pre, &npre, &cappre, err, errlen) &&
	    !llmt_spm_encode(t->spm, buf, end - at + 2, &ids->v, &ids->n, &ids->cap, err, errlen)) {
		rc = ids->n - base >= npre && !memcmp(ids->v + base, pre, npre * sizeof(uint32_t)) ? 0 : 1;
		if (!rc) {
			memmove(ids->v + base, ids->v + base + npre, (ids->n - base - npre) * sizeof(uint32_t));
			ids->n -= npre;
		} else {
			snprintf(err, errlen, "block cut at byte %zu changes the encoding (try --block-bytes 0)", at);
		}
	}
	free(pre);
	free(buf);
	return rc ? LLMT_EXIT_DATA : 0;
}

int llmt_tok_encode(llmt_tok *t, const char *s, size_t n, llmt_ids *ids, char *err, size_t errlen)
{
	size_t at = 0;

	if (t->bpe)
		return llmt_bpe_encode(t->bpe, s, n, &ids->v, &ids->n, &ids->cap, err, errlen) ? LLMT_EXIT_DATA : 0;
	while (at < n) {
		size_t end = block_end(s, n, at, t->block);
		int rc = at == 0 ? (llmt_spm_encode(t->spm, s, end, &ids->v, &ids->n, &ids->cap, err, errlen) ? LLMT_EXIT_DATA : 0)
			: spm_later_block(t, s, at, end, ids, err, errlen);
		if (rc)
			return rc;
		at = end;
	}
	return 0;
}

int llmt_tok_decode(const llmt_tok *t, const uint32_t *ids, size_t n, char **out, size_t *outlen,
	char *err, size_t errlen)
{
	int rc = t->spm ? llmt_spm_decode(t->spm, ids, n, out, outlen, err, errlen)
		: llmt_bpe_decode(t->bpe, ids, n, out, outlen, err, errlen);

	return rc ? LLMT_EXIT_DATA : 0;
}
