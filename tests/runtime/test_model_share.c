/* test_model_share.c: a bf16 model holding one DP rank's ZeRO-1 share of
 * the fp32 master (llmt_model_create_share) computes the same bits as the
 * whole-master model: its share, its replica weights (bf16 widened, fp32
 * copies of embedding and norms), its loss and gradients; a bit flip
 * reaches the weights the replicas compare whether or not the rank owns
 * the element; the share's own check sees a flip of the master alone.
 * Fails on a share model whose copies are not the master's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "model/bf16.h"
#include "model/model.h"
#include "model/model_impl.h"
#include "train/optim.h"

enum { B = 2, T = 32 };

static void config(llmt_config *c, int qk, int tied)
{
	llmt_config_defaults(c);
	c->vocab_size = 256, c->d_model = 64, c->n_layers = 2, c->n_heads = 4, c->n_kv_heads = 2;
	c->d_ff = 128, c->max_seq = 64, c->qk_norm = qk, c->tie_embeddings = tied;
}

static float step(llmt_model *m, const int32_t *tok, float **grads)
{
	float loss = 0;
	llmt_model_zero_grad(m);
	assert_int_equal(llmt_model_forward(m, 0, tok, NULL, tok + 1, NULL, &loss), 0);
	assert_int_equal(llmt_model_backward(m, 0, NULL, NULL, 1.0f), 0);
	*grads = llmt_model_grads(m);
	return loss;
}

static void same_as_whole(int qk, int tied, int dp, int r)
{
	llmt_config c;
	llmt_par par = { 1, 0, 1, 0, NULL };
	int32_t tok[B * T + 1];
	size_t lo, hi, n, nf;
	float *gw, *gs;

	config(&c, qk, tied);
	for (int i = 0; i < B * T + 1; i++)
		tok[i] = (int32_t)((i * 37 + 11) % c.vocab_size);
	llmt_model *w = llmt_model_create_rc(&c, &par, LLMT_BF16, B, T, 1, LLMT_RECOMPUTE_NONE);
	n = llmt_model_nparams(w);
	llmt_zero1_range(n, dp, r, &lo, &hi);
	llmt_model *s = llmt_model_create_share(&c, &par, LLMT_BF16, B, T, 1, LLMT_RECOMPUTE_NONE, lo, hi);
	assert_non_null(w);
	assert_non_null(s);
	size_t a, z;
	llmt_model_master_range(s, &a, &z);
	assert_true(a == lo && z == hi);
	assert_memory_equal(llmt_model_master(s), llmt_model_master(w) + lo, (hi - lo) * 4);
	assert_non_null(llmt_model_f32_copies(s, &nf));
	assert_true(nf > 0 && nf < n);
	assert_null(llmt_model_compute_bf16(w));

	/* the weights every replica holds: bf16 of the master, the master
	 * itself for the fp32 copies' tensors */
	float *buf = malloc(n * 4), *want = malloc(n * 4), *gcopy = malloc(n * 4);
	const float *rw = llmt_model_replica_weights(s, buf);
	const float *mw = llmt_model_master(w);
	assert_ptr_equal(llmt_model_replica_weights(w, NULL), mw);
	int np;
	const llmt_param_info *pi = llmt_model_params(w, &np);
	for (size_t i = 0; i < n; i++)
		want[i] = bf16_to_f32(f32_to_bf16(mw[i]));
	for (int t = 0; t < np; t++)
		if (pi[t].ndim == 1 || (t == 0 && !pi[t].tied_copy))
			memcpy(want + pi[t].offset, mw + pi[t].offset, pi[t].numel * 4);
	assert_memory_equal(rw, want, n * 4);

	float lw = step(w, tok, &gw);
	memcpy(gcopy, gw, n * 4);
	float ls = step(s, tok, &gs);
	assert_memory_equal(&lw, &ls, 4);
	assert_memory_equal(gcopy, gs, n * 4);

	/* a flip of element 0 (the embedding, read in fp32): in the master
	 * on its owner, in the copy elsewhere; either way the replicas see it */
	llmt_model_replica_weights(s, buf);
	memcpy(want, buf, n * 4);
	llmt_model_flip_bit(s, 0, 22);
	llmt_model_replica_weights(s, buf);
	assert_memory_not_equal(buf, want, 4);
	assert_memory_equal(buf + 1, want + 1, (n - 1) * 4);
	if (lo == 0)
		assert_memory_not_equal(llmt_model_master(s), llmt_model_master(w), 4);
	free(buf);
	free(want);
	free(gcopy);
	llmt_model_free(w);
	llmt_model_free(s);
}

static void test_share(void **st)
{
	(void)st;
	same_as_whole(0, 1, 2, 0);
	same_as_whole(0, 1, 2, 1);
	same_as_whole(1, 0, 3, 1);
	same_as_whole(1, 0, 3, 2);
}

/* the share's own check: its bf16 weights and fp32 copies follow from
 * it after init and after a sync; a flip of the master alone (a memory
 * fault at rest) is seen, in the sign and exponent always, in the lowest
 * mantissa bit where an fp32 copy holds the element; flip_bit (which
 * keeps the copies) is not the check's to see */
static void share_check(int dp, int r)
{
	llmt_config c;
	llmt_par par = { 1, 0, 1, 0, NULL };
	size_t lo, hi, at;
	config(&c, 1, 0);
	llmt_model *w = llmt_model_create_rc(&c, &par, LLMT_BF16, B, T, 1, LLMT_RECOMPUTE_NONE);
	assert_non_null(w);
	llmt_zero1_range(llmt_model_nparams(w), dp, r, &lo, &hi);
	llmt_model_free(w);
	llmt_model *s = llmt_model_create_share(&c, &par, LLMT_BF16, B, T, 1, LLMT_RECOMPUTE_NONE, lo, hi);
	assert_non_null(s);
	assert_int_equal(llmt_model_share_check(s), 0);
	llmt_model_sync_compute(s);
	assert_int_equal(llmt_model_share_check(s), 0);
	assert_int_equal(llmt_model_flip_master(s, 30, &at), 0);
	assert_int_equal(at, lo);
	/* its bf16 weight, and its fp32 copy where it has one */
	assert_int_equal(llmt_model_share_check(s), 1 + (llmt_model_w32(s, lo) != NULL));
	assert_int_equal(llmt_model_flip_master(s, 30, &at), 0);
	assert_int_equal(llmt_model_share_check(s), 0);
	if (lo == 0) {          /* the embedding: an fp32 copy, compared bit for bit */
		assert_int_equal(llmt_model_flip_master(s, 0, &at), 0);
		assert_true(llmt_model_share_check(s) >= 1);     /* and the bf16 rounding, at a tie */
		assert_int_equal(llmt_model_flip_master(s, 0, &at), 0);
		assert_int_equal(llmt_model_share_check(s), 0);
	}
	llmt_model_flip_bit(s, lo + 5, 22);
	assert_int_equal(llmt_model_share_check(s), 0);
	llmt_model_free(s);
}

static void test_share_check(void **st)
{
	(void)st;
	share_check(2, 0);
	share_check(2, 1);
	share_check(3, 2);
}

/* fp32 has no compute copy: the master stays whole */
static void test_fp32_whole(void **st)
{
	(void)st;
	llmt_config c;
	llmt_par par = { 1, 0, 1, 0, NULL };
	size_t a, z;
	config(&c, 0, 1);
	llmt_model *m = llmt_model_create_share(&c, &par, LLMT_FP32, B, T, 1, LLMT_RECOMPUTE_NONE, 0, 10);
	assert_non_null(m);
	llmt_model_master_range(m, &a, &z);
	assert_true(a == 0 && z == llmt_model_nparams(m));
	llmt_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_fp32_whole),
		cmocka_unit_test(test_share_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
