/* config.c: reads the model config YAML (libyaml document API) into an
 * llmt_config, refusing unknown/duplicate keys and bad values with
 * "file:line: reason", and writes one back; validation and parameter/FLOP
 * counts. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "model_config.h"

void llmt_config_defaults(llmt_config *c)
{
	memset(c, 0, sizeof *c);
	c->n_kv_heads = 0; /* 0 = same as n_heads, resolved after loading */
	c->rope_theta = 10000.0;
	c->norm_eps = 1e-5;
	c->qk_norm = 0;
	c->tie_embeddings = 1;
	c->z_loss = 0.0;
	c->init_std = 0.02;
	c->seed = 1234;
}

/* The message in err, with control characters (a key or value from the
 * file echoed back) shown as '?': one line on any terminal or log. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	for (char *c = err; errlen && *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return -1;
}

enum kind { K_INT, K_DOUBLE, K_BOOL, K_U64, K_ROPE };
struct key {
	const char *name;
	enum kind kind;
	size_t off;
	double lo, hi;   /* accepted range (inclusive) */
	int required;    /* 1: always; 2: a rope scaling parameter (needed by llama3, else refused) */
};
static const char *const rope_names[] = { "none", "llama3" };

const char *llmt_rope_scaling_name(int r)
{
	return r == LLMT_ROPE_NONE || r == LLMT_ROPE_LLAMA3 ? rope_names[r] : "?";
}
#define F(x) offsetof(llmt_config, x)
static const struct key keys[] = {
	{ "vocab_size", K_INT, F(vocab_size), 2, 1 << 24, 1 },
	{ "d_model", K_INT, F(d_model), 2, 1 << 16, 1 },
	{ "n_layers", K_INT, F(n_layers), 1, 4096, 1 },
	{ "n_heads", K_INT, F(n_heads), 1, 4096, 1 },
	{ "n_kv_heads", K_INT, F(n_kv_heads), 1, 4096, 0 },
	{ "d_ff", K_INT, F(d_ff), 1, 1 << 20, 1 },
	{ "max_seq", K_INT, F(max_seq), 1, 1 << 20, 1 },
	{ "rope_theta", K_DOUBLE, F(rope_theta), 1.0, 1e12, 0 },
	{ "norm_eps", K_DOUBLE, F(norm_eps), 1e-12, 1.0, 0 },
	{ "qk_norm", K_BOOL, F(qk_norm), 0, 1, 0 },
	{ "tie_embeddings", K_BOOL, F(tie_embeddings), 0, 1, 0 },
	{ "z_loss", K_DOUBLE, F(z_loss), 0.0, 1.0, 0 },
	{ "init_std", K_DOUBLE, F(init_std), 1e-8, 10.0, 0 },
	{ "seed", K_U64, F(seed), 0, 1.8e19, 0 },
	{ "rope_scaling", K_ROPE, F(rope_scaling), 0, 1, 0 },
	{ "rope_factor", K_DOUBLE, F(rope_factor), 1.0, 1e6, 2 },
	{ "rope_low_freq_factor", K_DOUBLE, F(rope_low_freq_factor), 1e-6, 1e6, 2 },
	{ "rope_high_freq_factor", K_DOUBLE, F(rope_high_freq_factor), 1e-6, 1e6, 2 },
	{ "rope_original_max_position_embeddings", K_INT, F(rope_original_max), 1, 1 << 24, 2 },
};
#define KEY_ROPE 14 /* keys[KEY_ROPE] is rope_scaling, its parameters after it */
#define NKEYS (sizeof keys / sizeof keys[0])

static int set_value(const struct key *k, const char *v, llmt_config *c)
{
	char *end = NULL;
	errno = 0;
	if (k->kind == K_ROPE) {
		for (int i = 0; i < 2; i++)
			if (!strcmp(v, rope_names[i])) {
				*(int *)((char *)c + k->off) = i;
				return 0;
			}
		return -1;
	}
	if (k->kind == K_BOOL) {
		int b;
		if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"))
			b = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
			b = 0;
		else
			return -1;
		*(int *)((char *)c + k->off) = b;
		return 0;
	}
	if (k->kind == K_U64) {
		if (*v == '-' || !*v)
			return -1;
		unsigned long long u = strtoull(v, &end, 10);
		if (errno || *end)
			return -1;
		*(uint64_t *)((char *)c + k->off) = u;
		return 0;
	}
	if (k->kind == K_INT) {
		long l = strtol(v, &end, 10);
		if (errno || !*v || *end || l < (long)k->lo || l > (long)k->hi)
			return -1;
		*(int *)((char *)c + k->off) = (int)l;
		return 0;
	}
	double d = strtod(v, &end);
	if (errno || !*v || *end || !isfinite(d) || d < k->lo || d > k->hi)
		return -1;
	*(double *)((char *)c + k->off) = d;
	return 0;
}

void llmt_config_write(FILE *f, const llmt_config *c)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		const char *at = (const char *)c + k->off;
		if (i >= KEY_ROPE && c->rope_scaling == LLMT_ROPE_NONE)
			continue;
		if (k->kind == K_ROPE)
			fprintf(f, "%s: %s\n", k->name, llmt_rope_scaling_name(c->rope_scaling));
		else if (k->kind == K_BOOL)
			fprintf(f, "%s: %s\n", k->name, *(const int *)at ? "true" : "false");
		else if (k->kind == K_U64)
			fprintf(f, "%s: %llu\n", k->name, (unsigned long long)*(const uint64_t *)at);
		else if (k->kind == K_INT)
			fprintf(f, "%s: %d\n", k->name, *(const int *)at);
		else
			fprintf(f, "%s: %.17g\n", k->name, *(const double *)at);
	}
}

static const char *range_text(const struct key *k, char *buf, size_t n)
{
	if (k->kind == K_ROPE)
		snprintf(buf, n, "none or llama3 (other rotary scalings are not supported)");
	else if (k->kind == K_BOOL)
		snprintf(buf, n, "true or false");
	else if (k->kind == K_U64)
		snprintf(buf, n, "a non-negative integer");
	else if (k->kind == K_INT)
		snprintf(buf, n, "an integer in [%.0f, %.0f]", k->lo, k->hi);
	else
		snprintf(buf, n, "a number in [%g, %g]", k->lo, k->hi);
	return buf;
}

/* the document of an initialized parser p into c; p deleted on return */
static int parse_doc(yaml_parser_t *pp, const char *path, llmt_config *c, char *err, size_t errlen)
{
	yaml_document_t doc;
	int rc = -1;
	if (!yaml_parser_load(pp, &doc)) {
		fail(err, errlen, "%s:%zu: YAML error: %s", path, pp->problem_mark.line + 1,
			 pp->problem ? pp->problem : "unknown");
		yaml_parser_delete(pp);
		return -1;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	int seen[NKEYS] = { 0 };
	if (!root || root->type != YAML_MAPPING_NODE) {
		fail(err, errlen, "%s:%zu: expected a mapping of config keys", path,
			 root ? root->start_mark.line + 1 : 1);
		goto out;
	}
	for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
		 pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *kn = yaml_document_get_node(&doc, pr->key);
		yaml_node_t *vn = yaml_document_get_node(&doc, pr->value);
		size_t line = kn->start_mark.line + 1;
		if (kn->type != YAML_SCALAR_NODE) {
			fail(err, errlen, "%s:%zu: keys must be plain names", path, line);
			goto out;
		}
		const char *name = (const char *)kn->data.scalar.value;
		size_t i;
		for (i = 0; i < NKEYS; i++)
			if (!strcmp(name, keys[i].name))
				break;
		if (i == NKEYS) {
			fail(err, errlen, "%s:%zu: unknown key '%.64s'", path, line, name);
			goto out;
		}
		if (seen[i]) {
			fail(err, errlen, "%s:%zu: duplicate key '%.64s'", path, line, name);
			goto out;
		}
		seen[i] = 1;
		char rb[64];
		if (vn->type != YAML_SCALAR_NODE ||
			set_value(&keys[i], (const char *)vn->data.scalar.value, c)) {
			fail(err, errlen, "%s:%zu: bad value '%.64s' for %s: expected %s", path,
				 vn->start_mark.line + 1,
				 vn->type == YAML_SCALAR_NODE ? (const char *)vn->data.scalar.value : "(not a scalar)",
				 name, range_text(&keys[i], rb, sizeof rb));
			goto out;
		}
	}
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].required == 1 && !seen[i]) {
			fail(err, errlen, "%s:%zu: missing required key '%s'", path,
				 root->start_mark.line + 1, keys[i].name);
			goto out;
		}
	for (size_t i = KEY_ROPE + 1; i < NKEYS; i++)
		if (seen[i] != (c->rope_scaling != LLMT_ROPE_NONE)) {
			fail(err, errlen, seen[i] ? "%s:%zu: %s is set but rope_scaling is none (set rope_scaling: llama3)"
			                          : "%s:%zu: rope_scaling llama3 needs %s", path,
			     root->start_mark.line + 1, keys[i].name);
			goto out;
		}
	if (!seen[4])
		c->n_kv_heads = c->n_heads;
	char why[200];
	if (llmt_config_validate(c, why, sizeof why)) {
		fail(err, errlen, "%s:%zu: %s", path, root->start_mark.line + 1, why);
		goto out;
	}
	rc = 0;
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(pp);
	return rc;
}

int llmt_config_parse(const char *text, size_t len, const char *name, llmt_config *c, char *err,
					  size_t errlen)
{
	yaml_parser_t p;
	llmt_config_defaults(c);
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	return parse_doc(&p, name, c, err, errlen);
}

int llmt_config_load(const char *path, llmt_config *c, char *err, size_t errlen)
{
	llmt_config_defaults(c);
	/* non-blocking (a FIFO never hangs the reader), a regular file, and
	 * small: a model config is a few lines (libyaml is quadratic in nesting) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0) {
		fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -2;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
		close(fd);
		return fail(err, errlen, "%s: not a regular file of at most 1 MiB", path);
	}
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
	}
	yaml_parser_t p;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	int rc = parse_doc(&p, path, c, err, errlen);
	fclose(f);
	return rc;
}

int llmt_config_validate(const llmt_config *c, char *err, size_t errlen)
{
	if (c->vocab_size < 2 || c->d_model < 2 || c->n_layers < 1 || c->n_heads < 1 ||
		c->d_ff < 1 || c->max_seq < 1)
		return fail(err, errlen, "sizes must be positive (vocab_size >= 2, d_model >= 2)");
	if (c->d_model % c->n_heads)
		return fail(err, errlen, "d_model %d is not a multiple of n_heads %d", c->d_model, c->n_heads);
	if ((c->d_model / c->n_heads) % 2)
		return fail(err, errlen, "head_dim %d (d_model / n_heads) must be even for rotary",
					c->d_model / c->n_heads);
	int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
	if (kv < 1 || c->n_heads % kv)
		return fail(err, errlen, "n_heads %d is not a multiple of n_kv_heads %d", c->n_heads, kv);
	if (!(c->norm_eps > 0) || !(c->rope_theta > 0) || !(c->init_std > 0) || c->z_loss < 0)
		return fail(err, errlen, "norm_eps, rope_theta and init_std must be > 0, z_loss >= 0");
	return llmt_config_validate_rope(c, err, errlen);
}

int llmt_config_validate_rope(const llmt_config *c, char *err, size_t errlen)
{
	if (c->rope_scaling == LLMT_ROPE_NONE)
		return 0;
	if (c->rope_scaling != LLMT_ROPE_LLAMA3)
		return fail(err, errlen, "rope_scaling %d: not supported (none or llama3)", c->rope_scaling);
	if (!(c->rope_factor >= 1) || !isfinite(c->rope_factor))
		return fail(err, errlen, "rope_scaling llama3: factor %g must be a number >= 1", c->rope_factor);
	if (!(c->rope_low_freq_factor > 0) || !isfinite(c->rope_high_freq_factor) ||
	    !(c->rope_low_freq_factor < c->rope_high_freq_factor))
		return fail(err, errlen,
		            "rope_scaling llama3: low_freq_factor %g and high_freq_factor %g must be 0 < low < high",
		            c->rope_low_freq_factor, c->rope_high_freq_factor);
	if (c->rope_original_max < 1)
		return fail(err, errlen, "rope_scaling llama3: original_max_position_embeddings %d must be >= 1",
		            c->rope_original_max);
	return 0;
}

void llmt_rope_inv_freq(const llmt_config *c, int hd, double *inv)
{
	const double two_pi = 6.283185307179586476925286766559;
	for (int i = 0; i < hd / 2; i++) {
		double f = pow(c->rope_theta, -2.0 * i / (double)hd);
		if (c->rope_scaling == LLMT_ROPE_LLAMA3) {
			double L = c->rope_original_max, lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
			double w = two_pi / f;
			if (w > L / lo) {
				f /= c->rope_factor;
			} else if (!(w < L / hi)) {
				double s = (L / w - lo) / (hi - lo);
				f = (1 - s) * f / c->rope_factor + s * f;
			}
		}
		inv[i] = f;
	}
}

int64_t llmt_config_n_params(const llmt_config *c)
{
	int64_t d = c->d_model, hd = d / c->n_heads;
	int64_t kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
	int64_t per = d * d /* q */ + 2 * kv * hd * d /* k v */ + d * d /* o */
				+ 3 * d * c->d_ff + 2 * d /* norms */ + (c->qk_norm ? 2 * hd : 0);
	int64_t emb = (int64_t)c->vocab_size * d;
	return per * c->n_layers + emb * (c->tie_embeddings ? 1 : 2) + d;
}

double llmt_config_flops_per_token(const llmt_config *c, int T)
{
	return 6.0 * (double)llmt_config_n_params(c) +
		   6.0 * c->n_layers * (double)T * c->d_model;
}

static const char *const recompute_names[] = { "none", "attn", "full" };

int llmt_recompute_from(const char *s, llmt_recompute *out)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, recompute_names[i])) {
			*out = (llmt_recompute)i;
			return 0;
		}
	return -1;
}

const char *llmt_recompute_name(llmt_recompute r)
{
	return r >= LLMT_RECOMPUTE_NONE && r <= LLMT_RECOMPUTE_FULL ? recompute_names[r] : "?";
}

llmt_recompute llmt_rc_mode(int plan)
{
	return (llmt_recompute)(plan & 3);
}

int llmt_rc_layers(int plan, int nl)
{
	int k = (plan >> 2) - 1;
	if (llmt_rc_mode(plan) == LLMT_RECOMPUTE_NONE)
		return 0;
	return k < 0 || k > nl ? nl : k;
}
