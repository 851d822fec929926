/* Admin policy loader: libyaml's document API, walked against a fixed
 * schema into struct llmt_policy. Every error names file:line:column;
 * unknown keys, duplicate keys and out-of-range values are refused, so a
 * job never runs on a half-read policy. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#include "hostlist.h"
#include "path.h"
#include "policy.h"
#include "subst.h"

#define POLICY_MAX_BYTES (1u << 20)
#include "llmt/err.h"

void llmt_policy_defaults(struct llmt_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->builtin = 1;
	p->defaults.tp = 1;
	p->defaults.pp = 1;
	p->defaults.dp = 0;
	p->defaults.ckpt_interval.kind = LLMT_IVAL_AUTO;
	p->defaults.restarts = 3;
	p->defaults.heartbeat_timeout_s = 600;
	p->defaults.heartbeat_startup_s = 1800;
	p->limits.max_restarts = 10;
	p->limits.restart_window_s = 3600;
	p->topology.source = LLMT_TOPO_NONE;
	p->health.gpu_count.enabled = 1;
	p->health.gpu_count.timeout_s = 10;
	p->health.xid_scan.enabled = 1;
	p->health.xid_scan.timeout_s = 10;
	p->health.ckpt_free_space.enabled = 0;
	p->health.ckpt_free_space.timeout_s = 10;
	p->health.ckpt_min_free_gib = 0;
	p->health.selftest.enabled = 0;
	p->health.selftest.timeout_s = 60;
	snprintf(p->health.selftest_cmd, sizeof(p->health.selftest_cmd), "%s", "/usr/bin/llm-train");
}

void llmt_policy_free(struct llmt_policy *p)
{
	free(p);
}

/* ---- walking the YAML document ------------------------------------------ */

struct walk {
	yaml_document_t *doc;
	const char *fname;
	struct llmt_policy *p;
	char *err;
	size_t errlen;
};

static int fail(struct walk *w, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct walk *w, const yaml_node_t *n, const char *fmt, ...)
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

static yaml_node_t *node(struct walk *w, int idx)
{
	return yaml_document_get_node(w->doc, idx);
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int want(struct walk *w, const yaml_node_t *n, yaml_node_type_t t, const char *key)
{
	static const char *names[] = { "nothing", "a scalar", "a list", "a mapping" };
	if (n->type != t)
		return fail(w, n, "%s must be %s", key, names[t]);
	return 0;
}

static int get_str(struct walk *w, const yaml_node_t *n, const char *key, char *dst, size_t len)
{
	const char *s = scalar(n);
	if (!s)
		return fail(w, n, "%s must be a string", key);
	if (strlen(s) >= len)
		return fail(w, n, "%s is longer than %zu characters", key, len - 1);
	for (const char *c = s; *c; c++)
		if (iscntrl((unsigned char)*c))
			return fail(w, n, "%s holds a control character", key);
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int get_uint(struct walk *w, const yaml_node_t *n, const char *key,
		    unsigned long min, unsigned long max, unsigned *out)
{
	const char *s = scalar(n);
	unsigned long long v = 0;
	if (!s || !*s)
		return fail(w, n, "%s must be a number", key);
	for (const char *c = s; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return fail(w, n, "%s: '%.40s' is not a whole number", key, s);
		v = v * 10 + (unsigned)(*c - '0');
		if (v > max)
			return fail(w, n, "%s: %.40s is out of range %lu..%lu", key, s, min, max);
	}
	if (v < min)
		return fail(w, n, "%s: %.40s is out of range %lu..%lu", key, s, min, max);
	*out = (unsigned)v;
	return 0;
}

static int get_bool(struct walk *w, const yaml_node_t *n, const char *key, int *out)
{
	const char *s = scalar(n);
	if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))) {
		*out = 1;
		return 0;
	}
	if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))) {
		*out = 0;
		return 0;
	}
	return fail(w, n, "%s must be true or false", key);
}

static int get_double(struct walk *w, const yaml_node_t *n, const char *key,
		      double min, double max, double *out)
{
	const char *s = scalar(n);
	char *end;
	double v;
	if (!s || !*s)
		return fail(w, n, "%s must be a number", key);
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || v != v || v < min || v > max)
		return fail(w, n, "%s: '%.40s' is not a number in %g..%g", key, s, min, max);
	*out = v;
	return 0;
}

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n >= LLMT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return 0;
	return 1;
}

/* Iterate a mapping, refusing duplicate keys and non-scalar keys. */
typedef int (*pair_fn)(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg);

static int each_pair(struct walk *w, yaml_node_t *map, const char *what, pair_fn fn, void *arg)
{
	yaml_node_pair_t *a, *b;
	if (want(w, map, YAML_MAPPING_NODE, what))
		return -1;
	/* Bounded work: the duplicate check below is quadratic. */
	if (map->data.mapping.pairs.top - map->data.mapping.pairs.start > 256)
		return fail(w, map, "%s: more than 256 keys", what);
	for (a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
		yaml_node_t *k = node(w, a->key), *v = node(w, a->value);
		const char *ks = scalar(k);
		if (!ks || !v)
			return fail(w, k ? k : map, "%s: keys must be plain names", what);
		for (b = map->data.mapping.pairs.start; b < a; b++) {
			const char *bs = scalar(node(w, b->key));
			if (bs && !strcmp(bs, ks))
				return fail(w, k, "%s: key '%.64s' given twice", what, ks);
		}
		if (fn(w, ks, k, v, arg))
			return -1;
	}
	return 0;
}

static int unknown(struct walk *w, yaml_node_t *k, const char *section, const char *key,
		   const char *known)
{
	return fail(w, k, "unknown key '%.64s' in %s (known: %s)", key, section, known);
}

/* ---- sections -------------------------------------------------------------- */

static int defaults_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	if (!strcmp(key, "tp"))
		return get_uint(w, v, "defaults.tp", 1, LLMT_MAX_TASKS, &p->defaults.tp);
	if (!strcmp(key, "pp"))
		return get_uint(w, v, "defaults.pp", 1, LLMT_MAX_TASKS, &p->defaults.pp);
	if (!strcmp(key, "dp")) {
		const char *s = scalar(v);
		if (s && !strcmp(s, "auto")) {
			p->defaults.dp = 0;
			return 0;
		}
		return get_uint(w, v, "defaults.dp", 1, LLMT_MAX_TASKS, &p->defaults.dp);
	}
	if (!strcmp(key, "ckpt_interval")) {
		char e[256];
		const char *s = scalar(v);
		if (!s)
			return fail(w, v, "defaults.ckpt_interval must be N, Ns, Nm, Nh or auto");
		if (llmt_interval_parse(s, &p->defaults.ckpt_interval, e, sizeof(e)))
			return fail(w, v, "defaults.ckpt_interval: '%.40s' is not N, Ns, Nm, Nh or auto", s);
		return 0;
	}
	if (!strcmp(key, "restarts"))
		return get_uint(w, v, "defaults.restarts", 0, 100000, &p->defaults.restarts);
	if (!strcmp(key, "nccl_profile")) {
		if (get_str(w, v, "defaults.nccl_profile", p->defaults.nccl_profile, LLMT_NAME_MAX))
			return -1;
		if (p->defaults.nccl_profile[0] && !valid_name(p->defaults.nccl_profile))
			return fail(w, v, "defaults.nccl_profile: bad name '%s'", p->defaults.nccl_profile);
		return 0;
	}
	if (!strcmp(key, "heartbeat_timeout"))
		return get_uint(w, v, "defaults.heartbeat_timeout", 10, 86400, &p->defaults.heartbeat_timeout_s);
	if (!strcmp(key, "heartbeat_startup"))
		return get_uint(w, v, "defaults.heartbeat_startup", 10, 86400, &p->defaults.heartbeat_startup_s);
	if (!strcmp(key, "preflight"))
		return get_bool(w, v, "defaults.preflight", &p->defaults.preflight);
	return unknown(w, k, "defaults", key,
		       "tp pp dp ckpt_interval restarts nccl_profile heartbeat_timeout heartbeat_startup preflight");
}

struct cap_ctx { struct llmt_limit *l; const char *what; };

static int cap_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct cap_ctx *c = arg;
	if (!strcmp(key, "max_nodes"))
		return get_uint(w, v, "max_nodes", 0, LLMT_MAX_NODES, &c->l->max_nodes);
	if (!strcmp(key, "max_gpus"))
		return get_uint(w, v, "max_gpus", 0, LLMT_MAX_TASKS, &c->l->max_gpus);
	return unknown(w, k, c->what, key, "max_nodes max_gpus");
}

struct caps_ctx { struct llmt_limit *arr; unsigned *n; const char *what; };

static int caps_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct caps_ctx *c = arg;
	struct cap_ctx cc;
	if (*c->n >= LLMT_MAX_LIMIT_ENTRIES)
		return fail(w, k, "%s: more than %d entries", c->what, LLMT_MAX_LIMIT_ENTRIES);
	if (!valid_name(key))
		return fail(w, k, "%s: bad name '%.64s'", c->what, key);
	cc.l = &c->arr[(*c->n)++];
	snprintf(cc.l->name, sizeof(cc.l->name), "%s", key);
	cc.what = c->what;
	return each_pair(w, v, c->what, cap_pair, &cc);
}

static int check_root(struct walk *w, yaml_node_t *n, const char *r)
{
	if (r[0] != '/')
		return fail(w, n, "limits.ckpt_roots: '%.200s' is not an absolute path", r);
	if (llmt_path_has_dot(r))
		return fail(w, n, "limits.ckpt_roots: '%.200s' has '.' or '..' components", r);
	return 0;
}

static int limits_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	if (!strcmp(key, "max_restarts"))
		return get_uint(w, v, "limits.max_restarts", 0, 100000, &p->limits.max_restarts);
	if (!strcmp(key, "restart_window"))
		return get_uint(w, v, "limits.restart_window", 1, 10000000, &p->limits.restart_window_s);
	if (!strcmp(key, "ckpt_roots")) {
		if (want(w, v, YAML_SEQUENCE_NODE, "limits.ckpt_roots"))
			return -1;
		p->limits.nroots = 0;
		for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *e = node(w, *it);
			if (p->limits.nroots >= LLMT_MAX_ROOTS)
				return fail(w, e, "limits.ckpt_roots: more than %d roots", LLMT_MAX_ROOTS);
			char *dst = p->limits.ckpt_roots[p->limits.nroots];
			if (get_str(w, e, "limits.ckpt_roots entry", dst, LLMT_PATH_MAX) || check_root(w, e, dst))
				return -1;
			p->limits.nroots++;
		}
		return 0;
	}
	if (!strcmp(key, "partitions")) {
		struct caps_ctx c = { p->limits.partitions, &p->limits.npartitions, "limits.partitions" };
		return each_pair(w, v, "limits.partitions", caps_pair, &c);
	}
	if (!strcmp(key, "accounts")) {
		struct caps_ctx c = { p->limits.accounts, &p->limits.naccounts, "limits.accounts" };
		return each_pair(w, v, "limits.accounts", caps_pair, &c);
	}
	return unknown(w, k, "limits", key, "max_restarts restart_window ckpt_roots partitions accounts");
}

static int nodetype_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_node_type *t = arg;
	if (!strcmp(key, "name")) {
		if (get_str(w, v, "node_types.name", t->name, LLMT_NAME_MAX))
			return -1;
		if (!valid_name(t->name))
			return fail(w, v, "node_types.name: bad name '%s'", t->name);
		return 0;
	}
	if (!strcmp(key, "nodes")) {
		char e[256];
		if (get_str(w, v, "node_types.nodes", t->nodes, LLMT_HOSTLIST_MAX))
			return -1;
		if (llmt_hostlist_foreach(t->nodes, LLMT_MAX_NODES, NULL, NULL, e, sizeof(e)) < 0)
			return fail(w, v, "node_types.nodes: %s", e);
		return 0;
	}
	if (!strcmp(key, "gpus_per_node"))
		return get_uint(w, v, "node_types.gpus_per_node", 0, 64, &t->gpus_per_node);
	if (!strcmp(key, "nvlink")) {
		const char *s = scalar(v);
		if (s && !strcmp(s, "node")) {
			t->nvlink_block = 0;
			return 0;
		}
		return get_uint(w, v, "node_types.nvlink (node or GPUs per block)", 1, 65536, &t->nvlink_block);
	}
	if (!strcmp(key, "nics")) {
		if (want(w, v, YAML_SEQUENCE_NODE, "node_types.nics"))
			return -1;
		t->nnics = 0;
		for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *e = node(w, *it);
			if (t->nnics >= LLMT_MAX_NICS)
				return fail(w, e, "node_types.nics: more than %d NICs", LLMT_MAX_NICS);
			if (get_str(w, e, "node_types.nics entry", t->nics[t->nnics], LLMT_NAME_MAX))
				return -1;
			if (!valid_name(t->nics[t->nnics]) && !strchr(t->nics[t->nnics], ':'))
				return fail(w, e, "node_types.nics: bad NIC name '%s'", t->nics[t->nnics]);
			t->nnics++;
		}
		return 0;
	}
	return unknown(w, k, "node_types", key, "name nodes gpus_per_node nvlink nics");
}

static int node_types(struct walk *w, yaml_node_t *v)
{
	struct llmt_policy *p = w->p;
	yaml_node_t *ents[LLMT_MAX_NODE_TYPES];
	if (want(w, v, YAML_SEQUENCE_NODE, "node_types"))
		return -1;
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
		yaml_node_t *e = node(w, *it);
		if (p->nnode_types >= LLMT_MAX_NODE_TYPES)
			return fail(w, e, "node_types: more than %d types", LLMT_MAX_NODE_TYPES);
		struct llmt_node_type *t = &p->node_types[p->nnode_types];
		memset(t, 0, sizeof(*t));
		if (each_pair(w, e, "node_types entry", nodetype_pair, t))
			return -1;
		if (!t->name[0] || !t->nodes[0])
			return fail(w, e, "node_types entry needs name and nodes");
		for (unsigned i = 0; i < p->nnode_types; i++)
			if (!strcmp(p->node_types[i].name, t->name))
				return fail(w, e, "node_types: '%s' defined twice", t->name);
		if (t->nvlink_block) {
			if (!t->gpus_per_node || t->nvlink_block % t->gpus_per_node)
				return fail(w, e, "node_types %s: nvlink %u is not a multiple of gpus_per_node %u",
					    t->name, t->nvlink_block, t->gpus_per_node);
			if (t->nvlink_block == t->gpus_per_node)
				t->nvlink_block = 0;   /* one node: same as "node" */
		}
		/* One node, one type: with two matching, one would silently
		 * win (its GPU count, NVLink domain and NICs). */
		for (unsigned i = 0; i < p->nnode_types; i++) {
			char host[LLMT_HOST_MAX];
			if (llmt_hostlist_common(t->nodes, p->node_types[i].nodes, LLMT_MAX_NODES, host,
						 sizeof(host)) == 1)
				return fail(w, e, "node %s matches node types '%s' (%s:%lu) and '%s' (%s:%lu)",
					    host, p->node_types[i].name, w->fname,
					    (unsigned long)ents[i]->start_mark.line + 1, t->name, w->fname,
					    (unsigned long)e->start_mark.line + 1);
		}
		ents[p->nnode_types] = e;
		p->nnode_types++;
	}
	return 0;
}

static int topology_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	if (strcmp(key, "source"))
		return unknown(w, k, "topology", key, "source");
	if (get_str(w, v, "topology.source", p->topology.path, sizeof(p->topology.path)))
		return -1;
	if (!strcmp(p->topology.path, "slurm")) {
		p->topology.source = LLMT_TOPO_SLURM;
		p->topology.path[0] = 0;
	} else if (!strcmp(p->topology.path, "none")) {
		p->topology.source = LLMT_TOPO_NONE;
		p->topology.path[0] = 0;
	} else if (p->topology.path[0] == '/') {
		if (llmt_path_has_dot(p->topology.path))
			return fail(w, v, "topology.source: '%.200s' has '.' or '..' components", p->topology.path);
		p->topology.source = LLMT_TOPO_FILE;
	} else {
		return fail(w, v, "topology.source must be slurm, none or an absolute path to topology.conf");
	}
	return 0;
}

static int valid_var(const char *s)
{
	if (strncmp(s, "NCCL_", 5) || !s[5])
		return 0;
	for (; *s; s++)
		if (!isupper((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

static int profile_var(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_nccl_profile *pr = arg;
	char e[256];
	if (!valid_var(key) || strlen(key) >= LLMT_NAME_MAX)
		return fail(w, k, "nccl_profiles.%s: '%.64s' is not an NCCL_* variable name", pr->name, key);
	if (pr->nvars >= LLMT_MAX_PROFILE_VARS)
		return fail(w, k, "nccl_profiles.%s: more than %d variables", pr->name, LLMT_MAX_PROFILE_VARS);
	struct llmt_nccl_var *var = &pr->vars[pr->nvars];
	snprintf(var->name, sizeof(var->name), "%s", key);
	if (get_str(w, v, key, var->value, sizeof(var->value)))
		return -1;
	if (llmt_subst_check(var->value, e, sizeof(e)))
		return fail(w, v, "nccl_profiles.%s.%s: %s", pr->name, key, e);
	pr->nvars++;
	return 0;
}

static int profiles_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	if (p->nprofiles >= LLMT_MAX_PROFILES)
		return fail(w, k, "nccl_profiles: more than %d profiles", LLMT_MAX_PROFILES);
	if (!valid_name(key))
		return fail(w, k, "nccl_profiles: bad profile name '%.64s'", key);
	struct llmt_nccl_profile *pr = &p->profiles[p->nprofiles];
	memset(pr, 0, sizeof(*pr));
	snprintf(pr->name, sizeof(pr->name), "%s", key);
	if (each_pair(w, v, "nccl profile", profile_var, pr))
		return -1;
	p->nprofiles++;
	return 0;
}

struct check_ctx { struct llmt_health_check *c; double *min_gib; const char *what; char *cmd; };

static int check_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct check_ctx *c = arg;
	if (!strcmp(key, "enabled"))
		return get_bool(w, v, "enabled", &c->c->enabled);
	if (!strcmp(key, "timeout"))
		return get_uint(w, v, "timeout", 1, 600, &c->c->timeout_s);
	if (c->min_gib && !strcmp(key, "min_gib"))
		return get_double(w, v, "min_gib", 0, 1e7, c->min_gib);
	if (c->cmd && !strcmp(key, "command")) {
		if (get_str(w, v, "health.selftest.command", c->cmd, LLMT_PATH_MAX))
			return -1;
		if (c->cmd[0] != '/' || llmt_path_has_dot(c->cmd))
			return fail(w, v, "health.selftest.command: '%.200s' is not an absolute path", c->cmd);
		return 0;
	}
	return unknown(w, k, c->what, key, c->min_gib ? "enabled timeout min_gib"
		       : c->cmd ? "enabled timeout command" : "enabled timeout");
}

static int health_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	struct check_ctx c = { NULL, NULL, NULL, NULL };
	if (!strcmp(key, "gpu_count"))
		c.c = &p->health.gpu_count, c.what = "health.gpu_count";
	else if (!strcmp(key, "xid_scan"))
		c.c = &p->health.xid_scan, c.what = "health.xid_scan";
	else if (!strcmp(key, "ckpt_free_space"))
		c.c = &p->health.ckpt_free_space, c.what = "health.ckpt_free_space",
		c.min_gib = &p->health.ckpt_min_free_gib;
	else if (!strcmp(key, "selftest"))
		c.c = &p->health.selftest, c.what = "health.selftest", c.cmd = p->health.selftest_cmd;
	else
		return unknown(w, k, "health", key, "gpu_count xid_scan ckpt_free_space selftest");
	/* Naming a check turns it on unless it says enabled: false. */
	c.c->enabled = 1;
	return each_pair(w, v, c.what, check_pair, &c);
}

static int top_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	if (!strcmp(key, "defaults"))
		return each_pair(w, v, "defaults", defaults_pair, NULL);
	if (!strcmp(key, "limits"))
		return each_pair(w, v, "limits", limits_pair, NULL);
	if (!strcmp(key, "node_types"))
		return node_types(w, v);
	if (!strcmp(key, "topology"))
		return each_pair(w, v, "topology", topology_pair, NULL);
	if (!strcmp(key, "nccl_profiles"))
		return each_pair(w, v, "nccl_profiles", profiles_pair, NULL);
	if (!strcmp(key, "health"))
		return each_pair(w, v, "health", health_pair, NULL);
	return unknown(w, k, "the policy", key, "defaults limits node_types topology nccl_profiles health");
}

/* Checks that need the whole file. */
static int cross_checks(struct walk *w, yaml_node_t *root)
{
	struct llmt_policy *p = w->p;
	if (p->defaults.restarts > p->limits.max_restarts)
		return fail(w, root, "defaults.restarts %u exceeds limits.max_restarts %u",
			    p->defaults.restarts, p->limits.max_restarts);
	if (p->defaults.nccl_profile[0] && !llmt_policy_profile(p, p->defaults.nccl_profile))
		return fail(w, root, "defaults.nccl_profile '%s' is not in nccl_profiles",
			    p->defaults.nccl_profile);
	if (p->health.ckpt_free_space.enabled && p->limits.nroots == 0)
		return fail(w, root, "health.ckpt_free_space needs limits.ckpt_roots to know where to look");
	return 0;
}

int llmt_policy_parse(const char *text, size_t len, const char *name,
		      struct llmt_policy **out, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct walk w = { 0 };
	struct llmt_policy *p;
	yaml_node_t *root;
	int rc = LLMT_POLICY_ERROR;

	*out = NULL;
	if (len > POLICY_MAX_BYTES) {
		SET_ERR("%s: larger than %u bytes", name, POLICY_MAX_BYTES);
		return LLMT_POLICY_ERROR;
	}
	p = malloc(sizeof(*p));
	if (!p) {
		SET_ERR("%s: out of memory", name);
		return LLMT_POLICY_ERROR;
	}
	llmt_policy_defaults(p);
	p->builtin = 0;
	snprintf(p->path, sizeof(p->path), "%s", name);
	if (!yaml_parser_initialize(&parser)) {
		SET_ERR("%s: cannot initialise the YAML parser", name);
		free(p);
		return LLMT_POLICY_ERROR;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		SET_ERR("%s:%lu:%lu: %s%s%s", name, (unsigned long)parser.problem_mark.line + 1,
			(unsigned long)parser.problem_mark.column + 1,
			parser.problem ? parser.problem : "malformed YAML",
			parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		free(p);
		return LLMT_POLICY_ERROR;
	}
	w.doc = &doc;
	w.fname = name;
	w.p = p;
	w.err = err;
	w.errlen = errlen;
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		rc = LLMT_POLICY_OK;   /* empty file: defaults */
	} else if (root->type == YAML_SCALAR_NODE && !root->data.scalar.length) {
		rc = LLMT_POLICY_OK;
	} else if (each_pair(&w, root, "the policy", top_pair, NULL) == 0 &&
		   cross_checks(&w, root) == 0) {
		rc = LLMT_POLICY_OK;
	}
	/* A second document in the stream is a mistake worth refusing. */
	if (rc == LLMT_POLICY_OK) {
		yaml_document_t doc2;
		if (!yaml_parser_load(&parser, &doc2)) {
			SET_ERR("%s:%lu:%lu: %s", name, (unsigned long)parser.problem_mark.line + 1,
				(unsigned long)parser.problem_mark.column + 1,
				parser.problem ? parser.problem : "malformed YAML");
			rc = LLMT_POLICY_ERROR;
		} else {
			if (yaml_document_get_root_node(&doc2)) {
				yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
				SET_ERR("%s:%lu:%lu: a second YAML document; the policy is one document", name,
					(unsigned long)r2->start_mark.line + 1,
					(unsigned long)r2->start_mark.column + 1);
				rc = LLMT_POLICY_ERROR;
			}
			yaml_document_delete(&doc2);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc != LLMT_POLICY_OK) {
		free(p);
		return LLMT_POLICY_ERROR;
	}
	*out = p;
	return LLMT_POLICY_OK;
}

int llmt_policy_load(const char *path, struct llmt_policy **out, char *err, size_t errlen)
{
	int fd;
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;
	int rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			struct llmt_policy *p = malloc(sizeof(*p));
			if (!p) {
				SET_ERR("%s: out of memory", path);
				return LLMT_POLICY_ERROR;
			}
			llmt_policy_defaults(p);
			*out = p;
			SET_ERR("%s: not found, using built-in defaults", path);
			return LLMT_POLICY_DEFAULTS;
		}
		SET_ERR("%s: %s", path, strerror(errno));
		return LLMT_POLICY_ERROR;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		SET_ERR("%s: not a regular file", path);
		close(fd);
		return LLMT_POLICY_ERROR;
	}
	if (st.st_size > POLICY_MAX_BYTES) {
		SET_ERR("%s: larger than %u bytes", path, POLICY_MAX_BYTES);
		close(fd);
		return LLMT_POLICY_ERROR;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		SET_ERR("%s: out of memory", path);
		close(fd);
		return LLMT_POLICY_ERROR;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			SET_ERR("%s: read: %s", path, strerror(errno));
			free(buf);
			close(fd);
			return LLMT_POLICY_ERROR;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	rc = llmt_policy_parse(buf, got, path, out, err, errlen);
	free(buf);
	return rc;
}

int llmt_policy_check_stat(const struct stat *st, const char *path, char *err, size_t errlen)
{
	if (!S_ISREG(st->st_mode)) {
		SET_ERR("%s: not a regular file", path);
		return -1;
	}
	if (st->st_uid != 0) {
		SET_ERR("%s: owned by uid %u, must be owned by root", path, (unsigned)st->st_uid);
		return -1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		SET_ERR("%s: writable by group or others (mode %04o): must be 0644 or stricter",
			path, (unsigned)(st->st_mode & 07777));
		return -1;
	}
	return 0;
}

const struct llmt_node_type *llmt_policy_node_type(const struct llmt_policy *p, const char *host)
{
	for (unsigned i = 0; p && i < p->nnode_types; i++)
		if (llmt_hostlist_contains(p->node_types[i].nodes, host) == 1)
			return &p->node_types[i];
	return NULL;
}

const struct llmt_nccl_profile *llmt_policy_profile(const struct llmt_policy *p, const char *name)
{
	for (unsigned i = 0; p && name && i < p->nprofiles; i++)
		if (!strcmp(p->profiles[i].name, name))
			return &p->profiles[i];
	return NULL;
}

int llmt_policy_topology_path(const struct llmt_policy *p, const char *slurm_conf,
			      char *buf, size_t len)
{
	int w;
	if (p->topology.source == LLMT_TOPO_NONE)
		return 1;
	if (p->topology.source == LLMT_TOPO_FILE) {
		w = snprintf(buf, len, "%s", p->topology.path);
		return w < 0 || (size_t)w >= len ? -1 : 0;
	}
	const char *conf = slurm_conf && *slurm_conf ? slurm_conf : "/etc/slurm/slurm.conf";
	const char *slash = strrchr(conf, '/');
	size_t dl = slash ? (size_t)(slash - conf) : 0;
	if (slash && dl == 0)
		dl = 0;
	w = snprintf(buf, len, "%.*s%stopology.conf", (int)dl, conf, slash ? "/" : "");
	return w < 0 || (size_t)w >= len ? -1 : 0;
}
