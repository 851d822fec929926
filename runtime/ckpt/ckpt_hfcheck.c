/* ckpt_hfcheck.c: what a Hugging Face model directory must hold before
 * import or --init-from take it: exactly the tensors its config implies
 * (names, shapes, the dtype config.json names; tied or untied head), none
 * missing and none unknown. Pure: works on the parsed safetensors headers. */
#include "ckpt_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* append name to a ", "-separated list in buf (at most 6 names, then a count) */
static void list_add(char *buf, size_t len, int *count, const char *name)
{
	size_t n = strlen(buf);

	if (++*count <= 6)
		snprintf(buf + n, len - n, "%s%s", n ? ", " : "", name);
}

static void list_end(char *buf, size_t len, int count)
{
	size_t n = strlen(buf);

	if (count > 6)
		snprintf(buf + n, len - n, " and %d more", count - 6);
}

static llmt_ckpt_dtype piece_dtype(const ck_source *s, int kind, int tensor)
{
	for (int p = 0; p < s->npieces; p++)
		if (s->pieces[p].kind == kind && s->pieces[p].tensor == tensor)
			return s->pieces[p].dtype;
	return LLMT_CKPT_F32;
}

int ck_hf_check(const ck_source *s, const llmt_config *cfg, int want_dtype, const char *hfdir, char *err,
                size_t errlen)
{
	llmt_par par = { 1, 0, 1, 0, NULL };
	llmt_param_info *tab;
	char missing[640] = "", unknown[640] = "";
	int n, nmiss = 0, nunk = 0, kind = ck_source_find_kind(s, "weights"), rc = 0;
	size_t nflat;
	char *seen;

	if (llmt_model_table(cfg, &par, &tab, &n, &nflat) != 0) {
		ck_fmt(err, errlen, "out of memory");
		return LLMT_EXIT_SOFTWARE;
	}
	seen = calloc((size_t)s->ntensors + 1, 1);
	for (int i = 0; i < n && seen && !rc; i++) {
		const llmt_param_info *p = &tab[i];
		int t = ck_source_find_tensor(s, p->name);
		const ck_tensor *ct = t >= 0 ? &s->tensors[t] : NULL;
		llmt_ckpt_dtype dt;
		if (!ct) {
			list_add(missing, sizeof missing, &nmiss, p->name);
			continue;
		}
		seen[t] = 1;
		if (ct->ndim != p->ndim || ct->shape[0] != p->shape[0] || (p->ndim == 2 && ct->shape[1] != p->shape[1])) {
			if (p->ndim == 2)
				ck_fmt(err, errlen, "%s: tensor %s has shape [%lld, %lld]; config.json implies [%lld, %lld]",
				       hfdir, p->name, (long long)ct->shape[0], (long long)(ct->ndim == 2 ? ct->shape[1] : 1),
				       (long long)p->shape[0], (long long)p->shape[1]);
			else
				ck_fmt(err, errlen, "%s: tensor %s has %d dimensions, shape[0] %lld; config.json implies [%lld]",
				       hfdir, p->name, ct->ndim, (long long)ct->shape[0], (long long)p->shape[0]);
			rc = LLMT_EXIT_DATA;
		} else if (want_dtype >= 0 && kind >= 0 && (int)(dt = piece_dtype(s, kind, t)) != want_dtype) {
			ck_fmt(err, errlen, "%s: tensor %s is %s; config.json's torch_dtype says %s", hfdir, p->name,
			       ck_dtype_name(dt), ck_dtype_name((llmt_ckpt_dtype)want_dtype));
			rc = LLMT_EXIT_DATA;
		}
	}
	for (int t = 0; t < s->ntensors && seen && !rc; t++)
		if (!seen[t])
			list_add(unknown, sizeof unknown, &nunk, s->tensors[t].name);
	list_end(missing, sizeof missing, nmiss);
	list_end(unknown, sizeof unknown, nunk);
	if (!seen) {
		ck_fmt(err, errlen, "out of memory");
		rc = LLMT_EXIT_SOFTWARE;
	} else if (!rc && nmiss) {
		ck_fmt(err, errlen, "%s: %d of the %d tensors config.json implies are missing: %s%s%s", hfdir, nmiss, n,
		       missing, nunk ? "; not in the model: " : "", nunk ? unknown : "");
		rc = LLMT_EXIT_DATA;
	} else if (!rc && nunk) {
		int lm = ck_source_find_tensor(s, "lm_head.weight") >= 0 && cfg->tie_embeddings;
		ck_fmt(err, errlen, "%s: %d tensors are not in the model config.json describes%s: %s", hfdir, nunk,
		       lm ? " (tie_word_embeddings is true, so lm_head.weight is not)" : "", unknown);
		rc = LLMT_EXIT_DATA;
	}
	free(seen);
	free(tab);
	return rc;
}
