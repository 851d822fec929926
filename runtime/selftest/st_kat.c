/* st_kat.c: the self-test's known-answer test (st_run.h): bf16 matrix
 * products with exact answers, and a fixed-seed forward and backward of a
 * small model, through the trainer's own kernels (model/matmul.h, the
 * AVX-512 or the portable copy chosen as the trainer chooses it). */
#include "st_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>
#include <xxhash.h>
#include "model/bf16.h"
#include "model/cpu.h"
#include "model/matmul.h"
#include "model/model.h"

/* value i of stream s: k/128 with k in [-128, 127], exact in bf16 */
static int kval(uint64_t s, size_t i)
{
	uint64_t z = s * 0x9e3779b97f4a7c15ULL + i + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (int)((z ^ (z >> 31)) & 0xff) - 128;
}

/* One product C = op(A) op(B) against its exact answer (integer sums of
 * k_a k_b, scaled by 2^-14: at most 2^24 steps, exact in fp32). Counts
 * the elements that differ into *bad; hashes C. */
static int product(int idx, int M, int N, int K, int ta, int tb, llmt_dt ct, XXH3_state_t *h, long *bad)
{
	size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
	bf16 *A = malloc(na * 2), *B = malloc(nb * 2);
	int *ka = malloc(na * sizeof(int)), *kb = malloc(nb * sizeof(int));
	void *C = malloc(nc * 4);
	int rc = -1;

	if (!A || !B || !ka || !kb || !C)
		goto out;
	for (size_t i = 0; i < na; i++)
		A[i] = f32_to_bf16((float)(ka[i] = kval(2 * (uint64_t)idx, i)) / 128);
	for (size_t i = 0; i < nb; i++)
		B[i] = f32_to_bf16((float)(kb[i] = kval(2 * (uint64_t)idx + 1, i)) / 128);
	if (llmt_mm(1, M, N, K, A, ta, B, tb, LLMT_DT_BF16, C, ct, 1.0f, 0))
		goto out;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			long s = 0;
			for (int k = 0; k < K; k++)
				s += (long)ka[ta ? (size_t)k * M + m : (size_t)m * K + k] *
					kb[tb ? (size_t)n * K + k : (size_t)k * N + n];
			float want = (float)s / 16384, got;
			size_t at = (size_t)m * N + n;
			if (ct == LLMT_DT_BF16) {
				want = bf16_to_f32(f32_to_bf16(want));
				got = bf16_to_f32(((bf16 *)C)[at]);
			} else
				got = ((float *)C)[at];
			if (memcmp(&got, &want, 4))
				(*bad)++;
		}
	XXH3_64bits_update(h, C, nc * (ct == LLMT_DT_BF16 ? 2 : 4));
	rc = 0;
out:
	free(A);
	free(B);
	free(ka);
	free(kb);
	free(C);
	return rc;
}

/* the forward and backward of a small model: loss, logits and 2-D
 * gradients into h (bit-exact), 1-D gradients' sum of squares */
static int model_kat(int full, XXH3_state_t *h, double *norm1d)
{
	llmt_config c;
	llmt_par par = { 1, 0, 1, 0, NULL };
	int B = full ? 4 : 2, T = full ? 128 : 64, n, rc = -1;
	llmt_model *m;
	int32_t *tok = malloc(sizeof(int32_t) * (size_t)(2 * B * T));
	float loss;

	llmt_config_defaults(&c);
	c.vocab_size = 256;
	c.d_model = full ? 256 : 128;
	c.n_layers = full ? 4 : 2;
	c.n_heads = full ? 8 : 4;
	c.n_kv_heads = c.n_heads / 2;
	c.d_ff = 3 * c.d_model;
	c.max_seq = T;
	c.qk_norm = 1;
	c.tie_embeddings = 1;
	c.z_loss = 1e-4;
	c.seed = 1234;
	if (!tok || !(m = llmt_model_create(&c, &par, LLMT_BF16, B, T, 1))) {
		free(tok);
		return -1;
	}
	for (int i = 0; i < 2 * B * T; i++)
		tok[i] = kval(99, (size_t)i) + 128;
	llmt_model_zero_grad(m);
	if (llmt_model_forward(m, 0, tok, NULL, tok + B * T, NULL, &loss) ||
	    llmt_model_backward(m, 0, NULL, NULL, 1.0f))
		goto out;
	XXH3_64bits_update(h, &loss, sizeof(loss));
	XXH3_64bits_update(h, llmt_model_logits(m, 0), sizeof(float) * (size_t)B * T * c.vocab_size);
	const llmt_param_info *pi = llmt_model_params(m, &n);
	const float *g = llmt_model_grads(m);
	*norm1d = 0;
	for (int i = 0; i < n; i++) {
		if (pi[i].ndim == 2) {
			XXH3_64bits_update(h, g + pi[i].offset, sizeof(float) * pi[i].numel);
			continue;
		}
		for (size_t k = 0; k < pi[i].numel; k++)
			*norm1d += (double)g[pi[i].offset + k] * g[pi[i].offset + k];
	}
	rc = 0;
out:
	llmt_model_free(m);
	free(tok);
	return rc;
}

void llmt_st_kat_run(int full, llmt_st_kat *out)
{
	/* M N K ta tb, C bf16 for the last: the trainer's shapes in small */
	static const int shapes[][6] = {
		{ 64, 64, 64, 0, 0, 0 }, { 128, 384, 128, 0, 1, 0 }, { 256, 128, 384, 1, 0, 0 },
		{ 16, 256, 1024, 1, 1, 0 }, { 1024, 128, 64, 0, 0, 0 }, { 192, 320, 256, 0, 1, 1 },
	};
	const dnnl_version_t *v = dnnl_version();
	XXH3_state_t *h = XXH3_createState();
	int reps = full ? 4 : 1;

	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s dnnl-%d.%d.%d isa-0x%x",
		llmt_cpu_avx512() ? (llmt_mm_bf16_native() ? "avx512-bf16" : "avx512-fp32mm") : "generic",
		v->major, v->minor, v->patch, (unsigned)dnnl_get_effective_cpu_isa());
	if (!h) {
		out->failed = 1;
		return;
	}
	XXH3_64bits_reset(h);
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < (int)(sizeof(shapes) / sizeof(shapes[0])); i++) {
			const int *s = shapes[i];
			int sc = r + 1; /* full: the same shapes, 1x to 4x as tall */
			if (product(i + 16 * r, s[0] * sc, s[1], s[2], s[3], s[4], s[5] ? LLMT_DT_BF16 : LLMT_DT_F32,
				    h, &out->ref_bad))
				out->failed = 1;
		}
	if (model_kat(full, h, &out->norm1d))
		out->failed = 1;
	out->hash = XXH3_64bits_digest(h);
	XXH3_freeState(h);
}
