/* Admin policy parser: libyaml's document API, walked (yaml_walk.h)
 * against a fixed schema into struct llmt_policy; the file itself is read
 * by policy_load.c. Every error names file:line:column; unknown keys,
 * duplicate keys and out-of-range values are refused, so a job never runs
 * on a half-read policy. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "hostlist.h"
#include "path.h"
#include "policy.h"
#include "ports.h"
#include "subst.h"
#include "yaml_walk.h"

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
	p->rendezvous.port_lo = LLMT_FALLBACK_PORT_LO;
	p->rendezvous.port_hi = LLMT_FALLBACK_PORT_HI;
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

/* ---- sections -------------------------------------------------------------- */

static int defaults_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	if (!strcmp(key, "tp"))
		return yw_get_uint(w, v, "defaults.tp", 1, LLMT_MAX_TASKS, &p->defaults.tp);
	if (!strcmp(key, "pp"))
		return yw_get_uint(w, v, "defaults.pp", 1, LLMT_MAX_TASKS, &p->defaults.pp);
	if (!strcmp(key, "dp")) {
		const char *s = yw_scalar(v);
		if (s && !strcmp(s, "auto")) {
			p->defaults.dp = 0;
			return 0;
		}
		return yw_get_uint(w, v, "defaults.dp", 1, LLMT_MAX_TASKS, &p->defaults.dp);
	}
	if (!strcmp(key, "ckpt_interval")) {
		char e[256];
		const char *s = yw_scalar(v);
		if (!s)
			return yw_fail(w, v, "defaults.ckpt_interval must be N, Ns, Nm, Nh or auto");
		if (llmt_interval_parse(s, &p->defaults.ckpt_interval, e, sizeof(e)))
			return yw_fail(w, v, "defaults.ckpt_interval: '%.40s' is not N, Ns, Nm, Nh or auto", s);
		return 0;
	}
	if (!strcmp(key, "restarts"))
		return yw_get_uint(w, v, "defaults.restarts", 0, 100000, &p->defaults.restarts);
	if (!strcmp(key, "nccl_profile")) {
		if (yw_get_str(w, v, "defaults.nccl_profile", p->defaults.nccl_profile, LLMT_NAME_MAX))
			return -1;
		if (p->defaults.nccl_profile[0] && !yw_valid_name(p->defaults.nccl_profile))
			return yw_fail(w, v, "defaults.nccl_profile: bad name '%s'", p->defaults.nccl_profile);
		return 0;
	}
	if (!strcmp(key, "heartbeat_timeout"))
		return yw_get_uint(w, v, "defaults.heartbeat_timeout", 10, 86400, &p->defaults.heartbeat_timeout_s);
	if (!strcmp(key, "heartbeat_startup"))
		return yw_get_uint(w, v, "defaults.heartbeat_startup", 10, 86400, &p->defaults.heartbeat_startup_s);
	if (!strcmp(key, "preflight"))
		return yw_get_bool(w, v, "defaults.preflight", &p->defaults.preflight);
	return yw_unknown(w, k, "defaults", key,
		       "tp pp dp ckpt_interval restarts nccl_profile heartbeat_timeout heartbeat_startup preflight");
}

struct cap_ctx { struct llmt_limit *l; const char *what; };

static int cap_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct cap_ctx *c = arg;
	if (!strcmp(key, "max_nodes"))
		return yw_get_uint(w, v, "max_nodes", 0, LLMT_MAX_NODES, &c->l->max_nodes);
	if (!strcmp(key, "max_gpus"))
		return yw_get_uint(w, v, "max_gpus", 0, LLMT_MAX_TASKS, &c->l->max_gpus);
	return yw_unknown(w, k, c->what, key, "max_nodes max_gpus");
}

struct caps_ctx { struct llmt_limit *arr; unsigned *n; const char *what; };

static int caps_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct caps_ctx *c = arg;
	struct cap_ctx cc;
	if (*c->n >= LLMT_MAX_LIMIT_ENTRIES)
		return yw_fail(w, k, "%s: more than %d entries", c->what, LLMT_MAX_LIMIT_ENTRIES);
	if (!yw_valid_name(key))
		return yw_fail(w, k, "%s: bad name '%.64s'", c->what, key);
	cc.l = &c->arr[(*c->n)++];
	snprintf(cc.l->name, sizeof(cc.l->name), "%s", key);
	cc.what = c->what;
	return yw_each_pair(w, v, c->what, cap_pair, &cc);
}

static int check_root(struct walk *w, yaml_node_t *n, const char *r)
{
	if (r[0] != '/')
		return yw_fail(w, n, "limits.ckpt_roots: '%.200s' is not an absolute path", r);
	if (llmt_path_has_dot(r))
		return yw_fail(w, n, "limits.ckpt_roots: '%.200s' has '.' or '..' components", r);
	return 0;
}

static int limits_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	if (!strcmp(key, "max_restarts"))
		return yw_get_uint(w, v, "limits.max_restarts", 0, 100000, &p->limits.max_restarts);
	if (!strcmp(key, "restart_window"))
		return yw_get_uint(w, v, "limits.restart_window", 1, 10000000, &p->limits.restart_window_s);
	if (!strcmp(key, "ckpt_roots")) {
		if (yw_want(w, v, YAML_SEQUENCE_NODE, "limits.ckpt_roots"))
			return -1;
		p->limits.nroots = 0;
		for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *e = yw_node(w, *it);
			if (p->limits.nroots >= LLMT_MAX_ROOTS)
				return yw_fail(w, e, "limits.ckpt_roots: more than %d roots", LLMT_MAX_ROOTS);
			char *dst = p->limits.ckpt_roots[p->limits.nroots];
			if (yw_get_str(w, e, "limits.ckpt_roots entry", dst, LLMT_PATH_MAX) || check_root(w, e, dst))
				return -1;
			p->limits.nroots++;
		}
		return 0;
	}
	if (!strcmp(key, "partitions")) {
		struct caps_ctx c = { p->limits.partitions, &p->limits.npartitions, "limits.partitions" };
		return yw_each_pair(w, v, "limits.partitions", caps_pair, &c);
	}
	if (!strcmp(key, "accounts")) {
		struct caps_ctx c = { p->limits.accounts, &p->limits.naccounts, "limits.accounts" };
		return yw_each_pair(w, v, "limits.accounts", caps_pair, &c);
	}
	return yw_unknown(w, k, "limits", key, "max_restarts restart_window ckpt_roots partitions accounts");
}

static int nodetype_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_node_type *t = arg;
	if (!strcmp(key, "name")) {
		if (yw_get_str(w, v, "node_types.name", t->name, LLMT_NAME_MAX))
			return -1;
		if (!yw_valid_name(t->name))
			return yw_fail(w, v, "node_types.name: bad name '%s'", t->name);
		return 0;
	}
	if (!strcmp(key, "nodes")) {
		char e[256];
		if (yw_get_str(w, v, "node_types.nodes", t->nodes, LLMT_HOSTLIST_MAX))
			return -1;
		if (llmt_hostlist_foreach(t->nodes, LLMT_MAX_NODES, NULL, NULL, e, sizeof(e)) < 0)
			return yw_fail(w, v, "node_types.nodes: %s", e);
		return 0;
	}
	if (!strcmp(key, "gpus_per_node"))
		return yw_get_uint(w, v, "node_types.gpus_per_node", 0, 64, &t->gpus_per_node);
	if (!strcmp(key, "nvlink")) {
		const char *s = yw_scalar(v);
		if (s && !strcmp(s, "node")) {
			t->nvlink_block = 0;
			return 0;
		}
		return yw_get_uint(w, v, "node_types.nvlink (node or GPUs per block)", 1, 65536, &t->nvlink_block);
	}
	if (!strcmp(key, "nics")) {
		if (yw_want(w, v, YAML_SEQUENCE_NODE, "node_types.nics"))
			return -1;
		t->nnics = 0;
		for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *e = yw_node(w, *it);
			if (t->nnics >= LLMT_MAX_NICS)
				return yw_fail(w, e, "node_types.nics: more than %d NICs", LLMT_MAX_NICS);
			if (yw_get_str(w, e, "node_types.nics entry", t->nics[t->nnics], LLMT_NAME_MAX))
				return -1;
			if (!yw_valid_name(t->nics[t->nnics]) && !strchr(t->nics[t->nnics], ':'))
				return yw_fail(w, e, "node_types.nics: bad NIC name '%s'", t->nics[t->nnics]);
			t->nnics++;
		}
		return 0;
	}
	/* sizes for the automatic layout (tp=auto); 0 = not declared */
	if (!strcmp(key, "memory_gib"))
		return yw_get_double(w, v, "node_types.memory_gib", 0.001, 1048576, &t->memory_gib);
	if (!strcmp(key, "gpu_memory_gib"))
		return yw_get_double(w, v, "node_types.gpu_memory_gib", 0.001, 65536, &t->gpu_memory_gib);
	if (!strcmp(key, "gflops"))
		return yw_get_double(w, v, "node_types.gflops", 0.001, 1e9, &t->gflops);
	return yw_unknown(w, k, "node_types", key, "name nodes gpus_per_node nvlink nics memory_gib gpu_memory_gib gflops");
}

static int node_types(struct walk *w, yaml_node_t *v)
{
	struct llmt_policy *p = w->p;
	yaml_node_t *ents[LLMT_MAX_NODE_TYPES];
	if (yw_want(w, v, YAML_SEQUENCE_NODE, "node_types"))
		return -1;
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
		yaml_node_t *e = yw_node(w, *it);
		if (p->nnode_types >= LLMT_MAX_NODE_TYPES)
			return yw_fail(w, e, "node_types: more than %d types", LLMT_MAX_NODE_TYPES);
		struct llmt_node_type *t = &p->node_types[p->nnode_types];
		memset(t, 0, sizeof(*t));
		if (yw_each_pair(w, e, "node_types entry", nodetype_pair, t))
			return -1;
		if (!t->name[0] || !t->nodes[0])
			return yw_fail(w, e, "node_types entry needs name and nodes");
		for (unsigned i = 0; i < p->nnode_types; i++)
			if (!strcmp(p->node_types[i].name, t->name))
				return yw_fail(w, e, "node_types: '%s' defined twice", t->name);
		if (t->nvlink_block) {
			if (!t->gpus_per_node || t->nvlink_block % t->gpus_per_node)
				return yw_fail(w, e, "node_types %s: nvlink %u is not a multiple of gpus_per_node %u",
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
				return yw_fail(w, e, "node %s matches node types '%s' (%s:%lu) and '%s' (%s:%lu)",
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
		return yw_unknown(w, k, "topology", key, "source");
	if (yw_get_str(w, v, "topology.source", p->topology.path, sizeof(p->topology.path)))
		return -1;
	if (!strcmp(p->topology.path, "slurm")) {
		p->topology.source = LLMT_TOPO_SLURM;
		p->topology.path[0] = 0;
	} else if (!strcmp(p->topology.path, "none")) {
		p->topology.source = LLMT_TOPO_NONE;
		p->topology.path[0] = 0;
	} else if (p->topology.path[0] == '/') {
		if (llmt_path_has_dot(p->topology.path))
			return yw_fail(w, v, "topology.source: '%.200s' has '.' or '..' components", p->topology.path);
		p->topology.source = LLMT_TOPO_FILE;
	} else {
		return yw_fail(w, v, "topology.source must be slurm, none or an absolute path to topology.conf");
	}
	return 0;
}

/* rendezvous.fallback_ports: one port or one LO-HI range (ports.h's parser). */
static int rendezvous_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	struct llmt_ports r;
	char e[160];
	if (strcmp(key, "fallback_ports"))
		return yw_unknown(w, k, "rendezvous", key, "fallback_ports");
	const char *s = yw_scalar(v);
	if (!s)
		return yw_fail(w, v, "rendezvous.fallback_ports must be LO-HI (e.g. 20000-29999)");
	if (llmt_ports_parse(s, &r, e, sizeof(e)) != 0)
		return yw_fail(w, v, "rendezvous.fallback_ports %s", e);
	if (r.items != 1)
		return yw_fail(w, v, "rendezvous.fallback_ports: one range LO-HI, not a list");
	p->rendezvous.port_lo = r.first;
	p->rendezvous.port_hi = r.last;
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
		return yw_fail(w, k, "nccl_profiles.%s: '%.64s' is not an NCCL_* variable name", pr->name, key);
	if (pr->nvars >= LLMT_MAX_PROFILE_VARS)
		return yw_fail(w, k, "nccl_profiles.%s: more than %d variables", pr->name, LLMT_MAX_PROFILE_VARS);
	struct llmt_nccl_var *var = &pr->vars[pr->nvars];
	snprintf(var->name, sizeof(var->name), "%s", key);
	if (yw_get_str(w, v, key, var->value, sizeof(var->value)))
		return -1;
	if (llmt_subst_check(var->value, e, sizeof(e)))
		return yw_fail(w, v, "nccl_profiles.%s.%s: %s", pr->name, key, e);
	pr->nvars++;
	return 0;
}

static int profiles_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct llmt_policy *p = w->p;
	if (p->nprofiles >= LLMT_MAX_PROFILES)
		return yw_fail(w, k, "nccl_profiles: more than %d profiles", LLMT_MAX_PROFILES);
	if (!yw_valid_name(key))
		return yw_fail(w, k, "nccl_profiles: bad profile name '%.64s'", key);
	struct llmt_nccl_profile *pr = &p->profiles[p->nprofiles];
	memset(pr, 0, sizeof(*pr));
	snprintf(pr->name, sizeof(pr->name), "%s", key);
	if (yw_each_pair(w, v, "nccl profile", profile_var, pr))
		return -1;
	p->nprofiles++;
	return 0;
}

struct check_ctx { struct llmt_health_check *c; double *min_gib; const char *what; char *cmd; };

static int check_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct check_ctx *c = arg;
	if (!strcmp(key, "enabled"))
		return yw_get_bool(w, v, "enabled", &c->c->enabled);
	if (!strcmp(key, "timeout"))
		return yw_get_uint(w, v, "timeout", 1, 600, &c->c->timeout_s);
	if (c->min_gib && !strcmp(key, "min_gib"))
		return yw_get_double(w, v, "min_gib", 0, 1e7, c->min_gib);
	if (c->cmd && !strcmp(key, "command")) {
		if (yw_get_str(w, v, "health.selftest.command", c->cmd, LLMT_PATH_MAX))
			return -1;
		if (c->cmd[0] != '/' || llmt_path_has_dot(c->cmd))
			return yw_fail(w, v, "health.selftest.command: '%.200s' is not an absolute path", c->cmd);
		return 0;
	}
	return yw_unknown(w, k, c->what, key, c->min_gib ? "enabled timeout min_gib"
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
		return yw_unknown(w, k, "health", key, "gpu_count xid_scan ckpt_free_space selftest");
	/* Naming a check turns it on unless it says enabled: false. */
	c.c->enabled = 1;
	return yw_each_pair(w, v, c.what, check_pair, &c);
}

static int top_pair(struct walk *w, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	if (!strcmp(key, "defaults"))
		return yw_each_pair(w, v, "defaults", defaults_pair, NULL);
	if (!strcmp(key, "limits"))
		return yw_each_pair(w, v, "limits", limits_pair, NULL);
	if (!strcmp(key, "node_types"))
		return node_types(w, v);
	if (!strcmp(key, "topology"))
		return yw_each_pair(w, v, "topology", topology_pair, NULL);
	if (!strcmp(key, "nccl_profiles"))
		return yw_each_pair(w, v, "nccl_profiles", profiles_pair, NULL);
	if (!strcmp(key, "health"))
		return yw_each_pair(w, v, "health", health_pair, NULL);
	if (!strcmp(key, "rendezvous"))
		return yw_each_pair(w, v, "rendezvous", rendezvous_pair, NULL);
	return yw_unknown(w, k, "the policy", key,
			  "defaults limits node_types topology nccl_profiles health rendezvous");
}

/* Checks that need the whole file. */
static int cross_checks(struct walk *w, yaml_node_t *root)
{
	struct llmt_policy *p = w->p;
	if (p->defaults.restarts > p->limits.max_restarts)
		return yw_fail(w, root, "defaults.restarts %u exceeds limits.max_restarts %u",
			    p->defaults.restarts, p->limits.max_restarts);
	if (p->defaults.nccl_profile[0] && !llmt_policy_profile(p, p->defaults.nccl_profile))
		return yw_fail(w, root, "defaults.nccl_profile '%s' is not in nccl_profiles",
			    p->defaults.nccl_profile);
	if (p->health.ckpt_free_space.enabled && p->limits.nroots == 0)
		return yw_fail(w, root, "health.ckpt_free_space needs limits.ckpt_roots to know where to look");
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
	if (len > LLMT_POLICY_MAX_BYTES) {
		SET_ERR("%s: larger than %u bytes", name, LLMT_POLICY_MAX_BYTES);
		return LLMT_POLICY_ERROR;
	}
	if (yw_bounded(text, len, name, LLMT_YAML_MAX_DEPTH, LLMT_YAML_MAX_ANCHORS, err, errlen))
		return LLMT_POLICY_ERROR;
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
	} else if (yw_each_pair(&w, root, "the policy", top_pair, NULL) == 0 &&
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
