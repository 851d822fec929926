/* bpe.c: encoding and decoding with a loaded byte-level BPE (bpe_int.h):
 * added tokens first (leftmost, longest), then each pre-tokenizer stage
 * splits its text into matches and the gaps between them (Isolated), and
 * each final piece is merged by rank, lowest first, leftmost on ties, as
 * Hugging Face tokenizers' BPE does. Short pieces are cached. With an NFC
 * normalizer the text between added tokens is normalized (libunistring)
 * before it is split. */
#include "bpe_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uninorm.h>
#include <xxhash.h>
#include "tokenize.h"

int llmt_bpe_size(const llmt_bpe *b) { return (int)b->n; }
int llmt_bpe_bos(const llmt_bpe *b) { return b->bos; }
int llmt_bpe_eos(const llmt_bpe *b) { return b->eos; }
int llmt_bpe_pad(const llmt_bpe *b) { return b->pad; }

int llmt_bpe_token_id(const llmt_bpe *b, const char *tok)
{
	uint32_t id = llmt_bpe_lookup(b, tok, strlen(tok));

	return id == BPE_NONE ? -1 : (int)id;
}

typedef struct {
	uint32_t **ids;
	size_t *n, *cap;
	char *err;
	size_t errlen;
} sink;

static int push(sink *o, const uint32_t *v, size_t k)
{
	if (*o->n + k > *o->cap) {
		size_t nc = *o->cap ? *o->cap : 1024;
		uint32_t *nv;
		while (nc < *o->n + k)
			nc *= 2;
		nv = realloc(*o->ids, nc * sizeof(uint32_t));
		if (!nv) {
			snprintf(o->err, o->errlen, "out of memory");
			return -1;
		}
		*o->ids = nv;
		*o->cap = nc;
	}
	memcpy(*o->ids + *o->n, v, k * sizeof(uint32_t));
	*o->n += k;
	return 0;
}

/* merge the symbols of one piece in place; returns their count */
static size_t merge_piece(const llmt_bpe *b, uint32_t *sym, size_t k)
{
	while (k > 1) {
		const bpe_merge *best = NULL;
		size_t at = 0;
		for (size_t i = 0; i + 1 < k; i++) {
			const bpe_merge *m = llmt_bpe_merge_of(b, sym[i], sym[i + 1]);
			if (m && (!best || m->rank < best->rank)) {
				best = m;
				at = i;
			}
		}
		if (!best)
			break;
		sym[at] = best->id;
		memmove(sym + at + 1, sym + at + 2, (k - at - 2) * sizeof(uint32_t));
		k--;
	}
	return k;
}

static int encode_piece(llmt_bpe *b, const char *p, size_t len, sink *o)
{
	uint64_t h = 0;
	bpe_cached *c = NULL;
	uint32_t stack[256], *sym = len <= 256 ? stack : malloc(len * sizeof(uint32_t));
	size_t k;
	int rc;

	if (len <= BPE_CACHE_BYTES) {
		h = XXH3_64bits(p, len);
		c = &b->cache[h & (BPE_CACHE_SLOTS - 1)];
		if (c->hash == h && c->len == len && c->nids && !memcmp(c->piece, p, len))
			return push(o, c->ids, c->nids);
	}
	if (!sym) {
		snprintf(o->err, o->errlen, "out of memory");
		return -1;
	}
	for (k = 0; k < len; k++) {
		sym[k] = b->byte_id[(unsigned char)p[k]];
		if (sym[k] == BPE_NONE) {
			snprintf(o->err, o->errlen, "byte 0x%02x has no token in the vocabulary", (unsigned char)p[k]);
			if (sym != stack)
				free(sym);
			return -1;
		}
	}
	if (b->ignore_merges && len > 1) {  /* a piece that is a token stays whole */
		char mapped[512];
		size_t m = 0;
		for (size_t i = 0; i < len && m + 2 <= sizeof(mapped); i++)
			m += (size_t)snprintf(mapped + m, 3, "%s", b->tok[sym[i]]);
		uint32_t id = len * 2 <= sizeof(mapped) ? llmt_bpe_lookup(b, mapped, m) : BPE_NONE;
		if (id != BPE_NONE)
			sym[0] = id, k = 1;
	}
	if (k > 1)
		k = merge_piece(b, sym, k);
	if (c && k <= BPE_CACHE_IDS) {
		c->hash = h;
		c->len = (uint8_t)len;
		c->nids = (uint8_t)k;
		memcpy(c->piece, p, len);
		memcpy(c->ids, sym, k * sizeof(uint32_t));
	}
	rc = push(o, sym, k);
	if (sym != stack)
		free(sym);
	return rc;
}

static int pretok(llmt_bpe *b, const char *s, size_t len, int stage, sink *o);

static int pretok_prefixed(llmt_bpe *b, const char *s, size_t len, int stage, sink *o)
{
	char *t;
	int rc;

	if (stage != b->bl_stage || !b->add_prefix_space || (len && s[0] == ' '))
		return pretok(b, s, len, stage, o);
	t = malloc(len + 1);
	if (!t) {
		snprintf(o->err, o->errlen, "out of memory");
		return -1;
	}
	t[0] = ' ';
	memcpy(t + 1, s, len);
	rc = pretok(b, t, len + 1, stage, o);
	free(t);
	return rc;
}

static int pretok(llmt_bpe *b, const char *s, size_t len, int stage, sink *o)
{
	PCRE2_SIZE start = 0, last = 0;

	if (stage == b->nre)
		return encode_piece(b, s, len, o);
	while (start < len) {
		int rc = pcre2_match(b->re[stage], (PCRE2_SPTR)s, len, start, PCRE2_NO_UTF_CHECK, b->md, NULL);
		PCRE2_SIZE ms, me;
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0) {
			snprintf(o->err, o->errlen, "pre-tokenizer pattern match failed (PCRE2 error %d)", rc);
			return -1;
		}
		ms = pcre2_get_ovector_pointer(b->md)[0];
		me = pcre2_get_ovector_pointer(b->md)[1];
		if (me == ms) {  /* an empty match splits nothing: step one character */
			start = ms + 1;
			while (start < len && ((unsigned char)s[start] & 0xc0) == 0x80)
				start++;
			continue;
		}
		if (ms > last && pretok_prefixed(b, s + last, ms - last, stage + 1, o))
			return -1;
		if (pretok_prefixed(b, s + ms, me - ms, stage + 1, o))
			return -1;
		last = start = me;
	}
	return last < len ? pretok_prefixed(b, s + last, len - last, stage + 1, o) : 0;
}

/* the leftmost added token at or after from: its offset, and *id */
static size_t next_added(const llmt_bpe *b, const char *s, size_t n, size_t from, uint32_t *id)
{
	for (size_t i = from; i < n; i++) {
		if (!b->added_first[(unsigned char)s[i]])
			continue;
		for (int k = 0; k < b->nadded; k++) {
			uint32_t t = b->added[k];
			if (b->toklen[t] <= n - i && !memcmp(s + i, b->tok[t], b->toklen[t])) {
				*id = t;
				return i;
			}
		}
	}
	return n;
}

/* the text between two added tokens, normalized when the file says so */
static int segment(llmt_bpe *b, const char *s, size_t len, sink *o)
{
	size_t m = 0;
	uint8_t *t;
	int rc;

	if (!b->nfc)
		return pretok_prefixed(b, s, len, 0, o);
	t = u8_normalize(UNINORM_NFC, (const uint8_t *)s, len, NULL, &m);
	if (!t) {
		snprintf(o->err, o->errlen, "NFC normalization failed");
		return -1;
	}
	rc = pretok_prefixed(b, (const char *)t, m, 0, o);
	free(t);
	return rc;
}

int llmt_bpe_encode(llmt_bpe *b, const char *s, size_t n, uint32_t **ids, size_t *nids,
	size_t *cap, char *err, size_t errlen)
{
	sink o = { ids, nids, cap, err, errlen };
	size_t pos = 0, bad = llmt_utf8_check((const unsigned char *)s, n);

	if (bad != n) {
		snprintf(err, errlen, "not UTF-8 text: byte 0x%02x at offset %zu", (unsigned char)s[bad], bad);
		return -1;
	}
	while (pos < n) {
		uint32_t id = 0;
		size_t at = next_added(b, s, n, pos, &id);
		if (at > pos && segment(b, s + pos, at - pos, &o))
			return -1;
		if (at == n)
			break;
		if (push(&o, &id, 1))
			return -1;
		pos = at + b->toklen[id];
	}
	return 0;
}

/* one token's bytes: its characters mapped back through the byte-level
 * alphabet, or its own bytes when one is outside it (as tokenizers' ByteLevel
 * decoder does) */
static size_t token_bytes(const llmt_bpe *b, uint32_t id, char *o)
{
	const unsigned char *t = (const unsigned char *)b->tok[id];
	size_t m = 0, len = b->toklen[id];

	for (size_t i = 0; i < len;) {
		unsigned cp = t[i];
		size_t w = 1;
		if ((cp & 0xe0) == 0xc0 && i + 1 < len)
			cp = (cp & 0x1f) << 6 | (t[i + 1] & 0x3f), w = 2;
		else if (cp >= 0x80)
			cp = 0xffff;  /* not one of the 2-byte alphabet characters */
		if (cp >= 512 || b->cp_byte[cp] < 0) {
			memcpy(o, t, len);
			return len;
		}
		o[m++] = (char)b->cp_byte[cp];
		i += w;
	}
	return m;
}

int llmt_bpe_decode(const llmt_bpe *b, const uint32_t *ids, size_t n, char **out,
	size_t *outlen, char *err, size_t errlen)
{
	size_t total = 0, m = 0;
	char *o;

	for (size_t i = 0; i < n; i++) {
		if (ids[i] >= b->n || !b->tok[ids[i]]) {
			snprintf(err, errlen, "token %u at index %zu is outside the vocabulary (%u)", ids[i], i, b->n);
			return -1;
		}
		total += b->toklen[ids[i]];
	}
	o = malloc(total + 1);
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		m += token_bytes(b, ids[i], o + m);
	o[m] = 0;
	*out = o;
	*outlen = m;
	return 0;
}
