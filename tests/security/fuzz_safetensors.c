/* fuzz_safetensors.c: fuzz target for a Hugging Face safetensors file as
 * `llm-train import` / --init-from read it (st_read_header into a
 * ck_source, then every tensor read back). Input: the file's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt/ckpt_int.h"
#include "fuzz_util.h"
#include "ckpt/safetensors.h"

#define MAX_READ (1u << 18)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ck_source s;
	char err[2048];

	if (size > (4u << 20))
		return 0;
	fuzz_write(0, "model.safetensors", data, size);
	memset(&s, 0, sizeof s);
	snprintf(s.dir, sizeof s.dir, "%s", fuzz_dir());
	if (st_read_header(&s, "model.safetensors", err, sizeof err) == 0 &&
	    ck_source_finish(&s, err, sizeof err) == 0) {
		for (int k = 0; k < s.nkinds; k++)
			for (int t = 0; t < s.ntensors; t++) {
				uint64_t n = (uint64_t)s.tensors[t].rows * (uint64_t)s.tensors[t].cols;
				if (n > MAX_READ)
					continue;
				float *dst = malloc(n * sizeof(float) + 1);
				if (!dst)
					abort();
				ck_source_read_tensor(&s, k, t, dst, LLMT_CKPT_F32, err, sizeof err);
				free(dst);
			}
	} else if (!memchr(err, 0, sizeof err)) {
		abort();
	}
	ck_source_free(&s);
	return 0;
}
