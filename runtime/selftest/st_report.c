/* st_report.c: the self-test's pure verdicts and its report's JSON and
 * per-node lines (st_report.h). */
#include "st_report.h"
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double llmt_st_median(const double *v, int n)
{
	double *s, m;

	if (n <= 0 || !(s = malloc(sizeof(*s) * (size_t)n)))
		return 0;
	memcpy(s, v, sizeof(*s) * (size_t)n);
	qsort(s, (size_t)n, sizeof(*s), cmp_d);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/* median of one field over the nodes */
static double node_median(const llmt_st_report *r, size_t off)
{
	double *v = malloc(sizeof(*v) * (size_t)(r->nnodes ? r->nnodes : 1)), m;

	if (!v)
		return 0;
	for (int i = 0; i < r->nnodes; i++)
		v[i] = *(const double *)((const char *)&r->nodes[i] + off);
	m = llmt_st_median(v, r->nnodes);
	free(v);
	return m;
}

static void judge_links(llmt_st_report *r, double F)
{
	double *v = malloc(sizeof(*v) * (size_t)(r->nlinks ? r->nlinks : 1)), med[2];
	int n, *out, *bad;

	if (!v)
		return;
	for (int ring = 0; ring < 2; ring++) {
		n = 0;
		for (int i = 0; i < r->nlinks; i++)
			if (r->links[i].ring == ring)
				v[n++] = r->links[i].gbps;
		med[ring] = llmt_st_median(v, n);
	}
	free(v);
	out = calloc((size_t)(r->nnodes ? r->nnodes : 1) * 2, sizeof(int));
	if (!out)
		return;
	bad = out + r->nnodes;
	for (int i = 0; i < r->nlinks; i++) {
		llmt_st_link *l = &r->links[i];
		l->slow = l->gbps < med[l->ring] / F;
		if (l->from >= 0 && l->from < r->nnodes) {
			out[l->from]++;
			bad[l->from] += l->slow;
		}
	}
	for (int i = 0; i < r->nnodes; i++)
		r->nodes[i].links_slow = bad[i] > 0 && 2 * bad[i] >= out[i];
	free(out);
}

void llmt_st_judge(llmt_st_report *r)
{
	double F = r->slow_factor > 1 ? r->slow_factor : 1.5;

	r->median_gflops = node_median(r, offsetof(llmt_st_node, gflops));
	r->median_membw = node_median(r, offsetof(llmt_st_node, membw_gbs));
	r->median_compute_s = node_median(r, offsetof(llmt_st_node, compute_s));
	judge_links(r, r->link_factor > 1 ? r->link_factor : 30);
	r->nbad = 0;
	for (int i = 0; i < r->nnodes; i++) {
		llmt_st_node *n = &r->nodes[i];
		n->slow = n->compute_s > F * r->median_compute_s ||
			(r->expect_gflops > 0 && n->gflops < r->expect_gflops / F) ||
			(r->expect_membw > 0 && n->membw_gbs < r->expect_membw / F);
		n->verdict = n->wrong ? "wrong" : n->slow || n->links_slow ? "slow" : "ok";
		r->nbad += strcmp(n->verdict, "ok") != 0;
	}
}

static const char *golden_word(int g)
{
	return g > 0 ? "match" : g < 0 ? "mismatch" : "none";
}

static json_t *node_json(const llmt_st_node *n)
{
	json_t *o = json_object(), *ranks = json_array();

	for (int k = 0; k < n->nranks; k++)
		json_array_append_new(ranks, json_integer(n->ranks[k]));
	json_object_set_new(o, "node", json_string(n->node));
	json_object_set_new(o, "ranks", ranks);
	json_object_set_new(o, "answers", json_string(n->wrong ? "wrong" : "ok"));
	json_object_set_new(o, "path", json_string(n->path));
	json_object_set_new(o, "golden", json_string(golden_word(n->golden)));
	json_object_set_new(o, "gflops", json_real(n->gflops));
	json_object_set_new(o, "membw_gbs", json_real(n->membw_gbs));
	json_object_set_new(o, "compute_s", json_real(n->compute_s));
	json_object_set_new(o, "slow", json_boolean(n->slow));
	json_object_set_new(o, "links_slow", json_boolean(n->links_slow));
	json_object_set_new(o, "verdict", json_string(n->verdict ? n->verdict : "ok"));
	return o;
}

int llmt_st_json(const llmt_st_report *r, FILE *f)
{
	json_t *o = json_object(), *nodes = json_array(), *links = json_array(), *bad = json_array();
	int rc;

	json_object_set_new(o, "version", json_integer(1));
	json_object_set_new(o, "size", json_string(r->size ? r->size : "small"));
	json_object_set_new(o, "elapsed_s", json_real(r->elapsed_s));
	json_object_set_new(o, "median_gflops", json_real(r->median_gflops));
	json_object_set_new(o, "slow_factor", json_real(r->slow_factor));
	json_object_set_new(o, "link_factor", json_real(r->link_factor));
	for (int i = 0; i < r->nnodes; i++) {
		json_array_append_new(nodes, node_json(&r->nodes[i]));
		if (r->nodes[i].verdict && strcmp(r->nodes[i].verdict, "ok"))
			json_array_append_new(bad, json_string(r->nodes[i].node));
	}
	for (int i = 0; i < r->nlinks; i++) {
		const llmt_st_link *l = &r->links[i];
		json_t *e = json_object();
		json_object_set_new(e, "from", json_string(r->nodes[l->from].node));
		json_object_set_new(e, "to", json_string(r->nodes[l->to].node));
		json_object_set_new(e, "test", json_string(l->ring ? "ring" : "pair"));
		json_object_set_new(e, "gbps", json_real(l->gbps));
		json_object_set_new(e, "lat_us", json_real(l->lat_us));
		json_object_set_new(e, "slow", json_boolean(l->slow));
		json_array_append_new(links, e);
	}
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "links", links);
	json_object_set_new(o, "bad_nodes", bad);
	json_object_set_new(o, "verdict", json_string(r->nbad ? "bad" : "ok"));
	rc = json_dumpf(o, f, JSON_COMPACT | JSON_REAL_PRECISION(6)) || fputc('\n', f) == EOF ? -1 : 0;
	json_decref(o);
	return rc;
}

void llmt_st_line(const llmt_st_report *r, int i, char *buf, size_t len)
{
	const llmt_st_node *n = &r->nodes[i];
	double slowest = 0;

	for (int k = 0; k < r->nlinks; k++)
		if (r->links[k].from == i && (slowest == 0 || r->links[k].gbps < slowest))
			slowest = r->links[k].gbps;
	snprintf(buf, len, "node %s: %s (answers %s, golden %s, %s; %.1f GFLOP/s, compute %.3f s = %.2f x median; "
		"%.1f GB/s memory; slowest link out %.2f Gbit/s%s)",
		n->node, n->verdict ? n->verdict : "ok", n->wrong ? "wrong" : "ok", golden_word(n->golden),
		n->path, n->gflops, n->compute_s, r->median_compute_s > 0 ? n->compute_s / r->median_compute_s : 0,
		n->membw_gbs, slowest, n->links_slow ? ", links slow" : "");
}
