/* tok_stream.c: test helper: encode a file's text with a tokenizer through
 * generate's seam (runtime/data/tok_iface.h), then decode it one id at a
 * time as generate streams it (each id with the one before), writing the
 * streamed bytes to stdout: a test compares them with the file.
 *   tok_stream TOKENIZER FILE [SPLIT] (the first SPLIT ids are the prompt) */
#include <stdio.h>
#include <stdlib.h>
#include "data/tok_iface.h"

int main(int argc, char **argv)
{
	char err[512], buf[4096], *text;
	llmt_tokseam t;
	int32_t *ids;
	size_t n, len;
	long split = argc > 3 ? atol(argv[3]) : 0;
	FILE *f;

	if (argc < 3 || !(f = fopen(argv[2], "rb")))
		return 64;
	text = malloc(1 << 20);
	len = fread(text, 1, 1 << 20, f);
	fclose(f);
	if (llmt_tokseam_open(argv[1], &t, err, sizeof err) ||
	    t.encode(t.ctx, text, len, &ids, &n, err, sizeof err)) {
		fprintf(stderr, "tok_stream: %s\n", err);
		return 65;
	}
	/* the prompt as generate echoes it: decoded whole, then the stream */
	for (size_t i = 0; i < n; i++) {
		int m = t.decode(t.ctx, i == 0 || (long)i < split ? -1 : ids[i - 1], ids[i], buf, sizeof buf);
		if (m < 0)
			return 65;
		fwrite(buf, 1, (size_t)m, stdout);
	}
	free(ids);
	free(text);
	llmt_tokseam_close(&t);
	return 0;
}
