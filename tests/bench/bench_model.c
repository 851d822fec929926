/* bench_model.c: training tokens/s of the model on this machine: forward,
 * backward and an AdamW update (optim.h's llmt_adamw_update over the flat
 * buffer) per step, on bytes of a real text file; the first step is a
 * warm-up and not timed. Prints "tokens_per_s X cpu_tokens_per_s Y
 * flops_per_token Z": X from wall time, Y from the process's CPU time
 * divided by the thread count (what X would be with the cores to itself:
 * the fair figure on a shared, overloaded machine).
 * usage: bench_model CONFIG fp32|bf16 B T STEPS TEXTFILE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include "model/model.h"
#include "train/optim.h"

static double now(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: bench_model CONFIG fp32|bf16 B T STEPS TEXTFILE\n");
		return 64;
	}
	llmt_config c;
	char err[512];
	if (llmt_config_load(argv[1], &c, err, sizeof err)) {
		fprintf(stderr, "bench_model: %s\n", err);
		return 64;
	}
	llmt_prec prec = strcmp(argv[2], "bf16") ? LLMT_FP32 : LLMT_BF16;
	int B = atoi(argv[3]), T = atoi(argv[4]), steps = atoi(argv[5]), M = B * T;
	FILE *f = fopen(argv[6], "rb");
	unsigned char *text = malloc((size_t)M * (steps + 1) + 1);
	size_t got = f && text ? fread(text, 1, (size_t)M * (steps + 1) + 1, f) : 0;
	if (f)
		fclose(f);
	if (got < (size_t)M + 1) {
		fprintf(stderr, "bench_model: cannot read %d bytes of %s\n", M + 1, argv[6]);
		return 66;
	}
	llmt_par par = { 1, 0, 1, 0, NULL };
	llmt_model *m = llmt_model_create(&c, &par, prec, B, T, 1);
	if (!m)
		return 70;
	size_t n = llmt_model_nparams(m);
	int np;
	const llmt_param_info *pi = llmt_model_params(m, &np);
	float *mo = calloc(n, 4), *vo = calloc(n, 4);
	int32_t *tok = malloc(sizeof *tok * M), *tgt = malloc(sizeof *tgt * M);
	if (!mo || !vo || !tok || !tgt)
		return 70;
	llmt_adamw_cfg ac = { 0.9, 0.95, 1e-8, 0.1, 0.0 };
	double t0 = 0, c0 = 0;
	float loss = 0;
	for (int s = 0; s <= steps; s++) {
		if (s == 1) {
			t0 = now(CLOCK_MONOTONIC);
			c0 = now(CLOCK_PROCESS_CPUTIME_ID);
		}
		size_t base = got > (size_t)M + 1 ? ((size_t)s * M) % (got - M - 1) : 0;
		for (int i = 0; i < M; i++) {
			tok[i] = text[base + i];
			tgt[i] = text[base + i + 1];
		}
		llmt_model_zero_grad(m);
		if (llmt_model_forward(m, 0, tok, NULL, tgt, NULL, &loss) ||
			llmt_model_backward(m, 0, NULL, NULL, 1.0f))
			return 70;
		for (int t = 0; t < np; t++)
			llmt_adamw_update(llmt_model_master(m) + pi[t].offset,
							  llmt_model_grads(m) + pi[t].offset, mo + pi[t].offset,
							  vo + pi[t].offset, pi[t].numel, 3e-4, 1.0, &ac, s + 1,
							  !pi[t].no_decay);
		llmt_model_sync_compute(m);
	}
	double dt = now(CLOCK_MONOTONIC) - t0, dc = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("tokens_per_s %.1f cpu_tokens_per_s %.1f flops_per_token %.6g loss %.4f\n",
		   (double)M * steps / dt, (double)M * steps / (dc / omp_get_max_threads()),
		   llmt_config_flops_per_token(&c, T), loss);
	llmt_model_free(m);
	return 0;
}
