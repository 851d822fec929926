/* yaml_walk.c: walking a libyaml document against a fixed schema: typed
 * scalars with ranges, mappings with duplicate keys refused, and every
 * error as file:line:column: message. Pure logic (no files). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llmt_limits.h"
#include "yaml_walk.h"


int yw_fail(struct walk *w, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w->err && w->errlen)
		snprintf(w->err, w->errlen, "%s:%lu:%lu: %s", w->fname,
			 n ? (unsigned long)n->start_mark.line + 1 : 0,
			 n ? (unsigned long)n->start_mark.column + 1 : 0, msg);
	return -1;
}

yaml_node_t *yw_node(struct walk *w, int idx)
{
	return yaml_document_get_node(w->doc, idx);
}

const char *yw_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

int yw_want(struct walk *w, const yaml_node_t *n, yaml_node_type_t t, const char *key)
{
	static const char *names[] = { "nothing", "a scalar", "a list", "a mapping" };
	if (n->type != t)
		return yw_fail(w, n, "%s must be %s", key, names[t]);
	return 0;
}

int yw_get_str(struct walk *w, const yaml_node_t *n, const char *key, char *dst, size_t len)
{
	const char *s = yw_scalar(n);
	if (!s)
		return yw_fail(w, n, "%s must be a string", key);
	if (strlen(s) >= len)
		return yw_fail(w, n, "%s is longer than %zu characters", key, len - 1);
	for (const char *c = s; *c; c++)
		if (iscntrl((unsigned char)*c))
			return yw_fail(w, n, "%s holds a control character", key);
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

int yw_get_uint(struct walk *w, const yaml_node_t *n, const char *key,
		    unsigned long min, unsigned long max, unsigned *out)
{
	const char *s = yw_scalar(n);
	unsigned long long v = 0;
	if (!s || !*s)
		return yw_fail(w, n, "%s must be a number", key);
	for (const char *c = s; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return yw_fail(w, n, "%s: '%.40s' is not a whole number", key, s);
		v = v * 10 + (unsigned)(*c - '0');
		if (v > max)
			return yw_fail(w, n, "%s: %.40s is out of range %lu..%lu", key, s, min, max);
	}
	if (v < min)
		return yw_fail(w, n, "%s: %.40s is out of range %lu..%lu", key, s, min, max);
	*out = (unsigned)v;
	return 0;
}

int yw_get_bool(struct walk *w, const yaml_node_t *n, const char *key, int *out)
{
	const char *s = yw_scalar(n);
	if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))) {
		*out = 1;
		return 0;
	}
	if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))) {
		*out = 0;
		return 0;
	}
	return yw_fail(w, n, "%s must be true or false", key);
}

int yw_get_double(struct walk *w, const yaml_node_t *n, const char *key,
		      double min, double max, double *out)
{
	const char *s = yw_scalar(n);
	char *end;
	double v;
	if (!s || !*s)
		return yw_fail(w, n, "%s must be a number", key);
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || v != v || v < min || v > max)
		return yw_fail(w, n, "%s: '%.40s' is not a number in %g..%g", key, s, min, max);
	*out = v;
	return 0;
}

int yw_valid_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n >= LLMT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return 0;
	return 1;
}


int yw_each_pair(struct walk *w, yaml_node_t *map, const char *what, yw_pair_fn fn, void *arg)
{
	yaml_node_pair_t *a, *b;
	if (yw_want(w, map, YAML_MAPPING_NODE, what))
		return -1;
	/* Bounded work: the duplicate check below is quadratic. */
	if (map->data.mapping.pairs.top - map->data.mapping.pairs.start > 256)
		return yw_fail(w, map, "%s: more than 256 keys", what);
	for (a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
		yaml_node_t *k = yw_node(w, a->key), *v = yw_node(w, a->value);
		const char *ks = yw_scalar(k);
		if (!ks || !v)
			return yw_fail(w, k ? k : map, "%s: keys must be plain names", what);
		for (b = map->data.mapping.pairs.start; b < a; b++) {
			const char *bs = yw_scalar(yw_node(w, b->key));
			if (bs && !strcmp(bs, ks))
				return yw_fail(w, k, "%s: key '%.64s' given twice", what, ks);
		}
		if (fn(w, ks, k, v, arg))
			return -1;
	}
	return 0;
}

int yw_unknown(struct walk *w, yaml_node_t *k, const char *section, const char *key,
		   const char *known)
{
	return yw_fail(w, k, "unknown key '%.64s' in %s (known: %s)", key, section, known);
}

/* libyaml sets no limits: its scanner's work grows with the square of the
 * flow depth and its loader's with the square of the anchors (a 1 MiB
 * policy of '[' held sbatch and slurmstepd for minutes). One pass over the
 * events, stopped at the first excess, bounds both before the load;
 * malformed YAML is left to the loader, whose message names the place. */
int yw_bounded(const char *text, size_t len, const char *fname, unsigned max_depth,
	       unsigned max_anchors, char *err, size_t errlen)
{
	yaml_parser_t ps;
	yaml_event_t ev;
	unsigned depth = 0, anchors = 0;
	int rc = 0, done = 0;
	if (!yaml_parser_initialize(&ps))
		return 0;
	yaml_parser_set_input_string(&ps, (const unsigned char *)text, len);
	while (!done && rc == 0 && yaml_parser_parse(&ps, &ev)) {
		const yaml_char_t *a = NULL;
		done = ev.type == YAML_STREAM_END_EVENT;
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			a = ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
								 : ev.data.mapping_start.anchor;
			if (++depth > max_depth) {
				snprintf(err, errlen, "%s:%lu:%lu: nested deeper than %u levels", fname,
					 (unsigned long)ev.start_mark.line + 1,
					 (unsigned long)ev.start_mark.column + 1, max_depth);
				rc = -1;
			}
		} else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		} else if (ev.type == YAML_SCALAR_EVENT) {
			a = ev.data.scalar.anchor;
		}
		if (rc == 0 && a && ++anchors > max_anchors) {
			snprintf(err, errlen, "%s:%lu:%lu: more than %u anchors (&name)", fname,
				 (unsigned long)ev.start_mark.line + 1,
				 (unsigned long)ev.start_mark.column + 1, max_anchors);
			rc = -1;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&ps);
	return rc;
}
