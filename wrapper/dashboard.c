/* dashboard: gathers the run dir's files into one JSON object and writes
 * the page around it with the drawing script (dashboard.js, compiled in
 * as dashboard_js.h). The data is thinned so the page stays small. */
#define _GNU_SOURCE
#include "dashboard.h"
#include "rdfile.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"

static const char dashboard_js[] =
#include "dashboard_js.h"
	;

#define WR_DASH_ROWS 256
static const char *const series[] = { "loss", "grad_norm", "lr", "tokens_per_s", "mfu", "step_time_s",
                                      "comm_time_s", "ckpt_time_s" };
#define NSER (sizeof series / sizeof series[0])

/* Calls fn for every JSON line of path that parses. */
static void each_line(const char *path, void (*fn)(json_t *o, void *arg), void *arg)
{
	FILE *f = wr_fopen_read(path);
	char line[1 << 16];
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		json_t *o = json_loads(line, 0, NULL);
		if (json_is_object(o))
			fn(o, arg);
		json_decref(o);
	}
	fclose(f);
}

/* Per step, the newest record (a rollback logs steps again). */
struct by_step {
	json_t **rec;
	long cap, max;
};

static void keep_step(json_t *o, void *arg)
{
	struct by_step *b = arg;
	json_t *s = json_object_get(o, "step");
	if (!json_is_integer(s) || json_integer_value(s) < 0 || json_integer_value(s) > 100000000)
		return;
	long k = (long)json_integer_value(s);
	if (k >= b->cap) {
		long nc = b->cap ? b->cap : 1024;
		while (nc <= k)
			nc *= 2;
		json_t **n = realloc(b->rec, (size_t)nc * sizeof *n);
		if (!n)
			return;
		memset(n + b->cap, 0, (size_t)(nc - b->cap) * sizeof *n);
		b->rec = n;
		b->cap = nc;
	}
	json_decref(b->rec[k]);
	b->rec[k] = json_incref(o);
	if (k > b->max)
		b->max = k;
}

static json_t *num_or_null(json_t *v)
{
	return json_is_number(v) && isfinite(json_number_value(v)) ? json_real(json_number_value(v)) : json_null();
}

/* {"step":[...], name:[...] ...} of the steps kept, thinned to WR_DASH_POINTS;
 * also the steps that wrote a checkpoint into ckpt. */
static json_t *columns(struct by_step *b, const char *const *names, size_t nn, json_t *ckpt)
{
	long have = 0;
	for (long k = 0; k <= b->max; k++)
		have += b->rec[k] != NULL;
	long stride = have > WR_DASH_POINTS ? (have + WR_DASH_POINTS - 1) / WR_DASH_POINTS : 1, seen = 0;
	json_t *o = json_object(), *steps = json_array();
	json_t *col[16];
	for (size_t i = 0; i < nn; i++)
		col[i] = json_array();
	for (long k = 0; k <= b->max; k++) {
		json_t *r = b->rec[k];
		if (!r)
			continue;
		if (ckpt && json_number_value(json_object_get(r, "ckpt_time_s")) > 0)
			json_array_append_new(ckpt, json_integer(k));
		if (seen++ % stride && k != b->max)
			continue;
		json_array_append_new(steps, json_integer(k));
		for (size_t i = 0; i < nn; i++)
			json_array_append_new(col[i], num_or_null(json_object_get(r, names[i])));
	}
	json_object_set_new(o, "step", steps);
	for (size_t i = 0; i < nn; i++)
		json_object_set_new(o, names[i], col[i]);
	for (long k = 0; k < b->cap; k++)
		json_decref(b->rec[k]);
	free(b->rec);
	return o;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* The timeline: failures, restarts, exclusions, requeues, hangs, ... */
static void keep_event(json_t *o, void *arg)
{
	static const char *const keep[] = { "start", "launch", "failure", "action", "hang", "stuck", "straggler",
	                                    "requeue", "requeue_failed", "signal", "end" };
	const char *ev = str(o, "event");
	char text[512] = "";
	size_t i;
	for (i = 0; i < sizeof keep / sizeof keep[0] && strcmp(ev, keep[i]); i++)
		;
	if (i == sizeof keep / sizeof keep[0])
		return;
	json_t *at = json_object_get(o, "attempt");
	if (!strcmp(ev, "failure"))
		snprintf(text, sizeof text, "%s%s%s at step %lld: %s", str(o, "class"), *str(o, "node") ? " on " : "",
		         str(o, "node"), (long long)json_integer_value(json_object_get(o, "step")), str(o, "why"));
	else if (!strcmp(ev, "action")) {
		json_t *ex = json_object_get(o, "exclude");
		char *exs = json_array_size(ex) ? json_dumps(ex, JSON_COMPACT) : NULL;
		snprintf(text, sizeof text, "%s: %s%s%s", str(o, "act"), str(o, "why"), exs ? "; exclude " : "", exs ? exs : "");
		free(exs);
	} else if (!strcmp(ev, "launch"))
		snprintf(text, sizeof text, "attempt %lld from step %lld", (long long)json_integer_value(at),
		         (long long)json_integer_value(json_object_get(o, "resume_step")));
	else if (!strcmp(ev, "hang") && json_integer_value(json_object_get(o, "together")) > 0)
		snprintf(text, sizeof text, "all %lld ranks stopped beating within %.1f s: no rank singled out",
		         (long long)json_integer_value(json_object_get(o, "together")),
		         json_number_value(json_object_get(o, "spread_s")));
	else if (!strcmp(ev, "hang") || !strcmp(ev, "stuck") || !strcmp(ev, "straggler"))
		snprintf(text, sizeof text, "rank %lld on %s", (long long)json_integer_value(json_object_get(o, "rank")),
		         str(o, "node"));
	else if (!strcmp(ev, "end"))
		snprintf(text, sizeof text, "exit %lld", (long long)json_integer_value(json_object_get(o, "exit_code")));
	json_array_append_new(arg, json_pack("{s:f,s:s,s:s}", "t", json_number_value(json_object_get(o, "time")),
	                                     "event", ev, "text", text));
}

/* ranks.jsonl thinned to WR_DASH_COLS columns and WR_DASH_ROWS rows (a
 * row of many ranks shows their largest value: a straggler stays seen). */
struct heat {
	json_t *lines;
};

static void keep_sample(json_t *o, void *arg)
{
	struct heat *h = arg;
	if (json_is_array(json_object_get(o, "step_s")))
		json_array_append(h->lines, o);
}

static json_t *bucket(json_t *v, int rows, int nr)
{
	json_t *out = json_array();
	for (int b = 0; b < rows; b++) {
		double m = NAN;
		for (int r = b * nr / rows; r < (b + 1) * nr / rows; r++) {
			json_t *x = json_array_get(v, (size_t)r);
			if (json_is_number(x) && !(json_number_value(x) <= m))
				m = json_number_value(x);
		}
		json_array_append_new(out, isnan(m) ? json_null() : json_real(m));
	}
	return out;
}

static json_t *heatmap(const char *path)
{
	struct heat h = { json_array() };
	each_line(path, keep_sample, &h);
	size_t n = json_array_size(h.lines), stride = n > WR_DASH_COLS ? (n + WR_DASH_COLS - 1) / WR_DASH_COLS : 1;
	json_t *last = json_array_get(h.lines, n ? n - 1 : 0);
	int nr = (int)json_array_size(json_object_get(last, "step_s"));
	int rows = nr < WR_DASH_ROWS ? nr : WR_DASH_ROWS;
	/* a line of many ranks has rows of them already (live.c) */
	int nranks = json_is_integer(json_object_get(last, "ranks")) ? (int)json_integer_value(json_object_get(last, "ranks")) : nr;
	json_t *o = json_object(), *t = json_array(), *st = json_array(), *cm = json_array(), *labels = json_array();
	json_t *nodes = json_object_get(last, "nodes");
	for (int b = 0; b < rows; b++) {
		int lo = b * nranks / rows, hi = (b + 1) * nranks / rows - 1;
		char l[160];
		const char *node = json_string_value(json_array_get(nodes, (size_t)(b * nr / rows)));
		if (lo == hi)
			snprintf(l, sizeof l, "rank %d (%s)", lo, node ? node : "?");
		else
			snprintf(l, sizeof l, "ranks %d-%d", lo, hi);
		json_array_append_new(labels, json_string(l));
	}
	for (size_t i = 0; i < n; i += stride) {
		json_t *s = json_array_get(h.lines, i);
		if ((int)json_array_size(json_object_get(s, "step_s")) != nr)
			continue;   /* another attempt's layout */
		json_array_append_new(t, json_real(json_number_value(json_object_get(s, "t"))));
		json_array_append_new(st, bucket(json_object_get(s, "step_s"), rows, nr));
		json_array_append_new(cm, bucket(json_object_get(s, "comm_s"), rows, nr));
	}
	json_object_set_new(o, "t", t);
	json_object_set_new(o, "rows", labels);
	json_object_set_new(o, "step_s", st);
	json_object_set_new(o, "comm_s", cm);
	json_decref(h.lines);
	return o;
}

static json_t *goodput_json(const struct wr_goodput *g)
{
	if (!g)
		return json_null();
	json_t *lost = json_object();
	for (int k = 0; k < WR_NCAUSES; k++)
		if (k != WR_DONE)
			json_object_set_new(lost, wr_cause_name(k), json_real(g->lost_s[k]));
	return json_pack("{s:f,s:f,s:f,s:I,s:i,s:o}", "ratio", g->ratio, "useful_s", g->useful_s, "allocated_s",
	                 g->allocated_s, "useful_steps", (json_int_t)g->useful_steps, "restarts", g->restarts, "lost_s", lost);
}

/* s with <, >, & and " as entities (the job id is from the environment) */
static void html(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
}

struct page {
	const char *job;
	bool live;
	char *data;
};

static void fill_page(FILE *f, void *arg)
{
	const struct page *p = arg;
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n%s<title>llm-train job ",
	        p->live ? "<meta http-equiv=\"refresh\" content=\"10\">\n" : "");
	html(f, p->job);
	fprintf(f, "</title></head>\n<body>\n<div id=\"app\"></div>\n"
	           "<script id=\"data\" type=\"application/json\">%s</script>\n<script>\n%s</script>\n</body></html>\n",
	        p->data, dashboard_js);
}

/* json with every '<' as \u003c (JSON has '<' only inside strings): the
 * data block then holds no "<!--", "<script" or "</script" of the
 * ledger's texts, which would keep the page's own script from running */
static char *no_lt(char *json)
{
	size_t n = 0, len = json ? strlen(json) : 0;
	for (size_t i = 0; i < len; i++)
		n += json[i] == '<';
	char *o = json ? malloc(len + 5 * n + 1) : NULL;
	if (o) {
		char *q = o;
		for (size_t i = 0; i < len; i++)
			q = json[i] == '<' ? memcpy(q, "\\u003c", 6), q + 6 : (*q = json[i], q + 1);
		*q = '\0';
	}
	free(json);
	return o;
}

int wr_dashboard_write(const char *run_dir, const char *metrics, const char *job, bool live,
                       const struct wr_goodput *g)
{
	char path[4200];
	struct by_step m = { .max = -1 }, v = { .max = -1 };
	json_t *ckpt = json_array(), *events = json_array();
	static const char *const val[] = { "val_loss" };
	each_line(metrics, keep_step, &m);
	snprintf(path, sizeof path, "%s/eval.jsonl", run_dir);
	each_line(path, keep_step, &v);
	json_t *d = json_object();
	json_object_set_new(d, "job", json_string(job ? job : ""));
	json_object_set_new(d, "live", json_boolean(live));
	json_object_set_new(d, "train", columns(&m, series, NSER, ckpt));
	json_object_set_new(d, "eval", columns(&v, val, 1, NULL));
	json_object_set_new(d, "ckpt_steps", ckpt);
	snprintf(path, sizeof path, "%s/ledger.jsonl", run_dir);
	each_line(path, keep_event, events);
	json_object_set_new(d, "events", events);
	snprintf(path, sizeof path, "%s/ranks.jsonl", run_dir);
	json_object_set_new(d, "ranks", heatmap(path));
	json_object_set_new(d, "goodput", goodput_json(g));
	/* escaped slashes and '<': no "</script>" ends the data early, no
	 * "<!--<script" keeps it from ending */
	struct page p = { job && *job ? job : "(no Slurm job)", live,
	                  no_lt(json_dumps(d, JSON_COMPACT | JSON_ESCAPE_SLASH)) };
	json_decref(d);
	if (!p.data)
		return -1;
	snprintf(path, sizeof path, "%s/dashboard.html", run_dir);
	int rc = wr_write_atomic(path, fill_page, &p);
	free(p.data);
	return rc;
}
