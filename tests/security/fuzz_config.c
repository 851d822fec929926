/* fuzz_config.c: fuzz target for the model config YAML (--model FILE,
 * llmt_config_load), then the checks and sizes computed from it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/model/model_config.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	llmt_config c;
	char err[1024];
	const char *path;

	if (size > (1u << 20))
		return 0;
	path = fuzz_write(0, "model.yaml", data, size);
	llmt_config_defaults(&c);
	if (llmt_config_load(path, &c, err, sizeof err) != 0) {
		if (!memchr(err, 0, sizeof err))
			abort();
		return 0;
	}
	if (llmt_config_validate(&c, err, sizeof err) == 0) {
		llmt_config_n_params(&c);
		llmt_config_flops_per_token(&c, c.max_seq);
	}
	return 0;
}
