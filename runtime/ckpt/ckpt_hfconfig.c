/* ckpt_hfconfig.c: a Hugging Face config.json and llmt_config, both ways:
 * the architecture import reads (Llama, Qwen3, rope_scaling llama3) and
 * the one export writes. */
#include "ckpt_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "model/model_config.h"

/* ---- Hugging Face config.json ------------------------------------------ */
json_t *ck_hf_config(const llmt_config *c, llmt_ckpt_dtype dt)
{
	/* rope_scaling as transformers reads it (modeling_rope_utils.py) */
	json_t *rs = c->rope_scaling != LLMT_ROPE_LLAMA3 ? json_null()
	             : json_pack("{s:s, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "factor", c->rope_factor,
	                         "low_freq_factor", c->rope_low_freq_factor, "high_freq_factor",
	                         c->rope_high_freq_factor, "original_max_position_embeddings", c->rope_original_max);
	json_t *o = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:i, s:b, s:i, s:s, s:b, s:b, s:s, s:f, s:o}",
	                      "architectures", c->qk_norm ? "Qwen3ForCausalLM" : "LlamaForCausalLM",
	                      "model_type", c->qk_norm ? "qwen3" : "llama",
	                      "hidden_size", c->d_model, "intermediate_size", c->d_ff,
	                      "num_attention_heads", c->n_heads, "num_key_value_heads", c->n_kv_heads,
	                      "num_hidden_layers", c->n_layers, "head_dim", c->d_model / c->n_heads,
	                      "rms_norm_eps", c->norm_eps, "rope_theta", c->rope_theta,
	                      "vocab_size", c->vocab_size, "tie_word_embeddings", c->tie_embeddings,
	                      "max_position_embeddings", c->max_seq, "hidden_act", "silu",
	                      "attention_bias", 0, "mlp_bias", 0,
	                      "torch_dtype", dt == LLMT_CKPT_BF16 ? "bfloat16" : "float32",
	                      "initializer_range", c->init_std, "rope_scaling", rs);
	return o;
}

static int hf_int(json_t *o, const char *k, int *v, int dflt, const char *path, char *err, size_t errlen)
{
	json_t *x = json_object_get(o, k);

	if (!x && dflt >= 0) {
		*v = dflt;
		return 0;
	}
	if (!json_is_integer(x) || json_integer_value(x) <= 0 || json_integer_value(x) > (1 << 30)) {
		ck_fmt(err, errlen, "%s: %s: missing or not a positive integer", path, k);
		return -1;
	}
	*v = (int)json_integer_value(x);
	return 0;
}

static int hf_num(json_t *rs, const char *k, double *v, const char *path, char *err, size_t errlen)
{
	json_t *x = json_object_get(rs, k);

	if (!json_is_number(x)) {
		ck_fmt(err, errlen, "%s: rope_scaling llama3: %s missing or not a number", path, k);
		return -1;
	}
	*v = json_number_value(x);
	return 0;
}

/* config.json's rope_scaling (null or absent: none) into c: rope_type (or
 * the older key "type") "default" is none, "llama3" reads its four
 * parameters; any other type is refused by name. 0 or -1 with err. */
static int hf_rope_scaling(json_t *rs, llmt_config *c, const char *path, char *err, size_t errlen)
{
	json_t *t;
	const char *ty;
	double om = 0;
	char why[256];

	c->rope_scaling = LLMT_ROPE_NONE;
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs)) {
		ck_fmt(err, errlen, "%s: rope_scaling is not an object", path);
		return -1;
	}
	t = json_object_get(rs, "rope_type");
	if (!t)
		t = json_object_get(rs, "type");
	ty = json_string_value(t);
	if (!ty) {
		ck_fmt(err, errlen, "%s: rope_scaling has no rope_type string", path);
		return -1;
	}
	if (!strcmp(ty, "default"))
		return 0;
	if (strcmp(ty, "llama3")) {
		ck_fmt(err, errlen, "%s: rope_scaling rope_type '%.64s': not supported (only llama3)", path, ty);
		return -1;
	}
	c->rope_scaling = LLMT_ROPE_LLAMA3;
	if (hf_num(rs, "factor", &c->rope_factor, path, err, errlen) ||
	    hf_num(rs, "low_freq_factor", &c->rope_low_freq_factor, path, err, errlen) ||
	    hf_num(rs, "high_freq_factor", &c->rope_high_freq_factor, path, err, errlen) ||
	    hf_num(rs, "original_max_position_embeddings", &om, path, err, errlen))
		return -1;
	if (om != (double)(int)om || om < 1 || om > (1 << 24)) {
		ck_fmt(err, errlen, "%s: rope_scaling llama3: original_max_position_embeddings %g: not an integer in [1, %d]",
		       path, om, 1 << 24);
		return -1;
	}
	c->rope_original_max = (int)om;
	if (llmt_config_validate_rope(c, why, sizeof why)) {
		ck_fmt(err, errlen, "%s: %s", path, why);
		return -1;
	}
	return 0;
}

/* Mistral's sliding-window attention: sliding_window W, unless
 * use_sliding_window is false as in Qwen's configs, into *w (0: none).
 * 0, or -1 with err. */
static int hf_window_of(json_t *o, json_int_t *w, const char *path, char *err, size_t errlen)
{
	json_t *x = json_object_get(o, "sliding_window");

	*w = 0;
	if (!x || json_is_null(x) || json_is_false(json_object_get(o, "use_sliding_window")))
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < 1) {
		char *v = json_dumps(x, JSON_ENCODE_ANY);
		ck_fmt(err, errlen, "%s: sliding_window %.40s: not a positive integer", path, v ? v : "?");
		free(v);
		return -1;
	}
	*w = json_integer_value(x);
	return 0;
}

/* Our attention is full causal, the same as a window of W up to W tokens,
 * so an import keeps sequences within the window (max_seq W, with a
 * note). 0, or -1 with err. */
static int hf_window(json_t *o, llmt_config *c, const char *path, char *err, size_t errlen)
{
	json_int_t w;

	if (hf_window_of(o, &w, path, err, errlen))
		return -1;
	if (w && w < c->max_seq) {
		fprintf(stderr, "llm-train: note: %s: sliding_window %lld: sequences limited to %lld tokens "
		        "(max_position_embeddings %d), where full attention is the same\n",
		        path, (long long)w, (long long)w, c->max_seq);
		c->max_seq = (int)w;
	}
	return 0;
}

/* --init-from with the user's own --model (whose max_seq is not capped by
 * the window or by max_position_embeddings as an import's model.yaml is):
 * the same limits on --seq */
int llmt_hf_check_seq(const char *hfdir_arg, int T, char *err, size_t errlen)
{
	char hfdir[4200], path[4300], e2[512];
	json_int_t w = 0;
	int mpe = 0;
	json_t *o;

	if (llmt_hf_resolve(hfdir_arg, hfdir, sizeof hfdir, e2, sizeof e2))
		return 0;
	ck_fmt(path, sizeof path, "%s/config.json", hfdir);
	if (!(o = json_load_file(path, 0, NULL)))
		return 0;
	int bad = !hf_window_of(o, &w, path, e2, sizeof e2) && w > 0 && T > w;
	/* only a limit the file states (the import's 2048 when absent is a guess) */
	int past = !bad && json_object_get(o, "max_position_embeddings") &&
	           !hf_int(o, "max_position_embeddings", &mpe, 2048, path, e2, sizeof e2) && mpe > 0 && T > mpe;
	json_decref(o);
	if (bad)
		ck_fmt(err, errlen, "--seq %d exceeds sliding_window %lld of %s (full attention, which llm-train computes, "
		       "is the window's only up to %lld tokens)", T, (long long)w, path, (long long)w);
	else if (past)
		ck_fmt(err, errlen, "--seq %d exceeds max_position_embeddings %d of %s (the positions the weights "
		       "were trained for)", T, mpe, path);
	return bad || past ? LLMT_EXIT_USAGE : 0;
}

/* Read HFDIR/config.json into c, and its torch_dtype into *dtype (an
 * llmt_ckpt_dtype, -1 when absent). 0 or an exit code. */
int ck_hf_read_config(const char *hfdir, llmt_config *c, int *dtype, char *err, size_t errlen)
{
	char path[4300];
	json_error_t je;
	json_t *o, *x;
	const char *mt, *act;
	int rc = LLMT_EXIT_USAGE, hd = 0;

	ck_fmt(path, sizeof path, "%s/config.json", hfdir);
	o = json_load_file(path, 0, &je);
	if (!o) {
		struct stat st;
		ck_fmt(err, errlen, "%s: %s", path, stat(path, &st) ? "missing" : je.text);
		return stat(path, &st) ? LLMT_EXIT_NOINPUT : LLMT_EXIT_USAGE;
	}
	llmt_config_defaults(c);
	mt = json_string_value(json_object_get(o, "model_type"));
	if (!mt || (strcmp(mt, "llama") && strcmp(mt, "qwen3") && strcmp(mt, "mistral"))) {
		ck_fmt(err, errlen, "%s: model_type %s: only llama, mistral and qwen3 are supported", path, mt ? mt : "(none)");
		goto out;
	}
	c->qk_norm = !strcmp(mt, "qwen3");
	if (hf_int(o, "hidden_size", &c->d_model, -1, path, err, errlen) ||
	    hf_int(o, "intermediate_size", &c->d_ff, -1, path, err, errlen) ||
	    hf_int(o, "num_attention_heads", &c->n_heads, -1, path, err, errlen) ||
	    hf_int(o, "num_hidden_layers", &c->n_layers, -1, path, err, errlen) ||
	    hf_int(o, "vocab_size", &c->vocab_size, -1, path, err, errlen) ||
	    hf_int(o, "num_key_value_heads", &c->n_kv_heads, c->n_heads, path, err, errlen) ||
	    hf_int(o, "max_position_embeddings", &c->max_seq, 2048, path, err, errlen) ||
	    hf_int(o, "head_dim", &hd, c->d_model / c->n_heads, path, err, errlen))
		goto out;
	if (hf_window(o, c, path, err, errlen))
		goto out;
	if (hd * c->n_heads != c->d_model) {
		ck_fmt(err, errlen, "%s: head_dim %d * num_attention_heads %d != hidden_size %d: not supported", path, hd,
		       c->n_heads, c->d_model);
		goto out;
	}
	if ((x = json_object_get(o, "rms_norm_eps")))
		c->norm_eps = json_number_value(x);
	if ((x = json_object_get(o, "rope_theta")))
		c->rope_theta = json_number_value(x);
	c->tie_embeddings = json_is_true(json_object_get(o, "tie_word_embeddings"));
	if (hf_rope_scaling(json_object_get(o, "rope_scaling"), c, path, err, errlen))
		goto out;
	if (json_is_true(json_object_get(o, "attention_bias")) || json_is_true(json_object_get(o, "mlp_bias"))) {
		ck_fmt(err, errlen, "%s: attention_bias/mlp_bias: not supported", path);
		goto out;
	}
	act = json_string_value(json_object_get(o, "hidden_act"));
	if (act && strcmp(act, "silu")) {
		ck_fmt(err, errlen, "%s: hidden_act %s: only silu is supported", path, act);
		goto out;
	}
	*dtype = -1;
	if ((x = json_object_get(o, "torch_dtype"))) {
		static const char *names[] = { "float32", "bfloat16", "float16" };
		const char *v = json_string_value(x);
		for (int i = 0; i < 3 && v; i++)
			if (!strcmp(v, names[i]))
				*dtype = i;
		if (*dtype < 0) {
			ck_fmt(err, errlen, "%s: torch_dtype %s: only float32, bfloat16 and float16 are supported", path,
			       v ? v : "(not a string)");
			goto out;
		}
	}
	if (c->norm_eps <= 0 || c->rope_theta <= 0) {
		ck_fmt(err, errlen, "%s: rms_norm_eps and rope_theta must be positive", path);
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}
