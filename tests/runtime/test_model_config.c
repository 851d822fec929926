/* test_config.c: the model config reader: a good file loads with defaults
 * filled in; unknown keys, bad values, duplicates, missing keys and
 * inconsistent sizes are refused with file:line; a written config reads
 * back to the same values. The llama3 rope scaling: its keys load, hostile
 * values are refused naming them, and llmt_rope_inv_freq gives
 * transformers' _compute_llama3_parameters values (4.46.3, printed there). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "model/model.h"   /* brings runtime/model/model_config.h (a plain "config.h" is autoconf's here) */

static char path[64];

static int load(const char *text, llmt_config *c, char *err, size_t n)
{
	snprintf(path, sizeof path, "/tmp/llmt-cfg-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	int rc = llmt_config_load(path, c, err, n);
	unlink(path);
	return rc;
}

#define BASE "vocab_size: 256\nd_model: 64\nn_layers: 2\nn_heads: 4\nd_ff: 128\nmax_seq: 32\n"

static void good(void **st)
{
	(void)st;
	llmt_config c;
	char err[256];
	assert_int_equal(load(BASE "qk_norm: true\nseed: 9\n", &c, err, sizeof err), 0);
	assert_int_equal(c.d_model, 64);
	assert_int_equal(c.n_kv_heads, 4);
	assert_int_equal(c.qk_norm, 1);
	assert_int_equal(c.tie_embeddings, 1);
	assert_true(c.seed == 9);
	assert_true(c.rope_theta == 10000.0);
	/* 2 layers x (4*64*64 + 3*64*128 + 2*64) + 256*64 + 64 */
	assert_true(llmt_config_n_params(&c) == 2 * (4 * 64 * 64 + 3 * 64 * 128 + 128 + 2 * 16) + 256 * 64 + 64);
}

static void refuse(const char *text, const char *want)
{
	llmt_config c;
	char err[256];
	assert_int_equal(load(text, &c, err, sizeof err), -1);
	if (!strstr(err, want))
		fail_msg("message '%s' lacks '%s'", err, want);
	assert_non_null(strstr(err, path));
}

static void unknown_key(void **st) { (void)st; refuse(BASE "n_layer: 3\n", ":7: unknown key 'n_layer'"); }
static void bad_value(void **st) { (void)st; refuse(BASE "norm_eps: abc\n", ":7: bad value 'abc' for norm_eps"); }
static void bad_int(void **st) { (void)st; refuse("vocab_size: 2.5\n", ":1: bad value '2.5' for vocab_size"); }
static void negative(void **st) { (void)st; refuse(BASE "z_loss: -1\n", "bad value '-1' for z_loss"); }
static void bad_bool(void **st) { (void)st; refuse(BASE "qk_norm: maybe\n", "bad value 'maybe' for qk_norm"); }
/* a value with a terminal escape and a newline is echoed as one plain line
 * (it was echoed raw) */
static void control_chars(void **st)
{
	(void)st;
	refuse(BASE "norm_eps: \"\\e[2J\\nx\"\n", "bad value '?[2J?x' for norm_eps");
}
static void duplicate(void **st) { (void)st; refuse(BASE "d_model: 64\n", ":7: duplicate key 'd_model'"); }
static void missing(void **st) { (void)st; refuse("vocab_size: 256\n", "missing required key 'd_model'"); }
static void heads(void **st) { (void)st; refuse(BASE "n_kv_heads: 3\n", "not a multiple of n_kv_heads 3"); }
static void not_map(void **st) { (void)st; refuse("- 1\n- 2\n", "expected a mapping"); }
static void syntax(void **st) { (void)st; refuse("a: [1\n", "YAML error"); }

/* the shipped configs load and have the sizes their comments claim */
/* llmt_config_write reads back to the same values, every field (the
 * file `llm-train import` writes for --model) */
static void write_back(void **st)
{
	(void)st;
	llmt_config c, back;
	llmt_config_defaults(&c);
	c.vocab_size = 151936, c.d_model = 1024, c.n_layers = 28, c.n_heads = 16, c.n_kv_heads = 8;
	c.d_ff = 3072, c.max_seq = 40960, c.rope_theta = 1000000.0, c.norm_eps = 1e-6, c.qk_norm = 1;
	c.tie_embeddings = 0, c.z_loss = 1e-4, c.init_std = 0.1 / 3, c.seed = 18446744073709551615ull;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	llmt_config_write(f, &c);
	fclose(f);
	char err[256];
	assert_int_equal(llmt_config_parse(text, len, "written", &back, err, sizeof err), 0);
	assert_memory_equal(&c, &back, sizeof c);
	free(text);
}

static void shipped(void **st)
{
	(void)st;
	const char *top = getenv("top_srcdir");
	struct { const char *name; double lo, hi; } cf[] = {
		{ "tiny.yaml", 0.8e6, 1.0e6 }, { "bench-768.yaml", 80e6, 90e6 },
		{ "gpt-1b.yaml", 1.0e9, 1.2e9 } };
	for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++) {
		char p[4096], err[256];
		llmt_config c;
		snprintf(p, sizeof p, "%s/configs/%s", top ? top : "..", cf[i].name);
		if (llmt_config_load(p, &c, err, sizeof err))
			fail_msg("%s", err);
		double n = (double)llmt_config_n_params(&c);
		if (n < cf[i].lo || n > cf[i].hi)
			fail_msg("%s: %.0f parameters", cf[i].name, n);
	}
}

#define L3 "rope_scaling: llama3\nrope_factor: 8\nrope_low_freq_factor: 1\nrope_high_freq_factor: 4\n"
#define L3M L3 "rope_original_max_position_embeddings: 16\n"

static void rope_llama3(void **st)
{
	(void)st;
	llmt_config c;
	char err[256];
	assert_int_equal(load(BASE "d_model: 64\n" L3M, &c, err, sizeof err), -1); /* duplicate d_model */
	assert_int_equal(load("vocab_size: 256\nd_model: 64\nn_layers: 2\nn_heads: 8\nd_ff: 128\nmax_seq: 64\n" L3M,
	                      &c, err, sizeof err), 0);
	assert_int_equal(c.rope_scaling, LLMT_ROPE_LLAMA3);
	assert_int_equal(c.rope_original_max, 16);
	/* hd 8, theta 1e4: wavelengths 6.3 (between 16/4 and 16/1: smoothed),
	 * 63, 628, 6283 (longer than 16: divided by 8) */
	const double want[4] = { 0.57605636119842529, 0.012500000186264515, 0.0012499999720603228,
	                         0.00012500000593718141 };
	double inv[4];
	llmt_rope_inv_freq(&c, 8, inv);
	for (int i = 0; i < 4; i++)
		if (fabs(inv[i] - want[i]) > 1e-6 * want[i])
			fail_msg("inv_freq[%d] %.17g, transformers %.17g", i, inv[i], want[i]);
	c.rope_scaling = LLMT_ROPE_NONE;
	llmt_rope_inv_freq(&c, 8, inv);
	assert_true(inv[0] == 1.0 && fabs(inv[1] - 0.1) < 1e-15);
}

static void rope_bad(void **st)
{
	(void)st;
	refuse(BASE "rope_scaling: yarn\n", "bad value 'yarn' for rope_scaling: expected none or llama3");
	refuse(BASE "rope_scaling: dynamic\n", "bad value 'dynamic' for rope_scaling");
	refuse(BASE "rope_scaling: linear\n", "bad value 'linear' for rope_scaling");
	refuse(BASE L3 "rope_original_max_position_embeddings: 0\n",
	       "bad value '0' for rope_original_max_position_embeddings");
	refuse(BASE "rope_scaling: llama3\nrope_factor: 0\n", "bad value '0' for rope_factor");
	refuse(BASE "rope_scaling: llama3\nrope_factor: -8\n", "bad value '-8' for rope_factor");
	refuse(BASE "rope_scaling: llama3\nrope_factor: .nan\n", "bad value '.nan' for rope_factor");
	refuse(BASE "rope_scaling: llama3\nrope_factor: nan\n", "bad value 'nan' for rope_factor");
	refuse(BASE L3, "rope_scaling llama3 needs rope_original_max_position_embeddings");
	refuse(BASE "rope_factor: 8\n", "rope_factor is set but rope_scaling is none");
	refuse(BASE "rope_scaling: llama3\nrope_factor: 8\nrope_low_freq_factor: 4\nrope_high_freq_factor: 4\n"
	       "rope_original_max_position_embeddings: 16\n",
	       "low_freq_factor 4 and high_freq_factor 4 must be 0 < low < high");
	llmt_config c;
	char err[256];
	llmt_config_defaults(&c);
	c.vocab_size = 256, c.d_model = 64, c.n_layers = 1, c.n_heads = 4, c.d_ff = 8, c.max_seq = 8;
	c.rope_scaling = LLMT_ROPE_LLAMA3, c.rope_factor = NAN, c.rope_low_freq_factor = 1;
	c.rope_high_freq_factor = 4, c.rope_original_max = 16;
	assert_int_equal(llmt_config_validate(&c, err, sizeof err), -1);
	assert_non_null(strstr(err, "factor nan must be a number >= 1"));
	c.rope_factor = 8, c.rope_original_max = 0;
	assert_int_equal(llmt_config_validate(&c, err, sizeof err), -1);
	assert_non_null(strstr(err, "original_max_position_embeddings 0"));
	c.rope_original_max = 16;
	assert_int_equal(llmt_config_validate(&c, err, sizeof err), 0);
}

/* a llama3 config writes its rope keys and reads back the same; none
 * writes none of them (model.yaml files as before) */
static void rope_write_back(void **st)
{
	(void)st;
	llmt_config c, back;
	char err[256], *text = NULL;
	size_t len = 0;
	assert_int_equal(llmt_config_parse(BASE L3M, strlen(BASE L3M), "in", &c, err, sizeof err), 0);
	c.rope_factor = 32.0, c.rope_original_max = 8192;
	FILE *f = open_memstream(&text, &len);
	llmt_config_write(f, &c);
	fclose(f);
	assert_int_equal(llmt_config_parse(text, len, "written", &back, err, sizeof err), 0);
	assert_memory_equal(&c, &back, sizeof c);
	assert_non_null(strstr(text, "rope_scaling: llama3\n"));
	free(text);
	assert_int_equal(llmt_config_parse(BASE, strlen(BASE), "in", &c, err, sizeof err), 0);
	f = open_memstream(&text, &len);
	llmt_config_write(f, &c);
	fclose(f);
	assert_null(strstr(text, "rope"  "_scaling"));
	assert_null(strstr(text, "rope_factor"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good), cmocka_unit_test(unknown_key), cmocka_unit_test(bad_value),
		cmocka_unit_test(bad_int), cmocka_unit_test(negative), cmocka_unit_test(bad_bool),
		cmocka_unit_test(duplicate), cmocka_unit_test(missing), cmocka_unit_test(heads),
		cmocka_unit_test(not_map), cmocka_unit_test(syntax), cmocka_unit_test(shipped),
		cmocka_unit_test(control_chars), cmocka_unit_test(write_back), cmocka_unit_test(rope_llama3),
		cmocka_unit_test(rope_bad), cmocka_unit_test(rope_write_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
