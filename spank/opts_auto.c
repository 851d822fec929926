/* opts_auto.c: the planner's keys of --llm-train (model=FILE,
 * micro-batch=N|auto, global-batch=N, seq=T), the check that an automatic
 * layout names its model, and their canonical SPEC text. Pure. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "path.h"

#include "llmt/err.h"

int llmt_opts_is_auto(const struct llmt_opts *o)
{
	return o->tp_auto || o->pp_auto || o->mb_auto;
}

/* digits only, 1..max */
static int whole(const char *key, const char *v, unsigned long max, unsigned long *out,
		 char *err, size_t errlen)
{
	unsigned long n = 0;
	if (!v || !*v || strspn(v, "0123456789") != strlen(v)) {
		SET_ERR("--llm-train: %s=%.64s is not a number", key, v ? v : "");
		return -1;
	}
	for (const char *p = v; *p; p++) {
		if (n > (max - (unsigned long)(*p - '0')) / 10) {
			SET_ERR("--llm-train: %s=%.64s is too large (max %lu)", key, v, max);
			return -1;
		}
		n = n * 10 + (unsigned long)(*p - '0');
	}
	if (!n) {
		SET_ERR("--llm-train: %s=%.64s must be at least 1", key, v);
		return -1;
	}
	*out = n;
	return 0;
}

int llmt_opts_set_plan(struct llmt_opts *o, const char *k, const char *val,
		       char *err, size_t errlen)
{
	unsigned long v;
	if (!strcmp(k, "model")) {
		size_t n = val ? strlen(val) : 0;
		if (n == 0 || n >= sizeof(o->model)) {
			SET_ERR("--llm-train: model must be 1 to %d characters", LLMT_PATH_MAX - 1);
			return -1;
		}
		if (val[0] != '/' || llmt_path_has_dot(val)) {
			SET_ERR("--llm-train: model=%.200s: want an absolute path without '.' or '..' "
				"components (the nodes read it)", val);
			return -1;
		}
		memcpy(o->model, val, n + 1);
		o->set |= LLMT_SET_MODEL;
		return 0;
	}
	if (!strcmp(k, "micro-batch")) {
		o->mb_auto = val && !strcmp(val, "auto");
		if (o->mb_auto)
			o->micro_batch = 0;
		else if (whole(k, val, 1u << 16, &v, err, errlen))
			return -1;
		else
			o->micro_batch = (unsigned)v;
		o->set |= LLMT_SET_MICRO_BATCH;
		return 0;
	}
	if (!strcmp(k, "global-batch")) {
		if (whole(k, val, 1ul << 30, &v, err, errlen))
			return -1;
		o->global_batch = v;
		o->set |= LLMT_SET_GLOBAL_BATCH;
		return 0;
	}
	if (!strcmp(k, "seq")) {
		if (whole(k, val, 1u << 20, &v, err, errlen))
			return -1;
		o->seq = (unsigned)v;
		o->set |= LLMT_SET_SEQ;
		return 0;
	}
	return 1;
}

int llmt_opts_check_auto(const struct llmt_opts *o, char *err, size_t errlen)
{
	const char *what = o->tp_auto ? "tp=auto" : o->pp_auto ? "pp=auto" : "micro-batch=auto";
	if (!o->model[0]) {
		SET_ERR("--llm-train: %s needs model=FILE (the model config the planner sizes)", what);
		return -1;
	}
	return 0;
}

/* ",key=s" (s non-NULL) or ",key=n" appended to buf */
static int add(char *buf, size_t len, const char *key, const char *s, unsigned long n)
{
	size_t off = strlen(buf);
	int w = s ? snprintf(buf + off, len - off, "%s%s=%s", off ? "," : "", key, s)
		  : snprintf(buf + off, len - off, "%s%s=%lu", off ? "," : "", key, n);
	return w < 0 || (size_t)w >= len - off ? -1 : 0;
}

int llmt_opts_format_plan(const struct llmt_opts *o, char *buf, size_t len)
{
	int rc = 0;
	if (o->set & LLMT_SET_MODEL)
		rc |= add(buf, len, "model", o->model, 0);
	if ((o->set & LLMT_SET_MICRO_BATCH) && o->mb_auto)
		rc |= add(buf, len, "micro-batch", "auto", 0);
	else if (o->set & LLMT_SET_MICRO_BATCH)
		rc |= add(buf, len, "micro-batch", NULL, o->micro_batch);
	if (o->set & LLMT_SET_GLOBAL_BATCH)
		rc |= add(buf, len, "global-batch", NULL, o->global_batch);
	if (o->set & LLMT_SET_SEQ)
		rc |= add(buf, len, "seq", NULL, o->seq);
	return rc;
}
