/* model_config.h: the model configuration (sizes and numerics of a Llama-family
 * decoder), its YAML file reader (libyaml) and writer. Pure data plus one
 * loader; the caller turns a load failure into exit code 64 (LLMT_EXIT_USAGE). */
#ifndef LLMT_CONFIG_H
#define LLMT_CONFIG_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef struct llmt_config {
	int vocab_size;      /* tokens (256 for byte level) */
	int d_model;         /* hidden width */
	int n_layers;
	int n_heads;         /* query heads; head_dim = d_model / n_heads */
	int n_kv_heads;      /* key/value heads (GQA); default n_heads */
	int d_ff;            /* SwiGLU inner width */
	int max_seq;         /* longest sequence (rotary table size) */
	double rope_theta;   /* rotary base, default 10000 */
	int rope_scaling;    /* LLMT_ROPE_NONE or LLMT_ROPE_LLAMA3 (Llama 3.1-3.3) */
	double rope_factor;  /* llama3: long wavelengths' divisor (8; 32 for 3.2) */
	double rope_low_freq_factor;  /* llama3: 1 */
	double rope_high_freq_factor; /* llama3: 4, > low */
	int rope_original_max;        /* llama3: original_max_position_embeddings (8192) */
	double norm_eps;     /* RMSNorm epsilon, default 1e-5 */
	int qk_norm;         /* 1: RMSNorm over head_dim on q and k (Qwen3/OLMo2 style) */
	int tie_embeddings;  /* 1: LM head shares the embedding matrix */
	double z_loss;       /* coefficient of mean(logsumexp^2), 0 = off */
	double init_std;     /* std of the normal init, default 0.02 */
	uint64_t seed;       /* init seed, default 1234 */
} llmt_config;

/* rope_scaling: the rotary frequencies as they are (none), or rescaled once
 * as Llama 3.1 does (llama3; Hugging Face's rope_type "llama3"). */
enum { LLMT_ROPE_NONE = 0, LLMT_ROPE_LLAMA3 = 1 };
/* "none" "llama3", "?" for another value */
const char *llmt_rope_scaling_name(int r);

/* Defaults for every optional field; required sizes set to 0. */
void llmt_config_defaults(llmt_config *c);

/* Read a YAML mapping of the keys above from path. Unknown keys, duplicate
 * keys, non-numeric or out-of-range values and missing required keys
 * (vocab_size, d_model, n_layers, n_heads, d_ff, max_seq) are refused:
 * returns -1 and writes "path:line: reason" into err; -2 when path cannot
 * be opened (missing or unreadable: exit 66, EX_NOINPUT, for the caller).
 * 0 on success. */
int llmt_config_load(const char *path, llmt_config *c, char *err, size_t errlen);
/* Same from len bytes of text in memory (name in the messages). */
int llmt_config_parse(const char *text, size_t len, const char *name, llmt_config *c, char *err,
					  size_t errlen);

/* Writes c as a YAML mapping of every key above, one a line, that
 * llmt_config_load reads back to the same values (%.17g numbers); the
 * rope_* scaling keys only where rope_scaling is not none. YAML keys:
 * rope_scaling (none|llama3), rope_factor, rope_low_freq_factor,
 * rope_high_freq_factor, rope_original_max_position_embeddings. */
void llmt_config_write(FILE *f, const llmt_config *c);

/* Consistency checks (d_model % n_heads, n_heads % n_kv_heads, even
 * head_dim, positive sizes...). -1 with a reason in err. */
int llmt_config_validate(const llmt_config *c, char *err, size_t errlen);

/* The rope scaling fields alone (llmt_config_validate runs it; import runs
 * it on config.json's rope_scaling): llama3 needs factor >= 1, 0 <
 * low_freq_factor < high_freq_factor, original_max >= 1, all finite. */
int llmt_config_validate_rope(const llmt_config *c, char *err, size_t errlen);

/* The hd/2 rotary inverse frequencies of head width hd: theta^(-2i/hd),
 * then for llama3 with wavelength w = 2 pi / f and L = original_max:
 * w > L/low: f / factor; w < L/high: f; between, with s = (L/w - low) /
 * (high - low): (1 - s) f / factor + s f. The one formula every rotary
 * table (CPU model, generation, GPU model) is built from. */
void llmt_rope_inv_freq(const llmt_config *c, int hd, double *inv);

static inline int llmt_config_head_dim(const llmt_config *c) { return c->d_model / c->n_heads; }

/* Number of logical parameters (tied embedding counted once). */
int64_t llmt_config_n_params(const llmt_config *c);

/* Model FLOPs per trained token for MFU: 6*N + 6*L*T*d (N from
 * llmt_config_n_params, T = sequence length used). */
double llmt_config_flops_per_token(const llmt_config *c, int T);

/* Activation recomputation (llm-train --recompute): NONE keeps every
 * layer's activations for backward; ATTN keeps no softmax probabilities
 * (one buffer shared by all layers and slots) and recomputes them before
 * each layer's attention backward; FULL keeps only each layer's input and
 * recomputes the layer's forward before its backward. The same kernels run
 * in the same order, so the gradients are bit-identical to NONE. */
typedef enum { LLMT_RECOMPUTE_NONE = 0, LLMT_RECOMPUTE_ATTN, LLMT_RECOMPUTE_FULL } llmt_recompute;
/* "none" "attn" "full" to the mode (0), else -1; and back */
int llmt_recompute_from(const char *s, llmt_recompute *out);
const char *llmt_recompute_name(llmt_recompute r);
/* A recomputation plan, one int so every recompute parameter carries it:
 * the mode, and how many of a stage's layers it covers (the first K,
 * llm-train --recompute-layers; the others keep everything). The mode
 * alone (K not given) covers all of them. */
#define LLMT_RC_PLAN(mode, k) ((int)(mode) | ((k) + 1) << 2)
llmt_recompute llmt_rc_mode(int plan);
/* the layers of a stage of nl layers the plan recomputes: 0 .. nl */
int llmt_rc_layers(int plan, int nl);

#endif
