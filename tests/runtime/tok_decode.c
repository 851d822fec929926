/* tok_decode.c: test helper: decode the token shards given, in order, with
 * a tokenizer (runtime/data/tokenizer.h) and write the text to stdout, so
 * a test can compare it with the text tokenized, byte for byte.
 *   tok_decode TOKENIZER SHARD... */
#include <stdio.h>
#include <stdlib.h>
#include "data/shard.h"
#include "data/tokenizer.h"

int main(int argc, char **argv)
{
	char err[4400], *text;
	llmt_tok *t;
	llmt_ids ids = { 0 };
	size_t len;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: tok_decode TOKENIZER SHARD...\n");
		return 64;
	}
	if ((rc = llmt_tok_open(&t, argv[1], err, sizeof(err)))) {
		fprintf(stderr, "tok_decode: %s\n", err);
		return rc;
	}
	for (int i = 2; i < argc; i++) {
		llmt_shard s;
		if ((rc = llmt_shard_open(&s, argv[i], err, sizeof(err)))) {
			fprintf(stderr, "tok_decode: %s\n", err);
			return rc;
		}
		ids.v = realloc(ids.v, sizeof(uint32_t) * (ids.n + s.ntok + 1));
		if (!ids.v)
			return 70;
		rc = llmt_shard_read(&s, 0, (size_t)s.ntok, ids.v + ids.n, llmt_tok_vocab(t), err, sizeof(err));
		llmt_shard_close(&s);
		if (rc) {
			fprintf(stderr, "tok_decode: %s\n", err);
			return rc;
		}
		ids.n += s.ntok;
	}
	if ((rc = llmt_tok_decode(t, ids.v, ids.n, &text, &len, err, sizeof(err)))) {
		fprintf(stderr, "tok_decode: %s\n", err);
		return rc;
	}
	rc = fwrite(text, 1, len, stdout) == len ? 0 : 74;
	free(text);
	free(ids.v);
	llmt_tok_close(t);
	return rc;
}
