/* yaml_walk: the helpers the policy parser walks its libyaml document
 * with: typed scalars with ranges, mappings with duplicate keys refused,
 * errors as file:line:column. Pure logic. */
#ifndef LLMT_YAML_WALK_H
#define LLMT_YAML_WALK_H

#include <stddef.h>
#include <yaml.h>

struct llmt_policy;

struct walk {
	yaml_document_t *doc;
	const char *fname;
	struct llmt_policy *p;
	char *err;
	size_t errlen;
};

/* Sets w->err to "file:line:column: message" at node n; returns -1. */
int yw_fail(struct walk *w, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
yaml_node_t *yw_node(struct walk *w, int idx);
const char *yw_scalar(const yaml_node_t *n);   /* NULL unless a scalar */
int yw_want(struct walk *w, const yaml_node_t *n, yaml_node_type_t t, const char *key);
/* Typed values: 0, or -1 with the key and the bad value in w->err. */
int yw_get_str(struct walk *w, const yaml_node_t *n, const char *key, char *dst, size_t len);
int yw_get_uint(struct walk *w, const yaml_node_t *n, const char *key, unsigned long min, unsigned long max,
		unsigned *out);
int yw_get_bool(struct walk *w, const yaml_node_t *n, const char *key, int *out);
int yw_get_double(struct walk *w, const yaml_node_t *n, const char *key, double min, double max, double *out);
int yw_valid_name(const char *s);   /* 1: [A-Za-z0-9_.-], 1..LLMT_NAME_MAX-1 characters */
/* Iterate a mapping, refusing duplicate keys and non-scalar keys. */
typedef int (*yw_pair_fn)(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg);
int yw_each_pair(struct walk *w, yaml_node_t *map, const char *what, yw_pair_fn fn, void *arg);
int yw_unknown(struct walk *w, yaml_node_t *k, const char *section, const char *key, const char *known);
/* Before a load: refuses text nested deeper than max_depth mappings and
 * lists, or holding more than max_anchors anchors (libyaml's cost grows
 * with their squares). 0 (malformed YAML included: the loader says
 * where), or -1 with "file:line:column: ..." in err. */
int yw_bounded(const char *text, size_t len, const char *fname, unsigned max_depth,
	       unsigned max_anchors, char *err, size_t errlen);

#endif
