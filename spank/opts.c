/* Options of a training job: --llm-train=SPEC and --llm-* parsing into
 * struct llmt_opts, defaults from the policy, the canonical form; the
 * validation is in opts_check.c. Pure: no Slurm, no filesystem. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "opts.h"
#include "path.h"
#include "policy.h"

#include "llmt/err.h"

void llmt_opts_init(struct llmt_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->restarts = -1;
}

/* Strict unsigned decimal: digits only, 1..max. */
static int parse_uint(const char *key, const char *s, unsigned long long max,
		      unsigned long long *out, char *err, size_t errlen)
{
	unsigned long long v = 0;
	if (!s || !*s) {
		SET_ERR("--llm-train: %s needs a number", key);
		return -1;
	}
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p)) {
			SET_ERR("--llm-train: %s=%.64s is not a number", key, s);
			return -1;
		}
		unsigned d = (unsigned)(*p - '0');
		if (v > (max - d) / 10) {
			SET_ERR("--llm-train: %s=%.64s is too large (max %llu)", key, s, max);
			return -1;
		}
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int parse_size(const char *key, const char *s, unsigned *out,
		      char *err, size_t errlen)
{
	unsigned long long v;
	if (parse_uint(key, s, LLMT_MAX_TASKS, &v, err, errlen))
		return -1;
	if (v == 0) {
		SET_ERR("--llm-train: %s=%s must be at least 1", key, s);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* A name (profile): letters, digits, '_', '-', '.'; 1..LLMT_NAME_MAX-1. */
static int check_name(const char *key, const char *v, char *err, size_t errlen)
{
	size_t n = v ? strlen(v) : 0;
	if (n == 0 || n >= LLMT_NAME_MAX) {
		SET_ERR("--llm-train: %s=%.64s must be 1 to %d characters", key, v ? v : "",
			LLMT_NAME_MAX - 1);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("_-.", v[i])) {
			SET_ERR("--llm-train: %s=%.64s: only letters, digits, '_', '-', '.' allowed", key, v);
			return -1;
		}
	return 0;
}

static int parse_bool(const char *key, const char *v, int *out, char *err, size_t errlen)
{
	if (!v || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false")) {
		*out = 0;
		return 0;
	}
	SET_ERR("--llm-train: %s=%.64s is not 0/1/yes/no", key, v);
	return -1;
}

/* Offset of the first control character of s, or -1. */
static long ctl_at(const char *s)
{
	for (long i = 0; s && s[i]; i++)
		if (iscntrl((unsigned char)s[i]))
			return i;
	return -1;
}

/* A SPEC holding a control character: refused naming the item's key
 * (never the text: it must not reach a log line). 0 when clean. */
static int spec_ctl_refuse(const char *spec, char *err, size_t errlen)
{
	long off = ctl_at(spec);
	if (off < 0)
		return 0;
	long b = off;
	while (b > 0 && spec[b - 1] != ',')
		b--;
	const char *eq = memchr(spec + b, '=', (size_t)(off - b));
	unsigned char c = (unsigned char)spec[off];
	if (eq)
		SET_ERR("--llm-train: %.*s holds a control character (byte 0x%02x)", (int)(eq - spec - b),
			spec + b, c);
	else
		SET_ERR("--llm-train: SPEC holds a control character (byte 0x%02x at offset %ld)", c, off);
	return -1;
}

/* The LLMT_SET_* bit of a SPEC key (without "llm-"), 0 when unknown. */
static unsigned key_bit(const char *k)
{
	static const struct { const char *k; unsigned bit; } m[] = {
		{ "tp", LLMT_SET_TP }, { "pp", LLMT_SET_PP }, { "dp", LLMT_SET_DP },
		{ "ckpt-dir", LLMT_SET_CKPT_DIR }, { "ckpt-interval", LLMT_SET_CKPT_INTERVAL },
		{ "restarts", LLMT_SET_RESTARTS }, { "nccl", LLMT_SET_NCCL },
		{ "nccl-profile", LLMT_SET_NCCL }, { "explain", LLMT_SET_EXPLAIN },
		{ "model", LLMT_SET_MODEL }, { "micro-batch", LLMT_SET_MICRO_BATCH },
		{ "global-batch", LLMT_SET_GLOBAL_BATCH }, { "seq", LLMT_SET_SEQ },
	};
	for (unsigned i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (!strcmp(k, m[i].k))
			return m[i].bit;
	return 0;
}

/* tp=N|auto or pp=N|auto */
static int set_tp_pp(struct llmt_opts *o, const char *k, const char *val, char *err, size_t errlen)
{
	unsigned *dst = k[0] == 't' ? &o->tp : &o->pp;
	int *au = k[0] == 't' ? &o->tp_auto : &o->pp_auto;
	*au = val && !strcmp(val, "auto");
	if (*au)
		*dst = 0;
	else if (parse_size(k, val, dst, err, errlen))
		return -1;
	o->set |= k[0] == 't' ? LLMT_SET_TP : LLMT_SET_PP;
	return 0;
}

int llmt_opts_set(struct llmt_opts *o, const char *key, const char *val,
		  char *err, size_t errlen)
{
	const char *k = key;
	unsigned long long v;

	if (!k || !*k) {
		SET_ERR("--llm-train: empty option name");
		return -1;
	}
	if (!strncmp(k, "llm-", 4))
		k += 4;
	if (ctl_at(k) >= 0) {
		SET_ERR("--llm-train: an option name holds a control character");
		return -1;
	}
	if (strcmp(k, "train") != 0 && ctl_at(val) >= 0) {
		SET_ERR("--llm-train: %.64s holds a control character (byte 0x%02x)", k,
			(unsigned char)val[ctl_at(val)]);
		return -1;
	}
	if (val && strlen(val) >= LLMT_SPEC_MAX) {
		SET_ERR("--llm-%s: value longer than %d bytes", k, LLMT_SPEC_MAX - 1);
		return -1;
	}
	o->enabled = 1;
	if (!strcmp(k, "train"))
		return llmt_opts_parse_spec(o, val, err, errlen);
	if (!strcmp(k, "tp") || !strcmp(k, "pp"))
		return set_tp_pp(o, k, val, err, errlen);
	if (!strcmp(k, "dp")) {
		if (val && !strcmp(val, "auto")) {
			o->dp = 0;
			o->dp_auto = 1;
		} else {
			if (parse_size(k, val, &o->dp, err, errlen))
				return -1;
			o->dp_auto = 0;
		}
		o->set |= LLMT_SET_DP;
		return 0;
	}
	if (!strcmp(k, "ckpt-dir")) {
		size_t n = val ? strlen(val) : 0;
		if (n == 0 || n >= sizeof(o->ckpt_dir)) {
			SET_ERR("--llm-train: ckpt-dir must be 1 to %d characters", LLMT_PATH_MAX - 1);
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			if (iscntrl((unsigned char)val[i])) {
				SET_ERR("--llm-train: ckpt-dir holds a control character");
				return -1;
			}
		if (val[0] != '/') {
			SET_ERR("--llm-train: ckpt-dir=%.200s is not an absolute path", val);
			return -1;
		}
		memcpy(o->ckpt_dir, val, n + 1);
		o->set |= LLMT_SET_CKPT_DIR;
		return 0;
	}
	if (!strcmp(k, "ckpt-interval")) {
		if (llmt_interval_parse(val, &o->ckpt_interval, err, errlen))
			return -1;
		o->set |= LLMT_SET_CKPT_INTERVAL;
		return 0;
	}
	if (!strcmp(k, "restarts")) {
		if (parse_uint("restarts", val, 100000, &v, err, errlen))
			return -1;
		o->restarts = (int)v;
		o->set |= LLMT_SET_RESTARTS;
		return 0;
	}
	if (!strcmp(k, "nccl") || !strcmp(k, "nccl-profile")) {
		if (check_name(k, val, err, errlen))
			return -1;
		snprintf(o->nccl_profile, sizeof(o->nccl_profile), "%s", val);
		o->set |= LLMT_SET_NCCL;
		return 0;
	}
	if (!strcmp(k, "explain")) {
		if (parse_bool(k, val, &o->explain, err, errlen))
			return -1;
		o->set |= LLMT_SET_EXPLAIN;
		return 0;
	}
	int r = llmt_opts_set_plan(o, k, val, err, errlen);
	if (r <= 0)
		return r;
	SET_ERR("--llm-train: unknown key '%.64s' (known: tp pp dp ckpt-dir ckpt-interval restarts nccl explain "
		"model micro-batch global-batch seq)", key);
	return -1;
}

int llmt_opts_parse_spec(struct llmt_opts *o, const char *spec,
			 char *err, size_t errlen)
{
	char buf[LLMT_SPEC_MAX];
	size_t n;
	char *item, *save = NULL;

	o->enabled = 1;
	if (!spec || !*spec)
		return 0;
	n = strlen(spec);
	if (n >= sizeof(buf)) {
		SET_ERR("--llm-train: SPEC longer than %d bytes", LLMT_SPEC_MAX - 1);
		return -1;
	}
	if (spec_ctl_refuse(spec, err, errlen))
		return -1;
	memcpy(buf, spec, n + 1);
	/* Empty items ("tp=2,,pp=2", trailing comma) are mistakes: refuse. */
	if (buf[0] == ',' || buf[n - 1] == ',' || strstr(buf, ",,")) {
		SET_ERR("--llm-train: empty item in '%.200s'", spec);
		return -1;
	}
	unsigned seen = 0;
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (eq)
			*eq = 0;
		/* A key given twice in one SPEC is a mistake (the policy refuses
		 * duplicate keys the same way): which one was meant? */
		unsigned bit = key_bit(strncmp(item, "llm-", 4) ? item : item + 4);
		if (bit & seen) {
			SET_ERR("--llm-train: key '%.64s' given twice in one SPEC", item);
			return -1;
		}
		seen |= bit;
		if (!strcmp(item, "train") || !strcmp(item, "llm-train")) {
			SET_ERR("--llm-train: unknown key '%.64s'", item);
			return -1;
		}
		if (eq && !eq[1]) {
			SET_ERR("--llm-train: %.64s= has no value", item);
			return -1;
		}
		if (!eq && strcmp(item, "explain")) {
			SET_ERR("--llm-train: '%.64s' needs a value (%.64s=...)", item, item);
			return -1;
		}
		if (llmt_opts_set(o, item, eq ? eq + 1 : NULL, err, errlen))
			return -1;
	}
	return 0;
}

void llmt_opts_apply_defaults(struct llmt_opts *o, const struct llmt_policy *pol)
{
	struct llmt_policy builtin;
	const struct llmt_policy *p = pol;
	if (!p) {
		llmt_policy_defaults(&builtin);
		p = &builtin;
	}
	if (!(o->set & LLMT_SET_TP))
		o->tp = p->defaults.tp;
	if (!(o->set & LLMT_SET_PP))
		o->pp = p->defaults.pp;
	if (!(o->set & LLMT_SET_DP)) {
		o->dp = p->defaults.dp;
		o->dp_auto = p->defaults.dp == 0;
	}
	if (!(o->set & LLMT_SET_CKPT_INTERVAL))
		o->ckpt_interval = p->defaults.ckpt_interval;
	if (!(o->set & LLMT_SET_RESTARTS))
		o->restarts = (int)p->defaults.restarts;
	if (!(o->set & LLMT_SET_NCCL))
		snprintf(o->nccl_profile, sizeof(o->nccl_profile), "%s", p->defaults.nccl_profile);
}

static int append(char *buf, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int w;
	if (*off) {
		if (*off + 1 >= len)
			return -1;
		buf[(*off)++] = ',';
		buf[*off] = 0;
	}
	va_start(ap, fmt);
	w = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= len - *off)
		return -1;
	*off += (size_t)w;
	return 0;
}

int llmt_opts_format(const struct llmt_opts *o, char *buf, size_t len)
{
	char iv[32];
	size_t off = 0;
	int rc = 0;

	if (!len)
		return -1;
	buf[0] = 0;
	if ((o->set & LLMT_SET_TP) && o->tp_auto)
		rc |= append(buf, len, &off, "tp=auto");
	else if (o->set & LLMT_SET_TP)
		rc |= append(buf, len, &off, "tp=%u", o->tp);
	if ((o->set & LLMT_SET_PP) && o->pp_auto)
		rc |= append(buf, len, &off, "pp=auto");
	else if (o->set & LLMT_SET_PP)
		rc |= append(buf, len, &off, "pp=%u", o->pp);
	if (o->set & LLMT_SET_DP) {
		if (o->dp_auto)
			rc |= append(buf, len, &off, "dp=auto");
		else
			rc |= append(buf, len, &off, "dp=%u", o->dp);
	}
	if (o->set & LLMT_SET_CKPT_DIR)
		rc |= append(buf, len, &off, "ckpt-dir=%s", o->ckpt_dir);
	if (o->set & LLMT_SET_CKPT_INTERVAL) {
		llmt_interval_format(&o->ckpt_interval, iv, sizeof(iv));
		rc |= append(buf, len, &off, "ckpt-interval=%s", iv);
	}
	if (o->set & LLMT_SET_RESTARTS)
		rc |= append(buf, len, &off, "restarts=%d", o->restarts);
	if (o->set & LLMT_SET_NCCL)
		rc |= append(buf, len, &off, "nccl=%s", o->nccl_profile);
	if (o->set & LLMT_SET_EXPLAIN)
		rc |= append(buf, len, &off, "explain=%d", o->explain);
	return rc || llmt_opts_format_plan(o, buf, len) ? -1 : 0;
}
