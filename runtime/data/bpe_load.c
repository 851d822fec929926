/* bpe_load.c: reading a Hugging Face tokenizer.json into the tables of
 * bpe_int.h: vocabulary, merges by rank, added tokens, the pre-tokenizer's
 * regular expressions (compiled by PCRE2) and the BOS/EOS/pad ids. What a
 * byte-level BPE does not have (normalizers but NFC, other models) is refused. */
#include "bpe_int.h"
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include "llmt/exitcodes.h"

/* GPT-2's pre-tokenizer pattern: ByteLevel with use_regex */
static const char gpt2_re[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

uint32_t llmt_bpe_lookup(const llmt_bpe *b, const char *s, size_t len)
{
	uint32_t h = (uint32_t)XXH3_64bits(s, len) & b->str_mask;

	for (;; h = (h + 1) & b->str_mask) {
		uint32_t v = b->str_slot[h];
		if (!v)
			return BPE_NONE;
		if (b->toklen[v - 1] == len && !memcmp(b->tok[v - 1], s, len))
			return v - 1;
	}
}

static uint32_t pair_hash(uint32_t a, uint32_t c)
{
	uint64_t k = ((uint64_t)a << 32 | c) * 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(k >> 32);
}

const bpe_merge *llmt_bpe_merge_of(const llmt_bpe *b, uint32_t a, uint32_t c)
{
	for (uint32_t h = pair_hash(a, c) & b->merge_mask;; h = (h + 1) & b->merge_mask) {
		const bpe_merge *m = &b->merges[h];
		if (m->a == BPE_NONE)
			return NULL;
		if (m->a == a && m->b == c)
			return m;
	}
}

/* the table size for n entries; n is at most LLMT_BPE_MAX_IDS, so no wrap */
#define LLMT_BPE_MAX_IDS (1 << 24)

static uint32_t pow2_above(size_t n)
{
	uint64_t p = 1024;
	while (p < 2 * (uint64_t)n)
		p *= 2;
	return (uint32_t)p;
}

static int set_token(llmt_bpe *b, uint32_t id, const char *s)
{
	if (b->tok[id])
		return 0;
	b->toklen[id] = (uint32_t)strlen(s);
	b->tok[id] = strdup(s);
	if (!b->tok[id])
		return -1;
	for (uint32_t h = (uint32_t)XXH3_64bits(s, b->toklen[id]) & b->str_mask;; h = (h + 1) & b->str_mask)
		if (!b->str_slot[h]) {
			b->str_slot[h] = id + 1;
			return 0;
		}
}

static void byte_alphabet(llmt_bpe *b)
{
	int extra = 0;

	for (int i = 0; i < 512; i++)
		b->cp_byte[i] = -1;
	for (int c = 0; c < 256; c++) {
		int printable = (c >= '!' && c <= '~') || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff);
		b->byte_cp[c] = (uint16_t)(printable ? c : 256 + extra++);
		b->cp_byte[b->byte_cp[c]] = (int16_t)c;
	}
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xc0 | (cp >> 6));
	o[1] = (char)(0x80 | (cp & 0x3f));
	return 2;
}

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static int add_re(llmt_bpe *b, const char *pat, uint32_t flags, const char *path, char *err, size_t errlen)
{
	int ec;
	PCRE2_SIZE off;
	char msg[256];

	if (b->nre == BPE_MAX_RE)
		FAIL("%s: more than %d pre-tokenizer splits", path, BPE_MAX_RE);
	b->re[b->nre] = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
		PCRE2_UTF | PCRE2_UCP | flags, &ec, &off, NULL);
	if (!b->re[b->nre]) {
		pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof(msg));
		FAIL("%s: pre-tokenizer pattern /%s/ at offset %zu: %s", path, pat, (size_t)off, msg);
	}
	pcre2_jit_compile(b->re[b->nre], PCRE2_JIT_COMPLETE); /* optional: interpreted when it fails */
	b->nre++;
	return 0;
}

/* Split(pattern, Isolated) stages and one ByteLevel, in order */
static int load_pretok(llmt_bpe *b, json_t *p, int *bytelevel, const char *path, char *err, size_t errlen)
{
	const char *type = json_string_value(json_object_get(p, "type"));

	if (!type)
		FAIL("%s: pre_tokenizer without a type: not a byte-level BPE", path);
	if (!strcmp(type, "Sequence")) {
		size_t i;
		json_t *q;
		json_array_foreach(json_object_get(p, "pretokenizers"), i, q)
			if (load_pretok(b, q, bytelevel, path, err, errlen))
				return -1;
		return 0;
	}
	if (*bytelevel)
		FAIL("%s: pre_tokenizer %s after ByteLevel is not supported", path, type);
	if (!strcmp(type, "ByteLevel")) {
		json_t *ur = json_object_get(p, "use_regex");
		*bytelevel = 1;
		b->bl_stage = b->nre;
		b->add_prefix_space = json_is_true(json_object_get(p, "add_prefix_space"));
		return !ur || json_is_true(ur) ? add_re(b, gpt2_re, 0, path, err, errlen) : 0;
	}
	if (!strcmp(type, "Split")) {
		const char *beh = json_string_value(json_object_get(p, "behavior"));
		json_t *pat = json_object_get(p, "pattern");
		const char *re = json_string_value(json_object_get(pat, "Regex"));
		const char *lit = json_string_value(json_object_get(pat, "String"));
		if (!beh || strcmp(beh, "Isolated"))
			FAIL("%s: Split behavior %s is not supported (only Isolated)", path, beh ? beh : "(none)");
		if (json_is_true(json_object_get(p, "invert")))
			FAIL("%s: an inverted Split is not supported", path);
		if (!re && !lit)
			FAIL("%s: Split without a Regex or String pattern", path);
		return add_re(b, re ? re : lit, re ? 0 : PCRE2_LITERAL, path, err, errlen);
	}
	FAIL("%s: pre_tokenizer %s is not supported (byte-level BPE: Split and ByteLevel)", path, type);
}

static int load_merges(llmt_bpe *b, json_t *merges, const char *path, char *err, size_t errlen)
{
	size_t n = json_array_size(merges), i;
	json_t *m;
	char buf[1024];

	b->merge_mask = pow2_above(n) - 1;
	b->merges = malloc(sizeof(bpe_merge) * ((size_t)b->merge_mask + 1));
	if (!b->merges)
		FAIL("%s: out of memory", path);
	for (size_t k = 0; k <= b->merge_mask; k++)
		b->merges[k].a = BPE_NONE;
	json_array_foreach(merges, i, m) {
		const char *l, *r;
		const char *sp = NULL, *s = json_string_value(m);
		size_t ll;
		uint32_t a, c, id, h;
		if (s) {        /* "left right" */
			sp = strchr(s, ' ');
			if (!sp)
				FAIL("%s: merge %zu \"%s\" is not two tokens", path, i, s);
			l = s, ll = (size_t)(sp - s), r = sp + 1;
		} else if (json_array_size(m) == 2 && (l = json_string_value(json_array_get(m, 0))) &&
			   (r = json_string_value(json_array_get(m, 1)))) {
			ll = strlen(l);
		} else {
			FAIL("%s: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", path, i);
		}
		if (ll + strlen(r) >= sizeof(buf))
			FAIL("%s: merge %zu is too long", path, i);
		memcpy(buf, l, ll);
		strcpy(buf + ll, r);
		a = llmt_bpe_lookup(b, buf, ll);
		c = llmt_bpe_lookup(b, r, strlen(r));
		id = llmt_bpe_lookup(b, buf, strlen(buf));
		if (a == BPE_NONE || c == BPE_NONE || id == BPE_NONE)
			FAIL("%s: merge %zu (%.*s %s): a token is not in the vocabulary", path, i, (int)ll, l, r);
		for (h = pair_hash(a, c) & b->merge_mask; b->merges[h].a != BPE_NONE; h = (h + 1) & b->merge_mask)
			if (b->merges[h].a == a && b->merges[h].b == c)
				break;
		if (b->merges[h].a == BPE_NONE)  /* the first (lowest) rank wins */
			b->merges[h] = (bpe_merge){ a, c, (uint32_t)i, id };
	}
	return 0;
}

static int name_id(const llmt_bpe *b, const char *s)
{
	uint32_t id = s ? llmt_bpe_lookup(b, s, strlen(s)) : BPE_NONE;

	return id == BPE_NONE ? -1 : (int)id;
}

/* the id of a config value: "tok" or {"content": "tok"} */
static int special_id(const llmt_bpe *b, json_t *v)
{
	return name_id(b, json_is_object(v) ? json_string_value(json_object_get(v, "content")) : json_string_value(v));
}

/* BOS/EOS/pad: tokenizer_config.json beside the file, else the
 * post-processor's first special token for BOS, else the usual names; a
 * token the config sets to null (Qwen's "bos_token": null) is none */
static void load_specials(llmt_bpe *b, const char *path, json_t *root)
{
	char cfgpath[4096];
	const char *slash = strrchr(path, '/');
	json_t *cfg, *single;
	int bos_null = 0, eos_null = 0;
	static const char *const bos_names[] = { "<|begin_of_text|>", "<s>", "<|endoftext|>", NULL };
	static const char *const eos_names[] = { "<|end_of_text|>", "</s>", "<|endoftext|>", NULL };

	b->bos = b->eos = b->pad = -1;
	snprintf(cfgpath, sizeof(cfgpath), "%.*stokenizer_config.json", slash ? (int)(slash - path + 1) : 0, path);
	cfg = json_load_file(cfgpath, 0, NULL);
	if (cfg) {
		b->bos = special_id(b, json_object_get(cfg, "bos_token"));
		b->eos = special_id(b, json_object_get(cfg, "eos_token"));
		b->pad = special_id(b, json_object_get(cfg, "pad_token"));
		bos_null = json_is_null(json_object_get(cfg, "bos_token"));
		eos_null = json_is_null(json_object_get(cfg, "eos_token"));
		json_decref(cfg);
	}
	single = json_object_get(json_object_get(root, "post_processor"), "single");
	if (b->bos < 0 && !bos_null && json_array_size(single) > 1)
		b->bos = name_id(b, json_string_value(json_object_get(
			json_object_get(json_array_get(single, 0), "SpecialToken"), "id")));
	for (int i = 0; b->bos < 0 && !bos_null && bos_names[i]; i++)
		b->bos = name_id(b, bos_names[i]);
	for (int i = 0; b->eos < 0 && !eos_null && eos_names[i]; i++)
		b->eos = name_id(b, eos_names[i]);
}

typedef struct {
	uint32_t len, id;
} len_id;

static int longer_first(const void *x, const void *y)
{
	const len_id *a = x, *c = y;

	return a->len != c->len ? (a->len < c->len ? 1 : -1) : (a->id > c->id) - (a->id < c->id);
}

/* added tokens longest first: the first that matches is the longest */
static int sort_added(llmt_bpe *b)
{
	len_id *v = malloc(sizeof(len_id) * ((size_t)b->nadded + 1));

	if (!v)
		return -1;
	for (int i = 0; i < b->nadded; i++)
		v[i] = (len_id){ b->toklen[b->added[i]], b->added[i] };
	qsort(v, (size_t)b->nadded, sizeof(len_id), longer_first);
	for (int i = 0; i < b->nadded; i++)
		b->added[i] = v[i].id;
	free(v);
	return 0;
}

/* vocabulary and added tokens into the id tables; n = largest id + 1 */
static int load_vocab(llmt_bpe *b, json_t *vocab, json_t *added, const char *path, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	size_t i;
	json_int_t max = -1;

	json_object_foreach(vocab, key, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= INT32_MAX)
			FAIL("%s: vocabulary entry \"%s\" has no valid id", path, key);
		if (json_integer_value(v) > max)
			max = json_integer_value(v);
	}
	json_array_foreach(added, i, v) {
		json_int_t id = json_integer_value(json_object_get(v, "id"));
		if (!json_string_value(json_object_get(v, "content")) || id < 0 || id >= INT32_MAX)
			FAIL("%s: added token %zu has no content or no valid id", path, i);
		if (id > max)
			max = id;
	}
	if (max < 0)
		FAIL("%s: empty vocabulary", path);
	/* ids index dense tables: a sparse or absurd largest id is refused
	 * (Llama 3 has 128,256 ids; 2^24 leaves room for any real model) */
	if (max >= LLMT_BPE_MAX_IDS)
		FAIL("%s: largest token id %lld is above the supported %d", path, (long long)max,
		     LLMT_BPE_MAX_IDS - 1);
	b->n = (uint32_t)max + 1;
	b->str_mask = pow2_above(b->n) - 1;
	b->tok = calloc(b->n, sizeof(char *));
	b->toklen = calloc(b->n, sizeof(uint32_t));
	b->special = calloc(b->n, 1);
	b->str_slot = calloc((size_t)b->str_mask + 1, sizeof(uint32_t));
	b->added = malloc(sizeof(uint32_t) * (json_array_size(added) + 1));
	if (!b->tok || !b->toklen || !b->special || !b->str_slot || !b->added)
		FAIL("%s: out of memory", path);
	json_array_foreach(added, i, v) {  /* added content wins over a vocab spelling */
		uint32_t id = (uint32_t)json_integer_value(json_object_get(v, "id"));
		const char *c = json_string_value(json_object_get(v, "content"));
		if (!*c || set_token(b, id, c))
			FAIL("%s: added token %zu: empty or out of memory", path, i);
		if (!b->special[id]) {
			b->added[b->nadded++] = id;
			b->added_first[(unsigned char)c[0]] = 1;
		}
		b->special[id] = 1;
	}
	json_object_foreach(vocab, key, v)
		if (set_token(b, (uint32_t)json_integer_value(v), key))
			FAIL("%s: out of memory", path);
	return sort_added(b) ? -1 : 0;
}

static int load_json(llmt_bpe *b, json_t *root, const char *path, char *err, size_t errlen)
{
	json_t *model = json_object_get(root, "model"), *norm = json_object_get(root, "normalizer");
	const char *type = json_string_value(json_object_get(model, "type"));
	const char *sfx = json_string_value(json_object_get(model, "end_of_word_suffix"));
	const char *pfx = json_string_value(json_object_get(model, "continuing_subword_prefix"));
	int bytelevel = 0;
	char one[2];

	if (!json_is_object(model) || !json_is_object(json_object_get(model, "vocab")) ||
	    !json_is_array(json_object_get(model, "merges")))
		FAIL("%s: no model with a vocab and merges: not a BPE tokenizer.json", path);
	if (type && strcmp(type, "BPE"))
		FAIL("%s: model type %s is not supported (byte-level BPE only)", path, type);
	if (norm && !json_is_null(norm) && json_string_value(json_object_get(norm, "type")) &&
	    !strcmp(json_string_value(json_object_get(norm, "type")), "NFC"))
		b->nfc = 1;
	else if (norm && !json_is_null(norm))
		FAIL("%s: normalizer %s is not supported (byte-level BPE with no normalizer or NFC only)", path,
			json_string_value(json_object_get(norm, "type")) ? json_string_value(json_object_get(norm, "type")) : "?");
	if ((sfx && *sfx) || (pfx && *pfx))
		FAIL("%s: subword prefixes or suffixes are not supported (byte-level BPE only)", path);
	if (load_vocab(b, json_object_get(model, "vocab"), json_object_get(root, "added_tokens"), path, err, errlen) ||
	    load_pretok(b, json_object_get(root, "pre_tokenizer"), &bytelevel, path, err, errlen))
		return -1;
	if (!bytelevel)
		FAIL("%s: no ByteLevel pre-tokenizer: not a byte-level BPE", path);
	b->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
	byte_alphabet(b);
	for (int c = 0; c < 256; c++)
		b->byte_id[c] = llmt_bpe_lookup(b, one, put_utf8(one, b->byte_cp[c]));
	if (load_merges(b, json_object_get(model, "merges"), path, err, errlen))
		return -1;
	load_specials(b, path, root);
	return 0;
}

llmt_bpe *llmt_bpe_load(const char *path, int *code, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root;
	llmt_bpe *b;

	*code = LLMT_EXIT_DATA;
	if (errlen)
		*err = 0;
	if (access(path, R_OK)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		*code = errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_DATA;
		return NULL;
	}
	root = json_load_file(path, 0, &je);
	if (!root) {
		snprintf(err, errlen, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column, je.text);
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b || load_json(b, root, path, err, errlen) ||
	    !(b->md = pcre2_match_data_create(4, NULL)) || !(b->cache = calloc(BPE_CACHE_SLOTS, sizeof(bpe_cached)))) {
		if (b && !*err)
			snprintf(err, errlen, "%s: out of memory", path);
		llmt_bpe_free(b);
		json_decref(root);
		return NULL;
	}
	json_decref(root);
	return b;
}

void llmt_bpe_free(llmt_bpe *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; b->tok && i < b->n; i++)
		free(b->tok[i]);
	for (int i = 0; i < b->nre; i++)
		pcre2_code_free(b->re[i]);
	pcre2_match_data_free(b->md);
	free(b->tok);
	free(b->toklen);
	free(b->special);
	free(b->str_slot);
	free(b->merges);
	free(b->added);
	free(b->cache);
	free(b);
}
