/* fuzz_shard.c: fuzz target for llm.c token shards as the data loader
 * reads them (llmt_shard_open checks the header against the file size,
 * llmt_shard_read checks each token against the vocab). Input: the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "data/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	llmt_shard s;
	char err[1024];
	uint32_t buf[512];
	const char *path;

	if (size > (4u << 20))
		return 0;
	path = fuzz_write(0, "shard.bin", data, size);
	if (llmt_shard_open(&s, path, err, sizeof err) != 0) {
		if (!memchr(err, 0, sizeof err))
			abort();
		return 0;
	}
	if (s.ntok * (uint64_t)s.width + 1024 != size)
		abort();   /* open must have checked the size */
	int vocab = size > 1024 ? 1 + data[1024] * 256 : 50257;
	for (uint64_t off = 0; off < s.ntok; off += 512) {
		size_t n = s.ntok - off < 512 ? (size_t)(s.ntok - off) : 512;
		if (llmt_shard_read(&s, off, n, buf, vocab, err, sizeof err) != 0)
			break;
		for (size_t i = 0; i < n; i++)
			if (buf[i] >= (uint32_t)vocab)
				abort();   /* a token past the vocab must be refused */
	}
	/* reads past the end are refused, never served */
	if (llmt_shard_read(&s, s.ntok, 1, buf, 65536, err, sizeof err) == 0)
		abort();
	llmt_shard_close(&s);
	return 0;
}
