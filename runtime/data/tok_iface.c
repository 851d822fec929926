/* tok_iface.c: llmt_tok_open (pick a tokenizer for a file) and the
 * byte-level tokenizer behind the seam of tok_iface.h. Another tokenizer
 * joins by adding its opener to `openers` below. */
#include "tok_iface.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "llmt/exitcodes.h"
#include "tokenize.h"

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

/* the tokenizers that read files, tried in order */
static const llmt_tok_opener openers[] = { NULL };

int llmt_tok_open(const char *path, llmt_tok *t, char *err, size_t errlen)
{
	struct stat sb;

	memset(t, 0, sizeof *t);
	if (!path || !strcmp(path, "byte")) {
		*t = (llmt_tok){ "byte", LLMT_BYTE_VOCAB, -1, -1, NULL, byte_encode, byte_decode, NULL };
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
		if (rc != LLMT_TOK_NOT_MINE)
			return rc;
	}
	snprintf(err, errlen, "tokenizer %s: no tokenizer of this build reads this file (byte-level only: --tokenizer byte)",
	         path);
	return LLMT_EXIT_USAGE;
}

void llmt_tok_close(llmt_tok *t)
{
	if (t->close)
		t->close(t->ctx);
	memset(t, 0, sizeof *t);
}
