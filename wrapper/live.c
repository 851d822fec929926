/* live: the periodic work of live.h: tail metrics.jsonl and eval.jsonl,
 * goodput so far (the history plus the attempt in progress), the
 * textfile, the HTTP document, the ranks' samples and the dashboard. */
#define _GNU_SOURCE
#include "live.h"
#include "rdfile.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dashboard.h"
#include "http.h"
#include "prom.h"

struct wr_live {
	struct wr_live_cfg c;
	char textfile[4200], eval[4200], ranks[4200];
	long metrics_off, eval_off;
	const char *metrics_now;        /* the file metrics_off is in */
	struct wr_metric_rec m;
	struct wr_http *http;
	double next_at;
	struct wr_live_now n;           /* the last tick's view */
	struct wr_hb *hb;               /* a copy of its heartbeats */
	int cap;
	struct wr_rank_times *prev;     /* per rank: totals at the last sample */
	int prev_attempt, nprev;
	double sample_at;
	double dash_at;                 /* the next dashboard rebuild */
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int wr_http_addr(const char *s, char *host, size_t hostlen, int *port)
{
	const char *colon = strrchr(s, ':');
	const char *ps = colon ? colon + 1 : s;
	char *end;
	long p = strtol(ps, &end, 10);
	/* digits only: strtol alone takes " 80", "+80" and "-0" */
	if (!*ps || strspn(ps, "0123456789") != strlen(ps) || strlen(ps) > 5 || *end || p > 65535)
		return -1;
	size_t hl = colon ? (size_t)(colon - s) : 0;
	if (colon && (hl == 0 || hl >= hostlen))
		return -1;
	snprintf(host, hostlen, "%.*s", colon ? (int)hl : 9, colon ? s : "127.0.0.1");
	*port = (int)p;
	return 0;
}

int wr_write_atomic(const char *path, void (*fill)(FILE *f, void *arg), void *arg)
{
	char tmp[4300];
	/* an unpredictable name, created exclusively (mkstemp): the path may
	 * be in a directory others write (node_exporter's textfile
	 * directory), where a planted link would be followed */
	snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
	mode_t um = umask(0);
	umask(um);
	int fd = mkstemp(tmp);
	FILE *f = fd < 0 || fchmod(fd, 0666 & ~um) != 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "llm-train-wrap: cannot write %s: %s\n", tmp, strerror(errno));
		if (fd >= 0)
			close(fd), unlink(tmp);
		return -1;
	}
	fill(f, arg);
	if (ferror(f) | (fclose(f) != 0) || rename(tmp, path) != 0) {
		fprintf(stderr, "llm-train-wrap: cannot write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Reads the complete lines appended to path since *off. */
static void tail(const char *path, long *off, void (*line)(struct wr_live *l, const char *s), struct wr_live *l)
{
	FILE *f = wr_fopen_read(path);
	char buf[8192];
	if (!f)
		return;
	if (fseek(f, *off, SEEK_SET) == 0)
		while (fgets(buf, sizeof buf, f)) {
			/* the bytes read, NULs included (a crash's zero-filled tail
			 * then appended to): strlen would stop at the first NUL and
			 * take the line for one being written, forever */
			long at = ftell(f);
			size_t n = at > *off ? (size_t)(at - *off) : strlen(buf);
			if (n > 0 && buf[n - 1] == '\n') {
				*off += (long)n;
				const char *from = buf;   /* what follows the last NUL */
				for (size_t i = 0; i + 1 < n; i++)
					if (!buf[i])
						from = buf + i + 1;
				line(l, from);
				continue;
			}
			if (n + 1 < sizeof buf)
				break;   /* being written: read it next time */
			/* longer than buf: skip it once complete (else it blocked
			 * every line after it for the rest of the job) */
			long skip = (long)n;
			int ch;
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				skip++;
			if (ch == EOF)
				break;
			*off += skip + 1;
		}
	fclose(f);
}

static void metric_line(struct wr_live *l, const char *s)
{
	struct wr_metric_rec r = l->m;   /* keeps the eval fields */
	if (wr_metric_parse(s, &r) == 0)
		l->m = r;
}

static void eval_line(struct wr_live *l, const char *s)
{
	json_t *o = json_loads(s, 0, NULL);
	json_t *st = json_object_get(o, "step"), *v = json_object_get(o, "val_loss");
	if (json_is_integer(st)) {
		l->m.have_val = true;
		l->m.val_step = (long)json_integer_value(st);
		l->m.val_loss = json_is_number(v) ? json_number_value(v) : NAN;
	}
	json_decref(o);
}

struct wr_live *wr_live_open(const struct wr_live_cfg *c)
{
	struct wr_live *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->c = *c;
	snprintf(l->textfile, sizeof l->textfile, "%s", c->textfile ? c->textfile : "");
	if (!c->textfile)
		snprintf(l->textfile, sizeof l->textfile, "%s/llm_train.prom", c->run_dir);
	snprintf(l->eval, sizeof l->eval, "%s/eval.jsonl", c->run_dir);
	snprintf(l->ranks, sizeof l->ranks, "%s/ranks.jsonl", c->run_dir);
	l->prev_attempt = -1;
	if (c->http) {
		char host[256];
		int port, bound = 0;
		if (wr_http_addr(c->http, host, sizeof host, &port) != 0) {
			fprintf(stderr, "llm-train-wrap: --metrics-http '%s': want [HOST:]PORT\n", c->http);
			free(l);
			return NULL;
		}
		if (!(l->http = wr_http_start(host, port, &bound))) {
			free(l);
			return NULL;
		}
		fprintf(stderr, "llm-train-wrap: metrics on http://%s:%d/metrics\n", host, bound);
		char p[4200];
		snprintf(p, sizeof p, "%s/metrics_http.port", c->run_dir);
		FILE *f = wr_fopen_write(p, "w");
		if (f)
			fprintf(f, "%d\n", bound), fclose(f);
	}
	return l;
}

const char *wr_live_textfile(const struct wr_live *l)
{
	return l->textfile;
}

/* Goodput so far: the history's attempts, then the one in progress. */
static void goodput_now(struct wr_live *l, struct wr_goodput *g)
{
	static struct wr_attempt a[WR_HIST_MAX + 1];
	const struct wr_history *h = l->c.h;
	int n = 0;
	for (int i = 0; h && i < h->nattempts && n < WR_HIST_MAX; i++)
		a[n++] = h->attempts[i];
	if (l->n.cur.t_launch > 0) {
		a[n] = l->n.cur;
		a[n++].run = l->c.run;
	}
	double alloc = (h ? h->allocated_s : 0) + l->n.now - l->c.run_start;
	double dflt = l->n.cur.step_s;
	wr_goodput(a, n, alloc, dflt, g);
}

/* Reads what the ranks appended to metrics.jsonl and eval.jsonl since
 * the last time; returns the metrics file read. */
static const char *catch_up(struct wr_live *l)
{
	const char *mp = l->c.metrics_alt && access(l->c.metrics, R_OK) != 0 ? l->c.metrics_alt : l->c.metrics;
	if (mp != l->metrics_now)
		l->metrics_off = 0;   /* the runtime began writing the other one */
	l->metrics_now = mp;
	tail(mp, &l->metrics_off, metric_line, l);
	tail(l->eval, &l->eval_off, eval_line, l);
	return mp;
}

void wr_live_series(struct wr_live *l, FILE *f)
{
	/* the report's textfile comes up to --metrics-every after the last
	 * tick: without this it showed a step and loss of that tick (a job
	 * done at step 20 left llm_train_step 1) */
	catch_up(l);
	struct wr_live_view v = { .job = l->c.job, .attempt = l->n.attempt, .run = l->c.run,
	                          .m = l->m.valid ? &l->m : NULL, .hb = l->hb, .nranks = l->hb ? l->n.nranks : 0 };
	wr_prom_live(f, &v);
}

static void fill_live(FILE *f, void *arg)
{
	struct wr_live *l = arg;
	struct wr_goodput g;
	static const struct wr_history none;
	goodput_now(l, &g);
	wr_live_series(l, f);
	wr_prom_goodput(f, l->c.job, l->c.h ? l->c.h : &none, &g);
}

/* Rows of ranks.jsonl: a row of many ranks (a large job) holds their
 * largest value, so a straggler stays seen and a line stays small. */
#define WR_LIVE_ROWS 256

static json_t *rows_of(const double *v, int n, int rows)
{
	json_t *a = json_array();
	for (int b = 0; b < rows; b++) {
		double m = NAN;
		for (int r = b * n / rows; r < (b + 1) * n / rows; r++)
			if (!isnan(v[r]) && !(v[r] <= m))
				m = v[r];
		json_array_append_new(a, isnan(m) ? json_null() : json_real(m));
	}
	return a;
}

/* One ranks.jsonl line: per rank (or row of ranks), the mean step time
 * and communication wait of the steps since the last sample (none: null),
 * the step and node of its first rank. */
static void sample_ranks(struct wr_live *l)
{
	const struct wr_live_now *n = &l->n;
	if (n->attempt != l->prev_attempt || l->nprev != n->nranks) {
		free(l->prev);
		l->prev = calloc((size_t)n->nranks, sizeof *l->prev);
		l->nprev = l->prev ? n->nranks : 0;
		l->prev_attempt = n->attempt;
	}
	int nr = l->nprev, rows = nr < WR_LIVE_ROWS ? nr : WR_LIVE_ROWS, moved = 0;
	double *st = malloc(2 * (size_t)(nr ? nr : 1) * sizeof *st), *cm = st + nr;
	if (!st)
		return;
	for (int r = 0; r < nr; r++) {
		const struct wr_rank_times *t = &n->hb[r].t, *p = &l->prev[r];
		st[r] = cm[r] = NAN;
		if (!t->valid || t->steps <= p->steps)
			continue;
		double k = (double)(t->steps - p->steps), w = 0;
		for (int g = WR_T_TP; g <= WR_T_ALL; g++)
			w += t->total[g] - p->total[g];
		st[r] = (t->total[WR_T_STEP] - p->total[WR_T_STEP]) / k;
		cm[r] = w / k;
		l->prev[r] = *t;
		moved++;
	}
	if (moved) {
		json_t *steps = json_array(), *nodes = json_array();
		for (int b = 0; b < rows; b++) {
			const struct wr_hb *h = &n->hb[b * nr / rows];
			json_array_append_new(steps, json_integer(h->valid ? h->step : -1));
			json_array_append_new(nodes, json_string(h->host));
		}
		json_t *o = json_pack("{s:f,s:i,s:i,s:o,s:o,s:o,s:o}", "t", n->now, "attempt", n->attempt, "ranks", nr,
		                      "step", steps, "step_s", rows_of(st, nr, rows), "comm_s", rows_of(cm, nr, rows),
		                      "nodes", nodes);
		char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
		FILE *f = line ? wr_fopen_write(l->ranks, "a") : NULL;
		if (f) {
			fprintf(f, "%s\n", line);
			fclose(f);
		}
		free(line);
		json_decref(o);
	}
	free(st);
}

void wr_live_tick(struct wr_live *l, const struct wr_live_now *n)
{
	if (!l)
		return;
	l->n = *n;
	if (n->nranks > l->cap) {
		struct wr_hb *nh = realloc(l->hb, (size_t)n->nranks * sizeof *nh);
		if (!nh)
			return;
		l->hb = nh;
		l->cap = n->nranks;
	}
	if (n->hb && l->hb)
		memcpy(l->hb, n->hb, (size_t)n->nranks * sizeof *l->hb);
	l->n.hb = l->hb;
	double every = l->c.every_s > 0 ? l->c.every_s : 5;
	if (n->hb && n->now >= l->sample_at) {
		sample_ranks(l);
		l->sample_at = n->now + every;
	}
	if (n->now < l->next_at)
		return;
	l->next_at = n->now + every;
	const char *mp = catch_up(l);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (mem) {
		fill_live(mem, l);
		fclose(mem);
		if (l->http)
			wr_http_set(l->http, text, len);
		free(text);
	}
	if (l->c.every_s > 0) {
		struct wr_goodput g;
		goodput_now(l, &g);
		wr_write_atomic(l->textfile, fill_live, l);
		/* the page reads every file whole: a long job's takes longer,
		 * so it is rebuilt at most 5% of the wrapper's time */
		if (n->now >= l->dash_at) {
			double t0 = mono_now();
			wr_dashboard_write(l->c.run_dir, mp, l->c.job, true, &g);
			double took = mono_now() - t0;
			l->dash_at = n->now + (20 * took > every ? 20 * took : every);
		}
	}
}

void wr_live_close(struct wr_live *l)
{
	if (!l)
		return;
	wr_http_stop(l->http);
	free(l->hb);
	free(l->prev);
	free(l);
}
