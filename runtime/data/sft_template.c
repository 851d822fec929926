/* sft_template.c: the chat templates of tokenize-sft (doc/finetune.md):
 * plain, Llama 2's [INST] ... [/INST] and ChatML's <|im_start|> ...
 * <|im_end|>; each part of a conversation encoded apart, its ids flagged
 * as trained on (assistant turns and the marker that ends them) or not. */
#include "sft.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llmt/exitcodes.h"
#include "mask.h"

static const char *const templates[] = { "plain", "llama2", "chatml", NULL };

int llmt_sft_template_known(const char *name)
{
	for (int i = 0; templates[i]; i++)
		if (!strcmp(name, templates[i]))
			return 1;
	return 0;
}

int llmt_sft_role_ok(const char *role)
{
	return !strcmp(role, "system") || !strcmp(role, "user") || !strcmp(role, "assistant") ? 0 : -1;
}

int llmt_sft_template_check(const llmt_tok *t, const char *name, char *err, size_t errlen)
{
	const char *miss = NULL;

	if (!strcmp(name, "chatml")) {
		if (llmt_tok_piece_id(t, "<|im_start|>") < 0)
			miss = "<|im_start|>";
		else if (llmt_tok_piece_id(t, "<|im_end|>") < 0)
			miss = "<|im_end|>";
	} else if (llmt_tok_eos(t) < 0) {
		miss = "an end-of-sequence (EOS) token";
	} else if (!strcmp(name, "llama2") && llmt_tok_bos(t) < 0) {
		miss = "a beginning-of-sequence (BOS) token";
	}
	if (!miss)
		return 0;
	snprintf(err, errlen, "template %s needs %s, which tokenizer %s does not have", name, miss,
		llmt_tok_path(t));
	return LLMT_EXIT_USAGE;
}

/* flags for the ids appended since `from` */
static int flag_from(llmt_sft_sample *s, size_t from, int train)
{
	if (s->ids.n > s->fcap) {
		size_t cap = s->ids.n * 2 + 256;
		uint8_t *f = realloc(s->flags, cap);
		if (!f)
			return LLMT_EXIT_SOFTWARE;
		s->flags = f;
		s->fcap = cap;
	}
	memset(s->flags + from, train ? LLMT_MASK_TRAIN : 0, s->ids.n - from);
	return 0;
}

static int text(llmt_tok *t, llmt_sft_sample *s, const char *p, size_t n, int train, char *err,
	size_t errlen)
{
	size_t from = s->ids.n;
	int rc = n ? llmt_tok_encode(t, p, n, &s->ids, err, errlen) : 0;

	return rc ? rc : flag_from(s, from, train);
}

static int id(llmt_sft_sample *s, int tok, int train)
{
	size_t from = s->ids.n;

	if (s->ids.n == s->ids.cap) {
		uint32_t *v = realloc(s->ids.v, sizeof(uint32_t) * (s->ids.cap = s->ids.cap * 2 + 256));
		if (!v)
			return LLMT_EXIT_SOFTWARE;
		s->ids.v = v;
	}
	s->ids.v[s->ids.n++] = (uint32_t)tok;
	return flag_from(s, from, train);
}

#define TRY(x) do { if ((rc = (x))) return rc; } while (0)

/* a NUL-free joined string a + b + c into buf (malloc'd) */
static char *join3(const char *a, const char *b, size_t bl, const char *c, size_t *n)
{
	size_t al = strlen(a), cl = strlen(c);
	char *r = malloc(al + bl + cl + 1);

	if (r) {
		memcpy(r, a, al);
		memcpy(r + al, b, bl);
		memcpy(r + al + bl, c, cl + 1);
		*n = al + bl + cl;
	}
	return r;
}

/* one turn: prefix + content + suffix as one piece of text */
static int turn(llmt_tok *t, llmt_sft_sample *s, const char *pre, const llmt_sft_msg *m,
	const char *suf, int train, char *err, size_t errlen)
{
	size_t n;
	char *p = join3(pre, m->content, m->len, suf, &n);
	int rc;

	if (!p)
		return LLMT_EXIT_SOFTWARE;
	rc = text(t, s, p, n, train, err, errlen);
	free(p);
	return rc;
}

static int plain(llmt_tok *t, const llmt_sft_msg *m, int n, llmt_sft_sample *s, char *err,
	size_t errlen)
{
	int rc;

	if (llmt_tok_bos(t) >= 0)
		TRY(id(s, llmt_tok_bos(t), 0));
	for (int i = 0; i < n; i++) {
		if (strcmp(m[i].role, "assistant")) {
			TRY(turn(t, s, "", &m[i], "\n", 0, err, errlen));
			continue;
		}
		TRY(turn(t, s, "", &m[i], "", 1, err, errlen));
		TRY(id(s, llmt_tok_eos(t), 1));
	}
	return 0;
}

static int llama2(llmt_tok *t, const llmt_sft_msg *m, int n, llmt_sft_sample *s, char *err,
	size_t errlen)
{
	const llmt_sft_msg *sys = NULL;
	int rc;

	for (int i = 0; i < n; i++) {
		if (!strcmp(m[i].role, "system")) {
			sys = &m[i];
		} else if (!strcmp(m[i].role, "user")) {
			TRY(id(s, llmt_tok_bos(t), 0));
			if (sys) {
				TRY(turn(t, s, "[INST] <<SYS>>\n", sys, "\n<</SYS>>\n\n", 0, err, errlen));
				TRY(turn(t, s, "", &m[i], " [/INST]", 0, err, errlen));
			} else {
				TRY(turn(t, s, "[INST] ", &m[i], " [/INST]", 0, err, errlen));
			}
			sys = NULL;
		} else {
			TRY(turn(t, s, " ", &m[i], " ", 1, err, errlen));
			TRY(id(s, llmt_tok_eos(t), 1));
		}
	}
	return 0;
}

static int chatml(llmt_tok *t, const llmt_sft_msg *m, int n, llmt_sft_sample *s, char *err,
	size_t errlen)
{
	int st = llmt_tok_piece_id(t, "<|im_start|>"), en = llmt_tok_piece_id(t, "<|im_end|>"), rc;
	char head[32];

	for (int i = 0; i < n; i++) {
		int tr = !strcmp(m[i].role, "assistant");
		TRY(id(s, st, 0));
		snprintf(head, sizeof(head), "%s\n", m[i].role);
		TRY(text(t, s, head, strlen(head), 0, err, errlen));
		TRY(turn(t, s, "", &m[i], "", tr, err, errlen));
		TRY(id(s, en, tr));
		TRY(text(t, s, "\n", 1, 0, err, errlen));
	}
	return 0;
}

int llmt_sft_render(llmt_tok *t, const char *name, const llmt_sft_msg *m, int n,
	llmt_sft_sample *s, char *err, size_t errlen)
{
	int rc;

	s->ids.n = 0;
	if (!strcmp(name, "plain"))
		rc = plain(t, m, n, s, err, errlen);
	else if (!strcmp(name, "llama2"))
		rc = llama2(t, m, n, s, err, errlen);
	else
		rc = chatml(t, m, n, s, err, errlen);
	if (rc == LLMT_EXIT_SOFTWARE)
		snprintf(err, errlen, "out of memory");
	return rc;
}

void llmt_sft_sample_free(llmt_sft_sample *s)
{
	free(s->ids.v);
	free(s->flags);
	memset(s, 0, sizeof(*s));
}
