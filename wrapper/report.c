/* report: summary, loss plot and Prometheus textfile. gnuplot draws the
 * plot (a well-kept tool; no plotting code here); the textfile is written
 * to a temporary name and renamed so a scraper never reads half of it. */
#define _GNU_SOURCE
#include "report.h"
#include "rdfile.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dashboard.h"
#include "launch.h"
#include "plot.h"
#include "runowner.h"
#include "prom.h"

struct points {
	long *step;
	double *loss;
	int n;
};

/* The last finite loss of each step of metrics.jsonl, in step order; -1
 * when it cannot be read. */
static int load_points(const char *metrics_path, struct points *p)
{
	FILE *f = wr_fopen_read(metrics_path);
	if (!f)
		return -1;
	size_t cap = 1024;
	long maxstep = -1;
	double *loss = malloc(cap * sizeof *loss);
	char *have = calloc(cap, 1);
	char line[8192];
	while (loss && have && fgets(line, sizeof line, f)) {
		json_t *o = json_loads(line, 0, NULL);
		json_t *js = json_object_get(o, "step"), *jl = json_object_get(o, "loss");
		if (json_is_integer(js) && json_is_number(jl) && json_integer_value(js) >= 0 &&
		    json_integer_value(js) < 100000000) {
			size_t s = (size_t)json_integer_value(js);
			if (s >= cap) {
				size_t nc = cap;
				while (nc <= s)
					nc *= 2;
				double *nl = realloc(loss, nc * sizeof *loss);
				char *nh = nl ? realloc(have, nc) : NULL;
				if (!nl || !nh) {
					free(nl ? nl : loss);
					free(have);
					loss = NULL;
					have = NULL;
					json_decref(o);
					break;
				}
				memset(nh + cap, 0, nc - cap);
				loss = nl;
				have = nh;
				cap = nc;
			}
			loss[s] = json_number_value(jl);
			have[s] = 1;
			if ((long)s > maxstep)
				maxstep = (long)s;
		}
		json_decref(o);
	}
	fclose(f);
	p->n = 0;
	p->step = loss && have ? malloc(((size_t)maxstep + 2) * sizeof *p->step) : NULL;
	if (p->step)
		for (long s = 0; s <= maxstep; s++)
			if (have[s] && isfinite(loss[s])) {
				p->step[p->n] = s;
				loss[p->n++] = loss[s];
			}
	free(have);
	if (!p->step) {
		free(loss);
		return -1;
	}
	p->loss = loss;
	return 0;
}

static void fill_dat(FILE *f, void *arg)
{
	const struct points *p = arg;
	for (int i = 0; i < p->n; i++)
		fprintf(f, "%ld %.9g\n", p->step[i], p->loss[i]);
}

/* the points into dat_path (a temporary name, renamed: no link followed) */
static int write_points(const struct points *p, const char *dat_path)
{
	return wr_write_atomic(dat_path, fill_dat, (void *)p) == 0 ? p->n : -1;
}

int wr_loss_points(const char *metrics_path, const char *dat_path)
{
	struct points p;
	if (load_points(metrics_path, &p) != 0)
		return -1;
	int n = write_points(&p, dat_path);
	free(p.step);
	free(p.loss);
	return n;
}

static void plot(const struct wr_report_cfg *c)
{
	char dat[4200], png[4200], err[4096], sdat[4200], spng[4200];
	const char *metrics = c->metrics, *sd = c->shown_dir ? c->shown_dir : c->run_dir;
	struct points p;
	snprintf(dat, sizeof dat, "%s/loss.dat", c->run_dir);
	snprintf(png, sizeof png, "%s/loss.png", c->run_dir);
	snprintf(sdat, sizeof sdat, "%s/loss.dat", sd);
	snprintf(spng, sizeof spng, "%s/loss.png", sd);
	int n = load_points(metrics, &p) != 0 ? -1 : write_points(&p, dat);
	if (n <= 0) {
		printf("  loss curve: none (%s: %s)\n", c->shown_metrics ? c->shown_metrics : metrics,
		       n < 0 ? strerror(errno) : "no finite loss");
	} else if (access(c->gnuplot, X_OK) != 0 && strchr(c->gnuplot, '/')) {
		printf("  loss curve: skipped, gnuplot not found at %s (data in %s)\n", c->gnuplot, sdat);
	} else {
		int rc = wr_plot_png(c->gnuplot, c->job, p.step, p.loss, n, png, err, sizeof err);
		if (rc == 127)
			printf("  loss curve: skipped, gnuplot not found (%s); data in %s\n", c->gnuplot, sdat);
		else if (rc != 0)
			printf("  loss curve: gnuplot failed (exit %d): %s\n", rc, err);
		else
			printf("  loss curve: %s (%d steps)\n", spng, n);
	}
	if (n >= 0) {
		free(p.step);
		free(p.loss);
	}
}

struct prom_arg {
	const struct wr_history *h;
	const struct wr_goodput *g;
	const struct wr_report_cfg *c;
};

/* The last record of metrics.jsonl (m->valid false: none). */
static void last_metric(const char *path, struct wr_metric_rec *m)
{
	char line[8192];
	FILE *f = wr_fopen_read(path);
	memset(m, 0, sizeof *m);
	while (f && fgets(line, sizeof line, f)) {
		struct wr_metric_rec r;
		if (wr_metric_parse(line, &r) == 0)
			*m = r;
	}
	if (f)
		fclose(f);
}

static void fill_prom(FILE *f, void *arg)
{
	const struct prom_arg *a = arg;
	if (a->c->live) {
		wr_live_series(a->c->live, f);
	} else {
		/* `report RUN_DIR` after the job: the last step's series from
		 * metrics.jsonl (they were dropped from the textfile it rewrote) */
		struct wr_metric_rec m;
		last_metric(a->c->metrics, &m);
		int last = a->h->attempts_total > 0 ? a->h->attempts_total - 1 : 0;
		struct wr_live_view v = { .job = a->c->job, .attempt = last, .m = m.valid ? &m : NULL };
		wr_prom_live(f, &v);
	}
	wr_prom_goodput(f, a->c->job, a->h, a->g);
}

static int prom(const struct wr_history *h, const struct wr_goodput *g, const struct wr_report_cfg *c)
{
	char path[4200];
	struct prom_arg a = { h, g, c };
	if (c->live)
		snprintf(path, sizeof path, "%s", wr_live_textfile(c->live));
	else
		snprintf(path, sizeof path, "%s/llm_train.prom", c->run_dir);
	if (wr_write_atomic(path, fill_prom, &a) != 0)
		return -1;
	if (c->live || !c->shown_dir)
		printf("  prometheus: %s\n", path);
	else
		printf("  prometheus: %s/llm_train.prom\n", c->shown_dir);
	return 0;
}

int wr_report(const struct wr_history *h, const struct wr_report_cfg *c, struct wr_goodput *g)
{
	char sb[512];
	double alloc = h->allocated_s + (c->now > h->last_run_end ? c->now - h->last_run_end : 0);
	double steps[WR_HIST_MAX];
	int ns = 0;
	for (int i = 0; i < h->nattempts; i++)
		if (h->attempts[i].step_s > 0)
			steps[ns++] = h->attempts[i].step_s;
	double dflt = 0;
	if (ns) {
		for (int i = 0; i < ns; i++)
			dflt += steps[i];
		dflt /= ns;
	}
	wr_goodput(h->attempts, h->nattempts, alloc, dflt, g);
	printf("llm-train-wrap: summary%s%s: %d run(s), %d attempt(s)\n", *c->job ? " of job " : "", wr_shown(c->job, sb, sizeof sb),
	       h->runs, h->nattempts);
	printf("  goodput %.1f%% (useful %.1f s of %.1f s allocated, %ld steps)\n", 100 * g->ratio, g->useful_s,
	       g->allocated_s, g->useful_steps);
	printf("  time lost:");
	int any = 0;
	for (int k = 0; k < WR_NCAUSES; k++)
		if (k != WR_DONE && g->lost_s[k] > 0.05) {
			printf("%s %s %.1f s", any ? "," : "", wr_cause_name(k), g->lost_s[k]);
			any = 1;
		}
	printf("%s\n", any ? "" : " none");
	/* the endings, not the restarts: the last one (a preemption, a stop)
	 * may not have been restarted ("restarts: 0 (preempted 1)" was read
	 * as a contradiction) */
	printf("  restarts: %d; attempts ended by: ", g->restarts);
	any = 0;
	for (int k = WR_USER_ERROR; k < WR_NCLASSES; k++) {
		int cnt = 0;
		for (int i = 0; i < h->npast; i++)
			cnt += h->past[i].cls == (enum wr_class)k;
		if (cnt) {
			printf("%s%s %d", any ? ", " : "", wr_class_name((enum wr_class)k), cnt);
			any = 1;
		}
	}
	printf("%s; runs %d\n", any ? "" : "no failure", h->runs);
	printf("  excluded nodes:");
	for (int i = 0; i < h->excluded.n; i++)
		printf(" %s", wr_shown(h->excluded.name[i], sb, sizeof sb));
	printf("%s\n", h->excluded.n ? "" : " none");
	plot(c);
	prom(h, g, c);
	if (wr_dashboard_write(c->run_dir, c->metrics, c->job, false, g) == 0)
		printf("  dashboard: %s/dashboard.html\n", c->shown_dir ? c->shown_dir : c->run_dir);
	fflush(stdout);
	return 0;
}
