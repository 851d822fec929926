/* selftest: the self-test report's parser and the preflight's choice
 * (selftest.h). */
#include "selftest.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : 0;
}

static int node_entry(json_t *e, struct wr_selftest_node *n, char *err, size_t errlen)
{
	const char *name = json_string_value(json_object_get(e, "node"));
	const char *verdict = json_string_value(json_object_get(e, "verdict"));
	if (!json_is_object(e) || !name || !*name || !verdict) {
		snprintf(err, errlen, "a nodes entry without node or verdict");
		return -1;
	}
	memset(n, 0, sizeof *n);
	snprintf(n->node, sizeof n->node, "%s", name);
	snprintf(n->verdict, sizeof n->verdict, "%s", verdict);
	const char *ans = json_string_value(json_object_get(e, "answers"));
	n->wrong = strcmp(verdict, "wrong") == 0 || (ans && strcmp(ans, "wrong") == 0);
	n->slow = strcmp(verdict, "slow") == 0 || json_is_true(json_object_get(e, "slow"));
	n->gflops = num(e, "gflops");
	n->membw_gbs = num(e, "membw_gbs");
	n->compute_s = num(e, "compute_s");
	return 0;
}

int wr_selftest_parse(const char *text, struct wr_selftest *r, char *err, size_t errlen)
{
	json_error_t je;
	memset(r, 0, sizeof *r);
	json_t *o = json_loads(text, 0, &je);
	if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object (%s)", o ? "other type" : je.text);
		json_decref(o);
		return -1;
	}
	int rc = -1;
	json_t *nodes = json_object_get(o, "nodes"), *bad = json_object_get(o, "bad_nodes");
	const char *verdict = json_string_value(json_object_get(o, "verdict"));
	if (json_integer_value(json_object_get(o, "version")) != 1) {
		snprintf(err, errlen, "version is not 1");
		goto out;
	}
	if (!json_is_array(nodes) || !json_is_array(bad) || !verdict) {
		snprintf(err, errlen, "nodes, bad_nodes or verdict missing");
		goto out;
	}
	r->elapsed_s = num(o, "elapsed_s");
	r->median_gflops = num(o, "median_gflops");
	size_t i;
	json_t *e;
	json_array_foreach(nodes, i, e) {
		if (r->n >= WR_MAX_NODES)
			break;
		if (node_entry(e, &r->node[r->n], err, errlen))
			goto out;
		if (strcmp(r->node[r->n].verdict, "ok") != 0)
			wr_nodes_add(&r->bad, r->node[r->n].node);
		r->n++;
	}
	json_array_foreach(bad, i, e) {
		const char *b = json_string_value(e);
		if (!b) {
			snprintf(err, errlen, "bad_nodes holds a non-string");
			goto out;
		}
		wr_nodes_add(&r->bad, b);
	}
	r->ok = strcmp(verdict, "ok") == 0 && r->bad.n == 0;
	rc = 0;
out:
	json_decref(o);
	return rc;
}

const struct wr_selftest_node *wr_selftest_find(const struct wr_selftest *r, const char *node)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->node[i].node, node) == 0)
			return &r->node[i];
	return NULL;
}

bool wr_preflight_wanted(int opt, double spares, bool policy)
{
	if (opt >= 0)
		return opt == 1;
	return spares > 0 || policy;
}
