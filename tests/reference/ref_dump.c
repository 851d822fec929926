/* ref_dump.c: writes the directory of the reference-check protocol
 * (read by ref_dump.py), shared by the CPU driver ref_model.c and the
 * GPU driver tests/gpu/gpu_test.c so both write the same files. */
#include "ref_dump.h"

#include <stdio.h>

int ref_dump_file(const char *prog, const char *dir, const char *name, const void *p,
				  size_t bytes)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f)) {
		fprintf(stderr, "%s: cannot write %s\n", prog, path);
		return -1;
	}
	return 0;
}

int ref_dump_params(const char *prog, llmt_model *m, const char *dir)
{
	int np;
	const llmt_param_info *pi = llmt_model_params(m, &np);
	char path[4096];
	snprintf(path, sizeof path, "%s/params.txt", dir);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "%s: cannot write %s\n", prog, path);
		return -1;
	}
	for (int i = 0; i < np; i++)
		fprintf(f, "%s %d %lld %lld %zu %zu %d\n", pi[i].name, pi[i].ndim,
				(long long)pi[i].shape[0], (long long)pi[i].shape[1], pi[i].offset, pi[i].numel,
				pi[i].no_decay);
	fclose(f);
	return ref_dump_file(prog, dir, "params.bin", llmt_model_master(m),
						 llmt_model_nparams(m) * 4);
}

int ref_dump_step0(const char *prog, llmt_model *m, const char *dir, const int32_t *tok,
				   const int32_t *tgt, const float *logits, int M, int V)
{
	return ref_dump_file(prog, dir, "tokens.bin", tok, (size_t)M * 4) ||
		   ref_dump_file(prog, dir, "targets.bin", tgt, (size_t)M * 4) ||
		   ref_dump_file(prog, dir, "logits.bin", logits, (size_t)M * V * 4) ||
		   ref_dump_file(prog, dir, "grads.bin", llmt_model_grads(m), llmt_model_nparams(m) * 4)
			   ? -1 : 0;
}
