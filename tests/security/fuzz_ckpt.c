/* fuzz_ckpt.c: fuzz target for a checkpoint step directory as
 * `llm-train ckpt-verify` and a resuming rank read it: manifest.json
 * (ck_manifest_load, ck_validate_dir, llmt_ckpt_open) and the shard file
 * it describes (every tensor of every kind read back, blobs fetched).
 * Input: manifest text, then optionally a "%%" line and the bytes of
 * rank_00000.bin. A 16-character "@@@@@@@@@@@@@@@@" in the manifest is
 * replaced by the shard's real XXH3, so the fuzzer gets past the checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "ckpt/ckpt_int.h"
#include "fuzz_util.h"

#define MAX_READ (1u << 18)   /* elements read back per tensor */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *a, *b;
	size_t alen, blen;
	char err[2048];
	ck_manifest m;
	int code;

	if (size > (4u << 20))
		return 0;
	fuzz_split(data, size, &a, &alen, &b, &blen);
	uint8_t *man = malloc(alen + 1);
	if (!man)
		abort();
	memcpy(man, a, alen);
	{
		char hex[17];
		snprintf(hex, sizeof hex, "%016llx", (unsigned long long)XXH3_64bits(b ? b : (const uint8_t *)"", blen));
		for (size_t i = 0; i + 16 <= alen; i++)
			if (!memcmp(man + i, "@@@@@@@@@@@@@@@@", 16))
				memcpy(man + i, hex, 16);
	}
	fuzz_write(0, "manifest.json", man, alen);
	free(man);
	if (b)
		fuzz_write(1, "rank_00000.bin", b, blen);
	else
		fuzz_unlink("rank_00000.bin");
	const char *dir = fuzz_dir();

	if (ck_validate_dir(dir, 0, &m, err, sizeof err) == 0)
		ck_manifest_free(&m);
	if (ck_manifest_load(dir, 1, &m, err, sizeof err) == 0) {
		ck_source *s = &m.src;
		for (int k = 0; k < s->nkinds; k++) {
			for (int t = 0; t < s->ntensors; t++) {
				uint64_t n = (uint64_t)s->tensors[t].rows * (uint64_t)s->tensors[t].cols;
				if (n > MAX_READ)
					continue;
				float *dst = malloc(n * sizeof(float) + 1);
				if (!dst)
					abort();
				ck_source_read_tensor(s, k, t, dst, LLMT_CKPT_F32, err, sizeof err);
				ck_source_read_tensor(s, k, t, dst, LLMT_CKPT_BF16, err, sizeof err);
				free(dst);
			}
		}
		llmt_config cfg;
		llmt_config_defaults(&cfg);
		if (ck_config_from_json(m.model, &cfg, err, sizeof err) == 0)
			llmt_config_validate(&cfg, err, sizeof err);
		ck_manifest_free(&m);
	} else if (!memchr(err, 0, sizeof err)) {
		abort();
	}
	llmt_ckpt *c = llmt_ckpt_open(dir, &code, err, sizeof err);
	if (c) {
		void *blob = NULL;
		size_t len = 0;
		int tp, pp, dp, world;
		llmt_ckpt_layout(c, &tp, &pp, &dp, &world);
		llmt_ckpt_train_json(c);
		if (llmt_ckpt_blob_get(c, "data", 0, &blob, &len, err, sizeof err) == 0)
			free(blob);
		if (llmt_ckpt_blob_get(c, "rng", 0, &blob, &len, err, sizeof err) == 0)
			free(blob);
		llmt_ckpt_close(c);
	}
	return 0;
}
